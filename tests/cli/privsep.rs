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

const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// The two users and every root-owned file the test made; removed on
/// drop, also when an assertion fails half-way.
struct Deployment {
    op: String,
    agent: String,
    made_users: Vec<String>,
    root_dir: PathBuf,
    sudoers: PathBuf,
    server: Option<Child>,
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

fn sh_root(args: &[&str]) {
    let o = std::process::Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run");
    assert!(o.status.success(), "{args:?}: {o:?}");
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

impl Deployment {
    fn home(&self, user: &str) -> PathBuf {
        PathBuf::from(format!("/home/{user}"))
    }

    /// `prog args` as `user` (setpriv: real and effective ids, the user's
    /// groups, a reset environment with HOME), with `stdin`.
    fn as_user(
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

    fn bin(&self) -> PathBuf {
        self.root_dir.join("bin/agent-task")
    }

    fn data(&self) -> PathBuf {
        self.home(&self.op).join("data")
    }

    fn collector(&self) -> PathBuf {
        self.home(&self.op).join("collector")
    }

    /// agent-task as the operator, on the operator's data directory.
    fn operator(&self, args: &[&str]) -> Output {
        let data = self.data();
        let mut a = vec!["--data-dir", s(&data)];
        a.extend_from_slice(args);
        let bin = self.bin();
        self.as_user(&self.op, s(&bin), &a, &[], b"")
    }

    fn agent_token(&self) -> PathBuf {
        self.home(&self.agent).join("agent.token")
    }

    /// agent-task as the agent: its token file and the endpoint, nothing else.
    fn agent_cmd(&self, addr: &str, args: &[&str], stdin: &[u8]) -> Output {
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
    fn agent_sh(&self, script: &str, args: &[&str]) -> Output {
        let mut a = vec!["-c", script, "sh"];
        a.extend_from_slice(args);
        self.as_user(&self.agent, "/bin/sh", &a, &[], b"")
    }
}

/// Copies `from` into `to` as root (the clone may be private to root).
fn copy_tree(from: &Path, to: &Path) {
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

fn task_of(cp: &Value, step: &str) -> String {
    cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == step)
        .and_then(|t| t["task_id"].as_str())
        .unwrap_or_else(|| panic!("no {step} task in {cp}"))
        .to_owned()
}

fn tools_present() -> Result<(), String> {
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

#[test]
fn privilege_separated_deployment_with_real_users() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: the multi-user deployment test needs root (useradd, setpriv, sudoers.d)");
        return;
    }
    // As root every tool is installed by scripts/install-deps.sh: missing is a failure.
    if let Err(e) = tools_present() {
        panic!("{e}");
    }
    let unique = format!(
        "{}{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .subsec_nanos()
            % 100_000
    );
    let root_dir = PathBuf::from(format!("/tmp/agent-task-privsep-{unique}"));
    let mut d = Deployment {
        op: format!("atop{unique}"),
        agent: format!("atag{unique}"),
        made_users: Vec::new(),
        root_dir: root_dir.clone(),
        sudoers: PathBuf::from(format!("/etc/sudoers.d/agent-task-test-{unique}")),
        server: None,
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
    let ag_home = d.home(&agent);

    // The operator's side: data dir, source repository, workflow, token, key, enrollment, profile.
    let source = op_home.join("source");
    copy_tree(&repo_root().join("fixtures/repos/basic"), &source);
    let wf = op_home.join("basic.json");
    std::fs::copy(repo_root().join("fixtures/workflows/basic.json"), &wf).expect("wf");
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

    // Root writes the wrapper and the sudoers rule.
    let wrapper = root_dir.join("sbin/agent-task-collect");
    let mut c = assert_cmd::Command::new(d.bin());
    c.env_clear().env("PATH", PATH).args([
        "collector",
        "wrapper",
        "--out",
        s(&wrapper),
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
        "--sudoers-out",
        s(&d.sudoers),
    ]);
    let w = run_cmd(&mut c).json();
    assert_eq!(w["visudo"], "passed", "{w}");
    assert_eq!(
        std::fs::read_to_string(&wrapper).expect("wrapper"),
        agent_task::collector::wrapper::script(s(&d.bin()), s(&d.data()), s(&d.collector()), &op)
    );

    // A deployment that would let the agent in is refused, and nothing is
    // written: the agent as the operator, a binary or data directory the
    // agent owns, a sudoers name sudo would ignore, a non-root caller.
    let other_out = root_dir.join("sbin/refused-wrapper");
    let own_bin = ag_home.join("agent-task");
    std::fs::copy(d.bin(), &own_bin).expect("copy");
    sh_root(&["chown", &format!("{agent}:{agent}"), s(&own_bin)]);
    let refused = |binary: &Path, data: &Path, agent_user: &str, sudoers: &str| {
        let mut c = assert_cmd::Command::new(d.bin());
        c.env_clear().env("PATH", PATH).args([
            "collector",
            "wrapper",
            "--out",
            s(&other_out),
            "--data-dir",
            s(data),
            "--collector-dir",
            s(&d.collector()),
            "--binary",
            s(binary),
            "--operator-user",
            &op,
            "--agent-user",
            agent_user,
            "--sudoers-out",
            sudoers,
        ]);
        run_cmd(&mut c)
    };
    let bad_rule = format!("/etc/sudoers.d/agent-task-test.{unique}");
    let good_rule = format!("/etc/sudoers.d/agent-task-refused-{unique}");
    refused(&d.bin(), &d.data(), &op, &good_rule).error("invalid_input", 65);
    refused(&own_bin, &d.data(), &agent, &good_rule).error("insecure_permissions", 77);
    refused(&d.bin(), &ag_home, &agent, &good_rule).error("insecure_permissions", 77);
    refused(&d.bin(), &d.data(), &agent, &bad_rule).error("usage", 64);
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
        ],
        &[],
        b"",
    );
    o.error("insecure_permissions", 77);
    assert!(!other_out.exists(), "a refused wrapper was written");
    assert!(!Path::new(&bad_rule).exists() && !Path::new(&good_rule).exists());
    assert!(!ag_home.join("w").exists());

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
    let addr = v["listening"]
        .as_str()
        .expect("url")
        .trim_start_matches("http://")
        .to_owned();
    let a = addr.as_str();

    // The agent's whole loop, with its token and the endpoint only.
    let ch = d
        .agent_cmd(
            a,
            &[
                "change",
                "open",
                "--profile",
                "default",
                "--request-id",
                "o1",
            ],
            b"",
        )
        .json();
    let id = ch["change_id"].as_str().expect("id").to_owned();
    let ws = ag_home.join("ws");
    copy_tree(&repo_root().join("fixtures/repos/basic"), &ws);
    std::fs::write(
        ws.join("add.sh"),
        "#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 + $2))\n",
    )
    .expect("edit");
    sh_root(&["chown", "-R", &format!("{agent}:{agent}"), s(&ws)]);
    let cp = d
        .agent_cmd(
            a,
            &["checkpoint", "--change", &id, "--workspace", s(&ws)],
            b"",
        )
        .json();
    assert_eq!(cp["version"], 1, "{cp}");
    let tests = task_of(&cp, "tests");
    let notes = task_of(&cp, "notes");
    let next = d.agent_cmd(a, &["next", "--change", &id], b"").json();
    assert_eq!(next["next"]["operation"], "collector_claim", "{next}");
    let claimed = d
        .agent_cmd(a, &["claim", &notes, "--request-id", "n1"], b"")
        .json();
    assert!(claimed.is_object(), "{claimed}");
    let desc = ag_home.join("d.json");
    let cc = d
        .agent_cmd(
            a,
            &[
                "collector-claim",
                &tests,
                "--request-id",
                "rc1",
                "--descriptor-out",
                s(&desc),
            ],
            b"",
        )
        .json();
    assert!(cc["descriptor"].is_object(), "{cc}");
    let token_bytes = std::fs::read(d.agent_token()).expect("token");
    let desc_bytes = std::fs::read(&desc).expect("descriptor");
    let stdin_of = |descriptor: &[u8]| {
        let mut v = token_bytes.clone();
        if !v.ends_with(b"\n") {
            v.push(b'\n');
        }
        v.extend_from_slice(descriptor);
        v
    };
    let sudo = |args: &[&str], stdin: &[u8]| {
        let mut a = vec!["-n", "-u", op.as_str()];
        a.extend_from_slice(args);
        d.as_user(&agent, "sudo", &a, &[], stdin)
    };

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

    // The real collect, through the wrapper as the rule allows.
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
