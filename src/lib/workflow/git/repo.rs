//! Git in an operator's repository, through the runner ([`super::run`]):
//! the operator's identity, where a branch is checked out, and the work
//! tree of a landing (clean checks and the fast-forward, with no filter
//! driver and no system or global configuration).

use super::run;
use crate::error::{Code, Error, Result};
use std::path::{Path, PathBuf};

/// Longest `--author` (and git identity) accepted.
pub const MAX_IDENT_BYTES: usize = 512;

/// A commit identity: name and email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// Name.
    pub name: String,
    /// Email (without the angle brackets).
    pub email: String,
}

impl Ident {
    /// Parses `Name <email>` (what `--author` takes, and the start of
    /// `git var GIT_AUTHOR_IDENT`): a name and an email without angle
    /// brackets, newlines or NUL, at most [`MAX_IDENT_BYTES`].
    pub fn parse(s: &str) -> Result<Ident> {
        let bad = || {
            Error::new(
                Code::InvalidInput,
                "an identity must be \"Name <email>\" (no angle brackets or control characters inside)",
            )
        };
        if s.len() > MAX_IDENT_BYTES || s.chars().any(char::is_control) {
            return Err(bad());
        }
        let (name, rest) = s.split_once('<').ok_or_else(bad)?;
        let (email, tail) = rest.split_once('>').ok_or_else(bad)?;
        let (name, email) = (name.trim(), email.trim());
        if name.is_empty()
            || email.is_empty()
            || name.contains('>')
            || email.contains(['<', '>'])
            || tail.contains(['<', '>'])
        {
            return Err(bad());
        }
        Ok(Ident {
            name: name.to_owned(),
            email: email.to_owned(),
        })
    }
}

/// The operator's identity as git resolves it in `repo` (its config and
/// git's `GIT_AUTHOR_*`/`GIT_COMMITTER_*` variables; never guessed from
/// the host name): (author, committer). `--author` replaces both.
pub fn operator_idents(repo: &Path, author: Option<&str>) -> Result<(Ident, Ident)> {
    if let Some(a) = author {
        let i = Ident::parse(a)?;
        return Ok((i.clone(), i));
    }
    let one = |var: &str| -> Result<Ident> {
        let (code, out, _) = run(
            repo,
            &["-c", "user.useConfigOnly=true", "var", var],
            &[],
            None,
        )?;
        if code != 0 {
            return Err(Error::new(
                Code::InvalidInput,
                "the operator has no git identity in this repository: set user.name and \
                 user.email (git config), or pass land --author \"Name <email>\"",
            )
            .with("repository", repo.display().to_string()));
        }
        let line = String::from_utf8_lossy(&out);
        // "Name <email> 1700000000 +0000": keep through the '>'.
        let upto = line.rfind('>').map_or(line.len(), |i| i + 1);
        Ident::parse(line[..upto].trim())
    };
    Ok((one("GIT_AUTHOR_IDENT")?, one("GIT_COMMITTER_IDENT")?))
}

/// Where `ref_name` is checked out: the work tree path of every
/// non-bare work tree (the main one and linked ones) whose `HEAD` is that
/// branch.
pub fn checked_out(repo: &Path, ref_name: &str) -> Result<Vec<PathBuf>> {
    let (code, out, err) = run(repo, &["worktree", "list", "--porcelain", "-z"], &[], None)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!("git worktree list failed: {err}"),
        ));
    }
    let mut found = Vec::new();
    let (mut path, mut branch, mut bare) = (None, None, false);
    let mut flush = |path: &mut Option<PathBuf>, branch: &mut Option<String>, bare: &mut bool| {
        if let (Some(p), Some(b)) = (path.take(), branch.take())
            && !*bare
            && b == ref_name
        {
            found.push(p);
        }
        *path = None;
        *branch = None;
        *bare = false;
    };
    for field in out.split(|&b| b == 0) {
        if field.is_empty() {
            flush(&mut path, &mut branch, &mut bare);
            continue;
        }
        let f = String::from_utf8_lossy(field);
        if let Some(p) = f.strip_prefix("worktree ") {
            flush(&mut path, &mut branch, &mut bare);
            path = Some(PathBuf::from(p));
        } else if let Some(b) = f.strip_prefix("branch ") {
            branch = Some(b.to_owned());
        } else if f == "bare" {
            bare = true;
        }
    }
    flush(&mut path, &mut branch, &mut bare);
    Ok(found)
}

/// The environment of a work tree update: no system or global git
/// configuration (where filter drivers such as LFS are usually
/// installed), no system attributes, and LFS's own smudge skipped.
pub const ISOLATED: [(&str, &str); 4] = [
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_ATTR_NOSYSTEM", "1"),
    ("GIT_LFS_SKIP_SMUDGE", "1"),
];

/// `-c` overrides that switch off every filter driver the repository's
/// own configuration defines (smudge, clean and process emptied,
/// `required` false), so checking files out runs no configured program.
fn no_filters(wt: &Path) -> Result<Vec<String>> {
    let (code, out, _) = run(
        wt,
        &[
            "config",
            "--local",
            "--name-only",
            "-z",
            "--get-regexp",
            r"^filter\..*\.",
        ],
        &ISOLATED,
        None,
    )?;
    let mut names: Vec<String> = Vec::new();
    if code == 0 {
        for key in out.split(|&b| b == 0).filter(|k| !k.is_empty()) {
            let key = String::from_utf8_lossy(key);
            if let Some(name) = key
                .strip_prefix("filter.")
                .and_then(|k| k.rsplit_once('.'))
                .map(|(n, _)| n.to_owned())
                && !names.contains(&name)
            {
                names.push(name);
            }
        }
    }
    let mut args = Vec::new();
    for n in names {
        for (k, v) in [
            ("smudge", ""),
            ("clean", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            args.push("-c".to_owned());
            args.push(format!("filter.{n}.{k}={v}"));
        }
    }
    Ok(args)
}

/// Why the checked-out work tree `wt` is not clean relative to `head`, or
/// `None`: staged or unstaged changes to tracked files, or (with `new`)
/// untracked files the move to `new` would overwrite. Reads only (the
/// index's stat data is refreshed, as `git status` does).
pub fn dirty(wt: &Path, head: &str, new: Option<&str>) -> Result<Option<&'static str>> {
    let filters = no_filters(wt)?;
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v = filters.clone();
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let go = |args: Vec<String>| -> Result<i32> {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(run(wt, &a, &ISOLATED, None)?.0)
    };
    // A failure to refresh (a locked index) is not cleanliness.
    if go(with(&["update-index", "-q", "--refresh"]))? > 1 {
        return Ok(Some("the index could not be refreshed"));
    }
    if go(with(&["diff-index", "--quiet", "--cached", head, "--"]))? != 0 {
        return Ok(Some("the index has staged changes"));
    }
    if go(with(&["diff-files", "--quiet"]))? != 0 {
        return Ok(Some("tracked files have changes that are not committed"));
    }
    if let Some(new) = new
        && go(with(&["read-tree", "-n", "-m", "-u", head, new]))? != 0
    {
        return Ok(Some("untracked files would be overwritten"));
    }
    Ok(None)
}

/// Whether the index of `wt` is exactly the tree of `commit`.
pub fn index_is(wt: &Path, commit: &str) -> Result<bool> {
    let (code, _, _) = run(
        wt,
        &["diff-index", "--quiet", "--cached", commit, "--"],
        &ISOLATED,
        None,
    )?;
    Ok(code == 0)
}

/// Moves the index and files of the clean work tree `wt` from `old` to
/// `new` as a fast-forward merge does (`git read-tree -m -u`), with no
/// filter driver, hook or system/global configuration.
pub fn fast_forward(wt: &Path, old: &str, new: &str) -> Result<()> {
    let mut args = no_filters(wt)?;
    args.extend(
        ["read-tree", "-m", "-u", old, new]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run(wt, &a, &ISOLATED, None)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!("updating the checked-out work tree failed: {err}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_parse_strictly() {
        let i = Ident::parse("Ada Lovelace <ada@example.org>").expect("ok");
        assert_eq!(i.name, "Ada Lovelace");
        assert_eq!(i.email, "ada@example.org");
        for bad in [
            "",
            "no email",
            "<a@b>",
            "A <>",
            "A <a@b",
            "A <a<b@c>",
            "A\n <a@b>",
            "A <a@b> <c@d>",
        ] {
            assert!(Ident::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Ident::parse(&format!("{} <a@b>", "x".repeat(600))).is_err());
    }
}
