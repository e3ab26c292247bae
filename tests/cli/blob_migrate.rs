//! `cas migrate` against a real S3 server (`s3s-fs`, `common::s3`): a
//! data directory with data content and a workflow's snapshots moved to
//! the bucket and back with everything readable at each step, an
//! unreachable bucket that switches nothing, and migrations killed
//! mid-way (the test hook `AGENT_TASK_TEST_CRASH_AT`) then resumed.

use crate::common::collect_flow::Loop;
use crate::common::data_core::collect;
use crate::common::s3::{
    BUCKET, Impl, SECRET_KEY, Server, big, config_text, local_objects, server_bin_of, write_private,
};
use crate::common::{Output, TestEnv, run_cmd};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn migrate(env: &TestEnv, args: &[&str]) -> Output {
    let mut all = vec!["cas", "migrate"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn migrate_killed_at(env: &TestEnv, step: &str, args: &[&str]) -> Output {
    let mut c = env.cmd();
    c.args(["cas", "migrate"])
        .args(args)
        .env("AGENT_TASK_TEST_CRASH_AT", step);
    run_cmd(&mut c)
}

/// The bucket's configuration as a file outside the data directory.
fn bucket_config(env: &TestEnv, server: &Server, bucket: &str) -> PathBuf {
    let p = env.path("bucket.json");
    write_private(
        &p,
        &config_text(env, &server.endpoint(), bucket, SECRET_KEY, &json!({})),
    );
    p
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

fn counts(v: &Value) -> (u64, u64, u64, bool) {
    (
        v["copied"].as_u64().expect("copied"),
        v["skipped"].as_u64().expect("skipped"),
        v["deleted"].as_u64().expect("deleted"),
        v["switched"].as_bool().expect("switched"),
    )
}

fn fsck_clean(env: &TestEnv, objects: usize) {
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], json!([]), "{fsck}");
    assert_eq!(fsck["checked"], json!(objects), "{fsck}");
}

#[test]
fn a_data_directory_moves_to_the_bucket_and_back_and_everything_reads_at_each_step() {
    let Some(bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::init();
    env.run(&["data", "init"]).json();
    let server = Server::start(bin, env.path("s3root"));
    let l = Loop::setup(
        env,
        &crate::common::repo_root().join("fixtures/workflows/basic.json"),
        "bwrap",
        &[],
    );
    l.set_add("+");
    // A checkpoint's snapshot and a data record's content, in the local CAS.
    let task = l.checkpoint();
    let text = big("migrating");
    let rec = collect(&l.env, "default", &json!({"text": text}));
    let id = rec["records"][0]["id"].as_str().expect("id").to_owned();
    let n = local_objects(&l.env);
    assert!(n >= 3, "snapshot objects and the record's content: {n}");
    assert_eq!(server.objects(), 0);

    // Local → s3.
    let config = bucket_config(&l.env, &server, BUCKET);
    let out = migrate(&l.env, &["--to", "s3", "--config", s(&config)]).json();
    assert_eq!(out["to"], "s3");
    assert_eq!(counts(&out), (n as u64, 0, n as u64, true), "{out}");
    assert!(out["bytes"].as_u64().expect("bytes") > text.len() as u64);
    assert_eq!(local_objects(&l.env), 0, "the local store is drained");
    assert_eq!(server.objects(), n);
    assert_eq!(l.env.run(&["info"]).json()["blob_store"], "s3");
    fsck_clean(&l.env, n);
    let got = l.env.run(&["data", "get", &id]).json();
    assert_eq!(got["content"]["data"], text.as_str());
    // The collector checks the snapshot out of the bucket now.
    let (d, _) = l.claim(&task, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    // Run again: nothing left to do.
    let again = migrate(&l.env, &["--to", "s3", "--config", s(&config)]).json();
    assert_eq!(counts(&again), (0, 0, 0, false), "{again}");

    // s3 → local: the transfers the collect retained come along.
    let m = server.objects();
    assert!(m > n, "the collect added objects in the bucket");
    let back = migrate(&l.env, &["--to", "local"]).json();
    assert_eq!(back["to"], "local");
    assert_eq!(counts(&back), (m as u64, 0, m as u64, true), "{back}");
    assert_eq!(server.objects(), 0, "the bucket is drained");
    assert_eq!(local_objects(&l.env), m);
    assert!(!l.env.data_dir.join("blob-store.json").exists());
    assert!(!l.env.data_dir.join("blob-store.draining.json").exists());
    assert_eq!(l.env.run(&["info"]).json()["blob_store"], "local");
    fsck_clean(&l.env, m);
    let got = l.env.run(&["data", "get", &id]).json();
    assert_eq!(got["content"]["data"], text.as_str());
    // The rest of the loop reads the snapshot from the local store.
    l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(l.qualify()["qualified"], true);
    l.env
        .run(&[
            "land",
            "--repo",
            "demo/basic",
            "--change",
            &l.change_id,
            "--update-worktree",
        ])
        .json();
    let again = migrate(&l.env, &["--to", "local"]).json();
    assert_eq!(counts(&again), (0, 0, 0, false), "{again}");
}

/// `n` records (`tag`-`i`) whose content is in the blob store.
fn records(env: &TestEnv, tag: &str, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let text = big(&format!("{tag}-{i}"));
            let rec = collect(env, "default", &json!({"text": text}));
            (
                rec["records"][0]["id"].as_str().expect("id").to_owned(),
                text,
            )
        })
        .collect()
}

fn all_read(env: &TestEnv, recs: &[(String, String)]) {
    for (id, text) in recs {
        let got = env.run(&["data", "get", id]).json();
        assert_eq!(got["content"]["data"], text.as_str(), "{id}");
    }
}

#[test]
fn a_migration_killed_mid_way_is_resumed_exactly_once_and_every_blob_reads_meanwhile() {
    let Some(bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start(bin, env.path("s3root"));
    let recs = records(&env, "record", 5);
    assert_eq!(local_objects(&env), 5);
    let config = bucket_config(&env, &server, BUCKET);
    let to_s3 = ["--to", "s3", "--config", s(&config)];

    // Killed after two copies: nothing switched, the local store whole.
    let killed = migrate_killed_at(&env, "migrate_copied_2", &to_s3);
    assert_ne!(killed.code, 0, "{killed}");
    assert_eq!(server.objects(), 2);
    assert_eq!(env.run(&["info"]).json()["blob_store"], "local");
    assert_eq!(local_objects(&env), 5);
    all_read(&env, &recs);
    // A record written meanwhile goes to the local store and comes along.
    let mut recs = recs;
    recs.extend(records(&env, "meanwhile", 1));
    let out = migrate(&env, &to_s3).json();
    assert_eq!(counts(&out), (4, 2, 6, true), "{out}");
    assert_eq!((server.objects(), local_objects(&env)), (6, 0));
    all_read(&env, &recs);

    // Killed after the switch, mid-drain of the bucket: every blob reads
    // from the local store, and the bucket's coordinates wait aside.
    let killed = migrate_killed_at(&env, "migrate_deleted_2", &["--to", "local"]);
    assert_ne!(killed.code, 0, "{killed}");
    assert_eq!(env.run(&["info"]).json()["blob_store"], "local");
    assert!(env.data_dir.join("blob-store.draining.json").exists());
    assert_eq!((server.objects(), local_objects(&env)), (4, 6));
    all_read(&env, &recs);
    // Another migration to a bucket waits for this one to finish.
    migrate(&env, &to_s3).error("conflict", 65);
    let out = migrate(&env, &["--to", "local"]).json();
    assert_eq!(counts(&out), (0, 0, 4, false), "{out}");
    assert_eq!((server.objects(), local_objects(&env)), (0, 6));
    assert!(!env.data_dir.join("blob-store.draining.json").exists());
    all_read(&env, &recs);
    fsck_clean(&env, 6);

    // Killed right after the switch to the bucket: the next run only drains.
    let killed = migrate_killed_at(&env, "migrate_switched", &to_s3);
    assert_ne!(killed.code, 0, "{killed}");
    assert_eq!(env.run(&["info"]).json()["blob_store"], "s3");
    assert_eq!((server.objects(), local_objects(&env)), (6, 6));
    all_read(&env, &recs);
    let out = migrate(&env, &to_s3).json();
    assert_eq!(counts(&out), (0, 0, 6, false), "{out}");
    assert_eq!((server.objects(), local_objects(&env)), (6, 0));
    all_read(&env, &recs);
}

#[test]
fn an_unreachable_or_missing_bucket_switches_nothing() {
    let Some(bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let mut server = Server::start(bin, env.path("s3root"));
    let recs = records(&env, "record", 2);
    let missing = bucket_config(&env, &server, "no-such-bucket");
    let e =
        migrate(&env, &["--to", "s3", "--config", s(&missing)]).error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["s3_code"], "NoSuchBucket", "{e}");
    let config = bucket_config(&env, &server, BUCKET);
    server.kill();
    migrate(&env, &["--to", "s3", "--config", s(&config)]).error("blob_store_unavailable", 69);
    assert!(!env.data_dir.join("blob-store.json").exists());
    assert_eq!(env.run(&["info"]).json()["blob_store"], "local");
    assert_eq!(local_objects(&env), 2);
    all_read(&env, &recs);
    // `--to s3` needs its configuration.
    migrate(&env, &["--to", "s3"]).error("usage", 64);
}
