#!/usr/bin/env bash
# Keep-alive vs fresh-connection latency of a ~4 KB answer (a text query
# with 7 hits) from `agent-task serve` (release build, loopback only).
# Each kept-alive figure is printed next to its anchor, the same request on
# a fresh connection in the same round, as a ratio: a ratio far above 1 is
# the small-write stall (Nagle against delayed ACK) that the tiny_http
# server had. BASELINE_BIN=PATH also runs another agent-task binary (for
# instance a build from before the hyper server), interleaved round by
# round with this one, on a copy of the same data.
# Not part of the test command. Usage: scripts/bench-http.sh [REQUESTS_PER_ROUND] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
PER=${1:-50}
ROUNDS=${2:-6}
cargo build --release --locked --quiet --bin agent-task
BIN=$PWD/target/release/agent-task
BASELINE_BIN=${BASELINE_BIN:-}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
TOKEN=bench-http-$RANDOM$RANDOM

# Twenty small text records; the query below answers seven of them (~4 KB).
"$BIN" --data-dir "$WORK/seed" data init >/dev/null
for i in $(seq 1 20); do
  "$BIN" --data-dir "$WORK/seed" data collect --collection default --collector text \
    --input "{\"text\":\"benchmark record $i: the quick brown fox jumps over the lazy dog\"}" >/dev/null
done
QUERY='{"text":"fox","limit":7}'

start() { # $1 = name, $2 = binary; sets URL_<name>
  cp -a "$WORK/seed" "$WORK/$1"
  AGENT_TASK_NODE_TOKEN=$TOKEN "$2" --data-dir "$WORK/$1" serve --bind 127.0.0.1:0 >"$WORK/$1.out" 2>/dev/null &
  PIDS+=($!)
  for _ in $(seq 1 200); do
    if [ -s "$WORK/$1.out" ]; then break; fi
    sleep 0.05
  done
  printf -v "URL_$1" '%s' "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listening"])' "$WORK/$1.out")"
}

# One curl run of PER transfers; mode keep = one kept-alive connection,
# fresh = `Connection: close`, a new connection per transfer. Appends one
# time_total (ms) per transfer to $WORK/<name>.<mode>, checking that keep
# opened one connection and fresh opened one per transfer.
run() { # $1 = name, $2 = mode
  local url_var="URL_$1" url args=() extra=()
  url=${!url_var}/v1/data/query
  for _ in $(seq 1 "$PER"); do args+=(-o /dev/null "$url"); done
  if [ "$2" = fresh ]; then extra=(-H 'Connection: close'); fi
  curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$QUERY" \
    "${extra[@]}" -w '%{http_code} %{num_connects} %{size_download} %{time_total}\n' "${args[@]}" |
    python3 -c '
import sys
mode, out = sys.argv[1], sys.argv[2]
rows = [l.split() for l in sys.stdin if l.strip()]
assert all(r[0] == "200" for r in rows), rows[:3]
conns = sum(int(r[1]) for r in rows)
assert conns == (1 if mode == "keep" else len(rows)), (mode, conns)
with open(out, "a") as f:
    for r in rows:
        f.write(f"{float(r[3]) * 1000:.4f} {r[2]}\n")
' "$2" "$WORK/$1.$2"
}

NAMES=(new)
start new "$BIN"
if [ -n "$BASELINE_BIN" ]; then
  NAMES+=(baseline)
  start baseline "$BASELINE_BIN"
fi
for name in "${NAMES[@]}"; do run "$name" keep; run "$name" fresh; : >"$WORK/$name.keep"; : >"$WORK/$name.fresh"; done # warm-up
for _ in $(seq 1 "$ROUNDS"); do
  for name in "${NAMES[@]}"; do
    run "$name" keep
    run "$name" fresh
  done
done

echo "machine: $(nproc) cores, $(uname -sr); $((PER * ROUNDS)) requests per figure, $ROUNDS interleaved rounds"
for name in "${NAMES[@]}"; do
  bin=$BIN
  if [ "$name" = baseline ]; then bin=$BASELINE_BIN; fi
  python3 - "$WORK/$name.keep" "$WORK/$name.fresh" "$name" "$bin" <<'EOF'
import sys, statistics
def load(p):
    rows = [l.split() for l in open(p)]
    return sorted(float(r[0]) for r in rows), int(rows[0][1])
keep, size = load(sys.argv[1])
fresh, _ = load(sys.argv[2])
def q(v, p):
    return v[min(len(v) - 1, int(p * len(v)))]
km, fm = statistics.median(keep), statistics.median(fresh)
print(f"{sys.argv[3]:>8} ({sys.argv[4]}): {size}-byte answer | kept-alive median {km:.3f} ms (p90 {q(keep, .9):.3f})"
      f" | fresh connection median {fm:.3f} ms (p90 {q(fresh, .9):.3f}) | kept-alive / fresh: {km / fm:.2f}x")
EOF
done
