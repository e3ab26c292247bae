#!/usr/bin/env bash
# agent-data-sync/v1 pull benchmark (release build, fresh data dirs, two
# `agent-task serve` nodes on loopback). Prints, next to its anchor measured
# in the same run:
#   the records/s of one durable pull of N records (with tombstones) from the
#   source node into the destination node through the destination's
#   POST /v1/data/sync/pull route (100-change pages, 100 pages per call, calls
#   repeated until has_more is false), against the records/s of ingesting the
#   same N records with `data collect --jsonl` into a fresh node.
# Then it checks that both nodes answer the same queries. Not part of the test
# command. Usage: scripts/bench-sync.sh [RECORDS] [TOMBSTONES]
# With BENCH_PERF_DIR=DIR (and `perf` installed) both servers are sampled
# during the pull into DIR/src.data and DIR/dst.data (with call graphs;
# `perf report -i DIR/dst.data`).
# The CPU per record is printed next to its floor: the cryptography the
# protocol requires per object (examples/sync-crypto-probe: ephemeral X25519
# key, two key agreements, HKDF, AES-GCM, two Ed25519 signatures and two
# strict verifications), times the objects pulled per record (changes plus
# the collection and control objects of every page).
# With BENCH_CALLGRIND_DIR=DIR (and valgrind installed) both servers run
# under callgrind, counting instructions during the pull only (zeroed before, dumped after), and the
# instructions per record of each are printed (use a small RECORDS: it is
# about 50 times slower); `callgrind_annotate DIR/dst.out` for the profile.
# AGENT_TASK_BIN=PATH runs another build of agent-task (an older commit, for
# before/after figures in one session); the probe is always this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${1:-10000}
TOMBSTONES=${2:-500}
cargo build --release --locked --quiet --bin agent-task --example sync-crypto-probe
BIN=${AGENT_TASK_BIN:-$PWD/target/release/agent-task}
PROBE=$PWD/target/release/examples/sync-crypto-probe
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
umask 077
py() { python3 -c "$@"; }
field() { py 'import json,sys; v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"; }
now() { date +%s.%N; }
rate() { py 'import sys; print(f"{int(sys.argv[1])/(float(sys.argv[3])-float(sys.argv[2])):.0f}")' "$1" "$2" "$3"; }

start() { # $1 = data dir, $2 = node bearer; sets URL
  local wrap=()
  if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then
    wrap=(valgrind --tool=callgrind --callgrind-out-file="$BENCH_CALLGRIND_DIR/$(basename "$1").out")
  fi
  AGENT_TASK_NODE_TOKEN=$2 "${wrap[@]}" "$BIN" --data-dir "$1" serve --bind 127.0.0.1:0 --workers 8 >"$1.out" 2>"$1.err" &
  PIDS+=($!)
  for _ in $(seq 1 1200); do [ -s "$1.out" ] && break; sleep 0.05; done
  URL=$(py 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' "$1.out")
}

[ -z "${BENCH_CALLGRIND_DIR:-}" ] || mkdir -p "$BENCH_CALLGRIND_DIR"
echo "machine: $(nproc) cores, $(uname -sr); binary $BIN"
py 'import json,sys
n=int(sys.argv[1])
for i in range(n):
    print(json.dumps({"text": f"record {i} about sync benchmarks and shared words token{i}", "external_id": f"e{i}", "metadata": {"i": i}}))' "$RECORDS" >"$WORK/records.jsonl"

# Anchor: bulk ingest of the same records into a fresh node.
"$BIN" --data-dir "$WORK/anchor" init >/dev/null
"$BIN" --data-dir "$WORK/anchor" data init >/dev/null
T0=$(now)
"$BIN" --data-dir "$WORK/anchor" data collect --collection default --collector text --jsonl "$WORK/records.jsonl" >/dev/null
T1=$(now)
ANCHOR=$(rate "$RECORDS" "$T0" "$T1")

# Source: the same records plus tombstones.
for n in src dst; do
  "$BIN" --data-dir "$WORK/$n" init >/dev/null
  "$BIN" --data-dir "$WORK/$n" data init >/dev/null
  "$BIN" --data-dir "$WORK/$n" sync keygen --id "did:example:bench-$n" >/dev/null
done
"$BIN" --data-dir "$WORK/src" data collect --collection default --collector text --jsonl "$WORK/records.jsonl" >/dev/null
SRC_TOKEN=src-node-$RANDOM$RANDOM
DST_TOKEN=dst-node-$RANDOM$RANDOM
start "$WORK/src" "$SRC_TOKEN"; SRC_URL=$URL
py 'import json,sys,urllib.request
url,tok,n=sys.argv[1],sys.argv[2],int(sys.argv[3])
req=lambda p,b=None: json.load(urllib.request.urlopen(urllib.request.Request(url+p, data=None if b is None else json.dumps(b).encode(), headers={"authorization":"Bearer "+tok,"content-type":"application/json"})))
ids=[]; cur=""
while True:
    page=req("/v1/data/changes?limit=1000"+("&cursor="+cur if cur else ""))
    ids += [c["record_id"] for c in page["changes"]]
    cur=page["cursor"]
    if not page["has_more"]: break
for rid in ids[:n]:
    req("/v1/data/records/%s/tombstone" % rid, {"reason": "bench"})' "$SRC_URL" "$SRC_TOKEN" "$TOMBSTONES"
printf 'bench-page-token-%s\n' "$RANDOM$RANDOM" >"$WORK/page.token"
RCPT=$("$BIN" --data-dir "$WORK/dst" sync identity)
"$BIN" --data-dir "$WORK/src" sync authority add --peer dst --bearer-file "$WORK/page.token" --collection default \
  --recipient-id "$(field "$RCPT" recipient.id)" --recipient-key "$(field "$RCPT" recipient.x25519_public_key)" >/dev/null
PUB=$("$BIN" --data-dir "$WORK/src" sync identity)
NODE=$("$BIN" --data-dir "$WORK/src" data manifest)
"$BIN" --data-dir "$WORK/dst" sync peer add --peer src --origin "$SRC_URL" --node-id "$(field "$NODE" node_id)" \
  --publisher-id "$(field "$PUB" publisher.id)" --publisher-key "$(field "$PUB" publisher.ed25519_public_key)" \
  --page-token-file "$WORK/page.token" >/dev/null
start "$WORK/dst" "$DST_TOKEN"; DST_URL=$URL
# user,system clock ticks of both servers (fields 14 and 15 of stat).
cpu_ticks() { awk '{u+=$14; s+=$15} END {print u "," s}' "/proc/${PIDS[0]}/stat" "/proc/${PIDS[1]}/stat"; }

PERF_PIDS=()
if [ -n "${BENCH_PERF_DIR:-}" ]; then
  mkdir -p "$BENCH_PERF_DIR"
  for i in 0 1; do
    n=$([ "$i" = 0 ] && echo src || echo dst)
    perf record -q -F 997 --call-graph dwarf,12288 -o "$BENCH_PERF_DIR/$n.data" -p "${PIDS[$i]}" 2>/dev/null &
    PERF_PIDS+=($!)
  done
  sleep 1
fi
if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then
  for p in "${PIDS[@]}"; do callgrind_control -z "$p" >/dev/null; done
fi
echo "load before the pull: $(uptime)"
C0=$(cpu_ticks)
T0=$(now)
RESULT=$(py 'import json,sys,urllib.request
url,tok=sys.argv[1],sys.argv[2]
tot={"pages_applied":0,"changes_applied":0,"records_inserted":0,"tombstones_applied":0}
while True:
    body={"protocol":"agent-data-sync/v1","peer_id":"src","collection_id":"default","limit":100,"max_pages":100}
    r=json.load(urllib.request.urlopen(urllib.request.Request(url+"/v1/data/sync/pull", data=json.dumps(body).encode(), headers={"authorization":"Bearer "+tok,"content-type":"application/json"}), timeout=600))
    for k in tot: tot[k]+=r[k]
    if not r["has_more"]: break
print(json.dumps(tot))' "$DST_URL" "$DST_TOKEN")
T1=$(now)
C1=$(cpu_ticks)
for p in "${PERF_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
INSERTED=$(field "$RESULT" records_inserted)
if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then
  for p in "${PIDS[@]}"; do callgrind_control -d "$p" >/dev/null; done
  for n in src dst; do
    f=$(ls -t "$BENCH_CALLGRIND_DIR/$n.out"* | head -1)
    py 'import sys
tot=0
for line in open(sys.argv[1]):
    if line.startswith(("summary:", "totals:")): tot=max(tot,int(line.split()[1]))
print(f"{sys.argv[2]}: {tot/int(sys.argv[3])/1e6:.3f} M instructions per record ({tot} in the pull, callgrind)")' "$f" "$n" "$INSERTED"
  done
fi
PULL=$(rate "$INSERTED" "$T0" "$T1")
echo "sync pull ($INSERTED records, $(field "$RESULT" tombstones_applied) tombstones, $(field "$RESULT" pages_applied) pages of 100 changes, durable apply): $PULL records/s"
echo "anchor: data collect --jsonl of the same $RECORDS records: $ANCHOR records/s"
FLOOR=$("$PROBE" 2000 | tail -1)
py 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); r=a/b; v="met" if r >= 0.5 else "NOT met"; print(f"pull / jsonl ingest = {r:.2f}x; goal >= 0.5x: {v}")' "$PULL" "$ANCHOR"
py 'import json,sys,os
(u0,s0),(u1,s1)=[map(int,a.split(",")) for a in sys.argv[1:3]]; n=int(sys.argv[3]); f=json.loads(sys.argv[4]); r=json.loads(sys.argv[5])
hz=os.sysconf("SC_CLK_TCK"); user,system=(u1-u0)/hz,(s1-s0)/hz; t=user+system; per=1000*t/n
objects=r["changes_applied"]+2*r["pages_applied"]
floor=f["total_us"]/1000*objects/n
print(f"cpu of both servers during the pull: {t:.2f} s, {user:.2f} s user + {system:.2f} s system ({objects} objects for {n} records)")
s,d,a=f["source_us"],f["destination_us"],f["total_us"]; v="met" if per <= 0.3 else "NOT met"
print(f"crypto floor per object (one thread): source {s:.1f} us + destination {d:.1f} us = {a:.1f} us")
print(f"CPU per record: {per:.3f} ms; crypto floor {floor:.3f} ms; ratio {per/floor:.2f}x; goal <= 0.3 ms: {v}")
print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")' "$C0" "$C1" "$INSERTED" "$FLOOR" "$RESULT"

# Both nodes answer the same queries (ids and order).
py 'import json,sys,urllib.request
def q(url,tok,body):
    r=json.load(urllib.request.urlopen(urllib.request.Request(url+"/v1/data/query", data=json.dumps(body).encode(), headers={"authorization":"Bearer "+tok,"content-type":"application/json"})))
    return [h["record"]["id"] for h in r["records"]]
a=(sys.argv[1],sys.argv[2]); b=(sys.argv[3],sys.argv[4])
for body in [{"text":"token7777","limit":10},{"text":"shared words","limit":50},{"where":{"metadata":{"i":42}}},{"limit":100}]:
    x,y=q(*a,body),q(*b,body)
    assert x==y, (body,x,y)
print("same answers on both nodes for 4 queries")' "$SRC_URL" "$SRC_TOKEN" "$DST_URL" "$DST_TOKEN"
