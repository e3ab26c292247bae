//! The privilege-separated deployment (two real users, the wrapper, sudoers,
//! serve) and its shell helpers. Moved from `privsep.rs`, whose tests and
//! others share it.

use crate::common::{Output, repo_root, run_cmd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

pub const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// The two users and every root-owned file the test made; removed on
/// drop, also when an assertion fails half-way.
pub struct Deployment {
    pub op: String,
    pub agent: String,
    made_users: Vec<String>,
    pub root_dir: PathBuf,
    sudoers: PathBuf,
    server: Option<Child>,
    /// The operator's serve (`127.0.0.1:PORT`).
    pub addr: String,
    /// The root-owned wrapper script.
    pub wrapper: PathBuf,
    /// The operator's source repository.
    pub source: PathBuf,
    /// The review credential file the wrapper pins, if any.
    pub credential: Option<PathBuf>,
    /// The collector key's public key (to enroll it for more steps).
    pub public_key: String,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.sudoers);
        for u in self.made_users.iter().rev() {
            // -r: the home directory (data dir, collector dir, workspace) goes too.
            let _ = std::process::Command::new("userdel")
                .args(["-r", "-f", u])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.root_dir);
    }
}

pub fn sh_root(args: &[&str]) {
    let o = std::process::Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run");
    assert!(o.status.success(), "{args:?}: {o:?}");
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

impl Deployment {
    pub fn home(&self, user: &str) -> PathBuf {
        PathBuf::from(format!("/home/{user}"))
    }

    /// `prog args` as `user` (setpriv: real and effective ids, the user's
    /// groups, a reset environment with HOME), with `stdin`.
    pub fn as_user(
        &self,
        user: &str,
        prog: &str,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> Output {
        let mut c = assert_cmd::Command::new("setpriv");
        c.env_clear()
            .env("PATH", PATH)
            .env("HOME", self.home(user))
            .envs(env.iter().copied())
            .current_dir(self.home(user))
            .args([
                "--reuid",
                user,
                "--regid",
                user,
                "--init-groups",
                "--",
                prog,
            ])
            .args(args)
            .write_stdin(stdin.to_vec());
        run_cmd(&mut c)
    }

    pub fn bin(&self) -> PathBuf {
        self.root_dir.join("bin/agent-task")
    }

    pub fn data(&self) -> PathBuf {
        self.home(&self.op).join("data")
    }

    pub fn collector(&self) -> PathBuf {
        self.home(&self.op).join("collector")
    }

    /// agent-task as the operator, on the operator's data directory.
    pub fn operator(&self, args: &[&str]) -> Output {
        let data = self.data();
        let mut a = vec!["--data-dir", s(&data)];
        a.extend_from_slice(args);
        let bin = self.bin();
        self.as_user(&self.op, s(&bin), &a, &[], b"")
    }

    pub fn agent_token(&self) -> PathBuf {
        self.home(&self.agent).join("agent.token")
    }

    /// agent-task as the agent: its token file and the endpoint, nothing else.
    pub fn agent_cmd(&self, addr: &str, args: &[&str], stdin: &[u8]) -> Output {
        let tok = self.agent_token();
        let mut a = vec!["--token-file", s(&tok)];
        a.extend_from_slice(args);
        let url = format!("http://{addr}");
        let env = [
            ("AGENT_TASK_ENDPOINT", url.as_str()),
            ("AGENT_TASK_REPOSITORY", "demo-basic"),
            ("AGENT_TASK_PROFILE", "default"),
        ];
        let bin = self.bin();
        self.as_user(&self.agent, s(&bin), &a, &env, stdin)
    }

    /// A shell script as the agent user.
    pub fn agent_sh(&self, script: &str, args: &[&str]) -> Output {
        let mut a = vec!["-c", script, "sh"];
        a.extend_from_slice(args);
        self.as_user(&self.agent, "/bin/sh", &a, &[], b"")
    }
}

/// Copies `from` into `to` as root (the clone may be private to root).
pub fn copy_tree(from: &Path, to: &Path) {
    crate::common::task_support::copy_dir(from, to);
}

pub fn task_of(cp: &Value, step: &str) -> String {
    cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == step)
        .and_then(|t| t["task_id"].as_str())
        .unwrap_or_else(|| panic!("no {step} task in {cp}"))
        .to_owned()
}

/// What [`deploy`] sets up beyond the common deployment.
#[derive(Default)]
pub struct Opts<'a> {
    /// The workflow fixture (`fixtures/workflows/<name>`); `basic.json` by default.
    pub workflow: Option<&'a str>,
    /// The text of a review credential file the wrapper pins (written as
    /// the operator's, 0600).
    pub credential: Option<&'a str>,
}

/// The deployment of `docs/security.md` with two real users (root only:
/// `None`, with `SKIP:` printed, otherwise): the operator's data directory
/// with the demo repository and `workflow`, a token for alice/claude-1
/// handed to the agent user, the collector key enrolled for `tests` with a
/// bwrap profile, the operator's `serve` and the root-written wrapper and
/// sudoers rule (pinning that serve).
pub fn deploy(what: &str, o: &Opts<'_>) -> Option<Deployment> {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: {what} needs root (useradd, setpriv, sudoers.d)");
        return None;
    }
    // As root every tool is installed by scripts/install-deps.sh: missing is a failure.
    if let Err(e) = tools_present() {
        panic!("{e}");
    }
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let unique = format!(
        "{}{}",
        (std::process::id()
            + std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("time")
                .subsec_nanos())
            % 100_000,
        SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    );
    let root_dir = PathBuf::from(format!("/tmp/agent-task-privsep-{unique}"));
    let mut d = Deployment {
        op: format!("atop{unique}"),
        agent: format!("atag{unique}"),
        made_users: Vec::new(),
        root_dir: root_dir.clone(),
        sudoers: PathBuf::from(format!("/etc/sudoers.d/agent-task-test-{unique}")),
        server: None,
        addr: String::new(),
        wrapper: root_dir.join("sbin/agent-task-collect"),
        source: PathBuf::new(),
        credential: None,
        public_key: String::new(),
    };
    // The binary out of the clone, into a root-owned directory everyone can read.
    for sub in ["", "bin", "sbin", "share"] {
        let p = root_dir.join(sub);
        std::fs::create_dir_all(&p).expect("mkdir");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::copy(crate::common::bin(), d.bin()).expect("copy binary");
    std::fs::set_permissions(d.bin(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for u in [d.op.clone(), d.agent.clone()] {
        sh_root(&["useradd", "-m", "-U", "-s", "/bin/sh", &u]);
        d.made_users.push(u.clone());
        std::fs::set_permissions(d.home(&u), std::fs::Permissions::from_mode(0o700))
            .expect("chmod home");
    }
    let (op, agent) = (d.op.clone(), d.agent.clone());
    let op_home = d.home(&op);

    // The operator's side: data dir, source repository, workflow, token, key, enrollment, profile.
    let source = op_home.join("source");
    copy_tree(&repo_root().join("fixtures/repos/basic"), &source);
    let wf = op_home.join("workflow.json");
    std::fs::copy(
        repo_root()
            .join("fixtures/workflows")
            .join(o.workflow.unwrap_or("basic.json")),
        &wf,
    )
    .expect("wf");
    sh_root(&["chown", "-R", &format!("{op}:{op}"), s(&source), s(&wf)]);
    let git_env = [
        ("GIT_AUTHOR_NAME", "op"),
        ("GIT_AUTHOR_EMAIL", "op@example.invalid"),
        ("GIT_COMMITTER_NAME", "op"),
        ("GIT_COMMITTER_EMAIL", "op@example.invalid"),
    ];
    for g in [
        vec!["init", "-q", "-b", "main"],
        vec!["add", "-A"],
        vec!["commit", "-q", "-m", "init"],
        vec!["config", "user.name", "op"],
        vec!["config", "user.email", "op@example.invalid"],
    ] {
        let mut a = vec!["-C", s(&source)];
        a.extend(g);
        let o = d.as_user(&op, "git", &a, &git_env, b"");
        assert_eq!(o.code, 0, "{o}");
    }
    d.source = source.clone();
    d.operator(&["init"]).json();
    d.operator(&["repo", "add", "demo/basic", "--source", s(&source)])
        .json();
    d.operator(&[
        "requirement",
        "install",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--file",
        s(&wf),
    ])
    .json();
    let op_token = op_home.join("agent.token");
    d.operator(&[
        "token",
        "issue",
        "--owner",
        "alice",
        "--agent",
        "claude-1",
        "--out",
        s(&op_token),
    ])
    .json();
    let key = d
        .operator(&["keygen", "--collector-dir", s(&d.collector())])
        .json();
    let reg = d
        .operator(&[
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
    d.public_key = key["public_key"].as_str().expect("pk").to_owned();
    d.operator(&[
        "profile",
        "install",
        "--registration",
        &registration,
        "--step",
        "tests",
        "--runtime",
        "bwrap",
    ])
    .json();
    // The token is handed to the agent: its own file, 0600.
    std::fs::copy(&op_token, d.agent_token()).expect("token");
    sh_root(&["chown", &format!("{agent}:{agent}"), s(&d.agent_token())]);
    std::fs::set_permissions(d.agent_token(), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");

    // serve as the operator.
    let demo_req = d.operator(&[
        "requirement",
        "show",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
    ]);
    let digest = if demo_req.code == 0 {
        demo_req.json()["requirement_digest"].clone()
    } else {
        Value::Null
    };
    assert!(digest.is_string(), "{demo_req}");
    let cfg = json!({"version": 1, "agent_task_profiles": [{
        "repository_id": "demo-basic", "profile_id": "default", "native_repository": "demo/basic",
        "data_dir": d.data(), "target": "main", "requirement_digest": digest}]});
    let cfg_path = op_home.join("workspace.json");
    std::fs::write(&cfg_path, cfg.to_string()).expect("cfg");
    sh_root(&["chown", &format!("{op}:{op}"), s(&cfg_path)]);
    let mut srv = std::process::Command::new("setpriv")
        .env_clear()
        .env("PATH", PATH)
        .env("HOME", &op_home)
        .current_dir(&op_home)
        .args(["--reuid", &op, "--regid", &op, "--init-groups", "--"])
        .arg(d.bin())
        .arg("--data-dir")
        .arg(d.data())
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace-config"])
        .arg(&cfg_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let out = srv.stdout.take().expect("stdout");
    d.server = Some(srv);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    d.addr = v["listening"]
        .as_str()
        .expect("url")
        .trim_start_matches("http://")
        .to_owned();

    // The review credential file: the operator's, 0600.
    if let Some(text) = o.credential {
        let p = op_home.join("review-credentials.env");
        std::fs::write(&p, text).expect("credential");
        sh_root(&["chown", &format!("{op}:{op}"), s(&p)]);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        d.credential = Some(p);
    }
    // Root writes the wrapper (pinning that serve) and the sudoers rule.
    let out = d.write_wrapper(&d.wrapper, &d.bin(), &d.data(), &agent, s(&d.sudoers), &[]);
    let w = out.json();
    assert_eq!(w["visudo"], "passed", "{w}");
    assert_eq!(
        std::fs::read_to_string(&d.wrapper).expect("wrapper"),
        agent_task::collector::wrapper::script(&agent_task::collector::wrapper::Pins {
            binary: s(&d.bin()),
            data_dir: s(&d.data()),
            collector_dir: s(&d.collector()),
            operator: &op,
            endpoint: &format!("http://{}", d.addr),
            repository: "demo-basic",
            profile: "default",
            review_credential_file: d.credential.as_deref().map(s),
        })
    );
    Some(d)
}

impl Deployment {
    /// `collector wrapper` as root with this deployment's pins (the
    /// collector directory, the operator, serve and its route, the
    /// credential file if any) and the given others; `extra` is appended.
    pub fn write_wrapper(
        &self,
        out: &Path,
        binary: &Path,
        data: &Path,
        agent_user: &str,
        sudoers: &str,
        extra: &[&str],
    ) -> Output {
        let endpoint = format!("http://{}", self.addr);
        let mut c = assert_cmd::Command::new(self.bin());
        c.env_clear().env("PATH", PATH).args([
            "collector",
            "wrapper",
            "--out",
            s(out),
            "--data-dir",
            s(data),
            "--collector-dir",
            s(&self.collector()),
            "--binary",
            s(binary),
            "--operator-user",
            &self.op,
            "--agent-user",
            agent_user,
            "--sudoers-out",
            sudoers,
        ]);
        // The route's defaults, unless `extra` names its own.
        for (flag, value) in [
            ("--endpoint", endpoint.as_str()),
            ("--repository", "demo-basic"),
            ("--profile", "default"),
        ] {
            if !extra.contains(&flag) {
                c.args([flag, value]);
            }
        }
        if let Some(p) = self
            .credential
            .as_ref()
            .filter(|_| !extra.contains(&"--review-credential-file"))
        {
            c.args(["--review-credential-file", s(p)]);
        }
        c.args(extra);
        run_cmd(&mut c)
    }

    /// The wrapper's stdin: the agent's token line, then `descriptor`.
    pub fn stdin_of(&self, descriptor: &[u8]) -> Vec<u8> {
        let mut v = std::fs::read(self.agent_token()).expect("token");
        if !v.ends_with(b"\n") {
            v.push(b'\n');
        }
        v.extend_from_slice(descriptor);
        v
    }

    /// `sudo -n -u OPERATOR args…` as the agent.
    pub fn sudo(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut a = vec!["-n", "-u", self.op.as_str()];
        a.extend_from_slice(args);
        self.as_user(&self.agent, "sudo", &a, &[], stdin)
    }

    /// The agent opens a change, checkpoints `add.sh` edited, and claims
    /// its `tests` task for the collector; returns (change id, checkpoint,
    /// descriptor bytes).
    pub fn agent_change(&self, n: &str) -> (String, Value, Vec<u8>) {
        self.agent_change_with(
            n,
            "#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 + $2))\n",
        )
    }

    /// [`Deployment::agent_change`] with `add_sh` as the edited `add.sh`.
    pub fn agent_change_with(&self, n: &str, add_sh: &str) -> (String, Value, Vec<u8>) {
        let a = self.addr.as_str();
        let ch = self
            .agent_cmd(
                a,
                &[
                    "change",
                    "open",
                    "--profile",
                    "default",
                    "--request-id",
                    &format!("o-{n}"),
                ],
                b"",
            )
            .json();
        let id = ch["change_id"].as_str().expect("id").to_owned();
        let ag_home = self.home(&self.agent);
        let ws = ag_home.join(format!("ws-{n}"));
        copy_tree(&repo_root().join("fixtures/repos/basic"), &ws);
        std::fs::write(ws.join("add.sh"), add_sh).expect("edit");
        sh_root(&["chown", "-R", &format!("{0}:{0}", self.agent), s(&ws)]);
        let cp = self
            .agent_cmd(
                a,
                &["checkpoint", "--change", &id, "--workspace", s(&ws)],
                b"",
            )
            .json();
        let tests = task_of(&cp, "tests");
        let desc = ag_home.join(format!("d-{n}.json"));
        let cc = self
            .agent_cmd(
                a,
                &[
                    "collector-claim",
                    &tests,
                    "--request-id",
                    &format!("rc-{n}"),
                    "--descriptor-out",
                    s(&desc),
                ],
                b"",
            )
            .json();
        assert!(cc["descriptor"].is_object(), "{cc}");
        (id, cp, std::fs::read(&desc).expect("descriptor"))
    }
}

pub fn tools_present() -> Result<(), String> {
    for t in ["useradd", "userdel", "setpriv", "sudo", "git", "bwrap"] {
        let found = PATH.split(':').any(|d| Path::new(d).join(t).is_file());
        if !found {
            return Err(format!(
                "{t} is not installed (scripts/install-deps.sh installs it)"
            ));
        }
    }
    Ok(())
}
