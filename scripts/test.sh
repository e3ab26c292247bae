#!/usr/bin/env bash
# Runs every test: unit tests next to the code and the integration suite that
# drives the real binary. Builds with the `test-hooks` feature (test-only
# clock override and fixtures); release builds never have it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The official MCP SDK clients for the interop tests (tests/cli/mcp_interop.rs);
# here they are required, so a missing interpreter fails instead of skipping.
interop_env="$(scripts/install-interop.sh)"
eval "$interop_env"
export AGENT_TASK_REQUIRE_INTEROP=1
cargo test --locked --features test-hooks "$@"
# The one target that needs a build WITHOUT test-hooks: what such a build
# refuses (tests/release_build.rs). Skipped when a filter or option is given.
if [ "$#" -eq 0 ]; then
  cargo test --locked --test release_build
fi
