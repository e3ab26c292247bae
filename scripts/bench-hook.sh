#!/usr/bin/env bash
# Stop-hook and MCP latency, release build.
#
# 1. `task-stop` on clean workspaces of each size in SIZES (default
#    "10000 100000" files) whose Change is checkpointed but not qualified:
#    one read-only workspace scan against the checkpoint's stat cache, the
#    local subject read twice and local qualification (the block path the
#    agent meets on every turn; a passing hook scans a second time). Anchor:
#    `git status` on the same tree; both through `sh -c` so that each gets
#    its stdin the same way. Goal (issue 34): the hook's median at most
#    1.0x the anchor's, at each size; the load average is printed. With
#    BASELINE_BIN=path to another agent-task binary (say, a build of an
#    older commit), that binary's hook runs interleaved on the same
#    workspace (its own data directory), for a before/after on the same
#    machine state. RUNS (default 100) runs at 10,000 files, RUNS/5 above.
# 2. One MCP `tools/call` (qualification) round trip against
#    `agent-task serve --workspace-config`, next to a 404 on the same
#    server (the HTTP transport floor), both with curl.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-100}
SIZES=${SIZES:-${FILES:-10000 100000}}
cargo build --release --locked --quiet --bin agent-task --example cmdbench
bin=$PWD/target/release/agent-task
bench=$PWD/target/release/examples/cmdbench
fixtures=$PWD/fixtures
work=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
D=$work/data
at() { "$bin" --data-dir "$D" "$@"; }
ag() { "$bin" --data-dir "$D" --token-file "$work/token" "$@"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }

echo "# stop hook and MCP benchmarks, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
at init >/dev/null
cp -r "$fixtures/repos/basic" "$work/source"
at repo add demo/basic --source "$work/source" >/dev/null
at requirement install --repo demo/basic --profile default --file "$fixtures/workflows/basic.json" >/dev/null
at token issue --owner bench --agent a1 --out "$work/token" >/dev/null

# One workspace of $1 files, checkpointed; sets ws and change.
make_ws() {
  ws=$work/ws$1
  cp -r "$fixtures/repos/basic" "$ws"
  python3 - "$ws" "$1" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "src", f"d{i // 100:04d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:06d}.txt"), "w") as f:
        f.write(f"file {i}\n" * 8)
PY
  git -C "$ws" init -q && git -C "$ws" add -A && git -C "$ws" -c user.name=b -c user.email=b@x commit -qm tree
  change=$(ag change open --repo demo/basic --profile default --workspace "$ws" | json "d['change_id']")
  # Past the stat cache's racy-clean margin (files changed within 100 ms of
  # a checkpoint's scan are read again by every later scan), as an agent's
  # next turn is.
  sleep 0.3
  ag checkpoint --workspace "$ws" >/dev/null
}
export XDG_STATE_HOME=$work/state
for files in $SIZES; do
  make_ws "$files"
  sed "s#/home/dev/work#$ws#" "$fixtures/hooks/claude-stop.json" >"$work/payload.json"
  runs=$RUNS
  [ "$files" -gt 10000 ] && runs=$(( RUNS / 5 > 5 ? RUNS / 5 : 5 ))
  echo
  echo "## $files files"
  # One run outside the benchmark, to show the verdict being timed.
  printf 'hook verdict: '
  "$bin" --data-dir "$D" --token-file "$work/token" task-stop "$change" --workspace "$ws" <"$work/payload.json" | head -c 120; echo '…'
  baseline=()
  if [ -n "${BASELINE_BIN:-}" ]; then
    B=$work/base$files
    "$BASELINE_BIN" --data-dir "$B" init >/dev/null
    "$BASELINE_BIN" --data-dir "$B" repo add demo/basic --source "$work/source" >/dev/null
    "$BASELINE_BIN" --data-dir "$B" requirement install --repo demo/basic --profile default --file "$fixtures/workflows/basic.json" >/dev/null
    "$BASELINE_BIN" --data-dir "$B" token issue --owner bench --agent a1 --out "$work/btoken$files" >/dev/null
    bchange=$("$BASELINE_BIN" --data-dir "$B" --token-file "$work/btoken$files" change open --repo demo/basic --profile default --workspace "$ws" | json "d['change_id']")
    "$BASELINE_BIN" --data-dir "$B" --token-file "$work/btoken$files" checkpoint --workspace "$ws" >/dev/null
    baseline=(--label "task-stop, baseline binary" -- sh -c "'$BASELINE_BIN' --data-dir '$B' --token-file '$work/btoken$files' task-stop '$bchange' --workspace '$ws' <'$work/payload.json' >/dev/null")
  fi
  "$bench" --runs "$runs" --goal 1.0 \
    --label "git status (anchor)" -- sh -c "git -C '$ws' status --porcelain >/dev/null </dev/null" \
    --label "task-stop, $files files" -- sh -c "'$bin' --data-dir '$D' --token-file '$work/token' task-stop '$change' --workspace '$ws' <'$work/payload.json' >/dev/null" \
    "${baseline[@]}"
done

# MCP round trip.
req=$(ag requirements --change "$change" | json "d['requirement_digest']")
printf '{"version":1,"agent_task_profiles":[{"repository_id":"demo-basic","profile_id":"default","native_repository":"demo/basic","data_dir":"%s","target":"main","requirement_digest":"%s"}]}' "$D" "$req" >"$work/ws.json"
"$bin" --data-dir "$D" serve --bind 127.0.0.1:0 --workspace-config "$work/ws.json" >"$work/serve.out" 2>/dev/null &
server=$!
for _ in $(seq 50); do [ -s "$work/serve.out" ] && break; sleep 0.1; done
url=$(json "d['listening']" <"$work/serve.out")
tok=$(cat "$work/token")
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"qualification","arguments":{"change_id":"%s"}}}' "$change" >"$work/call.json"
if command -v curl >/dev/null; then
  "$bench" --runs "$RUNS" \
    --label "curl 404 (HTTP floor)" -- curl -s -o /dev/null -H "Authorization: Bearer $tok" -X POST "$url/v1/hub/workspace/nope" \
    --label "MCP tools/call qualification" -- curl -s -o /dev/null -H "Authorization: Bearer $tok" -H "Content-Type: application/json" \
      --data-binary "@$work/call.json" "$url/v1/hub/workspace/mcp?repository=demo-basic&profile=default"
else
  echo "curl not found: MCP round trip not measured"
fi

# The same round trip through the official MCP Python SDK client (installed
# by scripts/install-interop.sh), one session, RUNS calls.
py=${AGENT_TASK_INTEROP_PYTHON:-$PWD/target/interop/venv/bin/python}
if [ -x "$py" ]; then
  "$py" tests/interop/python/bench_calls.py "$url/v1/hub/workspace/mcp?repository=demo-basic&profile=default" \
    "$work/token" "$change" "$RUNS"
else
  echo "MCP Python SDK not installed (scripts/install-interop.sh): SDK round trip not measured"
fi
