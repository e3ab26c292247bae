//! A forge per repository (issue 32, item 1), through the real binary:
//! `repo forge set|show|remove` and `repo list`; the credential is a file
//! the operator owns (0600, a regular file, not a link, absolute), checked
//! at set; its content is never printed, in an answer or an error; the
//! URLs are https (http only on loopback) and carry no credentials; a
//! GitHub App's key must be an RSA key.

use crate::common::{Output, TestEnv};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const SECRET: &str = "ghp_supersecretforgetoken0123456789";

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// An initialised data directory with repository `acme/api`.
fn env_with_repo() -> TestEnv {
    let env = TestEnv::init();
    let src = env.path("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(src.join("README"), "hello\n").expect("write");
    env.run(&["repo", "add", "acme/api", "--source", s(&src)])
        .json();
    env
}

fn private_file(env: &TestEnv, name: &str, bytes: &[u8]) -> PathBuf {
    let p = env.path(name);
    std::fs::write(&p, bytes).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p
}

fn set(env: &TestEnv, extra: &[&str]) -> Output {
    let mut args = vec![
        "repo",
        "forge",
        "set",
        "--repo",
        "acme/api",
        "--kind",
        "github",
        "--api-url",
        "https://api.github.com/",
        "--project",
        "acme/api",
        "--remote-url",
        "https://github.com/acme/api.git",
    ];
    args.extend(extra);
    env.run(&args)
}

fn no_secret(o: &Output) {
    assert!(
        !o.stdout.contains(SECRET) && !o.stderr.contains(SECRET),
        "the secret leaked: {o}"
    );
}

#[test]
fn a_forge_is_set_shown_listed_and_removed_without_its_secret() {
    let env = env_with_repo();
    let tok = private_file(&env, "token", format!("{SECRET}\n").as_bytes());
    let o = set(&env, &["--token-file", s(&tok)]);
    no_secret(&o);
    let f = o.json()["forge"].clone();
    assert_eq!(f["repo_id"], "acme/api");
    assert_eq!(f["kind"], "github");
    assert_eq!(f["api_url"], "https://api.github.com");
    assert_eq!(f["project"], "acme/api");
    assert_eq!(f["remote_url"], "https://github.com/acme/api.git");
    assert_eq!(
        f["credential"],
        json!({"kind": "token_file", "path": s(&tok)})
    );
    let shown = env.run(&["repo", "forge", "show", "--repo", "acme/api"]);
    no_secret(&shown);
    assert_eq!(shown.json()["forge"], f);
    let list = env.run(&["repo", "list"]);
    no_secret(&list);
    let list = list.json();
    assert_eq!(list["repositories"][0]["repo_id"], "acme/api");
    assert_eq!(list["repositories"][0]["forge"], f);

    // Set again: replaced (a GitLab project by id this time).
    let o = env
        .run(&[
            "repo",
            "forge",
            "set",
            "--repo",
            "acme/api",
            "--kind",
            "gitlab",
            "--api-url",
            "https://gitlab.example/api/v4",
            "--project",
            "4242",
            "--remote-url",
            "http://127.0.0.1:9/acme/api.git",
            "--token-file",
            s(&tok),
        ])
        .json();
    assert_eq!(o["forge"]["kind"], "gitlab");
    assert_eq!(o["forge"]["project"], "4242");

    let removed = env
        .run(&["repo", "forge", "remove", "--repo", "acme/api"])
        .json();
    assert_eq!(removed["forge"]["kind"], "gitlab");
    let list = env.run(&["repo", "list"]).json();
    assert!(list["repositories"][0].get("forge").is_none(), "{list}");
    env.run(&["repo", "forge", "show", "--repo", "acme/api"])
        .error("not_found", 66);
    env.run(&["repo", "forge", "remove", "--repo", "acme/api"])
        .error("not_found", 66);
}

#[test]
fn the_credential_file_must_be_the_operators_own_private_regular_file() {
    let env = env_with_repo();
    let tok = private_file(&env, "token", SECRET.as_bytes());

    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = set(&env, &["--token-file", s(&tok)]);
    no_secret(&o);
    o.error("insecure_permissions", 77);
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    let link = env.path("token-link");
    std::os::unix::fs::symlink(&tok, &link).expect("symlink");
    let o = set(&env, &["--token-file", s(&link)]);
    no_secret(&o);
    o.error("symlink_refused", 77);

    set(&env, &["--token-file", "token"]).error("invalid_input", 65);
    set(&env, &["--token-file", s(&env.path("absent"))]).error("config", 78);
    let dir = env.path("a-dir");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    set(&env, &["--token-file", s(&dir)]).error("config", 78);

    // Two lines, an empty file, an oversized file: refused, never echoed.
    for (name, body) in [
        (
            "two-lines",
            format!("{SECRET}\nsecond {SECRET}\n").into_bytes(),
        ),
        ("empty", Vec::new()),
        ("huge", SECRET.repeat(1000).into_bytes()),
    ] {
        let p = private_file(&env, name, &body);
        let o = set(&env, &["--token-file", s(&p)]);
        no_secret(&o);
        o.error("config", 78);
    }
    // Nothing was stored by any refusal.
    env.run(&["repo", "forge", "show", "--repo", "acme/api"])
        .error("not_found", 66);
}

#[test]
fn urls_are_https_or_loopback_and_carry_no_credentials() {
    let env = env_with_repo();
    let tok = private_file(&env, "token", SECRET.as_bytes());
    let with = |api: &str, remote: &str| {
        env.run(&[
            "repo",
            "forge",
            "set",
            "--repo",
            "acme/api",
            "--kind",
            "github",
            "--api-url",
            api,
            "--project",
            "acme/api",
            "--remote-url",
            remote,
            "--token-file",
            s(&tok),
        ])
    };
    for (api, remote) in [
        ("http://api.github.com", "https://github.com/acme/api.git"),
        ("https://api.github.com", "http://github.com/acme/api.git"),
        (
            "https://api.github.com",
            "ssh://git@github.com/acme/api.git",
        ),
        ("https://api.github.com", "/srv/git/api.git"),
        (
            "https://api.github.com",
            "https://x-access-token:ghp_inurl@github.com/acme/api.git",
        ),
        (
            "https://api.github.com?x=1",
            "https://github.com/acme/api.git",
        ),
    ] {
        let o = with(api, remote);
        assert!(!o.stderr.contains("ghp_inurl"), "{o}");
        o.error("invalid_input", 65);
    }
    with("http://127.0.0.1:8080", "http://localhost:9418/r.git").json();
}

#[test]
fn projects_kinds_and_repositories_are_checked() {
    let env = env_with_repo();
    let tok = private_file(&env, "token", SECRET.as_bytes());
    // `set` names --project already; a second one is a clap usage error,
    // so build the call by hand.
    let o = env.run(&[
        "repo",
        "forge",
        "set",
        "--repo",
        "acme/api",
        "--kind",
        "github",
        "--api-url",
        "https://api.github.com",
        "--project",
        "acme",
        "--remote-url",
        "https://github.com/acme/api.git",
        "--token-file",
        s(&tok),
    ]);
    o.error("invalid_input", 65);
    let o = env.run(&[
        "repo",
        "forge",
        "set",
        "--repo",
        "nobody/here",
        "--kind",
        "github",
        "--api-url",
        "https://api.github.com",
        "--project",
        "acme/api",
        "--remote-url",
        "https://github.com/acme/api.git",
        "--token-file",
        s(&tok),
    ]);
    o.error("not_found", 66);
    // No credential, or both kinds: usage errors from the parser.
    let o = set(&env, &[]);
    assert_eq!(o.code, 64, "{o}");
    let o = set(&env, &["--token-file", s(&tok), "--app-id", "1"]);
    assert_eq!(o.code, 64, "{o}");
    let o = set(&env, &["--app-id", "1"]);
    assert_eq!(o.code, 64, "{o}");
}

/// An RSA key made by `openssl genrsa` (PKCS#1 when `traditional`, as
/// GitHub hands App keys out; PKCS#8 otherwise), 0600.
pub fn rsa_key(env: &TestEnv, name: &str, traditional: bool) -> PathBuf {
    let p = env.path(name);
    let mut c = std::process::Command::new("openssl");
    c.args(["genrsa"]);
    if traditional {
        c.arg("-traditional");
    }
    let out = c.args(["-out", s(&p), "2048"]).output().expect("openssl");
    assert!(out.status.success(), "{out:?}");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p
}

#[test]
fn a_github_app_is_its_id_an_rsa_key_file_and_an_installation() {
    let env = env_with_repo();
    for (name, traditional) in [("app-pkcs1.pem", true), ("app-pkcs8.pem", false)] {
        let key = rsa_key(&env, name, traditional);
        let f = set(
            &env,
            &[
                "--app-id",
                "4711",
                "--app-key-file",
                s(&key),
                "--installation-id",
                "99",
            ],
        )
        .json();
        assert_eq!(
            f["forge"]["credential"],
            json!({"kind": "github_app", "app_id": 4711, "key_file": s(&key), "installation_id": 99})
        );
        let key_text = std::fs::read_to_string(&key).expect("read");
        let body = key_text.lines().nth(1).expect("a base64 line");
        let list = env.run(&["repo", "list"]);
        assert!(!list.stdout.contains(body), "{list}");
    }
    // Not a key: refused without echoing the file.
    let tok = private_file(&env, "not-a-key.pem", SECRET.as_bytes());
    let o = set(
        &env,
        &[
            "--app-id",
            "4711",
            "--app-key-file",
            s(&tok),
            "--installation-id",
            "99",
        ],
    );
    no_secret(&o);
    o.error("config", 78);
    // An app is GitHub's.
    let key = rsa_key(&env, "gl.pem", true);
    let o = env.run(&[
        "repo",
        "forge",
        "set",
        "--repo",
        "acme/api",
        "--kind",
        "gitlab",
        "--api-url",
        "https://gitlab.example/api/v4",
        "--project",
        "g/api",
        "--remote-url",
        "https://gitlab.example/g/api.git",
        "--app-id",
        "1",
        "--app-key-file",
        s(&key),
        "--installation-id",
        "2",
    ]);
    o.error("invalid_input", 65);
    let _: Value = env
        .run(&["repo", "forge", "show", "--repo", "acme/api"])
        .json();
}
