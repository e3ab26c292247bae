#!/usr/bin/env bash
# Fuzzes every target of fuzz/ (cargo-fuzz, libFuzzer) and prints, per
# target, the executions, the executions per second, the peak RSS, the
# wall time, the crashes and the corpus size. Not part of the test command.
#
#   scripts/fuzz.sh [SECONDS]          each target for SECONDS (default 60)
#   scripts/fuzz.sh --long             each target for 10,000,000 executions
#                                      (FUZZ_LONG_RUNS to change), two at a
#                                      time (one per core of a 2-core
#                                      machine); prints the time each took
#                                      and the whole run's
#   FUZZ_RUNS=N scripts/fuzz.sh        each target for N executions instead
#   FUZZ_TARGETS="a b" scripts/fuzz.sh only these targets
#   FUZZ_PARALLEL=N                    targets fuzzed at once (default 1;
#                                      2 with --long)
#   FUZZ_NICE=N                        run the fuzzers under `nice -n N`
#   FUZZ_SANITIZER=address             ASan (default: none, about 2x faster;
#                                      the code under test is safe Rust)
#
# Installs cargo-fuzz when missing. On a stable toolchain the ASan build
# needs RUSTC_BOOTSTRAP=1 (it passes -Zsanitizer), set here. Corpora grow
# in fuzz/corpus/<target>/ (seeded from fuzz/seeds/<target>/), crash inputs
# land in fuzz/artifacts/<target>/; both are git-ignored. Slow units
# (libFuzzer's slow-unit-*, an input that took over 10 s: a SIGSTOPped or
# starved fuzzer writes them too) are counted apart, never as crashes. Every crash found
# becomes a regression test through the binary (tests/cli) and its input a
# file of fuzz/regressions/<target>/, which every run replays first.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=60
parallel="${FUZZ_PARALLEL:-1}"
runs="${FUZZ_RUNS:-}"
if [[ "${1:-}" == "--long" ]]; then
  runs="${FUZZ_LONG_RUNS:-10000000}"
  parallel="${FUZZ_PARALLEL:-2}"
elif [[ -n "${1:-}" ]]; then
  secs="$1"
fi
sanitizer="${FUZZ_SANITIZER:-none}"
nice_cmd=()
[[ -n "${FUZZ_NICE:-}" ]] && nice_cmd=(nice -n "$FUZZ_NICE")
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
"${nice_cmd[@]}" cargo fuzz build -s "$sanitizer" >&2
if [[ -n "$runs" ]]; then
  limit=(-runs="$runs")
else
  limit=(-max_total_time="$secs")
fi
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# run_one TARGET: fuzzes one target; writes its table row to $logs/TARGET.row.
run_one() {
  local t=$1 corpus="fuzz/corpus/$1" artifacts="fuzz/artifacts/$1"
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus")
  [[ -d "fuzz/seeds/$t" ]] && dirs+=("fuzz/seeds/$t")
  [[ -d "fuzz/regressions/$t" ]] && dirs+=("fuzz/regressions/$t")
  local before after crashes rc start end
  # libFuzzer's slow-unit-* files are inputs that took over 10 s (a
  # stopped or starved process makes them too): reported, not crashes.
  before=$(find "$artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  local slow_before slow
  slow_before=$(find "$artifacts" -type f -name 'slow-unit-*' | wc -l)
  start=$(date +%s)
  set +e
  "${nice_cmd[@]}" cargo fuzz run -s "$sanitizer" "$t" "${dirs[@]}" -- \
    "${limit[@]}" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    >"$logs/$t.out" 2>"$logs/$t.err"
  rc=$?
  set -e
  end=$(date +%s)
  final() { grep -a "stat::$1" "$logs/$t.err" | tail -1 | awk '{print $2}'; }
  after=$(find "$artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  crashes=$((after - before))
  slow=$(($(find "$artifacts" -type f -name 'slow-unit-*' | wc -l) - slow_before))
  if [[ $rc -ne 0 && $crashes -eq 0 ]]; then
    crashes=1 # a crash whose input could not be written still counts
  fi
  printf '%-18s %14s %10s %9s %9s %8s %8s\n' "$t" "$(final number_of_executed_units || true)" \
    "$(final average_exec_per_sec || true)" "$(final peak_rss_mb || true)" "$((end - start))" \
    "$crashes" "$(find "$corpus" -type f | wc -l)" >"$logs/$t.row"
  echo "$crashes" >"$logs/$t.crashes"
  echo "$slow" >"$logs/$t.slow"
}

t0=$(date +%s)
running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= parallel)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
t1=$(date +%s)
printf '%-18s %14s %10s %9s %9s %8s %8s\n' target executions exec/s peak_rss_mb seconds crashes corpus
total_crashes=0
total_slow=0
for t in $targets; do
  cat "$logs/$t.row"
  total_slow=$((total_slow + $(cat "$logs/$t.slow" 2>/dev/null || echo 0)))
  c=$(cat "$logs/$t.crashes" 2>/dev/null || echo 1)
  total_crashes=$((total_crashes + c))
  if [[ $c -ne 0 ]]; then
    grep -a -m 20 -E 'panicked|ERROR|SUMMARY|Test unit written' "$logs/$t.err" >&2 || true
  fi
done
echo "total: $((t1 - t0)) s wall time, $(echo "$targets" | wc -w) targets, $parallel at a time, $total_crashes crashes"
if ((total_slow > 0)); then
  echo "slow units (an input over 10 s; not crashes, rerun them to see): $total_slow, in fuzz/artifacts/<target>/slow-unit-*"
fi
exit $((total_crashes > 0))
