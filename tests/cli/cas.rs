//! The content-addressed store through the binary: corruption detected and
//! repaired by a re-put; a SIGKILL mid-put leaves no partial object.

use crate::common::TestEnv;
use std::io::Write;
use std::process::Stdio;

fn object_path(env: &TestEnv, digest: &str) -> std::path::PathBuf {
    env.data_dir
        .join("cas/sha256")
        .join(&digest[..2])
        .join(&digest[2..])
}

#[test]
fn corrupt_object_is_detected_then_repaired_by_reput() {
    let env = TestEnv::init();
    let src = env.path("blob");
    std::fs::write(&src, b"the original bytes").expect("write");
    let put = env.run(&["cas", "put", src.to_str().expect("utf8")]).json();
    let digest = put["digest"].as_str().expect("digest").to_owned();
    assert_eq!(put["created"], true);

    std::fs::write(object_path(&env, &digest), b"the 0riginal bytes").expect("corrupt");
    let out = env.path("out");
    let v = env
        .run(&["cas", "cat", &digest, "--out", out.to_str().expect("utf8")])
        .error("integrity_error", 65);
    assert_eq!(v["details"]["digest"], digest.as_str());
    assert!(!out.exists(), "no byte of a corrupt object is returned");
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], serde_json::json!([digest]));

    let again = env.run(&["cas", "put", src.to_str().expect("utf8")]).json();
    assert_eq!(again["repaired"], true);
    env.run(&["cas", "cat", &digest, "--out", out.to_str().expect("utf8")])
        .json();
    assert_eq!(std::fs::read(&out).expect("read"), b"the original bytes");
    assert_eq!(
        env.run(&["cas", "fsck"]).json()["corrupt"],
        serde_json::json!([])
    );
}

#[test]
fn unknown_digest_and_bad_digest() {
    let env = TestEnv::init();
    let out = env.path("o");
    env.run(&[
        "cas",
        "cat",
        &"0".repeat(64),
        "--out",
        out.to_str().expect("utf8"),
    ])
    .error("not_found", 66);
    env.run(&["cas", "cat", "ABC", "--out", out.to_str().expect("utf8")])
        .error("invalid_input", 65);
}

#[test]
fn sigkill_during_large_put_leaves_no_partial_object() {
    let env = TestEnv::init();
    let mut child = env
        .std_cmd()
        .args(["cas", "put", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let chunk = vec![0x5au8; 1 << 20];
    // Feed 16 MiB, then wait until the temp file holds bytes: the put is in
    // the middle of streaming.
    for _ in 0..16 {
        stdin.write_all(&chunk).expect("feed");
    }
    let tmp = env.data_dir.join("cas/tmp");
    let mut seen = false;
    for _ in 0..2000 {
        let grown = std::fs::read_dir(&tmp)
            .expect("tmp dir")
            .filter_map(|e| e.ok())
            .any(|e| e.metadata().map(|m| m.len() > 0).unwrap_or(false));
        if grown {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(seen, "the put never started writing");
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(!status.success());
    drop(stdin);

    // No object is visible, and the store verifies clean.
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["checked"], 0, "{fsck}");
    assert_eq!(fsck["corrupt"], serde_json::json!([]));
    // The same bytes put again in full become one intact object.
    let full = env.path("full");
    std::fs::write(&full, vec![0x5au8; 32 << 20]).expect("write");
    let put = env
        .run(&["cas", "put", full.to_str().expect("utf8")])
        .json();
    assert_eq!(put["size"], 32u64 << 20);
    assert_eq!(env.run(&["cas", "fsck"]).json()["checked"], 1);
}

/// Orphan temp files of a killed put: a writer (holding the write lock)
/// removes those older than an hour; a young one (a put that may still be
/// running) stays; read commands and the Stop hook never touch them.
#[test]
fn old_temp_files_are_swept_by_writers_only() {
    let s = crate::common::task_support::Setup::new();
    let env = &s.env;
    let tmp = env.data_dir.join("cas/tmp");
    let now = std::time::SystemTime::now();
    let plant = |name: &str, age: u64| {
        let p = tmp.join(name);
        std::fs::File::create(&p)
            .expect("create")
            .set_modified(now - std::time::Duration::from_secs(age))
            .expect("mtime");
        p
    };
    let old = plant("put-killed-long-ago", 2 * 3600);
    let young = plant("put-still-running", 30);
    assert_eq!(env.run(&["info"]).json()["cas"]["temp_files"], 2);
    // Reads: info, fsck, cat, a data query, status reads and the Stop hook.
    env.run(&["cas", "fsck"]).json();
    let out = env.path("cat-out");
    env.run(&[
        "cas",
        "cat",
        &"0".repeat(64),
        "--out",
        out.to_str().expect("p"),
    ])
    .error("not_found", 66);
    s.agent(&["next", "--workspace", s.ws()]).json();
    let stdin = std::fs::read(crate::common::repo_root().join("fixtures/hooks/claude-stop.json"))
        .expect("fixture");
    let mut c = env.cmd();
    c.arg("--token-file")
        .arg(&s.token)
        .args(["task-stop", &s.change_id, "--workspace", s.ws()])
        .write_stdin(stdin);
    let hook = crate::common::run_cmd(&mut c);
    assert_eq!(hook.code, 0, "{hook}");
    assert!(old.exists() && young.exists(), "a read swept a temp file");
    // A writer sweeps the old one only.
    let src = env.path("blob");
    std::fs::write(&src, b"bytes").expect("write");
    env.run(&["cas", "put", src.to_str().expect("utf8")]).json();
    assert!(!old.exists(), "the writer left an hour-old temp file");
    assert!(young.exists(), "the writer removed a young temp file");
    assert_eq!(env.run(&["info"]).json()["cas"]["temp_files"], 1);
}
