//! Which workspace paths a revision may hold: exactly those git stores as
//! they are, so that the tree `land` writes is the revision that was
//! tested.
//!
//! These are git's own rules (`verify_path` and its helpers in git's
//! `read-cache.c` and `path.c`), reimplemented from their documented
//! behaviour, with both of git's platform protections on (git turns
//! `core.protectNTFS` on everywhere; `core.protectHFS` is on for macOS, and
//! a landed branch may be checked out there):
//!
//! - no empty path, no leading `/`, no empty component, no `.` or `..`
//!   component, no trailing `/`, no NUL;
//! - no component that is `.git` in any letter case;
//! - NTFS aliases of `.git` as any component: `git~1` (any case), and
//!   either form followed only by dots and spaces, or by `:` (an alternate
//!   data stream such as `.git::$INDEX_ALLOCATION`); a backslash also starts
//!   a component for this check;
//! - HFS+ aliases: `.git` with Unicode code points HFS+ ignores (zero-width
//!   joiners, directional marks, …) anywhere in it;
//! - a symbolic link named `.gitmodules` in any of those spellings,
//!   including its NTFS short names (`gitmod~1`, `gi7eba~1`).
//!
//! [`refusal`] returns the reason a path is refused, [`check`] the typed
//! error (`path_not_representable`).

use crate::error::{Code, Error, Result};

/// Longest path accepted (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// Code points HFS+ ignores when it compares names (git's
/// `next_hfs_char` skips the same ones).
const HFS_IGNORED: &[u32] = &[
    0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b, 0x206c,
    0x206d, 0x206e, 0x206f, 0xfeff,
];

/// The typed refusal of a path git would refuse or alias.
pub fn check(path: &str, is_link: bool) -> Result<()> {
    match refusal(path, is_link) {
        None => Ok(()),
        Some(why) => Err(Error::new(
            Code::PathNotRepresentable,
            format!(
                "the workspace path {:?} cannot be stored by git as it is ({why}); rename or remove it",
                shown(path)
            ),
        )
        .with("path", shown(path))
        .with("reason", why)),
    }
}

fn shown(path: &str) -> String {
    path.chars().take(200).collect()
}

/// Why git would refuse or alias `path` (a `/`-separated relative path;
/// `is_link`: it is a symbolic link), or `None` when it is stored as is.
pub fn refusal(path: &str, is_link: bool) -> Option<&'static str> {
    let b = path.as_bytes();
    if b.is_empty() {
        return Some("empty path");
    }
    if b.len() > MAX_PATH_BYTES {
        return Some("longer than 4096 bytes");
    }
    if b.contains(&0) {
        return Some("contains NUL");
    }
    if b[0] == b'/' {
        return Some("absolute path");
    }
    let mut start = 0;
    loop {
        let rest = &path[start..];
        if let Some(why) = component_refusal(rest, is_link) {
            return Some(why);
        }
        // Backslashes start a component for git's NTFS checks.
        let end = rest.find('/').map_or(path.len(), |i| start + i);
        let comp = &path[start..end];
        for (i, _) in comp.match_indices('\\') {
            let after = &path[start + i + 1..];
            if is_ntfs_dotgit(after.as_bytes()) {
                return Some("an NTFS alias of .git after a backslash");
            }
            if is_link && is_ntfs_dotgitmodules(after.as_bytes()) {
                return Some("a symbolic link that is an NTFS alias of .gitmodules");
            }
        }
        if end == path.len() {
            return None;
        }
        start = end + 1;
    }
}

/// The checks git makes at the start of each component (`rest` runs to
/// the end of the path).
fn component_refusal(rest: &str, is_link: bool) -> Option<&'static str> {
    let b = rest.as_bytes();
    if is_hfs_dot_generic(rest, "git") {
        return Some("an HFS+ alias of .git");
    }
    if is_link && is_hfs_dot_generic(rest, "gitmodules") {
        return Some("a symbolic link that is an HFS+ alias of .gitmodules");
    }
    if is_ntfs_dotgit(b) {
        return Some("an NTFS alias of .git");
    }
    if is_link && is_ntfs_dotgitmodules(b) {
        return Some("a symbolic link that is an NTFS alias of .gitmodules");
    }
    match b.first() {
        None => Some("empty component or trailing '/'"),
        Some(b'/') => Some("empty component"),
        Some(b'.') => verify_dotfile(&b[1..], is_link),
        Some(_) => None,
    }
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn end_of_component(c: u8) -> bool {
    c == 0 || c == b'/'
}

/// git's `verify_dotfile`: `rest` follows a component's leading `.`.
fn verify_dotfile(rest: &[u8], is_link: bool) -> Option<&'static str> {
    let c = at(rest, 0);
    if end_of_component(c) {
        return Some("a '.' component");
    }
    match c {
        b'g' | b'G' => {
            if !at(rest, 1).eq_ignore_ascii_case(&b'i') || !at(rest, 2).eq_ignore_ascii_case(&b't')
            {
                return None;
            }
            if end_of_component(at(rest, 3)) {
                return Some("a .git component (any letter case)");
            }
            if is_link {
                let tail = rest.get(3..).unwrap_or_default();
                if tail.len() >= 7
                    && tail[..7].eq_ignore_ascii_case(b"modules")
                    && end_of_component(at(tail, 7))
                {
                    return Some("a symbolic link named .gitmodules");
                }
            }
            None
        }
        b'.' if end_of_component(at(rest, 1)) => Some("a '..' component"),
        _ => None,
    }
}

fn xplatform_sep(c: u8) -> bool {
    c == b'/' || c == b'\\'
}

/// git's `is_ntfs_dotgit`: `.git` or `git~1` (any case) followed only by
/// dots and spaces up to the end of the component or a `:`.
fn is_ntfs_dotgit(b: &[u8]) -> bool {
    let i = match at(b, 0) {
        b'.' if b.len() >= 4 && b[1..4].eq_ignore_ascii_case(b"git") => 4,
        b'g' | b'G' if b.len() >= 5 && b[1..3].eq_ignore_ascii_case(b"it") && &b[3..5] == b"~1" => {
            5
        }
        _ => return false,
    };
    only_dots_and_spaces(b, i, true)
}

/// From `i`: only `.` and ` ` up to the end (or a separator when
/// `sep_ends`, or a `:`).
fn only_dots_and_spaces(b: &[u8], mut i: usize, sep_ends: bool) -> bool {
    loop {
        let c = at(b, i);
        i += 1;
        if c == 0 || c == b':' || (sep_ends && xplatform_sep(c)) {
            return true;
        }
        if c != b'.' && c != b' ' {
            return false;
        }
    }
}

/// git's `is_ntfs_dotgitmodules` (`is_ntfs_dot_generic` with the name
/// `gitmodules` and the short-name prefix `gi7eba`).
fn is_ntfs_dotgitmodules(b: &[u8]) -> bool {
    is_ntfs_dot_generic(b, b"gitmodules", Some(b"gi7eba"))
}

/// git's `is_ntfs_dot_generic`: `.` + `name` (any case) followed only by
/// dots and spaces up to the end or a `:`, its regular NTFS short name
/// (six letters, `~`, 1..4), or, when git knows it, the fall-back short
/// name from the hashed prefix `short`.
fn is_ntfs_dot_generic(b: &[u8], name: &[u8], short: Option<&[u8; 6]>) -> bool {
    if at(b, 0) == b'.' && b.len() > name.len() && b[1..=name.len()].eq_ignore_ascii_case(name) {
        return only_dots_and_spaces(b, name.len() + 1, false);
    }
    // The regular NTFS short name: six letters, `~`, 1..4.
    if name.len() >= 6
        && b.len() >= 8
        && b[..6].eq_ignore_ascii_case(&name[..6])
        && b[6] == b'~'
        && (b'1'..=b'4').contains(&b[7])
    {
        return only_dots_and_spaces(b, 8, false);
    }
    let Some(short) = short else {
        return false;
    };
    // The fall-back short name: up to six characters of the hashed prefix,
    // `~`, a digit 1..9, then digits, eight characters in all.
    let mut saw_tilde = false;
    let mut i = 0;
    while i < 8 {
        let c = at(b, i);
        if c == 0 {
            return false;
        }
        if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            i += 1;
            if !(b'1'..=b'9').contains(&at(b, i)) {
                return false;
            }
            saw_tilde = true;
        } else if i >= 6 || c & 0x80 != 0 || c.to_ascii_lowercase() != short[i] {
            return false;
        }
        i += 1;
    }
    only_dots_and_spaces(b, 8, false)
}

/// git's `is_hfs_dot_generic`: `.` + `needle` (ASCII, any case) with
/// HFS+-ignored code points anywhere, then the end of the component.
fn is_hfs_dot_generic(rest: &str, needle: &str) -> bool {
    let mut chars = rest
        .chars()
        .filter(|c| !HFS_IGNORED.contains(&u32::from(*c)));
    if chars.next() != Some('.') {
        return false;
    }
    for n in needle.chars() {
        match chars.next() {
            Some(c) if c.is_ascii() && c.to_ascii_lowercase() == n => {}
            _ => return false,
        }
    }
    matches!(chars.next(), None | Some('/'))
}

/// Whether the file name `comp` (one path component) may be read as the
/// file `.{name}` on some checkout: `.{name}` itself, another spelling
/// that Unicode case folding plus NFC makes equal to it (macOS, Windows),
/// with HFS+-ignored code points anywhere, or an NTFS alias (trailing
/// dots and spaces, `:` streams, short names; `short` is git's hashed
/// short-name prefix when it has one).
pub fn names_dotfile(comp: &str, name: &str, short: Option<&[u8; 6]>) -> bool {
    if is_ntfs_dot_generic(comp.as_bytes(), name.as_bytes(), short) {
        return true;
    }
    let kept: String = comp
        .chars()
        .filter(|c| !HFS_IGNORED.contains(&u32::from(*c)))
        .collect();
    let folded = fold(&kept);
    folded.strip_prefix('.') == Some(name)
}

/// A path's key under Unicode case folding and NFC normalisation: two
/// paths with the same key are one file on a case-insensitive,
/// normalisation-insensitive checkout (macOS, Windows).
///
/// Case folding is each character's full uppercase mapping lowercased
/// again (so `ß` and `ss`, `ς` and `σ`, the Kelvin sign and `k`, `ſ` and
/// `s` fold together), between two NFC normalisations. It agrees with
/// Unicode's full case folding on the characters filesystems fold and at
/// worst folds a few more together (a refusal, never a missed twin).
pub fn fold(path: &str) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    if path.is_ascii() {
        return path.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(path.len());
    for c in path.nfc() {
        for u in c.to_uppercase() {
            out.extend(u.to_lowercase());
        }
    }
    out.nfc().collect()
}

/// Refuses (`path_not_representable`, both paths in `details`) two paths
/// of one revision that name the same file or directory once folded
/// ([`fold`]): `Test.sh` beside `test.sh`, `TESTS/x` beside `tests/y`, a
/// name in NFC beside the same name in NFD. A case-insensitive checkout
/// would write one file for both.
///
/// Paths in strictly increasing byte order (a walk's, a manifest's) take a
/// shorter way to the same answer: only a path with an upper-case or a
/// non-ASCII byte can differ from its fold, so a twin pair has one such
/// path (at least), and the other is either one too or is literally the
/// first's folded prefix. The full sort below then runs over those paths
/// alone, the plain ones are found by binary search, and only a hit (or
/// an input that is not sorted, or one where most paths are such) runs
/// the full check on everything, which gives the refusal its exact text.
pub fn check_twins<'a>(paths: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let all: Vec<&'a str> = paths.into_iter().collect();
    if maybe_twins(&all) {
        check_twins_all(&all)
    } else {
        Ok(())
    }
}

/// Whether a path may differ from its fold: an upper-case ASCII letter
/// or any non-ASCII byte.
fn foldable(p: &str) -> bool {
    p.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii())
}

/// False only when `all` (strictly sorted by bytes) surely holds no
/// twins; true sends it to [`check_twins_all`].
fn maybe_twins(all: &[&str]) -> bool {
    if !all.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()) {
        return true;
    }
    let foldables: Vec<&str> = all.iter().copied().filter(|p| foldable(p)).collect();
    if foldables.is_empty() {
        return false;
    }
    if foldables.len() > all.len() / 4 {
        return true;
    }
    // Twins among the paths that may fold.
    if check_twins_all(&foldables).is_err() {
        return true;
    }
    // A plain path spelling, literally, the folded form of a foldable
    // path's prefix that differs from its own spelling: a path equal to
    // that prefix or below it. The first differing prefix is enough: any
    // longer one starts with it.
    for p in foldables {
        let folded = if p.is_ascii() {
            p.to_ascii_lowercase()
        } else {
            p.split('/').map(fold).collect::<Vec<_>>().join("/")
        };
        let mut fo = 0usize;
        for (a, b) in p.split('/').zip(folded.split('/')) {
            fo += b.len();
            if a != b {
                let prefix = &folded[..fo];
                if all.binary_search(&prefix).is_ok() {
                    return true;
                }
                let below = format!("{prefix}/");
                let i = all.partition_point(|q| q.as_bytes() < below.as_bytes());
                if all.get(i).is_some_and(|q| q.starts_with(below.as_str())) {
                    return true;
                }
                break;
            }
            fo += 1;
        }
    }
    false
}

/// The whole check, any order: every path folded and sorted.
fn check_twins_all(paths: &[&str]) -> Result<()> {
    // Each path's folded key, components joined by NUL (which no path
    // holds), so that sorting the keys keeps every folded directory's
    // paths together (`a`, `a/x`, then `a-b`): two paths with a common
    // folded directory spelled differently are then adjacent somewhere
    // in that run.
    let mut keyed: Vec<(Vec<u8>, &str)> = paths
        .iter()
        .map(|&p| {
            let mut k = if p.is_ascii() {
                p.to_ascii_lowercase().into_bytes()
            } else {
                p.split('/')
                    .map(fold)
                    .collect::<Vec<_>>()
                    .join("/")
                    .into_bytes()
            };
            for b in &mut k {
                if *b == b'/' {
                    *b = 0;
                }
            }
            (k, p)
        })
        .collect();
    keyed.sort_unstable();
    for w in keyed.windows(2) {
        let ((ka, a), (kb, b)) = (&w[0], &w[1]);
        let mut end = (0, 0);
        let parts = ka
            .split(|&c| c == 0)
            .zip(kb.split(|&c| c == 0))
            .zip(a.split('/').zip(b.split('/')));
        for ((fa, fb), (oa, ob)) in parts {
            if fa != fb {
                break;
            }
            end = (end.0 + oa.len(), end.1 + ob.len());
            if oa != ob {
                return Err(twins((a, &a[..end.0]), (b, &b[..end.1])));
            }
            end = (end.0 + 1, end.1 + 1);
        }
    }
    Ok(())
}

/// The refusal of two twins: each is (full path, the name in it that
/// collides: the path itself or a directory above it).
fn twins(a: (&str, &str), b: (&str, &str)) -> Error {
    // In path byte order, whatever order the fold sorted them in.
    let (a, b) = if a.0.as_bytes() <= b.0.as_bytes() {
        (a, b)
    } else {
        (b, a)
    };
    Error::new(
        Code::PathNotRepresentable,
        format!(
            "the workspace paths {:?} and {:?} differ only in letter case or Unicode \
             normalisation ({:?} and {:?}): a case-insensitive checkout (macOS, Windows) writes \
             one file for both; rename one of them",
            shown(a.0),
            shown(b.0),
            shown(a.1),
            shown(b.1)
        ),
    )
    .with("path", shown(b.0))
    .with("paths", vec![shown(a.0), shown(b.0)])
    .with("names", vec![shown(a.1), shown(b.1)])
    .with("reason", "case or normalisation twins")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Path components that fold onto each other in every way the fold
    /// knows: ASCII case, NFC against NFD, the Kelvin sign, sharp s.
    const NAMES: &[&str] = &[
        "a", "A", "b", "B", "ab", "aB", "Ab", "a-b", "a.b", "a0", "x", "X", "k", "K", "\u{212a}",
        "e\u{301}", "\u{e9}", "\u{c9}", "E\u{301}", "ss", "SS", "\u{df}", "t", "T",
    ];

    fn path_strategy() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(NAMES), 1..4).prop_map(|c| c.join("/"))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// The shortcut for sorted input gives the full check's answer,
        /// refusal text and details included, on sets rich in twins and
        /// on sets with a few foldable paths among many plain ones.
        #[test]
        fn the_sorted_shortcut_is_the_full_check(
            paths in proptest::collection::btree_set(path_strategy(), 0..24),
            plain in proptest::collection::btree_set("[a-d]{1,3}(/[a-d]{1,3}){0,2}", 0..120),
        ) {
            for set in [paths.clone(), paths.iter().cloned().chain(plain.iter().cloned()).collect()] {
                let mut sorted: Vec<&str> = set.iter().map(String::as_str).collect();
                sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                sorted.dedup();
                let full = check_twins_all(&sorted).map_err(|e| e.to_string());
                let fast = check_twins(sorted.iter().copied()).map_err(|e| e.to_string());
                prop_assert_eq!(&fast, &full);
                // Any order, the same answer.
                let mut rev = sorted.clone();
                rev.reverse();
                prop_assert_eq!(check_twins(rev).map_err(|e| e.to_string()), full);
            }
        }
    }

    #[test]
    fn a_plain_path_twin_of_a_foldable_prefix_is_found() {
        // Only one path of each pair may fold; the other is its folded
        // spelling, as a file or as a directory above other files.
        for set in [
            vec!["Src/a", "src"],
            vec!["Src/a", "src/b"],
            vec!["a/B/c", "a/b/d", "z"],
            vec!["README", "readme"],
            vec!["d/\u{c9}t\u{e9}", "d/\u{e9}t\u{e9}/x"],
        ] {
            let mut v = set.clone();
            v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            let e = check_twins(v.iter().copied()).expect_err("twins");
            assert_eq!(e.code(), Code::PathNotRepresentable, "{set:?}");
        }
        check_twins(["A", "B/c", "b-c", "c"]).expect("no twins");
    }

    #[test]
    fn twins_under_case_folding_and_nfc_are_refused() {
        for (a, b) in [
            ("test.sh", "Test.sh"),
            ("tests/cases.txt", "TESTS/other.txt"),
            ("caf\u{e9}.txt", "cafe\u{301}.txt"),
            ("stra\u{df}e", "STRASSE"),
            ("\u{3c3}", "\u{3c2}"),
            ("k", "\u{212a}"),
            ("a/b", "A"),
        ] {
            let e = check_twins([a, b]).expect_err(&format!("{a:?} {b:?}"));
            assert_eq!(e.code(), Code::PathNotRepresentable);
            let listed = e.details().and_then(|d| d.get("paths")).cloned();
            let (x, y) = if a.as_bytes() < b.as_bytes() {
                (a, b)
            } else {
                (b, a)
            };
            assert_eq!(listed, Some(serde_json::json!([x, y])), "{a:?} {b:?}");
        }
        check_twins(["a/b", "a/c", "b/a", "tests/x", "test"]).expect("distinct paths");
        // `a-b` sorts between `a` and `a/…` by bytes; the fold's order
        // keeps a directory's paths together.
        let e = check_twins(["A", "a-b", "a/x"]).expect_err("A and a/");
        assert_eq!(
            e.details().and_then(|d| d.get("names")).cloned(),
            Some(serde_json::json!(["A", "a"]))
        );
        assert!(check_twins(["a/x", "a-b", "A/y"]).is_err());
        check_twins(["README.md", "readme.txt", "caf\u{e9}/x", "caf\u{e9}/y"]).expect("distinct");
    }

    #[test]
    fn dotfile_spellings() {
        for p in [
            ".gitattributes",
            ".GitAttributes",
            ".gitattributes.",
            ".gitattributes::$DATA",
            "gitatt~1",
            "gi7d29~1",
            ".gitattribute\u{200c}s",
            ".gitattribute\u{17f}",
        ] {
            assert!(names_dotfile(p, "gitattributes", Some(b"gi7d29")), "{p:?}");
        }
        for p in [
            ".gitattributes-x",
            "gitattributes",
            "x.gitattributes",
            "gitatt~5",
        ] {
            assert!(!names_dotfile(p, "gitattributes", Some(b"gi7d29")), "{p:?}");
        }
        assert!(names_dotfile(".LFSCONFIG", "lfsconfig", None));
        assert!(names_dotfile("lfscon~1", "lfsconfig", None));
        assert!(!names_dotfile(".lfsconfig.bak", "lfsconfig", None));
    }

    #[test]
    fn refuses_what_git_refuses() {
        for p in [
            ".git/x",
            ".Git/x",
            ".GIT/config",
            ".GIT",
            "a/.git",
            "a/.gIt/b",
            "GIT~1/x",
            "git~1",
            "a/Git~1/b",
            ".git./x",
            ".git /x",
            ".git . ./x",
            ".git::$INDEX_ALLOCATION/x",
            "git~1::$INDEX_ALLOCATION",
            "a\\.git\\x",
            "a\\git~1",
            ".g\u{200c}it/x",
            "\u{feff}.git",
            ".gi\u{200d}t",
            ".",
            "..",
            "a/./b",
            "a/../b",
            "a//b",
            "a/",
            "/abs",
            "",
            "nul\0byte",
        ] {
            assert!(refusal(p, false).is_some(), "{p:?} must be refused");
        }
    }

    #[test]
    fn a_symlinked_gitmodules_is_refused_in_every_spelling() {
        for p in [
            ".gitmodules",
            ".GitModules",
            "sub/.gitmodules",
            ".gitmodules.",
            ".gitmodules ",
            ".gitmodules::$DATA",
            "gitmod~1",
            "GITMOD~4",
            "gi7eba~1",
            "gi7eb~12",
            ".gitmodule\u{200c}s",
        ] {
            assert!(refusal(p, true).is_some(), "link {p:?} must be refused");
            assert_eq!(refusal(p, false), None, "file {p:?} is fine");
        }
    }

    #[test]
    fn ordinary_paths_pass() {
        for p in [
            "a",
            "README.md",
            ".gitignore",
            ".github/workflows/ci.yml",
            ".gitattributes",
            ".gitx/y",
            "gitx",
            "git~2/x",
            ".git-credentials.example",
            "a.git",
            "tests/.hidden",
            "...",
            "a/..b/c",
            "café/ünïcode.txt",
            "with space/and:colon",
            "back\\slash",
            "gitmod~5",
        ] {
            assert_eq!(refusal(p, false), None, "{p:?}");
            assert_eq!(refusal(p, true), None, "link {p:?}");
        }
        assert!(check(".Git/x", false).is_err_and(|e| e.code() == Code::PathNotRepresentable));
    }
}
