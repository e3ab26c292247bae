#!/usr/bin/env bash
# Authority capacity (issue #16): AGENTS (default "1 16 64 256") agents
# against one `agent-task serve --workers 16 --workspace-config` over
# loopback, each on its own kept-alive connection with its own token and
# claimed attempt, looping heartbeat (a durable write) then qualification (a
# read) for DURATION seconds (default 10) per agent count. Prints, per count, durable
# mutations/s and heartbeat and qualification p50/p99, next to the anchors
# measured in the same run: the single-agent CLI `claim` (one process, one
# durable mutation) and the floor probe (lock + SQLite WAL open + one
# committed row), as ratios, and the issue's goals.
# Release build, fresh data dir, loopback only, bounded; not part of the test
# command. Each row also gives the CPU time (user + system) serve and the
# load generator spent per agent iteration (one heartbeat and one
# qualification): a cost that does not depend on how busy the machine is. The writer's counters (serve --writer-stats-ms) give each row's
# batches and mean batch size. PERF_OUT=FILE records `perf record -g` of
# serve during the row of PERF_AGENTS agents (default 64; PERF_CALLGRAPH
# replaces `-g`, e.g. "--call-graph dwarf" for a build without frame
# pointers); AGENT_TASK_BIN
# runs another build of agent-task (a before/after comparison).
# LOADGEN (default "hyper") picks the load generator, or several for one run
# (a row each, against the same server): `hyper`, every agent a task on one
# single-threaded hyper client runtime (the lean instrument), or `threads`,
# one OS thread per agent with ureq (the earlier one). The load generator's
# CPU per iteration is printed for each, since on this machine it shares the
# cores serve needs. WORKERS (default 16) and COMPUTE (default: serve's own,
# one per core) set serve's --workers and --compute-threads.
# BENCH_CALLGRIND_DIR=DIR runs serve under callgrind (valgrind) and prints,
# per row, serve's instructions per agent iteration, counted during the
# row only: a figure that does not move with the machine's load (this VM
# has no hardware counters for `perf stat`). Use few agents and a short
# DURATION: serve is about 50 times slower there.
# At 64 agents it also prints serve's CPU over the load generator's: the
# load generator is the same program in every run, so the ratio compares
# builds measured minutes apart on a machine whose speed drifts.
# Usage: [AGENTS="1 16 64"] [LOADGEN="hyper threads"] [DURATION=10] [RUNS=50] [PERF_OUT=perf.data] scripts/bench-authority.sh
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${AGENTS:-1 16 64 256}
SECONDS_PER=${DURATION:-10}
RUNS=${RUNS:-50}
WARMUP=5
WORKERS=${WORKERS:-16}
LOADGEN=${LOADGEN:-hyper}
for lg in $LOADGEN; do
  case $lg in hyper | threads) ;; *) echo "LOADGEN: hyper or threads, not $lg" >&2; exit 2 ;; esac
done
cargo build --release --locked --quiet --bin agent-task --example floor-probe --example cmdbench --example authority-load
bin=${AGENT_TASK_BIN:-$PWD/target/release/agent-task}
PERF_AGENTS=${PERF_AGENTS:-64}
# The writer-stats flag, when this build has it.
stats_flag=()
if "$bin" serve --help 2>/dev/null | grep -q -- --writer-stats-ms; then stats_flag=(--writer-stats-ms 100); fi
# The compute pool's size, when asked for and this build has the flag.
if [ -n "${COMPUTE:-}" ] && "$bin" serve --help 2>/dev/null | grep -q -- --compute-threads; then
  stats_flag+=(--compute-threads "$COMPUTE")
fi
probe=$PWD/target/release/examples/floor-probe
bench=$PWD/target/release/examples/cmdbench
load=$PWD/target/release/examples/authority-load
fixtures=$PWD/fixtures
OPS=/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks
work=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
D=$work/data
at() { "$bin" --data-dir "$D" "$@"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }
max_agents=0
for n in $AGENTS; do
  if [ "$n" -gt "$max_agents" ]; then max_agents=$n; fi
done

echo "# authority capacity, $(nproc) cores, $(uname -sr), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# load:$(uptime | sed 's/.*load average//')"
at init >/dev/null
cp -r "$fixtures/repos/basic" "$work/source"
at repo add demo/basic --source "$work/source" >/dev/null
at requirement install --repo demo/basic --profile default --file "$fixtures/workflows/basic.json" >/dev/null

# One Change with one pending `tests` task per agent, each agent its own
# token; then RUNS+WARMUP more for the CLI claim anchor (a fresh task a run).
open_change() { # $1 = name, $2 = token file; prints CHANGE_ID TASK_ID
  local ws=$work/ws/$1
  mkdir -p "$ws"
  cp -r "$fixtures/repos/basic/." "$ws/"
  printf 'echo %s\n' "$1" >"$ws/test.sh"
  local ch task
  ch=$("$bin" --data-dir "$D" --token-file "$2" change open --repo demo/basic --profile default --workspace "$ws" | json "d['change_id']")
  task=$("$bin" --data-dir "$D" --token-file "$2" checkpoint --workspace "$ws" | json "[t['task_id'] for t in d['tasks'] if t['step_id']=='tests'][0]")
  echo "$ch $task"
}
: >"$work/agents.txt"
for i in $(seq 1 "$max_agents"); do
  at token issue --owner bench --agent "agent-$i" --out "$work/token-$i" >/dev/null
  echo "$work/token-$i $(open_change "agent-$i" "$work/token-$i")" >>"$work/agents.txt"
done
at token issue --owner bench --agent cli --out "$work/token-cli" >/dev/null
: >"$work/cli-claims.txt"
for i in $(seq 1 $((RUNS + WARMUP))); do
  open_change "cli-$i" "$work/token-cli" | cut -d' ' -f2 >>"$work/cli-claims.txt"
done
first_change=$(head -1 "$work/agents.txt" | cut -d' ' -f2)

# Anchors, interleaved: the floor probe and the single-agent CLI claim.
mkdir -m 700 "$work/probe"
"$bench" --json --runs "$RUNS" --warmup "$WARMUP" \
  --label "floor probe" -- "$probe" "$work/probe" \
  --label "CLI claim" -- "$bin" --data-dir "$D" --token-file "$work/token-cli" claim "{line:$work/cli-claims.txt}" --request-id "cli-{i}" --lease-ms 60000 \
  >"$work/anchors.json"

digest=$("$bin" --data-dir "$D" --token-file "$work/token-1" requirements --change "$first_change" | json "d['requirement_digest']")
python3 - "$D" "$digest" >"$work/workspace.json" <<'PY'
import json, sys
print(json.dumps({"version": 1, "agent_task_profiles": [{
    "repository_id": "demo-basic", "profile_id": "default", "native_repository": "demo/basic",
    "data_dir": sys.argv[1], "target": "main", "requirement_digest": sys.argv[2]}]}))
PY
wrap=()
if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then
  mkdir -p "$BENCH_CALLGRIND_DIR"
  wrap=(valgrind --tool=callgrind --callgrind-out-file="$BENCH_CALLGRIND_DIR/serve.out")
fi
"${wrap[@]}" "$bin" --data-dir "$D" serve --bind 127.0.0.1:0 --workers "$WORKERS" --workspace-config "$work/workspace.json" "${stats_flag[@]}" \
  >"$work/serve.out" 2>"$work/serve.err" &
SERVER_PID=$!
for _ in $(seq 1 1200); do
  if [ -s "$work/serve.out" ]; then break; fi
  sleep 0.05
done
URL=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' "$work/serve.out")

"$load" claim "$URL" "$OPS" "$work/agents.txt" >"$work/attempts.txt"
: >"$work/results.jsonl"
serve_cpu() { # serve's user+system CPU so far, in clock ticks
  awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"
}
last_stats() { # the writer's latest counters, as JSON ({} without the flag)
  sleep 0.3
  { grep '^{"writer_stats"' "$work/serve.err" || true; } | tail -1 | python3 -c 'import json,sys; l=sys.stdin.read().strip(); print(json.dumps(json.loads(l)["writer_stats"]) if l else "{}")'
}
before=$(last_stats)
for n in $AGENTS; do
  for lg in $LOADGEN; do
  perf_pid=""
  if [ -n "${PERF_OUT:-}" ] && [ "$n" = "$PERF_AGENTS" ]; then
    (sleep 1; exec perf record ${PERF_CALLGRAPH:--g} -F 499 -o "$PERF_OUT" -p "$SERVER_PID" -- sleep $((SECONDS_PER - 2))) >/dev/null 2>&1 &
    perf_pid=$!
  fi
  mode=loop
  if [ "$lg" = threads ]; then mode=loop-threads; fi
  if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then callgrind_control -z "$SERVER_PID" >/dev/null; fi
  cpu0=$(serve_cpu)
  row=$(/usr/bin/time -f '%U %S' -o "$work/load-cpu" "$load" "$mode" "$URL" "$OPS" "$work/attempts.txt" "$n" "$SECONDS_PER" "hb-$n-$lg")
  cpu1=$(serve_cpu)
  if [ -n "${BENCH_CALLGRIND_DIR:-}" ]; then
    callgrind_control -d "$SERVER_PID" >/dev/null
    f=$(ls -t "$BENCH_CALLGRIND_DIR"/serve.out* | head -1)
    python3 -c 'import json,sys
r=json.loads(sys.argv[1]); tot=0
for line in open(sys.argv[2]):
    if line.startswith(("summary:", "totals:")): tot=max(tot,int(line.split()[1]))
n,it=r["agents"],r["heartbeats"]
print(f"{n} agents: serve {tot/max(1,it)/1e3:.1f} k instructions per iteration ({tot} over {it} iterations, callgrind: {sys.argv[2]})")' "$row" "$f"
  fi
  if [ -n "$perf_pid" ]; then wait "$perf_pid" || true; fi
  after=$(last_stats)
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); a=json.loads(sys.argv[3])
it=max(1, r["heartbeats"])
r["loadgen"]=sys.argv[8]
r["serve_cpu_ms"]=round((int(sys.argv[5])-int(sys.argv[4]))*1000/int(sys.argv[6])/it, 3)
u,s_=open(sys.argv[7]).read().split()[-2:]; r["load_cpu_ms"]=round((float(u)+float(s_))*1000/it, 3)
if a:
    r["batches"]=a["batches"]-b.get("batches",0); m=a["mutations"]-b.get("mutations",0)
    r["mean_batch"]=round(m/r["batches"],2) if r["batches"] else 0.0; r["largest_batch"]=a["largest_batch"]
print(json.dumps(r))' "$row" "$before" "$after" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" "$work/load-cpu" "$lg" >>"$work/results.jsonl"
  before=$after
  done
done

python3 - "$work/anchors.json" "$work/results.jsonl" "$WORKERS" "$SECONDS_PER" <<'PY'
import json, sys
anchors = {a["label"]: a for a in json.load(open(sys.argv[1]))}
floor = anchors["floor probe"]["median_ms"]
claim = anchors["CLI claim"]["median_ms"]
claim_rate = 1000.0 / claim
print(f"anchors ({anchors['floor probe']['runs']} interleaved runs): floor probe median {floor:.3f} ms"
      f" (p99 {anchors['floor probe']['p99_ms']:.3f}); single-agent CLI claim median {claim:.3f} ms"
      f" (p99 {anchors['CLI claim']['p99_ms']:.3f}) = {claim_rate:.1f} durable mutations/s")
print(f"serve --workers {sys.argv[3]}, {sys.argv[4]} s per row, heartbeat then qualification per agent iteration")
print()
print("| agents | load | mutations/s | x CLI claim rate | heartbeat p50 | p99 | p50 / floor | qualification p50 | p99 | batches | mean batch | serve CPU / iteration | load CPU / iteration | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
rows = [json.loads(l) for l in open(sys.argv[2])]
for r in rows:
    errs = ", ".join(f"{k} x{v}" for k, v in r["errors"].items()) or "none"
    print(f"| {r['agents']} | {r['loadgen']} | {r['heartbeats_per_s']:.1f} | {r['heartbeats_per_s'] / claim_rate:.2f}x"
          f" | {r['heartbeat_p50_ms']:.2f} ms | {r['heartbeat_p99_ms']:.2f} ms | {r['heartbeat_p50_ms'] / floor:.2f}x"
          f" | {r['qualification_p50_ms']:.2f} ms | {r['qualification_p99_ms']:.2f} ms"
          f" | {r.get('batches', 'n/a')} | {r.get('mean_batch', 'n/a')}"
          f" | {r['serve_cpu_ms']:.3f} ms | {r['load_cpu_ms']:.3f} ms | {errs} |")
print()
for r in rows:
    if r["agents"] == 64:
        ok = lambda b: "met" if b else "NOT met"
        print(f"goals at 64 agents ({r['loadgen']} load): >= 2000 mutations/s: {r['heartbeats_per_s']:.1f} ({r['heartbeats_per_s'] / 2000:.2f}x, {ok(r['heartbeats_per_s'] >= 2000)});"
              f" heartbeat p99 <= 25 ms: {r['heartbeat_p99_ms']:.2f} ms ({ok(r['heartbeat_p99_ms'] <= 25)});"
              f" qualification p99 <= 10 ms: {r['qualification_p99_ms']:.2f} ms ({ok(r['qualification_p99_ms'] <= 10)});"
              f" serve CPU per iteration <= 0.15 ms (issue 34, goal 6): {r['serve_cpu_ms']:.3f} ms ({ok(r['serve_cpu_ms'] <= 0.15)})")
        if r["load_cpu_ms"] > 0:
            # The load generator is the same program in every run: its CPU
            # per iteration moves with the machine's speed, not with serve.
            print(f"serve CPU over the load generator's ({r['loadgen']}): {r['serve_cpu_ms'] / r['load_cpu_ms']:.2f}"
                  " (compares builds across a machine whose speed drifts)")
    if r["agents"] == 256:
        total = sum(r["errors"].values())
        print(f"goal at 256 agents ({r['loadgen']} load): nothing errors: {total} errors ({'met' if total == 0 else 'NOT met'})")
PY
echo "# load at the end:$(uptime | sed 's/.*load average//')"
if grep -v '^{"writer_stats"' "$work/serve.err" | grep -qv '^workspace task endpoint:'; then
  echo "serve stderr:"
  grep -v '^{"writer_stats"' "$work/serve.err" | grep -v '^workspace task endpoint:' | head -20
fi
