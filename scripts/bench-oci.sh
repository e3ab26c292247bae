#!/usr/bin/env bash
# `agent-task collect` under the oci runtime (podman) against its floor
# (issue 34, goal 3: collect <= 1.5x the floor): a bare `podman run` of the
# same pinned arguments, plus `fsync-probe` doing the file and directory
# fsyncs one collect's durability rules require (the same 7 + 9 as a bwrap
# collect: docs/transfer.md, "What collecting costs") on the data
# directory's file system; interleaved with cmdbench, the load average
# printed. The engine gets a private vfs store and a local image built
# from the host's static busybox (no registry): needs podman and
# busybox-static (scripts/install-deps.sh). Without podman it says so and
# exits 69. Each round runs in its own shuffled order (cmdbench
# --shuffle). AGENT_TASK_BIN runs another build; AGENT_TASK_BIN_BEFORE adds a
# second build to the same interleaved run. With strace installed, one
# more collect is traced and its fsyncs counted.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-1}
command -v podman >/dev/null || { echo "bench-oci: podman is not installed" >&2; exit 69; }
FILE_FSYNCS=7
DIR_FSYNCS=9
cargo build --release --locked --quiet --bin agent-task --example cmdbench --example fsync-probe
bin=${AGENT_TASK_BIN:-$PWD/target/release/agent-task}
before=${AGENT_TASK_BIN_BEFORE:-}
bench=$PWD/target/release/examples/cmdbench
fsprobe=$PWD/target/release/examples/fsync-probe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AGENT_TASK_DATA_DIR="$work/data"
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

# A private engine store, and an image of one static busybox, pinned by digest.
mkdir -p "$work/engine" "$work/rootfs/bin" "$work/rootfs/etc" "$work/rootfs/tmp"
cat > "$work/engine/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$work/engine/graph"
runroot = "$work/engine/run"
CONF
runtime_line=""
command -v runc >/dev/null && runtime_line='runtime = "runc"'
cat > "$work/engine/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
$runtime_line
CONF
export CONTAINERS_STORAGE_CONF="$work/engine/storage.conf" CONTAINERS_CONF="$work/engine/containers.conf"
cp /bin/busybox "$work/rootfs/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$work/rootfs/bin/$a"; done
tar -C "$work/rootfs" --numeric-owner --owner=0 --group=0 -cf "$work/rootfs.tar" .
podman import -q "$work/rootfs.tar" localhost/agent-task-bench:oci >/dev/null
image=$(podman image inspect --format '{{index .RepoDigests 0}}' localhost/agent-task-bench:oci)

"$bin" init >/dev/null
python3 - > "$work/one.json" <<'PY'
import json
print(json.dumps({"schema": "agent-task.workflow/v1", "name": "bench1", "steps": [
  {"id": "t0", "action_class": "command", "required": True,
   "criteria": [{"id": "ok", "required": True, "text": "exits 0"}],
   "recipe": {"argv": ["true"], "timeout_ms": 60000, "network": False}}]}))
PY
"$bin" repo add demo/one --source fixtures/repos/basic >/dev/null
"$bin" requirement install --repo demo/one --profile default --file "$work/one.json" >/dev/null
"$bin" token issue --owner bench --agent a1 --out "$work/token" >/dev/null
pk=$("$bin" keygen --collector-dir "$work/c" | j '["public_key"]')
reg=$("$bin" enroll --repo demo/one --profile default --step t0 --executor bench --public-key "$pk" | j '["registration_id"]')
"$bin" profile install --registration "$reg" --step t0 --runtime oci --oci-image "$image" >/dev/null
export AGENT_TASK_TOKEN_FILE="$work/token"

n_exec=$((RUNS + WARMUP))
[ -n "$before" ] && n_exec=$((2 * n_exec))
n_exec=$((n_exec + 1))
echo "# preparing $n_exec claimed executions" >&2
: > "$work/descs"
for i in $(seq 1 "$n_exec"); do
  mkdir -p "$work/ws$i"; echo "$i" > "$work/ws$i/n.txt"
  "$bin" change open --repo demo/one --profile default --workspace "$work/ws$i" >/dev/null
  task=$("$bin" checkpoint --workspace "$work/ws$i" | j '["tasks"][0]["task_id"]')
  "$bin" collector-claim "$task" --descriptor-out "$work/d$i.json" >/dev/null
  echo "$work/d$i.json" >> "$work/descs"
done
head -n $((RUNS + WARMUP)) "$work/descs" > "$work/descs.after"
tail -n +$((RUNS + WARMUP + 1)) "$work/descs" | head -n $((RUNS + WARMUP)) > "$work/descs.before"
traced=$(tail -n 1 "$work/descs")

# The bare engine run: the pinned arguments with a fresh snapshot.
mkdir -m 755 "$work/snap"
mapfile -t bare < <("$bin" runtime probe --runtime oci --oci-image "$image" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["program"])
for a in d["pinned_args"]:
    print(a.replace("{snapshot}", sys.argv[1]))
for a in ["--name", "agent-task-bench-{i}", "--", d["image"]["reference"], "true"]:
    print(a)
' "$work/snap")

mkdir -m 700 "$work/fsync"
cases=(--label "podman run true (anchor)" -- "${bare[@]}"
  --label "fsync probe ($FILE_FSYNCS file, $DIR_FSYNCS dir)" -- "$fsprobe" "$work/fsync" "$FILE_FSYNCS" "$DIR_FSYNCS"
  --label "agent-task collect (oci true)" -- "$bin" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "{line:$work/descs.after}" --collector-dir "$work/c")
[ -n "$before" ] && cases+=(--label "collect, AGENT_TASK_BIN_BEFORE" -- "$before" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "{line:$work/descs.before}" --collector-dir "$work/c")
echo "# oci collect against its floor, podman $(podman --version | cut -d" " -f3), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# load before: $(uptime)"
"$bench" --runs "$RUNS" --warmup "$WARMUP" --shuffle --json "${cases[@]}" > "$work/collect.json"
echo "# load after:  $(uptime)"
python3 - "$work/collect.json" "$work/c" <<'PY'
import json, sys, glob, statistics
def sealed_json(p):
    # a sealed collector file: "ATSEAL1\n", u64be length, body, 32-byte MAC (not checked here)
    b = open(p, "rb").read()
    n = int.from_bytes(b[8:16], "big")
    return json.loads(b[16:16 + n])
rows = json.load(open(sys.argv[1]))
recs = [sealed_json(p) for p in glob.glob(sys.argv[2] + "/executions/*/record.sealed")]
assert all(r["outcome"] == "passed" for r in recs), "every collect must pass"
durs = sorted(r["run"]["duration_ms"] for r in recs)
for r in rows:
    print(f'{r["label"]:<34} median {r["median_ms"]:8.2f} ms  p10 {r["p10_ms"]:8.2f}  p90 {r["p90_ms"]:8.2f}')
bare, fs, col = (rows[i]["median_ms"] for i in range(3))
floor = bare + fs
ratio = col / floor
print(f'floor = podman run true {bare:.2f} ms + fsync probe {fs:.2f} ms = {floor:.2f} ms')
print(f'collect {col:.2f} ms = {ratio:.2f}x the floor; goal <= 1.5x: {"met" if ratio <= 1.5 else "NOT met"}')
if len(rows) > 3:
    b = rows[3]["median_ms"]
    print(f'AGENT_TASK_BIN_BEFORE: {b:.2f} ms = {b / floor:.2f}x the floor (after/before {col / b:.2f})')
print(f'outside the container run (collect - podman run true): {col - bare:.2f} ms; in-container time recorded by collect (podman client wall time): median {statistics.median(durs):.2f} ms over {len(durs)} runs')
PY
if command -v strace >/dev/null; then
  # Only agent-task's own fsyncs count (its main thread makes them all;
  # no -f): the engine's (its store, its events log) are the anchor's.
  strace -y -qq -o "$work/fsyncs.txt" -e trace=fsync,fdatasync,sync_file_range \
    "$bin" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$traced" --collector-dir "$work/c" >/dev/null
  python3 scripts/count-fsyncs.py "$work/fsyncs.txt" "$FILE_FSYNCS" "$DIR_FSYNCS" "fsyncs by agent-task in one traced collect"
fi
