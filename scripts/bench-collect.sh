#!/usr/bin/env bash
# Collector overhead and qualification latency, interleaved with cmdbench.
#
# 1. `agent-task collect` around a trivial recipe (`true`) in bwrap, next to
#    the bare `bwrap <pinned args> -- true` (the anchor). Each collect run
#    needs its own claimed execution, so RUNS+WARMUP Changes are prepared
#    first (one descriptor per line). Overhead = median collect wall time
#    minus the median in-sandbox duration recorded by collect itself.
# 2. `agent-task qualify` on a Change with 10 succeeded command tasks and a
#    receipt (every transfer re-verified), next to the floor probe.
# AGENT_TASK_BIN runs another build of agent-task (a before/after comparison).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-2}
QRUNS=${QRUNS:-100}
cargo build --release --locked --quiet --bin agent-task --example floor-probe --example cmdbench
bin=${AGENT_TASK_BIN:-$PWD/target/release/agent-task}
probe=$PWD/target/release/examples/floor-probe
bench=$PWD/target/release/examples/cmdbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AGENT_TASK_DATA_DIR="$work/data"
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

# A workflow with N command steps running `true`.
workflow() {
  python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
steps = [{"id": f"t{i}", "action_class": "command", "required": True,
          "criteria": [{"id": "ok", "required": True, "text": "exits 0"}],
          "recipe": {"argv": ["true"], "timeout_ms": 60000, "network": False}} for i in range(n)]
print(json.dumps({"schema": "agent-task.workflow/v1", "name": f"bench{n}", "steps": steps}))
PY
}
"$bin" init >/dev/null
workflow 1 > "$work/one.json"
workflow 10 > "$work/ten.json"
"$bin" repo add demo/one --source fixtures/repos/basic >/dev/null
"$bin" repo add demo/ten --source fixtures/repos/basic >/dev/null
"$bin" requirement install --repo demo/one --profile default --file "$work/one.json" >/dev/null
"$bin" requirement install --repo demo/ten --profile default --file "$work/ten.json" >/dev/null
"$bin" token issue --owner bench --agent a1 --out "$work/token" >/dev/null
pk=$("$bin" keygen --collector-dir "$work/c" | j '["public_key"]')
enroll() {
  reg=$("$bin" enroll --repo "$1" --profile default --step "$2" --executor bench --public-key "$pk" | j '["registration_id"]')
  "$bin" profile install --registration "$reg" --step "$2" --runtime bwrap >/dev/null
}
enroll demo/one t0
for i in $(seq 0 9); do enroll demo/ten "t$i"; done
export AGENT_TASK_TOKEN_FILE="$work/token"

echo "# preparing $((RUNS + WARMUP)) claimed executions" >&2
: > "$work/descs"
for i in $(seq 1 $((RUNS + WARMUP))); do
  mkdir -p "$work/ws$i"; echo "$i" > "$work/ws$i/n.txt"
  "$bin" change open --repo demo/one --profile default --workspace "$work/ws$i" >/dev/null
  task=$("$bin" checkpoint --workspace "$work/ws$i" | j '["tasks"][0]["task_id"]')
  "$bin" collector-claim "$task" --descriptor-out "$work/d$i.json" >/dev/null
  echo "$work/d$i.json" >> "$work/descs"
done

# The bare sandbox: the pinned bwrap arguments with a fresh snapshot and scratch.
mkdir -m 700 "$work/snap" "$work/scratch"
mapfile -t bw < <("$bin" runtime probe --runtime bwrap | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["program"])
for a in d["pinned_args"]:
    print(a.replace("{snapshot}", sys.argv[1]).replace("{scratch}", sys.argv[2]))
for a in ["--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--", "true"]:
    print(a)
' "$work/snap" "$work/scratch")

echo "# collect overhead, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$bench" --runs "$RUNS" --warmup "$WARMUP" --json \
  --label "bwrap true (anchor)" -- "${bw[@]}" \
  --label "agent-task collect (true)" -- "$bin" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "{line:$work/descs}" --collector-dir "$work/c" \
  > "$work/collect.json"
python3 - "$work/collect.json" "$work/c" "$WARMUP" <<'PY'
import json, sys, glob, statistics
def sealed_json(p):
    # a sealed collector file: "ATSEAL1\n", u64be length, body, 32-byte MAC (not checked here)
    b = open(p, "rb").read()
    n = int.from_bytes(b[8:16], "big")
    return json.loads(b[16:16 + n])
rows = json.load(open(sys.argv[1]))
durs = sorted(sealed_json(p)["run"]["duration_ms"] for p in glob.glob(sys.argv[2] + "/executions/*/record.sealed"))
for r in rows:
    print(f'{r["label"]:<28} median {r["median_ms"]:8.2f} ms  p10 {r["p10_ms"]:8.2f}  p90 {r["p90_ms"]:8.2f}  ratio {r["ratio_to_anchor"]:.2f}x')
own = statistics.median(durs)
total = rows[1]["median_ms"]
print(f'in-sandbox command time recorded by collect: median {own:.2f} ms over {len(durs)} runs')
print(f'collect overhead (median total - median own time): {total - own:.2f} ms; bare bwrap true: {rows[0]["median_ms"]:.2f} ms')
PY

echo "# qualify on a change with 10 succeeded command tasks and a receipt"
mkdir -p "$work/wq"; echo q > "$work/wq/n.txt"
ch=$("$bin" change open --repo demo/ten --profile default --workspace "$work/wq" | j '["change_id"]')
"$bin" checkpoint --workspace "$work/wq" | python3 -c 'import json,sys; [print(t["task_id"]) for t in json.load(sys.stdin)["tasks"]]' > "$work/tasks"
n=0
while read -r task; do
  n=$((n + 1))
  "$bin" collector-claim "$task" --descriptor-out "$work/q$n.json" >/dev/null
  "$bin" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$work/q$n.json" --collector-dir "$work/c" >/dev/null
done < "$work/tasks"
"$bin" finalize --change "$ch" >/dev/null
test "$("$bin" qualify --change "$ch" | j '["qualified"]')" = True
mkdir -m 700 "$work/probe"
"$bench" --runs "$QRUNS" \
  --label "floor probe (anchor)" -- "$probe" "$work/probe" \
  --label "agent-task qualify (10)" -- "$bin" qualify --change "$ch"
