//! Trying paths as the agent's user: a forked child that drops to the
//! user's uid, primary gid and supplementary groups (as `sudo -u` or a
//! login would give them) and then only opens. It never prints or returns
//! a file's content, with one exception the caller asks for: the bounded
//! bytes of the agent's own token file, which the check sends to the
//! endpoint as the bearer. Everything the child does is a raw system call
//! (no allocation, no lock) between `fork` and `_exit`, and every buffer
//! is made before the fork.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The most token bytes the child reads.
const TOKEN_MAX: usize = 1024;

/// What the child may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Try {
    /// `open(O_RDONLY)` of a file.
    ReadFile,
    /// `open(O_RDONLY | O_DIRECTORY)`: listing a directory.
    ListDir,
}

/// The outcome of one attempt: `None` when it succeeded (and the
/// descriptor was closed unread), else the errno.
pub type Outcome = Option<i32>;

/// The identity to become.
#[derive(Debug, Clone)]
pub struct Identity {
    /// uid.
    pub uid: u32,
    /// Primary gid.
    pub gid: u32,
    /// Supplementary groups (the primary one included).
    pub groups: Vec<u32>,
}

/// The identity of user `name`: uid, primary gid and its groups from NSS.
pub fn identity(name: &str) -> Result<Identity> {
    let (uid, gid) = crate::collector::wrapper::user_ids(name)?;
    let c = CString::new(name).map_err(|_| Error::internal("a user name contains NUL"))?;
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; usize::try_from(n).unwrap_or(64)];
        let mut count = n;
        #[allow(unsafe_code)]
        // SAFETY: `c` is a NUL-ended string alive for the call; `groups`
        // holds `count` writable entries and getgrouplist writes at most
        // that many, storing the real number in `count`.
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
        if rc >= 0 {
            groups.truncate(usize::try_from(count).unwrap_or(0));
            return Ok(Identity { uid, gid, groups });
        }
        if n > 65_536 {
            return Err(Error::internal(format!(
                "user {name} is in too many groups"
            )));
        }
        n = count.max(n * 2);
    }
}

/// What the child reports.
#[derive(Debug, Clone)]
pub struct Report {
    /// One outcome per attempt, in order.
    pub outcomes: Vec<Outcome>,
    /// The token file: its first bytes (at most 1 KiB), or the errno.
    pub token: Option<std::result::Result<Vec<u8>, i32>>,
}

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| Error::internal(format!("{} holds a NUL byte", p.display())))
}

/// Forks a child that becomes `who` and tries each of `attempts`, then
/// reads `token_file` (without following a symlink) if given. Must run as
/// root; the caller's process is never changed.
pub fn run(who: &Identity, attempts: &[(&Path, Try)], token_file: Option<&Path>) -> Result<Report> {
    let paths: Vec<(CString, libc::c_int)> = attempts
        .iter()
        .map(|(p, t)| {
            let flags = match t {
                Try::ReadFile => libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK,
                Try::ListDir => libc::O_RDONLY | libc::O_DIRECTORY,
            } | libc::O_CLOEXEC;
            cpath(p).map(|c| (c, flags))
        })
        .collect::<Result<_>>()?;
    let token = token_file.map(cpath).transpose()?;
    let groups: Vec<libc::gid_t> = who.groups.clone();
    // [errno per attempt (i32)] [token errno (i32), token length (i32)] [token bytes]
    let mut out = vec![0u8; 4 * (paths.len() + 2) + TOKEN_MAX];
    let mut fds = [0 as libc::c_int; 2];
    #[allow(unsafe_code)]
    // SAFETY: `fds` is a live two-element array pipe2 fills.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::internal(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    let (rd, wr) = (fds[0], fds[1]);
    #[allow(unsafe_code)]
    // SAFETY: fork(2). The child below only makes async-signal-safe system
    // calls on memory allocated before the fork, then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        #[allow(unsafe_code)]
        // SAFETY: closing the two descriptors pipe2 returned.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return Err(Error::internal(format!("fork: {e}")));
    }
    if pid == 0 {
        #[allow(unsafe_code)]
        // SAFETY: in the child: raw system calls on buffers made before the
        // fork (`groups`, `paths`, `token`, `out`), errno read through its
        // thread-local location, then `_exit` (no destructors, no atexit).
        unsafe {
            let errno = || *libc::__errno_location();
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                || libc::setresgid(who.gid, who.gid, who.gid) != 0
                || libc::setresuid(who.uid, who.uid, who.uid) != 0
                || libc::getuid() != who.uid
                || libc::geteuid() != who.uid
            {
                libc::_exit(90);
            }
            let mut at = 0usize;
            for (p, flags) in &paths {
                let fd = libc::open(p.as_ptr(), *flags);
                let e: i32 = if fd >= 0 {
                    libc::close(fd);
                    0
                } else {
                    errno().max(1)
                };
                out[at..at + 4].copy_from_slice(&e.to_le_bytes());
                at += 4;
            }
            let (mut te, mut tn) = (0i32, 0usize);
            if let Some(t) = &token {
                let fd = libc::open(
                    t.as_ptr(),
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    te = errno().max(1);
                } else {
                    let base = 4 * (paths.len() + 2);
                    while tn < TOKEN_MAX {
                        let n =
                            libc::read(fd, out[base + tn..].as_mut_ptr().cast(), TOKEN_MAX - tn);
                        if n <= 0 {
                            if n < 0 {
                                te = errno().max(1);
                            }
                            break;
                        }
                        tn += n as usize;
                    }
                    libc::close(fd);
                }
            } else {
                te = -1;
            }
            out[at..at + 4].copy_from_slice(&te.to_le_bytes());
            out[at + 4..at + 8].copy_from_slice(&(tn as i32).to_le_bytes());
            let mut sent = 0usize;
            while sent < out.len() {
                let n = libc::write(wr, out[sent..].as_ptr().cast(), out.len() - sent);
                if n <= 0 {
                    libc::_exit(91);
                }
                sent += n as usize;
            }
            libc::_exit(0);
        }
    }
    #[allow(unsafe_code)]
    // SAFETY: the parent closes its copy of the write end it owns.
    unsafe {
        libc::close(wr);
    }
    use std::io::Read;
    use std::os::fd::FromRawFd;
    #[allow(unsafe_code)]
    // SAFETY: `rd` is the pipe's read end, owned here and by nothing else.
    let mut reader = unsafe { std::fs::File::from_raw_fd(rd) };
    let mut got = Vec::with_capacity(out.len());
    let read = reader.read_to_end(&mut got);
    let mut status: libc::c_int = 0;
    #[allow(unsafe_code)]
    // SAFETY: waits for the child forked above; `status` is a live local.
    let w = unsafe { libc::waitpid(pid, &mut status, 0) };
    read.map_err(|e| Error::internal(format!("reading the probe's answer: {e}")))?;
    if w != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(Error::internal(format!(
            "the probe child could not become uid {} (exit status {status})",
            who.uid
        )));
    }
    if got.len() != out.len() {
        return Err(Error::internal("the probe child's answer is truncated"));
    }
    let word = |i: usize| -> i32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&got[4 * i..4 * i + 4]);
        i32::from_le_bytes(b)
    };
    let outcomes = (0..paths.len())
        .map(|i| Some(word(i)).filter(|e| *e != 0))
        .collect();
    let te = word(paths.len());
    let tn = usize::try_from(word(paths.len() + 1))
        .unwrap_or(0)
        .min(TOKEN_MAX);
    let base = 4 * (paths.len() + 2);
    let token = match te {
        -1 => None,
        0 => Some(Ok(got[base..base + tn].to_vec())),
        e => Some(Err(e)),
    };
    Ok(Report { outcomes, token })
}

/// `EACCES (Permission denied)`-style text of an errno.
pub fn errno_text(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::print_stdout)] // a test explains its skip
    fn a_probe_as_nobody_cannot_read_a_private_file() {
        if !rustix::process::geteuid().is_root() {
            println!("SKIP: dropping to another uid needs root");
            return;
        }
        let t = tempfile::tempdir().expect("tempdir");
        let secret = t.path().join("secret");
        std::fs::write(&secret, b"k").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let who = Identity {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        let r = run(
            &who,
            &[(&secret, Try::ReadFile), (t.path(), Try::ListDir)],
            Some(&secret),
        )
        .expect("probe");
        assert_eq!(r.outcomes, vec![Some(libc::EACCES), None]);
        assert!(matches!(r.token, Some(Err(libc::EACCES))));
        // As root itself (uid 0) the same file opens: the child really changed uid above.
        let root = Identity {
            uid: 0,
            gid: 0,
            groups: vec![0],
        };
        let r = run(&root, &[(&secret, Try::ReadFile)], Some(&secret)).expect("probe");
        assert_eq!(r.outcomes, vec![None]);
        assert_eq!(r.token.and_then(|t| t.ok()), Some(b"k".to_vec()));
    }
}
