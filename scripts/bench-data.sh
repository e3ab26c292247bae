#!/usr/bin/env bash
# Data-node benchmark (release build, fresh data dirs, loopback only).
# Prints, in one run, each figure next to its anchor or goal:
#   1. bulk `data collect --jsonl` of BULK_RECORDS short and ~1 KB records, next to
#      scripts/ingest-probe.rs (the same rows in one transaction, SQLite only), as a ratio,
#      and next to the probe in transactions of the ingest's batch size (20,000: with ~1 KB
#      records one transaction outgrows the page cache and spills, so the one-transaction
#      probe can be slower than the ingest); runs interleaved ROUNDS times, medians
#   2. peak RSS of a RSS_RECORDS-record bulk ingest
#   3. query p50/p99 over HTTP at BULK_RECORDS records: selective, all-match and `where`
#      (metadata, content, text + metadata), on kept-alive and on fresh connections
#   4. durable single-record collects over HTTP from 8 clients (group commit), next to the
#      ceiling the file system's fsync latency (measured in the same run) sets for 8 clients,
#      and from 32 clients; each run also prints the CPU serve and the load generator spent
#      per record (serve's from /proc/PID/stat, the generator's its own)
# Not part of the test command.
# Usage: scripts/bench-data.sh [BULK_RECORDS] [HTTP_RECORDS] [RSS_RECORDS]   (env ROUNDS, default 3)
#   ONLY=http: part 4 alone (the HTTP collects and the fsync anchor); ONLY=bulk: part 1 alone;
#   WORKERS: serve's --workers (16); LOADGEN=threads: the earlier load generator (a thread per
#   client with ureq) instead of scripts/data-load.rs's hyper client; SERVE_BIN: the
#   agent-task binary to serve with (default this tree's release build)
set -euo pipefail
cd "$(dirname "$0")/.."
BULK_RECORDS=${1:-100000}
HTTP_RECORDS=${2:-20000}
RSS_RECORDS=${3:-1000000}
ROUNDS=${ROUNDS:-3}
cargo build --release --locked --quiet --bin agent-task --example data-load --example ingest-probe
BIN=${SERVE_BIN:-$PWD/target/release/agent-task}
LOAD=$PWD/target/release/examples/data-load
PROBE=$PWD/target/release/examples/ingest-probe
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
export BENCH_TOKEN=bench-token-$RANDOM$RANDOM

start_server() { # $1 = data dir
  AGENT_TASK_NODE_TOKEN=$BENCH_TOKEN "$BIN" --data-dir "$1" serve --bind 127.0.0.1:0 --workers "${WORKERS:-16}" >"$WORK/serve.out" 2>"$WORK/serve.err" &
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
median() { python3 -c 'import statistics,sys; print(f"{statistics.median(map(float, sys.argv[1:])):.0f}")' "$@"; }
now() { date +%s.%N; }

echo "machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${ONLY:-all}" != http ]; then
# 1. Bulk ingest next to the ceiling probe, interleaved.
"$LOAD" jsonl "$BULK_RECORDS" short >"$WORK/short.jsonl"
"$LOAD" jsonl "$BULK_RECORDS" kb >"$WORK/kb.jsonl"
declare -A RATES
for round in $(seq 1 "$ROUNDS"); do
  for kind in short kb; do
    rm -rf "$WORK/probe" && mkdir -m 700 "$WORK/probe"
    P=$("$PROBE" "$WORK/probe" "$kind" "$BULK_RECORDS")
    RATES[probe_$kind]+="$(field "$P" records_per_s) "
    rm -rf "$WORK/probe" && mkdir -m 700 "$WORK/probe"
    P=$("$PROBE" "$WORK/probe" "$kind" "$BULK_RECORDS" 20000)
    RATES[batched_$kind]+="$(field "$P" records_per_s) "
    rm -rf "$WORK/bulk-$kind"
    "$BIN" --data-dir "$WORK/bulk-$kind" data init >/dev/null
    START=$(now)
    S=$("$BIN" --data-dir "$WORK/bulk-$kind" data collect --collection default --collector text \
      --jsonl "$WORK/$kind.jsonl" 2>/dev/null)
    END=$(now)
    RATES[ingest_$kind]+="$(python3 -c 'import sys; print(int(sys.argv[1])/(float(sys.argv[3])-float(sys.argv[2])))' \
      "$(field "$S" inserted)" "$START" "$END") "
  done
done
rm -rf "$WORK/probe"
for kind in short kb; do
  # shellcheck disable=SC2086
  PR=$(median ${RATES[probe_$kind]})
  # shellcheck disable=SC2086
  IR=$(median ${RATES[ingest_$kind]})
  # shellcheck disable=SC2086
  BR=$(median ${RATES[batched_$kind]})
  GOAL=""
  if [ "$kind" = short ]; then GOAL=" | goal 50000: $(ratio "$IR" 50000)"; fi
  echo "bulk --jsonl ingest, $BULK_RECORDS $kind records (median of $ROUNDS): $IR records/s" \
    "| ceiling probe $PR records/s: $(ratio "$IR" "$PR") (goal 0.60x)$GOAL" \
    "| probe in batches of 20000: $BR records/s: $(ratio "$IR" "$BR")"
done
rm -rf "$WORK/bulk-kb"
if [ "${ONLY:-all}" = bulk ]; then
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

# 2. Peak RSS of a large ingest.
"$LOAD" jsonl "$RSS_RECORDS" short >"$WORK/rss.jsonl"
"$BIN" --data-dir "$WORK/rss" data init >/dev/null
RSS=$(python3 - "$BIN" "$WORK/rss" "$WORK/rss.jsonl" <<'EOF'
import json, resource, subprocess, sys, time
t = time.monotonic()
out = subprocess.run([sys.argv[1], "--data-dir", sys.argv[2], "data", "collect", "--collection", "default",
                      "--collector", "text", "--jsonl", sys.argv[3]], capture_output=True, check=True)
secs = time.monotonic() - t
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"inserted": json.loads(out.stdout)["inserted"], "mib": peak_kib / 1024, "rate": json.loads(out.stdout)["inserted"] / secs}))
EOF
)
echo "bulk ingest of $(field "$RSS" inserted) records: peak RSS $(python3 -c 'import sys; print(f"{float(sys.argv[1]):.0f}")' "$(field "$RSS" mib)") MiB" \
  "| goal < 256 MiB | $(python3 -c 'import sys; print(f"{float(sys.argv[1]):.0f}")' "$(field "$RSS" rate)") records/s"
rm -rf "$WORK/rss" "$WORK/rss.jsonl"

# 3. Query latency over HTTP at BULK_RECORDS records (the short corpus).
start_server "$WORK/bulk-short"
query_line() { # $1 label, $2 body, $3 n
  local ka fr
  ka=$("$LOAD" query "$URL" BENCH_TOKEN "$2" "$3")
  fr=$("$LOAD" query "$URL" BENCH_TOKEN "$2" "$3" fresh)
  echo "$1 ($(field "$ka" hits) hits): kept-alive p50 $(field "$ka" p50_ms) ms p99 $(field "$ka" p99_ms) ms," \
    "fresh p50 $(field "$fr" p50_ms) ms p99 $(field "$fr" p99_ms) ms${4:-}"
}
query_line "selective text query" "{\"text\":\"token$((BULK_RECORDS / 2))\"}" 2000 " | goal p50 0.5 ms"
query_line "all-match text query, limit 20" '{"text":"shared words","limit":20}' 500 " | goal p50 10 ms"
query_line "all-match one-term text query" '{"text":"urn","limit":20}' 500 ""
query_line "where metadata, one match (newest-first scan)" "{\"where\":{\"metadata\":{\"i\":$((BULK_RECORDS / 2))}}}" 20 ""
query_line "where content, every record matches" '{"where":{"content":{"media_type":"text/plain"}},"limit":20}' 500 ""
query_line "text all-match + where metadata, 1 match near the top" '{"text":"shared words","where":{"metadata":{"i":100}}}' 200 ""
stop_server

fi
# 4. Durable single-record collects over HTTP (group commit).
# The anchor: every acknowledged collect waits for a WAL fsync that starts
# after it arrived, so 8 closed-loop clients cannot pass 8 / (mean fsync
# time) records/s. Measured on the data dirs' file system, like the WAL's
# (64 KiB written, then fsync, 200 times), right before and right after
# the 8-client run: this machine's fsync latency moves by 20x within
# minutes (0.17-4 ms), and a ceiling measured at another time says little.
fsync_probe() {
  python3 - "$WORK" <<'EOF'
import os, statistics, sys, time
p = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
ts = []
for i in range(200):
    os.pwrite(fd, b"x" * 65536, (i % 64) * 65536)
    t = time.perf_counter(); os.fsync(fd); ts.append(time.perf_counter() - t)
os.close(fd); os.unlink(p)
print(f"{statistics.mean(ts) * 1e3:.3f} {statistics.median(ts) * 1e3:.3f}")
EOF
}
# serve's CPU seconds so far (utime + stime).
cpu_of() { python3 -c 'import os,sys; f=open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")",1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK"))' "$1"; }
# One collect run against the server started on $1: sets OUT and CPU_LINE.
collect_run() { # $1 data dir, $2 clients
  "$BIN" --data-dir "$1" data init >/dev/null
  start_server "$1"
  local before after
  before=$(cpu_of "$SERVER_PID")
  OUT=$("$LOAD" collect "$URL" BENCH_TOKEN "$2" "$HTTP_RECORDS")
  after=$(cpu_of "$SERVER_PID")
  stop_server
  CPU_LINE=$(python3 - "$OUT" "$before" "$after" <<'EOF'
import json, sys
o = json.loads(sys.argv[1])
n = max(o["records"], 1)
serve = (float(sys.argv[3]) - float(sys.argv[2])) / n * 1e3
load = o["load_cpu_s"] / n * 1e3
print(f"serve CPU {serve:.3f} ms/record, load CPU {load:.3f} ms/record ({o['loadgen']}), errors {json.dumps(o['errors'])}")
EOF
)
}
FSYNC_BEFORE=$(fsync_probe)
collect_run "$WORK/http" 8
FSYNC_AFTER=$(fsync_probe)
RATE=$(field "$OUT" records_per_s)
FMEAN=$(python3 -c 'import sys; print(f"{(float(sys.argv[1]) + float(sys.argv[2])) / 2:.3f}")' "${FSYNC_BEFORE% *}" "${FSYNC_AFTER% *}")
CEIL=$(python3 -c 'import sys; print(f"{8 / (float(sys.argv[1]) / 1000):.0f}")' "$FMEAN")
echo "http durable collects (8 clients, $(field "$OUT" records) records): $RATE records/s" \
  "| goal 4000: $(ratio "$RATE" 4000) | fsync mean $FMEAN ms (before ${FSYNC_BEFORE% *} ms p50 ${FSYNC_BEFORE#* } ms," \
  "after ${FSYNC_AFTER% *} ms p50 ${FSYNC_AFTER#* } ms): 8-client ceiling $CEIL records/s: $(ratio "$RATE" "$CEIL")" \
  "| reference 151-256 in-process: $(ratio "$RATE" 256)-$(ratio "$RATE" 151)"
echo "  $CPU_LINE"
# Past 8 clients the batches grow and the server's CPU per record bounds it.
collect_run "$WORK/http32" 32
echo "http durable collects (32 clients, $(field "$OUT" records) records): $(field "$OUT" records_per_s) records/s" \
  "| 32-client fsync ceiling $(python3 -c 'import sys; print(f"{32 / (float(sys.argv[1]) / 1000):.0f}")' "$FMEAN") records/s"
echo "  $CPU_LINE"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
