//! Evidence an agent cannot forge (issue 10), each attack through the real
//! binary: the agent edits the test (protected paths, in every form: an
//! edit, `exit 0`, a rename, a mode flip, an added file, a symlink swapped
//! in, an edit of a file the test loads); the target head moves after a
//! checkpoint; the agent plants collector evidence; paths git would trim;
//! a tree git trimmed at land. Nothing is retained as passing in any of
//! them.

use crate::common::collect_flow::{Loop, git, workflow_with};
use crate::common::evidence::*;
use crate::common::{Output, TestEnv, repo_root};
use serde_json::{Value, json};
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// One way to change a protected path: what it is, the edit, the path and
/// the change kind `checkpoint` reports.
type ProtectedEdit = (&'static str, Box<dyn Fn(&Path)>, &'static str, &'static str);

/// Every way a candidate can change a protected path, and the change kind
/// `checkpoint` reports for it.
fn protected_edits() -> Vec<ProtectedEdit> {
    vec![
        (
            "test.sh rewritten to exit 0",
            Box::new(|ws: &Path| std::fs::write(ws.join("test.sh"), "exit 0\n").expect("w")),
            "test.sh",
            "content",
        ),
        (
            "a loaded test file edited",
            Box::new(|ws: &Path| {
                std::fs::write(ws.join("tests/cases.txt"), "2 3 -1\n").expect("w")
            }),
            "tests/cases.txt",
            "content",
        ),
        (
            "test.sh renamed",
            Box::new(|ws: &Path| {
                std::fs::rename(ws.join("test.sh"), ws.join("check.sh")).expect("mv")
            }),
            "test.sh",
            "deleted",
        ),
        (
            "test.sh made executable",
            Box::new(|ws: &Path| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(ws.join("test.sh"), std::fs::Permissions::from_mode(0o755))
                    .expect("chmod")
            }),
            "test.sh",
            "mode",
        ),
        (
            "a protected path added",
            Box::new(|ws: &Path| {
                std::fs::write(ws.join("tests/conftest.sh"), "exit 0\n").expect("w")
            }),
            "tests/conftest.sh",
            "added",
        ),
        (
            "a symlink swapped in for test.sh",
            Box::new(|ws: &Path| {
                std::fs::remove_file(ws.join("test.sh")).expect("rm");
                std::fs::write(ws.join("pass.sh"), "exit 0\n").expect("w");
                std::os::unix::fs::symlink("pass.sh", ws.join("test.sh")).expect("ln");
            }),
            "test.sh",
            "mode",
        ),
    ]
}

fn checkpoint_json(l: &Loop) -> Value {
    l.agent(&["checkpoint", "--workspace", s(&l.workspace)])
        .json()
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

fn land(l: &Loop, extra: &[&str]) -> Output {
    let mut args = vec![
        "land",
        "--update-worktree",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
    ];
    args.extend_from_slice(extra);
    l.env.run(&args)
}

fn landings(l: &Loop) -> Vec<(Option<String>, i64, i64, String)> {
    let c = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("db");
    c.prepare(
        "SELECT receipt_digest, allow_protected_change, protected_changes, state FROM landings",
    )
    .expect("prepare")
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// The issue's first attack: the agent replaces the test with `exit 0`
/// (and each other way of changing a protected path). checkpoint lists
/// it; qualify says protected_path_changed for the required task with
/// next checkpoint; collector-claim refuses before any run; finalize and
/// land refuse; nothing is collected or landed.
#[test]
fn changing_a_protected_path_never_qualifies_collects_or_lands() {
    for (what, edit, path, kind) in protected_edits() {
        let l = Loop::basic("bwrap");
        l.set_add("-"); // the broken code the agent hopes to land
        edit(&l.workspace);
        let head = git(&l.source, &["rev-parse", "main"]);
        let cp = checkpoint_json(&l);
        let t = tests_task(&cp);
        assert_eq!(cp["protected_changes_total"], 1, "{what}: {cp}");
        assert_eq!(
            cp["protected_changes"],
            json!([{"path": path, "change": kind}]),
            "{what}"
        );
        let q = l.qualify();
        assert_eq!(q["qualified"], false, "{what}");
        assert_eq!(q["subject_current"], true, "{what}");
        assert_eq!(
            q["failures"],
            json!([{"task_id": t, "code": "protected_path_changed"}]),
            "{what}: {q}"
        );
        assert_eq!(q["next"], json!({"operation": "checkpoint"}), "{what}");
        let n = l.agent(&["next", "--change", &l.change_id]).json();
        assert_eq!(n["next"]["operation"], "checkpoint", "{what}: {n}");
        let e = l
            .agent(&[
                "collector-claim",
                &t,
                "--descriptor-out",
                s(&l.env.path("d.json")),
            ])
            .error("protected_path_changed", 65);
        assert_eq!(
            e["details"]["protected_changes"],
            json!([{"path": path, "change": kind}]),
            "{what}"
        );
        assert!(!l.env.path("d.json").exists(), "{what}: no descriptor");
        assert!(
            !l.env.data_dir.join("journal.sqlite").exists()
                || l.agent(&["status", "--task", &t, "--attempt", "att_none"])
                    .code
                    != 0,
            "{what}: no attempt"
        );
        l.agent(&["finalize", "--change", &l.change_id])
            .error("protected_path_changed", 65);
        let e = land(&l, &[]).error("protected_path_changed", 65);
        assert_eq!(e["details"]["protected_changes_total"], 1, "{what}");
        assert_eq!(
            git(&l.source, &["rev-parse", "main"]),
            head,
            "{what}: nothing landed"
        );
        assert!(landings(&l).is_empty(), "{what}");
        // The honest way on: restore the protected path, fix the code.
        std::fs::remove_file(l.workspace.join("test.sh")).ok();
        std::fs::remove_file(l.workspace.join("check.sh")).ok();
        std::fs::remove_file(l.workspace.join("pass.sh")).ok();
        std::fs::remove_file(l.workspace.join("tests/conftest.sh")).ok();
        for f in ["test.sh", "tests/cases.txt"] {
            std::fs::copy(
                repo_root().join("fixtures/repos/basic").join(f),
                l.workspace.join(f),
            )
            .expect("restore");
        }
        l.set_add("+");
        let cp = checkpoint_json(&l);
        assert_eq!(cp["protected_changes"], json!([]), "{what}: {cp}");
        let (d, _) = l.claim(&tests_task(&cp), "d2.json");
        assert_eq!(l.collect(&d).json()["outcome"], "passed", "{what}");
        l.agent(&["finalize", "--change", &l.change_id]).json();
        assert_eq!(l.qualify()["qualified"], true, "{what}");
    }
}

/// Only the operator lands a protected change, explicitly; the landing
/// row and the commit message record it.
#[test]
fn the_operator_can_land_a_protected_change_explicitly_and_it_is_recorded() {
    let l = Loop::basic("bwrap");
    std::fs::write(l.workspace.join("tests/cases.txt"), "2 3 5\n4 4 8\n").expect("w");
    let cp = checkpoint_json(&l);
    assert_eq!(cp["protected_changes_total"], 1);
    land(&l, &[]).error("protected_path_changed", 65);
    let out = land(&l, &["--allow-protected-change"]).json();
    assert_eq!(out["landed"], true, "{out}");
    assert_eq!(out["allow_protected_change"], true);
    assert_eq!(out["protected_changes"], 1);
    assert_eq!(out["receipt_digest"], Value::Null);
    let msg = git(&l.source, &["log", "-1", "--format=%B", "main"]);
    assert!(msg.contains("protected-paths-changed: 1"), "{msg}");
    assert!(msg.contains("content: tests/cases.txt"), "{msg}");
    assert!(msg.contains("Agent-Task-Receipt: none"), "{msg}");
    assert_eq!(
        git(&l.source, &["show", "main:tests/cases.txt"]),
        "2 3 5\n4 4 8\n"
    );
    assert_eq!(landings(&l), vec![(None, 1, 1, "landed".to_owned())]);
}

/// The target head moves after a checkpoint: the old subject stops
/// qualifying; the agent brings its workspace up to date and checkpoints
/// again, which records the new head as the Change's base and compares
/// protected paths with it.
#[test]
fn a_moved_target_head_needs_a_new_checkpoint_against_the_new_base() {
    let a = Loop::basic("bwrap");
    // A second Change on the same repository, checkpointed before A lands.
    let ws_b = a.env.path("work-b");
    crate::common::task_support::copy_dir(&repo_root().join("fixtures/repos/basic"), &ws_b);
    let b_open = a
        .agent(&[
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--workspace",
            s(&ws_b),
        ])
        .json();
    let b = b_open["change_id"].as_str().expect("change").to_owned();
    let base0 = b_open["base_revision"].clone();
    let cp_b = a.agent(&["checkpoint", "--workspace", s(&ws_b)]).json();
    assert_eq!(cp_b["base_revision"], base0);
    let tb = tests_task(&cp_b);
    // A: the operator lands a change to the protected test data.
    std::fs::write(a.workspace.join("tests/cases.txt"), "2 3 5\n1 1 2\n").expect("w");
    checkpoint_json(&a);
    let landed = land(&a, &["--allow-protected-change"]).json();
    let new_head = landed["revision"].clone();
    // B's subject is stale: qualify says checkpoint, collector-claim refuses.
    let q = a.agent(&["qualify", "--change", &b]).json();
    assert_eq!(q["subject_current"], false, "{q}");
    assert_eq!(q["next"], json!({"operation": "checkpoint"}));
    a.agent(&[
        "collector-claim",
        &tb,
        "--descriptor-out",
        s(&a.env.path("db.json")),
    ])
    .error("subject_stale", 65);
    // Checkpointing again without the new head's test data: against the
    // new base, B now changes a protected path.
    let cp = a.agent(&["checkpoint", "--workspace", s(&ws_b)]).json();
    assert_eq!(cp["base_revision"], new_head, "{cp}");
    assert_eq!(
        cp["protected_changes"],
        json!([{"path": "tests/cases.txt", "change": "content"}])
    );
    // Brought up to date (the merge), it qualifies after a collection.
    std::fs::copy(
        a.workspace.join("tests/cases.txt"),
        ws_b.join("tests/cases.txt"),
    )
    .expect("cp");
    let cp = a.agent(&["checkpoint", "--workspace", s(&ws_b)]).json();
    assert_eq!(cp["protected_changes"], json!([]), "{cp}");
    let t = tests_task(&cp);
    let p = a.env.path("db2.json");
    a.agent(&["collector-claim", &t, "--descriptor-out", s(&p)])
        .json();
    assert_eq!(a.collect(&p).json()["outcome"], "passed");
    a.agent(&["finalize", "--change", &b]).json();
    assert_eq!(
        a.agent(&["qualify", "--change", &b]).json()["qualified"],
        true
    );
}

/// The issue's second attack: make `collector/snapshots` a regular file so
/// the first collect fails after its reservation, plant a passing record,
/// rerun collect. The planted record has no valid MAC: refused, nothing
/// signed, nothing imported.
#[test]
fn planted_collector_state_is_refused_and_nothing_is_signed() {
    let l = Loop::basic("bwrap");
    l.set_add("-"); // would fail if it ran
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    std::fs::create_dir_all(&l.collector).expect("dir");
    std::fs::write(l.collector.join("snapshots"), "not a directory").expect("w");
    let first = l.collect(&dp);
    assert_ne!(first.code, 0, "the first collect fails: {first}");
    let reservation = l.retained_path(&d, "reservation");
    assert!(reservation.exists(), "it failed after reserving");
    std::fs::remove_file(l.collector.join("snapshots")).expect("rm");
    // The request digest and a runtime identity, as the issue's attacker took them.
    let body = l.read_retained(&d, "reservation").expect("reservation");
    let r: Value = serde_json::from_slice(&body).expect("json");
    let identity = crate::common::probe_bwrap(&l.env);
    let planted = json!({
        "version": 1, "request_digest": r["request_digest"], "status": "completed", "outcome": "passed",
        "runtime_identity": identity,
        "run": {"exit_code": 0, "signal": null, "timed_out": false, "output_capped": false,
                "started_at": "2026-01-01T00:00:00.000Z", "duration_ms": 1,
                "stdout": {"bytes": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "tail": "", "capped": false},
                "stderr": {"bytes": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "tail": "", "capped": false},
                "cleanup_confirmed": true},
        "detail": null,
    });
    let record = l.retained_path(&d, "record");
    let plant = |bytes: &[u8]| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&record, bytes).expect("plant");
        std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    };
    // Exactly the issue's attack: a plain record.json.
    let legacy = record.with_file_name("record.json");
    std::fs::write(&legacy, serde_json::to_vec(&planted).expect("json")).expect("plant");
    let e = l.collect(&dp).error("collector_state_tampered", 65);
    assert_eq!(e["details"]["file"], "record.json");
    std::fs::remove_file(&legacy).expect("rm");
    // As plain JSON in the sealed file's place.
    plant(&serde_json::to_vec(&planted).expect("json"));
    let e = l.collect(&dp).error("collector_state_tampered", 65);
    assert_eq!(e["details"]["file"], "record");
    // Sealed with another key (the attacker's own).
    let other = agent_task::collector::state::StateKey::derive(&[9u8; 32]).expect("key");
    let op = d["execution_operation_id"].as_str().expect("op");
    let tag =
        data_encoding::HEXLOWER.encode(&<sha2::Sha256 as sha2::Digest>::digest(op.as_bytes()));
    plant(
        &other
            .seal("record", &tag, &serde_json::to_vec(&planted).expect("json"))
            .expect("seal"),
    );
    l.collect(&dp).error("collector_state_tampered", 65);
    // A genuine sealed file of this collector, moved from its role (the
    // reservation) into the record's place.
    plant(&std::fs::read(&reservation).expect("r"));
    l.collect(&dp).error("collector_state_tampered", 65);
    assert!(
        !l.retained_path(&d, "transfer").exists(),
        "nothing was signed"
    );
    // An edited reservation is refused as well.
    std::fs::remove_file(&record).expect("rm");
    let mut sealed = std::fs::read(&reservation).expect("r");
    let n = sealed.len();
    sealed[n / 2] ^= 1;
    std::fs::write(&reservation, &sealed).expect("edit");
    l.collect(&dp).error("collector_state_tampered", 65);
    let q = l.qualify();
    assert_ne!(q["tasks"][0]["state"], "succeeded", "{q}");
    assert_eq!(q["qualified"], false);
    let c = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("db");
    let n: i64 = c
        .query_row("SELECT count(*) FROM imported_transfers", [], |r| r.get(0))
        .expect("count");
    assert_eq!(n, 0, "nothing imported");
}

/// The issue's third attack: paths git refuses or aliases. checkpoint
/// refuses each (no new subject); the test that passes only when
/// `.Git/guard` exists never gets a revision.
#[test]
fn paths_git_would_refuse_or_alias_are_refused_at_checkpoint() {
    let l = Loop::basic("bwrap");
    let base = checkpoint_json(&l)["version"].as_u64().expect("v");
    for (path, link) in [
        (".Git/guard", false),
        (".GIT/config", false),
        ("GIT~1/x", false),
        (".git./x", false),
        (".git /x", false),
        ("sub/.gIt/y", false),
        (".gitmodules", true),
    ] {
        let p = l.workspace.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        if link {
            std::os::unix::fs::symlink("add.sh", &p).expect("ln");
        } else {
            std::fs::write(&p, "guard").expect("w");
        }
        let e = l
            .agent(&["checkpoint", "--workspace", s(&l.workspace)])
            .error("path_not_representable", 65);
        assert_eq!(e["details"]["path"], path, "{e}");
        let top = l.workspace.join(path.split('/').next().expect("top"));
        if top.is_dir() {
            std::fs::remove_dir_all(&top).expect("rm");
        } else {
            std::fs::remove_file(&top).expect("rm");
        }
        let n = l.agent(&["next", "--change", &l.change_id]).json();
        assert_eq!(n["version"], base, "{path}: no new subject");
    }
    // A regular .gitmodules file is fine.
    std::fs::write(l.workspace.join(".gitmodules"), "").expect("w");
    checkpoint_json(&l);
}

/// land compares the tree git wrote with the manifest before it moves a
/// ref: a tree missing an entry (the test-hooks seam drops one, as git
/// does with a path it refuses) aborts with nothing moved or recorded.
#[test]
fn a_tampered_tree_at_land_aborts_and_moves_nothing() {
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let head = git(&l.source, &["rev-parse", "main"]);
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_TEST_LAND_TAMPER_TREE", "1").args([
        "land",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
    ]);
    let e = crate::common::run_cmd(&mut c).error("landed_tree_mismatch", 65);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("nothing was landed"),
        "{e}"
    );
    assert_eq!(git(&l.source, &["rev-parse", "main"]), head);
    assert!(landings(&l).is_empty(), "no intent was recorded");
    assert_eq!(
        l.qualify()["qualified"],
        true,
        "still qualified: nothing changed"
    );
    let out = land(&l, &[]).json();
    assert_eq!(out["landed"], true);
}

/// requirement install warns about each command step whose argv names a
/// file of the tree that no protected pattern covers.
#[test]
fn requirement_install_warns_about_unprotected_recipe_files() {
    let l = Loop::basic("bwrap");
    let mut w: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("fixtures/workflows/basic.json")).expect("fixture"),
    )
    .expect("json");
    w.as_object_mut().expect("obj").remove("protected");
    w["steps"][0]["recipe"]["argv"] = json!(["sh", "./test.sh", "add.sh", "missing.sh"]);
    let p = l.env.path("unprotected.json");
    std::fs::write(&p, serde_json::to_vec(&w).expect("json")).expect("w");
    let out = l
        .env
        .run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            s(&p),
        ])
        .json();
    let warned: Vec<(&str, &str)> = out["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| {
            (
                w["step_id"].as_str().expect("s"),
                w["path"].as_str().expect("p"),
            )
        })
        .collect();
    assert_eq!(
        warned,
        vec![("tests", "test.sh"), ("tests", "add.sh")],
        "{out}"
    );
    let out = l
        .env
        .run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            s(&repo_root().join("fixtures/workflows/basic.json")),
        ])
        .json();
    assert_eq!(out["warnings"], json!([]), "the fixture protects test.sh");
    // Patterns are validated.
    w["protected"] = json!(["# a comment"]);
    std::fs::write(&p, serde_json::to_vec(&w).expect("json")).expect("w");
    l.env
        .run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            s(&p),
        ])
        .error("invalid_input", 65);
}

/// The revision cap: a 1 GiB sparse file (a few KB on disk) is refused
/// from its stats under a smaller cap, before any byte is read.
#[test]
fn a_revision_over_the_cap_is_refused_before_reading() {
    let l = Loop::basic("bwrap");
    let f = std::fs::File::create(l.workspace.join("sparse.bin")).expect("create");
    f.set_len(1 << 30).expect("sparse");
    let before = crate::common::snapshot_files(&l.env.data_dir.join("cas"));
    let e = l
        .agent(&[
            "checkpoint",
            "--workspace",
            s(&l.workspace),
            "--max-revision-bytes",
            "100000000",
        ])
        .error("revision_too_large", 65);
    assert_eq!(e["details"]["max_revision_bytes"], 100_000_000);
    assert!(e["details"]["total_bytes"].as_u64().expect("total") > 1 << 30);
    assert_eq!(
        crate::common::snapshot_files(&l.env.data_dir.join("cas")),
        before,
        "nothing was stored"
    );
}

/// Under the default cap, a 1 GiB sparse file goes through checkpoint,
/// collect and land without ever being held in memory: each command runs
/// with its data segment capped well below the file's size.
#[test]
fn a_1_gib_sparse_file_is_streamed_through_checkpoint_collect_and_land() {
    let l = Loop::basic("bwrap");
    let f = std::fs::File::create(l.workspace.join("sparse.bin")).expect("create");
    f.set_len(1 << 30).expect("sparse");
    // 256 MiB of private writable memory per process (the soft
    // RLIMIT_DATA, which is what the kernel enforces). The hard limit is
    // left alone: the sandbox launcher sets the pinned one, and a
    // collector that cannot raise a lowered hard limit refuses the run.
    let capped = |args: &[&str]| {
        let mut c = std::process::Command::new("prlimit");
        c.arg("--data=268435456:")
            .arg("--")
            .arg(crate::common::bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", l.env.tmp.path())
            .arg("--data-dir")
            .arg(&l.env.data_dir)
            .arg("--token-file")
            .arg(&l.token)
            .args(args);
        let out = c.output().expect("prlimit");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let cp = capped(&["checkpoint", "--workspace", s(&l.workspace)]).json();
    let t = tests_task(&cp);
    let dp = l.env.path("d.json");
    l.agent(&["collector-claim", &t, "--descriptor-out", s(&dp)])
        .json();
    let c = capped(&[
        "collect",
        "--descriptor",
        s(&dp),
        "--collector-dir",
        s(&l.collector),
    ])
    .json();
    assert_eq!(c["outcome"], "passed", "{c}");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let out = capped(&[
        "land",
        "--update-worktree",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
    ])
    .json();
    assert_eq!(out["landed"], true);
    let size = git(&l.source, &["cat-file", "-s", "main:sparse.bin"]);
    assert_eq!(size.trim(), (1u64 << 30).to_string());
}

/// The deployment fails closed: collect refuses, before it reserves
/// anything, a collector directory, key or retained state others can
/// reach, a parent of the collector or data directory others can write or
/// that is a symlink, and a data directory taken from the environment.
#[test]
fn collect_fails_closed_on_a_misconfigured_deployment() {
    use std::os::unix::fs::PermissionsExt;
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let chmod = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    let key = l.collector.join("signing-key.ed25519");
    let refused = |what: &str, code: &str, exit: i32| {
        let e = l.collect(&dp).error(code, exit);
        assert!(
            !l.retained_path(&d, "reservation").exists(),
            "{what}: nothing reserved: {e}"
        );
    };
    chmod(&l.collector, 0o755);
    refused("a readable collector directory", "insecure_permissions", 77);
    chmod(&l.collector, 0o700);
    chmod(&key, 0o644);
    refused("a readable key", "insecure_permissions", 77);
    chmod(&key, 0o600);
    chmod(l.env.tmp.path(), 0o777);
    refused("a parent others can write", "insecure_permissions", 77);
    chmod(l.env.tmp.path(), 0o700);
    // A symlinked parent.
    let link = l
        .env
        .tmp
        .path()
        .parent()
        .expect("parent")
        .join(format!("evidence-link-{}", std::process::id()));
    std::os::unix::fs::symlink(l.env.tmp.path(), &link).expect("ln");
    let e = l
        .agent(&[
            "collect",
            "--descriptor",
            s(&dp),
            "--collector-dir",
            s(&link.join("collector")),
        ])
        .error("symlink_refused", 77);
    std::fs::remove_file(&link).expect("rm");
    assert!(
        e["message"].as_str().expect("m").contains("symbolic link"),
        "{e}"
    );
    // The data directory only from --data-dir on the command line.
    let mut c = l.env.bare_cmd();
    c.env("AGENT_TASK_DATA_DIR", &l.env.data_dir)
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "collect",
            "--descriptor",
            s(&dp),
            "--collector-dir",
            s(&l.collector),
        ]);
    crate::common::run_cmd(&mut c).error("usage", 64);
    // Retained state others can read is refused when it is read back.
    assert_eq!(l.collect(&dp).json()["outcome"], "passed");
    chmod(&l.retained_path(&d, "transfer"), 0o644);
    l.retry(&d).error("insecure_permissions", 77);
}

/// The sandbox keeps candidate code in: a candidate test tries to read
/// the signing key, write into the data and collector directories and the
/// root, fill /tmp, create a user namespace and fork-bomb. Each fails
/// inside the sandbox, the signed record says so, and the key never
/// reaches it. As root, the command runs as the dedicated uid.
#[test]
fn candidate_code_cannot_reach_the_key_the_stores_or_the_host() {
    let env0 = TestEnv::new();
    let wf = workflow_with(&env0, &["sh", "attack.sh"]);
    let env = TestEnv::init();
    let key = env.path("collector").join("signing-key.ed25519");
    // The command waits in a `sleep` the test can find (and then ends) to
    // see which host uid runs it. The fork bomb comes last: dash stops at
    // the first refused fork.
    let hold = format!("sleep 3599.{}", std::process::id());
    let script = format!(
        "#!/bin/sh\n\
         if cat {key} 2>/dev/null; then echo KEY_READ; else echo key: refused; fi\n\
         if touch {data}/planted 2>/dev/null; then echo DATA_WRITTEN; else echo data: refused; fi\n\
         if touch {col}/planted 2>/dev/null; then echo COLLECTOR_WRITTEN; else echo collector: refused; fi\n\
         if touch /planted 2>/dev/null || touch /usr/planted 2>/dev/null || touch /dev/planted 2>/dev/null; then echo ROOT_WRITTEN; else echo root: read-only; fi\n\
         if dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>/dev/null; then echo TMP_FILLED; else echo tmp: full; fi\n\
         if unshare -U true 2>/dev/null; then echo USERNS_CREATED; else echo userns: refused; fi\n\
         echo uid $(id -u)\n\
         {hold}\n\
         i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; echo FORKED_ALL\n",
        key = key.display(),
        data = env.data_dir.display(),
        col = env.path("collector").display(),
        hold = hold,
    );
    let l = Loop::setup(
        env,
        &wf,
        "bwrap",
        &[
            "--sandbox-processes",
            "64",
            "--sandbox-tmpfs-bytes",
            "4194304",
        ],
    );
    drop(env0);
    std::fs::write(l.workspace.join("attack.sh"), script).expect("w");
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let child = l
        .env
        .std_cmd()
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "collect",
            "--descriptor",
            s(&dp),
            "--collector-dir",
            s(&l.collector),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn collect");
    // Bounded wait for the held command; its host uid; then let it go on.
    let mut seen = None;
    for _ in 0..6000 {
        let ps = std::process::Command::new("ps")
            .args(["-eo", "uid=,pid=,args="])
            .output()
            .expect("ps");
        seen = String::from_utf8_lossy(&ps.stdout)
            .lines()
            .find_map(|line| {
                let mut it = line.split_whitespace();
                let (uid, pid) = (it.next()?, it.next()?);
                (it.collect::<Vec<_>>().join(" ") == hold).then(|| (uid.to_owned(), pid.to_owned()))
            });
        if seen.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (uid, pid) = seen.expect("the command ran");
    if rustix_is_root() {
        assert_eq!(
            uid, "2000000000",
            "as root, the command runs as the dedicated uid"
        );
    } else {
        assert_ne!(uid, "0");
    }
    std::process::Command::new("kill")
        .arg(&pid)
        .status()
        .expect("kill the held sleep");
    let done = child.wait_with_output().expect("collect");
    let c: Value = serde_json::from_slice(&done.stdout).expect("collect output");
    assert_eq!(c["status"], "completed", "{c}");
    let out = c["stdout_tail"].as_str().expect("tail").to_owned();
    let err = c["stderr_tail"].as_str().expect("tail").to_owned();
    for want in [
        "key: refused",
        "data: refused",
        "collector: refused",
        "root: read-only",
        "tmp: full",
        "userns: refused",
        "uid 65534",
    ] {
        assert!(out.contains(want), "{want}: {out}\n{err}");
    }
    for bad in [
        "KEY_READ",
        "DATA_WRITTEN",
        "COLLECTOR_WRITTEN",
        "ROOT_WRITTEN",
        "TMP_FILLED",
        "USERNS_CREATED",
        "FORKED_ALL",
    ] {
        assert!(!out.contains(bad), "{bad}: {out}\n{err}");
    }
    assert!(
        err.contains("fork"),
        "the fork bomb hit the process limit: {err}"
    );
    // The signed record carries these tails, and never the key.
    let seed = std::fs::read_to_string(l.collector.join("signing-key.ed25519")).expect("key");
    let record = l.read_retained(&d, "record").expect("record");
    let transfer = l.read_retained(&d, "transfer").expect("transfer");
    assert!(String::from_utf8_lossy(&record).contains("key: refused"));
    for (what, bytes) in [("record", &record), ("transfer", &transfer)] {
        assert!(
            !String::from_utf8_lossy(bytes).contains(seed.trim()),
            "the key is in the {what}"
        );
    }
    assert!(!l.env.data_dir.join("planted").exists());
    assert!(!l.collector.join("planted").exists());
}

fn rustix_is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

fn install_stop(l: &Loop, agent: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "install-stop",
        "--agent",
        agent,
        "--workspace",
        s(&l.workspace),
        "--change",
        &l.change_id,
    ];
    args.extend_from_slice(extra);
    let mut c = l.env.cmd();
    c.arg("--token-file").arg(&l.token).args(&args);
    crate::common::run_cmd(&mut c).json()
}

/// install-stop writes the hook (absolute paths of the binary, data dir
/// and token file) into local settings files that a git workspace
/// excludes: checkpoints leave them out and the landed commit does not
/// contain them. A user-level Codex hook passes silently outside its
/// workspace.
#[test]
fn local_hook_settings_stay_out_of_revisions_and_the_landed_tree() {
    let l = Loop::basic("bwrap");
    // The agent's workspace is a clone of the repository.
    git(&l.workspace, &["init", "-q", "-b", "main"]);
    git(&l.workspace, &["add", "-A"]);
    git(&l.workspace, &["commit", "-q", "-m", "clone"]);
    let before = checkpoint_json(&l);
    let out = install_stop(&l, "claude", &[]);
    assert_eq!(out["settings_file"], ".claude/settings.local.json");
    assert_eq!(out["warnings"], json!([]), "{out}");
    let exclude = std::fs::read_to_string(l.workspace.join(".git/info/exclude")).expect("exclude");
    assert!(
        exclude.lines().any(|x| x == "/.claude/settings.local.json"),
        "{exclude}"
    );
    let settings =
        std::fs::read_to_string(l.workspace.join(".claude/settings.local.json")).expect("r");
    assert!(
        settings.contains(s(&l.token)),
        "the hook names the token file"
    );
    let repo_codex = install_stop(&l, "codex", &["--repo-hooks"]);
    assert_eq!(repo_codex["scope"], "repository");
    let exclude = std::fs::read_to_string(l.workspace.join(".git/info/exclude")).expect("exclude");
    assert!(
        exclude.lines().any(|x| x == "/.codex/hooks.json"),
        "{exclude}"
    );
    // Installing again adds no second exclude line.
    install_stop(&l, "claude", &[]);
    let again = std::fs::read_to_string(l.workspace.join(".git/info/exclude")).expect("exclude");
    assert_eq!(again, exclude);
    // The checkpoint's revision is the one before the hook files existed.
    let cp = checkpoint_json(&l);
    assert_eq!(cp["revision"], before["revision"], "{cp}");
    assert_eq!(cp["files"], before["files"]);
    // Through the whole loop to the landed commit.
    l.set_add("+");
    std::fs::write(
        l.workspace.join("CHANGELOG.md"),
        "# Changelog\n\n- documented\n",
    )
    .expect("w");
    let cp = checkpoint_json(&l);
    let (d, _) = l.claim(&tests_task(&cp), "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    land(&l, &[]).json();
    let tree = git(&l.source, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(tree.lines().any(|p| p == "CHANGELOG.md"), "{tree}");
    for local in [
        ".claude/settings.local.json",
        ".codex/hooks.json",
        ".claude/settings.json",
    ] {
        assert!(!tree.lines().any(|p| p == local), "{local} landed: {tree}");
    }
    let grep = std::process::Command::new("git")
        .arg("-C")
        .arg(&l.source)
        .args(["grep", "-l", "-F", s(&l.token), "main", "--"])
        .output()
        .expect("git grep");
    assert_eq!(
        grep.status.code(),
        Some(1),
        "no landed file names the token file: {grep:?}"
    );
}

/// A user-level Codex hook (the default) fires in every repository: in a
/// directory outside its workspace it passes silently (no decision, no
/// counter); inside it, it decides as usual.
#[test]
fn a_user_level_codex_hook_passes_silently_outside_its_workspace() {
    let l = Loop::basic("bwrap");
    let out = install_stop(&l, "codex", &[]);
    assert_eq!(out["scope"], "user");
    let file = l.env.tmp.path().join(".codex/hooks.json");
    assert_eq!(out["settings_file"], s(&file));
    assert!(
        !l.workspace.join(".codex").exists(),
        "nothing in the workspace"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).expect("r")).expect("json");
    let cmd = doc["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .expect("command")
        .to_owned();
    assert!(cmd.contains(" task-codex-stop "), "{cmd}");
    // A second workspace gets its own entry in the same file.
    let ws2 = l.env.path("work2");
    std::fs::create_dir_all(&ws2).expect("mkdir");
    let mut c = l.env.cmd();
    c.arg("--token-file").arg(&l.token).args([
        "install-stop",
        "--agent",
        "codex",
        "--workspace",
        s(&ws2),
        "--change",
        "ch_other",
    ]);
    crate::common::run_cmd(&mut c).json();
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).expect("r")).expect("json");
    assert_eq!(doc["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
    // Elsewhere: silent pass, no counter written.
    let elsewhere = l.env.path("other-repo");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let state = l.env.path("state");
    let hook = |cwd: &Path| {
        let mut c = l.env.cmd();
        c.env("XDG_STATE_HOME", &state)
            .arg("--token-file")
            .arg(&l.token)
            .args([
                "task-codex-stop",
                &l.change_id,
                "--workspace",
                s(&l.workspace),
            ])
            .write_stdin(crate::common::hook_stop::payload("codex", false, cwd));
        crate::common::run_cmd(&mut c)
    };
    let out = hook(&elsewhere);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout.trim(), "{}", "{out}");
    assert!(!state.exists(), "no counter was written");
    // Inside the workspace it decides: no checkpoint yet, so it blocks.
    let out = hook(&l.workspace.join("docs"));
    let v: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["decision"], "block", "{out}");
}

/// The unshare runtime is refused at profile install and at collect (a
/// profile stored by an older binary), before anything is reserved; so is
/// a pinned limit this collector cannot apply.
#[test]
fn unshare_and_inapplicable_limits_are_refused_before_reserving() {
    let l = Loop::basic("bwrap");
    let e = l
        .env
        .run(&[
            "profile",
            "install",
            "--registration",
            &l.registration,
            "--step",
            "tests",
            "--runtime",
            "unshare",
        ])
        .error("runtime_not_isolating", 78);
    assert_eq!(e["details"]["runtime"], "unshare");
    // A stored unshare profile (as an older agent-task installed it).
    rewrite_profile(&l, |p| {
        p.runtime = agent_task::collector::runtime::RuntimeKind::Unshare;
        p.limits.sandbox = None;
    });
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    l.collect(&dp).error("runtime_not_isolating", 78);
    assert!(
        !l.retained_path(&d, "reservation").exists(),
        "nothing reserved"
    );
    // A bwrap profile whose pinned limits this collector cannot apply: as
    // root, no dedicated uid; otherwise a dedicated uid only root can take.
    let l = Loop::basic("bwrap");
    rewrite_profile(&l, |p| {
        p.runtime = agent_task::collector::runtime::RuntimeKind::Bwrap;
        let mut limits = agent_task::collector::runtime::LimitRequest::default()
            .resolve()
            .expect("defaults");
        limits.run_as_uid = match limits.run_as_uid {
            Some(_) => None,
            None => Some(4242),
        };
        p.limits.sandbox = Some(limits);
    });
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    l.collect(&dp).error("sandbox_limit_unavailable", 69);
    assert!(
        !l.retained_path(&d, "reservation").exists(),
        "nothing reserved"
    );
}
