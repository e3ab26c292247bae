//! The collector pipeline through the real binary: profile install,
//! collector-claim, collect (bwrap), import, finalize, qualify,
//! land; the tamper suite and the SIGKILL suite.

#![allow(dead_code)] // helpers shared with the tamper and SIGKILL suites

use crate::common::collect_flow::*;
use crate::common::{TestEnv, repo_root};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[test]
fn failing_then_passing_test_qualifies_and_lands_as_a_git_commit() {
    let l = Loop::basic("bwrap");
    // The agent's first edit breaks add.sh: the collector runs, the test fails.
    l.set_add("-");
    let t1 = l.checkpoint();
    let q = l.qualify();
    assert!(
        !l.env.data_dir.join("journal.sqlite").exists(),
        "qualify never creates the journal"
    );
    assert_eq!(q["qualified"], false);
    assert_eq!(
        q["failures"],
        json!([{"task_id": t1, "code": "task_pending"}])
    );
    assert_eq!(
        q["next"],
        json!({"operation": "collector_claim", "task_id": t1})
    );
    let n = l.agent(&["next", "--change", &l.change_id]).json();
    assert_eq!(
        n["next"],
        json!({"operation": "collector_claim", "task_id": t1})
    );
    let (d1, _) = l.claim(&t1, "d1.json");
    let c = l.collect(&d1).json();
    assert_eq!(c["status"], "completed");
    assert_eq!(c["outcome"], "failed");
    assert_eq!(c["exit_code"], 1);
    assert_eq!(c["upload"]["retained"], true);
    let q = l.qualify();
    assert_eq!(q["qualified"], false);
    assert_eq!(q["subject_current"], true);
    assert_eq!(
        q["failures"],
        json!([{"task_id": t1, "code": "collector_not_passed"}])
    );
    assert_eq!(q["next"], json!({"operation": "none"}));
    l.agent(&["finalize", "--change", &l.change_id])
        .error("receipt_incomplete", 65);
    // Fix, checkpoint (new subject), collect again: passes.
    l.set_add("+");
    let t2 = l.checkpoint();
    assert_ne!(t1, t2);
    let (d2, _) = l.claim(&t2, "d2.json");
    let c = l.collect(&d2).json();
    assert_eq!(c["outcome"], "passed", "{c}");
    let q = l.qualify();
    assert_eq!(q["qualified"], false);
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}));
    assert_eq!(
        q["failures"],
        json!([{"task_id": t2, "code": "receipt_missing"}])
    );
    let f = l.agent(&["finalize", "--change", &l.change_id]).json();
    let receipt = f["receipt_digest"].as_str().expect("receipt").to_owned();
    assert_eq!(f["receipt"]["version"], 2);
    assert_eq!(f["receipt"]["transfers"][0]["task_id"], t2.as_str());
    assert_eq!(f["receipt"]["transfers"][0]["origin"]["owner_id"], "alice");
    // finalize again: same receipt, nothing collected.
    let f2 = l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(f2["receipt_digest"], receipt.as_str());
    assert_eq!(f2["created"], false);
    let q = l.qualify();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["receipt_digest"], receipt.as_str());
    assert_eq!(q["tasks"][0]["state"], "succeeded");
    // The operator lands: the branch gets a commit naming the receipt; the
    // checked-out work tree and index move along (--update-worktree).
    let tree_before = crate::common::snapshot_files(&l.source.join("docs"));
    let land = l
        .env
        .run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &l.change_id,
        ])
        .json();
    assert_eq!(land["landed"], true);
    let commit = land["git_commit"].as_str().expect("commit");
    let log = git(&l.source, &["log", "-1", "--format=%H%n%B", "main"]);
    assert!(log.starts_with(commit), "{log}");
    assert!(log.contains(&receipt), "{log}");
    let shown = git(&l.source, &["show", &format!("{commit}:add.sh")]);
    assert!(shown.contains("agent edit"), "{shown}");
    assert_eq!(land["worktree_updated"], true, "{land}");
    assert_eq!(
        git(&l.source, &["status", "--porcelain"]),
        "",
        "the index and work tree are the landed commit's, not a revert"
    );
    assert_eq!(
        crate::common::snapshot_files(&l.source.join("docs")),
        tree_before
    );
    assert_eq!(
        std::fs::read(l.source.join("add.sh")).expect("add.sh"),
        std::fs::read(l.workspace.join("add.sh")).expect("add.sh"),
        "the work tree has the landed files"
    );
    // The landed head makes the subject stale: qualify says checkpoint.
    let q = l.qualify();
    assert_eq!(q["subject_current"], false);
    assert_eq!(q["next"], json!({"operation": "checkpoint"}));
    assert_eq!(q["tasks"], json!([]));
}

#[test]
fn revocation_reenrollment_and_token_revocation_block_landing() {
    for case in ["executor", "token", "reenroll", "policy"] {
        let l = Loop::basic("bwrap");
        let t = l.checkpoint();
        let (d, _) = l.claim(&t, "d.json");
        assert_eq!(l.collect(&d).json()["outcome"], "passed");
        l.agent(&["finalize", "--change", &l.change_id]).json();
        assert_eq!(l.qualify()["qualified"], true);
        l.invalidate(case);
        let head = git(&l.source, &["rev-parse", "main"]);
        let out = l.env.run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &l.change_id,
        ]);
        assert_ne!(out.code, 0, "{case}: {out}");
        assert_eq!(git(&l.source, &["rev-parse", "main"]), head, "{case}");
    }
}

/// A local collect started with the import's test pause: it stops once
/// the transfer has passed prevalidation (said on the FIFO) until
/// [`resume`] lets it go on.
fn collect_paused_after_prevalidation(l: &Loop, d: &Path) -> (std::process::Child, PathBuf) {
    use std::io::Read;
    let fifo = l.env.path("pause.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let mut c = l.env.std_cmd();
    c.env("AGENT_TASK_TEST_IMPORT_PAUSE_FIFO", &fifo)
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "collect",
            "--descriptor",
            s(d),
            "--collector-dir",
            s(&l.collector),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("collect");
    // Blocks until the import has passed prevalidation.
    let mut said = String::new();
    std::fs::File::open(&fifo)
        .expect("open fifo")
        .read_to_string(&mut said)
        .expect("read fifo");
    assert_eq!(said, "prevalidated\n");
    (child, fifo)
}

/// Lets a paused collect go on; its output.
fn resume(child: std::process::Child, fifo: &Path) -> std::process::Output {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .open(fifo)
        .expect("open fifo")
        .write_all(b"go")
        .expect("release");
    child.wait_with_output().expect("collect ends")
}

fn imported_transfers(l: &Loop) -> i64 {
    let c = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("db");
    c.query_row("SELECT count(*) FROM imported_transfers", [], |r| r.get(0))
        .expect("count")
}

/// The unit of work of an import does not repeat prevalidation's
/// signature, record and replay checks; it rechecks what can change in
/// between. A registration revoked after prevalidation (the import paused
/// there by the test hook) still refuses the import, and nothing of it is
/// retained.
#[test]
fn a_registration_revoked_between_prevalidation_and_import_refuses_it() {
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    let (child, fifo) = collect_paused_after_prevalidation(&l, &d);
    l.invalidate("executor");
    let out = resume(child, &fifo);
    assert!(!out.status.success(), "{out:?}");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("enrollment_invalid"), "{text}");
    assert!(text.contains("the registration is revoked"), "{text}");
    assert_eq!(l.qualify()["qualified"], false);
    assert_eq!(imported_transfers(&l), 0, "nothing imported");
}

/// A local collect imports through the connections its reads opened
/// (`store::readcache`, "Early writers"). While it waits between
/// prevalidation and its import it holds no read snapshot of either
/// database: another writer commits and both WALs are checkpointed and
/// truncated meanwhile (a snapshot held would make the checkpoint report
/// busy), and the import then commits on top of what it wrote.
#[test]
fn a_collect_waiting_to_import_holds_no_snapshot_and_imports_onto_later_commits() {
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    let (child, fifo) = collect_paused_after_prevalidation(&l, &d);
    // Another writer meanwhile: a commit to each database (a header
    // field agent-task never reads), then the truncation.
    for db in ["authority.sqlite", "journal.sqlite"] {
        let c = rusqlite::Connection::open(l.env.data_dir.join(db)).expect("db");
        c.execute_batch("PRAGMA user_version = 7")
            .expect("a commit");
        let (busy, frames, done): (i64, i64, i64) = c
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .expect("checkpoint");
        assert_eq!(
            (busy, frames, done),
            (0, 0, 0),
            "{db}: no reader in the WAL"
        );
    }
    let out = resume(child, &fifo);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["outcome"], "passed", "{v}");
    assert_eq!(imported_transfers(&l), 1);
    l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(l.qualify()["qualified"], true);
    for db in ["authority.sqlite", "journal.sqlite"] {
        let c = rusqlite::Connection::open(l.env.data_dir.join(db)).expect("db");
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity");
        assert_eq!(ok, "ok", "{db}");
    }
}

/// A bwrap Loop whose `tests` step runs `bash probe.sh` with `script` as
/// the workspace's `probe.sh`, checkpointed and claimed: the Loop and the
/// descriptor's path.
fn claimed_probe(script: &str) -> (Loop, PathBuf) {
    let env0 = TestEnv::new();
    let wf = workflow_with(&env0, &["bash", "probe.sh"]);
    let l = Loop::new(&wf, "bwrap", None);
    std::fs::write(l.workspace.join("probe.sh"), script).expect("probe");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    (l, d)
}

#[test]
fn bwrap_sandbox_has_no_network_and_cannot_write_the_snapshot() {
    let (l, d) = claimed_probe(
        "#!/bin/bash\n\
         if echo x > ./written 2>/dev/null; then echo SNAPSHOT_WRITABLE; exit 1; fi\n\
         if echo x >> ./add.sh 2>/dev/null; then echo SNAPSHOT_WRITABLE; exit 1; fi\n\
         if (exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null; then echo LOOPBACK; exit 1; fi\n\
         if timeout 5 bash -c '(exec 3<>/dev/tcp/1.1.1.1/80)' 2>/dev/null; then echo OUTSIDE; exit 1; fi\n\
         echo isolated\n",
    );
    let c = l.collect(&d).json();
    assert_eq!(c["outcome"], "passed", "{c}");
    assert_eq!(c["stdout_tail"], "isolated\n");
    // The unshare runtime (shared file system) is refused outright.
    let env = TestEnv::init();
    let e = env
        .run(&["runtime", "probe", "--runtime", "unshare"])
        .error("runtime_not_isolating", 78);
    assert_eq!(e["details"]["runtime"], "unshare");
}

/// The run's process gets `/dev/null` as its standard input and the two
/// output pipes as 1 and 2 even when `collect` itself starts with its
/// standard input and error closed: whatever `collect` then opened on 0
/// and 2 (a database, a retained file) is replaced in the child, never
/// handed to the sandbox.
#[test]
fn a_collect_started_with_closed_stdio_gives_its_run_null_input_and_both_pipes() {
    let (l, d) = claimed_probe(
        "#!/bin/bash\n\
         if read -r x; then echo INPUT; exit 1; fi\n\
         echo out\n\
         echo err >&2\n",
    );
    let direct = l.env.cmd();
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg("exec \"$@\" 0<&- 2>&-")
        .arg("sh")
        .arg(direct.get_program())
        .args(direct.get_args())
        .arg("--token-file")
        .arg(&l.token)
        .args(["collect", "--descriptor"])
        .arg(&d)
        .arg("--collector-dir")
        .arg(&l.collector)
        .env_clear();
    for (k, v) in direct.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    let out = c.output().expect("collect");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["outcome"], "passed", "{v}");
    assert_eq!(v["stdout_tail"], "out\n", "{v}");
    assert_eq!(v["stderr_tail"], "err\n", "{v}");
}

/// A step that `depends_on` the command step becomes claimable exactly
/// when the authority holds a passing imported transfer of the command
/// task's attempt from a live registration: not before its collection, not
/// after a failing one (revoking the registration makes the subject stale,
/// which claim refuses first).
#[test]
fn a_step_depending_on_the_command_step_waits_for_its_passing_transfer() {
    let env = TestEnv::init();
    let mut w: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("fixtures/workflows/basic.json")).expect("fixture"),
    )
    .expect("json");
    w["steps"][1]["depends_on"] = json!(["tests"]);
    let wf = env.path("workflow.json");
    std::fs::write(&wf, serde_json::to_vec(&w).expect("json")).expect("write");
    let l = Loop::setup(env, &wf, "bwrap", &[]);
    // The `notes` row of `next`: (task id, its next operation).
    let notes = |l: &Loop| -> (String, Value) {
        let n = l.agent(&["next", "--change", &l.change_id]).json();
        n["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["step_id"] == "notes")
            .map(|t| {
                (
                    t["task_id"].as_str().expect("id").to_owned(),
                    t["next"].clone(),
                )
            })
            .expect("notes task")
    };
    let notes_task = |l: &Loop| notes(l).0;
    let notes_next = |l: &Loop| notes(l).1;
    let claim_notes = |l: &Loop, task: &str, id: &str| {
        l.agent(&["claim", task, "--request-id", id, "--lease-ms", "60000"])
    };
    // Before any collection: not claimable, the way on is the tests task.
    l.set_add("-");
    let t1 = l.checkpoint();
    let n1 = notes_task(&l);
    assert_eq!(
        notes_next(&l)["reason"],
        "dependency_incomplete",
        "{}",
        notes_next(&l)
    );
    claim_notes(&l, &n1, "n1").error("dependency_incomplete", 65);
    // A failing transfer does not complete the dependency.
    let (d1, _) = l.claim(&t1, "d1.json");
    assert_eq!(l.collect(&d1).json()["outcome"], "failed");
    assert_eq!(notes_next(&l)["reason"], "dependency_incomplete");
    claim_notes(&l, &n1, "n1b").error("dependency_incomplete", 65);
    // A passing one on the next subject does.
    l.set_add("+");
    let t2 = l.checkpoint();
    let n2 = notes_task(&l);
    assert_ne!(n1, n2);
    claim_notes(&l, &n2, "n2").error("dependency_incomplete", 65);
    let (d2, _) = l.claim(&t2, "d2.json");
    assert_eq!(l.collect(&d2).json()["outcome"], "passed");
    assert_eq!(
        notes_next(&l),
        json!({"operation": "claim", "task_id": n2}),
        "the dependency is complete"
    );
    let c = claim_notes(&l, &n2, "n2c").json();
    assert_eq!(c["attempt"]["task_id"], n2.as_str(), "{c}");
}
