//! The per-command latency floor: take the advisory lock, open SQLite in WAL
//! with the same pragmas agent-task's writers use, commit one row, exit.
//! Built and run by `scripts/bench-floor.sh`; later benchmarks reuse it as
//! their anchor. Usage: `floor-probe DIR`.
#![allow(clippy::print_stderr)]
#![allow(clippy::disallowed_methods)] // a benchmark probe: it opens SQLite itself

use rusqlite::{Connection, config::DbConfig};
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;

fn run(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join("lock"))?;
    lock.lock()?;
    let conn = Connection::open(dir.join("probe.sqlite"))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
    conn.execute_batch(
        "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;
         CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at TEXT NOT NULL) STRICT;",
    )?;
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    conn.execute_batch("BEGIN IMMEDIATE")?;
    conn.execute("INSERT INTO probe(at) VALUES (?1)", [now])?;
    conn.execute_batch("COMMIT")?;
    Ok(())
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: floor-probe DIR");
        return ExitCode::from(64);
    };
    match run(std::path::Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor-probe: {e}");
            ExitCode::from(70)
        }
    }
}
