//! Bad input and faults over real transfers: the tamper suite (every
//! header field and record bytes flipped, re-signed binding changes, wrong
//! key, revoked key, old epoch, stale fence, oversized envelope, profile
//! and runtime identity mismatch) and the SIGKILL suite (each step of
//! `collect`, then a rerun: the command never runs twice).

use crate::common::collect_faults::*;
use crate::common::collect_flow::{Loop, workflow_with};
use crate::common::{Output, TestEnv};
use agent_task::collector::transfer;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn upload(l: &Loop, d: &Value, bytes: &[u8]) -> Output {
    // Re-sealed with the collector's key: the authority's import is what
    // these tests exercise (an unsealed file never gets that far).
    l.write_retained(d, "transfer", bytes);
    l.retry(d)
}

fn refused(o: &Output, what: &str) -> String {
    assert_ne!(o.code, 0, "{what} must be refused: {o}");
    assert!(o.stdout.is_empty(), "{what}: {o}");
    let v: Value = serde_json::from_str(o.stderr.trim()).expect("error json");
    v["error"].as_str().expect("code").to_owned()
}

fn resign(
    l: &Loop,
    bytes: &[u8],
    f: impl FnOnce(&mut transfer::TransferHeader, &mut Vec<Vec<u8>>),
) -> Vec<u8> {
    let env = transfer::open(bytes).expect("open");
    let mut h = env.header;
    let mut records = env.records;
    f(&mut h, &mut records);
    let key = agent_task::workflow::authority::admin::load_signing_key(&l.collector).expect("key");
    transfer::seal(h, &records, &key).expect("seal")
}

fn task_state(l: &Loop, task: &str) -> String {
    let q = l.qualify();
    q["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["task_id"] == task)
        .map(|t| t["state"].as_str().expect("state").to_owned())
        .unwrap_or_default()
}

#[test]
fn tampered_transfers_are_refused_and_nothing_is_retained() {
    let l = Loop::basic("bwrap");
    let (d, orig, task) = retained(&l);
    let env = transfer::open(&orig).expect("open");
    let hlen = u32::from_be_bytes(orig[8..12].try_into().expect("4")) as usize;
    let header = &orig[12..12 + hlen];
    // One flipped byte inside every header field's value.
    let hv: Value = serde_json::from_slice(header).expect("header");
    let mut positions = Vec::new();
    for key in hv.as_object().expect("object").keys() {
        let pat = format!("\"{key}\":");
        let at = header
            .windows(pat.len())
            .position(|w| w == pat.as_bytes())
            .expect("key present");
        // first byte of the value that is not a quote or bracket
        let mut p = at + pat.len();
        while matches!(header[p], b'"' | b'{' | b'[') {
            p += 1;
        }
        positions.push(12 + p);
    }
    // The magic, the length prefix, first/middle/last byte of each record, the signature.
    positions.extend([0, 9, 11]);
    let mut at = 12 + hlen;
    for r in &env.header.records {
        let len = r.length as usize;
        positions.extend([at, at + len / 2, at + len - 1]);
        at += len;
    }
    positions.extend([orig.len() - 64, orig.len() - 1]);
    for p in positions {
        let mut b = orig.clone();
        b[p] ^= 0x01;
        refused(&upload(&l, &d, &b), &format!("flip at {p}"));
    }
    // Re-signed with the enrolled key: every binding is still checked.
    type Edit = Box<dyn Fn(&mut transfer::TransferHeader, &mut Vec<Vec<u8>>)>;
    let edits: Vec<(&str, Edit, &str)> = vec![
        (
            "audience",
            Box::new(|h, _| h.audience = "dd_other".into()),
            "transfer_invalid",
        ),
        ("fence", Box::new(|h, _| h.fence += 1), "stale_fence"),
        (
            "grant",
            Box::new(|h, _| h.origin.grant_generation += 1),
            "authorization_changed",
        ),
        (
            "epoch",
            Box::new(|h, _| h.registration.epoch += 1),
            "enrollment_invalid",
        ),
        (
            "profile",
            Box::new(|h, _| h.collector_profile_id = "cp_00000000000000000000000000000000".into()),
            "profile_invalid",
        ),
        (
            "task digest",
            Box::new(|h, _| h.task_digest = h.attempt_digest.clone()),
            "transfer_invalid",
        ),
        (
            "step",
            Box::new(|h, _| h.step_id = "notes".into()),
            "profile_invalid",
        ),
        (
            "identity",
            Box::new(|h, _| {
                h.collector_identity.runtime_identity_digest = Some(h.task_digest.clone())
            }),
            "transfer_invalid",
        ),
        (
            "request",
            Box::new(|_, r| {
                let mut req: transfer::ExecutionRequest =
                    serde_json::from_slice(&r[0]).expect("req");
                req.recipe.argv = vec!["true".into()];
                r[0] = serde_json::to_vec(&req).expect("json");
            }),
            "transfer_invalid",
        ),
        (
            "record says passed with exit 1",
            Box::new(|_, r| {
                let mut rec: transfer::ExecutionRecord =
                    serde_json::from_slice(&r[1]).expect("rec");
                rec.run.as_mut().expect("run").exit_code = Some(1);
                r[1] = serde_json::to_vec(&rec).expect("json");
            }),
            "transfer_invalid",
        ),
        (
            "cleanup unconfirmed but passed",
            Box::new(|_, r| {
                let mut rec: transfer::ExecutionRecord =
                    serde_json::from_slice(&r[1]).expect("rec");
                rec.run.as_mut().expect("run").cleanup_confirmed = false;
                r[1] = serde_json::to_vec(&rec).expect("json");
            }),
            "transfer_invalid",
        ),
    ];
    for (what, edit, code) in edits {
        let b = resign(&l, &orig, |h, r| edit(h, r));
        assert_eq!(refused(&upload(&l, &d, &b), what), code, "{what}");
    }
    // A wrong key.
    let (other, _) = agent_task::wire::ed25519::Keypair::generate().expect("key");
    let e = transfer::open(&orig).expect("open");
    let b = transfer::seal(e.header, &e.records, &other).expect("seal");
    assert_eq!(
        refused(&upload(&l, &d, &b), "wrong key"),
        "signature_invalid"
    );
    // An oversized retained envelope is refused by the collector itself,
    // before it is read whole or uploaded (the authority's own 16 MiB bound
    // is unit-tested in transfer.rs and over HTTP in workspace_collect.rs).
    let big = vec![0u8; transfer::MAX_TRANSFER_BYTES as usize + 1];
    assert_eq!(
        refused(&upload(&l, &d, &big), "oversized"),
        "collector_state_tampered"
    );
    // Nothing was retained: the task is still only claimed.
    assert_eq!(task_state(&l, &task), "claimed");
    // The original bytes import; an identical retry is the historical view;
    // other bytes under the same execution operation conflict.
    let ok = upload(&l, &d, &orig).json();
    assert_eq!(ok["upload"]["replay"], false);
    assert_eq!(ok["upload"]["outcome"], "passed");
    let again = upload(&l, &d, &orig).json();
    assert_eq!(again["upload"]["replay"], true);
    assert_eq!(
        again["upload"]["applicability"]["currently_applicable"],
        true
    );
    let changed = resign(&l, &orig, |h, _| h.upload_request_id = "up_fresh".into());
    assert_eq!(
        refused(&upload(&l, &d, &changed), "changed bytes"),
        "conflict"
    );
    assert_eq!(task_state(&l, &task), "succeeded");
}

#[test]
fn revoked_key_old_epoch_and_stale_fence_are_refused() {
    for case in ["revoked", "old_epoch", "stale_fence"] {
        let l = Loop::basic("bwrap");
        let (d, orig, task) = retained(&l);
        let expect = match case {
            "revoked" => {
                l.env
                    .run(&["enrollment", "revoke", "--registration", &l.registration])
                    .json();
                "enrollment_invalid"
            }
            "old_epoch" => {
                let k = l
                    .env
                    .run(&[
                        "keygen",
                        "--collector-dir",
                        l.env.path("c2").to_str().expect("utf8"),
                    ])
                    .json();
                l.env
                    .run(&[
                        "enroll",
                        "--repo",
                        "demo/basic",
                        "--profile",
                        "default",
                        "--step",
                        "tests",
                        "--executor",
                        "laptop-ci",
                        "--public-key",
                        k["public_key"].as_str().expect("pk"),
                    ])
                    .json();
                "enrollment_invalid"
            }
            _ => {
                l.agent(&[
                    "reconcile",
                    "--attempt",
                    d["attempt_id"].as_str().expect("a"),
                    "--fence",
                    &d["fence"].to_string(),
                    "--request-id",
                    "rec-1",
                ])
                .json();
                "stale_fence"
            }
        };
        assert_eq!(refused(&upload(&l, &d, &orig), case), expect, "{case}");
        let st = task_state(&l, &task);
        assert_ne!(st, "succeeded", "{case}");
    }
}

#[test]
fn runtime_identity_mismatch_is_a_typed_failed_record() {
    // A fixture-basis pin (test builds only) of a bwrap identity that is
    // not this host's: collect does not fall back, it records the mismatch.
    let env0 = TestEnv::new();
    let mut id: agent_task::collector::runtime::RuntimeIdentity =
        serde_json::from_value(crate::common::probe_bwrap(&env0)).expect("identity");
    id.version = "bubblewrap 0.0.0-pinned-elsewhere".into();
    id.digest = id.computed_digest().expect("digest");
    let pin = env0.path("pin.json");
    std::fs::create_dir_all(env0.tmp.path()).expect("dir");
    std::fs::write(
        &pin,
        serde_json::to_vec(&json!({"basis": "fixture", "identity": id})).expect("json"),
    )
    .expect("write");
    let l = Loop::new(
        &agent_task_root().join("fixtures/workflows/basic.json"),
        "bwrap",
        Some(&pin),
    );
    let t = l.checkpoint();
    let (dp, _) = l.claim(&t, "d.json");
    let c = l.collect(&dp).json();
    assert_eq!(c["status"], "runtime_identity_mismatch", "{c}");
    assert_eq!(c["outcome"], "failed");
    assert_eq!(c["upload"]["retained"], true);
    let q = l.qualify();
    assert_eq!(q["failures"][0]["code"], "collector_not_passed");
    assert_eq!(q["qualified"], false);
}

#[test]
fn the_collector_remembers_its_runtimes_digest_in_its_own_directory_only() {
    use sha2::Digest;
    use std::os::unix::fs::PermissionsExt;
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (dp, _) = l.claim(&t, "d1.json");
    let c = l.collect(&dp).json();
    assert_eq!(c["status"], "completed", "{c}");
    // The bubblewrap the collect ran was installed more than 2 s ago: its
    // digest is kept, owner-private, with the file's stat.
    let cache = l.collector.join("runtime-digests.json");
    let mode = std::fs::metadata(&cache)
        .expect("cache")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&cache).expect("read")).expect("json");
    assert_eq!(v["version"], 1, "{v}");
    let e = &v["entries"][0];
    let program = PathBuf::from(e["program"].as_str().expect("program"));
    let bytes = std::fs::read(&program).expect("bwrap");
    let sha = data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&bytes));
    assert_eq!(e["sha256"], sha.as_str(), "{v}");
    // The cache answers for the file while its stat matches: a digest
    // forged into it (only the collector's owner can write there) becomes
    // the observed one, and the run is refused as another runtime.
    v["entries"][0]["sha256"] = json!("0".repeat(64));
    std::fs::write(&cache, serde_json::to_vec(&v).expect("json")).expect("write");
    std::fs::write(l.workspace.join("second.txt"), "2\n").expect("write");
    let t2 = l.checkpoint();
    let (dp2, _) = l.claim(&t2, "d2.json");
    let c2 = l.collect(&dp2).json();
    assert_eq!(c2["status"], "runtime_identity_mismatch", "{c2}");
    // The same forged cache readable by others is not trusted: the file is
    // hashed again and the run goes ahead.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(l.workspace.join("third.txt"), "3\n").expect("write");
    let t3 = l.checkpoint();
    let (dp3, _) = l.claim(&t3, "d3.json");
    let c3 = l.collect(&dp3).json();
    assert_eq!(c3["status"], "completed", "{c3}");
    // A symbolic link in its place, to a private file with the forged
    // digest, is not followed either.
    let forged = l.env.path("forged-digests.json");
    std::fs::write(&forged, serde_json::to_vec(&v).expect("json")).expect("write");
    std::fs::set_permissions(&forged, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::remove_file(&cache).expect("rm");
    std::os::unix::fs::symlink(&forged, &cache).expect("symlink");
    std::fs::write(l.workspace.join("fourth.txt"), "4\n").expect("write");
    let t4 = l.checkpoint();
    let (dp4, _) = l.claim(&t4, "d4.json");
    let c4 = l.collect(&dp4).json();
    assert_eq!(c4["status"], "completed", "{c4}");
}

/// What a writer killed between creating its temp file and renaming it
/// leaves (a `.tmp-*` file) is removed by a later collect: in the
/// execution's own directory, whose every writer holds its lock, whatever
/// its age; in the collector directory, shared by every collect without a
/// lock, only once it is an hour old. Nothing else is touched: a young
/// temp file, a link, another name.
#[test]
fn a_later_collect_removes_what_a_killed_writer_left_behind() {
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let c = l.collect(&dp).json();
    assert_eq!(c["status"], "completed", "{c}");
    let exec = l
        .retained_path(&d, "reservation")
        .parent()
        .expect("execution dir")
        .to_path_buf();
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let plant = |p: PathBuf, old: bool| {
        let f = std::fs::File::create(&p).expect("create");
        if old {
            f.set_modified(two_hours_ago).expect("mtime");
        }
        p
    };
    let orphan = plant(exec.join(".tmp-aB3dE9"), false);
    let old = plant(l.collector.join(".tmp-Zx81Qp"), true);
    let young = plant(l.collector.join(".tmp-Yy02Rr"), false);
    let other = plant(l.collector.join("notes.txt"), true);
    let link = l.collector.join(".tmp-link");
    std::os::unix::fs::symlink(&other, &link).expect("symlink");
    // The same execution again: it answers with its retained outcome, and
    // holds the execution while it does.
    let again = l.collect(&dp).json();
    assert_eq!(again["resumed"], true, "{again}");
    assert!(!orphan.exists(), "the execution's orphan is removed");
    assert!(
        !old.exists(),
        "an hour-old orphan of the collector directory is removed"
    );
    assert!(
        young.exists(),
        "a young temp file may be a write in progress"
    );
    assert!(other.exists());
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "a link is never followed or removed"
    );
    assert!(l.retained_path(&d, "transfer").exists());
}

fn agent_task_root() -> PathBuf {
    crate::common::repo_root()
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A Loop whose every command logs each recipe start to `runs.log` (the
/// test-hooks seam `AGENT_TASK_TEST_RUN_LOG`: the sandbox lets nothing
/// out, so the collector counts the starts).
fn counting_loop(argv: &[&str]) -> (Loop, PathBuf) {
    let env0 = TestEnv::new();
    let wf = workflow_with(&env0, argv);
    let mut env = TestEnv::new();
    let counter = env.path("runs.log");
    env.extra_env
        .push(("AGENT_TASK_TEST_RUN_LOG".into(), counter.clone().into()));
    env.run(&["init"]).json();
    let l = Loop::setup(env, &wf, "bwrap", &[]);
    drop(env0);
    (l, counter)
}

#[test]
fn sigkill_at_each_step_never_runs_the_command_twice() {
    for step in [
        "before_reserve",
        "after_reserve",
        "after_run",
        "after_sign",
        "during_upload",
    ] {
        let (l, counter) = counting_loop(&["sh", "test.sh"]);
        let t = l.checkpoint();
        let (dp, d) = l.claim(&t, "d.json");
        let args = [
            "collect",
            "--descriptor",
            dp.to_str().expect("utf8"),
            "--collector-dir",
            l.collector.to_str().expect("utf8"),
        ];
        let out = l.agent_env(&[(CRASH, step)], &args);
        assert_eq!(out.code, -1, "{step}: killed: {out}");
        let ran = lines(&counter);
        assert_eq!(
            ran,
            usize::from(!matches!(step, "before_reserve" | "after_reserve")),
            "{step}"
        );
        let finish = if matches!(step, "after_sign" | "during_upload") {
            l.retry(&d).json()
        } else {
            l.collect(&dp).json()
        };
        let expect_runs = usize::from(step != "after_reserve");
        assert_eq!(
            lines(&counter),
            expect_runs,
            "{step}: the command ran {} times",
            lines(&counter)
        );
        // A rerun of collect after completion re-uploads the same bytes: no new run.
        let again = l.collect(&dp).json();
        assert_eq!(again["upload"]["replay"], true, "{step}: {again}");
        assert_eq!(lines(&counter), expect_runs, "{step}");
        let q = l.qualify();
        if step == "after_reserve" {
            assert_eq!(again["status"], "interrupted", "{step}");
            assert_eq!(q["failures"][0]["code"], "collector_not_passed", "{step}");
        } else {
            let _ = finish;
            assert_eq!(
                q["next"],
                json!({"operation": "collector_finalize"}),
                "{step}: {q}"
            );
            l.agent(&["finalize", "--change", &l.change_id]).json();
            assert_eq!(l.qualify()["qualified"], true, "{step}");
        }
    }
}

/// Whether a process runs with exactly this command line.
fn ps_line(args: &str) -> bool {
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .any(|l| l.trim() == args)
}

fn ps_has(marker: &str) -> bool {
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&ps.stdout).contains(marker)
}

#[test]
fn sigkill_of_collect_while_the_command_runs_never_reruns_it() {
    // A marker unique to this run, visible in the sandboxed shell's argv,
    // and a sleep whose exact argv shows the command itself is running
    // (not just the launcher or bwrap setting the sandbox up).
    let marker = format!("marker-{}", std::process::id());
    let hold = format!("sleep 3599.{}", std::process::id());
    let script = format!("{hold}; : {marker}");
    let (l, counter) = counting_loop(&["sh", "-c", &script]);
    let t = l.checkpoint();
    let (dp, _) = l.claim(&t, "d.json");
    let mut child = l
        .env
        .std_cmd()
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "collect",
            "--descriptor",
            dp.to_str().expect("utf8"),
            "--collector-dir",
            l.collector.to_str().expect("utf8"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn collect");
    // Wait (bounded) until the command runs inside the sandbox.
    for _ in 0..3000 {
        if lines(&counter) == 1 && ps_line(&hold) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(lines(&counter), 1, "the command started");
    assert!(ps_line(&hold), "the command runs");
    child.kill().expect("SIGKILL collect");
    child.wait().expect("reap");
    // The rerun finds the reservation without a record: a typed
    // interrupted record is uploaded; the command is not run again.
    let again = l.collect(&dp).json();
    assert_eq!(again["resumed"], true);
    assert_eq!(again["status"], "interrupted");
    assert_eq!(again["outcome"], "failed");
    assert_eq!(lines(&counter), 1);
    let q = l.qualify();
    assert_eq!(q["failures"][0]["code"], "collector_not_passed");
    // The sandboxed command died with its collector: nothing still runs it.
    let mut left = true;
    for _ in 0..500 {
        left = ps_has(&marker) || ps_line(&hold);
        if !left {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!left, "the command outlived its collector");
}
