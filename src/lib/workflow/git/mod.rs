//! The one git runner of the workflow half: every git child the workflow
//! (and a face, through `workflow::service::git`) starts is made here,
//! under one environment policy.
//!
//! **The policy.** A git child never takes from the caller's environment
//! where to read or write, nor configuration, nor a program to run: every
//! variable of [`REDIRECTS`] (the repository, work tree, index, object
//! store, common dir, namespace and notes refs; configuration injected by
//! `GIT_CONFIG*`, `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`; system or
//! global configuration switched on or off; replacement and graft files;
//! helper programs and exec path) is removed before anything of the
//! caller's is added. Configuration comes from files only:
//!
//! - [`command`]: an operator's repository (`-C repo`), under the mask
//!   git itself would use there (below); its own configuration, and the
//!   operator's global and system files, where the git identity a landing
//!   commits under lives. Steps that run configured programs (a work tree
//!   checkout) add [`repo::ISOLATED`]: no system or global configuration.
//! - [`isolated`]: nothing of the caller's at all (the environment
//!   cleared but `PATH`, no system or global configuration, a `HOME` of
//!   the caller's choosing): the scratch repositories of the checkout
//!   check.
//! - [`plain`]: a read in a directory that is not the operator's
//!   repository (the agent's workspace), without the mask look-up.
//!
//! The product runs under umask 077 (`store::private_fs`); git children
//! that write into the repository run instead under the mask its
//! `core.sharedRepository` implies (022 when unset, `umask` or `false`;
//! 007 for `group`; 002 for `all`; the complement of an octal mode), so
//! the refs, objects and notes a landing adds are as readable as the ones
//! git wrote before, and a clone or `git pull` by another user works.

pub mod objects;
pub mod repo;

use crate::error::{Code, Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The variables no git child inherits (see the module's policy).
pub const REDIRECTS: &[&str] = &[
    // Where git reads and writes.
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INDEX_VERSION",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_NOTES_REF",
    "GIT_NOTES_DISPLAY_REF",
    "GIT_NOTES_REWRITE_REF",
    "GIT_QUARANTINE_PATH",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_DEFAULT_HASH",
    // Configuration from the environment.
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_ATTR_NOSYSTEM",
    "GIT_ATTR_SOURCE",
    "GIT_TEMPLATE_DIR",
    // How paths are matched.
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    // Programs git would run.
    "GIT_EXEC_PATH",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
];

/// The mask of each repository already asked (per process).
static MASKS: Mutex<Option<HashMap<PathBuf, u32>>> = Mutex::new(None);

/// Applies the policy to a git command: every [`REDIRECTS`] variable
/// removed (what the caller adds afterwards is the caller's choice).
fn policy(c: &mut Command) {
    for v in REDIRECTS {
        c.env_remove(v);
    }
}

/// `git` under the policy, with no directory and no mask.
pub fn bare() -> Command {
    let mut c = Command::new("git");
    policy(&mut c);
    c
}

/// `git -C dir` under the policy, without the repository's mask: for
/// reads in a directory that is not the operator's repository.
pub fn plain(dir: &Path) -> Command {
    let mut c = bare();
    c.arg("-C").arg(dir);
    c
}

/// `git -C repo` under the policy for a child that only reads the
/// operator's repository `repo` (`rev-parse`, `ls-tree`, `cat-file`,
/// `notes list`): no mask, since it creates no file, and so no
/// `git config` child to look the mask up.
pub fn reader(repo: &Path) -> Command {
    plain(repo)
}

/// A git command in the operator's repository `repo`: the policy and the
/// repository's mask.
pub fn command(repo: &Path) -> Command {
    let mut c = plain(repo);
    crate::store::private_fs::child_umask(&mut c, repo_mask(repo));
    c
}

/// git with nothing of the caller's configuration or environment: the
/// environment cleared but `PATH`, `HOME` set to `home` (a directory of
/// the caller's), no system or global configuration or attributes, the C
/// locale.
pub fn isolated(home: &Path) -> Command {
    let mut c = bare();
    c.env_clear();
    if let Some(p) = crate::env::var_os("PATH") {
        c.env("PATH", p);
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("HOME", home)
        .env("LC_ALL", "C");
    c
}

/// The umask a `core.sharedRepository` value implies (`None`: unset).
pub fn mask_for_shared(value: Option<&str>) -> u32 {
    let v = value.map(|v| v.trim().to_ascii_lowercase());
    match v.as_deref() {
        None | Some("" | "umask" | "false" | "no" | "off" | "0") => 0o022,
        Some("group" | "true" | "yes" | "on" | "1") => 0o007,
        Some("all" | "world" | "everybody" | "2") => 0o002,
        Some(o) if o.starts_with('0') => match u32::from_str_radix(o, 8) {
            Ok(mode) => !mode & 0o777,
            Err(_) => 0o022,
        },
        Some(_) => 0o022,
    }
}

/// The umask git children run under in `repo`.
pub fn repo_mask(repo: &Path) -> u32 {
    if let Ok(g) = MASKS.lock()
        && let Some(m) = g.as_ref().and_then(|m| m.get(repo))
    {
        return *m;
    }
    let value = plain(repo)
        .args(["config", "--get", "core.sharedRepository"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mask = mask_for_shared(value.as_deref());
    if let Ok(mut g) = MASKS.lock() {
        g.get_or_insert_with(HashMap::new)
            .insert(repo.to_path_buf(), mask);
    }
    mask
}

/// Runs git in `repo` ([`command`]) with `envs` added; (exit code,
/// stdout, stderr). Only a failure to start is an error.
pub fn run(
    repo: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> Result<(i32, Vec<u8>, String)> {
    let mut c = command(repo);
    c.args(args).envs(envs.iter().copied());
    output(c, stdin)
}

/// Runs a prepared git command with `stdin` (or none), fed from another
/// thread so that a large output never blocks the feed; (exit code,
/// stdout, trimmed stderr). Only a failure to start is an error.
pub fn output(mut c: Command, stdin: Option<&[u8]>) -> Result<(i32, Vec<u8>, String)> {
    use std::io::Write;
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| Error::new(Code::Io, format!("cannot run git: {e}")))?;
    let input = child.stdin.take();
    let (fed, out) = std::thread::scope(|scope| {
        let feeder = scope.spawn(move || match (stdin, input) {
            (Some(b), Some(mut w)) => w.write_all(b),
            _ => Ok(()),
        });
        let out = child.wait_with_output();
        (feeder.join(), out)
    });
    let out = out.map_err(|e| Error::new(Code::Io, format!("git: {e}")))?;
    let code = out.status.code().unwrap_or(-1);
    // A git that exits early closes the pipe: its status says why, so a
    // failed feed is an error only when git itself succeeded.
    if code == 0 {
        match fed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Error::new(Code::Io, format!("git stdin: {e}"))),
            Err(_) => return Err(Error::internal("git stdin feeder panicked")),
        }
    }
    Ok((
        code,
        out.stdout,
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    ))
}

/// [`run`], requiring success; trimmed stdout.
pub fn run_ok(repo: &Path, args: &[&str], envs: &[(&str, &str)]) -> Result<String> {
    let (code, out, err) = run(repo, args, envs, None)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!(
                "git {} failed: {err}",
                args.first().copied().unwrap_or_default()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_repository_values_give_gits_masks() {
        assert_eq!(mask_for_shared(None), 0o022);
        assert_eq!(mask_for_shared(Some("umask")), 0o022);
        assert_eq!(mask_for_shared(Some("false")), 0o022);
        assert_eq!(mask_for_shared(Some("group")), 0o007);
        assert_eq!(mask_for_shared(Some("true")), 0o007);
        assert_eq!(mask_for_shared(Some("all")), 0o002);
        assert_eq!(mask_for_shared(Some("0640")), 0o137);
        assert_eq!(mask_for_shared(Some("0660")), 0o117);
        assert_eq!(mask_for_shared(Some("09x")), 0o022);
    }

    /// Where the probe finds its repository (set only by the test below,
    /// in the child it starts).
    const PROBE_VAR: &str = "AT_GIT_RUNNER_PROBE_REPO";

    /// The child half of the hostile-environment test: runs the runner in
    /// the repository it is given, in an environment full of git
    /// variables that point elsewhere, and prints what git saw.
    #[test]
    #[ignore = "run in a child by a_hostile_git_environment_has_no_effect_on_the_runner"]
    // Its stdout is how the child answers the test that started it.
    #[allow(clippy::print_stdout)]
    fn runner_probe() {
        let Some(repo) = crate::env::var_os(PROBE_VAR) else {
            return;
        };
        let repo = PathBuf::from(repo);
        let dir = run_ok(&repo, &["rev-parse", "--absolute-git-dir"], &[]).expect("rev-parse");
        let files = run_ok(&repo, &["ls-files"], &[]).expect("ls-files");
        let value = run_ok(&repo, &["config", "--get", "probe.value"], &[]).expect("config");
        println!("\nPROBE git-dir={dir}\nPROBE files={files}\nPROBE value={value}");
    }

    fn sh(mut c: Command) {
        let st = c.status().expect("git runs");
        assert!(st.success(), "{c:?}");
    }

    #[test]
    fn a_hostile_git_environment_has_no_effect_on_the_runner() {
        let tmp = tempfile::tempdir().expect("tmp");
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).expect("home");
        let (repo, other) = (tmp.path().join("repo"), tmp.path().join("other"));
        for (r, file, value) in [
            (&repo, "real.txt", "repo"),
            (&other, "hostile.txt", "other"),
        ] {
            let mut c = isolated(&home);
            c.args(["init", "-q"]).arg(r);
            sh(c);
            std::fs::write(r.join(file), "x\n").expect("write");
            let mut c = isolated(&home);
            c.arg("-C").arg(r).args(["add", file]);
            sh(c);
            let mut c = isolated(&home);
            c.arg("-C").arg(r).args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.org",
                "commit",
                "-q",
                "-m",
                "x",
            ]);
            sh(c);
            let mut c = isolated(&home);
            c.arg("-C").arg(r).args(["config", "probe.value", value]);
            sh(c);
        }
        let bad_index = tmp.path().join("bad-index");
        std::fs::write(&bad_index, "not an index").expect("index");
        let hostile = |c: &mut Command| {
            c.env("GIT_DIR", other.join(".git"))
                .env("GIT_WORK_TREE", &other)
                .env("GIT_INDEX_FILE", &bad_index)
                .env("GIT_OBJECT_DIRECTORY", other.join(".git/objects"))
                .env("GIT_CONFIG_PARAMETERS", "'probe.value'='hostile'")
                .env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", "probe.value")
                .env("GIT_CONFIG_VALUE_0", "hostile");
        };
        // The premise: git itself obeys these variables.
        let mut raw = Command::new("git");
        raw.arg("-C")
            .arg(&repo)
            .args(["rev-parse", "--absolute-git-dir"]);
        hostile(&mut raw);
        let raw = raw.output().expect("git");
        let canon = |p: &Path| std::fs::canonicalize(p).expect("canonical");
        assert_eq!(
            canon(Path::new(String::from_utf8_lossy(&raw.stdout).trim())),
            canon(&other.join(".git"))
        );
        // The runner, in a process whose own environment is hostile.
        let mut probe = Command::new(std::env::current_exe().expect("test binary"));
        probe
            .args([
                "--exact",
                "workflow::git::tests::runner_probe",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PROBE_VAR, &repo);
        hostile(&mut probe);
        let out = probe.output().expect("probe runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let line = |k: &str| {
            text.lines()
                .find_map(|l| l.split_once(&format!("PROBE {k}=")).map(|(_, v)| v))
                .unwrap_or_else(|| panic!("no {k} in {text}"))
                .to_owned()
        };
        assert_eq!(
            canon(Path::new(&line("git-dir"))),
            canon(&repo.join(".git"))
        );
        assert_eq!(line("files"), "real.txt");
        assert_eq!(line("value"), "repo");
    }
}
