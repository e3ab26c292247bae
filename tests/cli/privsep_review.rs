//! Review credentials in the privilege-separated deployment (issue 28,
//! item 8; root only, `SKIP:` otherwise): root pins the operator's
//! credential file in the wrapper; the wrapper's review collect hands the
//! key to the pinned stand-in reviewer (which proves receipt with the
//! key's SHA-256 in an advisory finding, and prints the key itself on
//! stderr and in that finding, as a careless reviewer might); a command
//! collect never reads the file; the agent's user cannot read it; and the
//! key's bytes are nowhere the agent can read: not in the wrapper's
//! output, not in the retained record or transfer, not in the authority's
//! store, not in what serve answers.

use crate::common::privsep::{Deployment, Opts, deploy, s, sh_root, task_of};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/review/stand-in-claude.py"
);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        let md = std::fs::symlink_metadata(&p).expect("stat");
        if md.is_dir() {
            files_containing(&p, needle, out);
        } else if md.is_file() {
            let b = std::fs::read(&p).expect("read");
            if b.windows(needle.len()).any(|w| w == needle) {
                out.push(p);
            }
        }
    }
}

/// The operator enrolls the collector key for `review` and installs a
/// review profile pinning a root-owned copy of the stand-in, with
/// ANTHROPIC_API_KEY among its operator variables.
fn review_profile(d: &Deployment) {
    let reg = d
        .operator(&[
            "enroll",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--step",
            "review",
            "--executor",
            "laptop-review",
            "--public-key",
            &d.public_key,
        ])
        .json();
    let exe = d.bin().with_file_name("stand-in-claude.py");
    std::fs::copy(STAND_IN, &exe).expect("copy stand-in");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    d.operator(&[
        "profile",
        "install",
        "--registration",
        reg["registration_id"].as_str().expect("reg"),
        "--step",
        "review",
        "--runtime",
        "review",
        "--executable",
        s(&exe),
        "--model",
        "claude-sonnet-4-6",
        "--env",
        "ANTHROPIC_API_KEY",
    ])
    .json();
}

#[test]
fn the_pinned_reviewer_gets_the_credential_and_the_agent_never_sees_it() {
    // A key unique to this run, so that finding it anywhere is a leak.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_nanos();
    let key = format!("sk-ant-api03-test{nanos}-{}", std::process::id());
    let Some(d) = deploy(
        "the review credential test",
        &Opts {
            workflow: Some("review.json"),
            credential: Some(&format!(
                "# the reviewer's provider key\nANTHROPIC_API_KEY={key}\n"
            )),
        },
    ) else {
        return;
    };
    let cred = d.credential.clone().expect("credential");
    review_profile(&d);
    let (op, agent) = (d.op.clone(), d.agent.clone());

    // The agent's user cannot read the file.
    let o = d.agent_sh("cat \"$1\"", &[s(&cred)]);
    assert_ne!(o.code, 0, "the agent read the credential: {o}");
    assert!(!o.stdout.contains(&key), "{o}");

    // Root refuses to pin a credential file the operator does not keep
    // private: readable by others, or the agent's.
    let other = d.home(&op).join("loose.env");
    std::fs::write(&other, format!("ANTHROPIC_API_KEY={key}\n")).expect("write");
    sh_root(&["chown", &format!("{op}:{op}"), s(&other)]);
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let root_dir = d
        .bin()
        .parent()
        .and_then(Path::parent)
        .expect("root dir")
        .to_owned();
    let refused_out = root_dir.join("sbin/refused-wrapper");
    let rule = format!("/etc/sudoers.d/agent-task-refused-{}", d.op);
    let w = d.write_wrapper(
        &refused_out,
        &d.bin(),
        &d.data(),
        &agent,
        &rule,
        &["--review-credential-file", s(&other)],
    );
    w.error("insecure_permissions", 77);
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    sh_root(&["chown", &format!("{agent}:{agent}"), s(&other)]);
    let w = d.write_wrapper(
        &refused_out,
        &d.bin(),
        &d.data(),
        &agent,
        &rule,
        &["--review-credential-file", s(&other)],
    );
    w.error("insecure_permissions", 77);
    assert!(!refused_out.exists() && !Path::new(&rule).exists());

    // The candidate asks the stand-in to prove receipt (a comment in a
    // reviewed file: the candidate controls it, the reviewer reads it).
    let (id, cp, tests_desc) = d.agent_change_with(
        "cred",
        "#!/bin/sh\n# Adds two integers. STAND-IN:CREDENTIAL\necho $(($1 + $2))\n",
    );
    // A command collect never reads the file: it passes with the file
    // unreadable even to the operator.
    std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let t = d.sudo(&[s(&d.wrapper)], &d.stdin_of(&tests_desc)).json();
    assert_eq!(t["outcome"], "passed", "{t}");
    // A review collect does read it: refused, with nothing dispatched,
    // while the file is not the operator's private file.
    let review = task_of(&cp, "review");
    let desc = d.home(&agent).join("review.json");
    d.agent_cmd(
        &d.addr,
        &[
            "collector-claim",
            &review,
            "--request-id",
            "rc-review",
            "--descriptor-out",
            s(&desc),
        ],
        b"",
    )
    .json();
    let review_desc = std::fs::read(&desc).expect("descriptor");
    std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let refused = d.sudo(&[s(&d.wrapper)], &d.stdin_of(&review_desc));
    refused.error("insecure_permissions", 77);
    assert!(!refused.stdout.contains(&key) && !refused.stderr.contains(&key));
    std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    // The real review through the wrapper: the stand-in got the key.
    let col = d.sudo(&[s(&d.wrapper)], &d.stdin_of(&review_desc));
    assert!(
        !col.stdout.contains(&key),
        "the key is in the wrapper's output: {col}"
    );
    assert!(
        !col.stderr.contains(&key),
        "the key is in the wrapper's stderr: {col}"
    );
    let v: Value = col.json();
    assert_eq!(v["outcome"], "passed", "{v}");
    let digest = hex(&{
        use sha2::Digest;
        sha2::Sha256::digest(key.as_bytes())
    });
    let findings = v["findings"].to_string();
    assert!(
        findings.contains(&format!("credential sha256 {digest} value [redacted]")),
        "the stand-in did not prove receipt (or the value was not scrubbed): {v}"
    );

    // What serve tells the agent afterwards.
    let q = d.agent_cmd(&d.addr, &["qualify", "--change", &id], b"");
    assert!(!q.stdout.contains(&key) && !q.stderr.contains(&key), "{q}");
    let n = d.agent_cmd(&d.addr, &["next", "--change", &id], b"");
    assert!(!n.stdout.contains(&key) && !n.stderr.contains(&key), "{n}");
    // A replay of the spent descriptor returns the retained outcome, scrubbed.
    let r = d.sudo(&[s(&d.wrapper)], &d.stdin_of(&review_desc));
    assert_eq!(r.json()["upload"]["replay"], true, "{r}");
    assert!(!r.stdout.contains(&key) && !r.stderr.contains(&key), "{r}");

    // Nowhere in the authority's store or the collector's retained state
    // (record, transfer, call journal, upload answer).
    let mut hits = Vec::new();
    files_containing(&d.data(), key.as_bytes(), &mut hits);
    files_containing(&d.collector(), key.as_bytes(), &mut hits);
    assert!(hits.is_empty(), "the key's bytes are stored in {hits:?}");
}
