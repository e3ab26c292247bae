#!/usr/bin/env bash
# `ls --json` over CHANGES Changes (default 1000), release build.
#
# Creates CHANGES Changes through the CLI (change open + checkpoint on a
# one-file workspace each, GROUP_SIZE (default 4) Changes per group, so the
# overview qualifies and groups them all), claims the tests task of every
# tenth (a live attempt to show), then times `ls --json` over them RUNS
# (default 10) times, interleaved with its anchors: the floor probe
# (lock + WAL open + one committed row) and `qualify` of one Change. Prints
# medians and each median's ratio to the floor probe, and `ls`/`qualify`.
# PROFILE=dev measures the debug build instead (no release build needed).
# Not part of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
CHANGES=${CHANGES:-1000}
GROUP_SIZE=${GROUP_SIZE:-4}
RUNS=${RUNS:-10}
PROFILE=${PROFILE:-release}
cargo build --profile "$PROFILE" --locked --quiet --bin agent-task --example floor-probe --example cmdbench
out=$PWD/target/$([[ $PROFILE == dev ]] && echo debug || echo "$PROFILE")
bin=$out/agent-task
probe=$out/examples/floor-probe
bench=$out/examples/cmdbench
fixtures=$PWD/fixtures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
D=$work/data
at() { "$bin" --data-dir "$D" "$@"; }
ag() { "$bin" --data-dir "$D" --token-file "$work/token" "$@"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }

echo "# ls benchmark ($PROFILE build), $CHANGES Changes, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
at init >/dev/null
cp -r "$fixtures/repos/basic" "$work/source"
at repo add demo/basic --source "$work/source" >/dev/null
at requirement install --repo demo/basic --profile default --file "$fixtures/workflows/basic.json" >/dev/null
at token issue --owner bench --agent a1 --out "$work/token" >/dev/null

start=$(date +%s.%N)
mkdir "$work/ws"
for i in $(seq 0 $((CHANGES - 1))); do
  mkdir "$work/ws/$i"
  printf 'echo %s\n' "$i" >"$work/ws/$i/test.sh"
  # The JSON is parsed only where an id is needed (python's start-up
  # would otherwise dominate the set-up).
  opened=$(ag change open --repo demo/basic --profile default --workspace "$work/ws/$i" \
    --group "g$((i / GROUP_SIZE))" --title "bench change $i")
  [[ $i == 0 ]] && first=$(json "d['change_id']" <<<"$opened")
  cp=$(ag checkpoint --workspace "$work/ws/$i")
  if ((i % 10 == 0)); then
    task=$(json "[t['task_id'] for t in d['tasks'] if t['step_id']=='tests'][0]" <<<"$cp")
    ag claim "$task" --request-id "c-$i" --lease-ms 3600000 >/dev/null
  fi
done
end=$(date +%s.%N)
echo "created $CHANGES Changes in $(python3 -c "print(f'{$end - $start:.1f}')") s"
n=$(ag ls --json | json "len(d['changes'])")
[[ $n == "$CHANGES" ]] || { echo "ls listed $n Changes, expected $CHANGES" >&2; exit 1; }

mkdir -m 700 "$work/probe"
echo
echo "## ls --json over $CHANGES Changes ($RUNS runs)"
"$bench" --runs "$RUNS" --warmup 1 \
  --label "floor probe (anchor)" -- "$probe" "$work/probe" \
  --label "qualify (one Change)" -- "$bin" --data-dir "$D" --token-file "$work/token" qualify --change "$first" \
  --label "ls --json ($CHANGES Changes)" -- "$bin" --data-dir "$D" ls --json \
  --label "ls --json --change (one)" -- "$bin" --data-dir "$D" ls --json --change "$first"
