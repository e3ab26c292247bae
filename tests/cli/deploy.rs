//! `deploy config`, `deploy check` and the executable walkthrough of
//! docs/security.md (`scripts/deploy-demo.sh`, which extracts the
//! document's blocks and runs them with two real users). The multi-user
//! tests need root and print `SKIP:` otherwise.

use crate::common::{Output, TestEnv, bin, repo_root, run_cmd};
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// A repository with a requirement installed for `profile`.
fn registered(env: &TestEnv, repo: &str, profile: &str, workflow: &str) {
    let src = env.path(&format!("src-{}", repo.replace('/', "_")));
    if !src.exists() {
        crate::common::task_support::copy_dir(&repo_root().join("fixtures/repos/basic"), &src);
        env.run(&["repo", "add", repo, "--source", s(&src)]).json();
    }
    let wf = repo_root().join("fixtures/workflows").join(workflow);
    env.run(&[
        "requirement",
        "install",
        "--repo",
        repo,
        "--profile",
        profile,
        "--file",
        s(&wf),
    ])
    .json();
}

#[test]
fn deploy_config_maps_native_ids_and_never_overwrites_another_config() {
    let env = TestEnv::init();
    let out = env.path("ws.json");
    // Nothing installed yet: nothing to serve.
    env.run(&["deploy", "config", "--out", s(&out)])
        .error("not_found", 66);
    assert!(!out.exists());
    registered(&env, "demo/basic", "default", "basic.json");
    let v = env.run(&["deploy", "config", "--out", s(&out)]).json();
    assert_eq!(v["status"], "written", "{v}");
    assert_eq!(v["profiles"][0]["repository_id"], "demo-basic");
    assert_eq!(v["profiles"][0]["native_repository"], "demo/basic");
    let md = std::fs::metadata(&out).expect("config");
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    let written: Value = serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("json");
    let p = &written["agent_task_profiles"][0];
    assert_eq!(p["repository_id"], "demo-basic");
    assert_eq!(p["native_repository"], "demo/basic");
    assert_eq!(p["target"], "main");
    assert_eq!(p["data_dir"], s(&env.data_dir));
    let shown = env.run(&[
        "requirement",
        "show",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
    ]);
    assert_eq!(p["requirement_digest"], shown.json()["requirement_digest"]);

    // A rerun on the same authority is a no-op.
    let before = std::fs::read(&out).expect("read");
    let v = env.run(&["deploy", "config", "--out", s(&out)]).json();
    assert_eq!(v["status"], "unchanged", "{v}");
    assert_eq!(std::fs::read(&out).expect("read"), before);

    // Another requirement: the file on disk is another config now; kept
    // byte for byte without --force, replaced with it.
    registered(&env, "demo/basic", "default", "review.json");
    env.run(&["deploy", "config", "--out", s(&out)])
        .error("conflict", 65);
    assert_eq!(std::fs::read(&out).expect("read"), before);
    let v = env
        .run(&["deploy", "config", "--out", s(&out), "--force"])
        .json();
    assert_eq!(v["status"], "written", "{v}");
    assert_ne!(std::fs::read(&out).expect("read"), before);

    // A symlink in the config's place is never followed, not even with --force.
    let link = env.path("link.json");
    let target = env.path("elsewhere.json");
    std::fs::write(&target, b"keep").expect("write");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    env.run(&["deploy", "config", "--out", s(&link), "--force"])
        .error("symlink_refused", 77);
    assert_eq!(std::fs::read(&target).expect("read"), b"keep");

    // A native id that maps onto another's endpoint id is refused.
    registered(&env, "demo-basic", "default", "basic.json");
    let other = env.path("other.json");
    env.run(&["deploy", "config", "--out", s(&other)])
        .error("conflict", 65);
    assert!(!other.exists());
}

/// The blocks of docs/security.md's walkthrough, as scripts/deploy-demo.sh
/// extracts them: (user, text).
fn walkthrough_blocks() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(repo_root().join("docs/security.md")).expect("doc");
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(l) = lines.next() {
        let Some(user) = l
            .strip_prefix("<!-- walkthrough: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(lines.next(), Some("```sh"), "a ```sh block must follow {l}");
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((user.to_owned(), body.join("\n")));
    }
    out
}

/// Everywhere (no root needed): the walkthrough has the shape the demo
/// runs: the env block first, setting each name the demo replaces once;
/// then blocks for root, the operator and the agent, each opening with a
/// `# USER: what it does` line; from `repo add` to `verify`.
#[test]
fn the_walkthrough_blocks_are_what_the_demo_runs() {
    let blocks = walkthrough_blocks();
    assert_eq!(blocks.first().map(|b| b.0.as_str()), Some("env"));
    let env = &blocks[0].1;
    for name in [
        "OP", "AGENT", "BUILT", "BIN", "WRAPPER", "SUDOERS", "SHARE", "PORT",
    ] {
        let n = env
            .lines()
            .filter(|l| l.starts_with(&format!("{name}=")))
            .count();
        assert_eq!(n, 1, "{name} in the env block:\n{env}");
    }
    for (user, text) in &blocks[1..] {
        assert!(["root", "op", "agent"].contains(&user.as_str()), "{user}");
        assert!(
            text.starts_with(&format!("# {user}: ")),
            "a {user} block opens with `# {user}: …`:\n{text}"
        );
    }
    let all: String = blocks.iter().map(|b| b.1.as_str()).collect();
    for needed in [
        " repo add ",
        " deploy config ",
        " collector wrapper ",
        " deploy check ",
        "sudo -n -u \"$OP\" \"$WRAPPER\"",
        " land ",
        "git pull",
        "agent-task verify ",
    ] {
        assert!(all.contains(needed), "the walkthrough lost {needed:?}");
    }
}

/// The walkthrough script refuses clearly when not root.
#[test]
fn deploy_demo_refuses_without_root() {
    let script = repo_root().join("scripts/deploy-demo.sh");
    let mut c = std::process::Command::new("bash");
    if is_root() {
        // As nobody, if nobody can read the checkout; otherwise this host
        // cannot show it.
        let readable = std::fs::metadata(&script)
            .map(|m| m.permissions().mode() & 0o004 != 0)
            .unwrap_or(false);
        let mut walk = script.parent();
        let mut searchable = true;
        while let Some(d) = walk {
            searchable &= std::fs::metadata(d)
                .map(|m| m.permissions().mode() & 0o001 != 0)
                .unwrap_or(false);
            walk = d.parent();
        }
        if !readable || !searchable {
            println!("SKIP: the checkout is not readable by nobody");
            return;
        }
        c = std::process::Command::new("setpriv");
        c.args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--",
            "bash",
        ]);
    }
    let o = c
        .arg(&script)
        .env_clear()
        .env("PATH", PATH)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(77), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("deploy-demo: must run as root"), "{err}");
}

/// docs/security.md's walkthrough, extracted from the document and run
/// with two real users by scripts/deploy-demo.sh.
#[test]
fn the_documented_walkthrough_runs_as_written() {
    if !is_root() {
        println!("SKIP: the walkthrough creates users and a sudoers rule: it needs root");
        return;
    }
    // The machine's managed hook files, as they are before the demo
    // (which writes them) and must be after it.
    let etc = ["/etc/claude-code", "/etc/codex", "/etc/agent-task"];
    let before: Vec<String> = etc.iter().map(|d| tree_state(Path::new(d))).collect();
    let o = std::process::Command::new(repo_root().join("scripts/deploy-demo.sh"))
        .arg("--binary")
        .arg(bin())
        .env_clear()
        .env("PATH", PATH)
        .stdin(Stdio::null())
        .output()
        .expect("run deploy-demo.sh");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "deploy-demo.sh failed:\n{err}");
    assert!(err.contains("deploy-demo: passed"), "{err}");
    // Every block of the document ran (one timing line each), the
    // deployment checked out, the landing verified in the agent's clone.
    let doc = std::fs::read_to_string(repo_root().join("docs/security.md")).expect("doc");
    let blocks = doc
        .lines()
        .filter(|l| l.starts_with("<!-- walkthrough: ") && !l.contains(": env "))
        .count();
    assert!(blocks >= 6, "{blocks}");
    let timed = err.lines().filter(|l| l.contains(" ms  ")).count();
    assert_eq!(timed, blocks, "{err}");
    assert!(err.contains("\"failed\":0,\"ok\":true"), "{err}");
    // deploy check ran the hook group, and the managed hook (Claude Code's
    // and Codex's flavour) blocked before qualification, passed after.
    assert!(
        err.contains("\"name\":\"hook_map\",\"status\":\"ok\""),
        "{err}"
    );
    let answers: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("{\"decision\":\"block\"") || *l == "{}")
        .collect();
    assert_eq!(answers.len(), 4, "{err}");
    assert!(
        answers[..2]
            .iter()
            .all(|a| a.starts_with("{\"decision\":\"block\""))
    );
    assert_eq!(&answers[2..], &["{}", "{}"]);
    let after: Vec<String> = etc.iter().map(|d| tree_state(Path::new(d))).collect();
    assert_eq!(before, after, "deploy-demo.sh did not put /etc back");
    // The users it made are gone, and so is its sudoers rule.
    let line = err
        .lines()
        .find(|l| l.starts_with("deploy-demo: operator "))
        .expect("names");
    let op = line
        .split_whitespace()
        .nth(2)
        .expect("op")
        .trim_end_matches(',');
    assert!(
        !Path::new(&format!("/home/{op}")).exists(),
        "{op} was not removed"
    );
    let gone = std::process::Command::new("id")
        .arg(op)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("id");
    assert!(!gone.success(), "{op} still exists");
}

/// Every entry under `d` (not following links): path, owner, mode and bytes;
/// `absent` when `d` does not exist.
fn tree_state(d: &Path) -> String {
    let Ok(md) = std::fs::symlink_metadata(d) else {
        return format!("{}: absent", d.display());
    };
    let mut out = format!("{} {}:{} {:o}", d.display(), md.uid(), md.gid(), md.mode());
    if md.file_type().is_symlink() {
        out += &format!(" -> {:?}", std::fs::read_link(d).ok());
    } else if md.is_file() {
        out += &format!(" {:?}", std::fs::read(d).ok());
    } else if md.is_dir() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(d)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        names.sort();
        for n in names {
            out += "\n";
            out += &tree_state(&n);
        }
    }
    out
}

/// Two users, the operator's stores and key, the wrapper and rule; removed on drop.
struct Setup {
    op: String,
    agent: String,
    root_dir: PathBuf,
    sudoers: PathBuf,
    made: Vec<String>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.sudoers);
        for u in self.made.iter().rev() {
            let _ = std::process::Command::new("userdel")
                .args(["-r", "-f", u])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.root_dir);
    }
}

impl Setup {
    fn home(&self, u: &str) -> PathBuf {
        PathBuf::from(format!("/home/{u}"))
    }
    fn data(&self) -> PathBuf {
        self.home(&self.op).join("data")
    }
    fn collector(&self) -> PathBuf {
        self.home(&self.op).join("collector")
    }
    fn bin(&self) -> PathBuf {
        self.root_dir.join("bin/agent-task")
    }
    fn wrapper(&self) -> PathBuf {
        self.root_dir.join("sbin/agent-task-collect")
    }
    fn as_user(&self, user: &str, args: &[&str]) -> Output {
        let mut c = assert_cmd::Command::new("setpriv");
        c.env_clear()
            .env("PATH", PATH)
            .env("HOME", self.home(user))
            .current_dir(self.home(user))
            .args(["--reuid", user, "--regid", user, "--init-groups", "--"])
            .arg(self.bin())
            .args(args);
        run_cmd(&mut c)
    }
    fn root(&self, args: &[&str]) -> Output {
        let mut c = assert_cmd::Command::new(self.bin());
        c.env_clear().env("PATH", PATH).args(args);
        run_cmd(&mut c)
    }
    /// `deploy check` as root; the report and the exit code.
    fn check(&self, extra: &[&str]) -> (Value, i32) {
        let data = self.data();
        let coll = self.collector();
        let wrapper = self.wrapper();
        let mut a = vec![
            "--data-dir",
            s(&data),
            "deploy",
            "check",
            "--collector-dir",
            s(&coll),
            "--operator-user",
            &self.op,
            "--agent-user",
            &self.agent,
            "--wrapper",
            s(&wrapper),
            "--sudoers",
            s(&self.sudoers),
            "--skip",
            "hooks",
        ];
        a.extend_from_slice(extra);
        let o = self.root(&a);
        assert!(o.code == 0 || o.code == 1, "{o}");
        let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o}"));
        assert_eq!(v["ok"], o.code == 0, "{o}");
        (v, o.code)
    }
}

fn status<'a>(report: &'a Value, name: &str) -> &'a str {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .and_then(|c| c["status"].as_str())
        .unwrap_or_else(|| panic!("no check {name} in {report}"))
}

fn sh_root(args: &[&str]) {
    let o = std::process::Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run");
    assert!(o.status.success(), "{args:?}: {o:?}");
}

#[test]
fn deploy_check_finds_each_break_and_reads_nothing_of_the_agents_as_root() {
    if !is_root() {
        println!("SKIP: deploy check's multi-user checks need root (useradd, setpriv, sudoers.d)");
        return;
    }
    let n = format!("{}{}", std::process::id(), rand_suffix());
    let mut d = Setup {
        op: format!("dcop{n}"),
        agent: format!("dcag{n}"),
        root_dir: PathBuf::from(format!("/tmp/agent-task-dcheck-{n}")),
        sudoers: PathBuf::from(format!("/etc/sudoers.d/agent-task-dcheck-{n}")),
        made: Vec::new(),
    };
    for sub in ["", "bin", "sbin"] {
        let p = d.root_dir.join(sub);
        std::fs::create_dir_all(&p).expect("mkdir");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::copy(bin(), d.bin()).expect("copy binary");
    std::fs::set_permissions(d.bin(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for u in [d.op.clone(), d.agent.clone()] {
        sh_root(&["useradd", "-m", "-U", "-s", "/bin/sh", &u]);
        d.made.push(u.clone());
        std::fs::set_permissions(d.home(&u), std::fs::Permissions::from_mode(0o700))
            .expect("chmod home");
    }
    let (op, agent) = (d.op.clone(), d.agent.clone());
    let data = d.data();
    let coll = d.collector();
    d.as_user(&op, &["--data-dir", s(&data), "init"]).json();
    d.as_user(&op, &["keygen", "--collector-dir", s(&coll)])
        .json();
    let wrapper = d.wrapper();
    d.root(&[
        "--data-dir",
        s(&data),
        "collector",
        "wrapper",
        "--out",
        s(&wrapper),
        "--collector-dir",
        s(&coll),
        "--binary",
        s(&d.bin()),
        "--operator-user",
        &op,
        "--agent-user",
        &agent,
        "--sudoers-out",
        s(&d.sudoers),
        "--endpoint",
        "http://127.0.0.1:9",
        "--repository",
        "demo-basic",
        "--profile",
        "default",
    ])
    .json();

    let (v, code) = d.check(&[]);
    assert_eq!(code, 0, "{v}");
    for name in [
        "users",
        "data_dir",
        "collector_dir",
        "signing_key",
        "wrapper",
        "binary",
        "sudoers",
        "agent_cannot_read_key",
        "agent_cannot_list_data_dir",
        "agent_cannot_read_authority",
        "agent_cannot_list_collector_dir",
    ] {
        assert_eq!(status(&v, name), "ok", "{name}: {v}");
    }
    assert_eq!(status(&v, "hook_map"), "skipped");
    assert_eq!(status(&v, "endpoint"), "skipped");

    // A key others may read: the mode check fails at once; whether the
    // agent can read it is tried, not guessed: behind a 0700 home it
    // cannot, behind a searchable one it can.
    let key = coll.join(agent_task::workflow::authority::admin::KEY_FILE);
    let op_home = d.home(&op);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (v, code) = d.check(&[]);
    assert_eq!(code, 1);
    assert_eq!(status(&v, "signing_key"), "fail", "{v}");
    assert_eq!(status(&v, "agent_cannot_read_key"), "ok", "{v}");
    std::fs::set_permissions(&op_home, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    std::fs::set_permissions(&coll, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    let (v, _) = d.check(&[]);
    assert_eq!(status(&v, "agent_cannot_read_key"), "fail", "{v}");
    assert_eq!(status(&v, "collector_dir"), "fail", "{v}");
    let fix = v["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "agent_cannot_read_key"))
        .map(|c| c["fix"].clone())
        .expect("fix");
    assert!(fix.as_str().is_some_and(|f| f.contains("chmod")), "{v}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::set_permissions(&coll, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::set_permissions(&op_home, std::fs::Permissions::from_mode(0o700)).expect("chmod");

    // A data directory the agent's group may list.
    sh_root(&["chgrp", &agent, s(&data)]);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    std::fs::set_permissions(&op_home, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    let (v, _) = d.check(&[]);
    assert_eq!(status(&v, "data_dir"), "fail", "{v}");
    assert_eq!(status(&v, "agent_cannot_list_data_dir"), "fail", "{v}");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::set_permissions(&op_home, std::fs::Permissions::from_mode(0o700)).expect("chmod");

    // A wrapper edited by one byte, a rule made group-readable.
    let script = std::fs::read(&wrapper).expect("wrapper");
    let mut edited = script.clone();
    edited.extend_from_slice(b"id\n");
    std::fs::write(&wrapper, &edited).expect("edit");
    std::fs::set_permissions(&d.sudoers, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let (v, _) = d.check(&[]);
    assert_eq!(status(&v, "wrapper"), "fail", "{v}");
    assert_eq!(status(&v, "binary"), "fail", "{v}");
    assert_eq!(status(&v, "sudoers"), "fail", "{v}");
    std::fs::write(&wrapper, &script).expect("restore");
    std::fs::set_permissions(&d.sudoers, std::fs::Permissions::from_mode(0o440)).expect("chmod");
    // The wrapper pins another data directory than the one checked.
    let (v, _) = d.check(&["--skip", "paths", "--skip", "agent"]);
    assert_eq!(status(&v, "wrapper"), "ok", "{v}");
    let o = d.root(&[
        "--data-dir",
        "/nonexistent",
        "deploy",
        "check",
        "--collector-dir",
        s(&coll),
        "--operator-user",
        &op,
        "--agent-user",
        &agent,
        "--wrapper",
        s(&wrapper),
        "--sudoers",
        s(&d.sudoers),
        "--skip",
        "hooks",
    ]);
    assert_eq!(o.code, 1, "{o}");
    let v: Value = serde_json::from_str(&o.stdout).expect("report");
    assert_eq!(status(&v, "wrapper"), "fail", "{v}");

    // The agent's token file is a symlink to the operator's key: root
    // never follows it, the child (as the agent) refuses the link, and no
    // byte of the key is printed.
    let tok = d.home(&agent).join("agent.token");
    std::os::unix::fs::symlink(&key, &tok).expect("symlink");
    sh_root(&["chown", "-h", &format!("{agent}:{agent}"), s(&tok)]);
    let (v, code) = d.check(&[
        "--endpoint",
        "http://127.0.0.1:9",
        "--repository",
        "demo-basic",
        "--profile",
        "default",
        "--token-file",
        s(&tok),
    ]);
    assert_eq!(code, 1);
    assert_eq!(status(&v, "endpoint"), "fail", "{v}");
    let detail = v["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "endpoint"))
        .and_then(|c| c["detail"].as_str())
        .expect("detail");
    // ELOOP: opened as the agent with O_NOFOLLOW, so nothing was read.
    assert!(
        detail.contains(&agent) && detail.contains("symbolic links"),
        "{v}"
    );
    let key_bytes = std::fs::read(&key).expect("key");
    let text = v.to_string();
    assert!(key_bytes.len() >= 32);
    assert!(
        !text.contains(&data_encoding::HEXLOWER.encode(&key_bytes[..16]))
            && !text.contains(&String::from_utf8_lossy(&key_bytes[..16]).to_string()),
        "{v}"
    );
    assert_eq!(std::fs::symlink_metadata(&tok).expect("tok").uid(), {
        let o = std::process::Command::new("id")
            .args(["-u", &agent])
            .output()
            .expect("id");
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<u32>()
            .expect("uid")
    });

    hook_checks_read_the_managed_files_as_the_hook_does(&d);

    // Not root: no probe as the agent (skipped, not passed).
    let o = d.as_user(
        &op,
        &[
            "--data-dir",
            s(&data),
            "deploy",
            "check",
            "--collector-dir",
            s(&coll),
            "--operator-user",
            &op,
            "--agent-user",
            &agent,
            "--wrapper",
            s(&wrapper),
            "--sudoers",
            s(&d.sudoers),
            "--skip",
            "hooks",
            "--skip",
            "sudoers",
        ],
    );
    let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o}"));
    assert_eq!(status(&v, "agent_cannot_read_key"), "skipped", "{v}");
    assert_eq!(status(&v, "data_dir"), "ok", "{v}");
}

/// The `hooks` group against files under the set-up's root-owned
/// directory: written by `install-stop --managed` and by hand, then
/// broken one way at a time.
fn hook_checks_read_the_managed_files_as_the_hook_does(d: &Setup) {
    let etc = d.root_dir.join("etc");
    let base = etc.join("claude-code/managed-settings.json");
    let drop_in = etc.join("claude-code/managed-settings.d/agent-task.json");
    let codex = etc.join("codex/requirements.toml");
    let map = etc.join("agent-task/hooks.json");
    let check = |extra: &[&str]| {
        let mut a = vec![
            "--data-dir",
            "/nonexistent",
            "deploy",
            "check",
            "--collector-dir",
            "/nonexistent",
            "--operator-user",
            &d.op,
            "--agent-user",
            &d.agent,
            "--wrapper",
            "/nonexistent",
            "--sudoers",
            "/nonexistent",
            "--claude-managed",
            s(&base),
            "--codex-requirements",
            s(&codex),
            "--hook-map",
            s(&map),
        ];
        for g in ["users", "paths", "config", "wrapper", "sudoers", "agent"] {
            a.extend(["--skip", g]);
        }
        a.extend_from_slice(extra);
        let o = d.root(&a);
        let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o}"));
        assert_eq!(v["ok"], o.code == 0, "{o}");
        v
    };
    let detail = |v: &Value, name: &str| -> String {
        v["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .and_then(|c| c["detail"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // Nothing installed: each fails with its fix.
    let v = check(&[]);
    for name in ["hook_claude_managed", "hook_codex_managed", "hook_map"] {
        assert_eq!(status(&v, name), "fail", "{name}: {v}");
    }
    // The hook where install-stop --managed writes it (the drop-in, not the
    // base file), and the agent's uid in the map.
    let o = d.root(&[
        "install-stop",
        "--managed",
        "--settings-file",
        s(&drop_in),
        "--requirements-file",
        s(&codex),
        "--hooks-map",
        s(&map),
    ]);
    assert_eq!(o.code, 0, "{o}");
    let uid = {
        let o = std::process::Command::new("id")
            .args(["-u", &d.agent])
            .output()
            .expect("id");
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let tok = d.home(&d.agent).join("agent.token");
    let entry = |ep: &str| {
        serde_json::json!({"users": {uid.as_str(): {"endpoint": ep, "repository": "demo-basic",
            "profile": "default", "token_file": s(&tok)}}})
        .to_string()
    };
    std::fs::create_dir_all(map.parent().expect("p")).expect("mkdir");
    std::fs::write(&map, entry("http://127.0.0.1:9")).expect("map");
    std::fs::set_permissions(&map, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let v = check(&[]);
    for name in ["hook_claude_managed", "hook_codex_managed", "hook_map"] {
        assert_eq!(status(&v, name), "ok", "{name}: {v}");
    }
    assert!(detail(&v, "hook_claude_managed").contains("managed-settings.d/agent-task.json"));
    assert!(
        detail(&v, "hook_map").contains(&format!("uid {uid}")),
        "{v}"
    );
    // With --endpoint, the entry must name that endpoint and token file.
    let ep = |url: &str| {
        check(&[
            "--endpoint",
            url,
            "--repository",
            "demo-basic",
            "--profile",
            "default",
            "--token-file",
            s(&tok),
            "--skip",
            "endpoint",
        ])
    };
    assert_eq!(status(&ep("http://127.0.0.1:9"), "hook_map"), "ok");
    let v = ep("http://127.0.0.1:10");
    assert_eq!(status(&v, "hook_map"), "fail", "{v}");
    assert!(
        detail(&v, "hook_map").contains("not http://127.0.0.1:10"),
        "{v}"
    );

    // The map as the hook refuses it: writable by the group; a symbolic
    // link to a good map; not a map; another uid only.
    std::fs::set_permissions(&map, std::fs::Permissions::from_mode(0o664)).expect("chmod");
    assert_eq!(status(&check(&[]), "hook_map"), "fail");
    std::fs::set_permissions(&map, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let real = etc.join("agent-task/real.json");
    std::fs::rename(&map, &real).expect("mv");
    std::os::unix::fs::symlink(&real, &map).expect("ln");
    assert_eq!(status(&check(&[]), "hook_map"), "fail");
    std::fs::remove_file(&map).expect("rm");
    std::fs::write(&map, "{\"users\": [1]}").expect("w");
    let v = check(&[]);
    assert_eq!(status(&v, "hook_map"), "fail");
    assert!(detail(&v, "hook_map").contains("hook_map_unsafe"), "{v}");
    std::fs::write(
        &map,
        entry("http://127.0.0.1:9").replace(&format!("\"{uid}\""), "\"4000000\""),
    )
    .expect("w");
    let v = check(&[]);
    assert_eq!(status(&v, "hook_map"), "fail");
    assert!(detail(&v, "hook_map").contains("no entry"), "{v}");

    // Claude Code: a drop-in the agents cannot read is not a hook they
    // load; another user's managed file is a failure even beside ours; a
    // base file holding the hook is found too.
    std::fs::set_permissions(&drop_in, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let v = check(&[]);
    assert_eq!(status(&v, "hook_claude_managed"), "fail", "{v}");
    assert!(
        detail(&v, "hook_claude_managed").contains("not readable"),
        "{v}"
    );
    std::fs::set_permissions(&drop_in, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let dropins = drop_in.parent().expect("dir");
    std::fs::set_permissions(dropins, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert_eq!(status(&check(&[]), "hook_claude_managed"), "fail");
    std::fs::set_permissions(dropins, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let theirs = drop_in.with_file_name("zz.json");
    std::fs::write(&theirs, "{}").expect("w");
    sh_root(&["chown", &format!("{0}:{0}", d.agent), s(&theirs)]);
    assert_eq!(status(&check(&[]), "hook_claude_managed"), "fail");
    std::fs::write(&theirs, "{\"disableAllHooks\": true}").expect("w");
    sh_root(&["chown", "root:root", s(&theirs)]);
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let v = check(&[]);
    assert_eq!(status(&v, "hook_claude_managed"), "fail", "{v}");
    assert!(
        detail(&v, "hook_claude_managed").contains("disableAllHooks"),
        "{v}"
    );
    std::fs::remove_file(&theirs).expect("rm");
    std::fs::rename(&drop_in, &base).expect("mv");
    let v = check(&[]);
    assert_eq!(status(&v, "hook_claude_managed"), "ok", "{v}");
    std::fs::remove_file(&base).expect("rm");
    assert_eq!(status(&check(&[]), "hook_claude_managed"), "fail");

    // Codex: not TOML, or the hook uninstalled.
    let good = std::fs::read(&codex).expect("r");
    std::fs::write(&codex, "[[hooks.Stop\n").expect("w");
    assert_eq!(status(&check(&[]), "hook_codex_managed"), "fail");
    std::fs::write(&codex, good).expect("w");
    assert_eq!(status(&check(&[]), "hook_codex_managed"), "ok");
    let o = d.root(&[
        "install-stop",
        "--managed",
        "--agent",
        "codex",
        "--uninstall",
        "--requirements-file",
        s(&codex),
    ]);
    assert_eq!(o.code, 0, "{o}");
    assert_eq!(status(&check(&[]), "hook_codex_managed"), "fail");
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 100_000)
        .unwrap_or(0)
}
