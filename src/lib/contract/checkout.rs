//! What a git checkout of a revision depends on besides its bytes: the
//! pure half of the check that what people check out is what the sandbox
//! ran (`workflow::authority::checkout` runs git).
//!
//! With system and global configuration and attributes ignored and a
//! fresh repository, the only attributes git applies at checkout are the
//! revision's own `.gitattributes` files. [`plan`] finds them (exact
//! name, regular file) and refuses outright what the computed check
//! cannot model: another spelling of `.gitattributes` (letter case,
//! Unicode folding, NTFS and HFS+ aliases: a macOS or Windows checkout
//! may read it), a symbolic link named `.gitattributes`, and a
//! `.lfsconfig` in any spelling at any depth. [`parse_check_attr`] reads
//! `git check-attr -a -z` and [`refused_attribute`] says which reported
//! attributes are refused whatever the bytes (`filter`, `export-subst`,
//! `export-ignore`).

use super::protected::{ChangeKind, ProtectedChanges};
use super::snapshot::{MODE_LINK, Manifest};
use super::tree_path::names_dotfile;
use crate::error::{Code, Error, Result};

/// git's hashed NTFS short-name prefix of `.gitattributes`.
const GITATTRIBUTES_SHORT: &[u8; 6] = b"gi7d29";

/// What a checkout of a revision depends on.
#[derive(Debug, Default)]
pub struct Plan {
    /// Indices (into the manifest) of the regular files named exactly
    /// `.gitattributes`: git reads each for the paths below its
    /// directory.
    pub attributes: Vec<usize>,
    /// What is refused without running git.
    pub findings: ProtectedChanges,
}

/// The attribute files of `m` and the files refused by name alone.
pub fn plan(m: &Manifest) -> Plan {
    let mut out = Plan::default();
    for (i, e) in m.entries.iter().enumerate() {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path);
        // Cheap filter: every spelling below starts with a dot, `gi`
        // (`gitatt~1`, `gi7d29~1`) or `lf` (`lfscon~1`), or holds an
        // HFS+-ignored code point or a non-ASCII letter.
        let b = name.as_bytes();
        let maybe = b.first() == Some(&b'.')
            || !name.is_ascii()
            || b.get(..2)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"gi") || p.eq_ignore_ascii_case(b"lf"));
        if !maybe {
            continue;
        }
        if names_dotfile(name, "lfsconfig", None) {
            out.findings.push(&e.path, ChangeKind::Lfsconfig);
        } else if name == ".gitattributes" && e.mode != MODE_LINK {
            out.attributes.push(i);
        } else if names_dotfile(name, "gitattributes", Some(GITATTRIBUTES_SHORT)) {
            out.findings.push(&e.path, ChangeKind::Attributes);
        }
    }
    out
}

/// The finding for an attribute git reported on a path, whatever its
/// value (`set`, `unset` or a value: a specified `filter`, `export-subst`
/// or `export-ignore` is refused as such).
pub fn refused_attribute(attr: &[u8]) -> Option<ChangeKind> {
    match attr {
        b"filter" => Some(ChangeKind::Filter),
        b"export-subst" | b"export-ignore" => Some(ChangeKind::Export),
        _ => None,
    }
}

/// One line of `git check-attr -a -z`: path, attribute, value.
pub type Reported<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// Parses `git check-attr -a -z` output: NUL-terminated triples of path,
/// attribute and value. Anything else is an error (never a silent pass).
pub fn parse_check_attr(out: &[u8]) -> Result<Vec<Reported<'_>>> {
    let body = match out.split_last() {
        None => return Ok(Vec::new()),
        Some((0, body)) => body,
        Some(_) => return Err(unexpected()),
    };
    let fields: Vec<&[u8]> = body.split(|&b| b == 0).collect();
    if !fields.len().is_multiple_of(3) {
        return Err(unexpected());
    }
    Ok(fields.chunks_exact(3).map(|c| (c[0], c[1], c[2])).collect())
}

fn unexpected() -> Error {
    Error::new(Code::Io, "git check-attr printed unexpected output")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::snapshot::{Entry, MODE_FILE};
    use crate::wire::digest::Sha256Hex;

    fn m(paths: &[(&str, u32)]) -> Manifest {
        Manifest {
            version: 1,
            entries: paths
                .iter()
                .map(|(p, mode)| Entry {
                    path: (*p).to_owned(),
                    mode: *mode,
                    size: 0,
                    sha256: Sha256Hex::digest(b""),
                })
                .collect(),
        }
    }

    #[test]
    fn attribute_files_and_refusals_by_name() {
        let p = plan(&m(&[
            (".gitattributes", MODE_FILE),
            (".lfsconfig", MODE_FILE),
            ("a.txt", MODE_FILE),
            ("d/.GitAttributes", MODE_FILE),
            ("d/.gitattributes", MODE_FILE),
            ("e/.gitattributes", MODE_LINK),
            ("f/LFSCON~1", MODE_FILE),
            ("g/gitatt~1", MODE_FILE),
            ("gitattributes", MODE_FILE),
        ]));
        assert_eq!(p.attributes, vec![0, 4]);
        let got: Vec<(&str, ChangeKind)> = p
            .findings
            .paths
            .iter()
            .map(|c| (c.path.as_str(), c.change))
            .collect();
        assert_eq!(
            got,
            vec![
                (".lfsconfig", ChangeKind::Lfsconfig),
                ("d/.GitAttributes", ChangeKind::Attributes),
                ("e/.gitattributes", ChangeKind::Attributes),
                ("f/LFSCON~1", ChangeKind::Lfsconfig),
                ("g/gitatt~1", ChangeKind::Attributes),
            ]
        );
    }

    #[test]
    fn check_attr_output_parses_strictly() {
        let out = b"a.sh\0ident\0set\0b\0filter\0lfs\0";
        let r = parse_check_attr(out).expect("parse");
        assert_eq!(
            r,
            vec![
                (&b"a.sh"[..], &b"ident"[..], &b"set"[..]),
                (&b"b"[..], &b"filter"[..], &b"lfs"[..])
            ]
        );
        assert!(parse_check_attr(b"").expect("empty").is_empty());
        assert!(parse_check_attr(b"a\0b\0").is_err());
        assert!(parse_check_attr(b"a\0b\0c").is_err());
        assert_eq!(refused_attribute(b"filter"), Some(ChangeKind::Filter));
        assert_eq!(
            refused_attribute(b"export-ignore"),
            Some(ChangeKind::Export)
        );
        assert_eq!(refused_attribute(b"ident"), None);
    }
}
