#!/usr/bin/env bash
# The main job, end to end: build the release binary and run the whole loop
# on temporary directories, showing each step's JSON. An operator sets up a
# fixture git repository whose workflow protects test.sh and tests/**; an
# agent first tries to pass by rewriting the test to `exit 0` (refused: the
# revision never qualifies and nothing is collected), then works honestly:
# its change fails the operator's test inside the bwrap sandbox, gets fixed,
# passes, is reviewed by the operator-pinned reviewer (the workflow's review
# step; in the demo a stand-in that speaks Claude Code's print-mode JSON and
# is not a model), is finalised into a receipt, qualifies, and the operator lands it
# as a commit on `main` that contains no local hook settings, with signed
# attestations in a git note. The repository has a forge: a fake GitHub on
# loopback (scripts/fake-forge.py: a real git server, git http-backend
# behind basic auth, and the GitHub endpoints agent-task calls). The failing
# version and then the qualified one are proposed as one pull request, their
# commit statuses published; `land --push` pushes the landing and closes the
# request, and a fresh clone of the forge verifies the target with only the
# authority's public key. The requests the fake GitHub received end the part.
# The demo runs as one Unix user (agent and operator alike), which is for
# trying the tool only: the privilege-separated set-up (operator user with
# the key and the data, agent on the endpoint with its token, collect
# through a sudo wrapper) is in docs/security.md, "Privilege-separated
# deployment", and tests/cli/privsep.rs runs it with real users.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked --quiet --bin agent-task
bin=$PWD/target/release/agent-task
work=$(mktemp -d)
forge_pid=""
trap '[ -z "$forge_pid" ] || kill "$forge_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
export AGENT_TASK_DATA_DIR="$work/data"

step() { printf '\n\033[1m$ agent-task %s\033[0m\n' "$*" >&2; "$bin" --pretty "$@"; }
show() { step "$@" >&2; }
# field EXPR: shows the JSON on stderr and prints one field of it.
field() { python3 -c 'import json,sys; t=sys.stdin.read(); sys.stderr.write(t); d=json.loads(t); print(eval("d"+sys.argv[1]))' "$1"; }
say() { printf '\n\033[36m# %s\033[0m\n' "$*" >&2; }
# stop: what Claude Code's Stop hook runs when the agent tries to finish
# (the Claude Code payload fixture on stdin; exit 0, block or no decision).
# It runs the very command `install-stop` wrote into the workspace's
# .claude/settings.local.json (which names the data directory and token
# file itself: the hook takes neither from the agent's environment).
stop() {
  local cmd
  cmd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hooks"]["Stop"][0]["hooks"][0]["command"])' "$2/.claude/settings.local.json")
  printf '\n\033[1m$ %s < claude-stop.json\033[0m\n' "$cmd" >&2
  sed "s#/home/dev/work#$2#" fixtures/hooks/claude-stop.json | sh -c "$cmd" >&2
}

say "operator: a fixture git repository with a test command (sh test.sh)"
cp -r fixtures/repos/basic "$work/basic"
git -C "$work/basic" init -q -b main
git -C "$work/basic" add -A
git -C "$work/basic" config user.name operator
git -C "$work/basic" config user.email operator@example.invalid
git -C "$work/basic" commit -q -m "fixture"
git -C "$work/basic" log --oneline >&2

show init
show repo add demo/basic --source "$work/basic" --target main
show requirement install --repo demo/basic --profile default --file fixtures/workflows/review.json
say "operator: the repository's forge, a fake GitHub on loopback (scripts/fake-forge.py): git over http-backend with basic auth, and the statuses and pulls endpoints"
mkdir -m 700 "$work/forge"
git clone -q --bare "$work/basic" "$work/forge/demo.git"
( umask 077; printf 'ghs_demo%s%s\n' "$RANDOM" "$RANDOM" >"$work/forge-token" )
python3 scripts/fake-forge.py --root "$work/forge" --token-file "$work/forge-token" --log "$work/forge.log" >"$work/forge.out" 2>/dev/null &
forge_pid=$!
for _ in $(seq 1 100); do [ -s "$work/forge.out" ] && break; sleep 0.05; done
forge=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' "$work/forge.out")
show repo forge set --repo demo/basic --kind github --api-url "$forge/api" --project demo/basic \
  --remote-url "$forge/git/demo.git" --token-file "$work/forge-token" --forge-status
say "operator: evidence as data: every imported collector run becomes a record of a separate data node (0700, no agent bearer)"
show evidence configure --repo demo/basic --evidence-dir "$work/evidence"
show token issue --owner alice --agent claude-1 --out "$work/alice.token"
pk=$(step keygen --collector-dir "$work/collector" | field '["public_key"]')
reg=$(step enroll --repo demo/basic --profile default --step tests --executor laptop-ci --public-key "$pk" | field '["registration_id"]')
show profile install --registration "$reg" --step tests --runtime bwrap
say "operator: the review step's collector. The operator pins a reviewer executable under claude_code_cli by its digest."
say "HONEST LABEL: this demo pins fixtures/review/stand-in-claude.py, a deterministic program that speaks Claude Code's"
say "print-mode JSON and approves what it is shown. It is NOT a model: the review it passes proves nothing about the code."
say "A real deployment pins an npm-installed claude (scripts/install-claude.sh) with --model and --env ANTHROPIC_API_KEY."
mkdir -m 700 "$work/reviewer"
install -m 755 fixtures/review/stand-in-claude.py "$work/reviewer/claude"
rreg=$(step enroll --repo demo/basic --profile default --step review --executor laptop-review --public-key "$pk" | field '["registration_id"]')
show profile install --registration "$rreg" --step review --runtime review --executable "$work/reviewer/claude" --model claude-sonnet-4-6

say "agent: open a change on its own clone of the repository"
export AGENT_TASK_TOKEN_FILE="$work/alice.token"
git clone -q "$work/basic" "$work/ws"
ch=$(step change open --repo demo/basic --profile default --workspace "$work/ws" | field '["change_id"]')
say "agent setup: the Stop hook in .claude/settings.local.json (kept out of revisions by .git/info/exclude) and the Workflow tasks block in AGENTS.md"
export XDG_STATE_HOME="$work/state" # where the hook keeps its continuation counter
show install-stop --agent claude --workspace "$work/ws" --change "$ch"
show init-repo --workspace "$work/ws"

say "agent, cheating: break add.sh, and make the test pass anyway by rewriting test.sh to exit 0"
printf '#!/bin/sh\necho $(($1 - $2))\n' > "$work/ws/add.sh"
printf 'exit 0\n' > "$work/ws/test.sh"
say "checkpoint succeeds and lists the protected path it changed (the workflow protects test.sh and tests/**)"
task=$(step checkpoint --workspace "$work/ws" | field '["tasks"][0]["task_id"]')
say "qualify: not qualified, protected_path_changed, next: checkpoint"
show qualify --change "$ch"
say "collector-claim refuses before anything runs: no evidence is ever made for this revision"
if step collector-claim "$task" --descriptor-out "$work/d0.json" >&2; then
  echo "demo: collector-claim should have refused" >&2; exit 1
fi
say "agent tries to finish: the Stop hook blocks"
stop "$ch" "$work/ws"

say "agent, honest: restore the test, keep the bug for now, checkpoint (a new subject), collect"
git -C "$work/ws" checkout -q -- test.sh
printf '#!/bin/sh\n# Adds two integers (now documented by the agent).\necho $(($1 - $2))\n' > "$work/ws/add.sh"
task=$(step checkpoint --workspace "$work/ws" | field '["tasks"][0]["task_id"]')
show next --change "$ch"
step collector-claim "$task" --descriptor-out "$work/d1.json" | field '["descriptor"]["attempt_id"]' >/dev/null
say "collect runs sh test.sh in bwrap on the exact revision (pinned limits, a dedicated uid when root); the test fails, collect still exits 0"
show --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$work/d1.json" --collector-dir "$work/collector"
show qualify --change "$ch"
say "explain: why it does not qualify, from the signed record the authority imported (exit status, output tails, runtime)"
show explain --change "$ch" --text
say "operator: the overview of every Change, its tasks, attempts, receipts and landings"
show ls --table
say "operator: the evidence writer drains the outbox the import wrote; data query finds the failing run by a word of its output"
show evidence sync
hits=$(step --data-dir "$work/evidence" data query --text gave | field '["records"].__len__()')
if [ "$hits" != 1 ]; then
  echo "demo: data query should find the failing run in the evidence node" >&2; exit 1
fi
say "agent tries to finish: the Stop hook blocks, naming the typed next step"
stop "$ch" "$work/ws"
say "operator: propose the failing version anyway (--unqualified): its candidate commit on agent-task/<change>, a pull request; the publisher posts its failure status there"
unset AGENT_TASK_TOKEN_FILE
show propose --repo demo/basic --change "$ch" --unqualified
show forge publish
export AGENT_TASK_TOKEN_FILE="$work/alice.token"

say "agent: fix the bug, checkpoint (a new subject with fresh task ids), collect again"
printf '#!/bin/sh\n# Adds two integers (now documented by the agent).\necho $(($1 + $2))\n' > "$work/ws/add.sh"
read -r task rtask < <(step checkpoint --workspace "$work/ws" | field '["tasks"][0]["task_id"] + " " + d["tasks"][1]["task_id"]')
step collector-claim "$task" --descriptor-out "$work/d2.json" | field '["descriptor"]["attempt_id"]' >/dev/null
show --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$work/d2.json" --collector-dir "$work/collector"
say "the review step: collector-claim derives a review descriptor (subject + pinned profile, no executable or budget in it)"
step collector-claim "$rtask" --descriptor-out "$work/r2.json" | field '["descriptor"]["review_profile_id"]' >/dev/null
say "collect runs the finite review controller: each call reserved durably, the pinned stand-in run with a private HOME and cwd, the record derived by the controller; the authority replays it on import"
show --data-dir "$AGENT_TASK_DATA_DIR" collect --descriptor "$work/r2.json" --collector-dir "$work/collector"
show finalize --change "$ch"
say "operator: the receipt reaches the evidence node as a version that supersedes the passing runs' records"
show evidence sync
show qualify --change "$ch"
say "agent tries to finish again: qualified, clean workspace at the qualified revision, the hook lets it stop"
stop "$ch" "$work/ws"

unset AGENT_TASK_TOKEN_FILE
say "operator: propose the qualified version: the same pull request, updated; its commit carries the signed note; the publisher posts success"
show propose --repo demo/basic --change "$ch"
show forge publish
say "operator: land and push (admission rechecks under the lock, a commit on main; then agent-task/<change>, its success status, main fast-forward only, the notes; the pull request closed)"
show land --update-worktree --repo demo/basic --change "$ch" --push
printf '\n\033[1m$ git log --stat -1 main\033[0m\n' >&2
git -C "$work/basic" log --oneline main >&2
git -C "$work/basic" log --stat -1 main >&2
say "the landed commit holds the tested revision and no local settings file"
if git -C "$work/basic" ls-tree -r --name-only main | grep -E '^\.(claude|codex)/' >&2; then
  echo "demo: a local settings file was landed" >&2; exit 1
fi
git -C "$work/basic" ls-tree -r --name-only main >&2
say "reviewer: a fresh clone of the forge with the notes and only the authority's public key verifies the landed commit"
step authority key --format pem | field '["public_key"]' >"$work/authority.pem"
git clone -q "http://x-access-token:$(cat "$work/forge-token")@${forge#http://}/git/demo.git" "$work/review"
git -C "$work/review" fetch -q origin refs/notes/agent-task:refs/notes/agent-task
(cd "$work/review" && unset AGENT_TASK_DATA_DIR && show verify --commit "$(git rev-parse origin/main)" --key "$work/authority.pem")
say "what the fake GitHub received (API requests; the git requests are in $work/forge.log too)"
python3 - "$work/forge.log" >&2 <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] != "api":
        continue
    what = " ".join(f"{k}={e[k]!r}" for k in ("state", "context", "description", "title", "head", "base") if k in e)
    print(f'{e["method"]} {e["path"]} -> {e["status"]} {what}')
PY
kill "$forge_pid" 2>/dev/null || true
wait "$forge_pid" 2>/dev/null || true
forge_pid=""
printf '\ndemo finished: data directory was %s\n' "$AGENT_TASK_DATA_DIR" >&2

# ---------------------------------------------------------------------------
# The data half: two agent-data/v1 nodes and an explicit encrypted pull
# (agent-data-sync/v1; docs/sync.md). Node A collects, node B pulls the
# collection over the ADDS-encrypted profile, then answers offline.
# ---------------------------------------------------------------------------
node_a="$work/node-a"
node_b="$work/node-b"
servers=()
trap 'for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
a() { step --data-dir "$node_a" "$@"; }
b() { step --data-dir "$node_b" "$@"; }
umask 077
mkdir -p "$work/files"
printf '# Field notes\nThe pull is explicit and every payload is encrypted for one recipient.\n' >"$work/files/notes.md"

say "data node A: a node, text and a file collected into one collection, a query, a tombstone"
a init >/dev/null
a data init --node-id node_demo_a --file-root "$work/files" >&2
a data collect --collection default --collector text \
  --input '{"text":"sync moves encrypted pages between nodes","external_id":"t1"}' >&2
gone=$(a data collect --collection default --collector text \
  --input '{"text":"a draft about encrypted pages, withdrawn","external_id":"t2"}' | field '["records"][0]["id"]')
a data collect --collection default --collector file --input "{\"path\":\"$work/files/notes.md\"}" >&2
a data query --text encrypted >&2
a data tombstone "$gone" --reason "withdrawn draft" >&2

say "both nodes: a sync identity each (Ed25519 publisher + X25519 recipient, owner-private)"
b init >/dev/null
b data init --node-id node_demo_b >&2
a sync keygen --id did:example:demo-a >&2
rcpt=$(b sync keygen --id did:example:demo-b)
printf '%s\n' "$rcpt" >&2
pub=$(a sync identity)

say "operator of A: a page-only bearer for B, scoped to one collection and B's recipient key"
printf 'demo-page-token-%s\n' "$RANDOM$RANDOM" >"$work/page.token"
a sync authority add --peer node-b --bearer-file "$work/page.token" --collection default \
  --recipient-id did:example:demo-b \
  --recipient-key "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["recipient"]["x25519_public_key"])' "$rcpt")" >&2
printf 'demo-node-a-%s\n' "$RANDOM$RANDOM" >"$work/a.token"
"$bin" --data-dir "$node_a" serve --bind 127.0.0.1:0 --data-token-file "$work/a.token" >"$work/a.out" 2>/dev/null &
servers+=($!)
for _ in $(seq 1 100); do [ -s "$work/a.out" ] && break; sleep 0.05; done
origin=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' "$work/a.out")
say "node A serves on $origin"

say "operator of B: peer A pinned by origin, node id and publisher key"
b sync peer add --peer node-a --origin "$origin" --node-id node_demo_a \
  --publisher-id did:example:demo-a \
  --publisher-key "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["publisher"]["ed25519_public_key"])' "$pub")" \
  --page-token-file "$work/page.token" >&2
b sync pull --peer node-a --collection default >&2
b sync status --peer node-a --collection default >&2

say "node A stops; B answers the same query offline (the tombstoned draft stays gone)"
kill "${servers[0]}"; wait "${servers[0]}" 2>/dev/null || true
a data query --text encrypted >&2
b data query --text encrypted >&2
b data get "$gone" >&2 || true
printf '\ndata demo finished: nodes were %s and %s\n' "$node_a" "$node_b" >&2
