//! The agent's whole loop through the workspace endpoint with nothing but
//! its token (`--endpoint` on the agent commands, no data directory), the
//! remote checkpoint in phases (manifest, blob packs, commit) and a
//! hostile client on its routes: blobs that do not match their digest,
//! oversize blobs and packs, blobs never asked for, a commit naming blobs
//! never uploaded, manifests over the caps or naming paths git would
//! refuse, staging quota and expiry, and two commits racing.

use crate::common::collect_flow::{Loop, git};
use crate::common::data_support::{Resp, raw, req};
use crate::common::task_support::copy_dir;
use crate::common::{Output, run_cmd};
use agent_task::contract::canonical_bytes;
use agent_task::wire::digest::Sha256Hex;
use agent_task::workflow::authority::snapshot::{Entry, MODE_FILE, Manifest};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

const BASE: &str = "/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks";

/// `serve --workspace-config` for the loop's data dir, with extra flags
/// and environment.
pub(crate) fn serve(
    l: &Loop,
    args: &[&str],
    env: &[(&str, &str)],
) -> crate::common::workspace_http::Served {
    let r = l.agent(&["requirements", "--change", &l.change_id]).json();
    let cfg = json!({"version": 1, "agent_task_profiles": [{
        "repository_id": "demo-basic", "profile_id": "default", "native_repository": "demo/basic",
        "data_dir": l.env.data_dir, "target": "main", "requirement_digest": r["requirement_digest"]}]});
    let p = l.env.path("workspace.json");
    std::fs::write(&p, cfg.to_string()).expect("cfg");
    let mut c = std::process::Command::new(crate::common::bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .arg("--data-dir")
        .arg(&l.env.data_dir)
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace-config"])
        .arg(&p)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let v: Value = serde_json::from_str(&line).expect("json");
    crate::common::workspace_http::Served {
        child,
        addr: v["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    }
}

fn token(l: &Loop) -> String {
    std::fs::read_to_string(&l.token)
        .expect("token")
        .trim()
        .to_owned()
}

/// The agent with nothing but its token and the endpoint: no data
/// directory anywhere (HOME is the temp dir, which has none).
pub(crate) fn remote(l: &Loop, addr: &str, args: &[&str]) -> Output {
    let mut c = l.env.bare_cmd();
    c.env("AGENT_TASK_ENDPOINT", format!("http://{addr}"))
        .env("AGENT_TASK_REPOSITORY", "demo-basic")
        .env("AGENT_TASK_PROFILE", "default")
        .arg("--token-file")
        .arg(&l.token)
        .args(args);
    run_cmd(&mut c)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// A workspace copy of the fixture with `add.sh` using `op`.
pub(crate) fn workspace(l: &Loop, name: &str, op: &str) -> PathBuf {
    let ws = l.env.path(name);
    copy_dir(
        &crate::common::repo_root().join("fixtures/repos/basic"),
        &ws,
    );
    std::fs::write(
        ws.join("add.sh"),
        format!("#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 {op} $2))\n"),
    )
    .expect("write");
    ws
}

/// What the sudo wrapper passes `collect` on stdin: the token line, then
/// the descriptor written at `d`.
fn token_and_descriptor(l: &Loop, d: &Path) -> Vec<u8> {
    let mut stdin = std::fs::read(&l.token).expect("token");
    if !stdin.ends_with(b"\n") {
        stdin.push(b'\n');
    }
    stdin.extend(std::fs::read(d).expect("descriptor"));
    stdin
}

/// `collect` of the descriptor on `stdin` (the wrapper's form), with
/// `extra` arguments.
fn collect_on_stdin(l: &Loop, stdin: &[u8], extra: &[&str]) -> Output {
    let mut c = l.env.cmd();
    c.args([
        "collect",
        "--collector-dir",
        s(&l.collector),
        "--descriptor",
        "-",
        "--token-on-stdin",
    ])
    .args(extra)
    .write_stdin(stdin.to_vec());
    run_cmd(&mut c)
}

/// The operator lands Change `id`: the landed revision is `revision`, and
/// the target's `add.sh` adds.
fn lands_the_adder(l: &Loop, id: &str, revision: &str) {
    let landed = l
        .env
        .run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            id,
        ])
        .json();
    assert_eq!(landed["revision"], revision, "{landed}");
    let shown = git(&l.source, &["show", "main:add.sh"]);
    assert!(shown.contains("$(($1 + $2))"), "{shown}");
}

/// The Claude Stop hook of Change `id` on `ws`, with the token and the
/// endpoint only (no data directory).
fn remote_hook(l: &Loop, a: &str, id: &str, ws: &Path) -> Output {
    let p = json!({"session_id": "s-remote", "transcript_path": "/t", "cwd": ws,
                   "hook_event_name": "Stop", "stop_hook_active": false});
    let mut c = l.env.bare_cmd();
    c.arg("--token-file").arg(&l.token).args([
        "task-stop",
        id,
        "--workspace",
        s(ws),
        "--endpoint",
        &format!("http://{a}"),
        "--repository",
        "demo-basic",
        "--profile",
        "default",
    ]);
    c.write_stdin(p.to_string());
    run_cmd(&mut c)
}

fn tests_task(cp: &Value) -> String {
    cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned()
}

pub(crate) fn staged_files(l: &Loop) -> usize {
    let d = l.env.data_dir.join("cas/staging/sha256");
    let Ok(fans) = std::fs::read_dir(&d) else {
        return 0;
    };
    fans.map(|f| {
        std::fs::read_dir(f.expect("fan").path())
            .expect("fan dir")
            .count()
    })
    .sum()
}

fn cas_objects(l: &Loop) -> usize {
    let d = l.env.data_dir.join("cas/sha256");
    std::fs::read_dir(&d)
        .expect("cas")
        .map(|f| {
            std::fs::read_dir(f.expect("fan").path())
                .expect("fan dir")
                .count()
        })
        .sum()
}

#[test]
fn remote_checkpoint_is_the_local_revision_and_the_whole_loop_runs_on_the_token() {
    let l = Loop::basic("bwrap");
    let srv = serve(&l, &[], &[]);
    let a = srv.addr.as_str();
    // change open with the token only; a retry with the request id is the same Change.
    let ch = remote(
        &l,
        a,
        &[
            "change",
            "open",
            "--profile",
            "default",
            "--request-id",
            "o1",
            "--title",
            "Fix the adder\u{7} through the endpoint",
            "--body",
            "Body line.\nSigned-off-by: someone <s@example.invalid>",
        ],
    )
    .json();
    let id = ch["change_id"].as_str().expect("id").to_owned();
    assert_eq!(ch["workspace"], format!("endpoint:{id}"));
    assert_eq!(ch["version"], 0);
    let again = remote(
        &l,
        a,
        &[
            "change",
            "open",
            "--profile",
            "default",
            "--request-id",
            "o1",
        ],
    )
    .json();
    assert_eq!(again["change_id"], id.as_str());
    assert_eq!(
        remote(&l, a, &["next", "--change", &id]).json()["next"]["operation"],
        "checkpoint"
    );
    // A remote checkpoint of a tree, then a local one of the same tree.
    let ws = workspace(&l, "remote-ws", "+");
    let objects = cas_objects(&l);
    let cp = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .json();
    assert_eq!(cp["version"], 1);
    assert_eq!(
        cp["upload"]["missing_blobs"], 1,
        "only add.sh differs from the head: {cp}"
    );
    assert_eq!(cp["upload"]["stored_blobs"], 1);
    assert_eq!(cp["protected_changes"], json!([]));
    assert_eq!(
        cas_objects(&l),
        objects + 2,
        "the new blob and the manifest moved into the CAS"
    );
    assert_eq!(
        staged_files(&l),
        0,
        "nothing is left staged after the commit"
    );
    l.set_add("+");
    let local = l
        .agent(&["checkpoint", "--workspace", s(&l.workspace)])
        .json();
    assert_eq!(
        local["revision"], cp["revision"],
        "a local and a remote checkpoint of the same tree are one revision"
    );
    // Nothing changed: the client's stat cache spares every read and the
    // authority lacks nothing.
    let cp2 = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .json();
    assert_eq!(cp2["revision"], cp["revision"]);
    // The current subject's tree while its tasks are pending: the same
    // subject comes back (no fresh task ids that would orphan claims).
    assert_eq!(cp2["version"], 1, "{cp2}");
    assert_eq!(cp2["reused"], true, "{cp2}");
    assert_eq!(cp2["upload"]["missing_blobs"], 0);
    // A local checkpoint of an endpoint Change, and a remote one of a local Change, are refused.
    l.agent(&["checkpoint", "--change", &id])
        .error("conflict", 65);
    remote(
        &l,
        a,
        &[
            "checkpoint",
            "--change",
            &l.change_id,
            "--workspace",
            s(&ws),
        ],
    )
    .error("conflict", 65);
    // The variables chose the endpoint: the error names the one that did.
    let e = remote(&l, a, &["next", "--workspace", s(&ws)]).error("env_conflict", 64);
    assert_eq!(e["details"]["variable"], "AGENT_TASK_ENDPOINT");

    // The loop: next, collector-claim, collect (the operator's side, here
    // through stdin as the sudo wrapper passes it), finalize, qualify.
    let task = tests_task(&cp2);
    let next = remote(&l, a, &["next", "--change", &id]).json();
    assert_eq!(
        next["next"],
        json!({"operation": "collector_claim", "task_id": task})
    );
    let d = l.env.path("remote-d.json");
    let claim = remote(
        &l,
        a,
        &[
            "collector-claim",
            &task,
            "--request-id",
            "rc1",
            "--descriptor-out",
            s(&d),
        ],
    )
    .json();
    assert!(claim["descriptor"].is_object());
    let stdin = token_and_descriptor(&l, &d);
    // The stdin form is the wrapper's: it never imports locally, so it
    // needs the endpoint (refused, nothing reserved, without one).
    collect_on_stdin(&l, &stdin, &[]).error("usage", 64);
    let endpoint = format!("http://{a}");
    let upload = [
        "--endpoint",
        endpoint.as_str(),
        "--repository",
        "demo-basic",
        "--profile",
        "default",
    ];
    let col = collect_on_stdin(&l, &stdin, &upload).json();
    assert_eq!(col["outcome"], "passed", "{col}");
    assert_eq!(col["resumed"], false, "{col}");
    // The stdin form refuses a second token source and a descriptor file.
    collect_on_stdin(&l, &stdin, &["--token-file", s(&l.token)]).error("usage", 64);
    collect_on_stdin(&l, b"not a token line", &upload).error("unauthorized", 77);
    let q = remote(&l, a, &["qualify", "--change", &id]).json();
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}));
    remote(&l, a, &["finalize", "--change", &id]).json();
    let q = remote(&l, a, &["qualify", "--change", &id]).json();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["revision"], cp["revision"]);

    // The Stop hook with no data directory: the subject comes through the endpoint.
    let hook = |ws: &Path| remote_hook(&l, a, &id, ws);
    crate::common::hook_stop::passed("claude", &hook(&ws));
    std::fs::write(ws.join("late.txt"), "edit\n").expect("edit");
    let det = crate::common::hook_stop::blocked("claude", &hook(&ws));
    assert_eq!(
        det["failures"],
        json!([{"code": "workspace_not_checkpointed"}])
    );
    std::fs::remove_file(ws.join("late.txt")).expect("rm");
    crate::common::hook_stop::passed("claude", &hook(&ws));
    // install-stop without a readable data directory leaves --data-dir out.
    let mut c = l.env.bare_cmd();
    c.env("XDG_DATA_HOME", l.env.path("no-data"))
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "install-stop",
            "--agent",
            "claude",
            "--workspace",
            s(&ws),
            "--change",
            &id,
        ])
        .args([
            "--endpoint",
            &format!("http://{a}"),
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ]);
    let inst = run_cmd(&mut c).json();
    let cmd = inst["command"].as_str().expect("command");
    assert!(!cmd.contains("--data-dir"), "{cmd}");
    assert!(cmd.contains("--endpoint"), "{cmd}");

    // The operator lands the remote revision.
    lands_the_adder(&l, &id, cp["revision"].as_str().expect("revision"));
    // The commit's message is the endpoint Change's title and body.
    let subject = git(&l.source, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(subject.trim(), "Fix the adder through the endpoint");
    let body = git(&l.source, &["log", "-1", "--format=%b", "main"]);
    assert!(
        body.contains("Body line.\n  Signed-off-by: someone"),
        "{body}"
    );

    // The landed Change is closed: the endpoint refuses its checkpoint
    // (before any upload), with the way on as an error detail.
    let e = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .error("change_closed", 65);
    assert_eq!(
        e["details"]["next"],
        json!({"command": "change open"}),
        "{e}"
    );
    assert_eq!(e["details"]["landed_revision"], cp["revision"], "{e}");
    // The Stop hook through the endpoint: once the workspace is the landed
    // revision again (install-stop above wrote its settings into it), the
    // agent may stop; an edit now blocks with the fixed sentence and no
    // operation (it belongs in a new Change).
    let det = crate::common::hook_stop::blocked("claude", &hook(&ws));
    assert_eq!(det["failures"], json!([{"code": "change_landed"}]), "{det}");
    std::fs::remove_dir_all(ws.join(".claude")).expect("rm settings");
    crate::common::hook_stop::passed("claude", &hook(&ws));
    std::fs::write(ws.join("after.txt"), "more work\n").expect("edit");
    let det = crate::common::hook_stop::blocked("claude", &hook(&ws));
    assert_eq!(det["failures"], json!([{"code": "change_landed"}]), "{det}");
    assert_eq!(det["next"], json!({"operation": "none"}), "{det}");
    assert!(
        det["next_action"]
            .as_str()
            .is_some_and(|t| t.contains("open a new Change")),
        "{det}"
    );
}

/// A raw request with a binary body.
fn post_bytes(addr: &str, path: &str, tok: &str, ct: &str, body: &[u8]) -> Resp {
    let mut r = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    raw(addr, &r)
}

fn frame(sha: &Sha256Hex, size: u64, bytes: &[u8]) -> Vec<u8> {
    let mut f = sha.to_bytes().to_vec();
    f.extend_from_slice(&size.to_be_bytes());
    f.extend_from_slice(bytes);
    f
}

fn manifest_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut entries: Vec<Entry> = files
        .iter()
        .map(|(p, b)| Entry {
            path: (*p).into(),
            mode: MODE_FILE,
            size: b.len() as u64,
            sha256: Sha256Hex::digest(b),
        })
        .collect();
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    canonical_bytes(&Manifest {
        version: 1,
        entries,
    })
    .expect("bytes")
}

/// The fixture's files with `extra` added (a full tree: protected files unchanged).
fn tree_with(extra: &[(&'static str, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let root = crate::common::repo_root().join("fixtures/repos/basic");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir") {
            let p = e.expect("e").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&root).expect("rel").display().to_string();
                out.push((rel, std::fs::read(&p).expect("read")));
            }
        }
    }
    for (p, b) in extra {
        out.push(((*p).to_owned(), b.clone()));
    }
    out
}

fn manifest_of_tree(t: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, &[u8])> = t.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    manifest_of(&refs)
}

fn open_change(l: &Loop, a: &str) -> String {
    remote(l, a, &["change", "open", "--profile", "default"]).json()["change_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

fn op(a: &str, tok: &str, body: Value) -> Resp {
    req(a, "POST", BASE, Some(tok), Some(&body.to_string()))
}

fn version(l: &Loop, a: &str, id: &str) -> u64 {
    op(
        a,
        &token(l),
        json!({"operation": "change_subject", "change_id": id}),
    )
    .ok()["result"]["version"]
        .as_u64()
        .expect("version")
}

#[test]
fn remote_checkpoint_routes_refuse_a_hostile_client_and_store_nothing_they_should_not() {
    let l = Loop::basic("bwrap");
    let srv = serve(
        &l,
        &[
            "--max-revision-bytes",
            "100000",
            "--staging-quota-bytes",
            "300000",
            "--max-pack-bytes",
            "200000",
        ],
        &[],
    );
    let a = srv.addr.as_str();
    let tok = token(&l);
    let id = open_change(&l, a);
    let mpath = format!("{BASE}/changes/{id}/manifest");
    let bpath = format!("{BASE}/changes/{id}/blobs");
    let big = vec![7u8; 150_000];
    let tree = tree_with(&[("new.txt", b"fresh\n".to_vec()), ("big.bin", big.clone())]);
    let good = manifest_of_tree(&tree[..tree.len() - 1]);

    // Before authentication nothing is read; wrong type, oversize heads.
    req(a, "POST", &mpath, None, Some("{}")).error(401, "unauthorized");
    req(a, "POST", &mpath, Some("bogus-token"), Some("{}")).error(401, "unauthorized");
    post_bytes(a, &mpath, &tok, "text/plain", &good).error(415, "unsupported_media_type");
    let head = format!(
        "POST {mpath} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        65 << 20
    );
    raw(a, head.as_bytes()).error(413, "request_too_large");
    let head = format!(
        "POST {bpath} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/octet-stream\r\nContent-Length: 200001\r\n\r\n"
    );
    raw(a, head.as_bytes()).error(413, "request_too_large");
    // Another Change id: not in this profile.
    req(
        a,
        "POST",
        &format!("{BASE}/changes/ch_nope/manifest"),
        Some(&tok),
        Some("{}"),
    )
    .error(404, "not_found");
    // A Change opened on a workspace of the authority's host.
    post_bytes(
        a,
        &format!("{BASE}/changes/{}/manifest", l.change_id),
        &tok,
        "application/json",
        &good,
    )
    .error(409, "conflict");
    // Manifests that are not canonical, unsorted, over the cap, or name
    // paths git would refuse: typed, nothing staged, no session.
    let spaced = String::from_utf8(good.clone())
        .expect("utf8")
        .replacen(":", ": ", 1);
    post_bytes(a, &mpath, &tok, "application/json", spaced.as_bytes())
        .error(400, "manifest_invalid");
    post_bytes(a, &mpath, &tok, "application/json", b"not json").error(400, "manifest_invalid");
    let refused = manifest_of(&[(".Git/guard", b"x"), ("a", b"a")]);
    let v = post_bytes(a, &mpath, &tok, "application/json", &refused)
        .error(422, "path_not_representable");
    assert_eq!(v["details"]["path"], ".Git/guard");
    let df = manifest_of(&[("a", b"a"), ("a/b", b"b")]);
    post_bytes(a, &mpath, &tok, "application/json", &df).error(422, "path_not_representable");
    let over = manifest_of_tree(&tree_with(&[("huge.bin", vec![1u8; 100_001])]));
    post_bytes(a, &mpath, &tok, "application/json", &over).error(413, "revision_too_large");
    assert_eq!(staged_files(&l), 0, "no refused manifest was kept");
    // No session yet: blobs and commits are refused.
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&Sha256Hex::digest(b"fresh\n"), 6, b"fresh\n"),
    )
    .error(409, "conflict");

    // The negotiation: only the new file is missing.
    let neg = post_bytes(a, &mpath, &tok, "application/json", &good).ok();
    assert_eq!(neg["operation"], "checkpoint_manifest");
    let neg = neg["result"].clone();
    let rev = neg["revision"].as_str().expect("rev").to_owned();
    assert_eq!(neg["missing_blobs"], 1, "{neg}");
    assert_eq!(staged_files(&l), 1, "the manifest itself is staged");
    let fresh = Sha256Hex::digest(b"fresh\n");
    // A commit before the blob arrives: blobs_missing, nothing changes.
    let v = op(
        a,
        &tok,
        json!({"operation": "checkpoint_commit", "change_id": id, "revision": rev}),
    )
    .error(409, "blobs_missing");
    assert_eq!(v["details"]["missing_blobs"], 1);
    assert_eq!(version(&l, a, &id), 0);
    // Bytes that do not match their digest, a blob never asked for, a
    // size other than the manifest's, a truncated frame: typed, not stored.
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&fresh, 6, b"FRESH\n"),
    )
    .error(422, "blob_digest_mismatch");
    let stray = Sha256Hex::digest(b"stray");
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&stray, 5, b"stray"),
    )
    .error(409, "blob_not_requested");
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&fresh, 7, b"fresh\nx"),
    )
    .error(409, "blob_not_requested");
    let mut cut = frame(&fresh, 6, b"fresh\n");
    cut.truncate(20);
    post_bytes(a, &bpath, &tok, "application/octet-stream", &cut).error(400, "invalid_request");
    let mut short = frame(&fresh, 6, b"fresh\n");
    short.truncate(43);
    post_bytes(a, &bpath, &tok, "application/octet-stream", &short).error(400, "invalid_request");
    assert_eq!(staged_files(&l), 1, "only the manifest is staged");
    // The right bytes; a second copy of the same blob is read and dropped.
    let mut pack = frame(&fresh, 6, b"fresh\n");
    pack.extend(frame(&fresh, 6, b"fresh\n"));
    let up = post_bytes(a, &bpath, &tok, "application/octet-stream", &pack).ok()["result"].clone();
    assert_eq!(
        (up["stored"].clone(), up["skipped"].clone()),
        (json!(1), json!(1)),
        "{up}"
    );

    // Two commits racing on one session: one records the version, the other is refused.
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let (a, tok, id, rev) = (a.to_owned(), tok.clone(), id.clone(), rev.clone());
            std::thread::spawn(move || {
                op(
                    &a,
                    &tok,
                    json!({"operation": "checkpoint_commit", "change_id": id, "revision": rev}),
                )
                .status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = racers
        .into_iter()
        .map(|h| h.join().expect("join"))
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, vec![200, 409]);
    assert_eq!(version(&l, a, &id), 1);
    assert_eq!(staged_files(&l), 0);

    // Flooding: blobs are accepted only as asked for, and what is staged
    // and unreferenced is bounded by the quota.
    let tree2 = tree_with(&[("big.bin", big.clone()), ("big2.bin", vec![9u8; 99_000])]);
    // Over the revision cap (100,000) with both: refused at the manifest.
    post_bytes(
        a,
        &mpath,
        &tok,
        "application/json",
        &manifest_of_tree(&tree2),
    )
    .error(413, "revision_too_large");
    let tree3 = tree_with(&[("big2.bin", vec![9u8; 99_000])]);
    let neg3 = post_bytes(
        a,
        &mpath,
        &tok,
        "application/json",
        &manifest_of_tree(&tree3),
    )
    .ok()["result"]
        .clone();
    assert_eq!(neg3["missing_blobs"], 1);
    let b2 = vec![9u8; 99_000];
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&Sha256Hex::digest(&big), 150_000, &big),
    )
    .error(409, "blob_not_requested");
    post_bytes(
        a,
        &bpath,
        &tok,
        "application/octet-stream",
        &frame(&Sha256Hex::digest(&b2), 99_000, &b2),
    )
    .ok();
    // Other changes of the same agent: the quota (300,000) holds across them.
    let mut staged_total = 99_000;
    let mut refused_quota = false;
    for n in 0..4u8 {
        let other = open_change(&l, a);
        let blob = vec![n; 99_000];
        let t = tree_with(&[("x.bin", blob.clone())]);
        let m = post_bytes(
            a,
            &format!("{BASE}/changes/{other}/manifest"),
            &tok,
            "application/json",
            &manifest_of_tree(&t),
        );
        if m.status != 200 {
            m.error(507, "upload_quota_exceeded");
            refused_quota = true;
            break;
        }
        let r = post_bytes(
            a,
            &format!("{BASE}/changes/{other}/blobs"),
            &tok,
            "application/octet-stream",
            &frame(&Sha256Hex::digest(&blob), 99_000, &blob),
        );
        if r.status == 200 {
            staged_total += 99_000;
        } else {
            r.error(507, "upload_quota_exceeded");
            refused_quota = true;
            break;
        }
    }
    assert!(refused_quota, "the quota refused an upload");
    assert!(staged_total <= 300_000, "{staged_total}");
    let staged_bytes: u64 = {
        let d = l.env.data_dir.join("cas/staging/sha256");
        std::fs::read_dir(&d)
            .expect("staging")
            .flat_map(|f| std::fs::read_dir(f.expect("fan").path()).expect("fan"))
            .map(|e| e.expect("e").metadata().expect("md").len())
            .sum()
    };
    assert!(staged_bytes <= 300_000, "staged {staged_bytes} bytes");
    drop(srv);

    // A day later every session and unreferenced blob is gone at the next request.
    let later = serve(
        &l,
        &["--staging-ttl-ms", "3600000"],
        &[("AGENT_TASK_TEST_NOW", "2099-01-01T00:00:00Z")],
    );
    let a = later.addr.as_str();
    let id4 = open_change(&l, a);
    let t = tree_with(&[("late.txt", b"late\n".to_vec())]);
    post_bytes(
        a,
        &format!("{BASE}/changes/{id4}/manifest"),
        &tok,
        "application/json",
        &manifest_of_tree(&t),
    )
    .ok();
    assert_eq!(
        staged_files(&l),
        1,
        "only the new manifest is staged: {}",
        staged_files(&l)
    );
    let rev3 = neg3["revision"].as_str().expect("rev");
    op(
        a,
        &tok,
        json!({"operation": "checkpoint_commit", "change_id": id, "revision": rev3}),
    )
    .error(409, "conflict");
}

/// The client's stat cache file of `ws`: the agent's own, under its state
/// directory (`$HOME/.local/state`, the test's HOME).
fn client_cache_file(l: &Loop, ws: &Path) -> PathBuf {
    let root = std::fs::canonicalize(ws).expect("canonical");
    agent_task::remote::cache::path_for_in(
        &l.env.path(".local/state"),
        root.to_str().expect("utf8"),
    )
}

/// Rewrites the client cache of `ws` as the agent could: `path`'s row gets
/// the file's current stat and `digest`, the recorded revision becomes
/// `revision` and the scan time moves an hour ahead so that no row is racy.
fn forge_client_cache(l: &Loop, ws: &Path, revision: &str, path: &str, digest: Option<Sha256Hex>) {
    use agent_task::remote::cache;
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::canonicalize(ws).expect("canonical");
    let root = root.to_str().expect("utf8");
    let file = client_cache_file(l, ws);
    let c = cache::load(&file, root);
    let state = c.state().expect("the checkpoint wrote a cache").clone();
    let m = std::fs::symlink_metadata(ws.join(path)).expect("stat");
    let mut found = false;
    let rows: Vec<_> = c
        .rows()
        .map(|(p, mut r)| {
            if p == path {
                found = true;
                r.ino = m.ino();
                r.size = m.size();
                r.mtime_ns = m.mtime() * 1_000_000_000 + m.mtime_nsec();
                r.ctime_ns = m.ctime() * 1_000_000_000 + m.ctime_nsec();
                r.mode = m.mode();
                if let Some(d) = &digest {
                    r.sha256 = d.to_bytes();
                }
            }
            (p.to_owned(), r)
        })
        .collect();
    assert!(found, "{path} is in the cache");
    cache::store(
        &file,
        root,
        &rows,
        &Sha256Hex::parse(revision).expect("revision"),
        state.scanned_at_ns + 3_600_000_000_000,
    )
    .expect("forge");
}

/// The agent forges its own client stat cache (the privilege-separated
/// deployment leaves it in the agent's state directory). A forged row can
/// make the client misdescribe the agent's workspace — the advisory Stop
/// hook passes on it and a checkpoint records the revision the row names —
/// but never make the authority store bytes under a digest they do not
/// have, and the operator lands exactly the revision that was recorded and
/// tested, never the workspace's bytes.
#[test]
fn a_forged_client_cache_misdescribes_only_the_agents_workspace_and_land_lands_the_recorded_revision()
 {
    let l = Loop::basic("bwrap");
    let srv = serve(&l, &[], &[]);
    let a = srv.addr.as_str();
    let id = open_change(&l, a);
    let ws = workspace(&l, "forged-ws", "+");
    let cp = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .json();
    let good = cp["revision"].as_str().expect("revision").to_owned();

    // A row naming a digest of bytes the workspace does not hold: the
    // authority asks for that blob, and what the client sends is checked
    // against the digest; nothing is recorded and nothing stays staged.
    std::fs::write(ws.join("CHANGELOG.md"), "rewritten by the agent\n").expect("edit");
    let forged = Sha256Hex::digest(b"bytes nobody uploaded");
    forge_client_cache(&l, &ws, &good, "CHANGELOG.md", Some(forged.clone()));
    let objects = cas_objects(&l);
    let e = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .error("blob_digest_mismatch", 65);
    assert_eq!(e["details"]["sha256"], forged.as_str(), "{e}");
    assert_eq!(cas_objects(&l), objects, "no blob under a false digest");
    assert_eq!(
        staged_files(&l),
        1,
        "only the manifest is staged (it expires)"
    );
    assert_eq!(version(&l, a, &id), 1, "no version was recorded");
    let changelog = crate::common::repo_root().join("fixtures/repos/basic/CHANGELOG.md");
    std::fs::copy(&changelog, ws.join("CHANGELOG.md")).expect("restore");

    // A row that keeps the tested digest for a file the agent broke: the
    // hook (advisory) passes on the misdescribed workspace and the
    // checkpoint is the recorded revision again.
    std::fs::write(
        ws.join("add.sh"),
        "#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 - $2))\n",
    )
    .expect("break");
    forge_client_cache(&l, &ws, &good, "add.sh", None);
    let original = Sha256Hex::digest(&std::fs::read(&changelog).expect("fixture"));
    forge_client_cache(&l, &ws, &good, "CHANGELOG.md", Some(original));
    let det = crate::common::hook_stop::blocked("claude", &remote_hook(&l, a, &id, &ws));
    assert_eq!(
        det["failures"][0]["code"], "task_pending",
        "the forged cache hides the edit from the hook: {det}"
    );
    let cp2 = remote(
        &l,
        a,
        &["checkpoint", "--change", &id, "--workspace", s(&ws)],
    )
    .json();
    assert_eq!(cp2["revision"], good.as_str(), "{cp2}");
    assert_eq!(cp2["upload"]["missing_blobs"], 0);

    // The tests run on the recorded revision, materialised from the
    // authority's store (the broken workspace would fail them), and the
    // operator lands that revision.
    let task = tests_task(&cp2);
    let d = l.env.path("forged-d.json");
    remote(
        &l,
        a,
        &["collector-claim", &task, "--descriptor-out", s(&d)],
    )
    .json();
    let stdin = token_and_descriptor(&l, &d);
    let endpoint = format!("http://{a}");
    let col = collect_on_stdin(
        &l,
        &stdin,
        &[
            "--endpoint",
            endpoint.as_str(),
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ],
    )
    .json();
    assert_eq!(col["outcome"], "passed", "{col}");
    remote(&l, a, &["finalize", "--change", &id]).json();
    let q = remote(&l, a, &["qualify", "--change", &id]).json();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["revision"], good.as_str());
    lands_the_adder(&l, &id, &good);
    assert!(
        std::fs::read_to_string(ws.join("add.sh"))
            .expect("ws")
            .contains("$(($1 - $2))"),
        "the agent's broken edit stays in its own workspace only"
    );
}
