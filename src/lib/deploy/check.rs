//! `deploy check`: the privilege-separated set-up of `docs/security.md`,
//! checked before anything relies on it. Each check is reported with its
//! outcome and the command that fixes it; nothing is changed.
//!
//! Trust rules: root reads only root's or the operator's files here, and
//! stats (never follows) every path. What is the agent's (its token file)
//! or what must be closed to the agent (the key, the data and collector
//! directories) is tried by a forked child that has become the agent's
//! user ([`super::probe`]); no file content is printed.

use super::probe::{self, Try};
use crate::collector::wrapper;
use crate::error::{Error, Result};
use crate::hooks::install::Agent;
use crate::hooks::managed;
use crate::hooks::stop::managed as stop_managed;
use crate::store::private_fs;
use serde::Serialize;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the managed Stop hook is looked for.
#[derive(Debug, Clone)]
pub struct HookPaths {
    /// Claude Code's base managed settings file; its drop-in directory
    /// `managed-settings.d/` beside it is read too.
    pub claude: PathBuf,
    /// Codex's requirements.
    pub codex: PathBuf,
    /// agent-task's uid → endpoint map of the managed hook.
    pub map: PathBuf,
}

impl Default for HookPaths {
    fn default() -> Self {
        HookPaths {
            claude: PathBuf::from(managed::CLAUDE_MANAGED),
            codex: PathBuf::from(managed::CODEX_REQUIREMENTS),
            map: PathBuf::from(managed::HOOKS_MAP),
        }
    }
}

/// The endpoint to try with the agent's token.
#[derive(Debug, Clone)]
pub struct EndpointCheck {
    /// Base URL.
    pub url: String,
    /// The endpoint's repository id.
    pub repository: String,
    /// Profile id.
    pub profile: String,
    /// The agent's token file (read as the agent when run as root).
    pub token_file: PathBuf,
}

/// `deploy check` request.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    /// The operator's data directory.
    pub data_dir: PathBuf,
    /// The operator's collector directory.
    pub collector_dir: PathBuf,
    /// The operator's user.
    pub operator_user: String,
    /// The agent's user.
    pub agent_user: String,
    /// The collect wrapper.
    pub wrapper: PathBuf,
    /// The sudoers rule.
    pub sudoers: PathBuf,
    /// The workspace config of `serve`, if it should be checked.
    pub workspace_config: Option<PathBuf>,
    /// The endpoint, if it should be tried.
    pub endpoint: Option<EndpointCheck>,
    /// The managed hook files.
    pub hooks: HookPaths,
    /// Check names or groups not to run (reported `skipped`).
    pub skip: Vec<String>,
}

/// One check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Holds.
    Ok,
    /// Does not hold: see `fix`.
    Fail,
    /// Not run (`--skip`, or it needs root).
    Skipped,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable name.
    pub name: &'static str,
    /// Its group (what `--skip` also takes).
    pub group: &'static str,
    /// Outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to run or change (empty when it holds).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// `deploy check` output.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// True when no check failed.
    pub ok: bool,
    /// Checks that failed.
    pub failed: usize,
    /// Checks not run.
    pub skipped: usize,
    /// Every check, in order.
    pub checks: Vec<Check>,
}

/// The groups, in report order.
pub const GROUPS: &[&str] = &[
    "users", "paths", "config", "wrapper", "sudoers", "agent", "endpoint", "hooks",
];

struct Out {
    skip: Vec<String>,
    checks: Vec<Check>,
}

impl Out {
    fn wanted(&self, group: &str, name: &str) -> bool {
        !self.skip.iter().any(|s| s == group || s == name)
    }
    fn push(
        &mut self,
        group: &'static str,
        name: &'static str,
        r: std::result::Result<String, (String, String)>,
    ) {
        let c = match r {
            Ok(detail) => Check {
                name,
                group,
                status: Status::Ok,
                detail,
                fix: String::new(),
            },
            Err((detail, fix)) => Check {
                name,
                group,
                status: Status::Fail,
                detail,
                fix,
            },
        };
        self.checks.push(c);
    }
    fn skipped(&mut self, group: &'static str, name: &'static str, why: &str) {
        self.checks.push(Check {
            name,
            group,
            status: Status::Skipped,
            detail: why.to_owned(),
            fix: String::new(),
        });
    }
    /// Runs `f` unless skipped.
    fn run(
        &mut self,
        group: &'static str,
        name: &'static str,
        f: impl FnOnce() -> std::result::Result<String, (String, String)>,
    ) {
        if self.wanted(group, name) {
            let r = f();
            self.push(group, name, r);
        } else {
            self.skipped(group, name, "skipped (--skip)");
        }
    }
}

type Verdict = std::result::Result<String, (String, String)>;

fn fail(detail: impl Into<String>, fix: impl Into<String>) -> Verdict {
    Err((detail.into(), fix.into()))
}

fn err_text(e: &Error) -> String {
    e.message().to_owned()
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// A root-owned regular file no one else can write, in directories only
/// root can change.
/// `missing_fix` is the fix when it does not exist.
fn root_file(p: &Path, mode_exact: Option<u32>, missing_fix: &str) -> Verdict {
    let md = match std::fs::symlink_metadata(p) {
        Ok(md) => md,
        Err(e) => return fail(format!("{}: {e}", shown(p)), missing_fix),
    };
    let mode = md.permissions().mode() & 0o7777;
    if !md.is_file() || md.uid() != 0 || mode & 0o022 != 0 {
        return fail(
            format!(
                "{} must be a regular file owned by root, writable by no one else (uid {}, mode {mode:04o})",
                shown(p),
                md.uid()
            ),
            format!("chown root:root {0} && chmod go-w {0}", shown(p)),
        );
    }
    if let Some(want) = mode_exact
        && mode != want
    {
        return fail(
            format!("{} has mode {mode:04o}, not {want:04o}", shown(p)),
            format!("chmod {want:04o} {}", shown(p)),
        );
    }
    if let Some(dir) = p.parent()
        && let Err(e) = wrapper::check_ancestry(dir, 0)
    {
        return fail(
            err_text(&e),
            "keep it in directories owned by root and writable only by root",
        );
    }
    Ok(format!("{} root:{mode:04o}", shown(p)))
}

/// Reads a small root-owned file (already checked by [`root_file`]).
fn read_root_file(p: &Path) -> std::result::Result<String, String> {
    use std::io::Read;
    let mut s = String::new();
    private_fs::open_nofollow_read(p)
        .map_err(|e| err_text(&e))?
        .take(1 << 20)
        .read_to_string(&mut s)
        .map_err(|e| format!("{}: {e}", shown(p)))?;
    Ok(s)
}

/// The files Claude Code reads managed settings from, next to `base`
/// (`/etc/claude-code/managed-settings.json`): `base`, then every `*.json`
/// of `managed-settings.d/` beside it not starting with `.`, sorted by
/// name (as Claude Code merges them). Only existing entries are listed;
/// the directory is not followed when it is a symbolic link.
pub fn claude_managed_files(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if std::fs::symlink_metadata(base).is_ok() {
        out.push(base.to_path_buf());
    }
    let Some(dir) = base.parent().map(|d| d.join("managed-settings.d")) else {
        return out;
    };
    if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return out;
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .filter_map(|n| n.to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .map(|n| dir.join(n))
        .collect();
    names.sort();
    out.extend(names);
    out
}

/// The managed hook commands of one root-owned managed file (safe by
/// [`root_file`], then parsed as `install-stop --managed` parses it).
fn managed_file_hooks(
    agent: Agent,
    file: &Path,
    fix: &str,
) -> std::result::Result<Vec<String>, (String, String)> {
    root_file(file, None, fix)?;
    // The agents run as their users: the file must be readable, and its
    // directories searchable, by others.
    let mode = |p: &Path| std::fs::metadata(p).map(|m| m.mode()).unwrap_or(0);
    if mode(file) & 0o004 == 0 {
        return Err((
            format!(
                "{} is not readable by the agents' users (mode {:04o})",
                shown(file),
                mode(file) & 0o7777
            ),
            format!("chmod 0644 {}", shown(file)),
        ));
    }
    if let Some(d) = file.ancestors().skip(1).find(|d| mode(d) & 0o001 == 0) {
        return Err((
            format!(
                "{} is not searchable by the agents' users (mode {:04o})",
                shown(d),
                mode(d) & 0o7777
            ),
            format!("chmod 0755 {}", shown(d)),
        ));
    }
    managed::managed_hook_installed(agent, file)
        .map_err(|e| (format!("{}: {}", shown(file), err_text(&e)), fix.to_owned()))
}

/// Runs every check; never fails for what it finds (that is the report),
/// only for what stops it from checking at all.
pub fn run(r: &CheckRequest) -> Result<CheckReport> {
    for s in &r.skip {
        if !GROUPS.contains(&s.as_str()) && !CHECK_NAMES.contains(&s.as_str()) {
            return Err(Error::new(
                crate::error::Code::Usage,
                format!("--skip {s}: not a check or group ({})", GROUPS.join(", ")),
            ));
        }
    }
    let mut o = Out {
        skip: r.skip.clone(),
        checks: Vec::new(),
    };
    let is_root = rustix::process::geteuid().is_root();
    let op = &r.operator_user;
    let agent = &r.agent_user;
    let op_ids = wrapper::user_ids(op);
    let agent_ids = probe::identity(agent);
    let op_uid = op_ids.as_ref().ok().map(|i| i.0);

    o.run("users", "users", || match (&op_ids, &agent_ids) {
        (Err(e), _) | (_, Err(e)) => fail(err_text(e), "create the user (useradd), or name the right one"),
        (Ok((ou, _)), Ok(a)) if a.uid == 0 || a.uid == *ou => fail(
            format!("the agent's user {agent} (uid {}) must be unprivileged and not the operator (uid {ou})", a.uid),
            "run the agent as its own unprivileged user",
        ),
        (Ok((ou, _)), Ok(a)) => Ok(format!("operator {op} uid {ou}, agent {agent} uid {}", a.uid)),
    });

    let uid = op_uid.unwrap_or(u32::MAX);
    let (data, coll) = (&r.data_dir, &r.collector_dir);
    let key = coll.join(crate::contract::KEY_FILE);
    let private_dir = |what: &str, p: &Path| -> Verdict {
        match wrapper::operator_private_dir(what, p, uid) {
            Ok(()) => Ok(format!(
                "{} {op}:0700, parents root's or {op}'s, not writable by others",
                shown(p)
            )),
            Err(e) => fail(
                err_text(&e),
                format!(
                    "chown {op}: {0} && chmod 0700 {0}; chmod go-w on each parent",
                    shown(p)
                ),
            ),
        }
    };
    o.run("paths", "data_dir", || {
        private_dir("the data directory", data)
    });
    o.run("paths", "collector_dir", || {
        private_dir("the collector directory", coll)
    });
    o.run("paths", "signing_key", || {
        match std::fs::symlink_metadata(&key) {
            Ok(md) if md.is_file() && md.uid() == uid && md.permissions().mode() & 0o077 == 0 => {
                Ok(format!(
                    "{} {op}:{:04o}",
                    shown(&key),
                    md.permissions().mode() & 0o7777
                ))
            }
            Ok(md) => fail(
                format!(
                    "{} (uid {}, mode {:04o}) must be a regular file of {op}, mode 0600",
                    shown(&key),
                    md.uid(),
                    md.permissions().mode() & 0o7777
                ),
                format!("chown {op}: {0} && chmod 0600 {0}", shown(&key)),
            ),
            Err(e) => fail(
                format!("{}: {e}", shown(&key)),
                format!("as {op}: agent-task keygen --collector-dir {}", shown(coll)),
            ),
        }
    });

    match &r.workspace_config {
        None => o.skipped("config", "workspace_config", "no --workspace-config"),
        Some(w) => o.run("config", "workspace_config", || {
            let md = match std::fs::symlink_metadata(w) {
                Ok(md) => md,
                Err(e) => {
                    return fail(
                        format!("{}: {e}", shown(w)),
                        format!(
                            "as {op}: agent-task --data-dir {} deploy config --out {}",
                            shown(data),
                            shown(w)
                        ),
                    );
                }
            };
            if !md.is_file() || md.uid() != uid || md.permissions().mode() & 0o077 != 0 {
                return fail(
                    format!(
                        "{} (uid {}, mode {:04o}) must be {op}'s regular file, mode 0600",
                        shown(w),
                        md.uid(),
                        md.permissions().mode() & 0o7777
                    ),
                    format!("chown {op}: {0} && chmod 0600 {0}", shown(w)),
                );
            }
            let c = match crate::workflow::service::facade::WorkspaceConfig::load(w) {
                Ok(c) => c,
                Err(e) => {
                    return fail(
                        err_text(&e),
                        format!(
                            "as {op}: agent-task --data-dir {} deploy config --out {} --force",
                            shown(data),
                            shown(w)
                        ),
                    );
                }
            };
            if let Some(p) = c.agent_task_profiles.iter().find(|p| p.data_dir != *data) {
                return fail(
                    format!(
                        "profile {}/{} serves {}, not {}",
                        p.repository_id,
                        p.profile_id,
                        p.data_dir.display(),
                        shown(data)
                    ),
                    format!(
                        "as {op}: agent-task --data-dir {} deploy config --out {} --force",
                        shown(data),
                        shown(w)
                    ),
                );
            }
            Ok(format!(
                "{} {op}:0600, {} profile(s) on {}",
                shown(w),
                c.agent_task_profiles.len(),
                shown(data)
            ))
        }),
    }

    // The wrapper: root's, and exactly the script `collector wrapper` writes for these pins.
    let mut binary: Option<String> = None;
    let wrapper_fix = format!(
        "as root: agent-task --data-dir {} collector wrapper --out {} --collector-dir {} --binary BINARY --operator-user {op} --agent-user {agent} --sudoers-out {} --endpoint URL --repository R --profile P",
        shown(data),
        shown(&r.wrapper),
        shown(coll),
        shown(&r.sudoers)
    );
    o.run("wrapper", "wrapper", || {
        root_file(&r.wrapper, None, &wrapper_fix)?;
        let text = read_root_file(&r.wrapper).map_err(|d| (d, wrapper_fix.clone()))?;
        let Some(pins) = wrapper::parse_pins(&text) else {
            return fail(
                format!(
                    "{} is not a script `collector wrapper` writes (edited, or another version)",
                    shown(&r.wrapper)
                ),
                wrapper_fix.clone(),
            );
        };
        binary = Some(pins.binary.clone());
        let mut want = vec![
            ("data directory", pins.data_dir.as_str(), shown(data)),
            (
                "collector directory",
                pins.collector_dir.as_str(),
                shown(coll),
            ),
            ("operator", pins.operator.as_str(), op.clone()),
        ];
        // The serve the wrapper's collect uploads to must be the one the
        // agent is told to use, for the same workspace route.
        if let Some(ep) = &r.endpoint {
            want.push((
                "endpoint",
                pins.endpoint.as_str(),
                ep.url.trim_end_matches('/').to_owned(),
            ));
            want.push(("repository", pins.repository.as_str(), ep.repository.clone()));
            want.push(("profile", pins.profile.as_str(), ep.profile.clone()));
        }
        for (what, got, want) in want {
            if got != want {
                return fail(
                    format!("the wrapper pins the {what} {got}, not {want}"),
                    wrapper_fix.clone(),
                );
            }
        }
        Ok(format!(
            "{} pins {} --data-dir {} --collector-dir {} --endpoint {} --repository {} --profile {} for {op}",
            shown(&r.wrapper),
            pins.binary,
            pins.data_dir,
            pins.collector_dir,
            pins.endpoint,
            pins.repository,
            pins.profile
        ))
    });
    o.run("wrapper", "binary", || match &binary {
        None => fail(
            "no binary: the wrapper's pins could not be read",
            wrapper_fix.clone(),
        ),
        Some(b) => {
            let p = Path::new(b);
            root_file(p, None, &wrapper_fix)?;
            Ok(format!("{b} is root's and writable only by root"))
        }
    });

    let rule_fix = wrapper_fix.clone();
    o.run("sudoers", "sudoers", || {
        root_file(&r.sudoers, Some(0o440), &rule_fix)?;
        let name = r
            .sudoers
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.contains('.') || name.ends_with('~') {
            return fail(
                format!(
                    "sudo ignores {}: its name has a dot or ends with ~",
                    shown(&r.sudoers)
                ),
                rule_fix.clone(),
            );
        }
        let text = read_root_file(&r.sudoers).map_err(|d| (d, rule_fix.clone()))?;
        let want = wrapper::sudoers_rule(&shown(&r.wrapper), agent, op);
        if text != want {
            return fail(
                format!(
                    "{} is not exactly the rule for {agent} → {op} running {}",
                    shown(&r.sudoers),
                    shown(&r.wrapper)
                ),
                rule_fix.clone(),
            );
        }
        let Some(v) = wrapper::find_visudo() else {
            return fail(
                "visudo is not installed: the rule cannot be checked",
                "install sudo",
            );
        };
        match std::process::Command::new(&v)
            .arg("-c")
            .arg("-f")
            .arg(&r.sudoers)
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => Ok(format!(
                "{} is the exact rule; visudo -c -f passed",
                shown(&r.sudoers)
            )),
            Ok(out) => fail(
                format!(
                    "visudo -c -f refused {}: {}",
                    shown(&r.sudoers),
                    String::from_utf8_lossy(&out.stdout).trim()
                ),
                rule_fix.clone(),
            ),
            Err(e) => fail(format!("running {}: {e}", v.display()), "install sudo"),
        }
    });

    // As the agent: the key and the stores stay closed; the token is read there.
    let authority = data.join(crate::workflow::service::setup::AUTHORITY_SPEC.file);
    let attempts: [(&'static str, &Path, Try); 4] = [
        ("agent_cannot_read_key", &key, Try::ReadFile),
        ("agent_cannot_list_data_dir", data, Try::ListDir),
        ("agent_cannot_read_authority", &authority, Try::ReadFile),
        ("agent_cannot_list_collector_dir", coll, Try::ListDir),
    ];
    let wanted: Vec<bool> = attempts
        .iter()
        .map(|(n, _, _)| o.wanted("agent", n))
        .collect();
    let token_wanted = r.endpoint.is_some() && o.wanted("endpoint", "endpoint");
    let mut token: Option<std::result::Result<Vec<u8>, String>> = None;
    let probe_report = match (&agent_ids, is_root) {
        (Ok(id), true) if wanted.iter().any(|w| *w) || token_wanted => {
            let tries: Vec<(&Path, Try)> = attempts.iter().map(|(_, p, t)| (*p, *t)).collect();
            let tf = if token_wanted {
                r.endpoint.as_ref().map(|e| e.token_file.as_path())
            } else {
                None
            };
            Some(probe::run(id, &tries, tf))
        }
        _ => None,
    };
    for (i, (name, path, _)) in attempts.iter().enumerate() {
        if !wanted[i] {
            o.skipped("agent", name, "skipped (--skip)");
            continue;
        }
        match &probe_report {
            None if !is_root => o.skipped("agent", name, "needs root (to try as the agent's user)"),
            None => o.push(
                "agent",
                name,
                fail(
                    format!("no agent user {agent} to try as"),
                    "name the agent's user",
                ),
            ),
            Some(Err(e)) => o.push("agent", name, fail(err_text(e), "run deploy check as root")),
            Some(Ok(rep)) => {
                let v = match rep.outcomes.get(i).copied().flatten() {
                    Some(e) => Ok(format!(
                        "as {agent}: {}: {}",
                        shown(path),
                        probe::errno_text(e)
                    )),
                    None => fail(
                        format!("as {agent}: {} OPENED: the agent can read it", shown(path)),
                        format!(
                            "chown {op}: {0} && chmod go-rwx {0}; chmod go-rwx its parents up to a directory {agent} cannot search",
                            shown(path)
                        ),
                    ),
                };
                o.push("agent", name, v);
            }
        }
    }
    if let Some(Ok(rep)) = &probe_report
        && let Some(t) = &rep.token
    {
        token = Some(
            t.clone()
                .map_err(|e| format!("as {agent}: the token file: {}", probe::errno_text(e))),
        );
    }

    match &r.endpoint {
        None => o.skipped("endpoint", "endpoint", "no --endpoint"),
        Some(ep) => o.run("endpoint", "endpoint", || {
            let bytes = match token.take() {
                Some(Ok(b)) => b,
                Some(Err(d)) => return fail(d, format!("give the agent's token file to {agent}, mode 0600 (not a symlink)")),
                None if is_root => return fail("the token file was not read", "run deploy check as root"),
                // Not root: only a token file of the caller's own is read.
                None => match crate::workflow::service::admin::read_token_file(&ep.token_file) {
                    Ok(t) => t.into_bytes(),
                    Err(e) => return fail(err_text(&e), "pass a token file you own (0600), or run as root"),
                },
            };
            let text = String::from_utf8_lossy(&bytes);
            let token = text.lines().next().unwrap_or_default().trim_end_matches('\r').to_owned();
            let client = crate::remote::Client::new(
                crate::remote::Endpoint {
                    base: ep.url.clone(),
                    repository: ep.repository.clone(),
                    profile: ep.profile.clone(),
                },
                token,
            )
            .map_err(|e| (err_text(&e), "pass --endpoint http://HOST:PORT".to_owned()))?;
            match client.op(&crate::workflow::service::facade::OperationRequest::Capabilities {}) {
                Ok(_) => Ok(format!("{} answered capabilities for {}/{} with the agent's token", ep.url, ep.repository, ep.profile)),
                Err(e) => fail(
                    format!("{}: {} ({})", ep.url, err_text(&e), e.code().as_str()),
                    format!("as {op}: agent-task --data-dir {} serve --workspace-config W (deploy config writes W); token issue for the agent if it is revoked", shown(data)),
                ),
            }
        }),
    }

    let hook_fix = "as root: agent-task install-stop --managed (docs/hooks.md)";
    o.run("hooks", "hook_claude_managed", || {
        // The drop-in directory is policy too: a file another user can add
        // there is read as managed settings.
        let dir = r.hooks.claude.with_file_name("managed-settings.d");
        if let Ok(md) = std::fs::symlink_metadata(&dir)
            && (!md.is_dir() || md.uid() != 0 || md.mode() & 0o022 != 0)
        {
            return fail(
                format!(
                    "{} must be a directory owned by root and writable only by root (not a symbolic link)",
                    shown(&dir)
                ),
                format!("chown root:root {0} && chmod 0755 {0}", shown(&dir)),
            );
        }
        let files = claude_managed_files(&r.hooks.claude);
        let mut found = None;
        for f in &files {
            let cmds = managed_file_hooks(Agent::Claude, f, hook_fix)?;
            if found.is_none()
                && let Some(c) = cmds.into_iter().next()
            {
                found = Some((f.clone(), c));
            }
        }
        match found {
            Some((f, c)) => {
                let set = |key: &str| {
                    files.iter().any(|f| {
                        crate::hooks::read_project_file(f)
                            .ok()
                            .flatten()
                            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                            .is_some_and(|v| v.get(key) == Some(&serde_json::Value::Bool(true)))
                    })
                };
                if set("disableAllHooks") {
                    return fail(
                        "a managed settings file sets disableAllHooks: no hook runs, the managed one neither",
                        "remove disableAllHooks from the managed settings",
                    );
                }
                let exclusive = set(managed::CLAUDE_EXCLUSIVE_KEY);
                Ok(format!(
                    "{} runs `{c}` on Stop{}",
                    shown(&f),
                    if exclusive {
                        ""
                    } else {
                        " (without allowManagedHooksOnly the user's own hooks run too: install-stop --managed --exclusive)"
                    }
                ))
            }
            None => fail(
                format!(
                    "no task-stop --managed Stop hook in {} or {}/*.json",
                    shown(&r.hooks.claude),
                    shown(&dir)
                ),
                hook_fix,
            ),
        }
    });
    o.run("hooks", "hook_codex_managed", || {
        let f = &r.hooks.codex;
        match managed_file_hooks(Agent::Codex, f, hook_fix)?
            .into_iter()
            .next()
        {
            Some(c) => Ok(format!("{} runs `{c}` on Stop", shown(f))),
            None => fail(
                format!("{} has no task-codex-stop --managed Stop hook", shown(f)),
                hook_fix,
            ),
        }
    });
    o.run("hooks", "hook_map", || {
        let map = &r.hooks.map;
        let entry_fix = format!(
            "as root: add the agent's uid to {} (docs/hooks.md: root:root 0644, in a root-owned directory, not a symbolic link)",
            shown(map)
        );
        root_file(map, None, &entry_fix)?;
        let a = match &agent_ids {
            Ok(a) => a,
            Err(e) => return fail(err_text(e), "name the agent's user"),
        };
        // The hook's own reading, with its safety rules.
        let entry = match stop_managed::lookup(map, a.uid) {
            Ok(Some(e)) => e,
            Ok(None) => {
                return fail(
                    format!("{} has no entry for {agent} (uid {})", shown(map), a.uid),
                    entry_fix,
                );
            }
            Err(c) => {
                return fail(
                    format!(
                        "{}: {c}: the hook blocks every stop (root-owned, not writable by group or others, in such a directory, not a symbolic link, {{\"users\": {{\"<uid>\": {{endpoint, repository, profile, token_file}}}}}})",
                        shown(map)
                    ),
                    entry_fix,
                );
            }
        };
        if let Some(ep) = &r.endpoint {
            let want = (ep.url.as_str(), ep.repository.as_str(), ep.profile.as_str());
            let got = (
                entry.endpoint.as_str(),
                entry.repository.as_str(),
                entry.profile.as_str(),
            );
            if want != got || entry.token_file != ep.token_file {
                return fail(
                    format!(
                        "{} maps {agent} (uid {}) to {} {}/{} with {}, not {} {}/{} with {}",
                        shown(map),
                        a.uid,
                        got.0,
                        got.1,
                        got.2,
                        shown(&entry.token_file),
                        want.0,
                        want.1,
                        want.2,
                        shown(&ep.token_file)
                    ),
                    entry_fix,
                );
            }
        }
        Ok(format!(
            "{} maps {agent} (uid {}) to {} {}/{}",
            shown(map),
            a.uid,
            entry.endpoint,
            entry.repository,
            entry.profile
        ))
    });

    let failed = o.checks.iter().filter(|c| c.status == Status::Fail).count();
    let skipped = o
        .checks
        .iter()
        .filter(|c| c.status == Status::Skipped)
        .count();
    Ok(CheckReport {
        ok: failed == 0,
        failed,
        skipped,
        checks: o.checks,
    })
}

/// Every check name, in report order.
pub const CHECK_NAMES: &[&str] = &[
    "users",
    "data_dir",
    "collector_dir",
    "signing_key",
    "workspace_config",
    "wrapper",
    "binary",
    "sudoers",
    "agent_cannot_read_key",
    "agent_cannot_list_data_dir",
    "agent_cannot_read_authority",
    "agent_cannot_list_collector_dir",
    "endpoint",
    "hook_claude_managed",
    "hook_codex_managed",
    "hook_map",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_managed_files_are_the_base_then_the_sorted_drop_ins() {
        let t = tempfile::tempdir().expect("tmp");
        let base = t.path().join("managed-settings.json");
        assert!(claude_managed_files(&base).is_empty());
        let d = t.path().join("managed-settings.d");
        std::fs::create_dir(&d).expect("dir");
        for n in ["b.json", "a.json", ".hidden.json", "c.txt"] {
            std::fs::write(d.join(n), "{}").expect("write");
        }
        assert_eq!(
            claude_managed_files(&base),
            vec![d.join("a.json"), d.join("b.json")]
        );
        std::fs::write(&base, "{}").expect("write");
        assert_eq!(claude_managed_files(&base)[0], base);
        // A drop-in directory that is a symbolic link is not read.
        let t2 = tempfile::tempdir().expect("tmp");
        std::os::unix::fs::symlink(&d, t2.path().join("managed-settings.d")).expect("ln");
        assert!(claude_managed_files(&t2.path().join("managed-settings.json")).is_empty());
    }

    #[test]
    fn every_check_name_is_listed_once() {
        let r = CheckRequest {
            data_dir: "/nonexistent/d".into(),
            collector_dir: "/nonexistent/c".into(),
            operator_user: "root".into(),
            agent_user: "no-such-user-agent-task".into(),
            wrapper: "/nonexistent/w".into(),
            sudoers: "/nonexistent/s".into(),
            workspace_config: None,
            endpoint: None,
            hooks: HookPaths {
                claude: "/nonexistent/a".into(),
                codex: "/nonexistent/b".into(),
                map: "/nonexistent/m".into(),
            },
            skip: vec!["agent".into()],
        };
        let rep = run(&r).expect("report");
        let names: Vec<&str> = rep.checks.iter().map(|c| c.name).collect();
        assert_eq!(names, CHECK_NAMES);
        assert!(!rep.ok);
        assert!(
            rep.checks
                .iter()
                .all(|c| c.status != Status::Fail || !c.fix.is_empty())
        );
        let mut bad = r.clone();
        bad.skip = vec!["nope".into()];
        assert!(run(&bad).is_err());
    }
}
