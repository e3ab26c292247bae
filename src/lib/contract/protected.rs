//! Protected paths: the workflow file's `protected` patterns
//! (gitignore syntax, matched by the `ignore` crate's gitignore matcher on
//! case-folded, NFC-normalised patterns and paths, as a macOS or Windows
//! checkout would resolve them) name files a candidate revision must leave
//! exactly as the current target head has them. A candidate that adds,
//! deletes or changes (bytes or mode, a symbolic link swapped in included)
//! any covered path has changed a protected path; see
//! `docs/workflow-file.md`.
//!
//! The same list carries a revision's checkout findings
//! (`workflow::authority::checkout`): a file whose git checkout is not its
//! bytes, a `filter` or `export-*` attribute, a `.lfsconfig`, another
//! spelling of `.gitattributes`. They are refused the same way.

use super::snapshot::{Entry, Manifest};
use super::tree_path::fold;
use crate::error::{Code, Error, Result};
use serde::{Deserialize, Serialize};

/// Most patterns in one workflow file.
pub const MAX_PATTERNS: usize = 256;
/// Longest pattern.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Most changed paths listed (outputs and error details); the total is
/// always given.
pub const MAX_LISTED: usize = 100;

/// A compiled set of protected patterns.
pub struct Protected {
    gi: ignore::gitignore::Gitignore,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

impl Protected {
    /// Compiles (and validates) the patterns: at most [`MAX_PATTERNS`],
    /// each 1..=[`MAX_PATTERN_BYTES`] bytes without control characters,
    /// not blank and not a comment, and a valid gitignore glob.
    pub fn new(patterns: &[String]) -> Result<Protected> {
        if patterns.len() > MAX_PATTERNS {
            return Err(invalid(format!(
                "a workflow has at most {MAX_PATTERNS} protected patterns"
            )));
        }
        let mut b = ignore::gitignore::GitignoreBuilder::new("");
        for p in patterns {
            let shown: String = p.chars().take(80).collect();
            if p.is_empty() || p.len() > MAX_PATTERN_BYTES {
                return Err(invalid(format!(
                    "protected pattern {shown:?} must be 1..={MAX_PATTERN_BYTES} bytes"
                )));
            }
            if p.chars().any(char::is_control) {
                return Err(invalid(format!(
                    "protected pattern {shown:?} contains a control character"
                )));
            }
            if p.trim().is_empty() || p.starts_with('#') {
                return Err(invalid(format!(
                    "protected pattern {shown:?} is blank or a comment, so it would protect nothing"
                )));
            }
            if p == "!" {
                return Err(invalid("protected pattern \"!\" negates nothing"));
            }
            b.add_line(None, &fold(p)).map_err(|e| {
                invalid(format!(
                    "protected pattern {shown:?} is not a valid glob: {e}"
                ))
            })?;
        }
        let gi = b
            .build()
            .map_err(|e| invalid(format!("protected patterns do not compile: {e}")))?;
        Ok(Protected { gi })
    }

    /// Whether there are no patterns at all.
    pub fn is_empty(&self) -> bool {
        self.gi.is_empty()
    }

    /// Whether `path` (a manifest path: relative, `/`-separated) is
    /// protected: it, or a directory above it, matches a pattern, and the
    /// last pattern matching it directly is not a `!` negation. Path and
    /// patterns are compared case-folded and in NFC
    /// ([`super::tree_path::fold`]: glob syntax is ASCII, which folding
    /// only lowercases).
    pub fn covers(&self, path: &str) -> bool {
        if path.is_empty() || path.starts_with('/') {
            // Never a manifest path; the matcher requires relative paths.
            return false;
        }
        self.gi
            .matched_path_or_any_parents(fold(path), false)
            .is_ignore()
    }
}

/// How a protected path differs from the target head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Present in the candidate, absent at the head.
    Added,
    /// Present at the head, absent in the candidate.
    Deleted,
    /// Another mode (executable bit, or a file became a link or back).
    Mode,
    /// Same mode, other bytes.
    Content,
    /// git's checkout of the file, under the revision's own
    /// `.gitattributes` (`ident`, `eol`, `text`, `working-tree-encoding`,
    /// a macro naming them), writes other bytes than the revision's.
    Checkout,
    /// A `filter` attribute applies to the file (a filter driver, git-lfs
    /// among them, would run a program at checkout).
    Filter,
    /// An `export-subst` or `export-ignore` attribute applies to the
    /// file (`git archive` would not give the revision's bytes).
    Export,
    /// A `.lfsconfig` (any spelling), which points git-lfs elsewhere.
    Lfsconfig,
    /// A file git may read as a `.gitattributes` that the check cannot
    /// model: another spelling (letter case, NTFS or HFS+ alias) or a
    /// symbolic link.
    Attributes,
}

/// One changed protected path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedChange {
    /// The path.
    pub path: String,
    /// What changed.
    pub change: ChangeKind,
}

/// The protected changes of a candidate: the total and the first
/// [`MAX_LISTED`] (in path order). Stored with each checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedChanges {
    /// How many protected paths changed.
    pub total: u64,
    /// The first of them.
    pub paths: Vec<ProtectedChange>,
}

impl ProtectedChanges {
    /// Whether nothing protected changed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Adds one change (listed while fewer than [`MAX_LISTED`] are).
    pub fn push(&mut self, path: &str, change: ChangeKind) {
        self.total += 1;
        if self.paths.len() < MAX_LISTED {
            self.paths.push(ProtectedChange {
                path: path.to_owned(),
                change,
            });
        }
    }

    /// Both lists as one: the totals added, the listing the first
    /// [`MAX_LISTED`] of both in path order (a path may appear once per
    /// kind).
    pub fn merge(mut self, other: ProtectedChanges) -> ProtectedChanges {
        if other.is_empty() {
            return self;
        }
        self.total += other.total;
        self.paths.extend(other.paths);
        self.paths
            .sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        self.paths.truncate(MAX_LISTED);
        self
    }

    /// The typed refusal (`protected_path_changed`) with the paths in its
    /// details.
    pub fn error(&self, what: &str) -> Error {
        Error::new(
            Code::ProtectedPathChanged,
            format!(
                "{what}: the revision changes {} protected path(s) relative to the target head, \
                 or holds files a git checkout would not reproduce (see protected_changes); \
                 restore them and checkpoint again (only the operator can land such a change, \
                 with land --allow-protected-change)",
                self.total
            ),
        )
        .with(
            "protected_changes",
            serde_json::to_value(&self.paths).unwrap_or_default(),
        )
        .with("protected_changes_total", self.total)
        .with("next", super::Next::checkpoint())
    }
}

/// Compares a candidate manifest with the head manifest on the protected
/// paths (both sorted by path bytes, as manifests are).
pub fn diff(p: &Protected, head: &Manifest, candidate: &Manifest) -> ProtectedChanges {
    let mut out = ProtectedChanges::default();
    if p.is_empty() {
        return out;
    }
    let mut push = |path: &str, change: ChangeKind| {
        if p.covers(path) {
            out.push(path, change);
        }
    };
    let (mut h, mut c) = (
        head.entries.iter().peekable(),
        candidate.entries.iter().peekable(),
    );
    loop {
        let ord = match (h.peek(), c.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(a), Some(b)) => a.path.as_bytes().cmp(b.path.as_bytes()),
        };
        match ord {
            std::cmp::Ordering::Less => {
                if let Some(e) = h.next() {
                    push(&e.path, ChangeKind::Deleted);
                }
            }
            std::cmp::Ordering::Greater => {
                if let Some(e) = c.next() {
                    push(&e.path, ChangeKind::Added);
                }
            }
            std::cmp::Ordering::Equal => {
                if let (Some(a), Some(b)) = (h.next(), c.next())
                    && let Some(k) = differs(a, b)
                {
                    push(&a.path, k);
                }
            }
        }
    }
    out
}

fn differs(head: &Entry, cand: &Entry) -> Option<ChangeKind> {
    if head.mode != cand.mode {
        Some(ChangeKind::Mode)
    } else if head.sha256 != cand.sha256 || head.size != cand.size {
        Some(ChangeKind::Content)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::snapshot::{MODE_EXEC, MODE_FILE, MODE_LINK};
    use crate::wire::digest::Sha256Hex;

    fn pats(p: &[&str]) -> Protected {
        Protected::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("patterns")
    }

    fn m(entries: &[(&str, u32, &str)]) -> Manifest {
        let mut entries: Vec<Entry> = entries
            .iter()
            .map(|(p, mode, body)| Entry {
                path: p.to_string(),
                mode: *mode,
                size: body.len() as u64,
                sha256: Sha256Hex::digest(body.as_bytes()),
            })
            .collect();
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Manifest {
            version: 1,
            entries,
        }
    }

    #[test]
    fn gitignore_semantics() {
        let p = pats(&["test.sh", "tests/**", "/ci/", "!tests/snapshots/**"]);
        assert!(p.covers("test.sh"));
        assert!(p.covers("sub/test.sh"), "no slash: any depth");
        assert!(p.covers("tests/a/b.sh"));
        assert!(p.covers("ci/run"));
        assert!(!p.covers("sub/ci/run"), "anchored");
        assert!(!p.covers("tests/snapshots/x"), "negated");
        assert!(!p.covers("add.sh"));
        assert!(!p.covers(""));
        assert!(!p.covers("/abs"));
        assert!(pats(&[]).is_empty());
    }

    #[test]
    fn case_and_normalisation_do_not_escape_a_pattern() {
        let p = pats(&["test.sh", "tests/**", "caf\u{e9}.txt"]);
        for path in [
            "Test.sh",
            "TEST.SH",
            "TESTS/cases.txt",
            "Tests/a/b",
            "cafe\u{301}.txt",
            "CAF\u{c9}.txt",
        ] {
            assert!(p.covers(path), "{path:?}");
        }
        assert!(!p.covers("Tests.sh"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["", " ", "# comment", "a\nb", "!", &"x".repeat(1025)] {
            assert!(
                Protected::new(&[bad.to_string()]).is_err(),
                "{bad:?} must be refused"
            );
        }
        let many: Vec<String> = (0..=MAX_PATTERNS).map(|i| format!("p{i}")).collect();
        assert!(Protected::new(&many).is_err());
    }

    #[test]
    fn every_kind_of_change_is_found() {
        let p = pats(&["test.sh", "tests/**"]);
        let head = m(&[
            ("add.sh", MODE_FILE, "a"),
            ("test.sh", MODE_FILE, "t"),
            ("tests/one.sh", MODE_FILE, "1"),
            ("tests/two.sh", MODE_FILE, "2"),
            ("tests/x.sh", MODE_FILE, "x"),
        ]);
        let cand = m(&[
            ("add.sh", MODE_FILE, "changed but not protected"),
            ("test.sh", MODE_EXEC, "t"),
            ("tests/new.sh", MODE_FILE, "n"),
            ("tests/one.sh", MODE_FILE, "edited"),
            ("tests/x.sh", MODE_LINK, "../elsewhere"),
        ]);
        let d = diff(&p, &head, &cand);
        assert_eq!(d.total, 5);
        let got: Vec<(&str, ChangeKind)> = d
            .paths
            .iter()
            .map(|c| (c.path.as_str(), c.change))
            .collect();
        assert_eq!(
            got,
            vec![
                ("test.sh", ChangeKind::Mode),
                ("tests/new.sh", ChangeKind::Added),
                ("tests/one.sh", ChangeKind::Content),
                ("tests/two.sh", ChangeKind::Deleted),
                ("tests/x.sh", ChangeKind::Mode),
            ]
        );
        assert!(diff(&p, &head, &head).is_empty());
        assert!(diff(&pats(&[]), &head, &cand).is_empty());
    }

    #[test]
    fn the_listing_is_bounded_and_the_total_is_not() {
        let p = pats(&["tests/**"]);
        let head = m(&[]);
        let names: Vec<String> = (0..250).map(|i| format!("tests/{i:03}")).collect();
        let cand = m(&names
            .iter()
            .map(|n| (n.as_str(), MODE_FILE, "x"))
            .collect::<Vec<_>>());
        let d = diff(&p, &head, &cand);
        assert_eq!(d.total, 250);
        assert_eq!(d.paths.len(), MAX_LISTED);
        let e = d.error("checkpoint");
        assert_eq!(e.code(), Code::ProtectedPathChanged);
        assert_eq!(
            e.details().and_then(|d| d.get("protected_changes_total")),
            Some(&serde_json::json!(250))
        );
    }
}
