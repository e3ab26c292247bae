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
    assert!(line.contains("-F _agent__task agent-task"), "{line}");
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
    // Ids are not file names: no file-name fallback for `--attempt`; a
    // path (`--file`) still completes file names.
    assert!(
        out.stdout
            .contains("--attempt)\n                    COMPREPLY=(\"${cur}\")")
    );
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
