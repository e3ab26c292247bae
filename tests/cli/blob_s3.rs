//! The S3-compatible blob store against a real S3 server: `s3s-fs`
//! (crates.io, SigV4 over a local directory), installed by
//! `scripts/install-interop.sh` and named by `AGENT_TASK_INTEROP_S3S`, and
//! for the core flows (data content, `cas` put/cat/fsck, the workflow
//! loop) `moto` too (PyPI, a second and independent implementation, named
//! by `AGENT_TASK_INTEROP_MOTO`). Without them the tests are skipped,
//! unless `AGENT_TASK_REQUIRE_INTEROP=1` (`scripts/test.sh`), where a
//! missing server fails.
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
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const VAR: &str = "AGENT_TASK_INTEROP_S3S";
const MOTO_VAR: &str = "AGENT_TASK_INTEROP_MOTO";
pub(crate) const ACCESS_KEY: &str = "AKIDAGENTTASKTEST";
pub(crate) const SECRET_KEY: &str = "agent-task-test-secret-key";
pub(crate) const BUCKET: &str = "agent-blobs";
const PREFIX: &str = "at/";

/// Which S3 implementation a test runs against: `s3s-fs` (Rust, over a
/// directory the test can reach behind the server's back) or `moto`
/// (Python, in memory: a second, independent implementation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Impl {
    S3s,
    Moto,
}

impl Impl {
    fn var(self) -> &'static str {
        match self {
            Impl::S3s => VAR,
            Impl::Moto => MOTO_VAR,
        }
    }
}

pub(crate) fn server_bin_of(which: Impl) -> Option<PathBuf> {
    let var = which.var();
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            assert!(
                std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
                "{var} is unset but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-interop.sh)"
            );
            eprintln!("skipped: {var} is unset (run scripts/install-interop.sh)");
            None
        }
    }
}

/// A running S3 server on loopback: `s3s-fs` over `root` (buckets are its
/// directories), or `moto` (in memory; the bucket is created by a request,
/// as agent-task never creates one).
pub(crate) struct Server {
    which: Impl,
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Server {
    pub(crate) fn start(bin: PathBuf, root: PathBuf) -> Server {
        Server::start_impl(Impl::S3s, bin, root)
    }

    pub(crate) fn start_impl(which: Impl, bin: PathBuf, root: PathBuf) -> Server {
        if which == Impl::S3s {
            std::fs::create_dir_all(root.join(BUCKET)).expect("bucket dir");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        let mut s = Server {
            which,
            bin,
            root,
            port,
            child: None,
        };
        s.up();
        if which == Impl::Moto {
            // moto checks no signature on bucket creation: a bare PUT.
            let (status, _) = s.plain("PUT", &format!("/{BUCKET}"));
            assert_eq!(status, 200, "moto created the bucket");
        }
        s
    }

    pub(crate) fn up(&mut self) {
        let mut cmd = Command::new(&self.bin);
        match self.which {
            Impl::S3s => {
                cmd.args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
                    .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                    .arg(&self.root);
            }
            Impl::Moto => {
                cmd.args(["-H", "127.0.0.1", "-p", &self.port.to_string()]);
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the S3 server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "{:?} did not start", self.which);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An unsigned request (moto answers it; s3s-fs would refuse it): the
    /// status and body.
    fn plain(&self, method: &str, path: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        write!(
            c,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .expect("send");
        let mut text = String::new();
        c.read_to_string(&mut text).expect("read");
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, text)
    }

    /// The file the server keeps an object's bytes in (`s3s-fs` only).
    fn object(&self, digest: &str) -> PathBuf {
        assert_eq!(self.which, Impl::S3s, "only s3s-fs keeps files");
        self.root
            .join(BUCKET)
            .join(format!("{PREFIX}sha256/{digest}"))
    }

    /// How many objects the bucket holds under the prefix.
    pub(crate) fn objects(&self) -> usize {
        match self.which {
            Impl::S3s => {
                match std::fs::read_dir(self.root.join(BUCKET).join(PREFIX).join("sha256")) {
                    Ok(it) => it
                        .flatten()
                        .filter(|e| e.file_name().to_string_lossy().len() == 64)
                        .count(),
                    Err(_) => 0,
                }
            }
            Impl::Moto => {
                let (status, body) = self.plain(
                    "GET",
                    &format!("/{BUCKET}?list-type=2&prefix={PREFIX}sha256/&max-keys=1000"),
                );
                assert_eq!(status, 200, "{body}");
                body.matches("<Key>").count()
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// A `blob-store.json` for the server's bucket (credentials written
/// beside it, in `env`'s temp directory).
pub(crate) fn config_text(env: &TestEnv, server: &Server, bucket: &str, secret: &str) -> String {
    let cred = env.path("s3-credentials.json");
    write_private(
        &cred,
        &json!({"access_key_id": ACCESS_KEY, "secret_access_key": secret}).to_string(),
    );
    json!({
        "kind": "s3",
        "endpoint": server.endpoint(),
        "region": "us-east-1",
        "bucket": bucket,
        "prefix": PREFIX,
        "path_style": true,
        "credentials_file": cred.to_str().expect("utf8"),
        "timeout_ms": 5000,
    })
    .to_string()
}

/// Points `env`'s (existing) data directory at the server's bucket.
fn configure(env: &TestEnv, server: &Server, bucket: &str, secret: &str) {
    write_private(
        &env.data_dir.join("blob-store.json"),
        &config_text(env, server, bucket, secret),
    );
}

/// Objects in the data directory's own `cas/` (none while a bucket is used).
pub(crate) fn local_objects(env: &TestEnv) -> usize {
    let mut n = 0;
    if let Ok(fans) = std::fs::read_dir(env.data_dir.join("cas/sha256")) {
        for f in fans.flatten() {
            n += std::fs::read_dir(f.path()).map(|d| d.count()).unwrap_or(0);
        }
    }
    n
}

fn setup() -> Option<(TestEnv, Server)> {
    setup_on(Impl::S3s)
}

fn setup_on(which: Impl) -> Option<(TestEnv, Server)> {
    let bin = server_bin_of(which)?;
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start_impl(which, bin, env.path("s3root"));
    configure(&env, &server, BUCKET, SECRET_KEY);
    Some((env, server))
}

/// A text over the inline limit (16 KiB): its bytes go to the blob store.
pub(crate) fn big(tag: &str) -> String {
    format!("{tag} ").repeat(40 * 1024 / (tag.len() + 1))
}

fn digest_of(record: &Value) -> String {
    record["content"]["sha256"]
        .as_str()
        .expect("sha256")
        .to_owned()
}

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
