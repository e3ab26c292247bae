#!/usr/bin/env bash
# `agent-task land` of a 10,000-file change vs the anchor
# `git add -A && git commit -q` of the same tree, side by side in one run.
#
# Land is one-shot (it moves the branch and makes the subject stale), so
# the script prepares ONE qualified Change whose workspace adds FILES new
# files (distinct contents, 64-300 bytes, 100 directories) to a git fixture
# repository, then keeps a pristine copy of the data directory and of the
# source repository. Each run first restores both (untimed: rm + cp -a),
# then times exactly one command:
#   anchor: in a fresh copy of the source repository whose work tree holds
#           the same files: `git add -A && git commit -q` (hashes and writes
#           every new blob, the trees and the commit; sh startup included);
#   land:   `agent-task land` (lock, every admission recheck including the
#           re-verified signed transfer, the CAS reads of every blob, one
#           `git fast-import` for the blobs, the temporary index, write-tree,
#           commit-tree, the durable intent, update-ref, the final record).
# Both start from the same page-cache state (the restore just read the
# files). Runs are interleaved (anchor, land, anchor, land, ...); the
# script prints medians, p10/p90 and the ratio land/anchor.
#
# Then `agent-task verify` of the landed commit (no data directory: read
# the note, recompute the revision from the tree, check the 3 envelopes)
# vs the anchor `git ls-tree -r --object-only main | git cat-file --batch
# | sha256sum` (every blob read through git once), interleaved likewise,
# with the goal (issue 34: verify at most 1.0x the anchor) and the load
# average; BASELINE_BIN=another build adds its verify to the rotation.
# RUNS (default 10) interleaved land rounds, VRUNS (default 40) verify
# rounds, each after WARMUP (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
# verify is cheap next to land (one run is about the anchor's 60-70 ms):
# more interleaved runs give its ratio a stable median.
VRUNS=${VRUNS:-40}
WARMUP=${WARMUP:-1}
FILES=${FILES:-10000}
for v in RUNS VRUNS; do
  case ${!v} in ''|*[!0-9]*|0) echo "bench-land: $v must be a whole number of at least 1" >&2; exit 64 ;; esac
done
cargo build --release --locked --quiet --bin agent-task
bin=$PWD/target/release/agent-task
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AGENT_TASK_DATA_DIR="$work/data"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

echo "# preparing a qualified change adding $FILES files" >&2
cp -a fixtures/repos/basic "$work/src"
git -C "$work/src" init -q -b main
git -C "$work/src" add -A
git -C "$work/src" commit -q -m init
cp -a fixtures/repos/basic "$work/ws"
python3 - "$work/ws" "$FILES" <<'PY'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
for i in range(n):
    d = os.path.join(root, "gen", f"d{i % 100:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}.txt"), "w") as f:
        f.write(f"file {i}\n" + "x" * rnd.randint(50, 290) + "\n")
PY
python3 - > "$work/wf.json" <<'PY'
import json
print(json.dumps({"schema": "agent-task.workflow/v1", "name": "bench-land", "steps": [
    {"id": "t0", "action_class": "command", "required": True,
     "criteria": [{"id": "ok", "required": True, "text": "exits 0"}],
     "recipe": {"argv": ["true"], "timeout_ms": 600000, "network": False}}]}))
PY
"$bin" init >/dev/null
"$bin" repo add demo/land --source "$work/src" >/dev/null
"$bin" requirement install --repo demo/land --profile default --file "$work/wf.json" >/dev/null
"$bin" token issue --owner bench --agent a1 --out "$work/token" >/dev/null
pk=$("$bin" keygen --collector-dir "$work/c" | j '["public_key"]')
reg=$("$bin" enroll --repo demo/land --profile default --step t0 --executor bench --public-key "$pk" | j '["registration_id"]')
"$bin" profile install --registration "$reg" --step t0 --runtime bwrap >/dev/null
export AGENT_TASK_TOKEN_FILE="$work/token"
ch=$("$bin" change open --repo demo/land --profile default --workspace "$work/ws" | j '["change_id"]')
task=$("$bin" checkpoint --workspace "$work/ws" | j '["tasks"][0]["task_id"]')
"$bin" collector-claim "$task" --descriptor-out "$work/d.json" >/dev/null
"$bin" --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$work/d.json" --collector-dir "$work/c" >/dev/null
"$bin" finalize --change "$ch" >/dev/null
test "$("$bin" qualify --change "$ch" | j '["qualified"]')" = True
unset AGENT_TASK_TOKEN_FILE
mv "$work/data" "$work/data.pristine"
mv "$work/src" "$work/src.pristine"
# The anchor's pristine repository: the same commit, the change's files in
# its work tree (git status shows them as new).
cp -a "$work/src.pristine" "$work/anchor.pristine"
cp -a "$work/ws/." "$work/anchor.pristine/"

echo "# land vs git add -A && git commit, $FILES new files, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
python3 - "$work" "$bin" "$ch" "$RUNS" "$WARMUP" "$VRUNS" <<'PY'
import os, shutil, statistics, subprocess, sys, time
work, bin_, ch, runs, warmup, vruns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])

def restore(name):
    shutil.rmtree(f"{work}/{name}", ignore_errors=True)
    subprocess.run(["cp", "-a", f"{work}/{name}.pristine", f"{work}/{name}"], check=True)

def anchor():
    restore("anchor")
    t = time.perf_counter()
    subprocess.run(["sh", "-c", "git add -A && git commit -q -m anchor"], cwd=f"{work}/anchor", check=True)
    return time.perf_counter() - t

def land():
    restore("data"); restore("src")
    t = time.perf_counter()
    out = subprocess.run([bin_, "land", "--update-worktree", "--repo", "demo/land", "--change", ch],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if out.returncode != 0 or b'"landed":true' not in out.stdout.replace(b" ", b""):
        sys.exit(f"land failed: {out.stdout!r} {out.stderr!r}")
    return dt

cases = [("git add -A && git commit (anchor)", anchor), ("agent-task land", land)]
ms = {label: [] for label, _ in cases}
for i in range(warmup + runs):
    for label, f in (cases if i % 2 == 0 else cases[::-1]):
        dt = f() * 1000
        if i >= warmup:
            ms[label].append(dt)
# Both produce the same tree.
trees = [subprocess.run(["git", "-C", f"{work}/{d}", "rev-parse", "main^{tree}"], capture_output=True,
                        text=True, check=True).stdout.strip() for d in ("anchor", "src")]
base = statistics.median(ms[cases[0][0]])
for label, _ in cases:
    xs = sorted(ms[label])
    q = statistics.quantiles(xs, n=10) if len(xs) > 1 else [xs[0]] * 9
    med = statistics.median(xs)
    print(f"{label:<36} median {med:9.1f} ms  p10 {q[0]:9.1f}  p90 {q[-1]:9.1f}  ratio {med / base:.2f}x")
print(f"runs {runs} (+{warmup} warmup); landed tree {'==' if trees[0] == trees[1] else '!='} anchor tree")

# verify of the landed commit vs reading every blob through git once.
key = f"{work}/authority.hex"
with open(key, "w") as f:
    import json
    f.write(json.loads(subprocess.run([bin_, "authority", "key"], capture_output=True, check=True,
                                      env={**os.environ, "AGENT_TASK_DATA_DIR": f"{work}/data"}).stdout)["public_key"])
env = {k: v for k, v in os.environ.items() if k != "AGENT_TASK_DATA_DIR"}

def read_blobs():
    t = time.perf_counter()
    subprocess.run(["sh", "-c", "git ls-tree -r --object-only main | git cat-file --batch | sha256sum >/dev/null"],
                   cwd=f"{work}/src", check=True)
    return time.perf_counter() - t

def verify(b=bin_):
    t = time.perf_counter()
    out = subprocess.run([b, "verify", "--repo", f"{work}/src", "--commit", "main", "--key", key],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t
    if out.returncode != 0 or b'"verified":true' not in out.stdout:
        sys.exit(f"verify failed: {out.stdout!r} {out.stderr!r}")
    return dt

cases = [("git ls-tree | git cat-file --batch (anchor)", read_blobs), ("agent-task verify", verify)]
# BASELINE_BIN=another agent-task build: its verify of the same commit runs
# interleaved too (verify reads no data directory), for a before/after.
if os.environ.get("BASELINE_BIN"):
    cases.append(("agent-task verify, baseline binary", lambda: verify(os.environ["BASELINE_BIN"])))
ms = {label: [] for label, _ in cases}
for i in range(warmup + vruns):
    for label, f in (cases if i % 2 == 0 else cases[::-1]):
        dt = f() * 1000
        if i >= warmup:
            ms[label].append(dt)
base = statistics.median(ms[cases[0][0]])
for label, _ in cases:
    xs = sorted(ms[label])
    q = statistics.quantiles(xs, n=10) if len(xs) > 1 else [xs[0]] * 9
    med = statistics.median(xs)
    print(f"{label:<44} median {med:9.1f} ms  p10 {q[0]:9.1f}  p90 {q[-1]:9.1f}  ratio {med / base:.2f}x")
r = statistics.median(ms[cases[1][0]]) / base
print(f"verify / anchor ({vruns} interleaved runs): {r:.2f}x (goal <= 1.0x: {'met' if r <= 1.0 else 'NOT met'}); "
      f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
