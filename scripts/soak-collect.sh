#!/usr/bin/env bash
# Kill soak of `collect` in bwrap (issue #36; not part of the test
# command). Each round the agent makes an honest edit, checkpoints, claims
# the `tests` task, starts `collect` (bwrap, `sh test.sh`) and SIGKILLs it
# after a random delay; then reruns `collect` on the same descriptor. The
# sandbox lets nothing out, so the command's starts are counted by the
# collector's test seam (AGENT_TASK_TEST_RUN_LOG: one line per recipe
# start, a `--features test-hooks` build). Checked from outside:
#   - the command ran at most once for the descriptor, killed run and
#     reruns together;
#   - the rerun completes (exit 0) with a record: `passed` when the killed
#     run had finished the command, else a typed `interrupted` (when it had
#     started it) or a first run (when it had not);
#   - a further `collect` is a replay: it runs nothing and changes nothing;
#   - `qualify` agrees with the outcome (passed: the Change finalizes and
#     qualifies; interrupted: `collector_not_passed`);
#   - no temp file (`.tmp-*`, a killed write's orphan) is left in any
#     execution directory after the rerun;
#   - at the end, PRAGMA integrity_check is `ok` on every SQLite file.
# The kill delays come from SEED (printed); they are drawn below a bound
# that starts at MAX_DELAY_MS and then follows 1.2 times the duration of
# the last run that finished before its kill (soak_bound), so the kill
# points spread over whole runs on a fast or a loaded machine.
#
#   [KILLS=10] [MAX_DELAY_MS=1200] [SEED=N] scripts/soak-collect.sh
#   scripts/soak-collect.sh --self-test   one round, then a fault injected
#                                         (a second start of the command in
#                                         the run log): the checker must
#                                         report it.
#
# Uses target/debug/agent-task (AGENT_TASK_BIN to choose another binary;
# built with `cargo build --features test-hooks` when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in sqlite3 python3 git bwrap; do
  command -v "$tool" >/dev/null || { echo "$(basename "$0"): needs $tool" >&2; exit 2; }
done
self_test=0
[[ "${1:-}" == "--self-test" ]] && self_test=1
KILLS=${KILLS:-10}
MAX_DELAY_MS=${MAX_DELAY_MS:-1200}
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
echo "## soak-collect: seed $SEED, $KILLS kills, work dir $work"

violations=()
kills=0 acked=0 runs_total=0
starts() { if [[ -f "$1" ]]; then wc -l <"$1"; else echo 0; fi; }
# Rounds until KILLS SIGKILLs landed (a run that finished first is a
# round without a kill), at most 3 * KILLS rounds (one for --self-test,
# whose fault is injected in that round).
max_rounds=$((3 * KILLS)) max_delay=$MAX_DELAY_MS
((self_test)) && max_rounds=1
# Temp files (`.tmp-*`) in the execution directories: what a writer
# killed between creating one and renaming it leaves; the rerun, which
# holds the execution, removes them.
temp_files() { find "$collector/executions" -mindepth 2 -maxdepth 2 -name '.tmp-*' 2>/dev/null | wc -l; }
orphans_seen=0
i=0
while ((kills < KILLS && i < max_rounds)); do
  i=$((i + 1))
  log="$work/runs-$i.log"
  task=$(soak_edit "$i")
  soak_claim "$task" "$work/d$i.json"
  delay=$((RANDOM % max_delay))
  # The binary itself in the background (not a shell function, whose
  # subshell would take the SIGKILL instead).
  AGENT_TASK_TEST_RUN_LOG="$log" "$bin" --data-dir "$AGENT_TASK_DATA_DIR" --token-file "$token" \
    collect --descriptor "$work/d$i.json" --collector-dir "$collector" >"$work/c.out" 2>&1 &
  p=$!
  soak_kill_at "$p" "$delay"
  if ((killed)); then
    kills=$((kills + 1)) what=killed
  else
    acked=$((acked + 1)) what="finished first (exit $rc, $took_ms ms)"
  fi
  soak_bound
  before=$(starts "$log")
  # The command may still be starting in a sandbox whose collector died:
  # give it a moment to show in the log (the count is what matters).
  sleep 0.3
  orphans=$(temp_files)
  orphans_seen=$((orphans_seen + orphans))
  if out=$(AGENT_TASK_TEST_RUN_LOG="$log" soak_collect "$work/d$i.json" 2>&1); then
    acked=$((acked + 1))
    status=$(j '["status"]' <<<"$out") outcome=$(j '["outcome"]' <<<"$out")
  else
    violations+=("round $i: the rerun failed: $(head -c 300 <<<"$out")")
    status=failed outcome=failed
  fi
  again=$(AGENT_TASK_TEST_RUN_LOG="$log" soak_collect "$work/d$i.json" 2>&1 || true)
  left=$(temp_files)
  ((left == 0)) || violations+=("round $i: $left temp files left in the execution directories after the rerun")
  if ((self_test)); then
    echo "injected" >>"$log"
    echo "self-test: injected a fault: a second start in the run log"
  fi
  n=$(starts "$log")
  runs_total=$((runs_total + n))
  ((n <= 1)) || violations+=("round $i: the command ran $n times")
  ((before <= 1)) || violations+=("round $i: the killed collect ran the command $before times")
  [[ $(j '["upload"]["replay"]' <<<"$again" 2>/dev/null) == True ]] ||
    violations+=("round $i: a third collect was not a replay: $(head -c 300 <<<"$again")")
  q=$(agent qualify --change "$change")
  case "$outcome/$status" in
    passed/*)
      ((n == 1)) || violations+=("round $i: passed with $n command starts")
      agent finalize --change "$change" >/dev/null
      [[ $(agent qualify --change "$change" | j '["qualified"]') == True ]] ||
        violations+=("round $i: passed but the Change does not qualify")
      ;;
    failed/interrupted)
      [[ $(j '["failures"][0]["code"]' <<<"$q") == collector_not_passed ]] ||
        violations+=("round $i: interrupted but qualify says $q")
      ;;
    *) violations+=("round $i: rerun outcome $outcome, status $status") ;;
  esac
  echo "kill $i: collect after ${delay} ms: $what; starts before the rerun $before, after $n; rerun: $outcome/$status"
done
while IFS= read -r v; do [[ -n $v ]] && violations+=("$v"); done < <(soak_integrity)
echo "## soak-collect: seed $SEED: $kills SIGKILLs ($i rounds), $acked collects acknowledged, $runs_total command starts, $orphans_seen orphaned temp files found after a kill (none after a rerun, or a violation), ${#violations[@]} violations"
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
