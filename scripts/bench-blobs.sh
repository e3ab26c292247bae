#!/usr/bin/env bash
# Blob-store figures (issue 35; docs/blob-store.md): put and get latency and
# throughput of small (1 KB) and large (64 MiB) blobs through agent-task's
# blob store (release build, in process: scripts/s3-probe.rs `store`) against
# the local CAS and against an s3s-fs server on loopback, next to the anchor:
# the same objects to the same server through a plain client on the same
# crates with no hashing, no spool and no HEAD (s3-probe `anchor`; and
# `anchor-checksum`, the same with S3's x-amz-checksum-sha256 header computed
# before the clock starts, so the server's own verification is apart). The
# ratios are ours / anchor in time per object (1.00x: as fast as the plain
# client; above: slower, the SHA-256 verification and the spool counted
# against us); the goal for large blobs is 1.2x. Rounds are interleaved;
# figures are medians over the rounds. Then the data node's bulk ingest of
# small inline records with and without a bucket configured (inline content
# never touches the bucket: the ratio should be 1.0 and the bucket gains no
# object). The load average is printed before and after. On a shared
# machine the load moves between separate runs, so each round also runs
# s3-probe `pair` on large objects: ours and the anchor object by object in
# one process, the ratio taken per object (the median of the rounds' median
# ratios is printed last, "paired").
# With BASE_PROBE=PATH (an s3-probe built from another commit, e.g. main's in
# another target directory), that build's blob store runs in the same rounds
# against the same bucket, interleaved, so a change is measured before and
# after under the same load.
# Not part of the test command.
# Usage: [BASE_PROBE=PATH] scripts/bench-blobs.sh [ROUNDS] [SMALL_COUNT] [LARGE_COUNT] [BULK_RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SMALL_COUNT=${2:-200}
LARGE_COUNT=${3:-4}
BULK_RECORDS=${4:-20000}
cargo build --release --locked --quiet --bin agent-task --example s3-probe
BIN=$PWD/target/release/agent-task
PROBE=$PWD/target/release/examples/s3-probe
BASE_PROBE=${BASE_PROBE:-}
WHO="local bucket anchor anchorsum"
if [ -n "$BASE_PROBE" ]; then
  [ -x "$BASE_PROBE" ] || { echo "bench-blobs: BASE_PROBE $BASE_PROBE is not an executable" >&2; exit 64; }
  WHO="$WHO base"
fi
eval "$(scripts/install-interop.sh 2>/dev/null)"
S3S=${AGENT_TASK_INTEROP_S3S:-}
[ -x "$S3S" ] || { echo "bench-blobs: s3s-fs is not installed (scripts/install-interop.sh)" >&2; exit 69; }
WORK=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
umask 077
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

# The server: s3s-fs over a directory, bucket `bench`.
mkdir -p "$WORK/s3/bench"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$S3S" --host 127.0.0.1 --port "$PORT" --access-key AKIDBENCH --secret-key bench-secret-key "$WORK/s3" \
  >/dev/null 2>&1 &
PID=$!
for _ in $(seq 1 200); do
  if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1)' "$PORT" 2>/dev/null; then break; fi
  sleep 0.05
done
printf '{"access_key_id":"AKIDBENCH","secret_access_key":"bench-secret-key"}' >"$WORK/creds.json"
printf '{"kind":"s3","endpoint":"http://127.0.0.1:%s","region":"us-east-1","bucket":"bench","prefix":"p/","path_style":true,"credentials_file":"%s","timeout_ms":60000}' \
  "$PORT" "$WORK/creds.json" >"$WORK/config.json"
"$BIN" --data-dir "$WORK/local" data init >/dev/null
"$BIN" --data-dir "$WORK/bucket" data init >/dev/null
cp "$WORK/config.json" "$WORK/bucket/blob-store.json"
[ "$("$BIN" --data-dir "$WORK/bucket" info | python3 -c 'import json,sys; print(json.load(sys.stdin)["blob_store"])')" = s3 ]

field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }
ratio() { python3 -c 'import sys; print(f"{float(sys.argv[1])/float(sys.argv[2]):.2f}x")' "$1" "$2"; }
objects() { find "$WORK/s3/bench" -type f -path '*/sha256/*' | wc -l; }

declare -A F
declare -A P
for round in $(seq 1 "$ROUNDS"); do
  for size in small large; do
    if [ $size = small ]; then bytes=1024; n=$SMALL_COUNT; else bytes=$((64 << 20)); n=$LARGE_COUNT; fi
    # Who goes first turns round by round: a server writing one large
    # object after another slows down as its dirty pages pile up.
    order=$WHO
    for _ in $(seq 2 "$round"); do order="${order#* } ${order%% *}"; done
    for who in $order; do
      case $who in
        local) out=$("$PROBE" store "$WORK/local" $bytes "$n") ;;
        bucket) out=$("$PROBE" store "$WORK/bucket" $bytes "$n") ;;
        anchor) out=$("$PROBE" anchor "$WORK/config.json" $bytes "$n") ;;
        anchorsum) out=$("$PROBE" anchor-checksum "$WORK/config.json" $bytes "$n") ;;
        base) out=$("$BASE_PROBE" store "$WORK/bucket" $bytes "$n") ;;
      esac
      for k in put_ms get_ms put_mib_s get_mib_s; do
        F[${size}_${who}_$k]+="$(field "$out" $k) "
      done
    done
  done
  out=$("$PROBE" pair "$WORK/bucket" "$WORK/config.json" $((64 << 20)) "$LARGE_COUNT")
  for k in put_ratio get_ratio put_ratio_checksum; do
    P[$k]+="$(field "$out" $k) "
  done
  # Keep the disk from filling with 64 MiB objects between rounds (no
  # row names these objects).
  rm -rf "$WORK/s3/bench/p/anchor" "$WORK/s3/bench/p/sha256" "$WORK/local/cas/sha256"
  mkdir -m 700 "$WORK/local/cas/sha256"
done

for size in small large; do
  if [ $size = small ]; then label="1 KB x $SMALL_COUNT"; goal="(no goal)"; else label="64 MiB x $LARGE_COUNT"; goal="(goal <= 1.2x)"; fi
  declare -A M=()
  for who in $WHO; do
    for k in put_ms get_ms put_mib_s get_mib_s; do
      # shellcheck disable=SC2086
      M[${who}_$k]=$(median ${F[${size}_${who}_$k]})
    done
  done
  echo "$label, local CAS:     put ${M[local_put_ms]} ms (${M[local_put_mib_s]} MiB/s), get ${M[local_get_ms]} ms (${M[local_get_mib_s]} MiB/s)"
  echo "$label, s3s-fs, ours:  put ${M[bucket_put_ms]} ms (${M[bucket_put_mib_s]} MiB/s), get ${M[bucket_get_ms]} ms (${M[bucket_get_mib_s]} MiB/s)"
  echo "$label, s3s-fs, anchor: put ${M[anchor_put_ms]} ms (${M[anchor_put_mib_s]} MiB/s), get ${M[anchor_get_ms]} ms (${M[anchor_get_mib_s]} MiB/s)"
  if [ -n "$BASE_PROBE" ]; then
    echo "$label, s3s-fs, BASE_PROBE's store: put ${M[base_put_ms]} ms (${M[base_put_mib_s]} MiB/s), get ${M[base_get_ms]} ms (${M[base_get_mib_s]} MiB/s)"
    echo "$label, BASE_PROBE's store / anchor: put $(ratio "${M[base_put_ms]}" "${M[anchor_put_ms]}"), get $(ratio "${M[base_get_ms]}" "${M[anchor_get_ms]}")"
  fi
  echo "$label, s3s-fs, anchor + S3 checksum header: put ${M[anchorsum_put_ms]} ms (${M[anchorsum_put_mib_s]} MiB/s)"
  echo "$label, ours / anchor: put $(ratio "${M[bucket_put_ms]}" "${M[anchor_put_ms]}"), get $(ratio "${M[bucket_get_ms]}" "${M[anchor_get_ms]}") $goal"
  echo "$label, of the put ratio the server's own checksum verification (which the blob store always asks for) is $(ratio "${M[anchorsum_put_ms]}" "${M[anchor_put_ms]}"); ours / that anchor: put $(ratio "${M[bucket_put_ms]}" "${M[anchorsum_put_ms]}")"
done

# shellcheck disable=SC2086
echo "64 MiB x $LARGE_COUNT, paired object by object, median of the rounds' median ours / anchor:" \
  "put $(median ${P[put_ratio]})x, get $(median ${P[get_ratio]})x (goal <= 1.2x);" \
  "put / anchor with the checksum header $(median ${P[put_ratio_checksum]})x"

# Bulk ingest of short inline records, with and without a bucket configured.
python3 -c '
import json, sys
n = int(sys.argv[1])
for i in range(n):
    print(json.dumps({"text": f"bulk record {i}: the quick brown fox jumps over the lazy dog"}))
' "$BULK_RECORDS" >"$WORK/bulk.jsonl"
now() { python3 -c 'import time; print(time.monotonic())'; }
declare -A R
before=$(objects)
for round in $(seq 1 "$ROUNDS"); do
  for who in local bucket; do
    rm -rf "$WORK/bulk-$who"
    "$BIN" --data-dir "$WORK/bulk-$who" data init >/dev/null
    if [ $who = bucket ]; then cp "$WORK/config.json" "$WORK/bulk-$who/blob-store.json"; fi
    start=$(now)
    out=$("$BIN" --data-dir "$WORK/bulk-$who" data collect --collection default --collector text \
      --jsonl "$WORK/bulk.jsonl" 2>/dev/null)
    end=$(now)
    R[$who]+="$(python3 -c 'import sys; print(int(sys.argv[1])/(float(sys.argv[3])-float(sys.argv[2])))' \
      "$(field "$out" inserted)" "$start" "$end") "
  done
done
# shellcheck disable=SC2086
L=$(median ${R[local]})
# shellcheck disable=SC2086
B=$(median ${R[bucket]})
echo "bulk --jsonl ingest of $BULK_RECORDS short inline records: local $L records/s, bucket configured $B records/s:" \
  "$(ratio "$B" "$L") (goal 1.0x, unchanged); objects the bucket gained: $(($(objects) - before))"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
