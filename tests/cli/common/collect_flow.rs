//! The collect loop (`Loop`): a workspace, a collector and its profile,
//! checkpoint, claim and collect through the real binary; `git` and
//! `workflow_with`. Moved from `collect_flow.rs`, whose tests and others share
//! it.

use crate::common::task_support::copy_dir;
use crate::common::{Output, TestEnv, repo_root, run_cmd};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub struct Loop {
    pub env: TestEnv,
    pub token: PathBuf,
    pub collector: PathBuf,
    pub registration: String,
    pub workspace: PathBuf,
    pub source: PathBuf,
    pub change_id: String,
}

/// Runs git in `dir` as a fixed operator identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "op")
        .env("GIT_AUTHOR_EMAIL", "op@example.invalid")
        .env("GIT_COMMITTER_NAME", "op")
        .env("GIT_COMMITTER_EMAIL", "op@example.invalid")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Loop {
    /// Operator set-up on a git source: workflow, token, key, enrollment
    /// for `tests`, a profile (runtime, optional pinned file); then the
    /// agent opens a Change on a copy of the fixture.
    pub fn new(workflow: &Path, runtime: &str, pin_file: Option<&Path>) -> Loop {
        let mut profile_args = vec![];
        if let Some(f) = pin_file {
            profile_args.extend(["--file", s(f)]);
        }
        Self::setup(TestEnv::init(), workflow, runtime, &profile_args)
    }

    /// [`Loop::new`] on an initialised `env`, with extra `profile install`
    /// arguments.
    pub fn setup(env: TestEnv, workflow: &Path, runtime: &str, profile_args: &[&str]) -> Loop {
        let source = env.path("source");
        copy_dir(&repo_root().join("fixtures/repos/basic"), &source);
        git(&source, &["init", "-q", "-b", "main"]);
        git(&source, &["add", "-A"]);
        git(&source, &["commit", "-q", "-m", "init"]);
        // The operator's git identity: the landed commit's author.
        git(&source, &["config", "user.name", "op"]);
        git(&source, &["config", "user.email", "op@example.invalid"]);
        env.run(&["repo", "add", "demo/basic", "--source", s(&source)])
            .json();
        env.run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            s(workflow),
        ])
        .json();
        let token = env.path("alice.token");
        env.run(&[
            "token",
            "issue",
            "--owner",
            "alice",
            "--agent",
            "claude-1",
            "--out",
            s(&token),
        ])
        .json();
        let collector = env.path("collector");
        let key = env
            .run(&["keygen", "--collector-dir", s(&collector)])
            .json();
        let reg = env
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
                key["public_key"].as_str().expect("pk"),
            ])
            .json();
        let registration = reg["registration_id"].as_str().expect("reg").to_owned();
        let mut args = vec![
            "profile",
            "install",
            "--registration",
            &registration,
            "--step",
            "tests",
            "--runtime",
            runtime,
        ];
        args.extend(profile_args);
        env.run(&args).json();
        let workspace = env.path("work");
        copy_dir(&repo_root().join("fixtures/repos/basic"), &workspace);
        let mut l = Loop {
            env,
            token,
            collector,
            registration,
            workspace,
            source,
            change_id: String::new(),
        };
        let ch = l
            .agent(&[
                "change",
                "open",
                "--repo",
                "demo/basic",
                "--profile",
                "default",
                "--workspace",
                s(&l.workspace.clone()),
            ])
            .json();
        l.change_id = ch["change_id"].as_str().expect("change").to_owned();
        l
    }

    pub fn basic(runtime: &str) -> Loop {
        Self::new(
            &repo_root().join("fixtures/workflows/basic.json"),
            runtime,
            None,
        )
    }

    pub fn agent(&self, args: &[&str]) -> Output {
        let mut c = self.env.cmd();
        c.arg("--token-file").arg(&self.token).args(args);
        run_cmd(&mut c)
    }

    pub fn agent_env(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut c = self.env.cmd();
        for (k, v) in env {
            c.env(k, v);
        }
        c.arg("--token-file").arg(&self.token).args(args);
        run_cmd(&mut c)
    }

    /// Checkpoints; returns the `tests` task id.
    pub fn checkpoint(&self) -> String {
        let cp = self
            .agent(&["checkpoint", "--workspace", s(&self.workspace)])
            .json();
        cp["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["step_id"] == "tests")
            .and_then(|t| t["task_id"].as_str())
            .expect("tests task")
            .to_owned()
    }

    /// collector-claim; returns (descriptor path, descriptor).
    pub fn claim(&self, task: &str, name: &str) -> (PathBuf, Value) {
        let p = self.env.path(name);
        let out = self
            .agent(&["collector-claim", task, "--descriptor-out", s(&p)])
            .json();
        (p, out["descriptor"].clone())
    }

    pub fn collect(&self, descriptor: &Path) -> Output {
        self.agent(&[
            "collect",
            "--descriptor",
            s(descriptor),
            "--collector-dir",
            s(&self.collector),
        ])
    }

    /// Changes what a receipt depends on: `executor` revokes the
    /// enrollment, `token` the agent's token, `policy` reinstalls the
    /// requirement, `reenroll` enrolls a new key for the same executor.
    pub fn invalidate(&self, case: &str) {
        match case {
            "executor" => {
                self.env
                    .run(&["enrollment", "revoke", "--registration", &self.registration])
                    .json();
            }
            "token" => {
                self.env
                    .run(&["token", "revoke", "--owner", "alice", "--agent", "claude-1"])
                    .json();
            }
            "policy" => {
                self.env
                    .run(&[
                        "requirement",
                        "install",
                        "--repo",
                        "demo/basic",
                        "--profile",
                        "default",
                        "--file",
                        s(&repo_root().join("fixtures/workflows/basic.json")),
                        // The same requirement again: a policy act only when asked.
                        "--bump-epoch",
                    ])
                    .json();
            }
            "reenroll" => {
                let key = self
                    .env
                    .run(&["keygen", "--collector-dir", s(&self.env.path("c2"))])
                    .json();
                self.env
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
                        key["public_key"].as_str().expect("pk"),
                    ])
                    .json();
            }
            other => panic!("unknown invalidation {other}"),
        }
    }

    pub fn qualify(&self) -> Value {
        self.agent(&["qualify", "--change", &self.change_id]).json()
    }

    pub fn set_add(&self, op: &str) {
        let p = self.workspace.join("add.sh");
        std::fs::write(
            &p,
            format!("#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 {op} $2))\n"),
        )
        .expect("write");
    }

    /// Where the sealed retained file `kind` (reservation, record,
    /// transfer, upload) of a descriptor's execution lives.
    pub fn retained_path(&self, d: &Value, kind: &str) -> PathBuf {
        agent_task::collector::collect::retained_path(
            &self.collector,
            d["execution_operation_id"].as_str().expect("op"),
            kind,
        )
    }

    /// The body of a retained file, its MAC verified (`None`: absent).
    pub fn read_retained(&self, d: &Value, kind: &str) -> Option<Vec<u8>> {
        agent_task::collector::collect::read_retained(
            &self.collector,
            d["execution_operation_id"].as_str().expect("op"),
            kind,
        )
        .expect("retained state verifies")
    }

    /// Seals `body` as a retained file with the collector's key, as only a
    /// holder of the signing key can.
    pub fn write_retained(&self, d: &Value, kind: &str, body: &[u8]) {
        agent_task::collector::collect::write_retained(
            &self.collector,
            d["execution_operation_id"].as_str().expect("op"),
            kind,
            body,
        )
        .expect("seal");
    }

    pub fn retry(&self, d: &Value) -> Output {
        self.agent(&[
            "retry-upload",
            "--collector-dir",
            s(&self.collector),
            "--operation",
            d["execution_operation_id"].as_str().expect("op"),
        ])
    }
}

/// A workflow whose `tests` step runs `argv`.
pub fn workflow_with(env: &TestEnv, argv: &[&str]) -> PathBuf {
    let mut w: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("fixtures/workflows/basic.json")).expect("fixture"),
    )
    .expect("json");
    w["steps"][0]["recipe"]["argv"] = json!(argv);
    let p = env.path("workflow.json");
    std::fs::write(&p, serde_json::to_vec(&w).expect("json")).expect("write");
    p
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}
