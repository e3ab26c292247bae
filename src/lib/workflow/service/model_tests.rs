//! Model-based property test of the journal state machine: random
//! sequences of claim, heartbeat, result, cancel, reconcile, clock
//! advances (expiry), identical and changed retries, new checkpoints and
//! policy acts run against the real library (real SQLite, real lock) and
//! are checked step by step against a reference model of
//! `docs/state-machine.md`, whose table is parsed and compared with the
//! model's.

use crate::clock::Clock;
use crate::contract::*;
use crate::error::Result;
use crate::store::Deferred;
use crate::workflow::authority::admin;
use crate::workflow::authority::change::ChangeSel;
use crate::workflow::service::admin as write;
use crate::workflow::service::facade::StatusRequest;
use crate::workflow::service::ops::{self, AgentCtx};
use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

const OPS: [&str; 5] = ["claim", "heartbeat", "result", "cancel", "reconcile"];

/// The model's transition table (must equal the documented one).
fn table(state: &str, op: &str) -> &'static str {
    match (state, op) {
        ("pending", "claim") => "leased",
        ("pending", _) => "not_found",
        ("leased", "claim") => "task_not_claimable",
        ("leased", "heartbeat") => "leased",
        ("leased", "result") => "finished",
        ("leased", "cancel") => "cancelled",
        ("leased", "reconcile") => "replaced",
        ("expired", "claim") => "task_not_claimable",
        ("expired", "heartbeat" | "result") => "lease_expired",
        ("expired", "cancel") => "cancelled",
        ("expired", "reconcile") => "replaced",
        ("finished", "claim") => "task_not_claimable",
        ("finished", _) => "attempt_closed",
        ("cancelled", "claim") => "task_not_claimable",
        ("cancelled", "reconcile") => "replaced",
        ("cancelled", _) => "attempt_closed",
        ("replaced", "claim") => "leased",
        ("replaced", _) => "stale_fence",
        _ => "unknown",
    }
}

#[test]
fn documented_table_equals_the_model() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/state-machine.md"
    ))
    .expect("doc");
    let mut rows = 0;
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| state | claim |") {
            let cols: Vec<&str> = line
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(&cols[1..], &OPS);
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cols: Vec<&str> = line
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cols.len(), 6, "{line}");
        for (op, cell) in OPS.iter().zip(&cols[1..]) {
            assert_eq!(table(cols[0], op), *cell, "state {} op {op}", cols[0]);
        }
        rows += 1;
    }
    assert_eq!(rows, 6, "every state has a row");
}

struct TestClock(AtomicI64);

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millisecond(self.0.load(Ordering::SeqCst)).unwrap_or(Timestamp::UNIX_EPOCH)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Claim {
        old: bool,
        req: u8,
        long: bool,
    },
    Mutate {
        kind: u8,
        which: u8,
        stale: bool,
        req: u8,
        long: bool,
    },
    Result {
        which: u8,
        stale: bool,
        req: u8,
        failed: bool,
    },
    Advance {
        ms: u16,
    },
    Checkpoint,
    PolicyAct,
    Revoke,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), 0u8..6, any::<bool>()).prop_map(|(old, req, long)| Op::Claim { old, req, long }),
        5 => (0u8..3, any::<u8>(), prop::bool::weighted(0.2), 0u8..6, any::<bool>())
            .prop_map(|(kind, which, stale, req, long)| Op::Mutate { kind, which, stale, req, long }),
        3 => (any::<u8>(), prop::bool::weighted(0.2), 0u8..6, any::<bool>())
            .prop_map(|(which, stale, req, failed)| Op::Result { which, stale, req, failed }),
        2 => (0u16..4000).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::PolicyAct),
        1 => Just(Op::Revoke),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum St {
    Leased,
    Finished,
    Cancelled,
    Replaced,
}

struct MAttempt {
    id: String,
    subject: usize,
    fence: u64,
    lease_ms: u64,
    expires: i64,
    state: St,
    claim: Value,
}

struct MSubject {
    task_id: String,
    epoch: u64,
    last_fence: u64,
    current: Option<usize>,
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    workflow: PathBuf,
    token: String,
    token_file: PathBuf,
    tokens_issued: u32,
    change_id: String,
    clock: TestClock,
    subjects: Vec<MSubject>,
    attempts: Vec<MAttempt>,
    epoch: u64,
    idem: HashMap<String, (String, Value)>,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("data");
        let clock = TestClock(AtomicI64::new(1_900_000_000_000));
        let t = Duration::from_secs(5);
        crate::workflow::service::setup::init(&root, t, &clock, &[]).expect("init");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        write::repo_add(
            &root,
            t,
            &clock,
            &admin::RepoAddRequest {
                repo_id: "demo/basic".into(),
                source: manifest.join("fixtures/repos/basic"),
                target: "main".into(),
            },
        )
        .expect("repo");
        let workflow = manifest.join("fixtures/workflows/basic.json");
        write::requirement_install(&root, t, &clock, "demo/basic", "default", &workflow, false)
            .expect("req");
        let tf = tmp.path().join("tok");
        write::token_issue(&root, t, &clock, "alice", "a1", &tf).expect("token");
        let token = admin::read_token_file(&tf).expect("read");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        std::fs::write(ws.join("test.sh"), "true\n").expect("w");
        let staged = crate::workflow::authority::change::change_open(
            &token,
            "demo/basic",
            "default",
            &ws,
            None,
            None,
            None,
        )
        .expect("open");
        let ch = write::with_write(&root, t, &clock, staged).expect("open");
        let mut w = World {
            _tmp: tmp,
            root,
            workflow,
            token,
            token_file: tf,
            tokens_issued: 1,
            change_id: ch.change.change_id,
            clock,
            subjects: vec![],
            attempts: vec![],
            epoch: 2,
            idem: HashMap::new(),
        };
        w.checkpoint();
        w
    }

    fn cx(&self) -> AgentCtx<'_> {
        AgentCtx {
            root: &self.root,
            timeout: Duration::from_secs(5),
            clock: &self.clock,
            token: &self.token,
            writer: None,
            scope: None,
        }
    }

    fn now(&self) -> i64 {
        self.clock.0.load(Ordering::SeqCst)
    }

    fn checkpoint(&mut self) {
        let out = ops::checkpoint(
            &self.cx(),
            &ChangeSel::Id(self.change_id.clone()),
            crate::workflow::authority::snapshot::DEFAULT_MAX_REVISION_BYTES,
            // The model's checkpoint is the retry path: always a new subject.
            &crate::workflow::authority::checkpoint::CheckpointOptions {
                message: None,
                new_subject: true,
            },
        )
        .expect("checkpoint");
        let t = out
            .tasks
            .iter()
            .find(|t| t.step_id == "tests")
            .expect("tests task");
        self.subjects.push(MSubject {
            task_id: t.task_id.clone(),
            epoch: self.epoch,
            last_fence: 0,
            current: None,
        });
    }

    fn state_of(&self, a: &MAttempt) -> &'static str {
        match a.state {
            St::Leased if self.now() >= a.expires => "expired",
            St::Leased => "leased",
            St::Finished => "finished",
            St::Cancelled => "cancelled",
            St::Replaced => "replaced",
        }
    }

    fn task_state(&self, s: usize) -> &'static str {
        match self.subjects[s].current {
            None => "pending",
            Some(a) => match self.state_of(&self.attempts[a]) {
                "replaced" => "pending",
                x => x,
            },
        }
    }

    fn stale(&self, s: usize) -> bool {
        s + 1 != self.subjects.len() || self.subjects[s].epoch != self.epoch
    }

    /// Idempotency: Some(expected) when the request id is known.
    fn idem(&self, req: &str, key: &str) -> Option<std::result::Result<Value, String>> {
        self.idem.get(req).map(|(k, v)| {
            if k == key {
                Ok(v.clone())
            } else {
                Err("idempotency_conflict".into())
            }
        })
    }
}

fn code(r: &Result<Value>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.code().as_str().into(),
    }
}

fn step(w: &mut World, op: &Op) {
    match op {
        Op::Advance { ms } => {
            w.clock.0.fetch_add(i64::from(*ms), Ordering::SeqCst);
        }
        Op::Checkpoint => w.checkpoint(),
        Op::Revoke => {
            // Enrollment then its revocation (two policy acts: every
            // subject goes stale) and token revocation with a re-issue: the
            // old token is refused from then on.
            let t = Duration::from_secs(5);
            let e = write::enroll(
                &w.root,
                t,
                &w.clock,
                &admin::EnrollRequest {
                    repo_id: "demo/basic".into(),
                    profile: "default".into(),
                    step_id: "notes".into(),
                    executor_id: "ex".into(),
                    public_key: data_encoding::HEXLOWER
                        .encode(&crate::wire::ed25519::Keypair::from_seed(&[5u8; 32]).public_key()),
                },
            )
            .expect("enroll");
            write::enrollment_revoke(&w.root, t, &w.clock, &e.enrollment.registration_id)
                .expect("revoke");
            w.epoch += 2;
            write::token_revoke(&w.root, t, &w.clock, "alice", "a1").expect("token revoke");
            let old = w.token.clone();
            let refused = ops::status(
                &AgentCtx {
                    root: &w.root,
                    timeout: t,
                    clock: &w.clock,
                    token: &old,
                    writer: None,
                    scope: None,
                },
                &StatusRequest {
                    task_id: w.subjects[0].task_id.clone(),
                    attempt_id: "att_x".into(),
                },
            );
            assert_eq!(code(&refused), "unauthorized");
            w.tokens_issued += 1;
            let tf = w.token_file.with_extension(format!("{}", w.tokens_issued));
            write::token_issue(&w.root, t, &w.clock, "alice", "a1", &tf).expect("reissue");
            w.token = admin::read_token_file(&tf).expect("token");
        }
        Op::PolicyAct => {
            write::requirement_install(
                &w.root,
                Duration::from_secs(5),
                &w.clock,
                "demo/basic",
                "default",
                &w.workflow,
                true,
            )
            .expect("reinstall");
            w.epoch += 1;
        }
        Op::Claim { old, req, long } => {
            let s = if *old && w.subjects.len() > 1 {
                w.subjects.len() - 2
            } else {
                w.subjects.len() - 1
            };
            let lease: u64 = if *long { 5000 } else { 1000 };
            let req_id = format!("r{req}");
            let key = format!("claim|{}|{lease}", w.subjects[s].task_id);
            let real = ops::claim(
                &w.cx(),
                &crate::workflow::service::facade::ClaimRequest {
                    task_id: w.subjects[s].task_id.clone(),
                    request_id: req_id.clone(),
                    lease_ms: lease,
                    executor: None,
                },
            )
            .and_then(Deferred::wait);
            if let Some(exp) = w.idem(&req_id, &key) {
                match exp {
                    Ok(v) => assert_eq!(real.as_ref().ok(), Some(&v), "identical claim retry"),
                    Err(c) => assert_eq!(code(&real), c),
                }
                return;
            }
            let expected = if w.stale(s) {
                "subject_stale".to_owned()
            } else if w.task_state(s) != "pending" {
                "task_not_claimable".to_owned()
            } else if (0..s).any(|o| matches!(w.task_state(o), "leased" | "expired" | "cancelled"))
            {
                "prior_subject_unresolved".to_owned()
            } else {
                assert_eq!(table("pending", "claim"), "leased");
                "ok".to_owned()
            };
            assert_eq!(code(&real), expected, "claim on subject {s}");
            if let Ok(v) = real {
                let fence = v["attempt"]["fence"].as_u64().expect("fence");
                assert_eq!(
                    fence,
                    w.subjects[s].last_fence + 1,
                    "fences strictly increase"
                );
                let id = v["attempt"]["attempt_id"].as_str().expect("id").to_owned();
                w.attempts.push(MAttempt {
                    id,
                    subject: s,
                    fence,
                    lease_ms: lease,
                    expires: w.now() + lease as i64,
                    state: St::Leased,
                    claim: v.clone(),
                });
                w.subjects[s].last_fence = fence;
                w.subjects[s].current = Some(w.attempts.len() - 1);
                w.idem.insert(req_id, (key, v));
            }
        }
        Op::Mutate {
            kind,
            which,
            stale,
            req,
            long,
        } => {
            let action = [
                MutationAction::Heartbeat,
                MutationAction::Cancel,
                MutationAction::Reconcile,
            ][*kind as usize];
            let name = action.as_str();
            let req_id = format!("r{req}");
            let lease = if action == MutationAction::Heartbeat {
                Some(if *long { 5000 } else { 1000 })
            } else {
                None
            };
            if w.attempts.is_empty() {
                let m = crate::workflow::journal::MutationArgs {
                    action,
                    attempt_id: "att_missing".into(),
                    fence: 1,
                    request_id: req_id.clone(),
                    lease_ms: lease,
                    reason: None,
                };
                let real = ops::mutate(&w.cx(), &m).and_then(Deferred::wait);
                assert_eq!(code(&real), table("pending", name));
                return;
            }
            let ai = *which as usize % w.attempts.len();
            let a = &w.attempts[ai];
            let fence = if *stale { a.fence + 1 } else { a.fence };
            let key = format!("{name}|{}|{fence}|{lease:?}", a.id);
            let m = crate::workflow::journal::MutationArgs {
                action,
                attempt_id: a.id.clone(),
                fence,
                request_id: req_id.clone(),
                lease_ms: lease,
                reason: None,
            };
            let real = ops::mutate(&w.cx(), &m).and_then(Deferred::wait);
            if let Some(exp) = w.idem(&req_id, &key) {
                match exp {
                    Ok(v) => assert_eq!(real.as_ref().ok(), Some(&v), "identical {name} retry"),
                    Err(c) => assert_eq!(code(&real), c),
                }
                return;
            }
            let state = w.state_of(a);
            let cell = if fence != a.fence {
                "stale_fence"
            } else {
                table(state, name)
            };
            let expected = match cell {
                "leased" if w.stale(a.subject) => "subject_stale",
                c => c,
            };
            let ok = matches!(expected, "leased" | "cancelled" | "replaced");
            assert_eq!(
                code(&real),
                if ok { "ok" } else { expected },
                "{name} on {state} attempt (stale fence {stale})"
            );
            if let Ok(v) = real {
                let s = a.subject;
                match expected {
                    "leased" => {
                        let l = lease.unwrap_or(1000).min(a.lease_ms);
                        w.attempts[ai].expires = w.now() + l as i64;
                    }
                    "cancelled" => w.attempts[ai].state = St::Cancelled,
                    _ => {
                        w.attempts[ai].state = St::Replaced;
                        w.subjects[s].last_fence += 1;
                        assert_eq!(v["supersession"]["new_fence"], w.subjects[s].last_fence);
                    }
                }
                w.idem.insert(req_id, (key, v));
            }
        }
        Op::Result {
            which,
            stale,
            req,
            failed,
        } => {
            if w.attempts.is_empty() {
                return;
            }
            let ai = *which as usize % w.attempts.len();
            let a = &w.attempts[ai];
            let fence = if *stale { a.fence + 1 } else { a.fence };
            let req_id = format!("r{req}");
            let key = format!("result|{}|{fence}|{failed}", a.id);
            let at = &a.claim["attempt"];
            let outcome = if *failed {
                CriterionOutcome::Failed
            } else {
                CriterionOutcome::Passed
            };
            let r = TaskResultAssertion {
                version: 1,
                task_id: at["task_id"].as_str().expect("t").into(),
                task_digest: serde_json::from_value(at["task_digest"].clone()).expect("d"),
                attempt_id: a.id.clone(),
                attempt_digest: serde_json::from_value(a.claim["attempt_digest"].clone())
                    .expect("d"),
                request_id: req_id.clone(),
                execution_operation_id: at["execution_operation_id"].as_str().expect("e").into(),
                agent: Actor {
                    owner_id: "alice".into(),
                    agent_id: "a1".into(),
                },
                executor: None,
                fence,
                trust_class: TrustClass::AgentAssertion,
                outcome: if *failed {
                    ResultOutcome::Failed
                } else {
                    ResultOutcome::Passed
                },
                criteria: vec![CriterionResult {
                    criterion: "tests-pass".into(),
                    outcome,
                    findings: vec![],
                    evidence_digests: vec![],
                }],
                executor_provenance: None,
            };
            let real = ops::result(&w.cx(), &r).and_then(Deferred::wait);
            if let Some(exp) = w.idem(&req_id, &key) {
                match exp {
                    Ok(v) => assert_eq!(real.as_ref().ok(), Some(&v), "identical result retry"),
                    Err(c) => assert_eq!(code(&real), c),
                }
                return;
            }
            let state = w.state_of(a);
            let cell = if fence != a.fence {
                "stale_fence"
            } else {
                table(state, "result")
            };
            let expected = match cell {
                "finished" if w.stale(a.subject) => "subject_stale",
                "finished" => "ok",
                c => c,
            };
            assert_eq!(code(&real), expected, "result on {state} attempt");
            if let Ok(v) = real {
                w.attempts[ai].state = St::Finished;
                w.idem.insert(req_id, (key, v));
            }
        }
    }
    // Status is side-effect free and agrees with the model.
    for a in &w.attempts {
        let st = ops::status(
            &w.cx(),
            &StatusRequest {
                task_id: w.subjects[a.subject].task_id.clone(),
                attempt_id: a.id.clone(),
            },
        )
        .expect("status");
        assert_eq!(st["state"], w.state_of(a), "status of {}", a.id);
        assert_eq!(st["fence"], a.fence);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]
    #[test]
    fn journal_matches_the_model(ops in prop::collection::vec(op(), 1..28)) {
        let mut w = World::new();
        for o in &ops {
            step(&mut w, o);
        }
    }
}
