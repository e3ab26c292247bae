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

/// Runs `agent-task forge credential --repo acme/api ACTION` with `stdin`
/// (what git sends its credential helper).
fn helper(env: &TestEnv, action: &str, stdin: &str) -> Output {
    env.run_stdin(
        &["forge", "credential", "--repo", "acme/api", action],
        stdin.as_bytes(),
    )
}

#[test]
fn the_credential_helper_answers_only_for_the_forge_remote() {
    let env = env_with_repo();
    let tok = private_file(&env, "token", format!("{SECRET}\n").as_bytes());
    env.run(&[
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
        "acme/api",
        "--remote-url",
        "http://127.0.0.1:9/acme/api.git",
        "--token-file",
        s(&tok),
    ])
    .json();
    let ask = "protocol=http\nhost=127.0.0.1:9\npath=acme/api.git\n\n";
    let o = helper(&env, "get", ask);
    assert_eq!(o.code, 0, "{o}");
    assert_eq!(
        o.stdout,
        format!("username=x-access-token\npassword={SECRET}\n")
    );
    // Another host, another path, another scheme, no path: nothing given.
    for other in [
        "protocol=http\nhost=127.0.0.2:9\npath=acme/api.git\n",
        "protocol=http\nhost=127.0.0.1:9\npath=acme/other.git\n",
        "protocol=https\nhost=127.0.0.1:9\npath=acme/api.git\n",
        "protocol=http\nhost=127.0.0.1:9\n",
        "protocol=http\nhost=127.0.0.1:10\npath=acme/api.git\n",
    ] {
        let o = helper(&env, "get", other);
        no_secret(&o);
        o.error("forbidden", 77);
    }
    // store and erase: nothing is stored, nothing is answered.
    for action in ["store", "erase"] {
        let o = helper(
            &env,
            action,
            &format!("{ask}username=x\npassword={SECRET}\n"),
        );
        assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{o}");
    }
    // The file is checked on every use: loosened, it is refused.
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let o = helper(&env, "get", ask);
    no_secret(&o);
    o.error("insecure_permissions", 77);
    // GitLab's user for a token.
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    env.run(&[
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
        "acme/api",
        "--remote-url",
        "http://127.0.0.1:9/acme/api.git",
        "--token-file",
        s(&tok),
    ])
    .json();
    assert!(
        helper(&env, "get", ask)
            .stdout
            .starts_with("username=oauth2\n")
    );
}

/// Verifies a JWT's RS256 signature with the public key of `key` (openssl).
fn verify_rs256(env: &TestEnv, key: &Path, jwt: &str) -> (Value, Value) {
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "{jwt}");
    let b64 = data_encoding::BASE64URL_NOPAD;
    let header: Value =
        serde_json::from_slice(&b64.decode(parts[0].as_bytes()).expect("b64")).expect("json");
    let claims: Value =
        serde_json::from_slice(&b64.decode(parts[1].as_bytes()).expect("b64")).expect("json");
    let pubkey = env.path("app.pub");
    let out = std::process::Command::new("openssl")
        .args(["rsa", "-in", s(key), "-pubout", "-out", s(&pubkey)])
        .output()
        .expect("openssl");
    assert!(out.status.success(), "{out:?}");
    let (input, sig) = (env.path("jwt.input"), env.path("jwt.sig"));
    std::fs::write(&input, format!("{}.{}", parts[0], parts[1])).expect("w");
    std::fs::write(&sig, b64.decode(parts[2].as_bytes()).expect("b64")).expect("w");
    let out = std::process::Command::new("openssl")
        .args([
            "dgst",
            "-sha256",
            "-verify",
            s(&pubkey),
            "-signature",
            s(&sig),
            s(&input),
        ])
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "the JWT's signature does not verify: {out:?}"
    );
    (header, claims)
}

#[test]
fn a_github_app_mints_an_installation_token_for_each_use_and_hostile_answers_are_typed() {
    use crate::common::origin::{Origin, Reply};
    let env = env_with_repo();
    let key = rsa_key(&env, "app.pem", true);
    let mut origin = Origin::start();
    env.run(&[
        "repo",
        "forge",
        "set",
        "--repo",
        "acme/api",
        "--kind",
        "github",
        "--api-url",
        &origin.url(),
        "--project",
        "acme/api",
        "--remote-url",
        "http://127.0.0.1:9/acme/api.git",
        "--app-id",
        "4711",
        "--app-key-file",
        s(&key),
        "--installation-id",
        "99",
    ])
    .json();
    let ask = "protocol=http\nhost=127.0.0.1:9\npath=acme/api.git\n\n";
    type Answer = Box<dyn Fn() -> Reply + Send>;
    let cases: Vec<(&str, Answer)> = vec![
        (
            "minted",
            Box::new(|| {
                Reply::new(201, r#"{"token":"ghs_minted42","expires_at":"2026-12-05T01:00:00Z","permissions":{"contents":"write"}}"#)
                    .header("content-type", "application/json")
            }),
        ),
        (
            "401",
            Box::new(|| Reply::new(401, r#"{"message":"Bad credentials"}"#)),
        ),
        ("403", Box::new(|| Reply::new(403, "{}"))),
        ("404", Box::new(|| Reply::new(404, "{}"))),
        // A 5xx is retried: three attempts, then the error.
        ("500", Box::new(|| Reply::new(500, "oops"))),
        ("502", Box::new(|| Reply::new(502, "oops"))),
        ("503", Box::new(|| Reply::new(503, "oops"))),
        (
            "redirect",
            Box::new(|| Reply::new(307, "").header("location", "http://127.0.0.2:1/steal")),
        ),
        (
            "huge",
            Box::new(|| Reply::new(201, vec![b' '; 10 << 20]).chunked()),
        ),
        (
            "not a token",
            Box::new(|| Reply::new(201, r#"{"token":"has space"}"#)),
        ),
    ];
    let requests = origin.requests();
    let answered = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for ((_, reply), x) in cases.iter().zip(requests) {
            seen.push((
                x.method.clone(),
                x.url.clone(),
                x.header("authorization").unwrap_or_default().to_owned(),
                x.header("accept").unwrap_or_default().to_owned(),
            ));
            x.respond(reply());
        }
        seen
    });
    let mut outs = Vec::new();
    for _ in 0..8 {
        outs.push(helper(&env, "get", ask));
    }
    assert_eq!(outs.len(), 8);
    let seen = answered.join().expect("fake");
    assert_eq!(outs[0].code, 0, "{}", outs[0]);
    assert_eq!(
        outs[0].stdout,
        "username=x-access-token\npassword=ghs_minted42\n"
    );
    for (i, status) in [
        (1, 401),
        (2, 403),
        (3, 404),
        (4, 503),
        (5, 307),
        (6, 201),
        (7, 201),
    ] {
        let e = outs[i].error("forge_unavailable", 69);
        assert_eq!(e["details"]["forge_status"], status, "{}", outs[i]);
    }
    for (method, url, auth, accept) in &seen {
        assert_eq!(method, "POST");
        assert_eq!(url, "/app/installations/99/access_tokens");
        assert_eq!(accept, "application/vnd.github+json");
        let jwt = auth.strip_prefix("Bearer ").expect("bearer");
        for o in &outs {
            assert!(!o.stderr.contains(jwt) && !o.stdout.contains(jwt), "{o}");
        }
    }
    let jwt = seen[0].2.strip_prefix("Bearer ").expect("bearer");
    let (header, claims) = verify_rs256(&env, &key, jwt);
    assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
    assert_eq!(claims["iss"], "4711");
    let (iat, exp) = (
        claims["iat"].as_i64().expect("iat"),
        claims["exp"].as_i64().expect("exp"),
    );
    assert!(exp > iat && exp - iat <= 600, "{claims}");
    // Each use mints afresh: eight uses, ten requests (one retried twice).
    assert_eq!(seen.len(), 10);
}

#[test]
fn a_workspace_profile_asking_for_statuses_needs_a_forge_that_publishes_them() {
    use crate::common::collect_flow::Loop;
    use std::io::BufRead;
    let l = Loop::basic("bwrap");
    let tok = private_file(&l.env, "forge-token", SECRET.as_bytes());
    let forge = |extra: &[&str]| {
        let mut args = vec![
            "repo",
            "forge",
            "set",
            "--repo",
            "demo/basic",
            "--kind",
            "github",
            "--api-url",
            "http://127.0.0.1:1",
            "--project",
            "demo/basic",
            "--remote-url",
            "http://127.0.0.1:1/demo.git",
            "--token-file",
            s(&tok),
        ];
        args.extend(extra);
        l.env.run(&args).json();
    };
    let serve = |cfg: &Path| {
        let mut child = l
            .env
            .std_cmd()
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--workspace-config",
                s(cfg),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("serve");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        let _ = child.kill();
        let out = child.wait_with_output().expect("wait");
        (line, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // A forge without statuses: deploy config does not ask for them; a
    // profile edited to ask is refused at startup.
    forge(&[]);
    let cfg = l.env.path("ws.json");
    l.env.run(&["deploy", "config", "--out", s(&cfg)]).json();
    let mut v: Value = serde_json::from_slice(&std::fs::read(&cfg).expect("read")).expect("json");
    assert!(
        v["agent_task_profiles"][0]
            .get("publish_forge_status")
            .is_none(),
        "{v}"
    );
    v["agent_task_profiles"][0]["publish_forge_status"] = json!(true);
    let edited = l.env.path("ws-edited.json");
    std::fs::write(&edited, v.to_string()).expect("write");
    std::fs::set_permissions(&edited, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (line, err) = serve(&edited);
    assert!(line.is_empty(), "{line}");
    let e: Value = serde_json::from_str(err.trim()).expect("error json");
    assert_eq!(e["error"], "config", "{err}");
    // With statuses on, deploy config writes the switch and serve starts.
    forge(&["--forge-status"]);
    let cfg2 = l.env.path("ws2.json");
    l.env.run(&["deploy", "config", "--out", s(&cfg2)]).json();
    let v: Value = serde_json::from_slice(&std::fs::read(&cfg2).expect("read")).expect("json");
    assert_eq!(
        v["agent_task_profiles"][0]["publish_forge_status"], true,
        "{v}"
    );
    let (line, _) = serve(&cfg2);
    let started: Value = serde_json::from_str(&line).expect("listening");
    assert_eq!(started["workspace_profiles"], 1, "{started}");
}
