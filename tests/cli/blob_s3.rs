//! The S3-compatible blob store against a real S3 server: `s3s-fs`
//! (crates.io, SigV4 over a local directory), installed by
//! `scripts/install-interop.sh` and named by `AGENT_TASK_INTEROP_S3S`, and
//! for the core flows (data content, `cas` put/cat/fsck, the workflow
//! loop) `moto` too (PyPI, a second and independent implementation, named
//! by `AGENT_TASK_INTEROP_MOTO`; `common::s3`). Without them the tests are
//! skipped, unless `AGENT_TASK_REQUIRE_INTEROP=1` (`scripts/test.sh`),
//! where a missing server fails.
//!
//! Data content (through the CLI and the data node's HTTP route) and a
//! whole workflow loop (checkpoint, collect, land) keep
//! their blobs in the bucket; the faults: the server killed (unavailable,
//! nothing committed, every acknowledged blob readable after it returns),
//! wrong credentials, a missing bucket, an object replaced or truncated
//! behind our back (integrity errors), a credentials file others can read.

use crate::common::TestEnv;
use crate::common::collect_flow::Loop;
use crate::common::data_core::{all_changes, collect, collect_run};
use crate::common::data_support::{TOKEN, req, serve};
use crate::common::s3::{
    BUCKET, Impl, SECRET_KEY, Server, big, configure, digest_of, local_objects, server_bin_of,
    setup, setup_on,
};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[test]
fn data_content_lives_in_the_bucket_and_reads_back_verified() {
    let Some((env, server)) = setup() else {
        return;
    };
    let (id, text, digest, put_digest) = data_and_cas_through_the_bucket(&env, &server);
    tampered_objects_are_refused(&env, &server, &id, &text, &digest, &put_digest);
}

#[test]
fn data_content_and_cas_objects_live_in_a_moto_bucket_too() {
    let Some((env, server)) = setup_on(Impl::Moto) else {
        return;
    };
    data_and_cas_through_the_bucket(&env, &server);
}

/// Data content and `cas put/cat/fsck` through the bucket: the record's id,
/// its text and digest, and the `cas put` object's digest.
fn data_and_cas_through_the_bucket(
    env: &TestEnv,
    server: &Server,
) -> (String, String, String, String) {
    assert_eq!(env.run(&["info"]).json()["blob_store"], "s3");
    let text = big("bucket-borne");
    let out = collect(env, "default", &json!({"text": text}));
    let record = out["records"][0].clone();
    let id = record["id"].as_str().expect("id").to_owned();
    let digest = digest_of(&record);
    assert!(server.objects() == 1, "the object is in the bucket");
    assert_eq!(local_objects(env), 0, "nothing in the local cas/");
    let got = env.run(&["data", "get", &id]).json();
    assert_eq!(got["content"]["data"], text.as_str());
    let out_file = env.path("content.bin");
    env.run(&[
        "data",
        "get",
        &id,
        "--content-out",
        out_file.to_str().expect("p"),
    ])
    .json();
    assert_eq!(std::fs::read(&out_file).expect("read"), text.as_bytes());

    // The cas commands go through the bucket too.
    let src = env.path("blob");
    std::fs::write(&src, b"put through the seam").expect("write");
    let put = env.run(&["cas", "put", src.to_str().expect("p")]).json();
    let put_digest = put["digest"].as_str().expect("digest").to_owned();
    assert_eq!(put["created"], true);
    assert_eq!(
        env.run(&["cas", "put", src.to_str().expect("p")]).json()["created"],
        false
    );
    let cat = env.path("cat.bin");
    env.run(&["cas", "cat", &put_digest, "--out", cat.to_str().expect("p")])
        .json();
    assert_eq!(std::fs::read(&cat).expect("read"), b"put through the seam");
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(
        (fsck["checked"].clone(), fsck["corrupt"].clone()),
        (json!(2), json!([]))
    );
    assert_eq!(server.objects(), 2);
    (id, text, digest, put_digest)
}

/// Objects changed behind agent-task's back (in `s3s-fs`'s directory).
fn tampered_objects_are_refused(
    env: &TestEnv,
    server: &Server,
    id: &str,
    text: &str,
    digest: &str,
    put_digest: &str,
) {
    let cat = env.path("cat.bin");
    assert!(server.object(digest).is_file(), "the object is a file");
    // Replaced behind our back (same length, other bytes), then truncated,
    // then removed: typed refusals, never the wrong bytes.
    let obj = server.object(digest);
    let mut wrong = text.as_bytes().to_vec();
    wrong[0] ^= 1;
    std::fs::write(&obj, &wrong).expect("replace");
    env.run(&["data", "get", id])
        .error("blob_integrity_error", 65);
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], json!([digest]));
    std::fs::write(&obj, &text.as_bytes()[..100]).expect("truncate");
    env.run(&["data", "get", id])
        .error("blob_integrity_error", 65);
    let _ = std::fs::remove_file(env.path("content2.bin"));
    env.run(&[
        "data",
        "get",
        id,
        "--content-out",
        env.path("content2.bin").to_str().expect("p"),
    ])
    .error("blob_integrity_error", 65);
    std::fs::write(&cat, b"").expect("reset");
    std::fs::write(server.object(put_digest), b"put through the SEAM").expect("replace");
    env.run(&["cas", "cat", put_digest, "--out", cat.to_str().expect("p")])
        .error("integrity_error", 65);
    std::fs::remove_file(&obj).expect("remove");
    env.run(&["data", "get", id]).error("blob_not_found", 66);
}

#[test]
fn a_workflow_loop_keeps_its_snapshots_in_the_bucket() {
    workflow_loop_on(Impl::S3s);
}

#[test]
fn a_workflow_loop_keeps_its_snapshots_in_a_moto_bucket_too() {
    workflow_loop_on(Impl::Moto);
}

fn workflow_loop_on(which: Impl) {
    let Some(bin) = server_bin_of(which) else {
        return;
    };
    let env = TestEnv::init();
    let server = Server::start_impl(which, bin, env.path("s3root"));
    configure(&env, &server, BUCKET, SECRET_KEY);
    let l = Loop::setup(
        env,
        &crate::common::repo_root().join("fixtures/workflows/basic.json"),
        "bwrap",
        &[],
    );
    l.set_add("+");
    let task = l.checkpoint();
    let (d, _) = l.claim(&task, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
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
    assert!(
        server.objects() > 0,
        "snapshots and transfers in the bucket"
    );
    assert_eq!(local_objects(&l.env), 0, "nothing in the local cas/");
    let fsck = l.env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], json!([]));
    assert_eq!(fsck["checked"], json!(server.objects()));
}

#[test]
fn a_killed_server_commits_nothing_and_every_acknowledged_blob_reads_after_it_returns() {
    let Some((env, mut server)) = setup() else {
        return;
    };
    let kept = collect(&env, "default", &json!({"text": big("acknowledged")}));
    let kept_id = kept["records"][0]["id"].as_str().expect("id").to_owned();
    let events = all_changes(&env).len();
    let served = serve(&env, Some(TOKEN));
    let get = |addr: &str, path: &str| req(addr, "GET", path, Some(TOKEN), None);
    let route = format!("/v1/data/records/{kept_id}");
    get(&served.addr, &route).ok();

    server.kill();
    // The data route says 503 with the code, and the node keeps serving.
    get(&served.addr, &route).error(503, "blob_store_unavailable");
    let e = collect_run(&env, "default", &json!({"text": big("while-down")}))
        .error("blob_store_unavailable", 69);
    assert!(e["message"].is_string());
    assert_eq!(all_changes(&env).len(), events, "nothing committed");
    env.run(&["data", "get", &kept_id])
        .error("blob_store_unavailable", 69);
    env.run(&["cas", "fsck"])
        .error("blob_store_unavailable", 69);

    server.up();
    get(&served.addr, &route).ok();
    drop(served);
    let got = env.run(&["data", "get", &kept_id]).json();
    assert_eq!(got["content"]["data"], big("acknowledged").as_str());
    collect(&env, "default", &json!({"text": big("while-down")}));
    assert_eq!(server.objects(), 2);
}

#[test]
fn wrong_credentials_a_missing_bucket_and_open_credentials_are_refused() {
    let Some((env, server)) = setup() else {
        return;
    };
    configure(&env, &server, BUCKET, "not-the-secret");
    let e = collect_run(&env, "default", &json!({"text": big("refused")}))
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["status"], 403, "{e}");
    assert!(
        !e.to_string().contains("not-the-secret"),
        "the secret is never shown"
    );
    assert!(all_changes(&env).is_empty(), "nothing committed");

    configure(&env, &server, "no-such-bucket", SECRET_KEY);
    let e = collect_run(&env, "default", &json!({"text": big("refused")}))
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["s3_code"], "NoSuchBucket", "{e}");
    assert!(all_changes(&env).is_empty(), "nothing committed");

    configure(&env, &server, BUCKET, SECRET_KEY);
    std::fs::set_permissions(
        env.path("s3-credentials.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    env.run(&["info"]).error("insecure_permissions", 77);
    collect_run(&env, "default", &json!({"text": big("refused")}))
        .error("insecure_permissions", 77);
    assert_eq!(server.objects(), 0);
}
