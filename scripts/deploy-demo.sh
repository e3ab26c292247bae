#!/usr/bin/env bash
# The privilege-separated deployment of docs/security.md, run literally:
# this script extracts the blocks marked `<!-- walkthrough: USER -->` from
# docs/security.md, "The walkthrough", and runs each as its user with two
# throw-away Unix users (created first, removed at the end, also on
# failure), printing each step's time. The document is the one source of
# the commands: what it says is what runs (tests/cli/deploy.rs runs
# this script in the suite).
#
#   sudo scripts/deploy-demo.sh [--binary PATH]
#
# Needs root (it creates users, a sudoers rule and root-owned files) and
# sudo, setpriv, useradd, git, bwrap and jq (scripts/install-deps.sh). The
# binary defaults to target/release/agent-task (built when missing). The
# users are atop<N>/atag<N>; every path the walkthrough writes (binary,
# wrapper, repository) goes under one temporary root-owned directory, and
# the sudoers rule is /etc/sudoers.d/agent-task-demo-<N>. The managed Stop
# hook's files are the machine's own (/etc/claude-code, /etc/codex,
# /etc/agent-task): each is saved first and put back on exit, byte for
# byte, or removed when it did not exist.
#
# Block conventions (docs/security.md): the `env` block is the first part
# of every step's shell, with its OP, AGENT, BUILT, BIN, WRAPPER, SUDOERS,
# SHARE and PORT lines replaced by this run's values; a step runs under
# `sh -eu`, as root in the repository root, or as its user (setpriv: the
# user's uid, gid and groups, a reset environment, HOME, cwd HOME); a line
# `handover: NAME=value` on a step's stdout sets NAME for the later steps.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
doc=docs/security.md

binary=
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "deploy-demo: unknown argument $1" >&2; exit 64 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "deploy-demo: must run as root: it creates two users, a sudoers rule and root-owned files (sudo $0)" >&2
  exit 77
fi
for t in useradd userdel setpriv sudo git bwrap jq; do
  command -v "$t" >/dev/null || { echo "deploy-demo: $t is not installed (scripts/install-deps.sh)" >&2; exit 69; }
done
if [ -z "$binary" ]; then
  binary=$root/target/release/agent-task
  [ -x "$binary" ] || cargo build --release --locked --quiet --bin agent-task
fi
binary=$(realpath "$binary")

n=$$$(( $(date +%N | sed 's/^0*//;s/^$/0/') % 10000 ))
op=atop$n
agent=atag$n
base=/tmp/agent-task-deploy-$n
# A free port for the endpoint (the walkthrough names one).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $(( 20000 + $$ % 20000 )))
sudoers=/etc/sudoers.d/agent-task-demo-$n
made_users=()
steps=$base/steps
# The machine-wide files the walkthrough's managed hook writes: each
# directory is put back as it was (its bytes, owners and modes, or its
# absence) on exit, also on failure. The copies live outside $base.
managed_dirs=(/etc/claude-code /etc/codex /etc/agent-task)
saved=$(mktemp -d /root/.agent-task-deploy-demo-etc.XXXXXX 2>/dev/null || mktemp -d)
chmod 0700 "$saved"

restore_etc() {
  for d in "${managed_dirs[@]}"; do
    name=${d#/etc/}
    if [ -e "$saved/$name.absent" ]; then
      rm -rf "$d"
    elif [ -e "$saved/$name" ]; then
      rm -rf "$d"
      cp -a "$saved/$name" "$d"
    fi
  done
  rm -rf "$saved"
}

cleanup() {
  restore_etc
  for u in "${made_users[@]}"; do
    if [ -f "/home/$u/serve.pid" ]; then
      kill "$(cat "/home/$u/serve.pid")" 2>/dev/null || true
    fi
    # Every process of a user this run created (the endpoint, a stray child).
    pkill -KILL -u "$u" 2>/dev/null || true
  done
  rm -f "$sudoers"
  for u in "${made_users[@]}"; do
    userdel -r -f "$u" >/dev/null 2>&1 || true
  done
  rm -rf "$base"
}
trap cleanup EXIT
# A signal exits through the EXIT trap too (bash skips it when killed otherwise).
trap 'exit 130' INT
trap 'exit 143' TERM HUP
for d in "${managed_dirs[@]}"; do
  name=${d#/etc/}
  if [ -e "$d" ] || [ -L "$d" ]; then
    cp -a "$d" "$saved/$name"
  else
    : >"$saved/$name.absent"
  fi
done

# Extract the blocks: steps/NN.USER.sh, in document order.
install -d -m 0755 "$base" "$base/bin" "$base/sbin"
install -d -m 0700 "$steps"
awk -v dir="$steps" '
  /^<!-- walkthrough: [a-z]+ -->$/ { user = $3; want = 1; next }
  want && /^```sh$/ { n++; file = sprintf("%s/%02d.%s.sh", dir, n, user); inblock = 1; want = 0; next }
  inblock && /^```$/ { inblock = 0; close(file); next }
  inblock { print > file }
' "$doc"
env_block=$(ls "$steps"/*.env.sh 2>/dev/null | head -n 1)
[ -n "$env_block" ] || { echo "deploy-demo: no walkthrough env block in $doc" >&2; exit 65; }
ls "$steps"/*.root.sh "$steps"/*.op.sh "$steps"/*.agent.sh >/dev/null

# The env block with this run's names and paths. Each replaced name must
# be set on exactly one line of its own, or a step could reach the host's
# real paths (/usr/local/bin, /etc/sudoers.d/agent-task-collect, ...).
for name in OP AGENT BUILT BIN WRAPPER SUDOERS SHARE PORT; do
  if [ "$(grep -c "^$name=" "$env_block")" -ne 1 ]; then
    echo "deploy-demo: the walkthrough's env block must set $name=... on exactly one line" >&2
    exit 65
  fi
done
sed -e "s|^OP=.*|OP=$op|" -e "s|^AGENT=.*|AGENT=$agent|" \
    -e "s|^BUILT=.*|BUILT=$binary|" -e "s|^BIN=.*|BIN=$base/bin/agent-task|" \
    -e "s|^WRAPPER=.*|WRAPPER=$base/sbin/agent-task-collect|" \
    -e "s|^SUDOERS=.*|SUDOERS=$sudoers|" -e "s|^SHARE=.*|SHARE=$base/share|" \
    -e "s|^PORT=.*|PORT=$port|" "$env_block" >"$base/env.sh"
chmod 0644 "$base/env.sh"
# The users exist before the first step runs so that cleanup removes them.
for u in "$op" "$agent"; do
  useradd -m -U -s /bin/sh "$u"
  made_users+=("$u")
done

path="$base/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
handover=$base/handover.sh
: >"$handover"
chmod 0644 "$handover"
total_start=$(date +%s%N)
printf 'deploy-demo: operator %s, agent %s, endpoint 127.0.0.1:%s, docs/security.md\n' "$op" "$agent" "$port" >&2
for f in "$steps"/*.sh; do
  user=$(basename "$f" .sh); user=${user#*.}
  [ "$user" = env ] && continue
  title=$(sed -n '1s/^# *//p' "$f")
  script=$(cat "$base/env.sh" "$handover" "$f")
  out=$base/out
  start=$(date +%s%N)
  printf '\n\033[1m== %s\033[0m\n' "$title" >&2
  case $user in
    root)
      env -i PATH="$path" HOME=/root LC_ALL=C sh -eu -c "$script" >"$out" ;;
    op|agent)
      if [ "$user" = op ]; then u=$op; else u=$agent; fi
      (cd "/home/$u" && setpriv --reuid "$u" --regid "$u" --init-groups -- \
        env -i PATH="$path" HOME="/home/$u" USER="$u" LC_ALL=C sh -eu -c "$script") >"$out" ;;
    *) echo "deploy-demo: unknown walkthrough user $user in $doc" >&2; exit 65 ;;
  esac || { rc=$?; cat "$out" >&2; echo "deploy-demo: FAILED at \"$title\" (as $user, exit $rc)" >&2; exit 1; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  grep -v '^handover: ' "$out" >&2 || true
  sed -n 's/^handover: \([A-Z_][A-Z0-9_]*=[A-Za-z0-9._:@\/-]*\)$/\1/p' "$out" >>"$handover"
  printf '\033[36m   %-6s %6d ms  %s\033[0m\n' "$user" "$ms" "$title" >&2
done
ms=$(( ($(date +%s%N) - total_start) / 1000000 ))
printf '\ndeploy-demo: passed, %d ms in all\n' "$ms" >&2
