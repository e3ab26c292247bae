//! The privilege-separated deployment with real Unix users (root only;
//! skipped with a printed `SKIP:` reason otherwise): an operator user owns
//! the data directory, the collector directory and the signing key and
//! runs `serve`; an agent user holds only its token and runs its whole
//! loop through the endpoint, collecting through the root-owned sudo
//! wrapper. The agent's attempts to read the key, write collector or store
//! state, or get `collect` to sign what it did not produce all fail.
//! docs/security.md, "Privilege-separated deployment".

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
    root_dir: PathBuf,
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
    crate::task_support::copy_dir(from, to);
}

fn all_paths(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for e in std::fs::read_dir(dir).expect("read dir") {
        let p = e.expect("entry").path();
        let md = std::fs::symlink_metadata(&p).expect("stat");
        if md.is_dir() {
            all_paths(&p, out);
        } else {
            out.push(p);
        }
    }
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

#[test]
fn privilege_separated_deployment_with_real_users() {
    let Some(d) = deploy("the multi-user deployment test", &Opts::default()) else {
        return;
    };
    let (op, agent) = (d.op.clone(), d.agent.clone());
    let ag_home = d.home(&agent);
    let wrapper = d.wrapper.clone();
    let root_dir = d.root_dir.clone();
    let unique = d.op.trim_start_matches("atop").to_owned();

    // A deployment that would let the agent in is refused, and nothing is
    // written: the agent as the operator, a binary or data directory the
    // agent owns, a sudoers name sudo would ignore, an endpoint or route
    // that needs quoting, a non-root caller.
    let other_out = root_dir.join("sbin/refused-wrapper");
    let own_bin = ag_home.join("agent-task");
    std::fs::copy(d.bin(), &own_bin).expect("copy");
    sh_root(&["chown", &format!("{agent}:{agent}"), s(&own_bin)]);
    let bad_rule = format!("/etc/sudoers.d/agent-task-test.{unique}");
    let good_rule = format!("/etc/sudoers.d/agent-task-refused-{unique}");
    let refused = |binary: &Path, data: &Path, agent_user: &str, sudoers: &str, extra: &[&str]| {
        d.write_wrapper(&other_out, binary, data, agent_user, sudoers, extra)
    };
    refused(&d.bin(), &d.data(), &op, &good_rule, &[]).error("invalid_input", 65);
    refused(&own_bin, &d.data(), &agent, &good_rule, &[]).error("insecure_permissions", 77);
    refused(&d.bin(), &ag_home, &agent, &good_rule, &[]).error("insecure_permissions", 77);
    refused(&d.bin(), &d.data(), &agent, &bad_rule, &[]).error("usage", 64);
    for bad in [
        "http://127.0.0.1:1/$(id)",
        "http://x@127.0.0.1:1",
        "file:///etc",
    ] {
        refused(
            &d.bin(),
            &d.data(),
            &agent,
            &good_rule,
            &["--endpoint", bad],
        )
        .error("invalid_input", 65);
    }
    refused(
        &d.bin(),
        &d.data(),
        &agent,
        &good_rule,
        &["--repository", "a b"],
    )
    .error("invalid_input", 65);
    let o = d.as_user(
        &agent,
        s(&d.bin()),
        &[
            "collector",
            "wrapper",
            "--out",
            s(&ag_home.join("w")),
            "--data-dir",
            s(&d.data()),
            "--collector-dir",
            s(&d.collector()),
            "--binary",
            s(&d.bin()),
            "--operator-user",
            &op,
            "--agent-user",
            &agent,
            "--endpoint",
            &format!("http://{}", d.addr),
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ],
        &[],
        b"",
    );
    o.error("insecure_permissions", 77);
    assert!(!other_out.exists(), "a refused wrapper was written");
    assert!(!Path::new(&bad_rule).exists() && !Path::new(&good_rule).exists());
    assert!(!ag_home.join("w").exists());

    let a = d.addr.as_str();
    // The agent's whole loop, with its token and the endpoint only.
    let (id, cp, desc_bytes) = d.agent_change("main");
    assert_eq!(cp["version"], 1, "{cp}");
    let notes = task_of(&cp, "notes");
    let claimed = d
        .agent_cmd(a, &["claim", &notes, "--request-id", "n1"], b"")
        .json();
    assert!(claimed.is_object(), "{claimed}");
    let desc = ag_home.join("d-main.json");
    let ws = ag_home.join("ws-main");
    let source = d.source.clone();
    let stdin_of = |descriptor: &[u8]| d.stdin_of(descriptor);
    let sudo = |args: &[&str], stdin: &[u8]| d.sudo(args, stdin);
    // A descriptor the agent changed (another revision to run on, a later
    // fence, another step) is refused and signs nothing.
    let orig: Value = serde_json::from_slice(&desc_bytes).expect("descriptor json");
    let other = agent_task::wire::digest::Sha256Hex::digest(b"another tree").to_string();
    for (field, value) in [
        ("revision", json!(other)),
        ("fence", json!(orig["fence"].as_u64().expect("fence") + 1)),
        ("step_id", json!("notes")),
    ] {
        let mut forged = orig.clone();
        forged[field] = value;
        let f = sudo(&[s(&wrapper)], &stdin_of(forged.to_string().as_bytes()));
        f.error("descriptor_mismatch", 65);
    }
    // Arguments, another command, another user, set environment: sudo refuses.
    for attempt in [
        vec![s(&wrapper), "--data-dir", "/tmp"],
        vec![
            s(&d.bin()),
            "--data-dir",
            s(&d.data()),
            "keygen",
            "--collector-dir",
            "/tmp/k",
        ],
        vec!["/bin/sh", "-c", "id"],
        vec!["AGENT_TASK_DATA_DIR=/tmp", s(&wrapper)],
    ] {
        let o = sudo(&attempt, &stdin_of(&desc_bytes));
        assert_ne!(o.code, 0, "sudo allowed {attempt:?}: {o}");
        assert!(o.stdout.is_empty(), "{attempt:?}: {o}");
        assert!(
            o.stderr.starts_with("sudo: "),
            "refused by sudo, not later: {o}"
        );
    }
    let o = d.as_user(
        &agent,
        "sudo",
        &["-n", "-u", "root", s(&wrapper)],
        &[],
        &stdin_of(&desc_bytes),
    );
    assert_ne!(o.code, 0, "sudo ran the wrapper as root: {o}");
    assert!(o.stderr.starts_with("sudo: "), "{o}");

    // The wrapper of an older agent-task (no --endpoint): its collect
    // refuses to import locally, and nothing is reserved.
    let old = d.as_user(
        &op,
        s(&d.bin()),
        &[
            "--data-dir",
            s(&d.data()),
            "collect",
            "--collector-dir",
            s(&d.collector()),
            "--descriptor",
            "-",
            "--token-on-stdin",
        ],
        &[],
        &stdin_of(&desc_bytes),
    );
    old.error("usage", 64);
    assert!(old.stderr.contains("--endpoint"), "{old}");

    // The real collect, through the wrapper as the rule allows: it uploads
    // through the operator's serve.
    let col = sudo(&[s(&wrapper)], &stdin_of(&desc_bytes)).json();
    assert_eq!(col["outcome"], "passed", "{col}");
    // A replay of the spent descriptor signs nothing more: it returns the
    // retained outcome, the same sealed transfer.
    let r = sudo(&[s(&wrapper)], &stdin_of(&desc_bytes)).json();
    assert_eq!(r["transfer_digest"], col["transfer_digest"], "{r}");
    assert_eq!(r["attempt_id"], col["attempt_id"], "{r}");
    assert_eq!(r["upload"]["replay"], true, "{r}");

    let q = d.agent_cmd(a, &["qualify", "--change", &id], b"").json();
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}), "{q}");
    d.agent_cmd(a, &["finalize", "--change", &id], b"").json();
    let q = d.agent_cmd(a, &["qualify", "--change", &id], b"").json();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["revision"], cp["revision"]);

    // The Stop hook as the agent: the subject comes through the endpoint.
    let payload = json!({"session_id": "s-privsep", "transcript_path": "/t", "cwd": ws,
                         "hook_event_name": "Stop", "stop_hook_active": false});
    let hook = d.agent_cmd(
        a,
        &[
            "task-stop",
            &id,
            "--workspace",
            s(&ws),
            "--endpoint",
            &format!("http://{a}"),
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ],
        payload.to_string().as_bytes(),
    );
    crate::hook_stop::passed("claude", &hook);

    // What the agent cannot do as its own user.
    let key_file = d
        .collector()
        .join(agent_task::workflow::authority::admin::KEY_FILE);
    let o = d.agent_sh("cat \"$1\"", &[s(&key_file)]);
    assert_ne!(o.code, 0, "the agent read the key: {o}");
    assert!(o.stderr.contains("Permission denied"), "{o}");
    assert!(o.stdout.is_empty());
    // The operator's data directory, named directly (no endpoint in the environment).
    let tok = d.agent_token();
    let bin = d.bin();
    let o = d.as_user(
        &agent,
        s(&bin),
        &[
            "--token-file",
            s(&tok),
            "--data-dir",
            s(&d.data()),
            "next",
            "--change",
            &id,
        ],
        &[],
        b"",
    );
    o.error("io_error", 74);
    // Every file and directory of the data dir and the collector dir
    // (collector state included): no append, no new file.
    let mut paths = Vec::new();
    all_paths(&d.data(), &mut paths);
    all_paths(&d.collector(), &mut paths);
    assert!(paths.len() > 10, "{paths:?}");
    let args: Vec<&str> = paths.iter().map(|p| s(p)).collect();
    let o = d.agent_sh(
        "n=0; for f in \"$@\"; do n=$((n+1)); \
         if [ -d \"$f\" ]; then (: > \"$f/agent-was-here\") 2>/dev/null && echo \"WROTE $f\"; \
         else (: >> \"$f\") 2>/dev/null && echo \"WROTE $f\"; fi; done; echo \"tried $n\"",
        &args,
    );
    assert_eq!(o.stdout.trim(), format!("tried {}", paths.len()), "{o}");
    // The agent's own key, a collect of its own: not enrolled, nowhere to sign into.
    let own = ag_home.join("own-collector");
    let own_data = ag_home.join("own-data");
    let o = d.as_user(
        &agent,
        s(&bin),
        &["--data-dir", s(&own_data), "init"],
        &[],
        b"",
    );
    assert_eq!(o.code, 0, "{o}");
    let o = d.as_user(
        &agent,
        s(&bin),
        &["keygen", "--collector-dir", s(&own)],
        &[],
        b"",
    );
    assert_eq!(o.code, 0, "{o}");
    let o = d.as_user(
        &agent,
        s(&bin),
        &[
            "--token-file",
            s(&tok),
            "--data-dir",
            s(&own_data),
            "collect",
            "--collector-dir",
            s(&own),
            "--descriptor",
            s(&desc),
        ],
        &[],
        b"",
    );
    o.error("enrollment_invalid", 77);

    // The operator lands.
    let landed = d
        .operator(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &id,
        ])
        .json();
    assert_eq!(landed["revision"], cp["revision"], "{landed}");
    let o = d.as_user(
        &op,
        "git",
        &["-C", s(&source), "show", "main:add.sh"],
        &[],
        b"",
    );
    assert!(o.stdout.contains("$(($1 + $2))"), "{o}");
}
