//! A clock skewed past SigV4's window: the agent-task process runs under
//! Debian's `faketime` one hour ahead of the S3 server (`s3s-fs`), whose
//! refusal is `blob_store_unavailable` with the HTTP status in the
//! details and nothing committed; the same command without the skew then
//! succeeds. Skipped with a message when `faketime` is missing, unless
//! `AGENT_TASK_REQUIRE_INTEROP=1` (scripts/install-deps.sh installs it).

use crate::common::data_core::{all_changes, collect_run};
use crate::common::s3::write_private;
use crate::common::s3::{BUCKET, Impl, SECRET_KEY, Server, big, config_text, server_bin_of};
use crate::common::{TestEnv, bin, run_cmd};
use serde_json::json;

fn faketime() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("faketime"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "faketime is missing but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-deps.sh)"
        );
        eprintln!("skipped: faketime is not installed (scripts/install-deps.sh installs it)");
    }
    found
}

#[test]
fn a_clock_an_hour_ahead_of_the_server_is_refused_and_commits_nothing() {
    let Some(faketime) = faketime() else {
        return;
    };
    let Some(server_bin) = server_bin_of(Impl::S3s) else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start(server_bin, env.path("s3root"));
    write_private(
        &env.data_dir.join("blob-store.json"),
        &config_text(&env, &server.endpoint(), BUCKET, SECRET_KEY, &json!({})),
    );
    let input = json!({"text": big("skewed")}).to_string();
    let args = [
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--input",
        input.as_str(),
    ];
    // The program run is faketime, with agent-task as its argument.
    let mut skewed = assert_cmd::Command::new(&faketime);
    skewed
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.path(""))
        .args(["-f", "+1h"])
        .arg(bin())
        .arg("--data-dir")
        .arg(&env.data_dir)
        .args(args);
    let skewed = run_cmd(&mut skewed);
    let e = skewed.error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["status"], 403, "{e}");
    assert!(all_changes(&env).is_empty(), "nothing committed");
    assert_eq!(server.objects(), 0);
    let ok = collect_run(&env, "default", &json!({"text": big("skewed")})).json();
    assert_eq!(ok["records"].as_array().map(Vec::len), Some(1));
    assert_eq!(server.objects(), 1);
}
