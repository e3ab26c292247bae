//! A real S3 server for the blob-store tests: `s3s-fs` (crates.io, SigV4
//! over a local directory), installed by `scripts/install-interop.sh` and
//! named by `AGENT_TASK_INTEROP_S3S`, or for the core flows `moto` (PyPI,
//! a second and independent implementation, in memory), named by
//! `AGENT_TASK_INTEROP_MOTO`. Without them the tests are skipped, unless
//! `AGENT_TASK_REQUIRE_INTEROP=1` (`scripts/test.sh`), where a missing
//! server fails.

use crate::common::TestEnv;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const VAR: &str = "AGENT_TASK_INTEROP_S3S";
const MOTO_VAR: &str = "AGENT_TASK_INTEROP_MOTO";
pub const ACCESS_KEY: &str = "AKIDAGENTTASKTEST";
pub const SECRET_KEY: &str = "agent-task-test-secret-key";
pub const BUCKET: &str = "agent-blobs";
pub const PREFIX: &str = "at/";

/// Which S3 implementation a test runs against: `s3s-fs` (Rust, over a
/// directory the test can reach behind the server's back) or `moto`
/// (Python, in memory, checking no signature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    S3s,
    Moto,
}

pub fn server_bin() -> Option<PathBuf> {
    server_bin_of(Impl::S3s)
}

pub fn server_bin_of(which: Impl) -> Option<PathBuf> {
    let var = match which {
        Impl::S3s => VAR,
        Impl::Moto => MOTO_VAR,
    };
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
pub struct Server {
    which: Impl,
    bin: PathBuf,
    pub root: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

impl Server {
    pub fn start(bin: PathBuf, root: PathBuf) -> Server {
        Server::start_impl(Impl::S3s, bin, root)
    }

    pub fn start_impl(which: Impl, bin: PathBuf, root: PathBuf) -> Server {
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

    pub fn up(&mut self) {
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

    /// An unsigned request (moto answers it; s3s-fs would refuse it): the
    /// status and the whole answer.
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

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The file the server keeps an object's bytes in (`s3s-fs` only).
    pub fn object(&self, digest: &str) -> PathBuf {
        assert_eq!(self.which, Impl::S3s, "only s3s-fs keeps files");
        self.root
            .join(BUCKET)
            .join(format!("{PREFIX}sha256/{digest}"))
    }

    /// How many objects the bucket holds under the prefix.
    pub fn objects(&self) -> usize {
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

    /// Files the server keeps beside the objects whose name contains
    /// `part` (`.upload_id-` for the parts of an unfinished multipart
    /// upload, `.internal.json` for an object's checksum).
    pub fn side_files(&self, part: &str) -> Vec<PathBuf> {
        std::fs::read_dir(&self.root)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.to_string_lossy().contains(part))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// Points `env`'s (existing) data directory at the server's bucket.
pub fn configure(env: &TestEnv, server: &Server, bucket: &str, secret: &str) {
    configure_at(env, &server.endpoint(), bucket, secret, &json!({}));
}

/// Points `env`'s data directory at `endpoint`, with `extra` fields of
/// `blob-store.json` (a `null` removes a field).
pub fn configure_at(env: &TestEnv, endpoint: &str, bucket: &str, secret: &str, extra: &Value) {
    write_private(
        &env.data_dir.join("blob-store.json"),
        &config_text(env, endpoint, bucket, secret, extra),
    );
}

/// A `blob-store.json` for `endpoint`'s bucket (see [`configure_at`]);
/// the credentials file is written beside it, in `env`'s temp directory.
pub fn config_text(
    env: &TestEnv,
    endpoint: &str,
    bucket: &str,
    secret: &str,
    extra: &Value,
) -> String {
    let cred = env.path("s3-credentials.json");
    write_private(
        &cred,
        &json!({"access_key_id": ACCESS_KEY, "secret_access_key": secret}).to_string(),
    );
    let mut conf = json!({
        "kind": "s3",
        "endpoint": endpoint,
        "region": "us-east-1",
        "bucket": bucket,
        "prefix": PREFIX,
        "path_style": true,
        "credentials_file": cred.to_str().expect("utf8"),
        "timeout_ms": 5000,
    });
    for (k, v) in extra.as_object().expect("object") {
        if v.is_null() {
            conf.as_object_mut().expect("object").remove(k);
        } else {
            conf[k] = v.clone();
        }
    }
    conf.to_string()
}

/// Objects in the data directory's own `cas/` (none while a bucket is used).
pub fn local_objects(env: &TestEnv) -> usize {
    let mut n = 0;
    if let Ok(fans) = std::fs::read_dir(env.data_dir.join("cas/sha256")) {
        for f in fans.flatten() {
            n += std::fs::read_dir(f.path()).map(|d| d.count()).unwrap_or(0);
        }
    }
    n
}

/// A data directory (`data init`) whose blobs live in a fresh `s3s-fs`.
pub fn setup() -> Option<(TestEnv, Server)> {
    setup_on(Impl::S3s)
}

/// [`setup`] on the given implementation.
pub fn setup_on(which: Impl) -> Option<(TestEnv, Server)> {
    let bin = server_bin_of(which)?;
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start_impl(which, bin, env.path("s3root"));
    configure(&env, &server, BUCKET, SECRET_KEY);
    Some((env, server))
}

/// A text over the inline limit (16 KiB): its bytes go to the blob store.
pub fn big(tag: &str) -> String {
    format!("{tag} ").repeat(40 * 1024 / (tag.len() + 1))
}

pub fn digest_of(record: &Value) -> String {
    record["content"]["sha256"]
        .as_str()
        .expect("sha256")
        .to_owned()
}
