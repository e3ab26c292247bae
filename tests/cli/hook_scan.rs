//! The Stop hook's workspace check (stat-only against the checkpoint's
//! stat cache, re-reading racily clean files) through the real binary:
//! every kind of uncheckpointed edit blocks, undoing it passes again,
//! ignored files do not count, and the stores stay byte for byte unchanged.

use crate::common::collect_flow::Loop;
use crate::common::hook_stop::{blocked, hook, passed, payload};
use crate::common::snapshot_files;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

fn verdict_is_dirty(l: &Loop) {
    let d = blocked(
        "claude",
        &hook(l, "claude", &payload("claude", false, &l.workspace), &[]),
    );
    assert_eq!(
        d["failures"],
        json!([{"code": "workspace_not_checkpointed"}]),
        "{d}"
    );
    assert_eq!(d["next"], json!({"operation": "checkpoint"}));
}

fn passes(l: &Loop) {
    for agent in ["claude", "codex"] {
        passed(
            agent,
            &hook(l, agent, &payload(agent, false, &l.workspace), &[]),
        );
    }
}

#[test]
fn hook_scan_blocks_every_uncheckpointed_edit_and_passes_when_undone() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    std::fs::write(l.workspace.join("data.txt"), "0123456789\n").expect("w");
    // Old enough that the hook trusts every stat (no file read when clean).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let task = l.checkpoint();
    let (d1, _) = l.claim(&task, "d1.json");
    assert_eq!(l.collect(&d1).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let before = snapshot_files(&l.env.data_dir);
    passes(&l);

    // Same size, same inode: only the bytes (and times) differ.
    let data = l.workspace.join("data.txt");
    std::fs::write(&data, "9876543210\n").expect("w");
    verdict_is_dirty(&l);
    std::fs::write(&data, "0123456789\n").expect("w");
    passes(&l);

    // A new file.
    std::fs::write(l.workspace.join("new.txt"), "new\n").expect("w");
    verdict_is_dirty(&l);
    std::fs::remove_file(l.workspace.join("new.txt")).expect("rm");
    passes(&l);

    // A deleted file.
    std::fs::remove_file(&data).expect("rm");
    verdict_is_dirty(&l);
    std::fs::write(&data, "0123456789\n").expect("w");
    passes(&l);

    // The executable bit.
    let perm = |m| std::fs::set_permissions(&data, std::fs::Permissions::from_mode(m));
    perm(0o755).expect("chmod");
    verdict_is_dirty(&l);
    perm(0o644).expect("chmod");
    passes(&l);

    // A file replaced by a symlink to the same bytes' path.
    std::fs::remove_file(&data).expect("rm");
    std::os::unix::fs::symlink("add.sh", &data).expect("symlink");
    verdict_is_dirty(&l);
    std::fs::remove_file(&data).expect("rm");
    std::fs::write(&data, "0123456789\n").expect("w");
    passes(&l);

    // Ignored files (the fixture's .gitignore: build/ and *.log) and
    // .git/ are not in the snapshot: changing them does not block.
    std::fs::create_dir_all(l.workspace.join("build")).expect("mkdir");
    std::fs::write(l.workspace.join("build/out.bin"), "x").expect("w");
    std::fs::write(l.workspace.join("run.log"), "log\n").expect("w");
    std::fs::create_dir_all(l.workspace.join(".git")).expect("mkdir");
    std::fs::write(l.workspace.join(".git/HEAD"), "ref: x\n").expect("w");
    passes(&l);
    std::fs::write(l.workspace.join("run.log"), "log 2\n").expect("w");
    passes(&l);

    assert_eq!(
        snapshot_files(&l.env.data_dir),
        before,
        "the hook wrote nothing to the stores"
    );
}

fn checkpoint(l: &Loop) -> serde_json::Value {
    l.agent(&[
        "checkpoint",
        "--workspace",
        l.workspace.to_str().expect("utf8"),
    ])
    .json()
}

#[test]
fn hook_scan_trusts_old_stats_and_rereads_racily_clean_files() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let data = l.workspace.join("data.txt");
    std::fs::write(&data, "aaaaaaaa\n").expect("w");
    // Every file older than the racy margin when the checkpoint begins.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let cp1 = checkpoint(&l);
    assert!(cp1["hashed"].as_u64().expect("hashed") > 0);
    // Unchanged and old: every stat is trusted, nothing is read.
    let cp2 = checkpoint(&l);
    assert_eq!(cp2["hashed"], 0, "{cp2}");
    assert_eq!(cp2["revision"], cp1["revision"]);
    let hook_next = |l: &Loop| {
        blocked(
            "claude",
            &hook(l, "claude", &payload("claude", false, &l.workspace), &[]),
        )
    };
    // Clean: the verdict is about qualification, not the workspace.
    assert_eq!(hook_next(&l)["next"]["operation"], "collector_claim");
    // Same size, same inode, written right after the checkpoint.
    std::fs::write(&data, "bbbbbbbb\n").expect("w");
    verdict_is_dirty(&l);

    // Written just before a checkpoint: racily clean from then on, so
    // every later check reads it again, and sees a same-size rewrite made
    // at once (likely within the same timestamp tick as the checkpoint's
    // stat).
    let cp3 = checkpoint(&l);
    assert_eq!(cp3["hashed"], 1, "{cp3}");
    assert_eq!(hook_next(&l)["next"]["operation"], "collector_claim");
    std::fs::write(&data, "cccccccc\n").expect("w");
    let before = snapshot_files(&l.env.data_dir);
    verdict_is_dirty(&l);
    assert_eq!(
        snapshot_files(&l.env.data_dir),
        before,
        "the hook never writes the stat cache"
    );
    let cp4 = checkpoint(&l);
    assert_ne!(cp4["revision"], cp3["revision"]);
    assert!(cp4["hashed"].as_u64().expect("hashed") >= 1);
}
