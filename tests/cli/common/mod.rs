//! Shared test harness: a temp data directory and the real binary.

#![allow(dead_code)]

// Support shared by the test modules: a test module imports only `common`
// (and what is below it), never another test module.
pub mod attest;
pub mod collect_faults;
pub mod collect_flow;
pub mod data_core;
pub mod data_support;
pub mod doctor_fake;
pub mod evidence;
pub mod fake_github;
pub mod fake_gitlab;
pub mod git_http;
pub mod hook_stop;
pub mod mcp_client;
pub mod origin;
pub mod pki;
pub mod privsep;
pub mod s3;
pub mod sync_support;
pub mod task_support;
pub mod workspace_collect;
pub mod workspace_http;

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A temp directory holding a data dir (not created until `init`) and a
/// clean environment for the binary.
pub struct TestEnv {
    pub tmp: tempfile::TempDir,
    pub data_dir: PathBuf,
    /// Variables every command of this env also gets (e.g. an OCI engine's
    /// private configuration).
    pub extra_env: Vec<(String, std::ffi::OsString)>,
}

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The stdout JSON of a successful run (panics with the whole output otherwise).
    pub fn json(&self) -> Value {
        assert_eq!(self.code, 0, "expected success, got {self}");
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self}"))
    }

    /// The stderr JSON error object of a failed run, checked for shape and exit code.
    pub fn error(&self, code: &str, exit: i32) -> Value {
        assert_eq!(self.code, exit, "expected exit {exit} ({code}), got {self}");
        assert!(
            self.stdout.is_empty(),
            "a failure must print nothing on stdout: {self}"
        );
        let v: Value = serde_json::from_str(self.stderr.trim())
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {self}"));
        assert_eq!(v["error"], code, "{self}");
        assert!(v["message"].is_string(), "{self}");
        v
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[exit status: {}]\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        TestEnv {
            tmp,
            data_dir,
            extra_env: Vec::new(),
        }
    }

    /// A new env whose data directory is already initialised.
    pub fn init() -> Self {
        let env = Self::new();
        env.run(&["init"]).json();
        env
    }

    /// A path inside the temp directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// A command for the real binary with a scrubbed environment and
    /// `--data-dir` pointing at this env.
    pub fn cmd(&self) -> Command {
        let mut c = self.bare_cmd();
        c.arg("--data-dir").arg(&self.data_dir);
        c
    }

    /// A command for the real binary with a scrubbed environment and no
    /// `--data-dir`.
    pub fn bare_cmd(&self) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin!("agent-task"));
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.tmp.path())
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// A `std::process::Command` for the real binary (for spawning,
    /// killing and racing processes), set up like [`TestEnv::cmd`].
    pub fn std_cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(bin());
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.tmp.path())
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)))
            .arg("--data-dir")
            .arg(&self.data_dir);
        c
    }

    /// Runs the binary with `args`.
    pub fn run(&self, args: &[&str]) -> Output {
        run_cmd(self.cmd().args(args))
    }

    /// Runs the binary with `args` and `stdin`.
    pub fn run_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        run_cmd(self.cmd().args(args).write_stdin(stdin.to_vec()))
    }
}

pub fn run_cmd(c: &mut Command) -> Output {
    let out = c.output().expect("run agent-task");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `runtime probe --runtime bwrap` through the real binary (the identity a
/// default bwrap profile installed by this user pins).
pub fn probe_bwrap(env: &TestEnv) -> Value {
    env.run(&["runtime", "probe", "--runtime", "bwrap"]).json()
}

/// The absolute path of the built binary.
pub fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("agent-task")
}

/// The repository root (for fixtures and committed docs).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// SHA-256 of every file under `dir` (relative path → digest), leaving out
/// SQLite's `-shm` WAL-index files: shared memory that every WAL reader
/// writes its read marks into, not stored data.
pub fn snapshot_files(dir: &Path) -> std::collections::BTreeMap<String, String> {
    use sha2::Digest;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let e = e.expect("entry");
            let p = e.path();
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with("-shm") {
                let bytes = std::fs::read(&p).expect("read");
                let rel = p.strip_prefix(dir).expect("prefix").display().to_string();
                out.insert(
                    rel,
                    data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&bytes)),
                );
            }
        }
    }
    out
}
