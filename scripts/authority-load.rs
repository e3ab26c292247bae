//! Load driver of `scripts/bench-authority.sh`: many agents against one
//! `agent-task serve --workspace-config`, over the public workspace task
//! route only, loopback only, bounded in count and time.
//!
//! ```text
//! authority-load claim URL OPS_PATH AGENTS_FILE
//!     AGENTS_FILE lines: TOKEN_FILE CHANGE_ID TASK_ID. Claims every task over
//!     HTTP (one kept-alive connection), prints one line per agent:
//!     TOKEN_FILE CHANGE_ID TASK_ID ATTEMPT_ID FENCE
//! authority-load loop URL OPS_PATH ATTEMPTS_FILE AGENTS SECONDS LABEL
//!     The first AGENTS lines of the claim output, every agent a task on one
//!     single-threaded runtime (hyper's HTTP/1.1 client over tokio's
//!     current-thread runtime), each on its own kept-alive connection,
//!     looping heartbeat (a durable write) then qualification (a read) until
//!     SECONDS have passed (at most 100,000 iterations an agent). Prints one
//!     JSON object: counts, errors by code, heartbeats/s and p50/p99 of both
//!     operations in ms.
//! authority-load loop-threads URL OPS_PATH ATTEMPTS_FILE AGENTS SECONDS LABEL
//!     The same loop with one OS thread per agent (ureq, every answer parsed
//!     into a JSON value): the earlier load generator, kept so that one run
//!     can show what the instrument itself costs.
//! ```
//!
//! Both loops check every answer alike: a 200 must be a JSON object whose
//! `operation` is the one sent and which has a `result`; any other status
//! is counted by its `error` code (`http NNN: not JSON` when there is
//! none), a transport failure as `transport`.
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

#[path = "load-conn.rs"]
#[allow(dead_code)]
mod load_conn;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const MAX_ITERATIONS: u64 = 100_000;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .max_idle_connections_per_host(1)
        .build()
        .into()
}

fn loopback(url: &str) -> bool {
    url.starts_with("http://127.")
        || url.starts_with("http://localhost")
        || url.starts_with("http://[::1]")
}

/// One operation: Ok(result) on 200, Err(error code) otherwise.
fn call(a: &ureq::Agent, url: &str, token: &str, body: &Value) -> Result<Value, String> {
    let r = a
        .post(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body.to_string().as_bytes());
    let mut r = r.map_err(|e| format!("transport: {e}"))?;
    let status = r.status().as_u16();
    let bytes = r
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_vec()
        .map_err(|e| format!("transport: {e}"))?;
    let v: Value =
        serde_json::from_slice(&bytes).map_err(|_| format!("http {status}: not JSON"))?;
    if status == 200 {
        if v["operation"] != body["operation"] || v.get("result").is_none() {
            return Err(format!("http {status}: not the operation's envelope"));
        }
        Ok(v["result"].clone())
    } else {
        Err(v["error"].as_str().unwrap_or("no_code").to_owned())
    }
}

fn read_token(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_owned())
        .map_err(|e| format!("{path}: {e}"))
}

fn claim(url: &str, file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let a = agent();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [tok, change, task] = f[..] else {
            return Err(format!(
                "{file}:{}: want TOKEN_FILE CHANGE_ID TASK_ID",
                i + 1
            ));
        };
        let token = read_token(tok)?;
        let body = json!({"operation": "claim", "task_id": task, "request_id": format!("bench-claim-{i}"), "lease_ms": 3_600_000});
        let r = call(&a, url, &token, &body).map_err(|e| format!("claim {task}: {e}"))?;
        let attempt = r["attempt"]["attempt_id"]
            .as_str()
            .ok_or_else(|| format!("claim {task}: no attempt id in {r}"))?;
        let fence = r["attempt"]["fence"]
            .as_u64()
            .ok_or_else(|| format!("claim {task}: no fence in {r}"))?;
        println!("{tok} {change} {task} {attempt} {fence}");
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    hb_ms: Vec<f64>,
    q_ms: Vec<f64>,
    errors: BTreeMap<String, u64>,
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// One agent of the loop: its token, Change and claimed attempt.
struct Agent {
    token: String,
    change: String,
    attempt: String,
    fence: u64,
}

fn read_agents(file: &str, agents: usize) -> Result<Vec<Agent>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let mut rows = Vec::new();
    for line in text.lines().take(agents) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [tok, change, _task, attempt, fence] = f[..] else {
            return Err(format!("{file}: want the claim output"));
        };
        let fence: u64 = fence.parse().map_err(|_| format!("{file}: bad fence"))?;
        rows.push(Agent {
            token: read_token(tok)?,
            change: change.to_owned(),
            attempt: attempt.to_owned(),
            fence,
        });
    }
    if rows.len() < agents {
        return Err(format!("{file} has {} agents, {agents} asked", rows.len()));
    }
    Ok(rows)
}

impl Tally {
    fn add(&mut self, t: Tally) {
        self.hb_ms.extend(t.hb_ms);
        self.q_ms.extend(t.q_ms);
        for (k, v) in t.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }

    fn error(&mut self, op: &str, code: &str) {
        *self.errors.entry(format!("{op}:{code}")).or_default() += 1;
    }

    fn print(mut self, agents: usize, elapsed: f64) {
        self.hb_ms.sort_by(f64::total_cmp);
        self.q_ms.sort_by(f64::total_cmp);
        let out = json!({
            "agents": agents,
            "seconds": (elapsed * 1e3).round() / 1e3,
            "heartbeats": self.hb_ms.len(),
            "qualifications": self.q_ms.len(),
            "errors": self.errors,
            "heartbeats_per_s": (self.hb_ms.len() as f64 / elapsed * 10.0).round() / 10.0,
            "heartbeat_p50_ms": (pct(&self.hb_ms, 0.5) * 1e3).round() / 1e3,
            "heartbeat_p99_ms": (pct(&self.hb_ms, 0.99) * 1e3).round() / 1e3,
            "qualification_p50_ms": (pct(&self.q_ms, 0.5) * 1e3).round() / 1e3,
            "qualification_p99_ms": (pct(&self.q_ms, 0.99) * 1e3).round() / 1e3,
        });
        println!("{out}");
    }
}

/// The loop with one OS thread per agent (ureq).
fn run_threads(url: &str, rows: Vec<Agent>, secs: f64, label: &str) -> Result<(), String> {
    let agents = rows.len();
    let deadline = Duration::from_secs_f64(secs);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(agents + 1));
    let handles: Vec<_> = rows
        .into_iter()
        .enumerate()
        .map(|(n, ag)| {
            let url = url.to_owned();
            let label = label.to_owned();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let a = agent();
                let mut t = Tally::default();
                let q = json!({"operation": "qualification", "change_id": ag.change});
                // One warm-up round opens the connection.
                let _ = call(&a, &url, &ag.token, &q);
                barrier.wait();
                let start = Instant::now();
                let mut k = 0u64;
                while start.elapsed() < deadline && k < MAX_ITERATIONS {
                    let hb = json!({"operation": "heartbeat", "attempt_id": ag.attempt, "fence": ag.fence,
                        "request_id": format!("{label}-{n}-{k}"), "lease_ms": 3_600_000});
                    let s = Instant::now();
                    match call(&a, &url, &ag.token, &hb) {
                        Ok(_) => t.hb_ms.push(s.elapsed().as_secs_f64() * 1e3),
                        Err(e) => t.error("heartbeat", &e),
                    }
                    let s = Instant::now();
                    match call(&a, &url, &ag.token, &q) {
                        Ok(_) => t.q_ms.push(s.elapsed().as_secs_f64() * 1e3),
                        Err(e) => t.error("qualification", &e),
                    }
                    k += 1;
                }
                t
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut all = Tally::default();
    for h in handles {
        all.add(
            h.join()
                .map_err(|_| "an agent thread panicked".to_owned())?,
        );
    }
    all.print(agents, start.elapsed().as_secs_f64());
    Ok(())
}

/// What the hyper loop reads of a 200 answer: the envelope's operation and
/// that a result is there, nothing else decoded.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    operation: std::borrow::Cow<'a, str>,
    result: Option<serde::de::IgnoredAny>,
}

/// One operation on a kept-alive connection: Ok on a 200 envelope of
/// `op`, Err(error code) otherwise.
async fn call_on(c: &mut load_conn::Conn, op: &str, body: Vec<u8>) -> Result<(), String> {
    let (status, bytes) = c.post(body).await?;
    if status != 200 {
        return Err(load_conn::refusal_code(status, &bytes));
    }
    match serde_json::from_slice::<Envelope<'_>>(&bytes) {
        Ok(e) if e.operation == op && e.result.is_some() => Ok(()),
        Ok(_) => Err(format!("http {status}: not the operation's envelope")),
        Err(_) => Err(format!("http {status}: not JSON")),
    }
}

/// The loop with every agent a task on one current-thread runtime.
fn run_hyper(url: &str, rows: Vec<Agent>, secs: f64, label: &str) -> Result<(), String> {
    let target = load_conn::Target::parse(url)?;
    let agents = rows.len();
    let deadline = Duration::from_secs_f64(secs);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    rt.block_on(async move {
        // Every connection opened and warmed up (one qualification) before
        // the clock starts.
        let mut conns = Vec::with_capacity(agents);
        for ag in &rows {
            let mut c = load_conn::Conn::open(&target, &ag.token).await?;
            let q = qualification_body(&ag.change)?;
            call_on(&mut c, "qualification", q)
                .await
                .map_err(|e| format!("warm-up qualification: {e}"))?;
            conns.push(c);
        }
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (n, (mut c, ag)) in conns.into_iter().zip(rows).enumerate() {
            let q = qualification_body(&ag.change)?;
            let attempt = serde_json::to_string(&ag.attempt).map_err(|e| e.to_string())?;
            let prefix = format!(
                r#"{{"operation":"heartbeat","attempt_id":{attempt},"fence":{},"lease_ms":3600000,"request_id":"#,
                ag.fence
            );
            let label = serde_json::to_string(&format!("{label}-{n}-"))
                .map_err(|e| e.to_string())?;
            let label = label.trim_end_matches('"').to_owned();
            tasks.spawn(async move {
                let mut t = Tally::default();
                let mut k = 0u64;
                while start.elapsed() < deadline && k < MAX_ITERATIONS {
                    let hb = format!("{prefix}{label}{k}\"}}").into_bytes();
                    let s = Instant::now();
                    match call_on(&mut c, "heartbeat", hb).await {
                        Ok(()) => t.hb_ms.push(s.elapsed().as_secs_f64() * 1e3),
                        Err(e) => t.error("heartbeat", &e),
                    }
                    let s = Instant::now();
                    match call_on(&mut c, "qualification", q.clone()).await {
                        Ok(()) => t.q_ms.push(s.elapsed().as_secs_f64() * 1e3),
                        Err(e) => t.error("qualification", &e),
                    }
                    k += 1;
                }
                t
            });
        }
        let mut all = Tally::default();
        while let Some(t) = tasks.join_next().await {
            all.add(t.map_err(|_| "an agent task panicked".to_owned())?);
        }
        all.print(agents, start.elapsed().as_secs_f64());
        Ok(())
    })
}

fn qualification_body(change: &str) -> Result<Vec<u8>, String> {
    serde_json::to_vec(&json!({"operation": "qualification", "change_id": change}))
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url_ok = |u: &str| {
        if loopback(u) {
            Ok(())
        } else {
            Err(format!("{u}: loopback URLs only"))
        }
    };
    let r = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["claim", url, ops, file] => url_ok(url).and_then(|_| claim(&format!("{url}{ops}"), file)),
        [
            mode @ ("loop" | "loop-threads"),
            url,
            ops,
            file,
            agents,
            secs,
            label,
        ] => url_ok(url).and_then(|_| {
            let agents: usize = agents.parse().map_err(|_| "AGENTS: a number")?;
            let secs: f64 = secs.parse().map_err(|_| "SECONDS: a number")?;
            if !(1..=1024).contains(&agents) || !(0.1..=600.0).contains(&secs) {
                return Err("AGENTS 1..1024, SECONDS 0.1..600".to_owned());
            }
            let rows = read_agents(file, agents)?;
            let url = format!("{url}{ops}");
            if mode == "loop" {
                run_hyper(&url, rows, secs, label)
            } else {
                run_threads(&url, rows, secs, label)
            }
        }),
        _ => Err("usage: see the header of scripts/authority-load.rs".to_owned()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("authority-load: {e}");
            ExitCode::FAILURE
        }
    }
}
