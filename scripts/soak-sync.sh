#!/usr/bin/env bash
# Kill soak of `sync pull` (issue #36; not part of the test command). Node A
# (the source, `serve` with a page authority for B) collects 5-15 records
# and tombstones one every round; node B pulls, either through the CLI
# (`sync pull`) or through its own `serve` (`POST /v1/data/sync/pull`), and
# that puller or B's server is SIGKILLed after a random delay, KILLS times;
# after each round B's checkpoint never acknowledges less than before. Then a final pull
# to the end and the invariants, checked from outside:
#   - PRAGMA integrity_check is `ok` on every SQLite file of A and B;
#   - no record lost or duplicated: B's feed holds each record A created
#     exactly once, and each tombstone A applied exactly once, nothing else;
#   - the destination's records are A's: `data get` answers the same JSON
#     on both nodes for every record id (tombstoned ones included);
#   - a rerun completes once: one more pull imports nothing.
# The kill delays come from SEED (printed); they are drawn below a bound
# that starts at MAX_DELAY_MS and then follows 1.2 times the duration of
# the last pull that ended before its kill.
#
#   [KILLS=10] [RECORDS=40] [MAX_DELAY_MS=5000] [SEED=N] scripts/soak-sync.sh
#   scripts/soak-sync.sh --self-test   a short run, then a fault injected
#                                      into B (a record tombstoned on B
#                                      alone): the checker must report it.
#   SOAK_DEBUG=1                       keeps the work dir; prints, each
#                                      round, B's pull-lock holders and the
#                                      pull's answer.
#
# Uses target/debug/agent-task (AGENT_TASK_BIN to choose another binary;
# built with `cargo build --features test-hooks` when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in sqlite3 curl python3; do
  command -v "$tool" >/dev/null || { echo "$(basename "$0"): needs $tool" >&2; exit 2; }
done
self_test=0
[[ "${1:-}" == "--self-test" ]] && self_test=1
KILLS=${KILLS:-10}
RECORDS=${RECORDS:-40}
MAX_DELAY_MS=${MAX_DELAY_MS:-5000}
SEED=${SEED:-$(( $(date +%s) % 32768 ))}
if ((self_test)); then KILLS=${KILLS_SELF_TEST:-3}; fi
RANDOM=$SEED
bin=${AGENT_TASK_BIN:-$PWD/target/debug/agent-task}
[[ -x "$bin" ]] || cargo build --locked --quiet --features test-hooks --bin agent-task
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
[[ -n "${SOAK_DEBUG:-}" ]] && trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; echo "kept $work"' EXIT
umask 077
A="$work/a" B="$work/b"
a() { "$bin" --data-dir "$A" "$@"; }
b() { "$bin" --data-dir "$B" "$@"; }
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }
PAGE=soak-page-bearer-0123456789
TOKEN_A=soak-node-a-bearer-0123456789
TOKEN_B=soak-node-b-bearer-0123456789
printf '%s\n' "$PAGE" >"$work/page.token"
printf '%s\n' "$TOKEN_A" >"$work/a.token"
printf '%s\n' "$TOKEN_B" >"$work/b.token"
echo "## soak-sync: seed $SEED, $KILLS kills, work dir $work"

# serve DIR TOKENFILE OUT: starts a server, prints its pid and origin.
serve() {
  "$bin" --data-dir "$1" serve --bind 127.0.0.1:0 --data-token-file "$2" >"$3" 2>/dev/null &
  local pid=$!
  for _ in $(seq 1 400); do [[ -s "$3" ]] && break; sleep 0.025; done
  echo "$pid $(j '["listening"]' <"$3")"
}

# gone PID: waits until a killed server (started in a process substitution,
# so not this shell's child) has been reaped and its locks released.
gone() {
  for _ in $(seq 1 2000); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.01; done
  echo "soak-sync: process $1 outlived SIGKILL" >&2
  exit 2
}

added=0
# add N: collects N records on A (one `--jsonl` ingest), tombstones one.
add() {
  local n=$1 f="$work/lines.jsonl"
  : >"$f"
  for _ in $(seq 1 "$n"); do
    added=$((added + 1))
    printf '{"text":"soak record %d words %d","external_id":"e%d","metadata":{"i":%d}}\n' \
      "$added" "$RANDOM" "$added" "$added" >>"$f"
  done
  a data collect --collection default --collector text --jsonl "$f" >/dev/null 2>&1
  local id
  id=$(a data changes --limit 1000 | python3 -c '
import json,sys,random
d=json.load(sys.stdin); random.seed(int(sys.argv[1]))
c=[x["record_id"] for x in d["changes"] if x["type"]=="record.created"]
t={x["record_id"] for x in d["changes"] if x["type"]=="record.tombstoned"}
live=[x for x in c if x not in t]
print(random.choice(live) if live else "")' "$RANDOM")
  [[ -n "$id" ]] && a data tombstone "$id" --reason soak >/dev/null
  return 0
}

a init >/dev/null
a data init --node-id node_soak_a >/dev/null
b init >/dev/null
b data init --node-id node_soak_b >/dev/null
pub=$(a sync keygen --id did:example:soak-a)
rcpt=$(b sync keygen --id did:example:soak-b)
a sync authority add --peer b --bearer-file "$work/page.token" --collection default \
  --recipient-id did:example:soak-b \
  --recipient-key "$(j '["recipient"]["x25519_public_key"]' <<<"$rcpt")" \
  --recipient-key-id "$(j '["recipient"]["x25519_key_id"]' <<<"$rcpt")" >/dev/null
add "$RECORDS"
read -r pid_a origin_a < <(serve "$A" "$work/a.token" "$work/a.out")
pids+=("$pid_a")
b sync peer add --peer a --origin "$origin_a" --node-id node_soak_a \
  --publisher-id did:example:soak-a \
  --publisher-key "$(j '["publisher"]["ed25519_public_key"]' <<<"$pub")" \
  --page-token-file "$work/page.token" >/dev/null

kills=0 acked=0 acked_records=0 source_writes=1 checkpoint_acked=0
violations=()
pull_body='{"protocol":"agent-data-sync/v1","peer_id":"a","collection_id":"default","limit":5,"max_pages":100}'
# Rounds until KILLS SIGKILLs landed (a run that finished first is a
# round without a kill), at most 3 * KILLS rounds.
max_rounds=$((3 * KILLS)) max_delay=$MAX_DELAY_MS
i=0
while ((kills < KILLS && i < max_rounds)); do
  i=$((i + 1))
  # Something to pull every round: 5-15 new records and a tombstone.
  add $((5 + RANDOM % 11))
  source_writes=$((source_writes + 1))
  delay=$((RANDOM % max_delay))
  if ((RANDOM % 2 == 0)); then
    victim="sync pull"
    # The binary itself in the background (not a shell function, whose
    # subshell would take the SIGKILL instead).
    "$bin" --data-dir "$B" sync pull --peer a --collection default --limit 5 --max-pages 100 \
      >"$work/pull.out" 2>/dev/null &
    p=$!
  else
    victim="serve (B)"
    read -r p origin_b < <(serve "$B" "$work/b.token" "$work/b.out")
    curl -s -o "$work/pull.out" -H "authorization: Bearer $TOKEN_B" \
      -H 'content-type: application/json' --data "$pull_body" \
      "$origin_b/v1/data/sync/pull" 2>/dev/null &
    c=$!
    pids+=("$c")
  fi
  pids+=("$p")
  # Wait, polling, until the delay passed or the pull ended (its answer:
  # the puller's exit, or the curl to B's server), then SIGKILL.
  watch=$p
  [[ $victim == "serve (B)" ]] && watch=$c
  start=$(date +%s%N)
  end=$((start + delay * 1000000))
  while kill -0 "$watch" 2>/dev/null && (($(date +%s%N) < end)); do sleep 0.005; done
  took_ms=$((($(date +%s%N) - start) / 1000000))
  if [[ $victim == "sync pull" ]]; then
    kill -9 "$p" 2>/dev/null || true
    rc=0
    wait "$p" 2>/dev/null || rc=$?
    if ((rc == 137)); then what="killed"; kills=$((kills + 1)); else what="finished first (exit $rc, $took_ms ms)"; fi
  else
    # B's server goes in any case (the soak's servers never stop cleanly);
    # it counts as a kill when its pull had not answered yet.
    if kill -0 "$c" 2>/dev/null; then what="killed"; kills=$((kills + 1)); else what="answered first ($took_ms ms)"; fi
    kill -9 "$p" 2>/dev/null || true
    gone "$p"
    wait "$c" 2>/dev/null || true
  fi
  # After a pull that ended first, the bound follows it (1.2 times its
  # duration, at least 50 ms): kill points spread over whole pulls.
  if [[ $what != killed ]]; then
    max_delay=$((took_ms * 12 / 10))
    ((max_delay >= 50)) || max_delay=50
  fi
  if [[ -s "$work/pull.out" ]] && n=$(j '["records_inserted"]' <"$work/pull.out" 2>/dev/null); then
    acked=$((acked + 1)) acked_records=$((acked_records + n))
  fi
  # What the checkpoint acknowledges (pages committed before the kill):
  # never less than it acknowledged before.
  st=$(b sync status --peer a --collection default)
  now_acked=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["records_inserted"]+d["records_existing"]+d["tombstones_applied"])' "$st")
  ((now_acked >= checkpoint_acked)) ||
    violations+=("round $i: the checkpoint went back from $checkpoint_acked to $now_acked changes")
  checkpoint_acked=$now_acked
  echo "kill $i: $victim after ${delay} ms: $what; the checkpoint acknowledges $now_acked changes"
  if [[ -n "${SOAK_DEBUG:-}" ]]; then
    for f in "$B"/sync/locks/*; do
      for q in /proc/[0-9]*; do
        ls -l "$q/fd" 2>/dev/null | grep -qF "$f" && echo "  lock holder: ${q#/proc/} $(tr '\0' ' ' <"$q/cmdline" | head -c 200)"
      done
    done
    echo "  answer: $(head -c 200 "$work/pull.out" 2>/dev/null)"
    echo "  status: $st"
  fi
done

# To the end (a few rounds: A is idle now), then the rerun.
for _ in $(seq 1 20); do
  out=$(b sync pull --peer a --collection default --limit 50 --max-pages 100 2>&1 || true)
  [[ $(j '["has_more"]' <<<"$out" 2>/dev/null) == "False" ]] && break
done

if ((self_test)); then
  victim_id=$(b data changes --limit 1000 | python3 -c '
import json,sys
d=json.load(sys.stdin)
t={x["record_id"] for x in d["changes"] if x["type"]=="record.tombstoned"}
print(next(x["record_id"] for x in d["changes"] if x["type"]=="record.created" and x["record_id"] not in t))')
  b data tombstone "$victim_id" --reason injected-fault >/dev/null
  echo "self-test: injected a fault: record $victim_id tombstoned on B alone"
fi

rerun=$(b sync pull --peer a --collection default --limit 50 --max-pages 100 2>&1 || true)
[[ $(j '["records_inserted"]' <<<"$rerun" 2>/dev/null) == 0 && $(j '["tombstones_applied"]' <<<"$rerun" 2>/dev/null) == 0 ]] ||
  violations+=("the rerun pull imported something: $rerun")
for f in $(find "$A" "$B" -name '*.sqlite'); do
  ok=$(sqlite3 "file:$f?mode=ro" 'PRAGMA integrity_check' 2>&1 || true)
  [[ $ok == ok ]] || violations+=("integrity_check of $f: $ok")
done
a data changes --limit 1000 >"$work/a.changes"
b data changes --limit 1000 >"$work/b.changes"
feed=$(python3 - "$work/a.changes" "$work/b.changes" <<'EOF'
import json, sys, collections
a = json.load(open(sys.argv[1]))["changes"]
b = json.load(open(sys.argv[2]))["changes"]
def count(ch, kind):
    return collections.Counter(x["record_id"] for x in ch if x["type"] == kind)
out = []
for kind in ("record.created", "record.tombstoned"):
    ca, cb = count(a, kind), count(b, kind)
    dup = sorted(k for k, n in cb.items() if n > 1)
    lost = sorted(set(ca) - set(cb))
    extra = sorted(set(cb) - set(ca))
    if dup: out.append(f"{kind} more than once on B: {dup}")
    if lost: out.append(f"{kind} lost on B: {lost}")
    if extra: out.append(f"{kind} on B and not on A: {extra}")
print(json.dumps({"violations": out, "ids": sorted({x["record_id"] for x in a})}))
EOF
)
while IFS= read -r v; do [[ -n $v ]] && violations+=("$v"); done < <(j '["violations"]' <<<"$feed" | python3 -c 'import ast,sys; [print(x) for x in ast.literal_eval(sys.stdin.read())]')
ids=$(j '["ids"]' <<<"$feed" | python3 -c 'import ast,sys; [print(x) for x in ast.literal_eval(sys.stdin.read())]')
n_ids=0
for id in $ids; do
  n_ids=$((n_ids + 1))
  ra=$(a data get "$id" 2>&1 || true)
  rb=$(b data get "$id" 2>&1 || true)
  [[ "$ra" == "$rb" ]] || violations+=("record $id differs: A $ra / B $rb")
done
echo "## soak-sync: seed $SEED: $kills SIGKILLs ($i rounds), $acked pulls answered ($acked_records records in their answers), $checkpoint_acked changes acknowledged by B's checkpoint before the final pull, $source_writes source ingests, $n_ids records compared, ${#violations[@]} violations"
for v in "${violations[@]}"; do echo "VIOLATION: $v"; done
if ((self_test)); then
  if ((${#violations[@]} > 0)); then
    echo "self-test: the checker caught the injected fault"
    exit 0
  fi
  echo "self-test FAILED: the injected fault went unnoticed"
  exit 1
fi
exit $((${#violations[@]} > 0))
