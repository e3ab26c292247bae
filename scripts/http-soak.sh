#!/usr/bin/env bash
# Memory and threads of `agent-task serve` under hostile load (release
# build, loopback only, every loop bounded in count and time):
#   1. 256 connections each holding 65,000 bytes of an unfinished request
#      head (just under the 64 KiB limit, so the server must buffer it all);
#   2. 4 connections each trying to send 256 MiB of headers (refused at the
#      limit with 431);
#   3. 3,000 half-open connections (a partial head each, then nothing),
#      first with --head-budget 4096 so that all are held at once, then
#      with the default budget of 256 (the oldest are dropped).
# Each figure is printed next to its anchor: the same server's RSS and
# thread count when idle, just before the load, and the 128 MiB goal.
# BASELINE_BIN=PATH runs the same load against another binary (started
# without the new flags). Not part of the test command.
# Usage: scripts/http-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet --bin agent-task
BIN=$PWD/target/release/agent-task
BASELINE_BIN=${BASELINE_BIN:-}
WORK=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
"$BIN" --data-dir "$WORK/d" data init >/dev/null

start() { # $1 = binary, rest = flags
  local bin=$1
  shift
  : >"$WORK/serve.out"
  AGENT_TASK_NODE_TOKEN=soak-token "$bin" --data-dir "$WORK/d" serve --bind 127.0.0.1:0 "$@" >"$WORK/serve.out" 2>/dev/null &
  PID=$!
  for _ in $(seq 1 200); do
    if [ -s "$WORK/serve.out" ]; then break; fi
    sleep 0.05
  done
  ADDR=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listening"][7:])' "$WORK/serve.out")
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }

load() { # $1 = phase, $2 = label
  python3 - "$1" "$ADDR" "$PID" "$2" <<'EOF'
import socket, sys, time, resource

phase, addr, pid, label = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
host, port = addr.rsplit(":", 1)
port = int(port)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 10000), hard))

def status():
    f = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "Threads"):
            f[k] = v.split()[0]
    return int(f["VmRSS"]) / 1024, int(f["VmHWM"]) / 1024, int(f["Threads"])

idle_rss, _, idle_threads = status()
peak_rss, peak_threads = idle_rss, idle_threads

def sample():
    global peak_rss, peak_threads
    rss, hwm, th = status()
    peak_rss, peak_threads = max(peak_rss, rss, hwm), max(peak_threads, th)

def connect():
    s = socket.socket()
    s.settimeout(10)
    s.connect((host, port))
    return s

def answered(s):
    """True if the server answered or closed within a short read."""
    s.settimeout(0.05)
    try:
        return s.recv(1, socket.MSG_PEEK) is not None
    except (socket.timeout, BlockingIOError):
        return False
    except OSError:
        return True

note = ""
if phase == "heads":
    conns = []
    pad = b"X-Pad: " + b"p" * 990 + b"\r\n"
    for i in range(256):
        s = connect()
        head = b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n"
        while len(head) + len(pad) <= 65000:
            head += pad
        s.sendall(head)
        conns.append(s)
        if i % 16 == 0:
            sample()
    deadline = time.time() + 2
    while time.time() < deadline:
        sample()
        time.sleep(0.05)
    held = sum(1 for s in conns if not answered(s))
    note = f"{held} of 256 still held at the end"
    for s in conns:
        s.close()
elif phase == "huge":
    sent = []
    conns = [connect() for _ in range(4)]
    for s in conns:
        s.sendall(b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(2)
    chunk = b"X-Pad: " + b"p" * (1 << 16) + b"\r\n"
    for s in conns:
        n = 0
        try:
            while n < 256 << 20:
                s.sendall(chunk)
                n += len(chunk)
                if n % (4 << 20) < len(chunk):
                    sample()
        except OSError:
            pass
        sent.append(n)
        sample()
    answers = []
    for s in conns:
        s.settimeout(5)
        try:
            answers.append(s.recv(64).split(b"\r\n")[0].decode())
        except OSError as e:
            answers.append(type(e).__name__)
    note = f"sent per connection before refusal: {[f'{n >> 10} KiB' for n in sent]}; answers: {sorted(set(answers))}"
    for s in conns:
        s.close()
elif phase == "halfopen":
    conns, failed = [], 0
    for i in range(3000):
        try:
            s = connect()
            s.sendall(b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
        except OSError:
            failed += 1
        if i % 100 == 0:
            sample()
    deadline = time.time() + 2
    while time.time() < deadline:
        sample()
        time.sleep(0.05)
    busy = held = other = gone = 0
    for s in conns:
        s.settimeout(0.02)
        try:
            d = s.recv(128, socket.MSG_PEEK)
            if b" 503 " in d:
                busy += 1
            elif d:
                other += 1
            else:
                gone += 1
        except (socket.timeout, BlockingIOError):
            held += 1
        except OSError:
            gone += 1
    note = (f"{len(conns)} connected ({failed} failed to connect): {held} held open by the server,"
            f" {busy} answered 503 server_busy, {other} another answer, {gone} closed without one")
    for s in conns:
        s.close()
sample()
print(f"  {label}: peak RSS {peak_rss:.1f} MiB (idle {idle_rss:.1f} MiB: {peak_rss / idle_rss:.1f}x; goal 128 MiB: {peak_rss / 128:.2f}x)"
      f" | peak threads {peak_threads} (idle {idle_threads}: {peak_threads / idle_threads:.1f}x) | {note}")
EOF
}

run_all() { # $1 = binary, $2 = name, $3 = "new" if it takes the new flags
  echo "$2 ($1):"
  # A long head deadline, so that every connection is still held (the worst
  # case for memory) when the figures are read.
  local hold=()
  if [ "$3" = new ]; then hold=(--head-timeout-ms 120000 --first-byte-timeout-ms 120000 --min-head-rate 0); fi
  start "$1" "${hold[@]}"
  load heads "256 x 65,000-byte unfinished heads"
  stop
  start "$1"
  load huge "4 x 256 MiB of headers"
  stop
  if [ "$3" = new ]; then start "$1" "${hold[@]}" --head-budget 4096; else start "$1"; fi
  load halfopen "3,000 half-open connections$([ "$3" = new ] && echo ' (--head-budget 4096)')"
  stop
  if [ "$3" = new ]; then
    start "$1" "${hold[@]}"
    load halfopen "3,000 half-open connections (default --head-budget 256)"
    stop
  fi
}

echo "machine: $(nproc) cores, $(uname -sr)"
run_all "$BIN" new new
if [ -n "$BASELINE_BIN" ]; then run_all "$BASELINE_BIN" baseline old; fi
