//! One execution per execution operation (issue 28, item 1): concurrent
//! `collect`s of one descriptor through the real binary. Executions are
//! counted with the test-hooks run log (`AGENT_TASK_TEST_RUN_LOG`), which
//! the collector appends to outside the sandbox as it starts the recipe:
//! nothing inside the sandbox can write outside it.
//!
//! The recipe lists the whole tree it runs on (names, sizes and every
//! file's bytes), sleeps, lists it again and fails when the two differ, so
//! a second collect that removed or replaced the first one's snapshot
//! would fail the first run (the attack: an emptied `/work` under a runner
//! that skips vanished test files).

use crate::common::collect_flow::{Loop, workflow_with};
use crate::common::{Output, TestEnv};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Lists the tree (every entry with its size, then every file's bytes),
/// sleeps `secs`, lists again; fails if anything changed or if the tree
/// was empty, else runs the fixture's tests.
fn tree_check_recipe(secs: u32) -> String {
    format!(
        "snap() {{ ls -lAR . && find . -type f -exec cat {{}} +; }}; \
         a=$(snap); [ -n \"$a\" ] && [ -f test.sh ] || {{ echo empty tree >&2; exit 1; }}; \
         sleep {secs}; b=$(snap); \
         [ \"$a\" = \"$b\" ] || {{ echo the tree changed during the run >&2; exit 1; }}; \
         sh test.sh"
    )
}

/// A Loop whose every command logs each recipe start to a run log.
fn counting_loop(argv: &[&str]) -> (Loop, PathBuf) {
    let env0 = TestEnv::new();
    let wf = workflow_with(&env0, argv);
    let mut env = TestEnv::new();
    let log = env.path("runs.log");
    env.extra_env
        .push(("AGENT_TASK_TEST_RUN_LOG".into(), log.clone().into()));
    env.run(&["init"]).json();
    let l = Loop::setup(env, &wf, "bwrap", &[]);
    drop(env0);
    (l, log)
}

fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A `collect` of the descriptor on stdin, spawned and waiting for it.
fn spawn_collect(l: &Loop) -> std::process::Child {
    l.env
        .std_cmd()
        .arg("--token-file")
        .arg(&l.token)
        .args(["collect", "--descriptor", "-", "--collector-dir"])
        .arg(&l.collector)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn collect")
}

fn output(c: std::process::Child) -> Output {
    let o = c.wait_with_output().expect("wait");
    Output {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Waits (bounded) until the run log has `n` lines.
fn wait_runs(log: &Path, n: usize) {
    for _ in 0..3000 {
        if runs(log) >= n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the run log never reached {n} lines");
}

/// What every collect but the one that ran may answer: the typed
/// `execution_in_progress`, or (when it came after or as the transfer was
/// retained) the one retained outcome.
fn check_other(o: &Output, ran: &Value) {
    if o.code == 0 {
        let v = o.json();
        assert_eq!(v["transfer_digest"], ran["transfer_digest"], "{o}");
        assert_eq!(v["resumed"], true, "{o}");
        assert_eq!(v["status"], "completed", "{o}");
    } else {
        let e = o.error("execution_in_progress", 75);
        assert_eq!(
            e["details"]["execution_operation_id"], ran["execution_operation_id"],
            "{o}"
        );
    }
}

/// Several collects of one descriptor released together (each blocked
/// reading the descriptor from its stdin until all are written): the
/// command runs exactly once, on a tree that stays whole; every other
/// collect answers `execution_in_progress` or the same retained outcome,
/// never a second run and never an `interrupted` record. On the old code
/// (a read-then-write reservation, and a snapshot directory removed and
/// recreated by the next run) two of them ran.
#[test]
fn collects_of_one_descriptor_released_together_run_the_command_once() {
    let recipe = tree_check_recipe(3);
    let (l, log) = counting_loop(&["sh", "-c", &recipe]);
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let bytes = std::fs::read(&dp).expect("descriptor");
    let mut children: Vec<_> = (0..4).map(|_| spawn_collect(&l)).collect();
    // Release them together: write every stdin, then close them all.
    let mut pipes: Vec<_> = children
        .iter_mut()
        .map(|c| c.stdin.take().expect("stdin"))
        .collect();
    for p in &mut pipes {
        p.write_all(&bytes).expect("write descriptor");
    }
    drop(pipes);
    let outs: Vec<Output> = children.into_iter().map(output).collect();
    assert_eq!(
        runs(&log),
        1,
        "the command ran {} times: {outs:#?}",
        runs(&log)
    );
    let ran: Vec<&Output> = outs
        .iter()
        .filter(|o| o.code == 0 && o.json()["resumed"] == false)
        .collect();
    assert_eq!(ran.len(), 1, "exactly one collect ran it: {outs:#?}");
    let ran = ran[0].json();
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(ran["outcome"], "passed", "the tree held: {ran}");
    for o in &outs {
        if o.code != 0 || o.json()["resumed"] == true {
            check_other(o, &ran);
        }
    }
    // Nothing of any run is left under snapshots/.
    let left: Vec<_> = std::fs::read_dir(l.collector.join("snapshots"))
        .expect("snapshots")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let places = snapshot_places(&l, &d);
    assert!(places.iter().all(|p| !p.exists()), "{places:?}");
    let q = l.qualify();
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}), "{q}");
    assert_eq!(d["execution_operation_id"], ran["execution_operation_id"]);
}

/// A second collect of the descriptor while the first one's command runs:
/// `execution_in_progress` at once, nothing run, reserved or written; the
/// first run's tree, checked from inside the sandbox at its start and
/// after a delay, stays the same, and it passes. Once it has finished, a
/// collect answers with the retained outcome (the old code instead
/// uploaded an `interrupted` failure for the running execution).
#[test]
fn a_second_collect_while_the_command_runs_is_in_progress_and_the_tree_holds() {
    let recipe = tree_check_recipe(4);
    let (l, log) = counting_loop(&["sh", "-c", &recipe]);
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let mut first = spawn_collect(&l);
    {
        let mut p = first.stdin.take().expect("stdin");
        p.write_all(&std::fs::read(&dp).expect("descriptor"))
            .expect("write");
    }
    wait_runs(&log, 1);
    let dir = l
        .retained_path(&d, "reservation")
        .parent()
        .expect("execution dir")
        .to_path_buf();
    let before = crate::common::snapshot_files(&dir);
    let second = l.collect(&dp);
    let e = second.error("execution_in_progress", 75);
    assert_eq!(
        e["details"]["execution_operation_id"],
        d["execution_operation_id"]
    );
    assert_eq!(
        crate::common::snapshot_files(&dir),
        before,
        "nothing written"
    );
    // retry-upload of the running execution is refused the same way.
    l.retry(&d).error("execution_in_progress", 75);
    let first = output(first).json();
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["outcome"], "passed", "the tree held: {first}");
    assert_eq!(runs(&log), 1);
    let again = l.collect(&dp).json();
    assert_eq!(again["resumed"], true);
    assert_eq!(again["transfer_digest"], first["transfer_digest"]);
    assert_eq!(again["upload"]["replay"], true, "{again}");
    assert_eq!(runs(&log), 1);
}

/// The execution held by another process (the test holds the same lock a
/// collect takes): before anything is retained the answer is
/// `execution_in_progress` and nothing is created; once the transfer is
/// retained it is that outcome, read only (`in_progress`, no upload).
#[test]
fn a_held_execution_answers_in_progress_or_its_retained_outcome() {
    let (l, log) = counting_loop(&["sh", "test.sh"]);
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let dir = l
        .retained_path(&d, "reservation")
        .parent()
        .expect("execution dir")
        .to_path_buf();
    for d in [dir.parent().expect("executions"), &dir] {
        std::fs::create_dir(d).expect("mkdir");
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("chmod");
    }
    let hold = || {
        let f = std::fs::File::open(&dir).expect("open dir");
        f.try_lock().expect("lock");
        f
    };
    let held = hold();
    l.collect(&dp).error("execution_in_progress", 75);
    assert_eq!(runs(&log), 0);
    assert_eq!(
        std::fs::read_dir(&dir).expect("dir").count(),
        0,
        "nothing reserved"
    );
    drop(held);
    let first = l.collect(&dp).json();
    assert_eq!(first["outcome"], "passed", "{first}");
    let upload = l.read_retained(&d, "upload").expect("upload");
    let held = hold();
    let v = l.collect(&dp).json();
    assert_eq!(v["in_progress"], true, "{v}");
    assert_eq!(v["upload"], Value::Null, "{v}");
    assert_eq!(v["transfer_digest"], first["transfer_digest"]);
    assert_eq!(v["outcome"], "passed");
    assert_eq!(l.read_retained(&d, "upload").expect("upload"), upload);
    drop(held);
    assert_eq!(runs(&log), 1);
}

/// Where the run of an execution materialised its snapshot:
/// `snapshots/<digest>` for a non-root collector, the run directory
/// `agent-task-run-<digest>` in the system temp directory for a root one
/// (its dedicated sandbox uid must reach it by path). The digest is one
/// component over the execution and the reservation's random run id.
fn snapshot_places(l: &Loop, d: &Value) -> [PathBuf; 2] {
    let op = d["execution_operation_id"].as_str().expect("op");
    let tag = agent_task::wire::digest::Sha256Hex::digest(op.as_bytes()).to_string();
    let res: Value = serde_json::from_slice(&l.read_retained(d, "reservation").expect("reserved"))
        .expect("json");
    let run = res["run"].as_str().expect("run id");
    let name = agent_task::wire::digest::domain_digest(
        "agent-task.collector-snapshot.v1",
        format!("{tag}\0{run}").as_bytes(),
    )
    .to_string();
    [
        l.collector.join("snapshots").join(&name),
        PathBuf::from("/tmp").join(format!("agent-task-run-{name}")),
    ]
}

/// A collect SIGKILLed while its command runs leaves its snapshot
/// directory behind; the rerun, which holds the execution's lock, records
/// `interrupted` without running anything and removes that directory.
#[test]
fn a_killed_runs_snapshot_is_removed_by_the_next_holder_of_its_execution() {
    let (l, log) = counting_loop(&["sh", "-c", "sleep 3600"]);
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let mut first = spawn_collect(&l);
    {
        let mut p = first.stdin.take().expect("stdin");
        p.write_all(&std::fs::read(&dp).expect("descriptor"))
            .expect("write");
    }
    wait_runs(&log, 1);
    first.kill().expect("SIGKILL collect");
    first.wait().expect("reap");
    let places = snapshot_places(&l, &d);
    let left: Vec<&PathBuf> = places.iter().filter(|p| p.is_dir()).collect();
    assert_eq!(
        left.len(),
        1,
        "the killed run left its snapshot: {places:?}"
    );
    let again = l.collect(&dp).json();
    assert_eq!(again["status"], "interrupted", "{again}");
    assert_eq!(runs(&log), 1);
    assert!(
        places.iter().all(|p| !p.exists()),
        "removed by the holder of the execution: {places:?}"
    );
}
