#!/usr/bin/env bash
# Regenerates man/ and completions/ from the clap definitions of the binary.
# The test `docs::committed_docs_match_the_binary` fails when they drift.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --quiet
bin=target/debug/agent-task
rm -f man/*.1 completions/agent-task.*
mkdir -p man completions
env -i PATH="$PATH" "$bin" man --out man >/dev/null
for sh in bash zsh fish; do
  env -i PATH="$PATH" "$bin" completions "$sh" --out "completions/agent-task.$sh" >/dev/null
done
echo "man/: $(ls man | wc -l) pages; completions/: $(ls completions | tr '\n' ' ')"
