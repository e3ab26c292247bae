//! The git objects of a landing, through the runner: the revision's
//! blobs (one `git fast-import`), the check that the tree git wrote is
//! exactly the revision, and a branch's value.

use crate::contract::snapshot::Manifest;
use crate::error::{Code, Error, Result};
use crate::store::DataDir;
use std::path::Path;

pub(crate) fn git(
    src: &Path,
    index: Option<&Path>,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Result<String> {
    git_env(src, index, args, &[], stdin)
}

/// Runs git in the repository (the runner's environment and mask) with
/// `envs` added; requires success and returns trimmed stdout.
pub(crate) fn git_env(
    src: &Path,
    index: Option<&Path>,
    args: &[&str],
    envs: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> Result<String> {
    let index_env;
    let mut all: Vec<(&str, &str)> = envs.to_vec();
    if let Some(i) = index {
        index_env = i.to_string_lossy().into_owned();
        all.push(("GIT_INDEX_FILE", index_env.as_str()));
    }
    let (code, out, err) = super::run(src, args, &all, stdin)?;
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

/// Runs git and returns its raw stdout (for `-z` output).
pub(crate) fn git_bytes(src: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let (code, out, err) = super::run(src, args, &[], None)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!(
                "git {} failed: {err}",
                args.first().copied().unwrap_or_default()
            ),
        ));
    }
    Ok(out)
}

/// The value of `ref_name` (`None`: absent). A git failure is an error.
pub(crate) fn git_ref_value(src: &Path, ref_name: &str) -> Result<Option<String>> {
    let out = git(
        src,
        None,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            ref_name,
        ],
        None,
    )?;
    Ok(out.lines().find_map(|l| {
        l.strip_prefix(ref_name)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(str::to_owned)
    }))
}

/// `git ls-tree -r -z` of the written tree must be exactly the manifest:
/// the same paths, each with the manifest's mode and the blob id that
/// fast-import gave the manifest's bytes.
pub(crate) fn verify_tree(
    src: &Path,
    tree: &str,
    manifest: &Manifest,
    oids: &[String],
) -> Result<()> {
    let listing = git_bytes(src, &["ls-tree", "-r", "-z", "--full-tree", tree])?;
    /// (mode, type, object id) of one `ls-tree` line.
    type Listed<'a> = (&'a [u8], &'a [u8], &'a [u8]);
    let mut got: std::collections::HashMap<&[u8], Listed<'_>> = std::collections::HashMap::new();
    for rec in listing.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let parsed = rec
            .iter()
            .position(|&b| b == b'\t')
            .and_then(|tab| {
                let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
                let mut it = meta.split(|&b| b == b' ');
                Some((path, (it.next()?, it.next()?, it.next()?)))
            })
            .ok_or_else(|| Error::new(Code::Io, "git ls-tree printed an unexpected line"))?;
        got.insert(parsed.0, parsed.1);
    }
    let mismatch = |path: &str, why: &str| {
        Error::new(
            Code::LandedTreeMismatch,
            format!(
                "the tree git wrote is not the tested revision ({why}: {}); nothing was landed",
                path.escape_debug()
            ),
        )
        .with("path", path)
        .with("tree", tree)
    };
    for (e, oid) in manifest.entries.iter().zip(oids) {
        let Some((mode, kind, id)) = got.remove(e.path.as_bytes()) else {
            return Err(mismatch(&e.path, "missing from the tree"));
        };
        let want_mode = format!("{:06o}", e.mode);
        if mode != want_mode.as_bytes() || kind != b"blob" {
            return Err(mismatch(&e.path, "another mode or type"));
        }
        if id != oid.as_bytes() {
            return Err(mismatch(&e.path, "another blob"));
        }
    }
    if let Some(extra) = got.keys().next() {
        return Err(mismatch(
            &String::from_utf8_lossy(extra),
            "in the tree but not in the revision",
        ));
    }
    Ok(())
}

/// Writes every manifest entry's bytes (read and verified from the CAS) as
/// a git blob with ONE `git fast-import` process (blobs and marks only: no
/// ref, no commit) and returns their object ids in manifest order. A link
/// entry's bytes are its target, which is exactly git's 120000 blob.
pub(crate) fn write_blobs(
    src: &Path,
    tmp: &Path,
    dir: &DataDir,
    manifest: &Manifest,
) -> Result<Vec<String>> {
    use std::io::Write;
    let marks = tmp.join("marks");
    let err_path = tmp.join("fast-import.err");
    let err_file =
        std::fs::File::create(&err_path).map_err(|e| Error::io("create", &err_path, e))?;
    let mut child = super::command(src)
        .args(["fast-import", "--quiet", "--done"])
        .arg(format!("--export-marks={}", marks.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(err_file)
        .spawn()
        .map_err(|e| Error::new(Code::Io, format!("cannot run git fast-import: {e}")))?;
    let cas = dir.blobs()?;
    let fed = match child.stdin.take() {
        Some(stdin) => (|| -> Result<()> {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
            let pipe = |e: std::io::Error| Error::new(Code::Io, format!("git fast-import: {e}"));
            for (i, e) in manifest.entries.iter().enumerate() {
                // Streamed from the CAS (verified at the end of each
                // object); a bad object stops the feed before `done`.
                write!(w, "blob\nmark :{}\ndata {}\n", i + 1, e.size).map_err(pipe)?;
                cas.copy_to(&e.sha256, e.size, &mut w)?;
                w.write_all(b"\n").map_err(pipe)?;
            }
            w.write_all(b"done\n").map_err(pipe)?;
            w.flush().map_err(pipe)
        })(),
        None => Err(Error::internal("git fast-import has no stdin")),
    };
    // Closing stdin without `done` makes fast-import fail (and write no
    // marks), so an interrupted feed never looks complete.
    let status = child
        .wait()
        .map_err(|e| Error::new(Code::Io, format!("git fast-import: {e}")))?;
    fed?;
    if !status.success() {
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        return Err(Error::new(
            Code::Io,
            format!("git fast-import failed: {}", err.trim()),
        ));
    }
    let text = std::fs::read_to_string(&marks).map_err(|e| Error::io("read", &marks, e))?;
    let mut oids = vec![String::new(); manifest.entries.len()];
    for line in text.lines() {
        let parsed = line
            .strip_prefix(':')
            .and_then(|l| l.split_once(' '))
            .and_then(|(n, oid)| Some((n.parse::<usize>().ok()?, oid)));
        match parsed {
            Some((n, oid)) if n >= 1 && n <= oids.len() => oid.clone_into(&mut oids[n - 1]),
            _ => {
                return Err(Error::new(
                    Code::Io,
                    format!("git fast-import wrote an unexpected mark line: {line}"),
                ));
            }
        }
    }
    if oids.iter().any(String::is_empty) {
        return Err(Error::new(
            Code::Io,
            "git fast-import did not mark every blob",
        ));
    }
    Ok(oids)
}
