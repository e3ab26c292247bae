# Shared by scripts/soak-collect.sh and scripts/soak-land.sh (sourced, not
# run): the operator's set-up of an authority with the fixture repository
# (fixtures/repos/basic, workflow fixtures/workflows/basic.json: a `tests`
# step running `sh test.sh` in bwrap), an agent token and a Change, as the
# demo and tests/cli/collect_flow.rs set them up; and the agent's steps.
# Every command is the real binary; nothing here is a stub.
#
# Expects: $work (a fresh directory), $bin (the binary). Sets: $source,
# $ws (the agent's workspace, a clone of the source), $collector, $token,
# $change.

export AGENT_TASK_DATA_DIR="$work/data"
export GIT_AUTHOR_NAME=op GIT_AUTHOR_EMAIL=op@example.invalid
export GIT_COMMITTER_NAME=op GIT_COMMITTER_EMAIL=op@example.invalid
umask 077

# j EXPR: one field of the JSON on stdin (python expression on `d`).
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

op() { "$bin" "$@"; }
agent() { "$bin" --token-file "$token" "$@"; }

soak_setup() {
  source="$work/source" collector="$work/collector" token="$work/alice.token"
  op init >/dev/null
  cp -r fixtures/repos/basic "$source"
  git -C "$source" init -q -b main
  git -C "$source" add -A
  git -C "$source" commit -q -m init
  git -C "$source" config user.name op
  git -C "$source" config user.email op@example.invalid
  op repo add demo/basic --source "$source" --target main >/dev/null
  op requirement install --repo demo/basic --profile default \
    --file fixtures/workflows/basic.json >/dev/null
  op token issue --owner alice --agent claude-1 --out "$token" >/dev/null
  local pk reg
  pk=$(op keygen --collector-dir "$collector" | j '["public_key"]')
  reg=$(op enroll --repo demo/basic --profile default --step tests --executor soak-ci \
    --public-key "$pk" | j '["registration_id"]')
  op profile install --registration "$reg" --step tests --runtime bwrap >/dev/null
  soak_open
}

# A new Change on a new workspace: a clone of the source as it stands (a
# workspace keeps its Change after a landing).
soak_open() {
  rounds_opened=$((${rounds_opened:-0} + 1))
  ws="$work/ws-$rounds_opened"
  git clone -q "$source" "$ws"
  change=$(agent change open --repo demo/basic --profile default --workspace "$ws" | j '["change_id"]')
}

# soak_edit N: the agent's honest edit number N (a new revision each time);
# prints the `tests` task id of its checkpoint.
soak_edit() {
  printf '#!/bin/sh\n# Adds two integers (agent edit %s).\necho $(($1 + $2))\n' "$1" >"$ws/add.sh"
  agent checkpoint --workspace "$ws" | python3 -c '
import json,sys
d=json.load(sys.stdin)
print(next(t["task_id"] for t in d["tasks"] if t["step_id"]=="tests"))'
}

# soak_claim TASK FILE: collector-claim, the descriptor written to FILE.
soak_claim() {
  agent collector-claim "$1" --descriptor-out "$2" >/dev/null
}

# soak_collect DESCRIPTOR: `collect` (its data directory only from
# --data-dir, as the demo runs it).
soak_collect() {
  "$bin" --data-dir "$AGENT_TASK_DATA_DIR" --token-file "$token" collect \
    --descriptor "$1" --collector-dir "$collector"
}

# integrity: prints one line per SQLite file of the data directory whose
# PRAGMA integrity_check is not `ok`.
soak_integrity() {
  local f ok
  while IFS= read -r f; do
    ok=$(sqlite3 "file:$f?mode=ro" 'PRAGMA integrity_check' 2>&1 || true)
    [[ $ok == ok ]] || echo "integrity_check of $f: $ok"
  done < <(find "$AGENT_TASK_DATA_DIR" -name '*.sqlite')
}

# soak_kill_at PID DELAY_MS: SIGKILLs PID once DELAY_MS have passed, unless
# it ends first. Sets $killed (1 when the SIGKILL ended it), $rc (its exit
# status) and $took_ms (how long it ran).
soak_kill_at() {
  local p=$1 start end
  start=$(date +%s%N)
  end=$((start + $2 * 1000000))
  while kill -0 "$p" 2>/dev/null && (($(date +%s%N) < end)); do sleep 0.005; done
  kill -9 "$p" 2>/dev/null || true
  rc=0
  wait "$p" 2>/dev/null || rc=$?
  took_ms=$((($(date +%s%N) - start) / 1000000))
  killed=$((rc == 137))
}

# soak_bound: after a run that finished first, the delays' bound follows
# it (1.2 times its duration, at least 50 ms), so that kill points spread
# over a whole run however fast the machine is at the moment.
soak_bound() {
  if ((!killed)); then
    max_delay=$((took_ms * 12 / 10))
    ((max_delay >= 50)) || max_delay=50
  fi
  return 0
}
