#!/usr/bin/env bash
# The SIGKILL soak of issue #16 (not part of the test command): the suite's
# `authority_sigkill_soak` with many kills, then the 32-agent HTTP claim race
# with many trials (tests/cli/authority_faults.rs says what each checks).
# Each soak pass runs on a fresh data dir; its random kill points come from a
# printed seed (AGENT_TASK_SOAK_SEED=N repeats a pass).
# Usage: [KILLS=100] [PASSES=3] [TRIALS=200] scripts/soak-authority.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${KILLS:-100}
PASSES=${PASSES:-3}
TRIALS=${TRIALS:-200}
for p in $(seq 1 "$PASSES"); do
  echo "## soak pass $p of $PASSES: $KILLS SIGKILLs of serve"
  AGENT_TASK_SOAK_KILLS=$KILLS cargo test --locked --features test-hooks --test cli \
    authority_faults::authority_sigkill_soak -- --exact --nocapture 2>&1 | grep -E "authority soak|test result|panicked|FAILED" 
done
echo "## 32-agent HTTP claim race, $TRIALS trials"
AGENT_TASK_HTTP_RACE_TRIALS=$TRIALS cargo test --locked --features test-hooks --test cli \
  authority_faults::authority_http_claim_race_32_agents_one_winner_per_trial -- --exact 2>&1 | grep -E "test result|panicked|FAILED"
