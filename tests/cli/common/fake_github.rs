//! A fake GitHub for the forge tests that holds every request to GitHub's
//! published OpenAPI description (`@octokit/openapi`, pinned, installed by
//! `scripts/install-interop.sh`, named by `AGENT_TASK_INTEROP_GITHUB_OPENAPI`):
//! the path must be one the description has, with that method; path
//! parameters, the JSON body (required fields, types, enums, lengths,
//! nullability, `$ref`s followed) must be valid under it. It adds the
//! limits the description only says in prose: a description over 140
//! characters and more than 1,000 statuses per SHA and context are 422,
//! as GitHub answers. Its own answers are checked against the description
//! too. Every request is kept with the problems found in it.

use crate::common::origin::{Exchange, Origin, Reply};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub const VAR: &str = "AGENT_TASK_INTEROP_GITHUB_OPENAPI";

/// The description's path, or `None` (skipped) when it is not installed
/// (a failure under `AGENT_TASK_REQUIRE_INTEROP=1`).
pub fn spec_path() -> Option<PathBuf> {
    match std::env::var_os(VAR) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            assert!(
                std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
                "{VAR} is unset but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-interop.sh)"
            );
            eprintln!("skipped: {VAR} is unset (run scripts/install-interop.sh)");
            None
        }
    }
}

/// GitHub's OpenAPI description and a small validator for it.
pub struct Spec {
    doc: Value,
}

impl Spec {
    pub fn load(path: &std::path::Path) -> Spec {
        let bytes = std::fs::read(path).expect("read the OpenAPI description");
        Spec {
            doc: serde_json::from_slice(&bytes).expect("the OpenAPI description is JSON"),
        }
    }

    /// Follows `$ref`s (`#/components/...`).
    fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        while let Some(r) = v.get("$ref").and_then(Value::as_str) {
            let ptr = r.strip_prefix('#').expect("a local $ref");
            v = self
                .doc
                .pointer(ptr)
                .unwrap_or_else(|| panic!("dangling $ref {r}"));
        }
        v
    }

    /// The operation for `method` and a concrete `path`, with the path
    /// parameters by name.
    pub fn operation(
        &self,
        method: &str,
        path: &str,
    ) -> Option<(String, &Value, BTreeMap<String, String>)> {
        let segs: Vec<&str> = path.split('/').collect();
        let paths = self.doc["paths"].as_object()?;
        for (template, item) in paths {
            let t: Vec<&str> = template.split('/').collect();
            if t.len() != segs.len() {
                continue;
            }
            let mut params = BTreeMap::new();
            let ok = t.iter().zip(&segs).all(|(a, b)| {
                if a.starts_with('{') && a.ends_with('}') {
                    params.insert(a[1..a.len() - 1].to_owned(), (*b).to_owned());
                    !b.is_empty()
                } else {
                    a == b
                }
            });
            if ok && let Some(op) = item.get(method.to_ascii_lowercase()) {
                return Some((template.clone(), op, params));
            }
        }
        None
    }

    /// Problems of `v` under `schema` (empty: valid).
    pub fn validate(&self, schema: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
        let s = self.resolve(schema);
        if v.is_null() {
            if s["nullable"] != true
                && s["type"] != "null"
                && !s.get("type").is_none_or(|t| t.is_null())
            {
                errs.push(format!(
                    "{at}: null where the description does not allow it"
                ));
            }
            return;
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for sub in all {
                self.validate(sub, v, at, errs);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(any) = s.get(key).and_then(Value::as_array) {
                let n = any
                    .iter()
                    .filter(|sub| {
                        let mut e = Vec::new();
                        self.validate(sub, v, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                if n == 0 || (key == "oneOf" && n > 1) {
                    errs.push(format!("{at}: {n} of the {key} alternatives match"));
                }
            }
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array)
            && !e.contains(v)
        {
            errs.push(format!("{at}: {v} is not one of {e:?}"));
        }
        match s.get("type").and_then(Value::as_str) {
            Some("object") => {
                let Some(o) = v.as_object() else {
                    errs.push(format!("{at}: not an object"));
                    return;
                };
                for r in s["required"].as_array().into_iter().flatten() {
                    let r = r.as_str().expect("a required name");
                    if !o.contains_key(r) {
                        errs.push(format!("{at}: required {r} is missing"));
                    }
                }
                let props = s["properties"].as_object();
                for (k, val) in o {
                    match props.and_then(|p| p.get(k)) {
                        Some(ps) => self.validate(ps, val, &format!("{at}.{k}"), errs),
                        None => match s.get("additionalProperties") {
                            Some(Value::Bool(false)) => errs
                                .push(format!("{at}: {k} is not a property the description has")),
                            Some(ap @ Value::Object(_)) => {
                                self.validate(ap, val, &format!("{at}.{k}"), errs)
                            }
                            _ => {}
                        },
                    }
                }
            }
            Some("array") => match v.as_array() {
                Some(a) => {
                    for (i, item) in a.iter().enumerate() {
                        self.validate(&s["items"], item, &format!("{at}[{i}]"), errs);
                    }
                }
                None => errs.push(format!("{at}: not an array")),
            },
            Some("string") => match v.as_str() {
                Some(t) => {
                    let n = t.chars().count() as u64;
                    if s["maxLength"].as_u64().is_some_and(|m| n > m) {
                        errs.push(format!("{at}: longer than maxLength"));
                    }
                    if s["minLength"].as_u64().is_some_and(|m| n < m) {
                        errs.push(format!("{at}: shorter than minLength"));
                    }
                }
                None => errs.push(format!("{at}: not a string")),
            },
            Some("integer") if !(v.is_i64() || v.is_u64()) => {
                errs.push(format!("{at}: not an integer"))
            }
            Some("number") if !v.is_number() => errs.push(format!("{at}: not a number")),
            Some("boolean") if !v.is_boolean() => errs.push(format!("{at}: not a boolean")),
            _ => {}
        }
    }

    /// Problems of a request: its operation, path parameters and body.
    pub fn check_request(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Vec<String> {
        let mut errs = Vec::new();
        let path = url.split('?').next().unwrap_or(url);
        let Some((template, op, params)) = self.operation(method, path) else {
            return vec![format!(
                "{method} {path}: no such operation in GitHub's description"
            )];
        };
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = self.resolve(p);
            if p["in"] == "path" {
                let name = p["name"].as_str().expect("name");
                match params.get(name) {
                    Some(v) => {
                        self.validate(&p["schema"], &json!(v), &format!("path {name}"), &mut errs)
                    }
                    None => errs.push(format!("{template}: path parameter {name} missing")),
                }
            }
        }
        if let Some(rb) = op.get("requestBody").map(|r| self.resolve(r)) {
            if body.is_empty() {
                if rb["required"] == true {
                    errs.push("the request body is required".into());
                }
                return errs;
            }
            if !content_type.is_some_and(|c| c.starts_with("application/json")) {
                errs.push(format!(
                    "content-type {content_type:?} is not application/json"
                ));
            }
            match serde_json::from_slice::<Value>(body) {
                Ok(v) => self.validate(
                    &rb["content"]["application/json"]["schema"],
                    &v,
                    "body",
                    &mut errs,
                ),
                Err(e) => errs.push(format!("the body is not JSON: {e}")),
            }
        }
        errs
    }

    /// Problems of an answer the fake is about to send.
    pub fn check_response(
        &self,
        method: &str,
        path: &str,
        status: u16,
        body: &Value,
    ) -> Vec<String> {
        let mut errs = Vec::new();
        let Some((_, op, _)) = self.operation(method, path) else {
            return vec!["no operation".into()];
        };
        match op["responses"].get(status.to_string()) {
            Some(r) => {
                let r = self.resolve(r);
                if let Some(s) = r["content"]["application/json"].get("schema") {
                    self.validate(s, body, "answer", &mut errs);
                }
            }
            None => errs.push(format!("the description has no {status} answer for it")),
        }
        errs
    }
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub url: String,
    pub authorization: Option<String>,
    pub body: Value,
    /// What the description (and GitHub's prose limits) refuse in it.
    pub problems: Vec<String>,
    pub status: u16,
}

/// How the fake answers the next request (a queue; then `Normal`).
pub enum Answer {
    /// As GitHub would: 201 with a status valid under the description.
    Normal,
    /// This status with GitHub's error body.
    Status(u16),
    /// A redirect to another host.
    Redirect,
    /// 201 with a 10 MiB body.
    Huge,
    /// A normal answer after this long.
    Slow(std::time::Duration),
}

pub struct FakeGithub {
    pub origin_url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    pub answers: Arc<Mutex<Vec<Answer>>>,
    _origin: Origin,
}

impl FakeGithub {
    /// Starts the fake; `on_status` is called with each valid status
    /// request's SHA before it is answered (to look at the git server).
    pub fn start(spec: Spec, on_status: impl Fn(&str) + Send + 'static) -> FakeGithub {
        let mut origin = Origin::start();
        let origin_url = origin.url();
        let received = Arc::new(Mutex::new(Vec::new()));
        let answers: Arc<Mutex<Vec<Answer>>> = Arc::new(Mutex::new(Vec::new()));
        let (rec, ans) = (received.clone(), answers.clone());
        let requests = origin.requests();
        std::thread::spawn(move || {
            let mut per_context: BTreeMap<(String, String), u32> = BTreeMap::new();
            for x in requests {
                answer(&spec, x, &rec, &ans, &mut per_context, &on_status);
            }
        });
        FakeGithub {
            origin_url,
            received,
            answers,
            _origin: origin,
        }
    }

    pub fn queue(&self, a: Answer) {
        self.answers.lock().expect("answers").push(a);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }
}

fn error_body(status: u16) -> Value {
    json!({"message": format!("fake GitHub says {status}"), "documentation_url": "https://docs.github.com/rest"})
}

fn answer(
    spec: &Spec,
    x: Exchange,
    rec: &Mutex<Vec<Received>>,
    ans: &Mutex<Vec<Answer>>,
    per_context: &mut BTreeMap<(String, String), u32>,
    on_status: &dyn Fn(&str),
) {
    let path = x.url.split('?').next().unwrap_or(&x.url).to_owned();
    let mut problems = spec.check_request(&x.method, &x.url, x.header("content-type"), &x.body);
    let body: Value = serde_json::from_slice(&x.body).unwrap_or(Value::Null);
    let is_status = path.contains("/statuses/");
    let sha = path.rsplit('/').next().unwrap_or_default().to_owned();
    let mut status = 201;
    if is_status {
        // GitHub's limits its description states only in prose.
        if body["description"]
            .as_str()
            .is_some_and(|d| d.chars().count() > 140)
        {
            problems.push("description over 140 characters (GitHub answers 422)".into());
            status = 422;
        }
        let n = per_context
            .entry((
                sha.clone(),
                body["context"].as_str().unwrap_or("default").to_owned(),
            ))
            .or_default();
        *n += 1;
        if *n > 1000 {
            problems.push("over 1000 statuses for this SHA and context (422)".into());
            status = 422;
        }
        if problems.is_empty() {
            on_status(&sha);
        }
    }
    if !problems.is_empty() && status == 201 {
        status = 422;
    }
    let next = {
        let mut a = ans.lock().expect("answers");
        if a.is_empty() {
            Answer::Normal
        } else {
            a.remove(0)
        }
    };
    if let Answer::Slow(d) = &next {
        std::thread::sleep(*d);
    }
    let reply = match next {
        _ if status != 201 => Reply::new(status, error_body(status).to_string()),
        Answer::Normal | Answer::Slow(_) => {
            let now = "2026-12-04T23:00:00Z";
            let answer = json!({
                "url": format!("https://api.github.com{path}"),
                "avatar_url": "https://avatars.githubusercontent.com/in/4711",
                "id": 1,
                "node_id": "SC_kwDOAAAB",
                "state": body["state"],
                "description": body.get("description").cloned().unwrap_or(Value::Null),
                "target_url": body.get("target_url").cloned().unwrap_or(Value::Null),
                "context": body.get("context").cloned().unwrap_or(json!("default")),
                "created_at": now,
                "updated_at": now,
                "creator": null,
            });
            let errs = spec.check_response(&x.method, &path, 201, &answer);
            assert!(
                errs.is_empty(),
                "the fake's own answer is invalid: {errs:?}"
            );
            Reply::new(201, answer.to_string()).header("content-type", "application/json")
        }
        Answer::Status(s) => {
            status = s;
            Reply::new(s, error_body(s).to_string()).header("content-type", "application/json")
        }
        Answer::Redirect => {
            status = 307;
            Reply::new(307, "").header("location", "http://127.0.0.2:1/steal")
        }
        Answer::Huge => Reply::new(201, vec![b' '; 10 << 20]).chunked(),
    };
    rec.lock().expect("received").push(Received {
        method: x.method.clone(),
        url: x.url.clone(),
        authorization: x.header("authorization").map(str::to_owned),
        body,
        problems,
        status,
    });
    x.respond(reply);
}
