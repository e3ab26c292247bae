//! A fake GitLab for `propose` and `forge sync`: merge requests and
//! commit statuses on the endpoints GitLab's REST API reference documents
//! ("Merge requests API", "Commits API: commit status"). GitLab publishes
//! no machine-readable description of them, so the fake checks what the
//! reference says: the path (`/api/v4/projects/:id/...` with the project
//! by numeric id or URL-encoded path), the method, the `PRIVATE-TOKEN`
//! header, only documented attributes, the required ones, their types,
//! the enums (`state_event` `close|reopen`, a status `state`, the list's
//! `state` filter) and the lengths (a title of at most 255 characters).
//! Every request is kept with the problems found in it.

use crate::common::origin::{Exchange, Origin, Reply};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub url: String,
    pub body: Value,
    pub problems: Vec<String>,
    pub status: u16,
}

pub struct FakeGitlab {
    /// The API base (`…/api/v4`).
    pub api_url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    /// The merge requests, by iid.
    pub mrs: Arc<Mutex<BTreeMap<u64, Value>>>,
    _origin: Origin,
}

impl FakeGitlab {
    pub fn start(token: &'static str) -> FakeGitlab {
        let mut origin = Origin::start();
        let api_url = format!("{}/api/v4", origin.url());
        let received = Arc::new(Mutex::new(Vec::new()));
        let mrs: Arc<Mutex<BTreeMap<u64, Value>>> = Arc::default();
        let (rec, m) = (received.clone(), mrs.clone());
        let requests = origin.requests();
        std::thread::spawn(move || {
            for x in requests {
                answer(x, token, &rec, &m);
            }
        });
        FakeGitlab {
            api_url,
            received,
            mrs,
            _origin: origin,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }
}

/// Attributes the reference documents, with their JSON type.
const CREATE: &[(&str, &str)] = &[
    ("source_branch", "string"),
    ("target_branch", "string"),
    ("title", "string"),
    ("allow_collaboration", "boolean"),
    ("approvals_before_merge", "integer"),
    ("allow_maintainer_to_push", "boolean"),
    ("assignee_id", "integer"),
    ("assignee_ids", "array"),
    ("description", "string"),
    ("labels", "string"),
    ("merge_after", "string"),
    ("milestone_id", "integer"),
    ("remove_source_branch", "boolean"),
    ("reviewer_ids", "array"),
    ("squash", "boolean"),
    ("target_project_id", "integer"),
];
const UPDATE: &[(&str, &str)] = &[
    ("add_labels", "string"),
    ("allow_collaboration", "boolean"),
    ("allow_maintainer_to_push", "boolean"),
    ("assignee_id", "integer"),
    ("assignee_ids", "array"),
    ("description", "string"),
    ("discussion_locked", "boolean"),
    ("labels", "string"),
    ("merge_after", "string"),
    ("milestone_id", "integer"),
    ("remove_labels", "string"),
    ("remove_source_branch", "boolean"),
    ("reviewer_ids", "array"),
    ("squash", "boolean"),
    ("state_event", "string"),
    ("target_branch", "string"),
    ("title", "string"),
];
const STATUS: &[(&str, &str)] = &[
    ("state", "string"),
    ("ref", "string"),
    ("name", "string"),
    ("context", "string"),
    ("target_url", "string"),
    ("description", "string"),
    ("coverage", "number"),
    ("pipeline_id", "integer"),
];

fn check_body(
    body: &[u8],
    allowed: &[(&str, &str)],
    required: &[&str],
    p: &mut Vec<String>,
) -> Value {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            p.push("the body is not a JSON object".into());
            return Value::Null;
        }
    };
    for (k, val) in v.as_object().into_iter().flatten() {
        match allowed.iter().find(|(n, _)| n == k) {
            None => p.push(format!("{k} is not a documented attribute")),
            Some((_, t)) => {
                let ok = match *t {
                    "string" => val.is_string(),
                    "boolean" => val.is_boolean(),
                    "integer" => val.is_i64() || val.is_u64(),
                    "number" => val.is_number(),
                    "array" => val.is_array(),
                    _ => false,
                };
                if !ok {
                    p.push(format!("{k} is not a {t}"));
                }
            }
        }
    }
    for r in required {
        if v.get(*r).is_none() {
            p.push(format!("required {r} is missing"));
        }
    }
    if v["title"].as_str().is_some_and(|t| t.chars().count() > 255) {
        p.push("title over 255 characters".into());
    }
    v
}

fn mr_json(m: &Value) -> Value {
    json!({
        "id": 1000 + m["iid"].as_u64().unwrap_or(0), "iid": m["iid"], "project_id": 7,
        "title": m["title"], "description": m["description"], "state": m["state"],
        "source_branch": m["source_branch"], "target_branch": m["target_branch"],
        "web_url": m["web_url"], "sha": null, "draft": false,
        "created_at": "2026-12-04T23:00:00.000Z", "updated_at": "2026-12-04T23:00:00.000Z",
        "author": {"id": 1, "username": "project_7_bot"},
    })
}

fn answer(x: Exchange, token: &str, rec: &Mutex<Vec<Received>>, mrs: &Mutex<BTreeMap<u64, Value>>) {
    let mut p = Vec::new();
    if x.header("private-token") != Some(token) {
        p.push("no PRIVATE-TOKEN".into());
    }
    let (path, query) = x.url.split_once('?').unwrap_or((&x.url, ""));
    let q: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let rest = path.strip_prefix("/api/v4/projects/").unwrap_or_default();
    let parts: Vec<&str> = rest.split('/').collect();
    let id = parts.first().copied().unwrap_or_default();
    if !(id.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty() || id.contains("%2F")) {
        p.push(format!(
            "project id {id:?} is neither a number nor a URL-encoded path"
        ));
    }
    let mut status = 200;
    let mut body = Value::Null;
    let out: Value = match (x.method.as_str(), &parts[1..]) {
        ("POST", ["statuses", sha]) => {
            if !(sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())) {
                p.push("sha is not a full commit id".into());
            }
            body = check_body(&x.body, STATUS, &["state"], &mut p);
            let states = ["pending", "running", "success", "failed", "canceled"];
            if !body["state"].as_str().is_some_and(|s| states.contains(&s)) {
                p.push(format!("state {} is not one of {states:?}", body["state"]));
            }
            status = 201;
            json!({"id": 93, "sha": sha, "status": body["state"], "name": body["name"]})
        }
        ("POST", ["merge_requests"]) => {
            body = check_body(
                &x.body,
                CREATE,
                &["source_branch", "target_branch", "title"],
                &mut p,
            );
            let mut all = mrs.lock().expect("mrs");
            if all.values().any(|m| {
                m["state"] == "opened"
                    && m["source_branch"] == body["source_branch"]
                    && m["target_branch"] == body["target_branch"]
            }) {
                p.push("a merge request for this source and target is already open (409)".into());
            }
            status = 201;
            if p.is_empty() {
                let iid = all.keys().last().copied().unwrap_or(0) + 1;
                let m = json!({"iid": iid, "title": body["title"], "description": body["description"],
                    "state": "opened", "source_branch": body["source_branch"],
                    "target_branch": body["target_branch"],
                    "web_url": format!("https://gitlab.example/demo/basic/-/merge_requests/{iid}")});
                all.insert(iid, m.clone());
                mr_json(&m)
            } else {
                Value::Null
            }
        }
        ("GET", ["merge_requests"]) => {
            for k in q.keys() {
                if ![
                    "source_branch",
                    "target_branch",
                    "state",
                    "per_page",
                    "page",
                ]
                .contains(&k.as_str())
                {
                    p.push(format!(
                        "query {k} is not one this fake knows the reference for"
                    ));
                }
            }
            let st = q.get("state").map(String::as_str).unwrap_or("all");
            if !["opened", "closed", "locked", "merged", "all"].contains(&st) {
                p.push(format!("query state {st:?} is not documented"));
            }
            let all = mrs.lock().expect("mrs");
            Value::Array(
                all.values()
                    .filter(|m| {
                        q.get("source_branch")
                            .is_none_or(|b| m["source_branch"] == b.as_str())
                    })
                    .filter(|m| st == "all" || m["state"] == st)
                    .map(mr_json)
                    .collect(),
            )
        }
        ("PUT", ["merge_requests", iid]) => {
            body = check_body(&x.body, UPDATE, &[], &mut p);
            if body.as_object().is_some_and(|o| o.is_empty()) {
                p.push("an update needs at least one attribute".into());
            }
            if let Some(e) = body.get("state_event")
                && !(e == "close" || e == "reopen")
            {
                p.push(format!("state_event {e} is not close or reopen"));
            }
            let mut all = mrs.lock().expect("mrs");
            match iid.parse::<u64>().ok().and_then(|n| all.get_mut(&n)) {
                Some(m) if p.is_empty() => {
                    for k in ["title", "description"] {
                        if let Some(v) = body.get(k) {
                            m[k] = v.clone();
                        }
                    }
                    match body["state_event"].as_str() {
                        Some("close") => m["state"] = "closed".into(),
                        Some("reopen") => m["state"] = "opened".into(),
                        _ => {}
                    }
                    mr_json(m)
                }
                Some(_) => Value::Null,
                None => {
                    status = 404;
                    json!({"message": "404 Not found"})
                }
            }
        }
        _ => {
            p.push(format!(
                "{} {path}: not an endpoint this fake serves",
                x.method
            ));
            Value::Null
        }
    };
    if !p.is_empty() {
        status = if status == 404 { 404 } else { 400 };
    }
    let reply = if p.is_empty() {
        Reply::new(status, out.to_string()).header("content-type", "application/json")
    } else {
        Reply::new(status, json!({"message": p.join("; ")}).to_string())
            .header("content-type", "application/json")
    };
    rec.lock().expect("received").push(Received {
        method: x.method.clone(),
        url: x.url.clone(),
        body,
        problems: p,
        status,
    });
    x.respond(reply);
}
