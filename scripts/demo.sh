#!/usr/bin/env bash
# The main job, end to end on embedded defaults: build the release binary and
# run it against a fresh temporary data directory, showing each step's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked --quiet --bin agent-task
bin=$PWD/target/release/agent-task
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AGENT_TASK_DATA_DIR="$work/data"

step() { printf '\n\033[1m$ agent-task %s\033[0m\n' "$*"; "$bin" --pretty "$@"; }

step init
echo "demo content" > "$work/note.txt"
step cas put "$work/note.txt"
step cas fsck
step info
printf '\nA second writer while the lock is held fails fast with a typed error:\n'
( flock 9; "$bin" --lock-timeout-ms 200 init || echo "(exit $?)" ) 9>"$AGENT_TASK_DATA_DIR/lock"
printf '\ndemo finished: data directory was %s\n' "$AGENT_TASK_DATA_DIR"
