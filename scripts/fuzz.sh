#!/usr/bin/env bash
# Fuzzes every target of fuzz/ (cargo-fuzz, libFuzzer) and prints, per
# target, the executions, the executions per second, the crashes and the
# corpus size. Not part of the test command.
#
#   scripts/fuzz.sh [SECONDS]          each target for SECONDS (default 60)
#   FUZZ_RUNS=N scripts/fuzz.sh        each target for N executions instead
#   FUZZ_TARGETS="a b" scripts/fuzz.sh only these targets
#   FUZZ_SANITIZER=address             ASan (default: none, about 2x faster;
#                                      the code under test is safe Rust)
#
# Installs cargo-fuzz when missing. On a stable toolchain the ASan build
# needs RUSTC_BOOTSTRAP=1 (it passes -Zsanitizer), set here. Corpora grow
# in fuzz/corpus/<target>/ (seeded from fuzz/seeds/<target>/), crash inputs
# land in fuzz/artifacts/<target>/; both are git-ignored. Every crash found
# becomes a regression test next to the code it broke.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
cargo fuzz build -s "$sanitizer" >&2
if [[ -n "${FUZZ_RUNS:-}" ]]; then
  limit=(-runs="$FUZZ_RUNS")
else
  limit=(-max_total_time="$secs")
fi
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
printf '%-18s %14s %10s %8s %8s\n' target executions exec/s crashes corpus
total_crashes=0
for t in $targets; do
  corpus="fuzz/corpus/$t"
  artifacts="fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [[ -d "fuzz/seeds/$t" ]] && seeds=("fuzz/seeds/$t")
  before=$(find "$artifacts" -type f | wc -l)
  set +e
  cargo fuzz run -s "$sanitizer" "$t" "$corpus" "${seeds[@]}" -- \
    "${limit[@]}" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    >"$logs/$t.out" 2>"$logs/$t.err"
  rc=$?
  set -e
  execs=$(grep -a 'stat::number_of_executed_units' "$logs/$t.err" | tail -1 | awk '{print $2}')
  rate=$(grep -a 'stat::average_exec_per_sec' "$logs/$t.err" | tail -1 | awk '{print $2}')
  after=$(find "$artifacts" -type f | wc -l)
  crashes=$((after - before))
  if [[ $rc -ne 0 && $crashes -eq 0 ]]; then
    crashes=1 # a crash whose input could not be written still counts
  fi
  total_crashes=$((total_crashes + crashes))
  printf '%-18s %14s %10s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes" \
    "$(find "$corpus" -type f | wc -l)"
  if [[ $crashes -ne 0 ]]; then
    grep -a -m 20 -E 'panicked|ERROR|SUMMARY|Test unit written' "$logs/$t.err" >&2 || true
  fi
done
exit $((total_crashes > 0))
