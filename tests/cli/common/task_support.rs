//! Shared set-up for the task tests: an operator-prepared data dir with the
//! fixture repository and workflow, a token and an enrolled collector key.

#![allow(dead_code)]

use crate::common::{Output, TestEnv, repo_root};
use agent_task::contract::{
    Actor, CriterionOutcome, CriterionResult, ExecutorRef, ResultOutcome, TaskResultAssertion,
    TrustClass,
};
use serde_json::Value;
use std::path::PathBuf;

pub struct Setup {
    pub env: TestEnv,
    pub token: PathBuf,
    pub collector: PathBuf,
    pub registration: Value,
    pub workspace: PathBuf,
    pub change_id: String,
}

pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let p = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &p);
        } else {
            std::fs::copy(e.path(), &p).expect("copy");
        }
    }
}

impl Setup {
    /// Operator set-up with the fixture workflow, then `change open`.
    pub fn new() -> Setup {
        Self::with_workflow(&repo_root().join("fixtures/workflows/basic.json"))
    }

    pub fn with_workflow(workflow: &std::path::Path) -> Setup {
        let env = TestEnv::init();
        let src = env.path("source");
        copy_dir(&repo_root().join("fixtures/repos/basic"), &src);
        env.run(&[
            "repo",
            "add",
            "demo/basic",
            "--source",
            src.to_str().expect("utf8"),
        ])
        .json();
        env.run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            workflow.to_str().expect("utf8"),
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
            token.to_str().expect("utf8"),
        ])
        .json();
        let collector = env.path("collector");
        let registration = enroll_collector(&env, &collector, "laptop");
        let workspace = env.path("work");
        copy_dir(&repo_root().join("fixtures/repos/basic"), &workspace);
        let mut s = Setup {
            env,
            token,
            collector,
            registration,
            workspace,
            change_id: String::new(),
        };
        let ch = s
            .agent(&[
                "change",
                "open",
                "--repo",
                "demo/basic",
                "--profile",
                "default",
                "--workspace",
                s.ws(),
            ])
            .json();
        s.change_id = ch["change_id"].as_str().expect("change").to_owned();
        s
    }

    pub fn ws(&self) -> &str {
        self.workspace.to_str().expect("utf8")
    }

    /// Runs an agent command with the token file.
    pub fn agent(&self, args: &[&str]) -> Output {
        let mut c = self.env.cmd();
        c.arg("--token-file").arg(&self.token).args(args);
        crate::common::run_cmd(&mut c)
    }

    /// Same, with the test clock pinned.
    pub fn agent_at(&self, now: &str, args: &[&str]) -> Output {
        let mut c = self.env.cmd();
        c.env("AGENT_TASK_TEST_NOW", now)
            .arg("--token-file")
            .arg(&self.token)
            .args(args);
        crate::common::run_cmd(&mut c)
    }

    /// Checkpoints and returns (tests task, notes task) ids.
    pub fn checkpoint(&self) -> (String, String) {
        // Always a fresh subject (the suites race and reconcile subject
        // after subject of one tree); reuse is `land_repo`'s.
        let cp = self
            .agent(&["checkpoint", "--workspace", self.ws(), "--new-subject"])
            .json();
        let id = |step: &str| {
            cp["tasks"]
                .as_array()
                .expect("tasks")
                .iter()
                .find(|t| t["step_id"] == step)
                .and_then(|t| t["task_id"].as_str())
                .expect("task")
                .to_owned()
        };
        (id("tests"), id("notes"))
    }

    pub fn journal_exists(&self) -> bool {
        self.env.data_dir.join("journal.sqlite").exists()
    }

    /// Writes a result document and submits it.
    pub fn submit(&self, a: &TaskResultAssertion) -> Output {
        let f = self.env.path(&format!("result-{}.json", a.request_id));
        std::fs::write(&f, serde_json::to_vec(a).expect("json")).expect("write");
        self.agent(&["result", "--file", f.to_str().expect("utf8")])
    }

    pub fn executor_ref(&self) -> ExecutorRef {
        let r = &self.registration;
        ExecutorRef {
            registration_id: r["registration_id"].as_str().expect("id").into(),
            executor_id: r["executor_id"].as_str().expect("ex").into(),
            registration_epoch: r["epoch"].as_u64().expect("epoch"),
            verification_key_id: r["verification_key_id"].as_str().expect("kid").into(),
        }
    }

    pub fn sign(&self, a: &mut TaskResultAssertion) {
        let key =
            agent_task::workflow::authority::admin::load_signing_key(&self.collector).expect("key");
        agent_task::contract::observation::sign(a, &key).expect("sign");
    }
}

/// An assertion for a claim output, one passed row per criterion id.
pub fn assertion(
    claim: &Value,
    request_id: &str,
    criteria: &[&str],
    outcome: ResultOutcome,
) -> TaskResultAssertion {
    let at = &claim["attempt"];
    let row = match outcome {
        ResultOutcome::Passed => CriterionOutcome::Passed,
        ResultOutcome::Failed => CriterionOutcome::Failed,
        ResultOutcome::Uncertain => CriterionOutcome::Uncertain,
    };
    TaskResultAssertion {
        version: 1,
        task_id: at["task_id"].as_str().expect("t").into(),
        task_digest: serde_json::from_value(at["task_digest"].clone()).expect("d"),
        attempt_id: at["attempt_id"].as_str().expect("a").into(),
        attempt_digest: serde_json::from_value(claim["attempt_digest"].clone()).expect("d"),
        request_id: request_id.into(),
        execution_operation_id: at["execution_operation_id"].as_str().expect("e").into(),
        agent: Actor {
            owner_id: "alice".into(),
            agent_id: "claude-1".into(),
        },
        executor: None,
        fence: at["fence"].as_u64().expect("fence"),
        trust_class: TrustClass::AgentAssertion,
        outcome,
        criteria: criteria
            .iter()
            .map(|c| CriterionResult {
                criterion: (*c).into(),
                outcome: row,
                findings: vec!["checked".into()],
                evidence_digests: vec![],
            })
            .collect(),
        executor_provenance: None,
    }
}

/// A fresh collector key in `dir`, enrolled for the `notes` step of
/// demo/basic's default profile as `executor` (a policy act): the
/// registration.
pub fn enroll_collector(env: &TestEnv, dir: &std::path::Path, executor: &str) -> Value {
    let key = env
        .run(&["keygen", "--collector-dir", dir.to_str().expect("utf8")])
        .json();
    env.run(&[
        "enroll",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--step",
        "notes",
        "--executor",
        executor,
        "--public-key",
        key["public_key"].as_str().expect("pk"),
    ])
    .json()
}

pub fn attempt_id(claim: &Value) -> String {
    claim["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt")
        .to_owned()
}
