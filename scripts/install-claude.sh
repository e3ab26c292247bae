#!/usr/bin/env bash
# Installs the real Claude Code CLI from its npm package, at a pinned
# version, under target/claude-code/ (ignored by git), for the review
# collector's tests and for operators who want to try `profile install
# --runtime review` against it. Prints the path of the installed `claude`
# (node_modules/.bin/claude, a link to the package's cli.js) on stdout.
# Exits 69 with a `SKIP:` line on stderr when npm (or node) is missing or
# the install fails; the tests then skip with that reason.
#
# 2.1.112 is pinned because it is the last release whose npm package is the
# node script cli.js (with `#!/usr/bin/env node`, engines node >= 18); later
# releases ship a native binary through per-platform packages and need node
# >= 22. The review profile pins the resolved cli.js and the node that runs
# it, each by path and SHA-256 (docs/review.md).
set -euo pipefail
cd "$(dirname "$0")/.."
version="2.1.112"
root="$PWD/target/claude-code"
bin="$root/node_modules/.bin/claude"
stamp="$root/installed.stamp"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "SKIP: npm and node are needed to install @anthropic-ai/claude-code@$version" >&2
  exit 69
fi
if [ -x "$bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ]; then
  echo "$bin"
  exit 0
fi
rm -rf "$root"
mkdir -p "$root"
# --ignore-scripts: nothing of the package runs at install; --omit=optional:
# the image libraries (sharp) are not needed without tools.
if ! npm install --prefix "$root" --no-audit --no-fund --ignore-scripts --omit=optional \
  --loglevel=error "@anthropic-ai/claude-code@$version" >&2; then
  echo "SKIP: npm could not install @anthropic-ai/claude-code@$version" >&2
  exit 69
fi
if [ ! -x "$bin" ]; then
  echo "SKIP: the package installed no node_modules/.bin/claude" >&2
  exit 69
fi
# npm leaves group-writable modes under some umasks; a pinned file must not be.
chmod -R go-w "$root"
echo "$version" >"$stamp"
echo "$bin"
