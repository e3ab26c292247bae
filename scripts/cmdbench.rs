//! Times whole commands, interleaved so that machine noise hits every
//! command alike, and prints median / p10 / p90 wall time and each median's
//! ratio to the first (the anchor).
//!
//! Usage: `cmdbench [--runs N] [--warmup N] [--json] [--rotate|--shuffle] [--goal R] --label NAME [--exit CODE] -- CMD ARGS… [--label NAME [--exit CODE] -- CMD ARGS…]…`
//! A command must exit 0, or with `--exit CODE` exactly CODE (a part of a
//! command that is timed by making it stop early with a known error).
//! With `--goal R` each command after the anchor is also judged against
//! the goal "median at most R times the anchor's" (met / NOT met), and the
//! machine's load average before and after the runs is printed.
//! A command may use `{i}` in an argument: it is replaced by the run index.
//! An argument of the form `{line:FILE}` is replaced by line `i` of FILE
//! (for commands that need a fresh object per run, such as a claim).
//! `--rotate` starts round `i` at command `i mod n` (the order stays
//! cyclic), so that no command always runs right after the same one: an
//! fsync-heavy command otherwise pays for the dirty data the command
//! before it (or the rest of the machine) left, and the next one runs on a
//! freshly flushed journal. The order stays cyclic, though: each command
//! still always follows the same one within a round (B after A, C after
//! B), which showed as a bias of about half a millisecond between two
//! builds of `collect` that swapped places. `--shuffle` runs each round in
//! its own order (a permutation drawn from the round's index, so a run is
//! reproducible): every command follows every other about equally often.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

struct Case {
    label: String,
    argv: Vec<String>,
    /// The exit code every run must end with.
    exit: i32,
    ms: Vec<f64>,
}

struct Opts {
    runs: usize,
    warmup: usize,
    json: bool,
    goal: Option<f64>,
    rotate: bool,
    shuffle: bool,
}

fn parse() -> Result<(Opts, Vec<Case>), String> {
    let mut args = std::env::args().skip(1).peekable();
    let (mut runs, mut warmup, mut json, mut rotate, mut shuffle, mut cases) =
        (200usize, 5usize, false, false, false, Vec::new());
    let mut goal = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                // At least one run: the medians and percentiles need a sample.
                runs = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .ok_or("--runs N (N at least 1)")?
            }
            "--warmup" => {
                warmup = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--warmup N")?
            }
            "--json" => json = true,
            "--goal" => {
                goal = Some(
                    args.next()
                        .and_then(|v| v.parse::<f64>().ok())
                        .filter(|g| *g > 0.0)
                        .ok_or("--goal R (a positive ratio)")?,
                )
            }
            "--rotate" => rotate = true,
            "--shuffle" => shuffle = true,
            "--label" => {
                let label = args.next().ok_or("--label NAME")?;
                let mut next = args.next();
                let mut exit = 0;
                if next.as_deref() == Some("--exit") {
                    exit = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .ok_or(format!("--label {label} --exit CODE"))?;
                    next = args.next();
                }
                if next.as_deref() != Some("--") {
                    return Err(format!("--label {label} must be followed by -- CMD"));
                }
                let mut argv = Vec::new();
                while let Some(x) = args.peek() {
                    if x == "--label" {
                        break;
                    }
                    argv.push(args.next().unwrap_or_default());
                }
                if argv.is_empty() {
                    return Err(format!("--label {label}: empty command"));
                }
                cases.push(Case {
                    label,
                    argv,
                    exit,
                    ms: Vec::new(),
                });
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if cases.is_empty() {
        return Err("no --label given".into());
    }
    Ok((
        Opts {
            runs,
            warmup,
            json,
            goal,
            rotate,
            shuffle,
        },
        cases,
    ))
}

fn once(c: &Case, i: usize) -> Result<f64, String> {
    let argv: Vec<String> = c
        .argv
        .iter()
        .map(
            |a| match a.strip_prefix("{line:").and_then(|r| r.strip_suffix('}')) {
                Some(file) => std::fs::read_to_string(file)
                    .ok()
                    .and_then(|t| t.lines().nth(i).map(str::to_owned))
                    .unwrap_or_default(),
                None => a.replace("{i}", &i.to_string()),
            },
        )
        .collect();
    let start = Instant::now();
    let st = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", c.label))?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if st.code() != Some(c.exit) {
        return Err(format!(
            "{} failed ({st}; expected exit code {}) on run {i}: {}",
            c.label,
            c.exit,
            argv.join(" ")
        ));
    }
    Ok(ms)
}

/// A permutation of `0..n` drawn from `round` (Fisher-Yates over a
/// splitmix64 stream seeded with it): the same round, the same order.
fn permutation(n: usize, round: usize) -> Vec<usize> {
    let mut state = (round as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        let j = (next() % (k as u64 + 1)) as usize;
        p.swap(k, j);
    }
    p
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() -> ExitCode {
    let (opts, mut cases) = match parse() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("cmdbench: {e}");
            return ExitCode::from(64);
        }
    };
    let load_before = loadavg();
    let n = cases.len();
    for i in 0..opts.warmup + opts.runs {
        let first = if opts.rotate { i % n } else { 0 };
        let order: Vec<usize> = if opts.shuffle {
            permutation(n, i)
        } else {
            (0..n).map(|k| (first + k) % n).collect()
        };
        for k in order {
            let c = &mut cases[k];
            match once(c, i) {
                Ok(ms) if i >= opts.warmup => c.ms.push(ms),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("cmdbench: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    }
    let load_after = loadavg();
    let mut anchor = None;
    let mut rows = Vec::new();
    for c in cases.iter_mut() {
        c.ms.sort_by(f64::total_cmp);
        let med = pct(&c.ms, 0.5);
        let a = *anchor.get_or_insert(med);
        rows.push((
            c.label.clone(),
            med,
            pct(&c.ms, 0.1),
            pct(&c.ms, 0.9),
            pct(&c.ms, 0.99),
            med / a,
        ));
    }
    if opts.json {
        let items: Vec<String> = rows
            .iter()
            .map(|(l, m, p10, p90, p99, r)| {
                format!("{{\"label\":\"{l}\",\"runs\":{},\"median_ms\":{m:.3},\"p10_ms\":{p10:.3},\"p90_ms\":{p90:.3},\"p99_ms\":{p99:.3},\"ratio_to_anchor\":{r:.3}}}", opts.runs)
            })
            .collect();
        println!("[{}]", items.join(","));
    } else {
        println!(
            "{:<28} {:>10} {:>9} {:>9} {:>9} {:>8}",
            "command", "median ms", "p10", "p90", "p99", "ratio"
        );
        for (l, m, p10, p90, p99, r) in &rows {
            println!("{l:<28} {m:>10.3} {p10:>9.3} {p90:>9.3} {p99:>9.3} {r:>7.2}x");
        }
        println!(
            "({} interleaved runs each after {} warm-up; ratio = median / median of {})",
            opts.runs, opts.warmup, rows[0].0
        );
        if let Some(g) = opts.goal {
            for (l, _, _, _, _, r) in rows.iter().skip(1) {
                let verdict = if *r <= g { "met" } else { "NOT met" };
                println!("{l}: {r:.2}x the anchor (goal <= {g:.2}x: {verdict})");
            }
            println!("load average (1, 5, 15 min): before {load_before}, after {load_after}");
        }
    }
    ExitCode::SUCCESS
}

/// The first three fields of /proc/loadavg, or "unknown".
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}
