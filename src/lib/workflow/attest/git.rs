//! The git plumbing attestations need: resolve a commit, its tree, the
//! revision digest of that tree, and the `refs/notes/agent-task` note.
//!
//! The revision digest of a tree is recomputed exactly as a checkpoint
//! computes it from a work tree (`authority::snapshot`): one manifest
//! entry per blob of `git ls-tree -r -z` (path, mode 100644/100755/120000,
//! size, SHA-256 of the blob's bytes, streamed through one
//! `git cat-file --batch-command` process), sorted by path bytes, serialised
//! canonically and digested under `agent-task.revision.v1`. A submodule,
//! a non-UTF-8 path or any other mode cannot be part of a revision.

use crate::contract::canonical_bytes;
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::authority::snapshot::{self, Entry, Manifest};
use sha2::Digest as _;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The notes ref the envelopes live under.
pub const NOTES_REF: &str = "refs/notes/agent-task";
/// Largest note read or written.
pub const MAX_NOTE_BYTES: u64 = 16 << 20;
/// Longest path accepted in a tree.
pub const MAX_PATH_BYTES: usize = 4096;
/// Largest commit object read (its first line names the tree).
const MAX_COMMIT_BYTES: u64 = 16 << 20;

fn command(repo: &Path) -> Command {
    // The authority's one git runner: its environment policy and the
    // repository's file-mode mask (notes are written into the repository).
    let mut c = crate::workflow::git::command(repo);
    c.env("GIT_AUTHOR_NAME", "agent-task land")
        .env("GIT_AUTHOR_EMAIL", "agent-task@localhost")
        .env("GIT_COMMITTER_NAME", "agent-task land")
        .env("GIT_COMMITTER_EMAIL", "agent-task@localhost");
    c
}

/// git that only reads `repo` (`workflow::git::reader`: the runner's
/// policy, no mask look-up).
fn reader(repo: &Path) -> Command {
    crate::workflow::git::reader(repo)
}

/// Runs a reading git ([`reader`]); (exit code, stdout, stderr).
fn run_read(repo: &Path, args: &[&str]) -> Result<(i32, Vec<u8>, String)> {
    let mut c = reader(repo);
    c.args(args);
    crate::workflow::git::output(c, None)
}

/// Runs git; returns (exit code, stdout, stderr). Only a failure to start
/// is an error here.
fn run(repo: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<(i32, Vec<u8>, String)> {
    let mut c = command(repo);
    c.args(args);
    crate::workflow::git::output(c, stdin)
}

/// Runs git and requires success; returns trimmed stdout.
fn run_ok(repo: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<String> {
    let (code, out, err) = run(repo, args, stdin)?;
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

fn is_object_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64)
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The tree id of a commit.
pub fn tree_of(repo: &Path, commit: &str) -> Result<String> {
    let t = run_ok(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{commit}^{{tree}}"),
        ],
        None,
    )?;
    if !is_object_id(&t) {
        return Err(Error::new(Code::Io, "git rev-parse printed no tree id"));
    }
    Ok(t)
}

/// A tree's revision digest and the plain SHA-256 of its canonical manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRevision {
    /// `domain_digest("agent-task.revision.v1", manifest)`.
    pub revision: Sha256Hex,
    /// SHA-256 of the canonical manifest bytes.
    pub manifest_sha256: Sha256Hex,
    /// Files in the tree.
    pub files: usize,
}

fn not_a_revision(msg: String) -> Error {
    Error::new(Code::AttestationRevisionMismatch, msg)
}

/// Recomputes the revision digest of a tree (streaming, bounded: at most
/// `snapshot::MAX_FILES` entries, paths of at most 4096 bytes, blobs of at
/// most `snapshot::MAX_FILE_BYTES`).
pub fn revision_of_tree(repo: &Path, tree: &str) -> Result<TreeRevision> {
    TreeRevision::of(&tree_manifest(repo, tree)?.0)
}

impl TreeRevision {
    /// The revision of a tree's manifest.
    pub fn of(manifest: &Manifest) -> Result<TreeRevision> {
        let bytes = canonical_bytes(manifest)?;
        Ok(TreeRevision {
            revision: domain_digest(snapshot::DOMAIN_REVISION, &bytes),
            manifest_sha256: Sha256Hex::digest(&bytes),
            files: manifest.entries.len(),
        })
    }
}

/// The manifest of a tree (bounded as [`revision_of_tree`] says) and the
/// blob id of each entry, in manifest order.
pub fn tree_manifest(repo: &Path, tree: &str) -> Result<(Manifest, Vec<String>)> {
    let mut objects = Objects::open(repo)?;
    let m = objects.tree_manifest(repo, tree)?;
    objects.finish()?;
    Ok(m)
}

/// A commit and its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full commit id.
    pub id: String,
    /// The full id of its tree.
    pub tree: String,
}

/// What `git cat-file --batch` says of an object it has.
struct Header {
    oid: String,
    kind: String,
    size: u64,
}

fn cat_file_io(e: std::io::Error) -> Error {
    Error::new(Code::Io, format!("git cat-file: {e}"))
}

/// One `git cat-file --batch-command --buffer` child answering every
/// object read of a `verify` (the commit, the note blob, every blob of the
/// tree), so that none costs a git start of its own. Each question is a
/// `contents` command (the output of `--batch`); git writes its answers
/// only at a `flush`, in full buffers, so the blobs of a tree arrive many
/// to a pipe write instead of one write (and one wake-up of the reader)
/// per blob. After an error it answers nothing
/// more (drop it); [`Objects::finish`] closes it and checks git's exit.
pub struct Objects {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    done: bool,
}

impl Drop for Objects {
    fn drop(&mut self) {
        if !self.done {
            // Read-only; a child left mid-answer is stopped, never waited
            // on while it blocks on a pipe no one reads.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Objects {
    /// Starts `git cat-file --batch-command --buffer` in `repo` (a
    /// directory that is no repository shows on the first question: the
    /// child exits).
    pub fn open(repo: &Path) -> Result<Objects> {
        let mut child = reader(repo)
            .args(["cat-file", "--batch-command", "--buffer"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::new(Code::Io, format!("cannot run git cat-file: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::internal("git cat-file has no pipes"));
        };
        // Best effort: a smaller pipe only means more wake-ups ([`Bursts`]).
        let _ = rustix::pipe::fcntl_setpipe_size(&stdout, ANSWER_PIPE_BYTES);
        Ok(Objects {
            child,
            stdin: Some(stdin),
            out: BufReader::with_capacity(1 << 16, stdout),
            done: false,
        })
    }

    /// Closes the session and requires git's success.
    pub fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        self.done = true;
        let status = self.child.wait().map_err(cat_file_io)?;
        if !status.success() {
            return Err(Error::new(Code::Io, "git cat-file failed"));
        }
        Ok(())
    }

    /// Asks for the object `name` names; `None` when git has none
    /// (missing or ambiguous). The body follows unless `None`.
    fn ask(&mut self, name: &str) -> Result<Option<Header>> {
        let w = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::internal("git cat-file is closed"))?;
        w.write_all(format!("contents {name}\nflush\n").as_bytes())
            .map_err(cat_file_io)?;
        read_header(&mut self.out)
    }

    /// The `size` bytes of an object's body (and its closing newline).
    fn body(&mut self, size: u64) -> Result<Vec<u8>> {
        let n =
            usize::try_from(size).map_err(|_| Error::new(Code::TooLarge, "object too large"))?;
        let mut b = vec![0u8; n];
        self.out.read_exact(&mut b).map_err(cat_file_io)?;
        let mut nl = [0u8; 1];
        self.out.read_exact(&mut nl).map_err(cat_file_io)?;
        Ok(b)
    }

    /// Resolves `rev` to a commit of `repo` and its tree (`not_found` when
    /// it names no commit there or `repo` is no repository;
    /// `invalid_input` for a malformed name).
    pub fn resolve_commit(&mut self, repo: &Path, rev: &str) -> Result<Commit> {
        if rev.is_empty() || rev.len() > 256 || rev.starts_with('-') || rev.contains(['\0', '\n']) {
            return Err(Error::new(Code::InvalidInput, "not a commit name").with("commit", rev));
        }
        let h = match self.ask(&format!("{rev}^{{commit}}")) {
            Ok(Some(h)) if h.kind == "commit" => h,
            asked => {
                // No answer or no commit: which of the two (asked only now,
                // not before every verify).
                let (code, _, err) = run_read(repo, &["rev-parse", "--git-dir"])?;
                if code != 0 {
                    return Err(Error::new(
                        Code::NotFound,
                        format!("{} is not a git repository: {err}", repo.display()),
                    )
                    .with("repo", repo.display().to_string()));
                }
                asked?;
                return Err(Error::new(
                    Code::NotFound,
                    format!("no commit {rev} in {}", repo.display()),
                )
                .with("commit", rev));
            }
        };
        if h.size > MAX_COMMIT_BYTES {
            return Err(Error::new(
                Code::TooLarge,
                "the commit object is over 16 MiB",
            ));
        }
        let body = self.body(h.size)?;
        let tree = body
            .strip_prefix(b"tree ")
            .and_then(|r| r.split(|&b| b == b'\n').next())
            .and_then(|t| std::str::from_utf8(t).ok())
            .filter(|t| is_object_id(t))
            .ok_or_else(|| Error::new(Code::Io, "the commit object names no tree"))?;
        Ok(Commit {
            tree: tree.to_owned(),
            id: h.oid,
        })
    }

    /// The note on `commit` under [`NOTES_REF`] (`None`: no note), at
    /// most [`MAX_NOTE_BYTES`].
    pub fn note(&mut self, repo: &Path, commit: &str) -> Result<Option<Vec<u8>>> {
        let (code, out, err) = run_read(
            repo,
            &["notes", &format!("--ref={NOTES_REF}"), "list", commit],
        )?;
        if code == 1 && out.is_empty() {
            return Ok(None);
        }
        if code != 0 {
            return Err(Error::new(
                Code::Io,
                format!("git notes list failed: {err}"),
            ));
        }
        let blob = String::from_utf8_lossy(&out).trim().to_owned();
        if !is_object_id(&blob) {
            return Err(Error::new(Code::Io, "git notes list printed no object id"));
        }
        let h = self
            .ask(&blob)?
            .filter(|h| h.kind == "blob" && h.oid == blob)
            .ok_or_else(|| Error::new(Code::Io, "git cat-file: the note blob is missing"))?;
        if h.size > MAX_NOTE_BYTES {
            return Err(Error::new(
                Code::TooLarge,
                format!("the agent-task note is over {MAX_NOTE_BYTES} bytes"),
            ));
        }
        Ok(Some(self.body(h.size)?))
    }

    /// [`tree_manifest`] through this session.
    pub fn tree_manifest(&mut self, repo: &Path, tree: &str) -> Result<(Manifest, Vec<String>)> {
        let listed = list_tree(repo, tree)?;
        self.manifest_of(listed)
    }

    /// The manifest of a tree listed by [`list_tree`] (each blob read and
    /// hashed through this session), and each entry's blob id.
    pub fn manifest_of(&mut self, listed: TreeListing) -> Result<(Manifest, Vec<String>)> {
        let listed = listed.0;
        let blobs = self.hash_blobs(&listed)?;
        let mut entries = Vec::with_capacity(listed.len());
        for (path, mode, oid) in listed {
            let (size, sha256) = blobs
                .get(&oid)
                .cloned()
                .ok_or_else(|| Error::internal("a listed blob was not hashed"))?;
            entries.push((
                Entry {
                    path,
                    mode,
                    size,
                    sha256,
                },
                oid,
            ));
        }
        entries.sort_unstable_by(|a, b| a.0.path.as_bytes().cmp(b.0.path.as_bytes()));
        let (entries, oids) = entries.into_iter().unzip();
        Ok((
            Manifest {
                version: 1,
                entries,
            },
            oids,
        ))
    }
}

/// The files of a tree as `git ls-tree -r` lists them (path, mode, blob
/// id), checked: what [`Objects::manifest_of`] hashes.
pub struct TreeListing(Vec<(String, u32, String)>);

/// Lists a tree with `git ls-tree -r -z` (a git process of its own, so a
/// caller may run it while its [`Objects`] session answers other
/// questions).
pub fn list_tree(repo: &Path, tree: &str) -> Result<TreeListing> {
    if !is_object_id(tree) {
        return Err(Error::new(Code::InvalidInput, "not a tree id"));
    }
    let mut child = reader(repo)
        .args(["ls-tree", "-r", "-z", "--end-of-options", tree])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::new(Code::Io, format!("cannot run git ls-tree: {e}")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::internal("git ls-tree has no stdout"))?;
    let listed = read_tree_listing(BufReader::new(stdout));
    let status = child
        .wait()
        .map_err(|e| Error::new(Code::Io, format!("git ls-tree: {e}")))?;
    let listed = listed?;
    if !status.success() {
        return Err(Error::new(Code::Io, "git ls-tree failed"));
    }
    Ok(TreeListing(listed))
}

/// The repository's object directory, absolute.
pub fn objects_dir(repo: &Path) -> Result<std::path::PathBuf> {
    let (code, out, err) = run_read(
        repo,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "objects",
        ],
    )?;
    if code != 0 {
        return Err(Error::new(Code::Io, format!("git rev-parse failed: {err}")));
    }
    Ok(std::path::PathBuf::from(
        String::from_utf8_lossy(&out).trim(),
    ))
}

/// Parses `git ls-tree -r -z` records: `<mode> SP <type> SP <oid> TAB <path> NUL`.
fn read_tree_listing(mut r: impl BufRead) -> Result<Vec<(String, u32, String)>> {
    let mut out = Vec::new();
    let mut rec = Vec::new();
    loop {
        rec.clear();
        let n = r
            .by_ref()
            .take((MAX_PATH_BYTES + 128) as u64)
            .read_until(0, &mut rec)
            .map_err(|e| Error::new(Code::Io, format!("git ls-tree: {e}")))?;
        if n == 0 {
            break;
        }
        if rec.last() != Some(&0) {
            return Err(not_a_revision(
                "the tree has a path longer than 4096 bytes".into(),
            ));
        }
        rec.pop();
        let tab = rec
            .iter()
            .position(|&b| b == b'\t')
            .ok_or_else(|| Error::new(Code::Io, "unexpected git ls-tree output"))?;
        let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
        let meta = std::str::from_utf8(meta)
            .map_err(|_| Error::new(Code::Io, "unexpected git ls-tree output"))?;
        let mut parts = meta.split(' ');
        let (Some(mode), Some(kind), Some(oid), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::new(Code::Io, "unexpected git ls-tree output"));
        };
        let path = std::str::from_utf8(path)
            .map_err(|_| not_a_revision("the tree has a path that is not UTF-8".into()))?
            .to_owned();
        let mode = match (mode, kind) {
            ("100644", "blob") => snapshot::MODE_FILE,
            ("100755", "blob") => snapshot::MODE_EXEC,
            ("120000", "blob") => snapshot::MODE_LINK,
            ("160000", _) => {
                return Err(not_a_revision(format!(
                    "the tree has a submodule at {path:?}; no revision has one"
                )));
            }
            _ => {
                return Err(not_a_revision(format!(
                    "the tree has mode {mode} at {path:?}; a revision has 100644, 100755 or 120000"
                )));
            }
        };
        if !is_object_id(oid) {
            return Err(Error::new(Code::Io, "unexpected git ls-tree output"));
        }
        if out.len() >= snapshot::MAX_FILES {
            return Err(Error::new(
                Code::TooLarge,
                format!("the tree has more than {} files", snapshot::MAX_FILES),
            ));
        }
        out.push((path, mode, oid.to_owned()));
    }
    Ok(out)
}

/// Reads one `git cat-file --batch` header: `None` for a name git has
/// no object for.
fn read_header(r: &mut impl BufRead) -> Result<Option<Header>> {
    let mut line = Vec::new();
    r.by_ref()
        .take(512)
        .read_until(b'\n', &mut line)
        .map_err(cat_file_io)?;
    if line.pop() != Some(b'\n') {
        return Err(Error::new(Code::Io, "git cat-file gave no answer"));
    }
    let line = std::str::from_utf8(&line)
        .map_err(|_| Error::new(Code::Io, "unexpected git cat-file output"))?;
    if line.ends_with(" missing") || line.ends_with(" ambiguous") {
        return Ok(None);
    }
    let mut parts = line.split(' ');
    let (Some(oid), Some(kind), Some(size), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Error::new(Code::Io, "unexpected git cat-file output"));
    };
    let size: u64 = size
        .parse()
        .map_err(|_| Error::new(Code::Io, "git cat-file: bad size"))?;
    if !is_object_id(oid) {
        return Err(Error::new(Code::Io, "unexpected git cat-file output"));
    }
    Ok(Some(Header {
        oid: oid.to_owned(),
        kind: kind.to_owned(),
        size,
    }))
}

impl Objects {
    /// Size and SHA-256 of every distinct blob, streamed through the
    /// session (a writer thread feeds the ids; a failed read stops git, so
    /// the writer never waits on a pipe no one drains).
    fn hash_blobs(
        &mut self,
        listed: &[(String, u32, String)],
    ) -> Result<HashMap<String, (u64, Sha256Hex)>> {
        let mut ids: Vec<&str> = listed.iter().map(|(_, _, o)| o.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(out);
        }
        let Objects {
            child,
            stdin,
            out: r,
            ..
        } = self;
        let stdin = stdin
            .as_mut()
            .ok_or_else(|| Error::internal("git cat-file is closed"))?;
        std::thread::scope(|sc| {
            let ids_ref = &ids;
            sc.spawn(move || {
                let mut w = std::io::BufWriter::new(stdin);
                for id in ids_ref {
                    if writeln!(w, "contents {id}").is_err() {
                        return;
                    }
                }
                let _ = writeln!(w, "flush");
                let _ = w.flush();
            });
            // Every answer so far was read whole, so nothing is left in
            // the session's buffer; the blobs are read in bursts.
            let read = if r.buffer().is_empty() {
                let mut bursts = BufReader::with_capacity(1 << 18, Bursts::new(r.get_mut()));
                read_blobs(&mut bursts, &ids, &mut out)
            } else {
                Err(Error::internal(
                    "git cat-file answered more than it was asked",
                ))
            };
            if read.is_err() {
                let _ = child.kill();
            }
            read
        })?;
        Ok(out)
    }
}

/// A read that found fewer bytes than this waiting in the pipe is
/// followed by a [`BURST_PAUSE`].
const BURST_MIN: usize = 16 * 1024;
/// How long a [`Bursts`] reader lets git fill the pipe.
const BURST_PAUSE: std::time::Duration = std::time::Duration::from_micros(500);
/// The pipe capacity asked for git's answers (Linux's default limit for
/// an unprivileged process; a refusal leaves the default 64 KiB).
const ANSWER_PIPE_BYTES: usize = 1 << 20;

/// Reads git's stream of blobs in bursts. A reader blocked on an empty
/// pipe is woken by each of git's writes (4 KiB, its stdio buffer): a
/// wake-up of the other core per write, paid in git's own time, which
/// doubled `cat-file`'s time for 10,000 small blobs (35 ms into
/// `/dev/null`, 67 ms into a drained pipe). After a read that found the
/// pipe nearly empty this reader pauses for [`BURST_PAUSE`] while git
/// writes on without waking anyone, into a pipe of
/// [`ANSWER_PIPE_BYTES`]; a read that finds more goes on at once. The
/// delay this adds is at most one pause per short read.
struct Bursts<R> {
    inner: R,
    short: bool,
}

impl<R> Bursts<R> {
    fn new(inner: R) -> Bursts<R> {
        Bursts {
            inner,
            short: false,
        }
    }
}

impl<R: Read> Read for Bursts<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.short {
            std::thread::sleep(BURST_PAUSE);
        }
        let n = self.inner.read(buf)?;
        self.short = n < BURST_MIN.min(buf.len());
        Ok(n)
    }
}

/// Reads the answers to `ids` (blobs, in order) and hashes each.
fn read_blobs(
    r: &mut impl BufRead,
    ids: &[&str],
    out: &mut HashMap<String, (u64, Sha256Hex)>,
) -> Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    for id in ids {
        let Some(h) = read_header(r)? else {
            return Err(Error::new(
                Code::Io,
                format!("git cat-file: object {id} is missing"),
            ));
        };
        if h.oid != *id || h.kind != "blob" {
            return Err(Error::new(
                Code::Io,
                format!("git cat-file: unexpected object {} ({})", h.oid, h.kind),
            ));
        }
        if h.size > snapshot::MAX_FILE_BYTES {
            return Err(not_a_revision(format!(
                "a blob is larger than {} bytes",
                snapshot::MAX_FILE_BYTES
            )));
        }
        let mut hasher = sha2::Sha256::new();
        let mut left = h.size;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(buf.len()));
            let chunk = buf
                .get_mut(..want)
                .ok_or_else(|| Error::internal("chunk bounds"))?;
            r.read_exact(chunk).map_err(cat_file_io)?;
            hasher.update(&*chunk);
            left -= want as u64;
        }
        let mut nl = [0u8; 1];
        r.read_exact(&mut nl).map_err(cat_file_io)?;
        out.insert(
            (*id).to_owned(),
            (h.size, Sha256Hex::from_bytes(hasher.finalize().into())),
        );
    }
    Ok(())
}

/// The note on `commit` under [`NOTES_REF`] (`None`: no note).
pub fn read_note(repo: &Path, commit: &str) -> Result<Option<Vec<u8>>> {
    let mut objects = Objects::open(repo)?;
    let note = objects.note(repo, commit)?;
    objects.finish()?;
    Ok(note)
}

/// Adds `bytes` as the note on `commit` (the exact bytes: a blob written
/// with `hash-object`, attached with `notes add -C`). Refuses to replace
/// an existing note.
pub fn write_note(repo: &Path, commit: &str, bytes: &[u8]) -> Result<()> {
    put_note(repo, commit, bytes, false)
}

/// [`write_note`], replacing the note already on `commit` (a proposal's
/// note on a candidate commit the forge fast-forwarded the target to:
/// the landing's note takes its place).
pub fn replace_note(repo: &Path, commit: &str, bytes: &[u8]) -> Result<()> {
    put_note(repo, commit, bytes, true)
}

fn put_note(repo: &Path, commit: &str, bytes: &[u8], force: bool) -> Result<()> {
    if bytes.len() as u64 > MAX_NOTE_BYTES {
        return Err(Error::new(Code::TooLarge, "the note is over 16 MiB"));
    }
    let blob = run_ok(repo, &["hash-object", "-w", "--stdin"], Some(bytes))?;
    if !is_object_id(&blob) {
        return Err(Error::new(Code::Io, "git hash-object printed no object id"));
    }
    let notes_ref = format!("--ref={NOTES_REF}");
    let mut args = vec!["notes", notes_ref.as_str(), "add"];
    if force {
        args.push("-f");
    }
    args.extend(["-C", blob.as_str(), commit]);
    run_ok(repo, &args, None)?;
    let (code, out, _) = run(
        repo,
        &["notes", &format!("--ref={NOTES_REF}"), "list", commit],
        None,
    )?;
    if code != 0 || String::from_utf8_lossy(&out).trim() != blob {
        return Err(Error::new(
            Code::Io,
            "the note git recorded is not the blob written",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader handing out at most `step` bytes per read, counting reads.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        reads: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn blobs_read_in_bursts_are_the_blobs_git_sent() {
        let blobs: Vec<Vec<u8>> = (0..300u32)
            .map(|i| {
                format!("blob {i}\n")
                    .repeat(1 + (i as usize % 40))
                    .into_bytes()
            })
            .collect();
        let ids: Vec<String> = (0..300u32).map(|i| format!("{i:040x}")).collect();
        let mut stream = Vec::new();
        for (id, b) in ids.iter().zip(&blobs) {
            stream.extend_from_slice(format!("{id} blob {}\n", b.len()).as_bytes());
            stream.extend_from_slice(b);
            stream.push(b'\n');
        }
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        // Short reads (a pause after each) and long ones both give every
        // blob's size and digest, in order.
        for step in [100, BURST_MIN, 1 << 20] {
            let mut src = Trickle {
                data: &stream,
                step,
                reads: 0,
            };
            let mut out = HashMap::new();
            {
                let mut r = BufReader::with_capacity(1 << 18, Bursts::new(&mut src));
                read_blobs(&mut r, &id_refs, &mut out).expect("read");
            }
            for (id, b) in ids.iter().zip(&blobs) {
                assert_eq!(
                    out.get(id),
                    Some(&(b.len() as u64, Sha256Hex::digest(b))),
                    "step {step}"
                );
            }
            assert!(src.reads >= stream.len().div_ceil(step.min(1 << 18)));
        }
        // A stream cut short is an error, never a partial answer.
        let mut cut = Trickle {
            data: &stream[..stream.len() - 5],
            step: 4096,
            reads: 0,
        };
        let mut out = HashMap::new();
        let mut r = BufReader::new(Bursts::new(&mut cut));
        assert!(read_blobs(&mut r, &id_refs, &mut out).is_err());
    }

    #[test]
    fn listing_parser_refuses_what_no_revision_has() {
        let oid = "a".repeat(40);
        let ok = format!("100644 blob {oid}\ta b\0100755 blob {oid}\tx/y\0120000 blob {oid}\tl\0");
        let v = read_tree_listing(ok.as_bytes()).expect("parse");
        assert_eq!(v.len(), 3);
        assert_eq!(v[1], ("x/y".to_owned(), snapshot::MODE_EXEC, oid.clone()));
        for bad in [
            format!("160000 commit {oid}\tsub\0"),
            format!("100664 blob {oid}\tf\0"),
        ] {
            let e = read_tree_listing(bad.as_bytes()).expect_err("refused");
            assert_eq!(e.code(), Code::AttestationRevisionMismatch, "{bad}");
        }
        let mut non_utf8 = format!("100644 blob {oid}\t").into_bytes();
        non_utf8.extend_from_slice(b"\xff\0");
        assert!(read_tree_listing(&non_utf8[..]).is_err());
    }

    fn git_ok(dir: &Path, args: &[&str]) -> String {
        let out = command(dir).args(args).output().expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn resolve_commit(repo: &Path, rev: &str) -> Result<String> {
        let mut objects = Objects::open(repo)?;
        let c = objects.resolve_commit(repo, rev)?;
        assert_eq!(tree_of(repo, &c.id)?, c.tree, "the commit's tree line");
        objects.finish()?;
        Ok(c.id)
    }

    #[test]
    fn tree_revision_equals_the_checkpoint_revision_of_the_same_files() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().expect("tmp");
        let w = t.path();
        std::fs::create_dir_all(w.join("a/b c/ü")).expect("dirs");
        std::fs::write(w.join("README"), "hello\n").expect("write");
        // The same blob twice: asked for once, in the manifest twice.
        std::fs::write(w.join("a/README.copy"), "hello\n").expect("write");
        std::fs::write(w.join("empty"), "").expect("write");
        std::fs::write(w.join("a/b c/ü/q\"uo'te\\s.txt"), vec![0u8, 255, 10]).expect("write");
        std::fs::write(w.join("run.sh"), "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(w.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::symlink("a/b c", w.join("link")).expect("symlink");
        std::fs::write(w.join(".gitignore"), "ignored\n").expect("write");
        std::fs::write(w.join("ignored"), "not tracked").expect("write");
        git_ok(w, &["init", "-q", "-b", "main"]);
        git_ok(w, &["add", "-A"]);
        git_ok(w, &["commit", "-q", "-m", "fixture"]);
        let commit = resolve_commit(w, "main").expect("commit");
        let tree = tree_of(w, &commit).expect("tree");
        let from_git = revision_of_tree(w, &tree).expect("tree revision");
        let from_walk = snapshot::check_readonly(w, &snapshot::StatCache::default()).expect("walk");
        assert_eq!(from_git.revision, from_walk.revision);
        assert_eq!(from_git.files, 7);
        // Another tree, another revision.
        std::fs::write(w.join("README"), "hello!\n").expect("write");
        git_ok(w, &["commit", "-q", "-am", "edit"]);
        let t2 = tree_of(w, &resolve_commit(w, "HEAD").expect("head")).expect("tree");
        assert_ne!(
            revision_of_tree(w, &t2).expect("rev").revision,
            from_git.revision
        );
        assert_eq!(
            resolve_commit(w, "--output=x").expect_err("option").code(),
            Code::InvalidInput
        );
        let e = resolve_commit(w, "nope").expect_err("missing");
        assert_eq!(e.code(), Code::NotFound);
        assert!(e.to_string().contains("no commit nope"), "{e}");
        // A tree id names no commit.
        assert_eq!(
            resolve_commit(w, &t2).expect_err("a tree").code(),
            Code::NotFound
        );
        let from_subdir = resolve_commit(&w.join("a"), "main").expect("a subdirectory");
        assert_eq!(from_subdir, resolve_commit(w, "HEAD").expect("head"));
        let none = tempfile::tempdir().expect("tmp");
        let e = resolve_commit(none.path(), "main").expect_err("no repository");
        assert_eq!(e.code(), Code::NotFound);
        assert!(e.to_string().contains("is not a git repository"), "{e}");
    }

    #[test]
    fn a_tree_with_a_submodule_has_no_revision_and_a_note_is_read_whole() {
        let t = tempfile::tempdir().expect("tmp");
        let w = t.path();
        git_ok(w, &["init", "-q", "-b", "main"]);
        std::fs::write(w.join("f"), "f\n").expect("write");
        git_ok(w, &["add", "f"]);
        let blob = git_ok(w, &["rev-parse", ":f"]);
        let cacheinfo = format!("160000,{blob},sub");
        git_ok(w, &["update-index", "--add", "--cacheinfo", &cacheinfo]);
        let tree = git_ok(w, &["write-tree"]);
        let e = revision_of_tree(w, &tree).expect_err("a submodule");
        assert_eq!(e.code(), Code::AttestationRevisionMismatch, "{e}");
        // The note: read through the session, exactly its bytes.
        let commit = git_ok(w, &["commit-tree", &tree, "-m", "c"]);
        assert_eq!(read_note(w, &commit).expect("no note"), None);
        let bytes = b"line 1\nline 2 \xff\n".to_vec();
        write_note(w, &commit, &bytes).expect("note");
        let mut objects = Objects::open(w).expect("open");
        let c = objects.resolve_commit(w, &commit).expect("commit");
        assert_eq!(c.tree, tree);
        assert_eq!(objects.note(w, &commit).expect("read"), Some(bytes));
        // The session answers on after the note: the tree's listing fails
        // on the submodule.
        let e = objects.tree_manifest(w, &tree).expect_err("a submodule");
        assert_eq!(e.code(), Code::AttestationRevisionMismatch, "{e}");
    }
}
