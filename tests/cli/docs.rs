//! The committed man pages and completions equal what the binary generates
//! (regenerate with `scripts/gen-docs.sh`).

use crate::common::{TestEnv, repo_root};
use std::collections::BTreeMap;
use std::path::Path;

fn read_dir_files(dir: &Path, filter: impl Fn(&str) -> bool) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| filter(n))
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).expect("read");
            (n, bytes)
        })
        .collect()
}

#[test]
fn committed_docs_match_the_binary() {
    let env = TestEnv::new();
    let man = env.path("man");
    std::fs::create_dir(&man).expect("mkdir");
    let out = env
        .run(&["man", "--out", man.to_str().expect("utf8")])
        .json();
    assert!(out["pages"].as_array().expect("pages").len() > 3);
    let fresh = read_dir_files(&man, |n| n.ends_with(".1"));
    let committed = read_dir_files(&repo_root().join("man"), |n| n.ends_with(".1"));
    let fresh_names: Vec<_> = fresh.keys().collect();
    let committed_names: Vec<_> = committed.keys().collect();
    assert_eq!(
        fresh_names, committed_names,
        "man/ pages differ: run scripts/gen-docs.sh"
    );
    for (name, bytes) in &fresh {
        assert!(
            committed[name] == *bytes,
            "man/{name} is stale: run scripts/gen-docs.sh"
        );
    }
    for sh in ["bash", "zsh", "fish"] {
        let path = env.path(&format!("c.{sh}"));
        env.run(&["completions", sh, "--out", path.to_str().expect("utf8")])
            .json();
        let fresh = std::fs::read(&path).expect("read");
        let committed = std::fs::read(repo_root().join(format!("completions/agent-task.{sh}")))
            .expect("committed");
        assert!(
            fresh == committed,
            "completions/agent-task.{sh} is stale: run scripts/gen-docs.sh"
        );
    }
}

#[test]
fn man_creates_a_missing_out_dir_and_refuses_a_file() {
    let env = TestEnv::new();
    let man = env.path("new/nested/man");
    let out = env
        .run(&["man", "--out", man.to_str().expect("utf8")])
        .json();
    let pages = out["pages"].as_array().expect("pages");
    assert!(pages.iter().any(|p| p == "agent-task.1"), "{out}");
    assert!(man.join("agent-task.1").is_file());
    let file = env.path("plain-file");
    std::fs::write(&file, b"x").expect("write");
    env.run(&["man", "--out", file.to_str().expect("utf8")])
        .error("not_found", 66);
    assert_eq!(std::fs::read(&file).expect("read"), b"x");
}

#[test]
fn completions_print_the_script_without_out() {
    let env = TestEnv::new();
    let out = env.run(&["completions", "bash"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("_clap_complete_agent_task()"), "{out}");
    env.run(&["completions", "tcsh"]).error("usage", 64);
}
