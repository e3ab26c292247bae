#!/usr/bin/env bash
# Runs every test: unit tests next to the code and the integration suite that
# drives the real binary. Builds with the `test-hooks` feature (test-only
# clock override and fixtures); release builds never have it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --locked --features test-hooks "$@"
