#!/usr/bin/env bash
# Kill soak of `land` (issue #36; not part of the test command). The
# operator's authority lands Changes on a fixture repository; each round
# qualifies a new Change (an honest edit, checkpoint, a bwrap `collect` of
# `sh test.sh`, finalize), starts `land` and SIGKILLs it after a random
# delay, then checks from outside:
#   - right after the kill: `main` is unmoved, or one commit on from where
#     it was (its parent is the old head);
#   - after a rerun of `land`: the rerun completes, `main` moved exactly
#     once in the round (one new commit, whose parent is the old head), and
#     that commit carries exactly one agent-task note, which `verify`
#     accepts with only the authority's public key, attesting the Change's
#     qualified revision (verify recomputes the revision from the commit's
#     tree); a further `land` of the same Change moves nothing;
#   - at the end, PRAGMA integrity_check is `ok` on every SQLite file.
# The kill delays come from SEED (printed); they are drawn below a bound
# that starts at MAX_DELAY_MS and then follows 1.2 times the duration of
# the last run that finished before its kill (soak_bound), so the kill
# points spread over whole runs on a fast or a loaded machine.
#
#   [KILLS=10] [MAX_DELAY_MS=2500] [SEED=N] scripts/soak-land.sh
#   scripts/soak-land.sh --self-test   one round, then a fault injected (a
#                                      second commit on `main` with the
#                                      landed tree and the note copied):
#                                      the checker must report it.
#   NOTE_OUT=FILE                      also writes the last landed note
#                                      there (the DSSE fuzz target's seed).
#
# Uses target/debug/agent-task (AGENT_TASK_BIN to choose another binary;
# built with `cargo build --features test-hooks` when missing). bwrap must
# be installed (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in sqlite3 python3 git bwrap; do
  command -v "$tool" >/dev/null || { echo "$(basename "$0"): needs $tool" >&2; exit 2; }
done
self_test=0
[[ "${1:-}" == "--self-test" ]] && self_test=1
KILLS=${KILLS:-10}
MAX_DELAY_MS=${MAX_DELAY_MS:-2500}
SEED=${SEED:-$(( $(date +%s) % 32768 ))}
((self_test)) && KILLS=1
RANDOM=$SEED
bin=${AGENT_TASK_BIN:-$PWD/target/debug/agent-task}
[[ -x "$bin" ]] || cargo build --locked --quiet --features test-hooks --bin agent-task
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=scripts/soak-common.sh
. scripts/soak-common.sh
soak_setup
op authority key --format pem | j '["public_key"]' >"$work/authority.pem"
echo "## soak-land: seed $SEED, $KILLS kills, work dir $work"

violations=()
kills=0 acked=0 landed=0
notes_of() { git -C "$source" notes --ref=agent-task list "$1" 2>/dev/null | wc -l; }
# check_landed OLD NEW REVISION: the round's outcome from outside.
check_landed() {
  local old=$1 new=$2 rev=$3 parent count v
  if [[ $new == "$old" ]]; then
    violations+=("round $i: the rerun did not land (main still at $old)")
    return
  fi
  count=$(git -C "$source" rev-list --count "$old..$new")
  parent=$(git -C "$source" rev-parse "$new^")
  [[ $count == 1 && $parent == "$old" ]] ||
    violations+=("round $i: main moved $count commits (parent $parent, old head $old)")
  [[ $(notes_of "$new") == 1 ]] || violations+=("round $i: $new has $(notes_of "$new") notes")
  if v=$(cd "$source" && env -u AGENT_TASK_DATA_DIR "$bin" verify --commit "$new" \
    --key "$work/authority.pem" 2>&1); then
    [[ $(j '["revision"]' <<<"$v") == "$rev" ]] ||
      violations+=("round $i: verify attests $(j '["revision"]' <<<"$v"), the Change qualified $rev")
  else
    violations+=("round $i: verify refused $new: $v")
  fi
}

# Rounds until KILLS SIGKILLs landed (a run that finished first is a
# round without a kill), at most 3 * KILLS rounds (one for --self-test,
# whose fault is injected in that round).
max_rounds=$((3 * KILLS)) max_delay=$MAX_DELAY_MS
((self_test)) && max_rounds=1
i=0
while ((kills < KILLS && i < max_rounds)); do
  i=$((i + 1))
  task=$(soak_edit "$i")
  soak_claim "$task" "$work/d$i.json"
  [[ $(soak_collect "$work/d$i.json" | j '["outcome"]') == passed ]] ||
    { echo "round $i: collect did not pass" >&2; exit 2; }
  agent finalize --change "$change" >/dev/null
  q=$(agent qualify --change "$change")
  [[ $(j '["qualified"]' <<<"$q") == True ]] || { echo "round $i: not qualified: $q" >&2; exit 2; }
  rev=$(j '["revision"]' <<<"$q")
  old=$(git -C "$source" rev-parse main)
  delay=$((RANDOM % max_delay))
  # The binary itself in the background (not a shell function, whose
  # subshell would take the SIGKILL instead).
  "$bin" land --update-worktree --repo demo/basic --change "$change" >"$work/land.out" 2>&1 &
  p=$!
  soak_kill_at "$p" "$delay"
  if ((killed)); then
    kills=$((kills + 1)) what=killed
  else
    acked=$((acked + 1)) what="finished first (exit $rc, $took_ms ms)"
  fi
  soak_bound
  mid=$(git -C "$source" rev-parse main)
  if [[ $mid == "$old" ]]; then at="main unmoved at the kill"; else at="main moved before the kill"; fi
  if [[ $mid != "$old" && $(git -C "$source" rev-parse "$mid^") != "$old" ]]; then
    violations+=("round $i: after the kill main is at $mid, neither $old nor one commit on")
  fi
  t0=$(date +%s%N)
  if rerun=$(op land --update-worktree --repo demo/basic --change "$change" 2>&1); then
    acked=$((acked + 1))
  else
    # A landing the killed run completed answers a typed refusal naming
    # the landed state; anything else is checked below through git.
    echo "round $i: rerun: $(head -c 300 <<<"$rerun")"
  fi
  rerun_ms=$((($(date +%s%N) - t0) / 1000000))
  new=$(git -C "$source" rev-parse main)
  if ((self_test)); then
    # The fault: one more commit with the same tree, the note copied.
    git -C "$source" commit -q --allow-empty -m "injected fault"
    git -C "$source" notes --ref=agent-task copy "$new" HEAD
    new=$(git -C "$source" rev-parse main)
    echo "self-test: injected a fault: a second commit $new on main"
  fi
  check_landed "$old" "$new" "$rev"
  again=$(op land --update-worktree --repo demo/basic --change "$change" 2>&1 || true)
  [[ $(git -C "$source" rev-parse main) == "$new" ]] ||
    violations+=("round $i: a third land moved main: $again")
  landed=$((landed + 1))
  echo "kill $i: land after ${delay} ms: $what, $at; the rerun took $rerun_ms ms; main $old -> $new"
  [[ -n "${NOTE_OUT:-}" ]] && git -C "$source" notes --ref=agent-task show "$new" >"$NOTE_OUT"
  soak_open
done
while IFS= read -r v; do [[ -n $v ]] && violations+=("$v"); done < <(soak_integrity)
echo "## soak-land: seed $SEED: $kills SIGKILLs ($i rounds), $acked land runs acknowledged, $landed landings checked, ${#violations[@]} violations"
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
