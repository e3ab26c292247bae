//! A checkpoint stores its snapshot's blobs before it takes the
//! data-directory lock: paused in its upload (the test hook
//! `AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO`) with the bucket's server stopped,
//! the lock is free (another command that needs it runs and returns), and
//! the checkpoint then fails with `blob_store_unavailable`, nothing
//! committed; with the server back the same checkpoint succeeds.

use crate::common::TestEnv;
use crate::common::collect_flow::{Loop, s};
use crate::common::s3::{
    BUCKET, Impl, SECRET_KEY, Server, config_text, server_bin_of, write_private,
};
use serde_json::json;
use std::io::{Read, Write};

fn versions(env: &TestEnv) -> i64 {
    let c = rusqlite::Connection::open(env.data_dir.join("authority.sqlite")).expect("db");
    c.query_row("SELECT count(*) FROM change_versions", [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_checkpoint_uploads_before_the_lock_and_an_unreachable_bucket_commits_nothing() {
    let Some(bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::init();
    let mut server = Server::start(bin, env.path("s3root"));
    write_private(
        &env.data_dir.join("blob-store.json"),
        &config_text(&env, &server.endpoint(), BUCKET, SECRET_KEY, &json!({})),
    );
    let l = Loop::setup(
        env,
        &crate::common::repo_root().join("fixtures/workflows/basic.json"),
        "bwrap",
        &[],
    );
    l.set_add("+");
    let before = versions(&l.env);
    let objects = server.objects();
    server.kill();

    let fifo = l.env.path("upload.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let mut c = l.env.std_cmd();
    c.env("AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO", &fifo)
        .arg("--token-file")
        .arg(&l.token)
        .args(["checkpoint", "--workspace", s(&l.workspace)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("checkpoint");
    let mut said = String::new();
    std::fs::File::open(&fifo)
        .expect("open fifo")
        .read_to_string(&mut said)
        .expect("read fifo");
    assert_eq!(said, "uploading\n");
    // Paused in its upload: the lock is free for another command.
    let free = std::process::Command::new("flock")
        .args(["-n", "-E", "99"])
        .arg(l.env.data_dir.join("lock"))
        .arg("true")
        .status()
        .expect("flock");
    assert_eq!(free.code(), Some(0), "the data-directory lock is free");
    l.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "meanwhile",
            "--out",
            s(&l.env.path("bob.token")),
            "--lock-timeout-ms",
            "1000",
        ])
        .json();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("open fifo")
        .write_all(b"go")
        .expect("release");
    let out = child.wait_with_output().expect("checkpoint ends");
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    let e: serde_json::Value =
        serde_json::from_slice(&out.stderr).expect("the error is JSON on stderr");
    assert_eq!(e["error"], "blob_store_unavailable", "{e}");
    assert_eq!(versions(&l.env), before, "nothing committed");

    server.up();
    assert_eq!(server.objects(), objects, "nothing half-stored");
    l.checkpoint();
    assert_eq!(versions(&l.env), before + 1);
    assert!(
        server.objects() > objects,
        "the new snapshot is in the bucket"
    );
}

/// A remote checkpoint's commit with a bucket: the staged blobs are
/// uploaded before the lock (paused there, `serve` leaves the lock to
/// another command), and nothing is left staged or in `cas/`.
#[test]
fn a_remote_checkpoint_uploads_its_staged_blobs_to_the_bucket() {
    use crate::common::s3::local_objects;
    use crate::remote_checkpoint::{remote, serve, staged_files, workspace};
    let Some(bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::init();
    let server = Server::start(bin, env.path("s3root"));
    write_private(
        &env.data_dir.join("blob-store.json"),
        &config_text(&env, &server.endpoint(), BUCKET, SECRET_KEY, &json!({})),
    );
    let l = Loop::setup(
        env,
        &crate::common::repo_root().join("fixtures/workflows/basic.json"),
        "bwrap",
        &[],
    );
    let fifo = l.env.path("upload.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let srv = serve(&l, &[], &[("AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO", s(&fifo))]);
    let a = srv.addr.as_str().to_owned();
    let ch = remote(&l, &a, &["change", "open", "--profile", "default"]).json();
    let id = ch["change_id"].as_str().expect("id").to_owned();
    let ws = workspace(&l, "remote-ws", "+");
    let objects = server.objects();
    let checkpoint = {
        let (l, a, id, ws) = (&l, a.clone(), id.clone(), ws.clone());
        std::thread::scope(|scope| {
            let t = scope.spawn(move || {
                remote(
                    l,
                    &a,
                    &["checkpoint", "--change", &id, "--workspace", s(&ws)],
                )
            });
            // The commit pauses before its uploads: the lock is free.
            let mut said = String::new();
            std::fs::File::open(&fifo)
                .expect("open fifo")
                .read_to_string(&mut said)
                .expect("read fifo");
            assert_eq!(said, "uploading\n");
            l.env
                .run(&[
                    "token",
                    "issue",
                    "--owner",
                    "bob",
                    "--agent",
                    "meanwhile",
                    "--out",
                    s(&l.env.path("bob.token")),
                    "--lock-timeout-ms",
                    "1000",
                ])
                .json();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("open fifo")
                .write_all(b"go")
                .expect("release");
            t.join().expect("checkpoint thread")
        })
    };
    let cp = checkpoint.json();
    assert_eq!(cp["version"], 1, "{cp}");
    assert_eq!(cp["upload"]["stored_blobs"], 1, "{cp}");
    assert_eq!(
        server.objects(),
        objects + 2,
        "the new blob and the manifest are in the bucket"
    );
    assert_eq!(staged_files(&l), 0, "nothing is left staged");
    assert_eq!(local_objects(&l.env), 0, "nothing in the local cas/");
    let fsck = l.env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], json!([]));
}
