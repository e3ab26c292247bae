//! Real-process races: 8 and then 32 processes claim the same task at once,
//! 200 trials each (`AGENT_TASK_RACE_TRIALS` overrides the count). Every
//! trial uses a fresh subject (a new checkpoint) in the same data dir and
//! reconciles its winner afterwards so the next subject is claimable.
//! Exactly one claim wins; every loser gets a typed error.

use crate::common::bin;
use crate::common::task_support::Setup;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

fn trials() -> usize {
    std::env::var("AGENT_TASK_RACE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn race(s: &Setup, n: usize, trials: usize) {
    let mut winners_per_trial = Vec::with_capacity(trials);
    for trial in 0..trials {
        let (tests, _) = s.checkpoint();
        let barrier = Arc::new(Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let barrier = barrier.clone();
                let data = s.env.data_dir.clone();
                let token = s.token.clone();
                let task = tests.clone();
                std::thread::spawn(move || {
                    let mut c = Command::new(bin());
                    c.env_clear()
                        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                        .arg("--data-dir")
                        .arg(&data)
                        .arg("--token-file")
                        .arg(&token)
                        .arg("--lock-timeout-ms")
                        .arg("30000")
                        .args([
                            "claim",
                            &task,
                            "--request-id",
                            &format!("n{n}-t{trial}-p{i}"),
                            "--lease-ms",
                            "60000",
                        ])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                    barrier.wait();
                    c.output().expect("spawn")
                })
            })
            .collect();
        let mut winners = Vec::new();
        for h in handles {
            let out = h.join().expect("thread");
            if out.status.success() {
                let v: Value = serde_json::from_slice(&out.stdout).expect("json");
                winners.push(v);
            } else {
                assert!(out.stdout.is_empty());
                let e: Value = serde_json::from_slice(&out.stderr).expect("typed error on stderr");
                let code = e["error"].as_str().expect("code");
                assert!(
                    matches!(code, "task_not_claimable" | "busy"),
                    "trial {trial}: unexpected loser error {e}"
                );
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "trial {trial} with {n} processes: {winners:?}"
        );
        winners_per_trial.push(winners.len());
        let w = &winners[0]["attempt"];
        s.agent(&[
            "reconcile",
            "--attempt",
            w["attempt_id"].as_str().expect("a"),
            "--fence",
            &w["fence"].to_string(),
            "--request-id",
            &format!("n{n}-t{trial}-reconcile"),
        ])
        .json();
    }
    assert!(winners_per_trial.iter().all(|&w| w == 1));
}

#[test]
fn task_race_8_then_32_processes_one_winner_per_trial() {
    let s = Setup::new();
    let t = trials();
    race(&s, 8, t);
    race(&s, 32, t);
}
