//! The sudo wrapper of a privilege-separated deployment
//! (`agent-task collector wrapper`): a root-owned shell script that is the
//! one command a sudoers rule lets the agent's Unix user run as the
//! operator. It pins the binary, the data directory, the collector
//! directory, the operator's `serve` endpoint with the repository and
//! profile the transfer is uploaded to, and (optionally) the review
//! credential file; it takes no arguments, resets the environment and
//! passes on only stdin (the agent's token on the first line, then the
//! descriptor), so nothing the agent passes can point `collect` at another
//! data directory, collector directory, endpoint, credential or binary.
//! The sudoers rule allows exactly that script without arguments.
//!
//! The collect it starts never imports locally: the agent can stop any
//! process it starts (sudo relays SIGTSTP; SIGSTOP, a frozen cgroup or an
//! unread pipe need no relay), so that process must never hold
//! `DATA_DIR/lock` or an authority write transaction. It uploads through
//! the operator's `serve`, whose writer no agent can stop, and reads the
//! data directory only without a lock (`--token-on-stdin` implies this; see
//! `cli::commands::collect`). See `docs/security.md`.

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use serde::Serialize;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `collector wrapper` request.
#[derive(Debug, Clone)]
pub struct WrapperRequest {
    /// Where the wrapper script goes (absolute, in a root-owned directory).
    pub out: PathBuf,
    /// The operator's data directory (absolute, the operator's, 0700).
    pub data_dir: PathBuf,
    /// The operator's collector directory (absolute, the operator's, 0700).
    pub collector_dir: PathBuf,
    /// The agent-task binary the wrapper runs (absolute, root-owned).
    pub binary: PathBuf,
    /// The operator's user name (the user `sudo -u` runs the wrapper as).
    pub operator_user: String,
    /// The agent's user name (the only user the rule lets run it).
    pub agent_user: String,
    /// Where to write the sudoers rule (e.g. `/etc/sudoers.d/agent-task-collect`).
    pub sudoers_out: Option<PathBuf>,
    /// The operator's `serve` (`http://host:port`) the collect uploads to.
    pub endpoint: String,
    /// The workspace repository id of the upload route.
    pub repository: String,
    /// The workspace profile id of the upload route.
    pub profile: String,
    /// The operator's review credential file (0600, the operator's),
    /// handed to the pinned reviewer only.
    pub review_credential_file: Option<PathBuf>,
}

/// `collector wrapper` output.
#[derive(Debug, Serialize)]
pub struct WrapperOutput {
    /// The wrapper script written.
    pub wrapper: String,
    /// SHA-256 of the script.
    pub wrapper_sha256: String,
    /// The pinned binary and its SHA-256 when the wrapper was written.
    pub binary: String,
    /// SHA-256 of the binary.
    pub binary_sha256: String,
    /// The pinned data directory.
    pub data_dir: String,
    /// The pinned collector directory.
    pub collector_dir: String,
    /// The pinned upload endpoint.
    pub endpoint: String,
    /// The pinned workspace repository id.
    pub repository: String,
    /// The pinned workspace profile id.
    pub profile: String,
    /// The pinned review credential file, if any.
    pub review_credential_file: Option<String>,
    /// The operator user and uid.
    pub operator_user: String,
    /// The operator's uid.
    pub operator_uid: u32,
    /// The agent user.
    pub agent_user: String,
    /// The sudoers rule (written to `sudoers_file` when asked).
    pub sudoers_rule: String,
    /// The sudoers file written, if any.
    pub sudoers_file: Option<String>,
    /// `passed` (visudo -cf accepted the rule), `unavailable` (no visudo
    /// on this host) or `not_written` (no --sudoers-out).
    pub visudo: &'static str,
    /// What the agent runs to collect.
    pub agent_command: String,
}

/// Characters a pinned path may hold: none needs quoting in `sh` or
/// escaping in sudoers.
fn plain_path(what: &str, p: &Path) -> Result<String> {
    let s = p
        .to_str()
        .ok_or_else(|| Error::new(Code::InvalidInput, format!("{what} is not UTF-8")))?;
    if !p.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            format!("{what} must be an absolute path"),
        ));
    }
    let ok = s.len() <= 1024
        && s.split('/').all(|c| c != "." && c != "..")
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b));
    if !ok {
        return Err(Error::new(
            Code::InvalidInput,
            format!(
                "{what} {s:?} must be a normalised absolute path of [A-Za-z0-9/._+-] (no quoting \
                 is needed in the script or the sudoers rule)"
            ),
        ));
    }
    Ok(s.to_owned())
}

/// The upload endpoint: `http://` or `https://` then a host and port of
/// `[A-Za-z0-9.:-]` (or a bracketed IPv6 address), no user, path, query or
/// fragment: nothing needs quoting in the script, and nothing the agent
/// controls picks where its evidence goes.
fn plain_endpoint(s: &str) -> Result<String> {
    let rest = s
        .strip_prefix("http://")
        .or_else(|| s.strip_prefix("https://"));
    let ok = rest.is_some_and(|r| {
        let r = r.strip_suffix('/').unwrap_or(r);
        !r.is_empty()
            && r.len() <= 255
            && !r.starts_with(':')
            && r.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".:-[]".contains(&b))
    });
    if !ok {
        return Err(Error::new(
            Code::InvalidInput,
            format!(
                "--endpoint {s:?} must be http://HOST:PORT or https://HOST:PORT (the operator's \
                 serve; no user, path or query)"
            ),
        ));
    }
    Ok(s.trim_end_matches('/').to_owned())
}

/// A workspace repository or profile id the script carries unquoted.
fn plain_id(what: &str, s: &str) -> Result<()> {
    crate::contract::check_id(what, s)
}

/// A user name as useradd's default rule accepts it.
fn user_name(what: &str, s: &str) -> Result<()> {
    let ok = (1..=32).contains(&s.len())
        && s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::new(
            Code::InvalidInput,
            format!("{what} {s:?} is not a user name ([a-z_][a-z0-9_-]{{0,31}})"),
        ));
    }
    Ok(())
}

/// The uid of a user (NSS, as sudo resolves it), or `not_found`.
pub fn user_uid(name: &str) -> Result<u32> {
    user_ids(name).map(|(uid, _)| uid)
}

/// The uid and primary gid of a user (NSS, as sudo resolves it), or
/// `not_found`.
pub fn user_ids(name: &str) -> Result<(u32, u32)> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| Error::new(Code::InvalidInput, "a user name contains NUL"))?;
    let mut pw: libc::passwd = {
        #[allow(unsafe_code)]
        // SAFETY: `passwd` is a plain C struct of integers and pointers;
        // all-zero is a valid (empty) value that getpwnam_r overwrites.
        unsafe {
            std::mem::zeroed()
        }
    };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    #[allow(unsafe_code)]
    // SAFETY: every pointer is valid for the call: the name is a NUL-ended
    // CString, `pw` and `result` are live locals, and `buf` is a live
    // buffer of the length passed. getpwnam_r writes only into them.
    let rc = unsafe {
        libc::getpwnam_r(
            c.as_ptr(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return Err(Error::new(
            Code::NotFound,
            format!("no user {name} on this host"),
        ));
    }
    Ok((pw.pw_uid, pw.pw_gid))
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Refuses `dir` (or any directory above it) unless each is a real
/// directory owned by root or `uid` and not writable by group or other (a
/// root-owned sticky directory excepted).
pub fn check_ancestry(path: &Path, uid: u32) -> Result<()> {
    let mut cur = Some(path);
    while let Some(d) = cur {
        let md = std::fs::symlink_metadata(d).map_err(|e| Error::io("stat", d, e))?;
        let shown = d.display().to_string();
        if md.file_type().is_symlink() {
            return Err(Error::new(
                Code::SymlinkRefused,
                format!("{shown} is a symbolic link; name the real path"),
            )
            .with("path", shown));
        }
        let mode = md.permissions().mode() & 0o7777;
        let sticky_root = mode & 0o1000 != 0 && md.uid() == 0;
        if (md.uid() != 0 && md.uid() != uid) || (mode & 0o022 != 0 && !sticky_root) {
            return Err(Error::new(
                Code::InsecurePermissions,
                format!(
                    "{shown} (owner uid {}, mode {mode:04o}) could be replaced by another user",
                    md.uid()
                ),
            )
            .with("path", shown));
        }
        cur = d.parent();
    }
    Ok(())
}

/// Checks a store directory the operator must own privately.
pub fn operator_private_dir(what: &str, p: &Path, uid: u32) -> Result<()> {
    let md = std::fs::symlink_metadata(p).map_err(|e| Error::io("stat", p, e))?;
    if !md.is_dir() || md.uid() != uid || md.permissions().mode() & 0o077 != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "{what} {} must be a directory owned by the operator (uid {uid}) with mode 0700",
                p.display()
            ),
        )
        .with("path", p.display().to_string()));
    }
    check_ancestry(p, uid)
}

/// What a wrapper script pins.
#[derive(Debug, Clone)]
pub struct Pins<'a> {
    /// The agent-task binary.
    pub binary: &'a str,
    /// The data directory (read without a lock).
    pub data_dir: &'a str,
    /// The collector directory.
    pub collector_dir: &'a str,
    /// The operator user.
    pub operator: &'a str,
    /// The operator's `serve`.
    pub endpoint: &'a str,
    /// The workspace repository id.
    pub repository: &'a str,
    /// The workspace profile id.
    pub profile: &'a str,
    /// The review credential file.
    pub review_credential_file: Option<&'a str>,
}

/// The wrapper script's text.
pub fn script(p: &Pins<'_>) -> String {
    let Pins {
        binary,
        data_dir,
        collector_dir,
        operator,
        endpoint,
        repository,
        profile,
        review_credential_file,
    } = p;
    let credential = match review_credential_file {
        Some(f) => format!(" \\\n    --review-credential-file {f}"),
        None => String::new(),
    };
    format!(
        "#!/bin/sh\n\
         # agent-task collect wrapper for the operator user {operator}, written by\n\
         # `agent-task collector wrapper` (docs/security.md, \"Privilege-separated\n\
         # deployment\"). The sudoers rule lets the agent's user run exactly this file,\n\
         # without arguments, as {operator}. It pins the binary, the data directory,\n\
         # the collector directory and the operator's serve (collect uploads there and\n\
         # never imports locally: nothing the agent starts takes the data directory's\n\
         # lock), resets the environment and passes on only stdin: the agent's token on\n\
         # the first line, then the collector descriptor.\n\
         if [ \"$#\" -ne 0 ]; then\n\
         \x20   printf '%s\\n' '{{\"error\":\"usage\",\"message\":\"the collect wrapper takes no arguments: the token and the descriptor come on stdin\"}}' >&2\n\
         \x20   exit 64\n\
         fi\n\
         umask 077\n\
         cd / || exit 71\n\
         exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \\\n\
         \x20   {binary} --data-dir {data_dir} collect \\\n\
         \x20   --collector-dir {collector_dir} --descriptor - --token-on-stdin \\\n\
         \x20   --endpoint {endpoint} --repository {repository} --profile {profile}{credential}\n"
    )
}

/// What a wrapper script pins, read back from its text (the owned form
/// of [`Pins`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPins {
    /// The agent-task binary.
    pub binary: String,
    /// The operator's data directory.
    pub data_dir: String,
    /// The operator's collector directory.
    pub collector_dir: String,
    /// The operator user the script is written for.
    pub operator: String,
    /// The operator's `serve` the collect uploads to.
    pub endpoint: String,
    /// The workspace repository id.
    pub repository: String,
    /// The workspace profile id.
    pub profile: String,
    /// The review credential file, when one is pinned.
    pub review_credential_file: Option<String>,
}

impl ParsedPins {
    /// The borrowed form [`script`] renders.
    pub fn as_pins(&self) -> Pins<'_> {
        Pins {
            binary: &self.binary,
            data_dir: &self.data_dir,
            collector_dir: &self.collector_dir,
            operator: &self.operator,
            endpoint: &self.endpoint,
            repository: &self.repository,
            profile: &self.profile,
            review_credential_file: self.review_credential_file.as_deref(),
        }
    }
}

/// The pins of a wrapper script, read back from its text: `Some` only
/// when [`script`] renders exactly `text` from them, so a script edited
/// in any byte (or written by another version) is `None`.
pub fn parse_pins(text: &str) -> Option<ParsedPins> {
    let operator = text
        .lines()
        .nth(1)?
        .strip_prefix("# agent-task collect wrapper for the operator user ")?
        .strip_suffix(", written by")?;
    let mut exec = text
        .lines()
        .skip_while(|l| !l.starts_with("exec /usr/bin/env -i "))
        .skip(1);
    let mut first = exec.next()?.split_whitespace();
    let binary = first.next()?;
    (first.next()? == "--data-dir").then_some(())?;
    let data_dir = first.next()?;
    let mut second = exec.next()?.split_whitespace();
    (second.next()? == "--collector-dir").then_some(())?;
    let collector_dir = second.next()?;
    let mut third = exec.next()?.split_whitespace();
    (third.next()? == "--endpoint").then_some(())?;
    let endpoint = third.next()?;
    (third.next()? == "--repository").then_some(())?;
    let repository = third.next()?;
    (third.next()? == "--profile").then_some(())?;
    let profile = third.next()?;
    let review_credential_file = match exec.next() {
        None => None,
        Some(line) => {
            let mut fourth = line.split_whitespace();
            (fourth.next()? == "--review-credential-file").then_some(())?;
            Some(fourth.next()?.to_owned())
        }
    };
    let pins = ParsedPins {
        binary: binary.to_owned(),
        data_dir: data_dir.to_owned(),
        collector_dir: collector_dir.to_owned(),
        operator: operator.to_owned(),
        endpoint: endpoint.to_owned(),
        repository: repository.to_owned(),
        profile: profile.to_owned(),
        review_credential_file,
    };
    (script(&pins.as_pins()) == text).then_some(pins)
}

/// The sudoers rule: `agent` may run `wrapper`, without arguments and
/// with a reset environment, as `operator`, and nothing else.
pub fn sudoers_rule(wrapper: &str, agent: &str, operator: &str) -> String {
    format!(
        "# agent-task: {agent} may run exactly the collect wrapper, without arguments, as {operator}\n\
         # (written by `agent-task collector wrapper`; docs/security.md).\n\
         Defaults!{wrapper} env_reset, !setenv\n\
         {agent} ALL=({operator}) NOPASSWD: {wrapper} \"\"\n"
    )
}

fn sha256_file(p: &Path) -> Result<String> {
    use sha2::Digest;
    use std::io::Read;
    let mut f = private_fs::open_nofollow_read(p)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io("read", p, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(data_encoding::HEXLOWER.encode(&h.finalize()))
}

/// Writes `bytes` to `path` as root with `mode`, through a temp file in
/// the same directory whose name sudo ignores (it has a dot), then an
/// atomic rename. `check` runs on the temp file before the rename.
fn install_file(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    check: &dyn Fn(&Path) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| Error::internal("installed path has no parent"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".agent-task-")
        .tempfile_in(dir)
        .map_err(|e| Error::io("create temp file in", dir, e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("fsync", tmp.path(), e))?;
    check(tmp.path())?;
    tmp.persist(path)
        .map_err(|e| Error::io("rename into", path, e.error))?;
    private_fs::sync_dir(dir)
}

/// Refuses to replace anything at `path` but a root-owned regular file.
fn replaceable(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("stat", path, e)),
        Ok(md) if md.is_file() && md.uid() == 0 => Ok(()),
        Ok(_) => Err(Error::new(
            Code::Conflict,
            format!(
                "{} exists and is not a root-owned regular file; remove it first",
                path.display()
            ),
        )),
    }
}

/// The visudo binary, where a distribution installs it.
pub fn find_visudo() -> Option<PathBuf> {
    ["/usr/sbin/visudo", "/usr/bin/visudo", "/sbin/visudo"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Writes the wrapper (and, when asked, the sudoers rule) after checking
/// the deployment: run as root; the binary, the wrapper's directory and
/// the sudoers directory root-owned and not writable by others; the data
/// and collector directories the operator's, private, under directories
/// only root or the operator can change; the operator and the agent
/// distinct existing users, the agent not root.
pub fn write(r: &WrapperRequest) -> Result<WrapperOutput> {
    if euid() != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            "collector wrapper must run as root: the wrapper and the sudoers rule must be \
             root-owned so that neither the agent nor the operator can change them",
        ));
    }
    user_name("--operator-user", &r.operator_user)?;
    user_name("--agent-user", &r.agent_user)?;
    if r.operator_user == r.agent_user {
        return Err(Error::new(
            Code::InvalidInput,
            "the agent and the operator must be different users: that is the separation",
        ));
    }
    let op_uid = user_uid(&r.operator_user)?;
    let agent_uid = user_uid(&r.agent_user)?;
    if agent_uid == 0 || agent_uid == op_uid {
        return Err(Error::new(
            Code::InvalidInput,
            "the agent's user must be an unprivileged user other than the operator",
        ));
    }
    let out = plain_path("--out", &r.out)?;
    let binary = plain_path("--binary", &r.binary)?;
    let data_dir = plain_path("--data-dir", &r.data_dir)?;
    let collector_dir = plain_path("--collector-dir", &r.collector_dir)?;
    let bmd = std::fs::symlink_metadata(&r.binary).map_err(|e| Error::io("stat", &r.binary, e))?;
    if !bmd.is_file() || bmd.uid() != 0 || bmd.permissions().mode() & 0o022 != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "the binary {binary} must be a regular file owned by root and writable by no one \
                 else (copy it out of the build tree: install -o root -m 0755)"
            ),
        ));
    }
    if bmd.permissions().mode() & 0o001 == 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!("the binary {binary} must be executable by the operator (mode 0755)"),
        ));
    }
    let bin_dir = r
        .binary
        .parent()
        .ok_or_else(|| Error::new(Code::Usage, "--binary has no directory"))?;
    check_ancestry(bin_dir, 0)?;
    let out_dir = r
        .out
        .parent()
        .ok_or_else(|| Error::new(Code::Usage, "--out has no directory"))?;
    check_ancestry(out_dir, 0)?;
    replaceable(&r.out)?;
    operator_private_dir("the data directory", &r.data_dir, op_uid)?;
    operator_private_dir("the collector directory", &r.collector_dir, op_uid)?;
    let key = r.collector_dir.join(crate::contract::KEY_FILE);
    let kmd = std::fs::symlink_metadata(&key).map_err(|e| Error::io("stat", &key, e))?;
    if !kmd.is_file() || kmd.uid() != op_uid || kmd.permissions().mode() & 0o077 != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "the signing key {} must be the operator's, mode 0600 (keygen as the operator)",
                key.display()
            ),
        ));
    }
    let endpoint = plain_endpoint(&r.endpoint)?;
    plain_id("--repository", &r.repository)?;
    plain_id("--profile", &r.profile)?;
    let credential = match &r.review_credential_file {
        None => None,
        Some(p) => {
            let shown = plain_path("--review-credential-file", p)?;
            let dir = p.parent().ok_or_else(|| {
                Error::new(Code::Usage, "--review-credential-file has no directory")
            })?;
            check_ancestry(dir, op_uid)?;
            crate::collector::review::credential::check_file(p, op_uid)?;
            Some(shown)
        }
    };
    // Every check of the sudoers path before anything is written.
    if let Some(p) = &r.sudoers_out {
        plain_path("--sudoers-out", p)?;
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.contains('.') || name.ends_with('~') {
            return Err(Error::new(
                Code::Usage,
                "sudo ignores a sudoers.d file whose name has a dot or ends with ~: pick \
                 another name (e.g. agent-task-collect)",
            ));
        }
        let dir = p
            .parent()
            .ok_or_else(|| Error::new(Code::Usage, "--sudoers-out has no directory"))?;
        check_ancestry(dir, 0)?;
        replaceable(p)?;
    }
    let text = script(&Pins {
        binary: &binary,
        data_dir: &data_dir,
        collector_dir: &collector_dir,
        operator: &r.operator_user,
        endpoint: &endpoint,
        repository: &r.repository,
        profile: &r.profile,
        review_credential_file: credential.as_deref(),
    });
    install_file(&r.out, text.as_bytes(), 0o755, &|_| Ok(()))?;
    let rule = sudoers_rule(&out, &r.agent_user, &r.operator_user);
    let (sudoers_file, visudo) = match &r.sudoers_out {
        None => (None, "not_written"),
        Some(p) => {
            let visudo = find_visudo();
            let check = |tmp: &Path| -> Result<()> {
                let Some(v) = &visudo else { return Ok(()) };
                let o = std::process::Command::new(v)
                    .arg("-cf")
                    .arg(tmp)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| Error::io("run", v, e))?;
                if o.status.success() {
                    Ok(())
                } else {
                    Err(Error::new(
                        Code::Config,
                        format!(
                            "visudo -c refused the rule: {}",
                            String::from_utf8_lossy(&o.stdout).trim()
                        ),
                    ))
                }
            };
            install_file(p, rule.as_bytes(), 0o440, &check)?;
            (
                Some(p.display().to_string()),
                if visudo.is_some() {
                    "passed"
                } else {
                    "unavailable"
                },
            )
        }
    };
    Ok(WrapperOutput {
        wrapper: out.clone(),
        wrapper_sha256: data_encoding::HEXLOWER.encode(&{
            use sha2::Digest;
            sha2::Sha256::digest(text.as_bytes())
        }),
        binary_sha256: sha256_file(&r.binary)?,
        binary,
        data_dir,
        collector_dir,
        endpoint,
        repository: r.repository.clone(),
        profile: r.profile.clone(),
        review_credential_file: credential,
        operator_user: r.operator_user.clone(),
        operator_uid: op_uid,
        agent_user: r.agent_user.clone(),
        sudoers_rule: rule,
        sudoers_file,
        visudo,
        agent_command: format!(
            "cat TOKEN_FILE DESCRIPTOR_FILE | sudo -n -u {} {out}",
            r.operator_user
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_need_no_quoting() {
        assert!(plain_path("p", Path::new("/usr/local/bin/agent-task")).is_ok());
        for bad in [
            "rel/x", "/a b", "/a'b", "/a/../b", "/a/./b", "/a,b", "/a:b", "/a=b", "/a\\b",
        ] {
            assert!(plain_path("p", Path::new(bad)).is_err(), "{bad}");
        }
        assert!(user_name("u", "agent-1").is_ok());
        for bad in ["", "Root", "1x", "a b", "a:b", &"a".repeat(33)] {
            assert!(user_name("u", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn script_and_rule_pin_everything() {
        let mut pins = Pins {
            binary: "/opt/at/agent-task",
            data_dir: "/srv/d",
            collector_dir: "/srv/c",
            operator: "op",
            endpoint: "http://127.0.0.1:7070",
            repository: "demo-basic",
            profile: "default",
            review_credential_file: None,
        };
        let s = script(&pins);
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(s.contains("if [ \"$#\" -ne 0 ]; then"));
        assert!(s.contains(
            "exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \\\n    /opt/at/agent-task --data-dir /srv/d collect \\\n    --collector-dir /srv/c --descriptor - --token-on-stdin \\\n    --endpoint http://127.0.0.1:7070 --repository demo-basic --profile default\n"
        ));
        let read = parse_pins(&s).expect("pins read back");
        assert_eq!(
            (
                &*read.binary,
                &*read.data_dir,
                &*read.collector_dir,
                &*read.operator,
                &*read.endpoint,
                &*read.repository,
                &*read.profile,
                read.review_credential_file.as_deref()
            ),
            (
                "/opt/at/agent-task",
                "/srv/d",
                "/srv/c",
                "op",
                "http://127.0.0.1:7070",
                "demo-basic",
                "default",
                None
            )
        );
        assert_eq!(parse_pins(&s.replace("/srv/d ", "/srv/e  ")), None);
        assert_eq!(parse_pins(&format!("{s}id\n")), None);
        assert_eq!(parse_pins(""), None);
        pins.review_credential_file = Some("/srv/review.env");
        let with_credential = script(&pins);
        assert!(
            with_credential
                .ends_with("--profile default \\\n    --review-credential-file /srv/review.env\n")
        );
        assert_eq!(
            parse_pins(&with_credential)
                .expect("pins read back")
                .review_credential_file
                .as_deref(),
            Some("/srv/review.env")
        );
        assert!(
            plain_endpoint("http://127.0.0.1:7070/").is_ok_and(|e| e == "http://127.0.0.1:7070")
        );
        assert!(plain_endpoint("https://[::1]:8443").is_ok());
        for bad in [
            "ftp://h:1",
            "http://",
            "http://u@h:1",
            "http://h:1/x",
            "http://h:1?q",
            "http://h 1",
            "http://h:1#f",
            "http://$(id):1",
            "http://:1",
        ] {
            assert!(plain_endpoint(bad).is_err(), "{bad}");
        }
        let r = sudoers_rule("/usr/local/sbin/agent-task-collect", "agent", "op");
        assert!(r.contains("Defaults!/usr/local/sbin/agent-task-collect env_reset, !setenv\n"));
        assert!(r.ends_with("agent ALL=(op) NOPASSWD: /usr/local/sbin/agent-task-collect \"\"\n"));
        assert!(user_uid("root").is_ok_and(|u| u == 0));
        assert_eq!(
            user_uid("no-such-user-agent-task")
                .map_err(|e| e.code())
                .err(),
            Some(Code::NotFound)
        );
    }
}
