//! Many agents against one `agent-task serve --workspace-config` (issue #16),
//! real processes, over the public workspace task route only:
//!
//! - the claim race over HTTP: 32 agents (each its own token) claim one task
//!   at once, `AGENT_TASK_HTTP_RACE_TRIALS` trials (default 10), each on a
//!   fresh subject: exactly one 200, every loser 409 `task_not_claimable`
//!   (or 503 `busy`, which changed nothing);
//! - the SIGKILL soak, short: agents race claims, heartbeat and
//!   cancel/reconcile while `serve` is SIGKILLed at random points
//!   (`AGENT_TASK_SOAK_KILLS`, default 4; `scripts/soak-authority.sh` runs
//!   many) and restarted. A request whose answer was lost is retried with the
//!   same request id until it is answered. Afterwards: exactly one winner per
//!   claim race, the winners' fences strictly increase, every acknowledged
//!   mutation replays to the byte-identical retained outcome (present, and
//!   not applied twice), and `PRAGMA integrity_check` is `ok` on every
//!   database of the data dir.
//!
//! - one batch of the group-commit writer (`AGENT_TASK_TEST_WRITER_GATHER`
//!   makes its first batch wait for every request of the test): two claims
//!   of one task (one wins, one `task_not_claimable`), a claim of another
//!   task, and a heartbeat of an attempt that does not exist: each its own
//!   outcome, the failures change nothing, the successes are durable;
//! - a CLI mutation beside a loaded `serve`: both make progress.
//!
//! No timed assertions: kill points are random, every wait is bounded only
//! to turn a hang into a failure.

use crate::common::task_support::Setup;
use crate::common::workspace_http::{OPS, Served, serve, serve_with, token};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Issues `n` agent tokens of the fixture owner; returns their texts.
fn agent_tokens(s: &Setup, prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let p = s.env.path(&format!("{prefix}-{i}.token"));
            s.env
                .run(&[
                    "token",
                    "issue",
                    "--owner",
                    "alice",
                    "--agent",
                    &format!("{prefix}-{i}"),
                    "--out",
                    p.to_str().expect("utf8"),
                ])
                .json();
            std::fs::read_to_string(&p)
                .expect("token")
                .trim()
                .to_owned()
        })
        .collect()
}

/// One operation on a fresh connection: `Ok((status, body))` when a whole
/// answer arrived; `Err(Unanswered)` when the connection failed or the
/// answer was cut (the server died), so the caller does not know whether the
/// request was applied.
fn try_op(addr: &str, tok: &str, body: &Value) -> Result<(u16, Value), Unanswered> {
    try_post(addr, OPS, tok, body)
}

/// [`try_op`] to another route (`path`).
fn try_post(addr: &str, path: &str, tok: &str, body: &Value) -> Result<(u16, Value), Unanswered> {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).map_err(|_| Unanswered::NotConnected)?;
    let r = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut buf = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .and_then(|_| s.write_all(r.as_bytes()))
        .and_then(|_| s.read_to_end(&mut buf))
        .map_err(|_| Unanswered::Cut)?;
    let parsed = || {
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = std::str::from_utf8(&buf[..end]).ok()?;
        let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
        let len: usize = head.split("\r\n").find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })?;
        let b = buf.get(end + 4..end + 4 + len)?;
        Some((status, serde_json::from_slice(b).ok()?))
    };
    parsed().ok_or(Unanswered::Cut)
}

/// Why a request got no answer.
#[derive(Debug)]
enum Unanswered {
    /// No connection (serve was down or restarting): never sent.
    NotConnected,
    /// Sent, and the answer never came whole: the kill hit it in flight.
    Cut,
}

/// The server's address, replaced on every restart.
type Addr = Arc<RwLock<String>>;

/// Sends `body` until it is answered (a lost answer or a `busy` refusal is
/// retried with the same bytes, so the same request id); `None` after 300 s.
fn until_answered(addr: &Addr, tok: &str, body: &Value, lost: &AtomicU64) -> Option<(u16, Value)> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(300) {
        let a = addr.read().map(|a| a.clone()).unwrap_or_default();
        match try_op(&a, tok, body) {
            Ok((st, v)) if !(st == 503 && v["error"] == "busy") => return Some((st, v)),
            Ok(_) | Err(Unanswered::NotConnected) => {}
            Err(Unanswered::Cut) => {
                lost.fetch_add(1, Ordering::SeqCst);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn authority_http_claim_race_32_agents_one_winner_per_trial() {
    let trials: usize = std::env::var("AGENT_TASK_HTTP_RACE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let s = Setup::new();
    let tokens = agent_tokens(&s, "racer", 32);
    let srv = serve(&s);
    let owner = token(&s);
    for trial in 0..trials {
        let (task, _) = s.checkpoint();
        let barrier = Arc::new(Barrier::new(tokens.len()));
        let handles: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(i, tok)| {
                let (barrier, tok, task, addr) =
                    (barrier.clone(), tok.clone(), task.clone(), srv.addr.clone());
                std::thread::spawn(move || {
                    let body = json!({"operation": "claim", "task_id": task,
                        "request_id": format!("race-{trial}-{i}"), "lease_ms": 60000});
                    barrier.wait();
                    try_op(&addr, &tok, &body).expect("serve answers every racer")
                })
            })
            .collect();
        let mut winners = Vec::new();
        for h in handles {
            let (st, v) = h.join().expect("racer");
            match st {
                200 => winners.push(v),
                409 => assert_eq!(v["error"], "task_not_claimable", "trial {trial}: {v}"),
                503 => assert_eq!(v["error"], "busy", "trial {trial}: {v}"),
                _ => panic!("trial {trial}: unexpected loser answer {st} {v}"),
            }
        }
        assert_eq!(winners.len(), 1, "trial {trial}: {winners:?}");
        let a = &winners[0]["result"]["attempt"];
        assert_eq!(a["fence"], 1, "a fresh subject's first claim: {a}");
        // The owner reconciles so the next subject is claimable.
        let (st, v) = try_op(
            &srv.addr,
            &owner,
            &json!({"operation": "reconcile", "attempt_id": a["attempt_id"],
                "fence": a["fence"], "request_id": format!("race-{trial}-reconcile")}),
        )
        .expect("answer");
        assert_eq!(st, 200, "{v}");
    }
}

/// What one agent saw in one round.
#[derive(Default)]
struct Round {
    /// The claim answer when this agent won.
    won: Option<Value>,
    /// Every acknowledged mutation of this round: (request body, answer).
    acked: Vec<(Value, Value)>,
}

/// Restartable serve: the current process and its address.
struct Server {
    srv: Option<Served>,
    addr: Addr,
}

impl Server {
    fn restart(&mut self, s: &Setup) {
        if let Some(mut old) = self.srv.take() {
            let _ = old.child.kill(); // SIGKILL
            let _ = old.child.wait();
        }
        let srv = serve(s);
        *self.addr.write().expect("addr") = srv.addr.clone();
        self.srv = Some(srv);
    }
}

/// A small xorshift generator seeded from the clock; the seed is printed so a
/// failing run can be repeated with `AGENT_TASK_SOAK_SEED`.
fn rng() -> impl FnMut(u64) -> u64 {
    let mut x = std::env::var("AGENT_TASK_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("authority soak seed: AGENT_TASK_SOAK_SEED={x}");
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

#[test]
fn authority_sigkill_soak() {
    let kills: u64 = std::env::var("AGENT_TASK_SOAK_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    const AGENTS: usize = 8;
    const HEARTBEATS: usize = 4;
    const MIN_ROUNDS: u64 = 8;
    let s = Setup::new();
    let (task, _) = s.checkpoint();
    let tokens = agent_tokens(&s, "soak", AGENTS);
    let owner = token(&s);
    let mut server = Server {
        srv: None,
        addr: Arc::new(RwLock::new(String::new())),
    };
    server.restart(&s);

    // Every agent races for the one task each round; the winner heartbeats,
    // cancels on odd rounds, and reconciles (as the owner), which makes the
    // task claimable again with a greater fence.
    let stop = Arc::new(AtomicBool::new(false));
    let last_round = Arc::new(AtomicU64::new(u64::MAX));
    let barrier = Arc::new(Barrier::new(AGENTS));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    // Requests in flight whose answer a kill cut off (then retried), and
    // rounds done.
    let lost = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(i, tok)| {
            let (tok, owner, task, addr) = (
                tok.clone(),
                owner.clone(),
                task.clone(),
                server.addr.clone(),
            );
            let (stop, last_round, barrier, failures, lost, done) = (
                stop.clone(),
                last_round.clone(),
                barrier.clone(),
                failures.clone(),
                lost.clone(),
                done.clone(),
            );
            std::thread::spawn(move || {
                let mut rounds = Vec::new();
                let mut r = 0u64;
                let fail = |m: String| failures.lock().map(|mut f| f.push(m)).unwrap_or(());
                loop {
                    let mut round = Round::default();
                    let claim = json!({"operation": "claim", "task_id": task,
                        "request_id": format!("soak-claim-{r}-{i}"), "lease_ms": 600000});
                    match until_answered(&addr, &tok, &claim, &lost) {
                        Some((200, v)) => {
                            round.won = Some(v["result"].clone());
                            round.acked.push((claim, v));
                        }
                        Some((409, v)) if v["error"] == "task_not_claimable" => {}
                        other => fail(format!("round {r} agent {i}: claim answered {other:?}")),
                    }
                    // Every racer has its answer before the winner lets go.
                    // (A failure is recorded, not panicked on, so that no
                    // agent is left waiting at a barrier.)
                    barrier.wait();
                    if let Some(w) = round.won.clone() {
                        let a = &w["attempt"];
                        let mut m = |op: &str, k: usize, tok: &str| {
                            let mut body = json!({"operation": op, "attempt_id": a["attempt_id"],
                                "fence": a["fence"], "request_id": format!("soak-{op}-{r}-{k}")});
                            if op == "heartbeat" {
                                body["lease_ms"] = json!(600000);
                            }
                            match until_answered(&addr, tok, &body, &lost) {
                                Some((200, v)) => round.acked.push((body, v)),
                                other => fail(format!("round {r}: {op} answered {other:?}")),
                            }
                        };
                        for k in 0..HEARTBEATS {
                            m("heartbeat", k, &tok);
                        }
                        if r % 2 == 1 {
                            m("cancel", 0, &tok);
                        }
                        m("reconcile", 0, &owner);
                    }
                    rounds.push(round);
                    if barrier.wait().is_leader() {
                        done.store(r + 1, Ordering::SeqCst);
                        if stop.load(Ordering::SeqCst) {
                            last_round.store(r, Ordering::SeqCst);
                        }
                    }
                    barrier.wait();
                    if last_round.load(Ordering::SeqCst) == r {
                        return rounds;
                    }
                    r += 1;
                }
            })
        })
        .collect();

    let mut next = rng();
    for _ in 0..kills {
        std::thread::sleep(Duration::from_millis(20 + next(400)));
        server.restart(&s);
    }
    // At least MIN_ROUNDS races in all (bounded wait: a hang is a failure).
    let start = Instant::now();
    while done.load(Ordering::SeqCst) < MIN_ROUNDS && start.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let per_agent: Vec<Vec<Round>> = handles
        .into_iter()
        .map(|h| h.join().expect("agent"))
        .collect();
    // One last kill after the traffic, then the checks on a fresh process.
    server.restart(&s);
    let failures = failures.lock().expect("failures").clone();
    assert!(failures.is_empty(), "{failures:#?}");

    let n_rounds = per_agent[0].len();
    assert!(per_agent.iter().all(|r| r.len() == n_rounds));
    let mut fences = Vec::new();
    for r in 0..n_rounds {
        let winners: Vec<&Value> = per_agent.iter().filter_map(|a| a[r].won.as_ref()).collect();
        assert_eq!(winners.len(), 1, "round {r}: winners {winners:?}");
        fences.push(winners[0]["attempt"]["fence"].as_u64().expect("fence"));
    }
    assert!(
        fences.windows(2).all(|w| w[0] < w[1]),
        "fences must strictly increase: {fences:?}"
    );
    // Every acknowledged mutation is present and applied once: its identical
    // retry returns the retained outcome unchanged.
    let addr = server.addr.read().expect("addr").clone();
    let mut replayed = 0;
    for (i, rounds) in per_agent.iter().enumerate() {
        for round in rounds {
            for (body, answer) in &round.acked {
                let tok = if body["operation"] == "reconcile" {
                    &owner
                } else {
                    &tokens[i]
                };
                let (st, v) = try_op(&addr, tok, body).expect("answer");
                assert_eq!(st, 200, "replay of {body}: {v}");
                assert_eq!(&v, answer, "replay of {body} differs");
                replayed += 1;
            }
        }
    }
    assert!(n_rounds as u64 >= MIN_ROUNDS, "{n_rounds} rounds");
    assert!(replayed >= n_rounds * (HEARTBEATS + 2));
    drop(server);
    let mut checked = Vec::new();
    for e in std::fs::read_dir(&s.env.data_dir).expect("data dir") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "sqlite") {
            let c = rusqlite::Connection::open(&p).expect("open");
            let ok: String = c
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .expect("integrity_check");
            assert_eq!(ok, "ok", "{}", p.display());
            checked.push(p.file_name().expect("name").to_string_lossy().into_owned());
        }
    }
    checked.sort();
    assert!(
        checked.contains(&"authority.sqlite".to_owned())
            && checked.contains(&"journal.sqlite".to_owned()),
        "{checked:?}"
    );
    eprintln!(
        "authority soak: {kills} kills, {n_rounds} claim races, {} requests cut off in flight by a kill and retried, {replayed} acknowledged mutations replayed, fences {fences:?}",
        lost.load(Ordering::SeqCst)
    );
}

/// Sends every body at once (one thread each, released together) on its
/// own connection; the answers in the same order.
fn at_once(addr: &str, calls: &[(String, Value)]) -> Vec<(u16, Value)> {
    at_once_to(addr, OPS, calls)
}

/// [`at_once`] to another route (`path`).
fn at_once_to(addr: &str, path: &str, calls: &[(String, Value)]) -> Vec<(u16, Value)> {
    let barrier = Arc::new(Barrier::new(calls.len()));
    let hs: Vec<_> = calls
        .iter()
        .map(|(tok, body)| {
            let (barrier, tok, body, addr) =
                (barrier.clone(), tok.clone(), body.clone(), addr.to_owned());
            let path = path.to_owned();
            std::thread::spawn(move || {
                barrier.wait();
                try_post(&addr, &path, &tok, &body).expect("serve answers")
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().expect("caller")).collect()
}

#[test]
fn authority_writer_batch_each_mutation_its_own_outcome() {
    let s = Setup::new();
    let (tests_task, notes_task) = s.checkpoint();
    let tokens = agent_tokens(&s, "batch", 4);
    let srv = serve_with(&s, &[("AGENT_TASK_TEST_WRITER_GATHER", "4")], &[]);
    let claim = |task: &str, rid: &str| json!({"operation": "claim", "task_id": task, "request_id": rid, "lease_ms": 60000});
    let calls = vec![
        (tokens[0].clone(), claim(&tests_task, "b-claim-0")),
        (tokens[1].clone(), claim(&tests_task, "b-claim-1")),
        (tokens[2].clone(), claim(&notes_task, "b-claim-2")),
        (
            tokens[3].clone(),
            json!({"operation": "heartbeat", "attempt_id": "no-such-attempt", "fence": 1,
                   "request_id": "b-hb-3", "lease_ms": 60000}),
        ),
    ];
    let answers = at_once(&srv.addr, &calls);
    // Per-task claim serialisation inside one batch: one winner.
    let tests_claims = [&answers[0], &answers[1]];
    let won: Vec<_> = tests_claims.iter().filter(|(st, _)| *st == 200).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    let lost = tests_claims
        .iter()
        .find(|(st, _)| *st != 200)
        .expect("a loser");
    assert_eq!(lost.0, 409, "{lost:?}");
    assert_eq!(lost.1["error"], "task_not_claimable", "{lost:?}");
    // The other task's claim is unaffected by its neighbours' failures.
    assert_eq!(answers[2].0, 200, "{:?}", answers[2]);
    // The bad heartbeat fails alone with its own typed error.
    assert_eq!(answers[3].0, 404, "{:?}", answers[3]);
    assert_eq!(answers[3].1["error"], "not_found", "{:?}", answers[3]);
    // One batch, one instant: both successful claims carry the same lease
    // end (same lease_ms, the session's single clock reading).
    let r0 = &won[0].1["result"];
    let r2 = &answers[2].1["result"];
    assert_eq!(
        r0["lease_expires_at"], r2["lease_expires_at"],
        "one batch: {r0} {r2}"
    );
    // Durable, and retained: after a SIGKILL and a restart the identical
    // retries return the byte-identical outcomes, and the loser's retry is
    // still refused (it changed nothing).
    drop(srv);
    let srv = serve(&s);
    for (i, (st, v)) in answers.iter().enumerate() {
        let (st2, v2) = try_op(&srv.addr, &calls[i].0, &calls[i].1).expect("answer");
        if *st == 200 {
            assert_eq!((st2, &v2), (200, v), "retry of {}", calls[i].1);
        } else {
            assert_eq!(v2["error"], v["error"], "retry of {}", calls[i].1);
        }
    }
}

#[test]
fn authority_cli_mutation_beside_a_loaded_serve_makes_progress() {
    // Agents keep the writer busy with heartbeats while CLI claims (one
    // process each, the data-dir lock across processes) run beside it:
    // every CLI claim succeeds within its bounded lock wait, and the
    // agents' heartbeats keep succeeding too.
    let s = Setup::new();
    let (task, notes) = s.checkpoint();
    // The fixture's own agent, over HTTP and on the CLI alike.
    let owner = token(&s);
    let srv = serve(&s);
    let won = try_op(
        &srv.addr,
        &owner,
        &json!({"operation": "claim", "task_id": task, "request_id": "load-claim", "lease_ms": 600000}),
    )
    .expect("answer");
    assert_eq!(won.0, 200, "{won:?}");
    let a = won.1["result"]["attempt"].clone();
    let stop = Arc::new(AtomicBool::new(false));
    let beats = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..4)
        .map(|k| {
            let (stop, beats, addr, tok, a) = (
                stop.clone(),
                beats.clone(),
                srv.addr.clone(),
                owner.clone(),
                a.clone(),
            );
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let body = json!({"operation": "heartbeat", "attempt_id": a["attempt_id"],
                        "fence": a["fence"], "request_id": format!("load-hb-{k}-{n}"), "lease_ms": 600000});
                    let (st, v) = try_op(&addr, &tok, &body).expect("answer");
                    assert_eq!(st, 200, "{v}");
                    beats.fetch_add(1, Ordering::SeqCst);
                    n += 1;
                }
            })
        })
        .collect();
    // CLI mutations beside it, each its own process: a claim of the other
    // task and heartbeats of the same attempt the agents beat (journal
    // writes under the data-dir lock, waited for across processes).
    let attempt = a["attempt_id"].as_str().expect("attempt").to_owned();
    let fence = a["fence"].to_string();
    let out = s
        .agent(&[
            "claim",
            &notes,
            "--request-id",
            "cli-claim",
            "--lease-ms",
            "60000",
        ])
        .json();
    assert_eq!(out["attempt"]["fence"], 1, "{out}");
    for i in 0..3 {
        let before = beats.load(Ordering::SeqCst);
        let out = s
            .agent(&[
                "heartbeat",
                "--attempt",
                &attempt,
                "--fence",
                &fence,
                "--request-id",
                &format!("cli-hb-{i}"),
            ])
            .json();
        assert!(out.is_object(), "{out}");
        // And serve went on meanwhile (bounded: a hang fails the test).
        let start = Instant::now();
        while beats.load(Ordering::SeqCst) <= before && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            beats.load(Ordering::SeqCst) > before,
            "serve made no progress"
        );
    }
    stop.store(true, Ordering::SeqCst);
    for h in hs {
        h.join().expect("agent");
    }
}

#[test]
#[allow(clippy::disallowed_methods)] // the test holds the data-dir lock itself
fn authority_reads_answer_while_the_lock_and_a_write_transaction_are_held() {
    // Another process's view: the data-dir lock held and an immediate
    // transaction open on the journal (a writer mid-batch). Every read of
    // the workspace endpoint answers from a WAL snapshot meanwhile; a
    // mutation waits for the lock and, past --lock-timeout-ms, is `busy`
    // having changed nothing.
    let s = Setup::new();
    let (task, _) = s.checkpoint();
    let owner = token(&s);
    let srv = serve_with(&s, &[], &["--lock-timeout-ms", "200"]);
    let (st, won) = try_op(
        &srv.addr,
        &owner,
        &json!({"operation": "claim", "task_id": task, "request_id": "r-claim", "lease_ms": 600000}),
    )
    .expect("answer");
    assert_eq!(st, 200, "{won}");
    let attempt = won["result"]["attempt"]["attempt_id"].clone();
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.env.data_dir.join("lock"))
        .expect("lock file");
    lock.lock().expect("hold the data-dir lock");
    let j = rusqlite::Connection::open(s.env.data_dir.join("journal.sqlite")).expect("journal");
    j.execute_batch("BEGIN IMMEDIATE; UPDATE attempts SET updated_at = updated_at;")
        .expect("an open write transaction");
    let reads = [
        json!({"operation": "next", "change_id": s.change_id}),
        json!({"operation": "qualification", "change_id": s.change_id}),
        json!({"operation": "status", "task_id": task, "attempt_id": attempt}),
        json!({"operation": "instructions", "task_id": task}),
        json!({"operation": "reference", "task_id": task, "name": "testing-guide"}),
    ];
    for body in &reads {
        let (st, v) = try_op(&srv.addr, &owner, body).expect("answer");
        assert_eq!(st, 200, "{body}: {v}");
    }
    let hb = json!({"operation": "heartbeat", "attempt_id": attempt, "fence": 1,
        "request_id": "r-hb", "lease_ms": 600000});
    let (st, v) = try_op(&srv.addr, &owner, &hb).expect("answer");
    assert_eq!((st, v["error"].as_str()), (503, Some("busy")), "{v}");
    j.execute_batch("ROLLBACK").expect("rollback");
    drop(j);
    drop(lock);
    // The lock is free again: the same heartbeat is applied now.
    let (st, v) = try_op(&srv.addr, &owner, &hb).expect("answer");
    assert_eq!(st, 200, "{v}");
}

#[test]
fn authority_more_concurrent_mutations_than_workers_share_one_batch() {
    // `serve --workers 2`: a mutation's handler thread returns once the
    // mutation is queued and the server awaits the batch's answer on its
    // runtime, so 16 heartbeats sent at once all reach the writer while
    // only 2 handler threads exist. The test hook makes the first batch
    // wait (at most 60 s) until 16 mutations are queued: with handler
    // threads waiting for their batch, at most 2 could be, and the batch
    // would be cut after 60 s. One batch is one clock reading: every
    // heartbeat carries the same lease end.
    let (s, attempt, fence, owner, srv) = claimed_then_served_narrow("wide-claim");
    let calls: Vec<(String, Value)> = (0..16)
        .map(|k| {
            (
                owner.clone(),
                json!({"operation": "heartbeat", "attempt_id": attempt, "fence": fence,
                       "request_id": format!("wide-hb-{k}"), "lease_ms": 600000}),
            )
        })
        .collect();
    let answers = at_once(&srv.addr, &calls);
    for (st, v) in &answers {
        assert_eq!(*st, 200, "{v}");
    }
    let ends: std::collections::BTreeSet<String> = answers
        .iter()
        .map(|(_, v)| v["result"]["lease_expires_at"].to_string())
        .collect();
    assert_eq!(ends.len(), 1, "one batch, one instant: {answers:?}");
    assert!(!ends.contains("null"), "{answers:?}");
    // Each is durable and retained: an identical retry (after a restart)
    // returns the byte-identical outcome.
    drop(srv);
    let srv = serve(&s);
    for (i, (_, v)) in answers.iter().enumerate() {
        let (st2, v2) = try_op(&srv.addr, &calls[i].0, &calls[i].1).expect("answer");
        assert_eq!((st2, &v2), (200, v), "retry of {}", calls[i].1);
    }
}

/// A fixture whose task is claimed on the CLI (no writer, so the first
/// batch of serve's writer is the test's mutations), then `serve --workers
/// 2` whose writer's first batch waits for 16 mutations: the setup, the
/// attempt id and fence, the owner's token and the server.
fn claimed_then_served_narrow(request_id: &str) -> (Setup, Value, Value, String, Served) {
    let s = Setup::new();
    let (task, _) = s.checkpoint();
    let claim = s
        .agent(&[
            "claim",
            &task,
            "--request-id",
            request_id,
            "--lease-ms",
            "600000",
        ])
        .json();
    let (attempt, fence) = (
        claim["attempt"]["attempt_id"].clone(),
        claim["attempt"]["fence"].clone(),
    );
    let owner = token(&s);
    let srv = serve_with(
        &s,
        &[("AGENT_TASK_TEST_WRITER_GATHER", "16")],
        &["--workers", "2"],
    );
    (s, attempt, fence, owner, srv)
}

#[test]
fn authority_mcp_mutations_share_one_batch_beyond_the_workers() {
    // The MCP route as the task route above: a `tools/call` of a mutation
    // is queued to the writer and awaited on the runtime, so 16 heartbeats
    // at once reach one batch with only 2 handler threads (a handler that
    // waited for its batch would hold one of them, and the gathering
    // first batch would be cut after 60 s with at most 2).
    const MCP: &str = "/v1/hub/workspace/mcp?repository=demo-basic&profile=default";
    let (s, attempt, fence, owner, srv) = claimed_then_served_narrow("mcp-wide-claim");
    let call = |k: usize| {
        json!({"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {
            "name": "heartbeat",
            "arguments": {"attempt_id": attempt, "fence": fence,
                          "request_id": format!("mcp-wide-hb-{k}"), "lease_ms": 600000}}})
    };
    let calls: Vec<(String, Value)> = (0..16).map(|k| (owner.clone(), call(k))).collect();
    let answers = at_once_to(&srv.addr, MCP, &calls);
    for (k, (st, v)) in answers.iter().enumerate() {
        assert_eq!(*st, 200, "{v}");
        assert_eq!(v["id"], json!(k), "{v}");
        assert_eq!(v["result"]["isError"], json!(false), "{v}");
    }
    let ends: std::collections::BTreeSet<String> = answers
        .iter()
        .map(|(_, v)| v["result"]["structuredContent"]["lease_expires_at"].to_string())
        .collect();
    assert_eq!(ends.len(), 1, "one batch, one instant: {answers:?}");
    assert!(!ends.contains("null"), "{answers:?}");
    // A tool error is its own: a heartbeat of an attempt that does not
    // exist answers `isError` with its typed code, through the writer too.
    let (st, v) = try_post(
        &srv.addr,
        MCP,
        &owner,
        &json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
            "name": "heartbeat",
            "arguments": {"attempt_id": "at-missing", "fence": 1, "request_id": "mcp-missing"}}}),
    )
    .expect("answer");
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["result"]["isError"], json!(true), "{v}");
    assert!(v["result"]["structuredContent"]["error"].is_string(), "{v}");
    // Durable and retained: identical retries after a restart return the
    // same outcomes.
    drop(srv);
    let srv = serve(&s);
    for (i, (_, v)) in answers.iter().enumerate() {
        let (st2, v2) = try_post(&srv.addr, MCP, &calls[i].0, &calls[i].1).expect("answer");
        assert_eq!((st2, &v2), (200, v), "retry of {}", calls[i].1);
    }
}
