//! Controller, crash-rule, replay and tamper tests (in-process transports;
//! the Claude Code transport against the stand-in reviewer is exercised in
//! `tests/cli/review_core.rs`).

use super::controller::{Review, run};
use super::journal::{CallOutcome, FileJournal, MemoryJournal, Observation, ReviewJournal};
use super::plan::{self, EntryKind, MemorySnapshot, Snapshot, SnapshotEntry};
use super::replay::validate_replay;
use super::transport::{self, Dispatch, FixtureTransport, PreparedCall, Transport};
use super::types::*;
use crate::collector::state::StateKey;
use crate::collector::transfer::RegistrationBinding;
use crate::error::{Code, Result};
use crate::wire::digest::Sha256Hex;
use serde_json::{Value, json};
use std::cell::Cell;

fn pins() -> PinnedExecutable {
    PinnedExecutable {
        program: PinnedFile {
            path: "/usr/bin/node".into(),
            sha256: Sha256Hex::digest(b"node"),
            size: 4,
        },
        script: Some(PinnedFile {
            path: "/opt/claude-code/cli.js".into(),
            sha256: Sha256Hex::digest(b"cli.js"),
            size: 6,
        }),
    }
}

fn criteria() -> Vec<ReviewCriterion> {
    vec![
        ReviewCriterion {
            id: "no-secrets".into(),
            required: true,
            text: "No credential or private key is committed.".into(),
        },
        ReviewCriterion {
            id: "style".into(),
            required: false,
            text: "Names are clear.".into(),
        },
    ]
}

fn profile_with(basis: Basis, budgets: ReviewBudgets, coverage: &[&str]) -> ReviewProfile {
    ReviewProfile::new(ProfileParts {
        repository: "demo/basic".into(),
        profile: "default".into(),
        step_id: "review".into(),
        registration: RegistrationBinding {
            registration_id: "reg_0123456789abcdef0123456789abcdef".into(),
            executor_id: "laptop-review".into(),
            epoch: 1,
            key_id: "kid_0123456789abcdef0123456789abcdef".into(),
        },
        requirement_digest: Sha256Hex::digest(b"requirement"),
        criteria: criteria(),
        step: ReviewStep {
            coverage: coverage.iter().map(|s| s.to_string()).collect(),
            budgets,
        },
        basis,
        executable: pins(),
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-6".into(),
        env: vec!["ANTHROPIC_API_KEY".into()],
    })
    .expect("profile")
}

fn budgets() -> ReviewBudgets {
    ReviewBudgets {
        max_calls: 8,
        max_source_bytes_per_call: 1024,
        max_output_bytes_per_call: 16 * 1024,
        max_total_wall_ms: 60_000,
    }
}

fn profile() -> ReviewProfile {
    profile_with(Basis::Fixture, budgets(), &["src/**", "!src/gen/**"])
}

fn request(p: &ReviewProfile) -> ReviewRequest {
    ReviewRequest::new(
        ReviewSubject {
            repository: "demo/basic".into(),
            task_id: "task_0123456789abcdef0123456789abcdef".into(),
            task_digest: Sha256Hex::digest(b"task"),
            attempt_id: "att_0123456789abcdef0123456789abcdef".into(),
            attempt_digest: Sha256Hex::digest(b"attempt"),
            execution_operation_id: "exec_0123456789abcdef0123456789abcdef".into(),
            fence: 1,
            revision: Sha256Hex::digest(b"revision"),
            manifest_sha256: Sha256Hex::digest(b"manifest"),
        },
        p,
    )
    .expect("request")
}

/// Two files that fit one call each (the budget is 1 KiB), one ignored by
/// a negation and one outside the coverage.
fn snapshot() -> MemorySnapshot {
    MemorySnapshot::new(vec![
        ("README.md".into(), b"# demo\n".to_vec()),
        (
            "src/a.rs".into(),
            format!("fn a() {{}}\n{}", "// pad\n".repeat(144)).into_bytes(),
        ),
        ("src/b.rs".into(), b"fn b() {}\n".to_vec()),
        ("src/gen/x.rs".into(), b"generated\n".to_vec()),
    ])
}

/// A valid answer to `call`: every criterion passed, every path confirmed.
fn good_answer(call: &PreparedCall) -> Value {
    let req = &call.reservation.request;
    let mut paths: Vec<&str> = req.parts.iter().map(|p| p.path.as_str()).collect();
    paths.dedup();
    json!({
        "criteria": [
            {"id": "no-secrets", "outcome": "passed", "findings": []},
            {"id": "style", "outcome": "passed", "findings": []}
        ],
        "reviewed": paths
    })
}

fn envelope(call: &PreparedCall, structured: Value) -> Vec<u8> {
    let req = &call.reservation.request;
    serde_json::to_vec(&json!({
        "type": "result", "subtype": "success", "is_error": false, "duration_ms": 5,
        "duration_api_ms": 4, "num_turns": 2, "result": structured.to_string(),
        "session_id": req.session_id, "total_cost_usd": 0.001,
        "usage": {"input_tokens": 100, "output_tokens": 20},
        "modelUsage": {"claude-sonnet-4-6": {"inputTokens": 100}},
        "permission_denials": [], "structured_output": structured,
        "uuid": "00000000-0000-4000-8000-000000000000"
    }))
    .expect("json")
}

/// A transport whose every observation the test controls.
struct Scripted<F: FnMut(&PreparedCall) -> (Observation, Vec<u8>)> {
    f: F,
    calls: u32,
}

fn obs(p: &ReviewProfile, env: &[u8]) -> Observation {
    Observation {
        dispatched: true,
        spawn_error: None,
        exit_code: Some(0),
        signal: None,
        timed_out: false,
        stdout_capped: false,
        duration_ms: 1000,
        envelope_bytes: env.len() as u64,
        envelope_sha256: Sha256Hex::digest(env),
        stderr_tail: String::new(),
        executable_before: transport::pinned(&p.executable),
        executable_after: transport::pinned(&p.executable),
    }
}

impl<F: FnMut(&PreparedCall) -> (Observation, Vec<u8>)> Transport for Scripted<F> {
    fn basis(&self) -> Basis {
        Basis::Fixture
    }
    fn call(&mut self, call: &PreparedCall) -> Result<Dispatch> {
        self.calls += 1;
        let (o, env) = (self.f)(call);
        let r = &call.reservation.request;
        Ok(Dispatch::Done(Box::new(CallOutcome::new(
            r.index,
            r.ticket.clone(),
            o,
            &env,
        ))))
    }
}

fn scripted<F: FnMut(&PreparedCall) -> (Observation, Vec<u8>)>(f: F) -> Scripted<F> {
    Scripted { f, calls: 0 }
}

/// The honest reviewer: valid answers, `answer` may edit them.
fn reviewer<A: FnMut(&PreparedCall, Value) -> Value>(
    p: &ReviewProfile,
    mut answer: A,
) -> Scripted<impl FnMut(&PreparedCall) -> (Observation, Vec<u8>) + use<A>> {
    let p = p.clone();
    scripted(move |c| {
        let env = envelope(c, answer(c, good_answer(c)));
        (obs(&p, &env), env)
    })
}

fn review_of<'a>(s: &'a dyn Snapshot, p: &'a ReviewProfile, r: &'a ReviewRequest) -> Review<'a> {
    Review {
        snapshot: s,
        profile: p,
        request: r,
    }
}

fn passing() -> (MemorySnapshot, ReviewProfile, ReviewRequest, ReviewRecord) {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let mut t = reviewer(&p, |_, a| a);
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    (s, p, r, rec)
}

#[test]
fn a_clean_review_passes_with_complete_coverage_and_replays() {
    let (s, p, r, rec) = passing();
    assert_eq!(rec.outcome, ReviewOutcome::Passed, "{rec:#?}");
    assert_eq!(rec.failure, None);
    assert_eq!(
        rec.calls.len(),
        2,
        "src/a.rs fills one call, src/b.rs the next"
    );
    assert!(rec.calls.iter().all(|c| c.status == CallStatus::Answered));
    assert_eq!(
        (
            rec.coverage.selected,
            rec.coverage.reviewed,
            rec.coverage.complete
        ),
        (2, 2, true)
    );
    assert!(rec.criteria.iter().all(|c| c.verdict == Verdict::Passed));
    assert_eq!(rec.budget.calls_planned, 2);
    assert_eq!(rec.budget.wall_ms, 2000);
    assert_eq!(rec.budget.input_tokens, 200);
    assert_eq!(rec.calls[0].models, vec!["claude-sonnet-4-6".to_string()]);
    validate_replay(&s, &p, &r, &rec).expect("replays");
    // The plan-time bound on the trace holds for the trace retained.
    let planned = plan::derive(&s, &p).expect("plan");
    let bound = plan::trace_bytes_bound(&p, &planned.calls).expect("bound");
    let actual = serde_json::to_vec(&rec.trace).expect("trace").len() as u64;
    assert!(actual <= bound, "{actual} > {bound}");
    // Deterministic: the same inputs give the same bytes.
    let (_, _, _, again) = passing();
    assert_eq!(again.bytes().expect("b"), rec.bytes().expect("b"));
}

#[test]
fn a_blocking_finding_fails_the_criterion_with_path_and_line() {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let mut t = reviewer(&p, |c, mut a| {
        if c.reservation.request.parts[0].path == "src/b.rs" {
            a["criteria"][0] = json!({"id": "no-secrets", "outcome": "failed", "findings": [
                {"severity": "blocking", "path": "src/b.rs", "line": 1, "message": "a key is committed"}]});
            a["criteria"][1]["findings"] = json!([{"severity": "advisory", "message": "rename b"}]);
        }
        a
    });
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(rec.outcome, ReviewOutcome::Failed);
    assert_eq!(rec.failure, Some(ReviewFailure::ReviewCriteriaFailed));
    assert_eq!(rec.criteria[0].verdict, Verdict::Failed);
    assert_eq!(rec.criteria[1].verdict, Verdict::Passed);
    assert_eq!(rec.findings_total, 2);
    let f = &rec.findings[0];
    assert_eq!(
        (f.path.as_deref(), f.line, f.severity),
        (Some("src/b.rs"), Some(1), Severity::Blocking)
    );
    assert!(
        rec.coverage.complete,
        "a failed criterion is still a complete review"
    );
    validate_replay(&s, &p, &r, &rec).expect("a failed record replays too");
}

#[test]
fn a_large_file_is_covered_in_chunks() {
    let p = profile();
    let r = request(&p);
    let big: String = (1..=300).map(|i| format!("line {i:04}\n")).collect(); // 3000 bytes
    let s = MemorySnapshot::new(vec![("src/big.rs".into(), big.into_bytes())]);
    let mut t = reviewer(&p, |_, a| a);
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(rec.outcome, ReviewOutcome::Passed, "{rec:#?}");
    assert_eq!(rec.calls.len(), 3);
    let parts: Vec<_> = rec
        .trace
        .iter()
        .map(|e| &e.reservation.request.parts[0])
        .collect();
    assert_eq!(
        parts
            .iter()
            .map(|p| (p.part, p.parts, p.first_line, p.last_line))
            .collect::<Vec<_>>(),
        vec![(1, 3, 1, 102), (2, 3, 103, 204), (3, 3, 205, 300)]
    );
    assert!(parts.iter().all(|p| p.length <= 1024));
    validate_replay(&s, &p, &r, &rec).expect("replays");
}

#[test]
fn failures_known_before_any_call_make_no_call() {
    let p = profile();
    let r = request(&p);
    let cases: Vec<(MemorySnapshot, ReviewFailure)> = vec![
        (
            MemorySnapshot::new(vec![("docs/x.md".into(), b"x".to_vec())]),
            ReviewFailure::ReviewNothingSelected,
        ),
        (
            MemorySnapshot::new(vec![("src/logo.png".into(), vec![0x89, b'P', 0, 0xff])]),
            ReviewFailure::ReviewCoverageIncomplete,
        ),
        (
            MemorySnapshot::new(vec![("src/huge.rs".into(), vec![b'a'; 9 * 1024])]),
            ReviewFailure::ReviewBudgetExceeded,
        ),
        (
            // Nine files of 600 bytes: nine calls, over max_calls = 8, though
            // the bytes alone (5400) would fit six.
            MemorySnapshot::new(
                (0..9)
                    .map(|i| (format!("src/f{i}.rs"), vec![b'a'; 600]))
                    .collect(),
            ),
            ReviewFailure::ReviewBudgetExceeded,
        ),
    ];
    for (s, want) in cases {
        let mut t = reviewer(&p, |_, a| a);
        let rec = run(
            &review_of(&s, &p, &r),
            &mut MemoryJournal::default(),
            &mut t,
        )
        .expect("run");
        assert_eq!(rec.failure, Some(want), "{rec:#?}");
        assert_eq!(rec.outcome, ReviewOutcome::Failed);
        assert_eq!(t.calls, 0, "no call for {want:?}");
        assert!(rec.detail.is_some());
        validate_replay(&s, &p, &r, &rec).expect("replays");
    }
}

#[test]
fn a_plan_whose_record_could_not_fit_its_transfer_makes_no_call() {
    // 256 calls at a 32 KiB output budget (the profile allows it: 8 MiB of
    // envelopes) could retain about 15 MB of trace once the envelopes are
    // base64url and the observations added: over the 14 MiB bound.
    let p = profile_with(
        Basis::Fixture,
        ReviewBudgets {
            max_calls: 256,
            max_source_bytes_per_call: 1024,
            max_output_bytes_per_call: 32 * 1024,
            max_total_wall_ms: 60_000,
        },
        &["src/**"],
    );
    let r = request(&p);
    let s = MemorySnapshot::new(
        (0..256)
            .map(|i| {
                (
                    format!("src/f{i:03}.rs"),
                    [vec![b'a'; 999], b"\n".to_vec()].concat(),
                )
            })
            .collect(),
    );
    let planned = plan::derive(&s, &p).expect("plan");
    assert_eq!(planned.calls.len(), 0);
    let bound = plan::trace_bytes_bound(
        &p,
        &(0..256)
            .map(|_| Vec::new())
            .collect::<Vec<Vec<plan::ExposedPart>>>(),
    )
    .expect("bound");
    assert!(bound > plan::MAX_TRACE_BYTES, "{bound}");
    let mut t = reviewer(&p, |_, a| a);
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(rec.failure, Some(ReviewFailure::ReviewBudgetExceeded));
    assert_eq!(t.calls, 0);
    assert!(
        rec.detail
            .as_deref()
            .is_some_and(|d| d.contains("transfer")),
        "{:?}",
        rec.detail
    );
    validate_replay(&s, &p, &r, &rec).expect("replays");
}

#[test]
fn calls_are_packed_so_the_answer_can_confirm_every_file() {
    // 40 one-line files with 201-byte paths: their source would fit one
    // call, but the quoted paths of a call are kept within an eighth of the
    // 16 KiB output budget (2048 bytes): 10 paths of 204 bytes fit, 11 not.
    let p = profile_with(
        Basis::Fixture,
        ReviewBudgets {
            max_calls: 16,
            max_source_bytes_per_call: 64 * 1024,
            max_output_bytes_per_call: 16 * 1024,
            max_total_wall_ms: 60_000,
        },
        &["src/**"],
    );
    let dir = format!("src/{}/", "d".repeat(190));
    let s = MemorySnapshot::new(
        (0..40)
            .map(|i| (format!("{dir}f{i:02}.rs"), b"fn f() {}\n".to_vec()))
            .collect(),
    );
    let planned = plan::derive(&s, &p).expect("plan");
    assert_eq!(planned.early, None);
    for c in &planned.calls {
        let listed: usize = c
            .iter()
            .map(|x| serde_json::to_string(&x.path).expect("q").len() + 1)
            .sum();
        assert!(
            listed as u64 <= 16 * 1024 / plan::LISTED_PATHS_SHARE,
            "{listed}"
        );
    }
    assert_eq!(planned.calls.len(), 4, "10 paths per call, 40 files");
    let r = request(&p);
    let mut t = reviewer(&p, |_, a| a);
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(rec.outcome, ReviewOutcome::Passed, "{rec:#?}");
    validate_replay(&s, &p, &r, &rec).expect("replays");
}

/// Runs a review whose first call gets `(observation edit, envelope)`.
fn first_call(
    edit: impl Fn(&ReviewProfile, &PreparedCall, &mut Observation) -> Vec<u8>,
) -> (ReviewRecord, u32) {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let pc = p.clone();
    let mut t = scripted(move |c| {
        let mut o = obs(&pc, b"");
        let env = edit(&pc, c, &mut o);
        o.envelope_bytes = env.len() as u64;
        o.envelope_sha256 = Sha256Hex::digest(&env);
        (o, env)
    });
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    validate_replay(&s, &p, &r, &rec).expect("every failed record replays");
    (rec, t.calls)
}

#[test]
fn a_failing_call_fails_the_review_without_retry_or_fallback() {
    type Case = (
        &'static str,
        ReviewFailure,
        fn(&ReviewProfile, &PreparedCall, &mut Observation) -> Vec<u8>,
    );
    let cases: Vec<Case> = vec![
        (
            "malformed answer",
            ReviewFailure::ReviewAnswerMalformed,
            |_, c, _| envelope(c, json!({"criteria": []})),
        ),
        (
            "no structured output",
            ReviewFailure::ReviewAnswerMalformed,
            |_, c, _| {
                let mut v: Value = serde_json::from_slice(&envelope(c, good_answer(c))).expect("j");
                v.as_object_mut().expect("o").remove("structured_output");
                serde_json::to_vec(&v).expect("j")
            },
        ),
        (
            "not json",
            ReviewFailure::ReviewAnswerMalformed,
            |_, _, _| b"hello".to_vec(),
        ),
        (
            "error result",
            ReviewFailure::ReviewErrorResult,
            |_, c, o| {
                o.exit_code = Some(1);
                let mut v: Value = serde_json::from_slice(&envelope(c, good_answer(c))).expect("j");
                v["is_error"] = json!(true);
                v["result"] = json!("Not logged in · Please run /login");
                serde_json::to_vec(&v).expect("j")
            },
        ),
        (
            "error subtype",
            ReviewFailure::ReviewErrorResult,
            |_, c, _| {
                let mut v: Value = serde_json::from_slice(&envelope(c, good_answer(c))).expect("j");
                v["subtype"] = json!("error_max_structured_output_retries");
                v["errors"] = json!(["schema"]);
                serde_json::to_vec(&v).expect("j")
            },
        ),
        (
            "exit failure",
            ReviewFailure::ReviewCallFailed,
            |_, _, o| {
                o.exit_code = Some(1);
                b"Error: Input must be provided".to_vec()
            },
        ),
        ("timeout", ReviewFailure::ReviewCallTimedOut, |_, _, o| {
            o.timed_out = true;
            o.exit_code = None;
            o.signal = Some(9);
            Vec::new()
        }),
        (
            "output over budget",
            ReviewFailure::ReviewOutputExceeded,
            |_, _, o| {
                o.stdout_capped = true;
                vec![b'x'; 100]
            },
        ),
        ("not started", ReviewFailure::ReviewCallFailed, |_, _, o| {
            o.dispatched = false;
            o.spawn_error = Some("cannot start".into());
            o.executable_after = vec![];
            Vec::new()
        }),
        (
            "executable swapped during the call",
            ReviewFailure::ReviewExecutableMismatch,
            |_, c, o| {
                o.executable_after[1] = Some(Sha256Hex::digest(b"other cli.js"));
                envelope(c, good_answer(c))
            },
        ),
        (
            "executable swapped before the call",
            ReviewFailure::ReviewExecutableMismatch,
            |_, _, o| {
                o.dispatched = false;
                o.executable_before[0] = None;
                o.executable_after = vec![];
                Vec::new()
            },
        ),
        (
            "another model answered",
            ReviewFailure::ReviewModelMismatch,
            |_, c, _| {
                let mut v: Value = serde_json::from_slice(&envelope(c, good_answer(c))).expect("j");
                v["modelUsage"] = json!({"claude-haiku-4-5": {}});
                serde_json::to_vec(&v).expect("j")
            },
        ),
        (
            "envelope of another call",
            ReviewFailure::ReviewAnswerMalformed,
            |_, c, _| {
                let mut v: Value = serde_json::from_slice(&envelope(c, good_answer(c))).expect("j");
                v["session_id"] = json!("11111111-1111-4111-8111-111111111111");
                serde_json::to_vec(&v).expect("j")
            },
        ),
        (
            "answer claims coverage it did not get",
            ReviewFailure::ReviewAnswerMalformed,
            |_, c, _| {
                let mut a = good_answer(c);
                a["reviewed"]
                    .as_array_mut()
                    .expect("a")
                    .push(json!("src/b.rs"));
                envelope(c, a)
            },
        ),
    ];
    for (name, want, edit) in cases {
        let (rec, calls) = first_call(edit);
        assert_eq!(rec.failure, Some(want), "{name}: {rec:#?}");
        assert_eq!(rec.outcome, ReviewOutcome::Failed, "{name}");
        assert_eq!(calls, 1, "{name}: no retry, no further call");
        assert_eq!(rec.calls.len(), 1, "{name}");
        assert!(
            rec.detail
                .as_deref()
                .is_some_and(|d| d.starts_with("call 0: ")),
            "{name}: {:?}",
            rec.detail
        );
        assert_eq!(rec.criteria[0].verdict, Verdict::NotReviewed, "{name}");
        assert!(!rec.coverage.complete, "{name}");
    }
}

#[test]
fn the_wall_budget_bounds_the_calls() {
    let (s, p) = (
        snapshot(),
        profile_with(
            Basis::Fixture,
            ReviewBudgets {
                max_total_wall_ms: 1500,
                ..budgets()
            },
            &["src/**", "!src/gen/**"],
        ),
    );
    let r = request(&p);
    let pc = p.clone();
    let mut timeouts = Vec::new();
    let mut t = scripted(|c| {
        timeouts.push(c.reservation.request.timeout_ms);
        let env = envelope(c, good_answer(c));
        (obs(&pc, &env), env)
    });
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(timeouts, vec![1500, 500], "each call gets what is left");
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewBudgetExceeded),
        "{rec:#?}"
    );
    validate_replay(&s, &p, &r, &rec).expect("replays");
    // With a single call left over nothing: the plan's second call is not made.
    let p2 = profile_with(
        Basis::Fixture,
        ReviewBudgets {
            max_total_wall_ms: 1000,
            ..budgets()
        },
        &["src/**", "!src/gen/**"],
    );
    let r2 = request(&p2);
    let pc2 = p2.clone();
    let mut t2 = scripted(move |c| {
        let env = envelope(c, good_answer(c));
        (obs(&pc2, &env), env)
    });
    let rec2 = run(
        &review_of(&s, &p2, &r2),
        &mut MemoryJournal::default(),
        &mut t2,
    )
    .expect("run");
    assert_eq!(t2.calls, 1);
    assert_eq!(rec2.failure, Some(ReviewFailure::ReviewBudgetExceeded));
    assert_eq!(rec2.budget.calls_reserved, 1);
    validate_replay(&s, &p2, &r2, &rec2).expect("replays");
}

/// A transport that reserves fine and then "crashes" (errors) in the call:
/// the journal holds the reservation and no outcome.
struct Crashing;
impl Transport for Crashing {
    fn basis(&self) -> Basis {
        Basis::Fixture
    }
    fn call(&mut self, _: &PreparedCall) -> Result<Dispatch> {
        Err(crate::error::Error::internal("SIGKILL stand-in"))
    }
}

#[test]
fn a_reserved_call_with_unknown_outcome_is_never_called_again() {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let t = tempfile::tempdir().expect("tmp");
    let key = || StateKey::derive(&[9u8; 32]).expect("key");
    // Call 0 completes; call 1 is reserved and the collector dies in it.
    let mut j = FileJournal::open(&t.path().join("journal"), "exec", key()).expect("open");
    let mut first = reviewer(&p, |_, a| a);
    // Run call 0 through a counting transport, then crash on call 1.
    struct Then<'a, A: Transport, B: Transport>(&'a mut A, &'a mut B, u32);
    impl<A: Transport, B: Transport> Transport for Then<'_, A, B> {
        fn basis(&self) -> Basis {
            Basis::Fixture
        }
        fn call(&mut self, c: &PreparedCall) -> Result<Dispatch> {
            self.2 += 1;
            if self.2 == 1 {
                self.0.call(c)
            } else {
                self.1.call(c)
            }
        }
    }
    let err = run(
        &review_of(&s, &p, &r),
        &mut j,
        &mut Then(&mut first, &mut Crashing, 0),
    )
    .expect_err("crashed");
    assert_eq!(err.code(), Code::Internal);
    assert!(j.reservation(1).expect("r").is_some());
    assert!(j.outcome(1).expect("o").is_none());
    // Rerun (a new process): resumes, never re-dispatches call 0 or call 1.
    let mut j2 = FileJournal::open(&t.path().join("journal"), "exec", key()).expect("reopen");
    let mut never = scripted(|_| panic!("no call may be dispatched on resume"));
    let rec = run(&review_of(&s, &p, &r), &mut j2, &mut never).expect("resume");
    assert_eq!(never.calls, 0);
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewCallUncertain),
        "{rec:#?}"
    );
    assert_eq!(rec.outcome, ReviewOutcome::Failed);
    assert_eq!(rec.calls[1].status, CallStatus::Uncertain);
    assert!(rec.trace[1].outcome.is_none());
    let again = run(&review_of(&s, &p, &r), &mut j2, &mut never).expect("again");
    assert_eq!(
        again.bytes().expect("b"),
        rec.bytes().expect("b"),
        "rerunning gives the same record"
    );
    validate_replay(&s, &p, &r, &rec).expect("the uncertain record replays");
}

#[test]
fn rerunning_a_finished_review_reuses_every_retained_outcome() {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let t = tempfile::tempdir().expect("tmp");
    let key = || StateKey::derive(&[9u8; 32]).expect("key");
    let mut j = FileJournal::open(&t.path().join("j"), "exec", key()).expect("open");
    let mut honest = reviewer(&p, |_, a| a);
    let rec = run(&review_of(&s, &p, &r), &mut j, &mut honest).expect("run");
    assert_eq!(honest.calls, 2);
    let mut never = scripted(|_| panic!("no call may be dispatched"));
    let mut j2 = FileJournal::open(&t.path().join("j"), "exec", key()).expect("reopen");
    let again = run(&review_of(&s, &p, &r), &mut j2, &mut never).expect("rerun");
    assert_eq!(again.bytes().expect("b"), rec.bytes().expect("b"));
    // A journal whose reservation is for another request is refused.
    let other = request(&profile_with(Basis::Fixture, budgets(), &["src/**"]));
    let p_other = profile_with(Basis::Fixture, budgets(), &["src/**"]);
    let e = run(&review_of(&s, &p_other, &other), &mut j2, &mut never).expect_err("refused");
    assert_eq!(e.code(), Code::CollectorStateTampered);
}

/// A snapshot whose bytes change after `after` reads (a write into a
/// materialised snapshot during the review).
struct Changing {
    inner: MemorySnapshot,
    reads: Cell<u32>,
    after: u32,
}
impl Snapshot for Changing {
    fn entries(&self) -> Result<Vec<SnapshotEntry>> {
        self.inner.entries()
    }
    fn read(&self, e: &SnapshotEntry) -> Result<Vec<u8>> {
        self.reads.set(self.reads.get() + 1);
        let mut b = self.inner.read(e)?;
        if self.reads.get() > self.after {
            b.extend_from_slice(b"// injected\n");
        }
        Ok(b)
    }
}

#[test]
fn a_snapshot_that_changes_exposes_nothing_more() {
    let p = profile();
    let r = request(&p);
    // Plan reads 2, call 0 reads 1: the change hits call 1's read.
    let s = Changing {
        inner: snapshot(),
        reads: Cell::new(0),
        after: 3,
    };
    let mut t = reviewer(&p, |_, a| a);
    let mut j = MemoryJournal::default();
    let e = run(&review_of(&s, &p, &r), &mut j, &mut t).expect_err("refused");
    assert_eq!(e.code(), Code::IntegrityError);
    assert_eq!(t.calls, 1);
    assert!(
        j.reservation(1).expect("r").is_none(),
        "nothing reserved from changed bytes"
    );
}

#[test]
fn basis_and_request_must_be_the_profiles() {
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let cli = profile_with(Basis::ClaudeCodeCli, budgets(), &["src/**"]);
    let mut t = reviewer(&p, |_, a| a);
    // A fixture transport cannot serve a claude_code_cli profile.
    let e = run(
        &review_of(&s, &cli, &request(&cli)),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect_err("basis");
    assert_eq!(e.code(), Code::ProfileInvalid);
    // A request for another profile is refused.
    let e = run(
        &review_of(&s, &cli, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect_err("request");
    assert_eq!(e.code(), Code::ProfileInvalid);
    // A profile edited after it was named is refused.
    let mut edited = p.clone();
    edited.model = "claude-haiku-4-5".into();
    assert_eq!(
        edited.validate().expect_err("id").code(),
        Code::ProfileInvalid
    );
    let mut edited = p.clone();
    edited.budgets.max_calls = 256;
    assert_eq!(
        edited.validate().expect_err("id").code(),
        Code::ProfileInvalid
    );
    assert_eq!(t.calls, 0);
}

#[test]
fn the_fixture_transport_observes_the_executable_between_calls() {
    let dir = tempfile::tempdir().expect("tmp");
    let exe = dir.path().join("reviewer");
    std::fs::write(&exe, b"#!/bin/sh\n").expect("w");
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut p = profile();
    p.executable = transport::pin_executable(&exe, None).expect("pin");
    let p = ReviewProfile::new(ProfileParts {
        repository: p.repository,
        profile: p.profile,
        step_id: p.step_id,
        registration: p.registration,
        requirement_digest: p.requirement_digest,
        criteria: p.criteria,
        step: ReviewStep {
            coverage: p.coverage,
            budgets: p.budgets,
        },
        basis: Basis::Fixture,
        executable: p.executable,
        provider: p.provider,
        model: p.model,
        env: p.env,
    })
    .expect("profile");
    let r = request(&p);
    let s = snapshot();
    let exe2 = exe.clone();
    let mut t = FixtureTransport::new(&p, move |c| {
        if c.reservation.request.index == 0 {
            // The executable is replaced during the first call.
            std::fs::write(&exe2, b"#!/bin/sh\necho swapped\n").expect("swap");
        }
        (0, envelope(c, good_answer(c)))
    });
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(t.dispatched, 1);
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewExecutableMismatch),
        "{rec:#?}"
    );
    validate_replay(&s, &p, &r, &rec).expect("replays");
}

// ---- tamper suite: each edit of a passing record is refused by replay ----

fn refused(
    s: &MemorySnapshot,
    p: &ReviewProfile,
    r: &ReviewRequest,
    rec: &ReviewRecord,
    what: &str,
) {
    let e = validate_replay(s, p, r, rec).expect_err(what);
    assert_eq!(e.code(), Code::ReviewReplayMismatch, "{what}: {e}");
}

/// Replaces call `i`'s envelope, keeping the observation consistent.
fn reenvelope(rec: &mut ReviewRecord, i: usize, f: impl FnOnce(Value) -> Value) {
    let o = rec.trace[i].outcome.as_mut().expect("outcome");
    let v: Value = serde_json::from_slice(&o.envelope_bytes().expect("b")).expect("j");
    let b = serde_json::to_vec(&f(v)).expect("j");
    o.observation.envelope_bytes = b.len() as u64;
    o.observation.envelope_sha256 = Sha256Hex::digest(&b);
    o.envelope = data_encoding::BASE64URL_NOPAD.encode(&b);
}

#[test]
fn tampered_records_are_refused_by_replay() {
    let (s, p, r, rec) = passing();
    let mut t;

    t = rec.clone();
    let o = t.trace[0].outcome.as_mut().expect("o");
    let mut b = o.envelope_bytes().expect("b");
    b[10] ^= 1;
    o.envelope = data_encoding::BASE64URL_NOPAD.encode(&b);
    refused(&s, &p, &r, &t, "an edited envelope");

    t = rec.clone();
    reenvelope(&mut t, 1, |mut v| {
        v["structured_output"]["criteria"][0]["outcome"] = json!("failed");
        v
    });
    refused(
        &s,
        &p,
        &r,
        &t,
        "an edited envelope with a consistent observation",
    );

    t = rec.clone();
    t.trace.remove(1);
    refused(&s, &p, &r, &t, "a dropped call");

    t = rec.clone();
    t.trace.remove(1);
    t.calls.remove(1);
    refused(&s, &p, &r, &t, "a dropped call with its summary");

    t = rec.clone();
    t.trace.swap(0, 1);
    refused(&s, &p, &r, &t, "reordered calls");

    t = rec.clone();
    let extra = t.trace[1].clone();
    t.trace.push(extra);
    refused(&s, &p, &r, &t, "an added call");

    t = rec.clone();
    t.findings.push(Finding {
        call: 0,
        criterion: "style".into(),
        severity: Severity::Advisory,
        path: None,
        line: None,
        message: "planted".into(),
    });
    t.findings_total = 1;
    refused(&s, &p, &r, &t, "a changed finding");

    t = rec.clone();
    reenvelope(&mut t, 0, |mut v| {
        v["structured_output"]["reviewed"]
            .as_array_mut()
            .expect("a")
            .push(json!("src/gen/x.rs"));
        v
    });
    refused(&s, &p, &r, &t, "an answer claiming coverage it did not get");

    t = rec.clone();
    t.coverage.selected = 3;
    t.coverage.reviewed = 3;
    refused(&s, &p, &r, &t, "a coverage claim");

    t = rec.clone();
    t.trace[1]
        .outcome
        .as_mut()
        .expect("o")
        .observation
        .executable_before[0] = Some(Sha256Hex::digest(b"another node"));
    refused(
        &s,
        &p,
        &r,
        &t,
        "a swapped executable (digest changes between calls)",
    );

    t = rec.clone();
    t.trace[1]
        .outcome
        .as_mut()
        .expect("o")
        .observation
        .duration_ms = 59_500;
    refused(&s, &p, &r, &t, "a budget exceeded");

    t = rec.clone();
    reenvelope(&mut t, 0, |mut v| {
        v["structured_output"] = json!({"criteria": "all good"});
        v
    });
    refused(&s, &p, &r, &t, "a malformed answer");

    t = rec.clone();
    t.trace[0].reservation.request.prompt_sha256 = Sha256Hex::digest(b"another prompt");
    refused(&s, &p, &r, &t, "an edited reservation");

    t = rec.clone();
    t.trace[0].reservation.request.ticket = "rt_00000000000000000000000000000000".into();
    refused(&s, &p, &r, &t, "another ticket");

    t = rec.clone();
    t.outcome = ReviewOutcome::Failed;
    refused(&s, &p, &r, &t, "a changed outcome");

    // Another subject or another snapshot: the same record does not replay.
    let mut other = r.clone();
    other.subject.fence = 2;
    refused(&s, &p, &other, &rec, "another request");
    let mut s2 = s.clone();
    s2.insert("src/c.rs".into(), EntryKind::File, b"fn c() {}\n".to_vec());
    refused(&s2, &p, &r, &rec, "a snapshot with another file");
    let mut s3 = s.clone();
    s3.insert(
        "src/b.rs".into(),
        EntryKind::File,
        b"fn b() { leak() }\n".to_vec(),
    );
    refused(&s3, &p, &r, &rec, "a snapshot with other bytes");
}

#[test]
fn an_honest_failed_record_is_not_turned_into_a_pass() {
    // A genuinely failed review, edited to claim success in every summary
    // member, is still refused: the outcome is re-derived from the trace.
    let (s, p) = (snapshot(), profile());
    let r = request(&p);
    let mut t = reviewer(&p, |c, mut a| {
        if c.reservation.request.index == 1 {
            a["criteria"][0]["outcome"] = json!("failed");
        }
        a
    });
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    assert_eq!(rec.failure, Some(ReviewFailure::ReviewCriteriaFailed));
    let mut forged = rec.clone();
    forged.outcome = ReviewOutcome::Passed;
    forged.failure = None;
    forged.detail = None;
    forged.criteria[0].verdict = Verdict::Passed;
    refused(&s, &p, &r, &forged, "a failed review forged as passed");
}

// ---- golden vectors ----

/// The fixed inputs of the vectors: a claude_code_cli profile with fixed
/// pins, and a record produced by a scripted honest reviewer.
fn vector_inputs() -> (ReviewStep, ReviewProfile, ReviewRequest, MemorySnapshot) {
    let step = ReviewStep {
        coverage: vec!["src/**".into(), "!src/gen/**".into()],
        budgets: budgets(),
    };
    let p = profile_with(Basis::ClaudeCodeCli, budgets(), &["src/**", "!src/gen/**"]);
    let r = request(&p);
    (step, p, r, snapshot())
}

struct CliScripted<T: Transport>(T);
impl<T: Transport> Transport for CliScripted<T> {
    fn basis(&self) -> Basis {
        Basis::ClaudeCodeCli
    }
    fn call(&mut self, c: &PreparedCall) -> Result<Dispatch> {
        self.0.call(c)
    }
}

#[test]
fn golden_vectors() {
    let (step, p, r, s) = vector_inputs();
    let mut t = CliScripted(reviewer(&p, |_, a| a));
    let rec = run(
        &review_of(&s, &p, &r),
        &mut MemoryJournal::default(),
        &mut t,
    )
    .expect("run");
    let (req0, prompt0) = {
        let plan = plan::derive(&s, &p).expect("plan");
        plan::prepare(&s, &p, &r, &plan, 0, 60_000).expect("prepare")
    };
    let entry = |name: &str, bytes: Vec<u8>, digest: Sha256Hex| json!({"name": name, "canonical": String::from_utf8(bytes).expect("utf8"), "digest": digest.as_str()});
    let got = json!({
        "comment": "canonical bytes and domain-separated digests of the review types (docs/review.md); \
                    regenerate with UPDATE_FIXTURES=1 cargo test --lib review::tests::golden_vectors",
        "policy_digest": plan::policy_digest().as_str(),
        "vectors": [
            entry("review_step", step.canonical_bytes().expect("b"), step.digest().expect("d")),
            entry("review_profile", crate::contract::canonical_bytes(&p).expect("b"), p.digest().expect("d")),
            entry("review_request", r.bytes().expect("b"), r.digest().expect("d")),
            entry("call_request_0", crate::contract::canonical_bytes(&req0).expect("b"), req0.digest().expect("d")),
            entry("review_record", rec.bytes().expect("b"), rec.digest().expect("d")),
        ]
    });
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/review");
    let files = [
        (
            "vectors.json",
            format!("{}\n", serde_json::to_string_pretty(&got).expect("j")),
        ),
        ("prompt-0.txt", String::from_utf8(prompt0).expect("utf8")),
        (
            "answer-schema.json",
            format!("{}\n", plan::answer_schema(&p.criteria).expect("schema")),
        ),
    ];
    for (name, want) in files {
        let path = format!("{dir}/{name}");
        if crate::env::var_os("UPDATE_FIXTURES").is_some() {
            std::fs::create_dir_all(dir).expect("mkdir");
            std::fs::write(&path, &want).expect("write");
        }
        let have = std::fs::read_to_string(&path).expect(name);
        assert!(
            have == want,
            "fixtures/review/{name} is stale: UPDATE_FIXTURES=1 cargo test --lib golden_vectors"
        );
    }
    validate_replay(&s, &p, &r, &rec).expect("the vector record replays");
    assert_eq!(rec.outcome, ReviewOutcome::Passed);
}

#[test]
fn a_fixture_profile_cannot_be_built_for_a_release() {
    // This test build allows it; the same check with test_build = false refuses.
    let p = profile();
    assert_eq!(p.basis, Basis::Fixture);
    assert_eq!(
        check_basis_for(p.basis, false).expect_err("release").code(),
        Code::ProfileInvalid
    );
}

/// What install, import and landing call on a stored profile: a release
/// build (`test_build = false`) refuses a fixture-basis profile whatever
/// else is right about it; a Claude Code profile passes in both.
#[test]
fn a_stored_fixture_profile_is_refused_by_a_release_build() {
    let p = profile();
    assert_eq!(p.basis, Basis::Fixture);
    p.validate_for(true).expect("a test build accepts it");
    let e = p
        .validate_for(false)
        .expect_err("a release build refuses it");
    assert_eq!(e.code(), Code::ProfileInvalid);
    assert_eq!(e.details().expect("details")["basis"], "fixture");
    let c = profile_with(Basis::ClaudeCodeCli, budgets(), &["src/**"]);
    c.validate_for(false)
        .expect("claude_code_cli in a release build");
}
