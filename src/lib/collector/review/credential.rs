//! The review credential file of a privilege-separated deployment
//! (`docs/review.md`, "Credentials"; `docs/security.md`).
//!
//! The sudo wrapper clears the environment, so a review profile's operator
//! variables (`ANTHROPIC_API_KEY`, …) cannot reach the pinned reviewer
//! through it. The operator keeps them in a file of `NAME=VALUE` lines,
//! owned by the operator and mode 0600, whose path root pins in the wrapper
//! (`collector wrapper --review-credential-file`), never taken from stdin
//! or the descriptor. A review `collect` reads it (descriptor-relative
//! checks: the caller's, private, a regular file under trusted directories,
//! opened without following a link) and hands the values to the reviewer's
//! own environment only; a command step never reads it.
//!
//! Every value is a secret: the reviewer's output is scrubbed of it
//! ([`redact`]) before anything derives from that output, so its bytes
//! reach neither the record, the transfer, the upload answer nor anything
//! `collect` prints.

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Largest credential file.
pub const MAX_FILE: u64 = 64 * 1024;
/// Shortest value: a shorter one is not a credential, and scrubbing it out
/// of the reviewer's answer would mangle the answer.
pub const MIN_VALUE: usize = 16;
/// Longest value.
pub const MAX_VALUE: usize = 16 * 1024;
/// What replaces a credential's bytes in the reviewer's output.
pub const REDACTED: &[u8] = b"[redacted]";
/// The shortest piece of a credential cut at the edge of a kept tail that
/// is still scrubbed.
const MIN_EDGE: usize = 4;

/// The operator variables read from a credential file. `Debug` never shows
/// a value.
pub struct Credentials {
    vars: Vec<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.vars.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Credentials")
            .field("names", &names)
            .finish()
    }
}

impl Credentials {
    /// The `(name, value)` pairs, in file order.
    pub fn into_vars(self) -> Vec<(String, String)> {
        self.vars
    }
}

fn bad(msg: impl Into<String>, path: &Path) -> Error {
    Error::new(Code::InvalidInput, msg).with("path", path.display().to_string())
}

/// Checks the metadata of a credential file: a regular file owned by `uid`
/// that neither group nor others can read or write.
fn check_md(md: &std::fs::Metadata, path: &Path, uid: u32) -> Result<()> {
    if !md.is_file() || md.uid() != uid || md.permissions().mode() & 0o077 != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "the review credential file {} must be a regular file owned by the operator \
                 (uid {uid}) with mode 0600",
                path.display()
            ),
        )
        .with("path", path.display().to_string()));
    }
    Ok(())
}

/// Checks, without reading it, that `path` is a credential file `uid` owns
/// privately (not a link). What `collector wrapper` checks as root.
pub fn check_file(path: &Path, uid: u32) -> Result<()> {
    let md = std::fs::symlink_metadata(path).map_err(|e| Error::io("stat", path, e))?;
    if md.file_type().is_symlink() {
        return Err(Error::new(
            Code::SymlinkRefused,
            format!("{} is a symbolic link; name the real file", path.display()),
        )
        .with("path", path.display().to_string()));
    }
    check_md(&md, path, uid)?;
    load_from(path, uid).map(|_| ())
}

/// Reads the credential file as the caller: its directories trusted, the
/// file the caller's and private (checked on the opened descriptor).
pub fn load(path: &Path) -> Result<Credentials> {
    if !path.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            "--review-credential-file must be an absolute path",
        ));
    }
    private_fs::check_trusted_ancestors(path)?;
    let uid = rustix::process::geteuid().as_raw();
    // Not a FIFO or device to block on: a regular file before it is opened
    // (and checked again on the descriptor).
    let md = std::fs::symlink_metadata(path).map_err(|e| Error::io("stat", path, e))?;
    if !md.file_type().is_symlink() {
        check_md(&md, path, uid)?;
    }
    load_from(path, uid)
}

fn load_from(path: &Path, uid: u32) -> Result<Credentials> {
    let f = private_fs::open_nofollow_read(path)?;
    let md = f.metadata().map_err(|e| Error::io("stat", path, e))?;
    check_md(&md, path, uid)?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::new(
            Code::TooLarge,
            format!("the review credential file is over {MAX_FILE} bytes"),
        ));
    }
    parse(&bytes).map_err(|m| bad(m, path))
}

/// Parses `NAME=VALUE` lines (blank lines and `#` comments skipped). A
/// reason never quotes a value.
fn parse(bytes: &[u8]) -> std::result::Result<Credentials, String> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let eq = line
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| format!("line {n} of the review credential file is not NAME=VALUE"))?;
        let (name, value) = (&line[..eq], &line[eq + 1..]);
        let name_ok = name
            .first()
            .is_some_and(|b| b.is_ascii_uppercase() || *b == b'_')
            && name
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
        if !name_ok {
            return Err(format!(
                "line {n} of the review credential file does not start with a variable name \
                 ([A-Z_][A-Z0-9_]*)"
            ));
        }
        // Printable ASCII without space, quote or backslash: a value then
        // appears in the reviewer's JSON answer exactly as its bytes, so
        // scrubbing it out keeps the answer well-formed.
        if value.len() < MIN_VALUE
            || value.len() > MAX_VALUE
            || !value
                .iter()
                .all(|b| (0x21..=0x7e).contains(b) && *b != b'"' && *b != b'\\')
        {
            return Err(format!(
                "the value on line {n} of the review credential file must be {MIN_VALUE} to \
                 {MAX_VALUE} printable ASCII characters without space, quote or backslash"
            ));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        if vars.iter().any(|(k, _)| *k == name) {
            return Err(format!(
                "{name} is given twice in the review credential file"
            ));
        }
        vars.push((name, String::from_utf8_lossy(value).into_owned()));
    }
    Ok(Credentials { vars })
}

/// `bytes` with every occurrence of every secret replaced by
/// [`REDACTED`], and a piece of a secret cut at either edge (a tail that
/// starts inside one, an output capped inside one) too. Secrets shorter
/// than [`MIN_EDGE`] bytes are left alone.
pub fn redact(bytes: &[u8], secrets: &[&[u8]]) -> Vec<u8> {
    let mut secrets: Vec<&[u8]> = secrets
        .iter()
        .copied()
        .filter(|s| s.len() >= MIN_EDGE)
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = bytes.to_vec();
    for s in &secrets {
        out = replace_all(&out, s);
    }
    for s in &secrets {
        // The longest proper suffix of `s` the output starts with.
        if let Some(k) = (MIN_EDGE..s.len())
            .rev()
            .find(|&k| out.starts_with(&s[s.len() - k..]))
        {
            let mut v = REDACTED.to_vec();
            v.extend_from_slice(&out[k..]);
            out = v;
        }
        // The longest proper prefix of `s` the output ends with.
        if let Some(k) = (MIN_EDGE..s.len()).rev().find(|&k| out.ends_with(&s[..k])) {
            out.truncate(out.len() - k);
            out.extend_from_slice(REDACTED);
        }
    }
    out
}

fn replace_all(hay: &[u8], needle: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(REDACTED);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-ant-test-0123456789abcdef";

    #[test]
    fn parses_names_and_values_and_never_quotes_a_value() {
        let c = parse(format!("# the reviewer's key\n\nANTHROPIC_API_KEY={KEY}\r\n").as_bytes())
            .expect("parse");
        assert_eq!(
            c.into_vars(),
            vec![("ANTHROPIC_API_KEY".to_owned(), KEY.to_owned())]
        );
        for bad in [
            format!("ANTHROPIC_API_KEY {KEY}"),
            format!("lower={KEY}"),
            "A=short".to_owned(),
            format!("A={KEY} x"),
            format!("A={KEY}\"x"),
            format!("A={KEY}\nA={KEY}"),
            format!("={KEY}"),
        ] {
            let e = parse(bad.as_bytes()).expect_err(&bad);
            assert!(!e.contains(KEY), "{e}");
        }
        let dbg = format!("{:?}", parse(format!("A={KEY}").as_bytes()).expect("parse"));
        assert!(!dbg.contains(KEY), "{dbg}");
    }

    #[test]
    fn redacts_whole_and_cut_occurrences() {
        let k = KEY.as_bytes();
        let r = |s: &str| String::from_utf8(redact(s.as_bytes(), &[k])).expect("utf8");
        assert_eq!(
            r(&format!("key={KEY}; again {KEY}.")),
            "key=[redacted]; again [redacted]."
        );
        // A tail that starts inside the key; an output capped inside it.
        assert_eq!(r(&format!("{}\nnext", &KEY[5..])), "[redacted]\nnext");
        assert_eq!(r(&format!("head {}", &KEY[..10])), "head [redacted]");
        assert_eq!(r("nothing here"), "nothing here");
        // JSON stays JSON.
        let j = format!("{{\"result\":\"{KEY}\",\"n\":1}}");
        let v: serde_json::Value = serde_json::from_str(&r(&j)).expect("json");
        assert_eq!(v["result"], "[redacted]");
    }
}
