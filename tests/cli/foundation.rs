//! The foundation: data directory, permissions, lock, schema, CAS, output.

use crate::common::{TestEnv, bin, run_cmd};
use std::os::unix::fs::PermissionsExt;

#[test]
fn init_creates_private_dir_and_info_reports() {
    let env = TestEnv::new();
    let out = env.run(&["init"]).json();
    assert_eq!(out["created"], true);
    let id = out["data_dir_id"].as_str().expect("id").to_owned();
    let md = std::fs::metadata(&env.data_dir).expect("dir");
    assert_eq!(md.permissions().mode() & 0o777, 0o700);
    for f in ["lock", "authority.sqlite"] {
        let m = std::fs::metadata(env.data_dir.join(f))
            .expect(f)
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(m, 0o600, "{f}");
    }
    // init is idempotent and keeps the identity
    let again = env.run(&["init"]).json();
    assert_eq!(again["created"], false);
    assert_eq!(again["data_dir_id"], id.as_str());
    let info = env.run(&["info"]).json();
    assert_eq!(info["data_dir_id"], id.as_str());
    let latest = agent_task::workflow::authority::schema::SPEC
        .migrations
        .last()
        .map(|m| m.version)
        .expect("migrations");
    assert_eq!(info["databases"]["authority"]["schema_version"], latest);
    assert_eq!(info["cas"]["objects"], 0);
    assert_eq!(info["blob_store"], "local", "the default blob store");
}

#[test]
fn info_on_missing_dir_fails_and_creates_nothing() {
    let env = TestEnv::new();
    env.run(&["info"]).error("not_initialized", 66);
    assert!(!env.data_dir.exists());
}

#[test]
fn symlinked_data_dir_is_refused() {
    let env = TestEnv::init();
    let link = env.path("link");
    std::os::unix::fs::symlink(&env.data_dir, &link).expect("symlink");
    let out = run_cmd(env.bare_cmd().arg("--data-dir").arg(&link).arg("info"));
    let v = out.error("symlink_refused", 77);
    assert!(v["details"]["fix"].is_string());
    let out = run_cmd(env.bare_cmd().arg("--data-dir").arg(&link).arg("init"));
    out.error("symlink_refused", 77);
}

#[test]
fn group_readable_dir_and_file_are_refused() {
    let env = TestEnv::init();
    std::fs::set_permissions(&env.data_dir, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    let v = env.run(&["info"]).error("insecure_permissions", 77);
    assert!(
        v["details"]["fix"]
            .as_str()
            .expect("fix")
            .starts_with("chmod 700")
    );
    std::fs::set_permissions(&env.data_dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let db = env.data_dir.join("authority.sqlite");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    env.run(&["info"]).error("insecure_permissions", 77);
    env.run(&["init"]).error("insecure_permissions", 77);
}

#[test]
fn newer_schema_is_refused() {
    let env = TestEnv::init();
    let conn = rusqlite::Connection::open(env.data_dir.join("authority.sqlite")).expect("open");
    conn.execute(
        "INSERT INTO schema_migrations VALUES (999, 'from the future', 'x')",
        [],
    )
    .expect("insert");
    drop(conn);
    env.run(&["init"]).error("schema_too_new", 78);
    let v = env.run(&["info"]).json();
    assert_eq!(v["databases"]["authority"]["schema_version"], 999);
    assert_eq!(v["databases"]["authority"]["status"], "too_new");
}

#[test]
fn unknown_flag_is_usage_json() {
    let env = TestEnv::new();
    let v = env.run(&["--no-such-flag"]).error("usage", 64);
    assert!(
        v["details"]["usage"]
            .as_str()
            .expect("usage")
            .contains("Usage")
    );
    env.run(&[]).error("usage", 64);
    let help = env.run(&["--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("Usage"));
}

#[test]
fn second_writer_gets_busy_within_timeout() {
    let env = TestEnv::init();
    // Hold the lock from this process (flock is per open file description).
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.data_dir.join("lock"))
        .expect("lock file");
    f.lock().expect("lock");
    // Bounded wait: the command gives up with `busy` instead of hanging.
    let v = env
        .run(&["--lock-timeout-ms", "300", "init"])
        .error("busy", 75);
    assert_eq!(v["details"]["timeout_ms"], 300);
    // Reads do not take the lock.
    env.run(&["info"]).json();
    f.unlock().expect("unlock");
    env.run(&["init"]).json();
}

#[test]
fn binary_path_resolves() {
    assert!(bin().exists());
}

#[test]
fn info_and_fsck_change_nothing() {
    let env = TestEnv::init();
    let blob = env.path("b");
    std::fs::write(&blob, b"x").expect("write");
    env.run(&["cas", "put", blob.to_str().expect("utf8")])
        .json();
    let before = crate::common::snapshot_files(&env.data_dir);
    env.run(&["info"]).json();
    env.run(&["cas", "fsck"]).json();
    assert_eq!(before, crate::common::snapshot_files(&env.data_dir));
}

#[test]
fn test_build_clock_override() {
    let env = TestEnv::new();
    crate::common::run_cmd(
        env.cmd()
            .env("AGENT_TASK_TEST_NOW", "2030-01-02T03:04:05Z")
            .arg("init"),
    )
    .json();
    assert_eq!(
        env.run(&["info"]).json()["created_at"],
        "2030-01-02T03:04:05.000Z"
    );
    crate::common::run_cmd(
        env.cmd()
            .env("AGENT_TASK_TEST_NOW", "yesterday")
            .arg("info"),
    )
    .error("invalid_input", 65);
}
