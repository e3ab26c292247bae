//! Commit statuses (issue 32, item 4, the part `land --push` needs): with
//! `repo forge set --forge-status`, the landed commit's success status is
//! published on the candidate commit after `agent-task/<change>` is pushed
//! and before the target is, to a fake GitHub that validates every request
//! against GitHub's OpenAPI description (`common::fake_github`); hostile
//! answers (401, 403, 404, 422, 500, a redirect to another host, a 10 MiB
//! body) are typed errors with the forge's status in `details`, the token
//! in none of them, the target not pushed and the landing kept; `land
//! --push` again completes. The outbox: each state from the transaction
//! that makes it, drained by `forge publish` once the candidate commit is
//! on the forge. GitLab: its own states on its documented endpoint.

use crate::common::attest::qualified;
use crate::common::fake_github::{Answer, FakeGithub, Spec, spec_path};
use crate::forge_push::{TOKEN, forge_with, land_push, rev};
use std::sync::{Arc, Mutex};

#[test]
fn a_success_status_reaches_github_between_the_candidate_branch_and_the_target() {
    let Some(spec) = spec_path() else { return };
    let l = qualified();
    /// (status SHA, the candidate branch, the target) when a status arrives.
    type Seen = Vec<(String, Option<String>, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let bare = l.env.path("git-server/demo.git");
    let change = l.change_id.clone();
    let seen2 = seen.clone();
    let fake = FakeGithub::start(Spec::load(&spec), move |sha| {
        // What the forge's git holds when the status arrives.
        seen2.lock().expect("seen").push((
            sha.to_owned(),
            rev(&bare, &format!("refs/heads/agent-task/{change}")),
            rev(&bare, "refs/heads/main"),
        ));
    });
    let (_server, bare, _) = forge_with(
        &l,
        TOKEN,
        &fake.origin_url,
        &[
            "--forge-status",
            "--status-target-url",
            "https://ci.example/agent-task",
        ],
    );
    let old = rev(&bare, "refs/heads/main").expect("main");
    let v = land_push(&l).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    assert_eq!(v["push"]["status"], "success", "{v}");
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    let got = fake.received();
    assert_eq!(got.len(), 1, "{got:?}");
    let r = &got[0];
    assert!(
        r.problems.is_empty(),
        "GitHub's description refuses it: {:?}",
        r.problems
    );
    assert_eq!(r.method, "POST");
    assert_eq!(r.url, format!("/repos/demo/basic/statuses/{commit}"));
    assert_eq!(
        r.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(r.body["state"], "success");
    assert_eq!(r.body["context"], "agent-task/default");
    assert_eq!(r.body["target_url"], "https://ci.example/agent-task");
    let d = r.body["description"].as_str().expect("description");
    assert!(!d.is_empty() && d.chars().count() <= 140, "{d}");
    // Ordered: the candidate branch was at the commit, the target not yet.
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(
        seen,
        vec![(commit.clone(), Some(commit.clone()), Some(old))]
    );
}

#[test]
fn hostile_status_answers_are_typed_keep_the_landing_and_push_no_target() {
    let Some(spec) = spec_path() else { return };
    let l = qualified();
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    let (_server, bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &["--forge-status"]);
    let old = rev(&bare, "refs/heads/main").expect("main");
    let cases: Vec<(Vec<Answer>, u64, usize)> = vec![
        (vec![Answer::Status(401)], 401, 1),
        (vec![Answer::Status(403)], 403, 1),
        (vec![Answer::Status(404)], 404, 1),
        (vec![Answer::Status(422)], 422, 1),
        // A 5xx is retried, boundedly: three attempts.
        (
            vec![
                Answer::Status(500),
                Answer::Status(502),
                Answer::Status(503),
            ],
            503,
            3,
        ),
        (vec![Answer::Redirect], 307, 1),
        (vec![Answer::Huge], 201, 1),
    ];
    let mut landed = None;
    for (answers, status, requests) in cases {
        let before = fake.received().len();
        for a in answers {
            fake.queue(a);
        }
        let o = land_push(&l);
        let e = o.error("forge_unavailable", 69);
        assert_eq!(e["details"]["forge_status"], status, "{o}");
        assert_eq!(fake.received().len() - before, requests, "{o}");
        assert!(!o.stderr.contains(TOKEN), "{o}");
        // The landing is kept; the forge's target never moved.
        let c = e["details"]["landing"]["git_commit"]
            .as_str()
            .expect("landing")
            .to_owned();
        assert_eq!(landed.get_or_insert(c.clone()), &c);
        assert_eq!(rev(&bare, "refs/heads/main").as_deref(), Some(old.as_str()));
    }
    // A slow forge: each attempt times out (the test build's deadline is
    // 300 ms here), three attempts, a typed error without a forge status.
    for _ in 0..3 {
        fake.queue(Answer::Slow(std::time::Duration::from_millis(1200)));
    }
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_TEST_FORGE_TIMEOUT_MS", "300").args([
        "land",
        "--update-worktree",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
        "--push",
    ]);
    let o = crate::common::run_cmd(&mut c);
    let e = o.error("forge_unavailable", 69);
    assert!(e["details"].get("forge_status").is_none(), "{o}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("timed out") || m.contains("I/O")),
        "{o}"
    );
    assert!(!o.stderr.contains(TOKEN), "{o}");
    assert_eq!(rev(&bare, "refs/heads/main").as_deref(), Some(old.as_str()));
    // A 500 then a good answer: the retry succeeds within one run.
    fake.queue(Answer::Status(500));
    let v = land_push(&l).json();
    assert_eq!(v["push"]["pushed"], true, "{v}");
    assert_eq!(v["push"]["status"], "success", "{v}");
    let commit = landed.expect("landed");
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    for r in fake.received() {
        assert!(r.problems.is_empty(), "{r:?}");
    }
}

#[test]
fn the_fake_refuses_what_githubs_description_refuses() {
    let Some(spec) = spec_path() else { return };
    let spec = Spec::load(&spec);
    let sha = "a".repeat(40);
    let url = format!("/repos/acme/api/statuses/{sha}");
    let ok =
        |body: &str| spec.check_request("POST", &url, Some("application/json"), body.as_bytes());
    assert!(
        ok(r#"{"state":"success","context":"agent-task/default","description":"d"}"#).is_empty()
    );
    assert!(ok(r#"{"state":"success","target_url":null}"#).is_empty());
    for bad in [
        r#"{"state":"failed"}"#,
        r#"{"context":"agent-task/default"}"#,
        r#"{"state":"success","context":7}"#,
        r#"{"state":"success","description":["x"]}"#,
        r#"["state"]"#,
        "not json",
    ] {
        assert!(!ok(bad).is_empty(), "accepted {bad}");
    }
    assert!(
        !spec
            .check_request("PUT", &url, Some("application/json"), b"{}")
            .is_empty()
    );
    assert!(
        !spec
            .check_request("POST", "/repos/acme/statuses/x", None, b"{}")
            .is_empty()
    );
    assert!(
        !spec
            .check_request("POST", &url, Some("text/plain"), br#"{"state":"success"}"#)
            .is_empty()
    );
}

/// The outbox's rows: (version, state, outcome).
fn outbox(l: &crate::common::collect_flow::Loop) -> Vec<(i64, String, Option<String>)> {
    let c = rusqlite::Connection::open_with_flags(
        l.env.data_dir.join("authority.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open");
    let mut st = c
        .prepare("SELECT change_version, state, outcome FROM forge_status_outbox ORDER BY seq")
        .expect("prepare");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn the_outbox_takes_each_state_from_its_transaction_and_publish_delivers_it_once_pushed() {
    use crate::common::collect_flow::Loop;
    let Some(spec) = spec_path() else { return };
    let l = Loop::basic("bwrap");
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    let (_server, bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &["--forge-status"]);
    // Version 1 fails its test; version 2 passes and is finalized.
    l.set_add("-");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d1.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d2.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let rows = vec![
        (1, "pending".to_owned(), None),
        (1, "failure".to_owned(), None),
        (2, "pending".to_owned(), None),
        (2, "success".to_owned(), None),
    ];
    assert_eq!(outbox(&l), rows);
    // Reads write nothing.
    assert_eq!(l.qualify()["qualified"], true);
    l.agent(&["status", "--change", &l.change_id]);
    assert_eq!(outbox(&l), rows);

    // No commit on the forge yet: everything waits; earlier states of a
    // version are superseded by its latest.
    let p = l.env.run(&["forge", "publish"]).json();
    assert_eq!(
        (
            p["published"].as_u64(),
            p["waiting"].as_u64(),
            p["superseded"].as_u64()
        ),
        (Some(0), Some(2), Some(2)),
        "{p}"
    );
    assert!(fake.received().is_empty());

    // land --push: the candidate commit reaches the forge, the status
    // does not (the forge fails thrice): the target is not pushed.
    for _ in 0..3 {
        fake.queue(Answer::Status(500));
    }
    let e = land_push(&l).error("forge_unavailable", 69);
    let commit = e["details"]["landing"]["git_commit"]
        .as_str()
        .expect("commit")
        .to_owned();
    // The publisher delivers the version's success on that commit.
    let p = l.env.run(&["forge", "publish"]).json();
    assert_eq!(
        (p["published"].as_u64(), p["waiting"].as_u64()),
        (Some(1), Some(1)),
        "{p}"
    );
    let got = fake.received();
    let last = got.last().expect("a request");
    assert!(last.problems.is_empty(), "{last:?}");
    assert_eq!(last.url, format!("/repos/demo/basic/statuses/{commit}"));
    assert_eq!(last.body["state"], "success");
    assert_eq!(last.status, 201);
    // Once: a second pass publishes nothing.
    let n = fake.received().len();
    let p = l.env.run(&["forge", "publish"]).json();
    assert_eq!(p["published"], 0, "{p}");
    assert_eq!(fake.received().len(), n);
    // The landing completes; version 1 (never pushed) still waits.
    let v = land_push(&l).json();
    assert_eq!(v["push"]["pushed"], true, "{v}");
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    let states: Vec<_> = outbox(&l)
        .into_iter()
        .map(|(v, s, o)| (v, s, o.unwrap_or_default()))
        .collect();
    assert_eq!(
        states,
        vec![
            (1, "pending".into(), "superseded".into()),
            (1, "failure".into(), String::new()),
            (2, "pending".into(), "superseded".into()),
            (2, "success".into(), "published".into()),
        ]
    );
}

/// What GitLab documents for `POST /projects/:id/statuses/:sha` (the API
/// reference, "Commit statuses"): the project by id or URL-encoded path,
/// a full SHA, `state` required and one of
/// `pending|running|success|failed|canceled`, the other attributes only
/// `ref`, `name`/`context`, `target_url`, `description`, `coverage`,
/// `pipeline_id`; a token in `PRIVATE-TOKEN` (or a bearer).
fn gitlab_problems(url: &str, token: Option<&str>, body: &[u8]) -> Vec<String> {
    let mut p = Vec::new();
    let rest = url.strip_prefix("/api/v4/projects/").unwrap_or_default();
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() != 3 || parts[1] != "statuses" {
        p.push(format!("{url}: not /api/v4/projects/:id/statuses/:sha"));
    } else {
        let id = parts[0];
        if !(id.bytes().all(|b| b.is_ascii_digit()) || id.contains("%2F")) {
            p.push(format!(
                "project id {id} is neither a number nor a URL-encoded path"
            ));
        }
        if !(parts[2].len() == 40 && parts[2].bytes().all(|b| b.is_ascii_hexdigit())) {
            p.push("sha is not a full commit id".into());
        }
    }
    if token != Some(TOKEN) {
        p.push("no PRIVATE-TOKEN".into());
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(m)) => {
            let allowed = [
                "state",
                "ref",
                "name",
                "context",
                "target_url",
                "description",
                "coverage",
                "pipeline_id",
            ];
            for k in m.keys() {
                if !allowed.contains(&k.as_str()) {
                    p.push(format!("{k} is not a documented attribute"));
                }
            }
            let states = ["pending", "running", "success", "failed", "canceled"];
            if !m
                .get("state")
                .and_then(|s| s.as_str())
                .is_some_and(|s| states.contains(&s))
            {
                p.push(format!(
                    "state {:?} is not one of {states:?}",
                    m.get("state")
                ));
            }
        }
        _ => p.push("the body is not a JSON object".into()),
    }
    p
}

#[test]
fn gitlab_gets_its_own_states_on_its_documented_endpoint() {
    use crate::common::origin::{Origin, Reply};
    let l = qualified();
    let mut origin = Origin::start();
    let api = format!("{}/api/v4", origin.url());
    let (_server, bare, _) = forge_with(&l, TOKEN, &api, &["--kind", "gitlab", "--forge-status"]);
    let requests = origin.requests();
    let fake = std::thread::spawn(move || {
        let x = requests.into_iter().next().expect("a request");
        let problems = gitlab_problems(&x.url, x.header("private-token"), &x.body);
        let body: serde_json::Value = serde_json::from_slice(&x.body).unwrap_or_default();
        let url = x.url.clone();
        x.respond(
            Reply::new(
                201,
                serde_json::json!({"id": 93, "sha": url.rsplit('/').next(), "ref": null,
                    "status": body["state"], "name": body["name"], "target_url": null,
                    "description": body["description"], "created_at": "2026-12-04T23:00:00.000Z",
                    "started_at": null, "finished_at": null, "allow_failure": false,
                    "coverage": null, "author": {"id": 1, "username": "project_1_bot"}})
                .to_string(),
            )
            .header("content-type", "application/json"),
        );
        (url, body, problems)
    });
    let v = land_push(&l).json();
    let (url, body, problems) = fake.join().expect("fake");
    assert!(problems.is_empty(), "{problems:?}");
    let commit = v["git_commit"].as_str().expect("commit");
    assert_eq!(
        url,
        format!("/api/v4/projects/demo%2Fbasic/statuses/{commit}")
    );
    assert_eq!(body["state"], "success");
    assert_eq!(body["name"], "agent-task/default");
    assert_eq!(rev(&bare, "refs/heads/main").as_deref(), Some(commit));
}

#[test]
fn serve_publishes_the_outbox_on_its_own() {
    use crate::common::collect_flow::Loop;
    use std::io::BufRead;
    let Some(spec) = spec_path() else { return };
    let l = Loop::basic("bwrap");
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    // Kept: the git server stops when dropped.
    let (_server, _bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &["--forge-status"]);
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    // The candidate commit is pushed; its status is not (the forge fails).
    for _ in 0..3 {
        fake.queue(Answer::Status(500));
    }
    let e = land_push(&l).error("forge_unavailable", 69);
    let commit = e["details"]["landing"]["git_commit"]
        .as_str()
        .expect("commit")
        .to_owned();
    let n = fake.received().len();
    l.env.run(&["data", "init"]).json();
    let mut child = l
        .env
        .std_cmd()
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--forge-publish-ms",
            "100",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while fake.received().len() == n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    let got = fake.received();
    assert_eq!(got.len(), n + 1, "published once: {got:?}");
    let r = got.last().expect("request");
    assert!(r.problems.is_empty(), "{r:?}");
    assert_eq!(r.url, format!("/repos/demo/basic/statuses/{commit}"));
    assert_eq!(r.body["state"], "success");
}

/// An optional step's failing record keeps nothing from qualifying: it
/// writes no `failure` status (the spec's "fails a required step").
#[test]
fn a_failing_optional_step_writes_no_failure_status() {
    use crate::common::collect_flow::Loop;
    let Some(spec) = spec_path() else { return };
    let dir = tempfile::tempdir().expect("tmp");
    let mut w: serde_json::Value = serde_json::from_slice(
        &std::fs::read(crate::common::repo_root().join("fixtures/workflows/basic.json"))
            .expect("fixture"),
    )
    .expect("json");
    w["steps"][0]["required"] = false.into();
    let p = dir.path().join("workflow.json");
    std::fs::write(&p, serde_json::to_vec(&w).expect("json")).expect("write");
    let l = Loop::new(&p, "bwrap", None);
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    let (_server, _bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &["--forge-status"]);
    l.set_add("-");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d1.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    assert_eq!(outbox(&l), vec![(1, "pending".to_owned(), None)]);
}
