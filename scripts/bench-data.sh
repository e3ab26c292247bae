#!/usr/bin/env bash
# Data-node benchmark (release build, fresh data dirs, loopback only).
# Prints, each next to its anchor:
#   1. durable single-record collects over HTTP, 8 concurrent clients, 10,000 records
#   2. bulk `data collect --jsonl` of 100,000 records
#   3. selective and all-match text query p50/p99 over HTTP at 100,000 records
# Not part of the test command. Usage: scripts/bench-data.sh [HTTP_RECORDS] [BULK_RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
HTTP_RECORDS=${1:-10000}
BULK_RECORDS=${2:-100000}
cargo build --release --locked --quiet --bin agent-task --example data-load
BIN=$PWD/target/release/agent-task
LOAD=$PWD/target/release/examples/data-load
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
export BENCH_TOKEN=bench-token-$RANDOM$RANDOM

start_server() { # $1 = data dir
  AGENT_TASK_NODE_TOKEN=$BENCH_TOKEN "$BIN" --data-dir "$1" serve --bind 127.0.0.1:0 --workers 16 >"$WORK/serve.out" 2>"$WORK/serve.err" &
  SERVER_PID=$!
  for _ in $(seq 1 200); do
    if [ -s "$WORK/serve.out" ]; then break; fi
    sleep 0.05
  done
  URL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listening"])' "$WORK/serve.out")
}
stop_server() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; : >"$WORK/serve.out"; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
ratio() { python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f"{a/b:.2f}x")' "$1" "$2"; }

echo "machine: $(nproc) cores, $(uname -sr)"

# 1. Durable single-record collects over HTTP (group commit).
"$BIN" --data-dir "$WORK/http" data init >/dev/null
start_server "$WORK/http"
OUT=$("$LOAD" collect "$URL" BENCH_TOKEN 8 "$HTTP_RECORDS")
stop_server
RATE=$(field "$OUT" records_per_s)
echo "http durable collects (8 clients, $(field "$OUT" records) records): $RATE records/s" \
  "| goal 2000: $(ratio "$RATE" 2000) | reference 151-256 in-process: $(ratio "$RATE" 256)-$(ratio "$RATE" 151)"

# 2. Bulk JSON-lines ingest.
"$BIN" --data-dir "$WORK/bulk" data init >/dev/null
"$LOAD" jsonl "$BULK_RECORDS" >"$WORK/bulk.jsonl"
START=$(date +%s.%N)
SUMMARY=$("$BIN" --data-dir "$WORK/bulk" data collect --collection default --collector text --jsonl "$WORK/bulk.jsonl")
END=$(date +%s.%N)
BULK_RATE=$(python3 -c 'import sys; print(f"{int(sys.argv[1])/(float(sys.argv[3])-float(sys.argv[2])):.1f}")' "$(field "$SUMMARY" inserted)" "$START" "$END")
echo "bulk --jsonl ingest ($(field "$SUMMARY" inserted) records): $BULK_RATE records/s | goal 50000: $(ratio "$BULK_RATE" 50000)"

# 3. Query latency over HTTP at BULK_RECORDS records.
start_server "$WORK/bulk"
SEL=$("$LOAD" query "$URL" BENCH_TOKEN "token$((BULK_RECORDS / 2))" 2000)
ALL=$("$LOAD" query "$URL" BENCH_TOKEN "shared words" 100)
stop_server
echo "selective text query ($(field "$SEL" hits) hit): p50 $(field "$SEL" p50_ms) ms, p99 $(field "$SEL" p99_ms) ms" \
  "| goal p50 0.5 ms: $(ratio 0.5 "$(field "$SEL" p50_ms)") | reference ~1 ms: $(ratio 1 "$(field "$SEL" p50_ms)") (higher is better)"
echo "all-match text query ($(field "$ALL" hits) hits of $BULK_RECORDS): p50 $(field "$ALL" p50_ms) ms, p99 $(field "$ALL" p99_ms) ms"
