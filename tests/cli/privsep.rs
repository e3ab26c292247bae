//! The privilege-separated deployment with real Unix users (root only;
//! skipped with a printed `SKIP:` reason otherwise): an operator user owns
//! the data directory, the collector directory and the signing key and
//! runs `serve`; an agent user holds only its token and runs its whole
//! loop through the endpoint, collecting through the root-owned sudo
//! wrapper. The agent's attempts to read the key, write collector or store
//! state, or get `collect` to sign what it did not produce all fail.
//! docs/security.md, "Privilege-separated deployment".

use crate::common::privsep::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

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
    // It kept bubblewrap's digest in the operator's collector directory,
    // the operator's own and private (the agent cannot even read it; the
    // write sweep below covers it too).
    {
        use std::os::unix::fs::MetadataExt;
        let cache = d.collector().join("runtime-digests.json");
        let md = std::fs::symlink_metadata(&cache).expect("digest cache");
        let dir = std::fs::metadata(d.collector()).expect("collector dir");
        assert!(md.is_file());
        assert_eq!(md.uid(), dir.uid());
        assert_eq!(md.mode() & 0o777, 0o600);
        let o = d.agent_sh("cat \"$1\"", &[s(&cache)]);
        assert_ne!(o.code, 0, "the agent read the digest cache: {o}");
    }
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
    crate::common::hook_stop::passed("claude", &hook);

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
