//! Issue 31, the small things: completion scripts a shell can source, usage
//! errors naming their arguments, `result` from flags, generated request
//! ids, id prefixes and `data query`'s warnings (all through the binary).

use crate::common::{TestEnv, bin};

#[test]
fn bash_sources_the_printed_completion_script() {
    let env = TestEnv::new();
    let out = env.run(&["completions", "bash"]);
    assert_eq!(out.code, 0, "{out}");
    let script = env.tmp.path().join("c.bash");
    std::fs::write(&script, &out.stdout).expect("write");
    let sh = std::process::Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p agent-task",
            script.display()
        ))
        .output()
        .expect("bash");
    assert!(sh.status.success(), "{sh:?}");
    let line = String::from_utf8_lossy(&sh.stdout);
    assert!(
        line.contains("-F _clap_complete_agent_task agent-task"),
        "{line}"
    );
    // Through process substitution, as the README says.
    let sh = std::process::Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(format!(
            "source <('{}' completions bash) && complete -p agent-task",
            bin().display()
        ))
        .output()
        .expect("bash");
    assert!(sh.status.success(), "{sh:?}");
    for sh in ["zsh", "fish"] {
        let out = env.run(&["completions", sh]);
        assert_eq!(out.code, 0, "{out}");
        assert!(out.stdout.contains("agent-task"), "{out}");
        assert!(!out.stdout.starts_with('{'), "{out}");
    }
}

#[test]
fn usage_errors_name_the_missing_or_wrong_argument() {
    let env = TestEnv::new();
    let e = env.run(&["heartbeat", "--attempt", "a"]).error("usage", 64);
    let msg = e["message"].as_str().expect("message");
    assert!(msg.contains("--fence <FENCE>"), "{msg}");
    assert!(e["details"]["arguments"][0] == "--fence <FENCE>", "{e}");
    let e = env.run(&["status", "--task", "t"]).error("usage", 64);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("--attempt <ATTEMPT>"),
        "{e}"
    );
    let e = env.run(&["completions", "tcsh"]).error("usage", 64);
    let msg = e["message"].as_str().expect("message");
    assert!(msg.contains("'tcsh'") && msg.contains("<SHELL>"), "{msg}");
    assert!(msg.contains("bash, zsh, fish"), "{msg}");
    let e = env.run(&["claim", "t", "--fenc", "1"]).error("usage", 64);
    assert!(
        e["message"].as_str().expect("m").contains("'--fenc'"),
        "{e}"
    );
}

#[test]
fn data_query_refuses_unknown_keys_and_says_what_the_text_search_did() {
    use crate::common::data_core::{collect, data_env};
    use serde_json::json;
    let env = data_env();
    collect(&env, "default", &json!({"text": "foo bar OR baz"}));
    // `limt` is not a key: refused, naming it (it used to give 20 hits).
    let e = env
        .run(&[
            "data",
            "query",
            &json!({"text": "foo", "limt": 1}).to_string(),
        ])
        .error("invalid_input", 65);
    assert_eq!(e["details"]["key"], "limt", "{e}");
    assert!(
        e["message"].as_str().expect("m").contains("\"limt\""),
        "{e}"
    );
    // A plain text: no warning.
    let out = env.run(&["data", "query", "--text", "foo"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stderr.is_empty(), "{out}");
    // `foo-bar` is "foo" AND "bar"; `OR` and `NOT` are words: exit 0, the
    // answer on stdout, one warning on stderr naming both.
    let out = env.run(&["data", "query", "--text", "foo-bar OR"]);
    assert_eq!(out.code, 0, "{out}");
    let hits: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(hits["records"].as_array().expect("records").len(), 1);
    let w: serde_json::Value = serde_json::from_str(out.stderr.trim()).expect("warning json");
    assert_eq!(w["warning"], "query_text_rewritten");
    assert_eq!(w["details"], json!({"replaced": ["-"], "literal": ["OR"]}));
    let out = env.run(&["data", "query", &json!({"text": "NOT (baz)"}).to_string()]);
    assert_eq!(out.code, 0, "{out}");
    let w: serde_json::Value = serde_json::from_str(out.stderr.trim()).expect("warning json");
    assert_eq!(
        w["details"],
        json!({"replaced": ["(", ")"], "literal": ["NOT"]})
    );
}

#[test]
fn data_query_over_http_still_ignores_an_unknown_key() {
    use crate::common::data_core::{collect, data_env};
    use crate::common::data_support::{post, serve};
    use serde_json::json;
    let env = data_env();
    for i in 0..3 {
        collect(&env, "default", &json!({"text": format!("word {i}")}));
    }
    let s = serve(&env, Some(crate::common::data_support::TOKEN));
    let hits = post(
        &s.addr,
        "/v1/data/query",
        &json!({"text": "word-", "limt": 1, "consistency": "local"}),
    )
    .ok();
    // `limt` ignored: the default limit, every record.
    assert_eq!(
        hits["records"].as_array().expect("records").len(),
        3,
        "{hits}"
    );
    assert_eq!(
        hits.as_object().expect("object").keys().collect::<Vec<_>>(),
        ["consistency", "records"]
    );
}

#[test]
fn request_ids_are_generated_when_omitted_and_printed_for_a_retry() {
    use crate::common::task_support::{Setup, attempt_id};
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    // An id written out empty (an unset shell variable) is a usage error
    // naming the flag, never a fresh id: the task stays claimable.
    for args in [
        vec!["claim", tests.as_str(), "--request-id", ""],
        vec!["claim", tests.as_str(), "--request-id="],
    ] {
        let e = s.agent(&args).error("usage", 64);
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("--request-id")),
            "{e}"
        );
        assert_eq!(
            e["details"]["arguments"][0], "--request-id <REQUEST_ID>",
            "{e}"
        );
    }
    let claim = s.agent(&["claim", &tests, "--lease-ms", "60000"]).json();
    let rid = claim["request_id"]
        .as_str()
        .expect("generated request id")
        .to_owned();
    assert!(rid.starts_with("req_"), "{rid}");
    // The printed id retries the same claim: the retained outcome, which
    // (named by the caller) carries no extra member.
    let again = s
        .agent(&["claim", &tests, "--lease-ms", "60000", "--request-id", &rid])
        .json();
    assert_eq!(again["attempt"], claim["attempt"]);
    assert!(again.get("request_id").is_none(), "{again}");
    // A claim without an id is a new request: the task is taken.
    s.agent(&["claim", &tests]).error("task_not_claimable", 65);
    let att = attempt_id(&claim);
    let hb = s
        .agent(&["heartbeat", "--attempt", &att, "--fence", "1"])
        .json();
    let hb_rid = hb["request_id"].as_str().expect("request id").to_owned();
    assert_ne!(hb_rid, rid);
    s.agent(&[
        "heartbeat",
        "--attempt",
        &att,
        "--fence",
        "1",
        "--request-id",
        "",
    ])
    .error("usage", 64);
    let retry = s
        .agent(&[
            "heartbeat",
            "--attempt",
            &att,
            "--fence",
            "1",
            "--request-id",
            &hb_rid,
        ])
        .json();
    assert_eq!(retry["state"], hb["state"]);
}

#[test]
fn result_builds_the_agent_assertion_from_criterion_flags() {
    use crate::common::task_support::{Setup, attempt_id};
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let claim = s.agent(&["claim", &tests, "--request-id", "c-1"]).json();
    let att = attempt_id(&claim);
    // Bad flags: typed usage errors naming the flag, nothing submitted.
    let e = s
        .agent(&[
            "result",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--criterion",
            "tests-pass",
        ])
        .error("usage", 64);
    assert_eq!(e["details"]["argument"], "--criterion", "{e}");
    let e = s
        .agent(&[
            "result",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--criterion",
            "tests-pass=green",
        ])
        .error("usage", 64);
    assert!(e["message"].as_str().expect("m").contains("green"), "{e}");
    let e = s
        .agent(&["result", "--criterion", "tests-pass=passed"])
        .error("usage", 64);
    assert!(e["message"].as_str().expect("m").contains("--task"), "{e}");
    s.agent(&[
        "result",
        "--task",
        &tests,
        "--attempt",
        &att,
        "--criterion",
        "nope=passed",
    ])
    .error("invalid_input", 65);
    // The assertion from flags: finished, an agent assertion (never passing).
    let res = s
        .agent(&[
            "result",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--criterion",
            "tests-pass=passed",
            "--finding",
            "tests-pass=sh test.sh exited 0",
        ])
        .json();
    assert_eq!(res["state"], "finished", "{res}");
    assert_eq!(res["trust_class"], "agent_assertion");
    assert_eq!(res["outcome"], "passed");
    let rid = res["request_id"].as_str().expect("request id").to_owned();
    // The printed id retries it: the retained outcome.
    let again = s
        .agent(&[
            "result",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--criterion",
            "tests-pass=passed",
            "--finding",
            "tests-pass=sh test.sh exited 0",
            "--request-id",
            &rid,
        ])
        .json();
    assert_eq!(again["state"], "finished");
    assert!(again.get("request_id").is_none());
    // --file and the flags do not mix.
    s.agent(&[
        "result",
        "--file",
        "x.json",
        "--criterion",
        "tests-pass=passed",
    ])
    .error("usage", 64);
}

#[test]
fn unique_id_prefixes_resolve_among_the_callers_ids_only() {
    use crate::common::task_support::{Setup, attempt_id, copy_dir};
    let s = Setup::new();
    let (tests, notes) = s.checkpoint();
    // Bob, another owner, with a Change of his own.
    let bob_token = s.env.path("bob.token");
    s.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "b-1",
            "--out",
            bob_token.to_str().expect("utf8"),
        ])
        .json();
    let bob_ws = s.env.path("bob-work");
    copy_dir(&s.workspace, &bob_ws);
    let bob = |args: &[&str]| {
        let mut c = s.env.cmd();
        c.arg("--token-file").arg(&bob_token).args(args);
        crate::common::run_cmd(&mut c)
    };
    let bws = bob_ws.to_str().expect("utf8");
    let bch = bob(&[
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        bws,
    ])
    .json();
    let bob_change = bch["change_id"].as_str().expect("change").to_owned();
    let bcp = bob(&["checkpoint", "--workspace", bws]).json();
    let bob_task = bcp["tasks"][0]["task_id"]
        .as_str()
        .expect("task")
        .to_owned();

    // A unique prefix (with or without `task_`) names the task.
    let short = &tests[..13];
    let ins = s.agent(&["instructions", short]).json();
    assert_eq!(ins["status"], "entrypoint", "{ins}");
    let claim = s
        .agent(&["claim", &tests["task_".len()..16], "--request-id", "c-1"])
        .json();
    assert_eq!(claim["attempt"]["task_id"], tests.as_str());
    let att = attempt_id(&claim);
    let st = s
        .agent(&["status", "--task", &tests[..12], "--attempt", &att[..12]])
        .json();
    assert_eq!(st["attempt_id"], att.as_str());
    let hb = s
        .agent(&["heartbeat", "--attempt", &att[..10], "--fence", "1"])
        .json();
    assert_eq!(hb["state"], "leased");
    let n = s.agent(&["next", "--change", &s.change_id[..9]]).json();
    assert!(n.get("next").is_some(), "{n}");

    // Several: ambiguous_id, listing only alice's tasks (never bob's).
    let e = s
        .agent(&["instructions", "task_"])
        .error("ambiguous_id", 65);
    let cands: Vec<&str> = e["details"]["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|v| v.as_str().expect("id"))
        .collect();
    assert!(
        cands.contains(&tests.as_str()) && cands.contains(&notes.as_str()),
        "{e}"
    );
    assert!(!cands.contains(&bob_task.as_str()), "{e}");
    assert!(
        !e["message"].as_str().expect("m").contains(&bob_task),
        "{e}"
    );
    // None (bob's ids are not alice's to name): not_found.
    let e = s
        .agent(&["instructions", &bob_task[..14]])
        .error("not_found", 66);
    assert_eq!(e["details"]["kind"], "task", "{e}");
    s.agent(&["next", "--change", &bob_change[..12]])
        .error("not_found", 66);
    s.agent(&["status", "--task", &tests, "--attempt", "att_ffffffff"])
        .error("not_found", 66);
    // Bob resolves his own.
    let bn = bob(&["next", "--change", &bob_change[..12]]).json();
    assert!(bn.get("next").is_some(), "{bn}");
    // A whole id goes as it is (another owner's: the operation's own answer).
    let whole = s.agent(&["instructions", &bob_task]);
    assert_ne!(whole.code, 0);
    assert!(!whole.stderr.contains("ambiguous_id"), "{whole}");
}

/// Asks bash, with the printed script sourced and the binary on `PATH`,
/// for the completions of the last word of `words` (run in `cwd`).
fn bash_complete(
    env: &[(&str, &std::path::Path)],
    cwd: &std::path::Path,
    words: &[&str],
) -> Vec<String> {
    let dir = bin().parent().expect("bin dir");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(agent-task completions bash) || exit 9\n\
         COMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_TYPE=9\n\
         _clap_complete_agent_task agent-task '{}' '{}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let mut c = std::process::Command::new("bash");
    c.env_clear()
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("HOME", cwd)
        .current_dir(cwd)
        .arg("--norc")
        .arg("-c")
        .arg(script);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("bash");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn completion_offers_the_callers_ids_and_file_names_only_for_paths() {
    use crate::common::task_support::{Setup, attempt_id};
    let s = Setup::new();
    let (tests, notes) = s.checkpoint();
    let claim = s.agent(&["claim", &tests, "--request-id", "c-1"]).json();
    let att = attempt_id(&claim);
    // Bob (another owner) has a Change and tasks too; alice never sees them.
    let bob_token = s.env.path("bob.token");
    s.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "b",
            "--out",
            bob_token.to_str().expect("u"),
        ])
        .json();
    let bob_ws = s.env.path("bob-work");
    crate::common::task_support::copy_dir(&s.workspace, &bob_ws);
    let bob = |args: &[&str]| {
        let mut c = s.env.cmd();
        c.arg("--token-file").arg(&bob_token).args(args);
        crate::common::run_cmd(&mut c)
    };
    let bws = bob_ws.to_str().expect("utf8");
    bob(&[
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        bws,
    ])
    .json();
    let bcp = bob(&["checkpoint", "--workspace", bws]).json();
    let bob_task = bcp["tasks"][0]["task_id"]
        .as_str()
        .expect("task")
        .to_owned();

    let env = [
        ("AGENT_TASK_DATA_DIR", s.env.data_dir.as_path()),
        ("AGENT_TASK_TOKEN_FILE", s.token.as_path()),
    ];
    let cwd = s.env.tmp.path();
    // (An empty word also offers the flags.)
    let mut tasks = bash_complete(&env, cwd, &["agent-task", "instructions", ""]);
    tasks.retain(|t| !t.starts_with("--"));
    tasks.sort();
    let mut want = vec![tests.clone(), notes.clone()];
    want.sort();
    assert_eq!(tasks, want);
    assert!(!tasks.contains(&bob_task));
    let one = bash_complete(&env, cwd, &["agent-task", "status", "--task", &tests[..12]]);
    assert_eq!(one, vec![tests.clone()]);
    let atts = bash_complete(&env, cwd, &["agent-task", "heartbeat", "--attempt", "att_"]);
    assert_eq!(atts, vec![att]);
    let changes = bash_complete(&env, cwd, &["agent-task", "next", "--change", ""]);
    assert_eq!(changes, vec![s.change_id.clone()]);
    // A value that is no path offers no file names; a path does.
    std::fs::write(cwd.join("zz-file"), b"x").expect("write");
    assert!(
        bash_complete(
            &env,
            cwd,
            &["agent-task", "claim", &tests, "--request-id", "zz"]
        )
        .is_empty()
    );
    let files = bash_complete(&env, cwd, &["agent-task", "result", "--file", "zz"]);
    assert!(files.iter().any(|f| f.contains("zz-file")), "{files:?}");
    // Without a token: no ids, no error.
    let mut none = bash_complete(&env[..1], cwd, &["agent-task", "instructions", "task_"]);
    none.retain(|t| !t.starts_with("--"));
    assert!(none.is_empty(), "{none:?}");
    // A Stop hook never turns into a completion request.
    let mut c = s.env.std_cmd();
    c.env("AGENT_TASK_COMPLETE", "bash")
        .args(["--", "task-stop"]);
    let out = c.output().expect("run");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("_clap_complete"),
        "{out:?}"
    );
}

#[test]
fn completion_offers_collections_and_peers() {
    use crate::common::sync_support::{PUBLISHER_KEY, add_vector_peer, vector_destination};
    let env = vector_destination("did:example:sync-destination");
    env.run(&["data", "collection", "create", "--id", "scratch"])
        .json();
    add_vector_peer(&env, "http://127.0.0.1:9", PUBLISHER_KEY).json();
    let vars = [("AGENT_TASK_DATA_DIR", env.data_dir.as_path())];
    let cwd = env.tmp.path();
    let got = bash_complete(
        &vars,
        cwd,
        &["agent-task", "data", "query", "--collection", "sc"],
    );
    assert_eq!(got, vec!["scratch".to_owned()]);
    let got = bash_complete(&vars, cwd, &["agent-task", "sync", "status", "--peer", ""]);
    assert_eq!(got, vec!["src".to_owned()]);
}

/// Runs `c` with its stdout redirected to `out` and its stderr on a
/// pseudo-terminal (util-linux `script`); returns what the terminal showed.
fn on_terminal(c: &assert_cmd::Command, out: &std::path::Path) -> String {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let mut line = quote(c.get_program());
    for a in c.get_args() {
        line.push(' ');
        line.push_str(&quote(a));
    }
    line.push_str(" >");
    line.push_str(&quote(out.as_os_str()));
    let mut s = std::process::Command::new("script");
    s.env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            s.env(k, v);
        }
    }
    s.env("TERM", "xterm").args(["-qec", &line, "/dev/null"]);
    let o = s.output().expect("script runs");
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn progress_is_drawn_on_a_terminal_and_never_in_a_pipe() {
    use crate::common::task_support::Setup;
    let s = Setup::new();
    // A checkpoint at a terminal shows the files it hashes; its JSON still
    // goes to stdout whole.
    let out = s.env.tmp.path().join("checkpoint.json");
    let mut c = s.env.cmd();
    c.arg("--token-file")
        .arg(&s.token)
        .args(["checkpoint", "--workspace", s.ws()]);
    let shown = on_terminal(&c, &out);
    assert!(shown.contains("checkpoint: hashing files"), "{shown:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("stdout")).expect("json stdout");
    assert!(v["revision"].is_string(), "{v}");
    // Piped, the same command writes nothing on stderr.
    let o = s.agent(&["checkpoint", "--workspace", s.ws()]);
    assert_eq!(o.code, 0, "{o}");
    assert!(o.stderr.is_empty(), "{o}");

    // Bulk ingest: counts redrawn at a terminal instead of the JSON
    // acknowledgements a program reads from a pipe.
    let env = crate::common::data_core::data_env();
    let input = env.tmp.path().join("in.jsonl");
    let lines: String = (0..300)
        .map(|i| format!("{{\"text\":\"line {i}\"}}\n"))
        .collect();
    std::fs::write(&input, lines).expect("write");
    let args = [
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--batch",
        "100",
        "--jsonl",
    ];
    let mut c = env.cmd();
    c.args(args).arg(&input);
    let out = env.tmp.path().join("bulk.json");
    let shown = on_terminal(&c, &out);
    assert!(shown.contains("data collect: line "), "{shown:?}");
    assert!(!shown.contains("committed_through_line"), "{shown:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("stdout")).expect("json stdout");
    assert_eq!(v["inserted"], 300, "{v}");
    let mut c = env.cmd();
    c.args(args).arg(&input);
    let o = crate::common::run_cmd(&mut c);
    assert_eq!(o.code, 0, "{o}");
    assert!(
        o.stderr
            .lines()
            .all(|l| l.contains("committed_through_line")),
        "{o}"
    );
}

#[test]
fn a_collect_at_a_terminal_shows_its_phases() {
    use crate::common::collect_flow::{Loop, s};
    let l = Loop::basic("bwrap");
    let task = l.checkpoint();
    let (d, _) = l.claim(&task, "d.json");
    let mut c = l.env.cmd();
    c.arg("--token-file").arg(&l.token).args([
        "collect",
        "--descriptor",
        s(&d),
        "--collector-dir",
        s(&l.collector),
    ]);
    let out = l.env.tmp.path().join("collect.json");
    let shown = on_terminal(&c, &out);
    for phase in [
        "collect: rechecking",
        "collect: running",
        "collect: importing",
    ] {
        assert!(shown.contains(phase), "{phase}: {shown:?}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("stdout")).expect("json stdout");
    assert_eq!(v["outcome"], "passed", "{v}");
}
