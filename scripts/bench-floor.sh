#!/usr/bin/env bash
# The per-command latency floor: median wall time of `agent-task info` over
# 200 runs next to the floor probe (lock + SQLite WAL open + one committed
# row), interleaved, as a ratio. Also shows `init` on an existing dir (a
# mutating command that takes the lock and opens SQLite for writing), the
# sqlite3 CLI doing one equivalent locked write, and the spawn floor.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
cargo build --release --locked --quiet --bin agent-task --example floor-probe --example cmdbench
bin=$PWD/target/release/agent-task
probe=$PWD/target/release/examples/floor-probe
bench=$PWD/target/release/examples/cmdbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" --data-dir "$work/data" init >/dev/null
mkdir -m 700 "$work/probe" "$work/sql"
extra=()
if command -v sqlite3 >/dev/null && command -v flock >/dev/null; then
  sqlite3 "$work/sql/db" "PRAGMA journal_mode=WAL; CREATE TABLE probe(id INTEGER PRIMARY KEY, at TEXT NOT NULL);" >/dev/null
  extra=(--label "sqlite3 CLI (flock+insert)" -- flock "$work/sql/lock" sqlite3 "$work/sql/db"
         "PRAGMA synchronous=FULL; BEGIN IMMEDIATE; INSERT INTO probe(at) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ')); COMMIT;")
fi
echo "# latency floor, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$bench" --runs "$RUNS" \
  --label "floor probe (anchor)" -- "$probe" "$work/probe" \
  --label "agent-task info" -- "$bin" --data-dir "$work/data" info \
  --label "agent-task init (existing)" -- "$bin" --data-dir "$work/data" init \
  "${extra[@]}" \
  --label "/bin/true (spawn floor)" -- /bin/true
