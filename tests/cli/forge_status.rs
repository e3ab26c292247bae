//! Commit statuses (issue 32, item 4, the part `land --push` needs): with
//! `repo forge set --forge-status`, the landed commit's success status is
//! published on the candidate commit after `agent-task/<change>` is pushed
//! and before the target is, to a fake GitHub that validates every request
//! against GitHub's OpenAPI description (`common::fake_github`); hostile
//! answers (401, 403, 404, 422, 500, a redirect to another host, a 10 MiB
//! body) are typed errors with the forge's status in `details`, the token
//! in none of them, the target not pushed and the landing kept; `land
//! --push` again completes.

use crate::common::attest::qualified;
use crate::common::fake_github::{Answer, FakeGithub, Spec, spec_path};
use crate::forge_push::{TOKEN, forge_with, land_push, rev};
use std::sync::{Arc, Mutex};

#[test]
fn a_success_status_reaches_github_between_the_candidate_branch_and_the_target() {
    let Some(spec) = spec_path() else { return };
    let l = qualified();
    let seen: Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>> = Arc::default();
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
