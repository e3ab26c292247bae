//! What people check out is what the sandbox ran: the one definition of a
//! revision's checkout findings, which `checkpoint` lists with its
//! protected changes (and `collector-claim`, `finalize`, `qualify` refuse
//! from there), `land` recomputes at admission, the attestation of an
//! override landing records, and `verify` refuses in a landed commit.
//!
//! The check is computed by git, never by matching attribute names (a
//! macro such as `[attr]x ident`, or an attribute the target already
//! has, would slip past a list): in a scratch repository, with system and
//! global configuration and attributes ignored (`GIT_CONFIG_NOSYSTEM`,
//! `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_ATTR_NOSYSTEM`, an empty `HOME`,
//! no inherited `GIT_*` or `XDG_*` variable, no template, so
//! `info/attributes` is empty and no filter driver is configured),
//! `core.autocrlf=false`, `core.eol=lf`:
//!
//! 1. the revision's `.gitattributes` files go into a temporary index and
//!    `git check-attr --cached -a` reports every attribute of every path
//!    (macros expanded by git); a `filter`, `export-subst` or
//!    `export-ignore` is a finding whatever the bytes;
//! 2. every regular file with any attribute is checked out by
//!    `git checkout-index` and its bytes compared with the manifest; any
//!    difference (or a file git did not write) is a finding.
//!
//! A revision with no file named exactly `.gitattributes` skips git
//! entirely: under that configuration no attribute applies to any path,
//! so checkout writes every blob as it is. Other spellings of the name,
//! a symbolic link named `.gitattributes` and any `.lfsconfig` are
//! findings by name (`contract::checkout::plan`). A path with no
//! attribute at all is not checked out either, for the same reason.

use crate::contract::checkout::{self, Plan};
use crate::contract::protected::{ChangeKind, ProtectedChanges};
use crate::contract::snapshot::{MODE_LINK, Manifest};
use crate::error::{Code, Error, Result};
use crate::store::Connection;
use crate::store::DataDir;
use crate::wire::digest::Sha256Hex;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The protected changes of `candidate` relative to the target head
/// `head` under the workflow's `patterns`, with the candidate's checkout
/// findings added: what `checkpoint` records and `land` and the
/// attestation of a landing recompute.
pub fn protected_changes(
    tx: &Connection,
    dir: &DataDir,
    patterns: &crate::contract::protected::Protected,
    head: &Sha256Hex,
    candidate: &Manifest,
) -> Result<ProtectedChanges> {
    let changes = if patterns.is_empty() {
        ProtectedChanges::default()
    } else {
        let head = super::change::load_manifest(tx, dir, head)?;
        crate::contract::protected::diff(patterns, &head, candidate)
    };
    Ok(changes.merge(revision_findings(dir, candidate)?))
}

/// The checkout findings of a revision whose objects are in `dir`'s CAS.
pub fn revision_findings(dir: &DataDir, m: &Manifest) -> Result<ProtectedChanges> {
    if crate::testhooks::skip_checkout_check() {
        return Ok(ProtectedChanges::default());
    }
    let plan = checkout::plan(m);
    if plan.attributes.is_empty() {
        return Ok(plan.findings);
    }
    let scratch = Scratch::new(dir.root(), None)?;
    let cas = dir.blobs()?;
    findings(&scratch, m, plan, &mut |s, idx| {
        s.import_blobs(idx.iter().map(|&i| &m.entries[i]), cas.as_ref())
    })
}

/// The checkout findings of a tree in a git repository (`verify`): `m`
/// is the tree's manifest and `oids` its blob ids in manifest order;
/// `objects` gives the repository's object directory, which the scratch
/// repository borrows (read-only, as an alternate); it is asked only when
/// a path has attributes to check (most trees have none: no git child).
pub fn tree_findings(
    objects: impl FnOnce() -> Result<PathBuf>,
    m: &Manifest,
    oids: &[String],
) -> Result<ProtectedChanges> {
    let plan = checkout::plan(m);
    if plan.attributes.is_empty() {
        return Ok(plan.findings);
    }
    if oids.len() != m.entries.len() {
        return Err(Error::internal("a blob id per manifest entry"));
    }
    let objects = objects()?;
    let scratch = Scratch::new(&std::env::temp_dir(), Some(&objects))?;
    findings(&scratch, m, plan, &mut |_, idx| {
        Ok(idx.iter().map(|&i| oids[i].clone()).collect())
    })
}

/// Blob ids (in the scratch repository) of the given manifest entries.
type Blobs<'a> = dyn FnMut(&Scratch, &[usize]) -> Result<Vec<String>> + 'a;

fn findings(
    s: &Scratch,
    m: &Manifest,
    plan: Plan,
    blobs: &mut Blobs<'_>,
) -> Result<ProtectedChanges> {
    let Plan {
        attributes,
        findings,
    } = plan;
    let oids = blobs(s, &attributes)?;
    s.add_to_index(m, &attributes, &oids)?;
    let mut paths = Vec::new();
    for e in &m.entries {
        paths.extend_from_slice(e.path.as_bytes());
        paths.push(0);
    }
    let out = s.git_out(&["check-attr", "--cached", "-a", "-z", "--stdin"], &paths)?;
    let reported = checkout::parse_check_attr(&out)?;
    let by_path: std::collections::HashMap<&str, usize> = m
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.path.as_str(), i))
        .collect();
    let mut attributed = vec![false; m.entries.len()];
    // Each (path, kind) once: `export-subst` and `export-ignore` on one
    // path are one finding.
    let mut found = std::collections::BTreeSet::new();
    for (path, attr, _) in reported {
        let i = std::str::from_utf8(path)
            .ok()
            .and_then(|p| by_path.get(p))
            .copied()
            .ok_or_else(|| Error::new(Code::Io, "git check-attr named a path not asked about"))?;
        if let Some(kind) = checkout::refused_attribute(attr) {
            found.insert((i, kind));
        }
        attributed[i] = true;
    }
    let rest: Vec<usize> = (0..m.entries.len())
        .filter(|&i| attributed[i] && m.entries[i].mode != MODE_LINK)
        .filter(|i| attributes.binary_search(i).is_err())
        .collect();
    let oids = blobs(s, &rest)?;
    s.add_to_index(m, &rest, &oids)?;
    // A failure shows as files that are missing or differ below.
    let _ = s.git_out(&["checkout-index", "-a", "-f", "-q"], &[]);
    for &i in attributes.iter().chain(&rest) {
        let e = &m.entries[i];
        if !s.reproduces(&e.path, e.size, &e.sha256) {
            found.insert((i, ChangeKind::Checkout));
        }
    }
    // Manifest order is path order.
    let mut computed = ProtectedChanges::default();
    for (i, kind) in found {
        computed.push(&m.entries[i].path, kind);
    }
    Ok(findings.merge(computed))
}

/// A scratch repository and work tree, removed when dropped.
struct Scratch {
    tmp: tempfile::TempDir,
    git_dir: PathBuf,
    work: PathBuf,
    home: PathBuf,
    index: PathBuf,
}

impl Scratch {
    fn new(parent: &Path, alternate: Option<&Path>) -> Result<Scratch> {
        let tmp = tempfile::Builder::new()
            .prefix("checkout-")
            .tempdir_in(parent)
            .map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
        let work = tmp.path().join("w");
        let home = tmp.path().join("home");
        for d in [&work, &home] {
            std::fs::create_dir(d).map_err(|e| Error::io("create", d, e))?;
        }
        let s = Scratch {
            git_dir: work.join(".git"),
            index: tmp.path().join("index"),
            work,
            home,
            tmp,
        };
        let mut c = s.command();
        c.args(["init", "-q", "--template="]).arg(&s.work);
        run(c, &[])?;
        if let Some(objects) = alternate {
            let info = s.git_dir.join("objects/info");
            std::fs::create_dir_all(&info).map_err(|e| Error::io("create", &info, e))?;
            let mut line = objects.as_os_str().as_encoded_bytes().to_vec();
            line.push(b'\n');
            let f = info.join("alternates");
            std::fs::write(&f, line).map_err(|e| Error::io("write", &f, e))?;
        }
        Ok(s)
    }

    /// git with nothing of the caller's configuration or environment
    /// (the runner's `isolated`), in this scratch repository.
    fn command(&self) -> Command {
        let mut c = crate::workflow::git::isolated(&self.home);
        c.env("GIT_INDEX_FILE", &self.index)
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.work)
            .args([
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.eol=lf",
                "-c",
                "core.symlinks=true",
                "-c",
                "core.fsmonitor=false",
            ])
            .current_dir(&self.work);
        c
    }

    fn git_out(&self, args: &[&str], stdin: &[u8]) -> Result<Vec<u8>> {
        let mut c = self.command();
        c.args(args);
        run(c, stdin)
    }

    /// Adds manifest entries `idx` (with blob ids `oids`) to the index.
    fn add_to_index(&self, m: &Manifest, idx: &[usize], oids: &[String]) -> Result<()> {
        if idx.is_empty() {
            return Ok(());
        }
        let mut info = Vec::new();
        for (&i, oid) in idx.iter().zip(oids) {
            let e = &m.entries[i];
            info.extend_from_slice(format!("{:o} {oid}\t{}", e.mode, e.path).as_bytes());
            info.push(0);
        }
        self.git_out(&["update-index", "--add", "-z", "--index-info"], &info)
            .map(drop)
    }

    /// Writes the entries' bytes (streamed and verified from the CAS) as
    /// blobs with one `git fast-import`; their ids in order.
    fn import_blobs<'a>(
        &self,
        entries: impl Iterator<Item = &'a crate::contract::snapshot::Entry>,
        cas: &dyn crate::store::BlobStore,
    ) -> Result<Vec<String>> {
        let entries: Vec<_> = entries.collect();
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let marks = self.tmp.path().join("marks");
        let mut c = self.command();
        c.args(["fast-import", "--quiet", "--done"])
            .arg(format!("--export-marks={}", marks.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c
            .spawn()
            .map_err(|e| Error::new(Code::Io, format!("cannot run git fast-import: {e}")))?;
        let fed = match child.stdin.take() {
            Some(stdin) => (|| -> Result<()> {
                let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
                let pipe =
                    |e: std::io::Error| Error::new(Code::Io, format!("git fast-import: {e}"));
                for (i, e) in entries.iter().enumerate() {
                    write!(w, "blob\nmark :{}\ndata {}\n", i + 1, e.size).map_err(pipe)?;
                    cas.copy_to(&e.sha256, e.size, &mut w)?;
                    w.write_all(b"\n").map_err(pipe)?;
                }
                w.write_all(b"done\n").map_err(pipe)?;
                w.flush().map_err(pipe)
            })(),
            None => Err(Error::internal("git fast-import has no stdin")),
        };
        let status = child
            .wait()
            .map_err(|e| Error::new(Code::Io, format!("git fast-import: {e}")))?;
        fed?;
        if !status.success() {
            return Err(Error::new(Code::Io, "git fast-import failed"));
        }
        let text = std::fs::read_to_string(&marks).map_err(|e| Error::io("read", &marks, e))?;
        let mut oids = vec![String::new(); entries.len()];
        for line in text.lines() {
            let (n, oid) = line
                .strip_prefix(':')
                .and_then(|l| l.split_once(' '))
                .and_then(|(n, oid)| Some((n.parse::<usize>().ok()?, oid)))
                .filter(|(n, _)| (1..=entries.len()).contains(n))
                .ok_or_else(|| Error::new(Code::Io, "git fast-import wrote an unexpected mark"))?;
            oid.clone_into(&mut oids[n - 1]);
        }
        if oids.iter().any(String::is_empty) {
            return Err(Error::new(
                Code::Io,
                "git fast-import did not mark every blob",
            ));
        }
        Ok(oids)
    }

    /// Whether the checked-out `path` is a regular file with exactly
    /// these bytes.
    fn reproduces(&self, path: &str, size: u64, sha256: &Sha256Hex) -> bool {
        let p = self.work.join(path);
        let Ok(f) = crate::store::private_fs::open_nofollow_read(&p) else {
            return false;
        };
        let Ok(meta) = f.metadata() else {
            return false;
        };
        if !meta.is_file() || meta.len() != size {
            return false;
        }
        let mut h = <sha2::Sha256 as sha2::Digest>::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut f = f;
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sha2::Digest::update(&mut h, &buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        let got: [u8; 32] = sha2::Digest::finalize(h).into();
        Sha256Hex::from_bytes(got) == *sha256
    }
}

/// Runs a git command to completion through the runner (`stdin` fed
/// from another thread, so a large output never blocks the feed); its
/// stdout on success.
fn run(c: Command, stdin: &[u8]) -> Result<Vec<u8>> {
    let (code, out, err) = crate::workflow::git::output(c, Some(stdin))?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!("git failed in the checkout check: {err}"),
        ));
    }
    Ok(out)
}
