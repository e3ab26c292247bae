//! Coverage patterns: which paths of the revision a review must cover.
//! Gitignore syntax, matched by the `ignore` crate's gitignore matcher
//! against each manifest path (relative, `/`-separated) exactly as the
//! workflow file's `protected` patterns are: `src/**` everything below
//! `src/`, `*.rs` a file of that name at any depth, `/README.md` only at the
//! top, a later `!pattern` takes back what it matches. A path is selected
//! when it, or a directory above it, matches.

use crate::error::{Code, Error, Result};

/// Most patterns.
pub const MAX_PATTERNS: usize = 256;
/// Longest pattern.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// A compiled set of coverage patterns.
pub struct CoverageSet {
    gi: ignore::gitignore::Gitignore,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

impl CoverageSet {
    /// Compiles and validates 1..=[`MAX_PATTERNS`] patterns, each
    /// 1..=[`MAX_PATTERN_BYTES`] bytes without control characters, not blank
    /// and not a comment; at least one must not be a negation.
    pub fn new(patterns: &[String]) -> Result<CoverageSet> {
        if patterns.is_empty() || patterns.len() > MAX_PATTERNS {
            return Err(invalid(format!(
                "a review has 1..={MAX_PATTERNS} coverage patterns"
            )));
        }
        if patterns.iter().all(|p| p.starts_with('!')) {
            return Err(invalid("coverage patterns that only negate select nothing"));
        }
        let mut b = ignore::gitignore::GitignoreBuilder::new("");
        for p in patterns {
            let shown: String = p.chars().take(80).collect();
            if p.is_empty() || p.len() > MAX_PATTERN_BYTES {
                return Err(invalid(format!(
                    "coverage pattern {shown:?} must be 1..={MAX_PATTERN_BYTES} bytes"
                )));
            }
            if p.chars().any(char::is_control) {
                return Err(invalid(format!(
                    "coverage pattern {shown:?} contains a control character"
                )));
            }
            if p.trim().is_empty() || p.starts_with('#') || p == "!" {
                return Err(invalid(format!(
                    "coverage pattern {shown:?} is blank, a comment or a bare negation"
                )));
            }
            b.add_line(None, p).map_err(|e| {
                invalid(format!(
                    "coverage pattern {shown:?} is not a valid glob: {e}"
                ))
            })?;
        }
        let gi = b
            .build()
            .map_err(|e| invalid(format!("coverage patterns do not compile: {e}")))?;
        Ok(CoverageSet { gi })
    }

    /// Whether the manifest path `path` is selected.
    pub fn selects(&self, path: &str) -> bool {
        if path.is_empty() || path.starts_with('/') {
            return false;
        }
        self.gi.matched_path_or_any_parents(path, false).is_ignore()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(p: &[&str]) -> CoverageSet {
        CoverageSet::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("compiles")
    }

    #[test]
    fn gitignore_semantics() {
        let s = set(&["src/**", "*.md", "!src/generated/**", "/Makefile"]);
        assert!(s.selects("src/lib.rs"));
        assert!(s.selects("src/a/b.rs"));
        assert!(!s.selects("src/generated/x.rs"));
        assert!(s.selects("docs/guide.md"));
        assert!(s.selects("Makefile"));
        assert!(!s.selects("sub/Makefile"));
        assert!(!s.selects("tests/t.rs"));
        assert!(!s.selects(""));
        assert!(!s.selects("/src/lib.rs"));
        let dir = set(&["vendor/"]);
        assert!(dir.selects("vendor/a/b.c"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        let bad: &[&[&str]] = &[&[], &["!x"], &[""], &["#c"], &["a\nb"], &["!"], &["  "]];
        for p in bad {
            let v: Vec<String> = p.iter().map(|s| s.to_string()).collect();
            assert_eq!(
                CoverageSet::new(&v).err().map(|e| e.code()),
                Some(Code::InvalidInput),
                "{p:?}"
            );
        }
        let many: Vec<String> = (0..257).map(|i| format!("f{i}")).collect();
        assert!(CoverageSet::new(&many).is_err());
        assert!(CoverageSet::new(&["x".repeat(1025)]).is_err());
    }
}
