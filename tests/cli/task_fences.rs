//! Stale fences, expiry, reconciliation, prior subjects, tampered and
//! revoked observations, through the real binary.

use crate::common::task_support::{Setup, assertion, attempt_id, enroll_collector};
use agent_task::contract::{ExecutorRef, ResultOutcome, TrustClass};
use serde_json::Value;

fn status(s: &Setup, task: &str, att: &str) -> Value {
    s.agent(&["status", "--task", task, "--attempt", att])
        .json()
}

#[test]
fn task_stale_fence_mutations_are_refused_and_change_nothing() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let c1 = s.agent(&["claim", &tests, "--request-id", "c1"]).json();
    let a1 = attempt_id(&c1);
    let rec = s
        .agent(&[
            "reconcile",
            "--attempt",
            &a1,
            "--fence",
            "1",
            "--request-id",
            "rc1",
        ])
        .json();
    assert_eq!(
        rec["supersession"],
        serde_json::json!({"old_fence": 1, "new_fence": 2})
    );
    let before = status(&s, &tests, &a1);
    assert_eq!(before["state"], "replaced");
    for args in [
        vec![
            "heartbeat",
            "--attempt",
            &a1,
            "--fence",
            "1",
            "--request-id",
            "h-stale",
        ],
        vec![
            "cancel",
            "--attempt",
            &a1,
            "--fence",
            "1",
            "--request-id",
            "x-stale",
        ],
        vec![
            "reconcile",
            "--attempt",
            &a1,
            "--fence",
            "1",
            "--request-id",
            "r-stale",
        ],
    ] {
        s.agent(&args).error("stale_fence", 65);
    }
    s.submit(&assertion(
        &c1,
        "res-stale",
        &["tests-pass"],
        ResultOutcome::Failed,
    ))
    .error("stale_fence", 65);
    assert_eq!(status(&s, &tests, &a1), before, "refusals change nothing");
    let rec = s
        .agent(&["recovery", "--task", &tests, "--attempt", &a1])
        .json();
    assert_eq!(rec["disposition"], "uncertain_effect");
    assert_eq!(
        rec["unresolved_effects"],
        serde_json::json!(["execution_may_still_run"])
    );
    assert!(
        rec["permitted"]
            .as_array()
            .expect("p")
            .contains(&"prepare_fresh_attempt".into())
    );
    // A fresh attempt gets a strictly greater fence.
    let c2 = s.agent(&["claim", &tests, "--request-id", "c2"]).json();
    assert_eq!(c2["attempt"]["fence"], 3);
    let a2 = attempt_id(&c2);
    s.agent(&[
        "heartbeat",
        "--attempt",
        &a2,
        "--fence",
        "2",
        "--request-id",
        "h2",
    ])
    .error("stale_fence", 65);
    s.agent(&[
        "heartbeat",
        "--attempt",
        &a2,
        "--fence",
        "3",
        "--request-id",
        "h3",
    ])
    .json();
    // The replaced attempt keeps its uncertainty.
    assert_eq!(status(&s, &tests, &a1)["state"], "replaced");
}

#[test]
fn task_expiry_is_observed_at_read_time_and_needs_reconcile() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let t0 = "2030-01-01T00:00:00Z";
    let t1 = "2030-01-01T00:00:05Z";
    let c = s
        .agent_at(
            t0,
            &["claim", &tests, "--request-id", "c", "--lease-ms", "2000"],
        )
        .json();
    let a = attempt_id(&c);
    let st = s
        .agent_at(t1, &["status", "--task", &tests, "--attempt", &a])
        .json();
    assert_eq!(st["state"], "expired");
    assert_eq!(st["currently_applicable"], false);
    s.agent_at(
        t1,
        &[
            "heartbeat",
            "--attempt",
            &a,
            "--fence",
            "1",
            "--request-id",
            "h",
        ],
    )
    .error("lease_expired", 65);
    let n = s.agent_at(t1, &["next", "--change", &s.change_id]).json();
    assert_eq!(
        n["next"],
        serde_json::json!({"operation": "reconcile", "task_id": tests})
    );
    s.agent_at(t1, &["claim", &tests, "--request-id", "c-again"])
        .error("task_not_claimable", 65);
    let rec = s.agent_at(t1, &["recovery", "--task", &tests]).json();
    assert_eq!(rec["observed_state"], "expired");
    assert_eq!(rec["disposition"], "uncertain_effect");
    s.agent_at(
        t1,
        &[
            "cancel",
            "--attempt",
            &a,
            "--fence",
            "1",
            "--request-id",
            "x",
        ],
    )
    .json();
    s.agent_at(
        t1,
        &[
            "reconcile",
            "--attempt",
            &a,
            "--fence",
            "1",
            "--request-id",
            "r",
        ],
    )
    .json();
    let c2 = s
        .agent_at(t1, &["claim", &tests, "--request-id", "c2"])
        .json();
    assert_eq!(c2["attempt"]["fence"], 3);
}

#[test]
fn task_new_checkpoint_refuses_claim_while_older_subject_unresolved() {
    let s = Setup::new();
    let (old, _) = s.checkpoint();
    let c = s.agent(&["claim", &old, "--request-id", "c-old"]).json();
    std::fs::write(s.workspace.join("add.sh"), "echo $(($1 - $2))\n").expect("edit");
    let (new, _) = s.checkpoint();
    assert_ne!(old, new, "a checkpoint makes fresh task ids");
    // The old subject is stale: heartbeat refused, status reports it.
    let a = attempt_id(&c);
    s.agent(&[
        "heartbeat",
        "--attempt",
        &a,
        "--fence",
        "1",
        "--request-id",
        "h",
    ])
    .error("subject_stale", 65);
    let st = s.agent(&["status", "--task", &old, "--attempt", &a]).json();
    assert_eq!(st["subject_current"], false);
    assert_eq!(st["state"], "leased");
    assert_eq!(st["currently_applicable"], false);
    let e = s
        .agent(&["claim", &new, "--request-id", "c-new"])
        .error("prior_subject_unresolved", 65);
    assert_eq!(e["details"]["task_id"], old.as_str());
    let n = s.agent(&["next", "--change", &s.change_id]).json();
    assert_eq!(
        n["next"],
        serde_json::json!({"operation": "reconcile", "task_id": old})
    );
    // Reconciliation of the stale attempt is allowed; then the claim goes through.
    s.agent(&[
        "reconcile",
        "--attempt",
        &a,
        "--fence",
        "1",
        "--request-id",
        "r",
    ])
    .json();
    s.agent(&["claim", &new, "--request-id", "c-new2"]).json();
}

#[test]
fn task_tampered_wrong_key_revoked_and_old_epoch_observations_are_refused() {
    let s = Setup::new();
    let (_, notes) = s.checkpoint();
    let c = s.agent(&["claim", &notes, "--request-id", "c"]).json();
    let mut good = assertion(&c, "obs", &["notes-written"], ResultOutcome::Passed);
    good.trust_class = TrustClass::RegisteredExecutorObservation;
    good.executor = Some(s.executor_ref());
    s.sign(&mut good);
    // Tamper each signed field after signing.
    let mut variants = Vec::new();
    let mut t = good.clone();
    t.outcome = ResultOutcome::Failed;
    t.criteria[0].outcome = agent_task::contract::CriterionOutcome::Failed;
    variants.push(("outcome", t));
    let mut t = good.clone();
    t.criteria[0].findings = vec!["other".into()];
    variants.push(("findings", t));
    let mut t = good.clone();
    t.request_id = "obs-2".into();
    variants.push(("request_id", t));
    let mut t = good.clone();
    if let Some(p) = t.executor_provenance.as_mut() {
        p.signature = format!(
            "{}{}",
            if p.signature.starts_with('0') {
                "1"
            } else {
                "0"
            },
            &p.signature[1..]
        );
    }
    variants.push(("signature", t));
    for (what, v) in &variants {
        let e = s.submit(v).error("signature_invalid", 65);
        assert!(e["message"].is_string(), "{what}");
    }
    // Wrong key: a different key signing for the enrolled registration.
    let mut wrong = good.clone();
    let other = agent_task::wire::ed25519::Keypair::from_seed(&[42u8; 32]);
    agent_task::contract::observation::sign(&mut wrong, &other).expect("sign");
    s.submit(&wrong).error("signature_invalid", 65);
    // A binding that is not the current enrollment.
    let mut bad_epoch = good.clone();
    bad_epoch.executor = Some(ExecutorRef {
        registration_epoch: 7,
        ..s.executor_ref()
    });
    s.sign(&mut bad_epoch);
    s.submit(&bad_epoch).error("enrollment_invalid", 77);
    let st = s
        .agent(&["status", "--task", &notes, "--attempt", &attempt_id(&c)])
        .json();
    assert_eq!(st["state"], "leased", "refused results change nothing");
    // The untampered observation is accepted.
    s.submit(&good).json();

    // Revocation, then re-enrollment: the old registration stays invalid.
    let reg = s.registration["registration_id"]
        .as_str()
        .expect("reg")
        .to_owned();
    s.env
        .run(&["enrollment", "revoke", "--registration", &reg])
        .json();
    let re = enroll_collector(&s.env, &s.collector, "laptop");
    assert_eq!(re["epoch"], 2);
    let (_, notes2) = s.checkpoint();
    let c2 = s.agent(&["claim", &notes2, "--request-id", "c2"]).json();
    let mut old = assertion(&c2, "obs-old", &["notes-written"], ResultOutcome::Passed);
    old.trust_class = TrustClass::RegisteredExecutorObservation;
    old.executor = Some(s.executor_ref());
    s.sign(&mut old);
    s.submit(&old).error("enrollment_invalid", 77);
    let mut new = old.clone();
    new.request_id = "obs-new".into();
    new.executor = Some(ExecutorRef {
        registration_id: re["registration_id"].as_str().expect("id").into(),
        registration_epoch: 2,
        ..s.executor_ref()
    });
    s.sign(&mut new);
    s.submit(&new).json();
    // Claims naming a revoked registration are refused.
    let (_, notes3) = s.checkpoint();
    s.agent(&["claim", &notes3, "--request-id", "c3", "--executor", &reg])
        .error("enrollment_invalid", 77);
}

#[test]
fn task_result_rows_are_validated_against_the_task() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let c = s.agent(&["claim", &tests, "--request-id", "c"]).json();
    let mut dup = assertion(
        &c,
        "r1",
        &["tests-pass", "tests-pass"],
        ResultOutcome::Passed,
    );
    s.submit(&dup).error("invalid_input", 65);
    dup = assertion(&c, "r2", &[], ResultOutcome::Passed);
    s.submit(&dup).error("invalid_input", 65);
    dup = assertion(&c, "r3", &["tests-pass", "unknown"], ResultOutcome::Passed);
    s.submit(&dup).error("invalid_input", 65);
    let mut other = assertion(&c, "r4", &["tests-pass"], ResultOutcome::Passed);
    other.agent.agent_id = "someone-else".into();
    s.submit(&other).error("forbidden", 77);
    let mut nul = assertion(&c, "r5", &["tests-pass"], ResultOutcome::Failed);
    nul.criteria[0].findings = vec!["a\u{0}b".into()];
    s.submit(&nul).error("invalid_input", 65);
    // Unknown fields fail strictly.
    let f = s.env.path("unknown.json");
    let mut v = serde_json::to_value(assertion(&c, "r6", &["tests-pass"], ResultOutcome::Failed))
        .expect("v");
    v["extra"] = 1.into();
    std::fs::write(&f, serde_json::to_vec(&v).expect("j")).expect("w");
    s.agent(&["result", "--file", f.to_str().expect("utf8")])
        .error("invalid_input", 65);
    s.submit(&assertion(&c, "r7", &["tests-pass"], ResultOutcome::Failed))
        .json();
}

#[test]
fn task_heartbeat_after_a_policy_act_names_the_epoch_as_why_its_subject_is_stale() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let c = s.agent(&["claim", &tests, "--request-id", "c"]).json();
    let a = attempt_id(&c);
    let beat = |id: &str| {
        s.agent(&[
            "heartbeat",
            "--attempt",
            &a,
            "--fence",
            "1",
            "--request-id",
            id,
        ])
    };
    assert_eq!(beat("h1").json()["state"], "leased");
    // The operator enrolls another collector: a policy act, which makes
    // every live subject stale (its epoch is bound into each task).
    let enrolled = enroll_collector(&s.env, &s.env.path("other-collector"), "desktop");
    assert!(enrolled["policy_epoch"].as_u64().is_some(), "{enrolled}");
    let before = status(&s, &tests, &a);
    let e = beat("h2").error("subject_stale", 65);
    assert_eq!(e["details"]["reason"], "policy_changed", "{e}");
    // Refused, it changed nothing: the attempt as before, still leased,
    // its subject reported as not current.
    let st = status(&s, &tests, &a);
    assert_eq!(st, before);
    assert_eq!(st["state"], "leased", "{st}");
    assert_eq!(st["subject_current"], false, "{st}");
    assert_eq!(st["stale_reason"], "policy_changed", "{st}");
}
