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
        let query: BTreeMap<String, String> = url
            .split_once('?')
            .map(|(_, q)| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        for (k, v) in &query {
            let known = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| self.resolve(p))
                .find(|p| p["in"] == "query" && p["name"] == k.as_str());
            match known {
                Some(p) => {
                    let v = match p["schema"]["type"].as_str() {
                        Some("integer") => v.parse::<i64>().map(|n| json!(n)).unwrap_or(json!(v)),
                        _ => json!(v),
                    };
                    self.validate(&p["schema"], &v, &format!("query {k}"), &mut errs)
                }
                None => errs.push(format!("{template}: no query parameter {k}")),
            }
        }
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = self.resolve(p);
            if p["in"] == "path" {
                let name = p["name"].as_str().expect("name");
                match params.get(name) {
                    Some(v) => {
                        let v = match self.resolve(&p["schema"])["type"].as_str() {
                            Some("integer") => {
                                v.parse::<i64>().map(|n| json!(n)).unwrap_or(json!(v))
                            }
                            _ => json!(v),
                        };
                        self.validate(&p["schema"], &v, &format!("path {name}"), &mut errs)
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

    /// The JSON schema of an operation's answer.
    pub fn answer_schema(&self, method: &str, path: &str, status: u16) -> Value {
        let (_, op, _) = self.operation(method, path).expect("an operation");
        let r = self.resolve(&op["responses"][status.to_string()]);
        r["content"]["application/json"]["schema"].clone()
    }

    /// A value valid under `schema`, as small as the description lets it
    /// be: the required properties only, `null` where it is allowed, the
    /// first enum value, an empty array.
    pub fn synth(&self, schema: &Value, depth: usize) -> Value {
        let s = self.resolve(schema);
        assert!(depth < 40, "the description nests too deep");
        if s["nullable"] == true {
            return Value::Null;
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array)
            && let Some(first) = e.first()
        {
            return first.clone();
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            let mut out = serde_json::Map::new();
            for sub in all {
                if let Value::Object(m) = self.synth(sub, depth + 1) {
                    out.extend(m);
                }
            }
            return Value::Object(out);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alts) = s.get(key).and_then(Value::as_array) {
                for alt in alts {
                    let v = self.synth(alt, depth + 1);
                    let mut e = Vec::new();
                    self.validate(s, &v, "synth", &mut e);
                    if e.is_empty() {
                        return v;
                    }
                }
            }
        }
        match s.get("type").and_then(Value::as_str) {
            Some("object") => {
                let mut out = serde_json::Map::new();
                for r in s["required"].as_array().into_iter().flatten() {
                    let r = r.as_str().expect("a name");
                    out.insert(r.to_owned(), self.synth(&s["properties"][r], depth + 1));
                }
                Value::Object(out)
            }
            Some("array") => json!([]),
            Some("string") => match s["format"].as_str() {
                Some("date-time") => json!("2026-12-04T23:00:00Z"),
                Some("uri") => json!("https://github.example/x"),
                Some("email") => json!("x@example.invalid"),
                _ => json!("x".repeat(s["minLength"].as_u64().unwrap_or(1).max(1) as usize)),
            },
            Some("integer") => json!(s["minimum"].as_i64().unwrap_or(1).max(1)),
            Some("number") => json!(1.0),
            Some("boolean") => json!(false),
            _ => json!({}),
        }
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
    /// The pull requests it holds, by number (their answer bodies).
    pub pulls: Arc<Mutex<BTreeMap<u64, Value>>>,
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
        let pulls: Arc<Mutex<BTreeMap<u64, Value>>> = Arc::default();
        let (rec, ans, pl) = (received.clone(), answers.clone(), pulls.clone());
        let requests = origin.requests();
        std::thread::spawn(move || {
            let mut per_context: BTreeMap<(String, String), u32> = BTreeMap::new();
            for x in requests {
                answer(&spec, x, &rec, &ans, &pl, &mut per_context, &on_status);
            }
        });
        FakeGithub {
            origin_url,
            received,
            answers,
            pulls,
            _origin: origin,
        }
    }

    pub fn queue(&self, a: Answer) {
        self.answers.lock().expect("answers").push(a);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }

    /// The pull requests, by number.
    pub fn pulls(&self) -> BTreeMap<u64, Value> {
        self.pulls.lock().expect("pulls").clone()
    }

    /// One line per request received: method, path, status and the
    /// body's fields that say what it did (for a person reading a test's
    /// output or the closing note).
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for r in self.received() {
            let b = &r.body;
            let mut what = Vec::new();
            for k in ["state", "context", "description", "title", "head", "base"] {
                if let Some(v) = b.get(k).and_then(Value::as_str) {
                    what.push(format!("{k}={v:?}"));
                }
            }
            out.push_str(&format!(
                "{} {} -> {} {}\n",
                r.method,
                r.url,
                r.status,
                what.join(" ")
            ));
        }
        out
    }
}

fn error_body(status: u16) -> Value {
    json!({"message": format!("fake GitHub says {status}"), "documentation_url": "https://docs.github.com/rest"})
}

/// What a request is, by its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Status,
    PullCreate,
    PullList,
    PullUpdate,
    PullGet,
    Other,
}

fn op_of(spec: &Spec, method: &str, path: &str) -> Op {
    match spec.operation(method, path).map(|(t, _, _)| t) {
        Some(t) if t == "/repos/{owner}/{repo}/statuses/{sha}" => Op::Status,
        Some(t) if t == "/repos/{owner}/{repo}/pulls" && method == "POST" => Op::PullCreate,
        Some(t) if t == "/repos/{owner}/{repo}/pulls" && method == "GET" => Op::PullList,
        Some(t) if t == "/repos/{owner}/{repo}/pulls/{pull_number}" && method == "PATCH" => {
            Op::PullUpdate
        }
        Some(t) if t == "/repos/{owner}/{repo}/pulls/{pull_number}" && method == "GET" => {
            Op::PullGet
        }
        _ => Op::Other,
    }
}

/// A pull request answer valid under the description, from the fake's
/// state for it.
fn pull_answer(spec: &Spec, method: &str, path: &str, status: u16, pull: &Value) -> Value {
    let schema = spec.answer_schema(method, path, status);
    let item = if schema["type"] == "array" {
        &schema["items"]
    } else {
        &schema
    };
    let mut v = spec.synth(item, 0);
    for k in ["number", "html_url", "state", "title", "body", "merged"] {
        if let Some(x) = pull.get(k) {
            v[k] = x.clone();
        }
    }
    v["head"]["ref"] = pull["head_ref"].clone();
    v["base"]["ref"] = pull["base_ref"].clone();
    v
}

fn answer(
    spec: &Spec,
    x: Exchange,
    rec: &Mutex<Vec<Received>>,
    ans: &Mutex<Vec<Answer>>,
    pulls: &Mutex<BTreeMap<u64, Value>>,
    per_context: &mut BTreeMap<(String, String), u32>,
    on_status: &dyn Fn(&str),
) {
    let path = x.url.split('?').next().unwrap_or(&x.url).to_owned();
    let mut problems = spec.check_request(&x.method, &x.url, x.header("content-type"), &x.body);
    let body: Value = serde_json::from_slice(&x.body).unwrap_or(Value::Null);
    let op = op_of(spec, &x.method, &path);
    let sha = path.rsplit('/').next().unwrap_or_default().to_owned();
    let mut status = match op {
        Op::Status | Op::PullCreate => 201,
        _ => 200,
    };
    if op == Op::Status {
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
    if op == Op::PullCreate && problems.is_empty() {
        // GitHub's rules the description states in prose: a title, one
        // open pull request per head and base (422 otherwise).
        if body["title"].as_str().is_none_or(str::is_empty) {
            problems.push("a pull request needs a title (GitHub answers 422)".into());
        }
        let open_same = pulls.lock().expect("pulls").values().any(|p| {
            p["state"] == "open" && p["head_ref"] == body["head"] && p["base_ref"] == body["base"]
        });
        if open_same {
            problems.push("a pull request for this head and base is already open (422)".into());
        }
    }
    if !problems.is_empty() && (status == 201 || status == 200) {
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
    // The fake's state changes for a valid request whatever it answers
    // (an answer lost on the way is how a client learns to look up).
    let mut pull = Value::Null;
    if status < 300 && !matches!(next, Answer::Status(_) | Answer::Redirect) {
        let mut all = pulls.lock().expect("pulls");
        match op {
            Op::PullCreate => {
                let n = all.keys().last().copied().unwrap_or(0) + 1;
                let p = json!({
                    "number": n,
                    "html_url": format!("https://github.example/{}/pull/{n}",
                        path.trim_start_matches("/repos/").trim_end_matches("/pulls")),
                    "state": "open", "title": body["title"], "body": body["body"],
                    "head_ref": body["head"], "base_ref": body["base"], "merged": false,
                });
                all.insert(n, p.clone());
                pull = p;
            }
            Op::PullUpdate | Op::PullGet => {
                let n: u64 = sha.parse().unwrap_or(0);
                match all.get_mut(&n) {
                    Some(p) => {
                        for k in ["title", "body", "state"] {
                            if op == Op::PullUpdate
                                && let Some(v) = body.get(k)
                            {
                                p[k] = v.clone();
                            }
                        }
                        pull = p.clone();
                    }
                    None => status = 404,
                }
            }
            _ => {}
        }
    }
    let reply = match next {
        _ if status >= 300 => Reply::new(status, error_body(status).to_string())
            .header("content-type", "application/json"),
        Answer::Normal | Answer::Slow(_) => {
            let answer = match op {
                Op::Status => {
                    let now = "2026-12-04T23:00:00Z";
                    json!({
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
                    })
                }
                Op::PullCreate | Op::PullUpdate | Op::PullGet => {
                    pull_answer(spec, &x.method, &path, status, &pull)
                }
                Op::PullList => {
                    let q: BTreeMap<String, String> = x
                        .url
                        .split_once('?')
                        .map(|(_, q)| {
                            url::form_urlencoded::parse(q.as_bytes())
                                .into_owned()
                                .collect()
                        })
                        .unwrap_or_default();
                    let want_head = q
                        .get("head")
                        .map(|h| h.split_once(':').map_or(h.as_str(), |(_, b)| b).to_owned());
                    let want_state = q.get("state").cloned().unwrap_or_else(|| "open".into());
                    let all = pulls.lock().expect("pulls");
                    Value::Array(
                        all.values()
                            .filter(|p| want_head.as_deref().is_none_or(|h| p["head_ref"] == h))
                            .filter(|p| want_state == "all" || p["state"] == want_state.as_str())
                            .map(|p| pull_answer(spec, &x.method, &path, 200, p))
                            .collect(),
                    )
                }
                Op::Other => json!({}),
            };
            let errs = spec.check_response(&x.method, &path, status, &answer);
            assert!(
                errs.is_empty(),
                "the fake's own answer is invalid: {errs:?}"
            );
            Reply::new(status, answer.to_string()).header("content-type", "application/json")
        }
        Answer::Status(st) => {
            status = st;
            Reply::new(st, error_body(st).to_string()).header("content-type", "application/json")
        }
        Answer::Redirect => {
            status = 307;
            Reply::new(307, "").header("location", "http://127.0.0.2:1/steal")
        }
        Answer::Huge => Reply::new(status, vec![b' '; 10 << 20]).chunked(),
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
