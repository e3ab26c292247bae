//! Landing: the phase protocol (docs/transfer.md, "Landing protocol") in
//! the one session the service opens, a batch per phase committed before
//! the external effect that follows it. The admission rechecks are the
//! authority's (`authority::receipt::admit`), the landing rows
//! `authority::landing`, and git runs through `workflow::git`.

use crate::clock::Clock;
use crate::clock::{rfc3339_millis, unix_millis};
use crate::contract::Next;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, DirLock, Session};
use crate::workflow::attest;
use crate::workflow::authority::landing::{
    GitIntent, Landing, abandon, insert_landing, landed_landing, mark_landed, pending_landing,
    set_head,
};
use crate::workflow::authority::receipt::{Admitted, RECEIPT_PLAN, admit};
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::authority::{self, change, repository};
use crate::workflow::git::objects::{git, git_env, git_ref_value, verify_tree, write_blobs};
use crate::workflow::git::repo as repo_git;
use crate::workflow::journal::JournalWork;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `land`: the landing protocol ([`land_in`]) in one session.
pub fn land(root: &Path, timeout: Duration, clock: &dyn Clock, req: &LandRequest) -> Result<Value> {
    // One session for every phase of the landing protocol.
    let mut session = Session::open(root, timeout, clock, RECEIPT_PLAN)?;
    land_in(&mut session, req, &Notes)
}

/// Landing attestations by `workflow::attest`.
struct Notes;

impl Attestations for Notes {
    fn ensure_key(&self, dir: &DataDir, lock: &DirLock, now: &str) -> Result<()> {
        attest::key::ensure(dir, lock, now).map(drop)
    }

    fn ensure_landing_note(
        &self,
        dir: &DataDir,
        a: &Connection,
        source: &Path,
        change_id: &str,
        version: u64,
    ) -> Result<Value> {
        attest::ensure_landing_note(dir, a, source, change_id, version)
    }

    fn note_missing(&self, source: &Path, commit: &str) -> Result<bool> {
        attest::note_missing(source, commit)
    }
}

/// `land` request.
#[derive(Debug, Clone)]
pub struct LandRequest {
    /// Repository.
    pub repo_id: String,
    /// Change.
    pub change_id: String,
    /// The operator's explicit acceptance of a revision that changes
    /// protected paths (`--allow-protected-change`). Such a revision has
    /// no receipt (its tests are not the operator's, so none is collected);
    /// the landing row and the commit message record the override.
    pub allow_protected_change: bool,
    /// `--update-worktree`: when the target branch is checked out in the
    /// source's (non-bare) work tree, move its index and files along as
    /// `git merge --ff-only` would (clean only). Without it such a landing
    /// is refused before any ref moves (`worktree_checked_out`).
    pub update_worktree: bool,
    /// `--author "Name <email>"`: the commit's author and committer
    /// instead of the operator's git identity in the repository.
    pub author: Option<String>,
}

/// How resolving a pending landing ended.
enum Resolution {
    /// Phase 3 done: the output of `land`.
    Landed(Value),
    /// Marked `abandoned`; the typed refusal to return.
    Abandoned(Error),
}

/// The attestation side of landing (`workflow::attest`, the `Notes` of
/// [`land`]), a parameter of the protocol so that it can run with
/// another.
pub trait Attestations {
    /// Makes sure the authority's signing key exists (the lock held).
    fn ensure_key(&self, dir: &DataDir, lock: &DirLock, now: &str) -> Result<()>;
    /// Writes (unless present) the signed note of a landed change version
    /// on its commit and returns the attestation summary.
    fn ensure_landing_note(
        &self,
        dir: &DataDir,
        a: &Connection,
        source: &Path,
        change_id: &str,
        version: u64,
    ) -> Result<Value>;
    /// Whether the landed commit still lacks its note.
    fn note_missing(&self, source: &Path, commit: &str) -> Result<bool>;
}

/// Lands a qualified Change (see docs/transfer.md, "Landing protocol").
///
/// Under the lock: first resolves a `pending` landing of the repository
/// left by an interrupted `land`; then rechecks the exact current subject,
/// installed policy and requirement, the retained signed transfers and
/// every live registration, profile and grant check. For a git work tree
/// source it writes the git objects, durably records a `pending` intent
/// (phase 1), moves the branch with compare-and-swap (phase 2) and then
/// records the new head and marks the landing `landed` (phase 3). A
/// source that is not a git work tree has no external effect, so the head
/// moves in one transaction.
///
/// `s` is the one session (opened by [`land`] with [`RECEIPT_PLAN`])
/// for every phase: each phase is a batch of its own, committed before
/// the external effect that follows it.
pub fn land_in(s: &mut Session, req: &LandRequest, notes: &dyn Attestations) -> Result<Value> {
    // Bad input changes nothing: the identity is checked before anything.
    if let Some(a) = &req.author {
        repo_git::Ident::parse(a)?;
    }
    let (ts, now_ms) = (rfc3339_millis(s.now()), unix_millis(s.now()));
    s.apply(|w| repository(w.authority()?, &req.repo_id).map(drop))?;
    // The signing key exists before anything lands (docs/attestations.md).
    notes.ensure_key(s.dir(), s.lock(), &ts)?;
    let mut resolved_other = None;
    if let Some(p) = s.apply(|w| pending_landing(w.authority()?, &req.repo_id))? {
        let r = resolve(s, &p, true, req.update_worktree, &ts, now_ms)?;
        if p.change_id == req.change_id {
            return match r {
                Resolution::Landed(v) => {
                    let v = with_note(s, notes, v)?;
                    after_landing(s, req, v)
                }
                Resolution::Abandoned(e) => Err(e),
            };
        }
        resolved_other = Some(match r {
            Resolution::Landed(v) => {
                let v = with_note(s, notes, v)?;
                // Its work tree moves along too (the flag is the operator's
                // for this repository).
                if let (true, Some(g)) = (req.update_worktree, &p.git) {
                    let repo = s.apply(|w| repository(w.authority()?, &p.repo_id))?;
                    s.rollback();
                    sync_worktree(Path::new(&repo.source), g)?;
                }
                v
            }
            Resolution::Abandoned(e) => serde_json::to_value(AbandonedOutput {
                abandoned: e.code().as_str(),
                change_id: &p.change_id,
                change_version: p.change_version,
                landed: false,
            })?,
        });
    }
    if let Some(v) = s.apply(|w| finish_missing_note(w.dir(), w.authority()?, notes, req))? {
        s.commit()?;
        return after_landing(s, req, v);
    }
    let with_other = |e: Error| match &resolved_other {
        Some(v) => e.with("resolved_pending", v.clone()),
        None => e,
    };
    let (repo, landing, stale) = s.apply(|w| {
        let (at, dir) = (w.authority()?, w.dir());
        let a = admit(
            w.journal(),
            at,
            dir,
            &req.repo_id,
            &req.change_id,
            now_ms,
            req.allow_protected_change,
        )
        .map_err(with_other)?;
        let git = git_prepare(dir, at, &a, req).map_err(with_other)?;
        let (repo, s) = (&a.repo, &a.subject);
        let landing = Landing {
            landing_id: crate::wire::random_id("land")?,
            repo_id: repo.repo_id.clone(),
            change_id: s.change.change_id.clone(),
            change_version: s.version,
            revision: s.context.revision.as_str().to_owned(),
            receipt_digest: a.receipt.clone(),
            old_head: repo.head_revision.clone(),
            git,
            allow_protected_change: !a.protected.is_empty(),
            protected_changes: a.protected.total,
        };
        let state = if landing.git.is_some() {
            "pending"
        } else {
            "landed"
        };
        insert_landing(at, &landing, state, &ts)?;
        let stale = if landing.git.is_none() {
            set_head(at, &landing)?
        } else {
            0
        };
        Ok((a.repo, landing, stale))
    })?;
    // Without git this is the landing; with git, phase 1 is durable: the
    // intent names everything a resume needs.
    s.commit()?;
    let out = if landing.git.is_none() {
        landed_output(&repo, &landing, false, Some(stale))?
    } else {
        crate::collector::crash_point("land_after_intent");
        match resolve(s, &landing, false, req.update_worktree, &ts, now_ms)? {
            Resolution::Landed(v) => v,
            Resolution::Abandoned(e) => return Err(with_other(e)),
        }
    };
    let out = with_note(s, notes, out).map_err(with_other)?;
    let mut out = after_landing(s, req, out)?;
    if let (Some(v), Some(o)) = (resolved_other, out.as_object_mut()) {
        o.insert("resolved_pending".into(), v);
    }
    Ok(out)
}

/// After a landing of `req`'s Change is durable (now, resumed, or
/// earlier): with `--update-worktree`, brings the source's checked-out
/// work tree to the landed commit when it still is at the old one and
/// clean (idempotent: a rerun after a crash finishes it), and says so
/// (`worktree_updated`).
fn after_landing(s: &mut Session, req: &LandRequest, mut v: Value) -> Result<Value> {
    crate::collector::crash_point("land_before_worktree");
    let mut updated = false;
    if req.update_worktree
        && !v["git_commit"].is_null()
        && let Some(l) = s.apply(|w| landed_landing(w.authority()?, &req.change_id))?
    {
        s.rollback();
        let repo = s.apply(|w| repository(w.authority()?, &l.repo_id))?;
        s.rollback();
        if let Some(g) = &l.git {
            updated = sync_worktree(Path::new(&repo.source), g)?;
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.entry("already_landed").or_insert(Value::Bool(false));
        o.entry("stale_subjects").or_insert(Value::from(0u64));
        o.insert("worktree_updated".into(), Value::Bool(updated));
    }
    Ok(v)
}

/// The work tree half of `--update-worktree` once the branch is at
/// `g.commit`: `true` when it moved the index and files from the old
/// commit; `false` when nothing is checked out there, it is already at
/// the landed commit, or it is no longer clean at the old one (then it is
/// left as it is: nothing of the operator's is overwritten).
fn sync_worktree(src: &Path, g: &GitIntent) -> Result<bool> {
    let zeros = "0".repeat(g.commit.len());
    if g.expected_old == zeros || !checked_out_here(src, &g.ref_name)? {
        return Ok(false);
    }
    if repo_git::index_is(src, &g.commit)? {
        return Ok(false);
    }
    if !repo_git::index_is(src, &g.expected_old)?
        || repo_git::dirty(src, &g.expected_old, None)?.is_some()
    {
        return Ok(false);
    }
    repo_git::fast_forward(src, &g.expected_old, &g.commit)?;
    Ok(true)
}

/// Whether `ref_name` is checked out in the source's own work tree.
fn checked_out_here(src: &Path, ref_name: &str) -> Result<bool> {
    let here = std::fs::canonicalize(src).ok();
    Ok(repo_git::checked_out(src, ref_name)?
        .iter()
        .any(|w| std::fs::canonicalize(w).ok() == here))
}

/// Refuses, before any ref moves, a landing onto a branch checked out in a
/// non-bare work tree: without `--update-worktree` always
/// (`worktree_checked_out`, the fix in `details`); with it, when the branch
/// is checked out in another work tree than the source's, when the branch
/// is unborn, or when the work tree is not clean (`worktree_dirty`).
fn check_worktree(src: &Path, g: &GitIntent, update: bool) -> Result<()> {
    let wts = repo_git::checked_out(src, &g.ref_name)?;
    let Some(first) = wts.first() else {
        return Ok(());
    };
    let shown = |p: &Path| p.display().to_string();
    if !update {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out in {}: moving it would leave that index and work tree \
                 looking like the landing reverted; nothing was landed",
                g.ref_name,
                first.display()
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with(
            "fix",
            "land --update-worktree (moves that clean index and work tree along as git merge \
             --ff-only would), or check another branch out there (git switch --detach), or \
             land into a bare repository",
        ));
    }
    let here = std::fs::canonicalize(src).ok();
    if let Some(other) = wts.iter().find(|w| std::fs::canonicalize(w).ok() != here) {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out in another work tree ({}): --update-worktree updates only \
                 the repository's own; nothing was landed",
                g.ref_name,
                other.display()
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(other))
        .with(
            "fix",
            "check another branch out in that work tree (git switch --detach)",
        ));
    }
    if g.expected_old == "0".repeat(g.commit.len()) {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out but has no commit yet; nothing was landed",
                g.ref_name
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with(
            "fix",
            "commit once on the branch, or check another branch out there",
        ));
    }
    if let Some(why) = repo_git::dirty(src, &g.expected_old, Some(&g.commit))? {
        return Err(Error::new(
            Code::WorktreeDirty,
            format!(
                "the checked-out work tree of {} is not clean ({why}); nothing was landed",
                g.ref_name
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with("reason", why)
        .with(
            "fix",
            "commit, stash or discard the changes there (git status), then land again",
        ));
    }
    Ok(())
}

/// Attaches a landing's attestations (the lock held): for a git landing the
/// signed statements become the note on the landed commit (written now
/// unless one is there) and the output gains `attestation`; `null`
/// otherwise. The branch and the landed mark are already durable, so a
/// failure here says `landing: "landed"` and `next: land`, whose re-run
/// finishes the note (see docs/attestations.md, "Landing").
fn with_note(s: &mut Session, notes: &dyn Attestations, v: Value) -> Result<Value> {
    let out = s.apply(|w| note_into(w.dir(), w.authority()?, notes, v))?;
    s.commit()?;
    Ok(out)
}

fn note_into(
    dir: &DataDir,
    a: &Connection,
    notes: &dyn Attestations,
    mut v: Value,
) -> Result<Value> {
    let att = if v["git_commit"].is_null() {
        Value::Null
    } else {
        let change_id = v["change_id"].as_str().unwrap_or_default().to_owned();
        let version = v["change_version"].as_u64().unwrap_or_default();
        let repo = repository(a, v["repository"].as_str().unwrap_or_default())?;
        notes
            .ensure_landing_note(dir, a, Path::new(&repo.source), &change_id, version)
            .map_err(|e| {
                e.with("landing", "landed")
                    .with("change_id", change_id.clone())
                    .with("next", Next::change("land", change_id))
            })?
    };
    if let Some(o) = v.as_object_mut() {
        o.insert("attestation".into(), att);
    }
    Ok(v)
}

/// A re-run of `land` for a Change that has landed: when its commit has
/// no note yet (a crash after phase 3, or a failed note write) writes the
/// note and answers as the landing did, `resumed: true`; otherwise answers
/// `already_landed: true` with the commit (a landed Change is closed, so
/// there is nothing more to land). `None` when the Change has not landed
/// (admission then answers).
fn finish_missing_note(
    dir: &DataDir,
    a: &Connection,
    notes: &dyn Attestations,
    req: &LandRequest,
) -> Result<Option<Value>> {
    let ch = match change::change(a, &req.change_id) {
        Ok(ch) => ch,
        Err(e) if e.code() == Code::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if ch.repository != req.repo_id {
        return Ok(None);
    }
    let Some(p) = landed_landing(a, &ch.change_id)? else {
        return Ok(None);
    };
    let repo = repository(a, &req.repo_id)?;
    let missing = match &p.git {
        Some(g) => notes.note_missing(Path::new(&repo.source), &g.commit)?,
        None => false,
    };
    let mut v = note_into(dir, a, notes, landed_output(&repo, &p, missing, None)?)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("already_landed".into(), Value::Bool(!missing));
    }
    Ok(Some(v))
}

/// Resolves a `pending` landing (the lock is held). The git branch is the
/// truth: at the new commit, phase 3 finishes whatever changed since; at
/// the expected old value, the admission rechecks run again (when
/// `recheck`) and phases 2 and 3 follow, or the landing is abandoned with
/// the refusal; anything else abandons it with `conflict`. A git failure
/// that leaves the branch at its old value keeps the landing pending.
fn resolve(
    s: &mut Session,
    p: &Landing,
    recheck: bool,
    update_worktree: bool,
    ts: &str,
    now_ms: i64,
) -> Result<Resolution> {
    let repo = s.apply(|w| repository(w.authority()?, &p.repo_id))?;
    let Some(g) = &p.git else {
        return Err(Error::new(
            Code::IntegrityError,
            "a pending landing without a git intent",
        ));
    };
    let src = Path::new(&repo.source);
    let zeros = "0".repeat(g.commit.len());
    let current = git_ref_value(src, &g.ref_name)?.unwrap_or_else(|| zeros.clone());
    if current == g.commit {
        return finish(s, &repo, p, recheck, ts);
    }
    if current != g.expected_old {
        return moved(s, p, &current);
    }
    if recheck {
        let refusal = s.apply(|w| {
            let admitted = admit(
                w.journal(),
                w.authority()?,
                w.dir(),
                &p.repo_id,
                &p.change_id,
                now_ms,
                p.allow_protected_change,
            );
            Ok(match admitted {
                Ok(a) => {
                    let same = a.subject.version == p.change_version
                        && a.subject.context.revision.as_str() == p.revision
                        && a.receipt == p.receipt_digest
                        && a.protected.total == p.protected_changes
                        && a.repo.head_revision == p.old_head;
                    (!same).then(|| {
                        Error::new(
                            Code::NotQualified,
                            "the subject or receipt changed since the landing intent",
                        )
                    })
                }
                Err(e) if is_refusal(&e) => Some(e),
                Err(e) => return Err(e),
            })
        })?;
        if let Some(e) = refusal {
            s.apply(|w| abandon(w.authority()?, p, e.code().as_str()))?;
            s.commit()?;
            return Ok(Resolution::Abandoned(abandoned_error(e, p)));
        }
        // The recheck only read: nothing of it is kept.
        s.rollback();
    }
    // A checked-out branch: refused, or its work tree must be clean, right
    // before the ref moves (what phase 1 checked may have changed since).
    match check_worktree(src, g, update_worktree) {
        Ok(()) => {}
        Err(e) if is_refusal(&e) => {
            s.apply(|w| abandon(w.authority()?, p, e.code().as_str()))?;
            s.commit()?;
            return Ok(Resolution::Abandoned(abandoned_error(e, p)));
        }
        Err(e) => return Err(e),
    }
    let moved_ok = git(
        src,
        None,
        &[
            "update-ref",
            "-m",
            "agent-task land",
            &g.ref_name,
            &g.commit,
            &g.expected_old,
        ],
        None,
    );
    if let Err(e) = moved_ok {
        let now = git_ref_value(src, &g.ref_name)?.unwrap_or(zeros);
        if now == g.commit {
            return finish(s, &repo, p, recheck, ts);
        }
        if now != g.expected_old {
            return moved(s, p, &now);
        }
        return Err(e.with("landing", "pending").with("next", Next::op("land")));
    }
    crate::collector::crash_point("land_after_ref");
    finish(s, &repo, p, recheck, ts)
}

/// Errors that are the admission's answer (abandon), as opposed to a
/// failure to evaluate it (keep the landing pending).
fn is_refusal(e: &Error) -> bool {
    !matches!(
        e.code(),
        Code::Io | Code::Busy | Code::Internal | Code::IntegrityError
    )
}

fn abandoned_error(e: Error, p: &Landing) -> Error {
    e.with("landing", "abandoned")
        .with("change_id", p.change_id.clone())
        .with("change_version", p.change_version)
}

/// The branch is neither where the intent found it nor at the new commit.
fn moved(s: &mut Session, p: &Landing, found: &str) -> Result<Resolution> {
    s.apply(|w| abandon(w.authority()?, p, "branch_moved"))?;
    s.commit()?;
    let (ref_name, expected) = p
        .git
        .as_ref()
        .map(|g| (g.ref_name.clone(), g.expected_old.clone()))
        .unwrap_or_default();
    Ok(Resolution::Abandoned(abandoned_error(
        Error::new(
            Code::Conflict,
            "the target branch moved since the landing intent; nothing was landed",
        )
        .with("ref", ref_name)
        .with("expected", expected)
        .with("found", found),
        p,
    )))
}

/// Phase 3: the new head and the landed state, in one transaction.
fn finish(
    s: &mut Session,
    repo: &authority::Repository,
    p: &Landing,
    resumed: bool,
    ts: &str,
) -> Result<Resolution> {
    let stale = s.apply(|w| {
        let at = w.authority()?;
        let stale = set_head(at, p)?;
        let n = mark_landed(at, p, ts)?;
        if n != 1 {
            return Err(Error::new(
                Code::IntegrityError,
                "the landing is no longer pending",
            ));
        }
        Ok(stale)
    })?;
    s.commit()?;
    Ok(Resolution::Landed(landed_output(
        repo,
        p,
        resumed,
        Some(stale),
    )?))
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// A pending landing resolved by abandoning it (`resolved_pending`).
#[derive(Serialize)]
struct AbandonedOutput<'a> {
    abandoned: &'static str,
    change_id: &'a str,
    change_version: u64,
    landed: bool,
}

/// A landing's output; `stale_subjects` (the live subjects it made stale)
/// when this run landed it.
#[derive(Serialize)]
struct LandedOutput<'a> {
    allow_protected_change: bool,
    change_id: &'a str,
    change_version: u64,
    git_commit: Option<&'a str>,
    landed: bool,
    old_head: &'a str,
    protected_changes: u64,
    receipt_digest: Option<&'a str>,
    repository: &'a str,
    resumed: bool,
    revision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stale_subjects: Option<u64>,
    target: &'a str,
}

fn landed_output(
    repo: &authority::Repository,
    p: &Landing,
    resumed: bool,
    stale_subjects: Option<u64>,
) -> Result<Value> {
    Ok(serde_json::to_value(LandedOutput {
        allow_protected_change: p.allow_protected_change,
        change_id: &p.change_id,
        change_version: p.change_version,
        git_commit: p.git.as_ref().map(|g| g.commit.as_str()),
        landed: true,
        old_head: &p.old_head,
        protected_changes: p.protected_changes,
        receipt_digest: p.receipt_digest.as_deref(),
        repository: &p.repo_id,
        resumed,
        revision: &p.revision,
        stale_subjects,
        target: &repo.target,
    })?)
}

/// Whether `src` is the top of a git work tree (a landing or a proposal
/// then writes a commit).
pub(crate) fn is_git_top(src: &Path) -> bool {
    match git(src, None, &["rev-parse", "--show-toplevel"], None) {
        Ok(top) => std::fs::canonicalize(&top).ok() == std::fs::canonicalize(src).ok(),
        Err(_) => false,
    }
}

/// Writes the commit `land` lands (and `propose` proposes) for an
/// admitted subject: the revision's blobs (one `git fast-import`
/// process), its tree (a temporary index, never the operator's), checked
/// entry by entry against the manifest (git silently drops paths it
/// refuses; a difference is `landed_tree_mismatch`), and a commit whose
/// parent is `parent`, with the Change's message and the product's
/// trailers. Nothing references it yet.
pub(crate) fn write_commit(
    dir: &DataDir,
    a: &Connection,
    ad: &Admitted,
    author: Option<&str>,
    parent: Option<&str>,
) -> Result<String> {
    let s = &ad.subject;
    let src = Path::new(&ad.repo.source);
    let manifest = change::load_manifest(a, dir, &s.context.revision)?;
    let tmp = tempfile::tempdir_in(dir.root())
        .map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
    let oids = write_blobs(src, tmp.path(), dir, &manifest)?;
    let index = tmp.path().join("index");
    let mut info = Vec::new();
    for (i, (e, oid)) in manifest.entries.iter().zip(&oids).enumerate() {
        if i == 0 && crate::testhooks::land_tamper_tree() {
            continue;
        }
        info.extend_from_slice(format!("{:o} {oid}\t{}", e.mode, e.path).as_bytes());
        info.push(0);
    }
    git(
        src,
        Some(&index),
        &["update-index", "--add", "-z", "--index-info"],
        Some(&info),
    )?;
    let tree = git(src, Some(&index), &["write-tree"], None)?;
    verify_tree(src, &tree, &manifest, &oids)?;
    let (author, committer) = repo_git::operator_idents(src, author)?;
    let (title, body) = change::change_message(a, &s.change.change_id)?;
    let msg = commit_message(ad, title.as_deref(), body.as_deref());
    // The message goes in on stdin: never an argument git could parse.
    let mut args = vec!["commit-tree", tree.as_str()];
    if let Some(o) = parent {
        args.extend(["-p", o]);
    }
    let commit = git_env(
        src,
        None,
        &args,
        &[
            ("GIT_AUTHOR_NAME", author.name.as_str()),
            ("GIT_AUTHOR_EMAIL", author.email.as_str()),
            ("GIT_COMMITTER_NAME", committer.name.as_str()),
            ("GIT_COMMITTER_EMAIL", committer.email.as_str()),
        ],
        Some(msg.as_bytes()),
    )?;
    Ok(commit)
}

/// Phase 1's git part when the repository's source is the top of a git
/// work tree: writes the revision's blobs (one `git fast-import` process),
/// its tree (a temporary index, never the operator's), checks that tree
/// entry by entry against the manifest (git silently drops paths it
/// refuses; a difference is `landed_tree_mismatch`), and writes a commit
/// whose parent is the branch's current value; nothing references them
/// yet. `None` when the source is not a git work tree.
fn git_prepare(
    dir: &DataDir,
    a: &Connection,
    ad: &Admitted,
    req: &LandRequest,
) -> Result<Option<GitIntent>> {
    let src = Path::new(&ad.repo.source);
    if !is_git_top(src) {
        return Ok(None);
    }
    let ref_name = format!("refs/heads/{}", ad.repo.target);
    let old = git_ref_value(src, &ref_name)?;
    let commit = write_commit(dir, a, ad, req.author.as_deref(), old.as_deref())?;
    let expected_old = old.unwrap_or_else(|| "0".repeat(commit.len()));
    let intent = GitIntent {
        ref_name,
        expected_old,
        commit,
    };
    check_worktree(src, &intent, req.update_worktree)?;
    // A checked-out work tree is updated only for a revision whose checkout
    // is its bytes: an operator's override of protected paths may let in a
    // checkout-changing attribute, and the work tree is never where it acts.
    if req.update_worktree && ad.protected.total > 0 {
        let manifest = change::load_manifest(a, dir, &ad.subject.context.revision)?;
        let findings = authority::checkout::revision_findings(dir, &manifest)?;
        if !findings.is_empty() {
            return Err(Error::new(
                Code::ProtectedPathChanged,
                "land --update-worktree never checks out a revision whose checkout would not be its bytes (a .gitattributes or .lfsconfig finding); land it without a checked-out target",
            )
            .with("protected_changes", findings.total)
            .with("paths", serde_json::to_value(&findings.paths)?));
        }
    }
    Ok(Some(intent))
}

/// The landing commit's message: the Change's title and body (cleaned
/// and bounded when they were given; trailer-shaped lines indented), an
/// operator's override of protected paths with the paths it let in, then
/// one blank line and the product's trailers (agent, Change, revision,
/// receipt), which `git interpret-trailers --parse` reads and nothing the
/// agent wrote can add to.
fn commit_message(ad: &Admitted, title: Option<&str>, body: Option<&str>) -> String {
    let s = &ad.subject;
    let fallback = format!("Land change {} v{}", s.change.change_id, s.version);
    let title = title.filter(|t| !t.is_empty()).unwrap_or(&fallback);
    let mut msg = guard_line(title);
    msg.push_str("\n\n");
    if let Some(b) = body.filter(|b| !b.is_empty()) {
        for line in b.lines() {
            msg.push_str(&guard_line(line));
            msg.push('\n');
        }
        msg.push('\n');
    }
    if !ad.protected.is_empty() {
        msg.push_str(&format!(
            "protected-paths-changed: {} (allowed by the operator: land --allow-protected-change)\n",
            ad.protected.total
        ));
        for c in &ad.protected.paths {
            let kind = serde_json::to_value(c.change)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            msg.push_str(&format!("  {kind}: {}\n", c.path.escape_debug()));
        }
        if ad.protected.total > ad.protected.paths.len() as u64 {
            msg.push_str("  …\n");
        }
        msg.push('\n');
    }
    let clean = |v: &str| -> String { v.chars().filter(|c| !c.is_control()).collect() };
    msg.push_str(&format!(
        "Agent-Task-Agent: {}/{}\n",
        clean(&s.change.owner_id),
        clean(&s.change.agent_id)
    ));
    msg.push_str(&format!(
        "Agent-Task-Change: {} v{}\n",
        s.change.change_id, s.version
    ));
    msg.push_str(&format!("Agent-Task-Revision: {}\n", s.context.revision));
    msg.push_str(&format!(
        "Agent-Task-Receipt: {}\n",
        ad.receipt.as_deref().unwrap_or("none")
    ));
    msg
}

/// A line of the agent's title or body, indented by two spaces when git
/// could read it as a trailer (`Token: …`, `Token = …`, any token followed
/// by a separator), a patch divider (`---`) that would end the message
/// for `git interpret-trailers`, or one of git's own trailer lines.
fn guard_line(line: &str) -> String {
    let token_len = line
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
        .count();
    let after = line[token_len..].trim_start_matches([' ', '\t']);
    let trailer_shaped = token_len > 0
        && after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_punctuation() && c != '-');
    if trailer_shaped || line.starts_with("---") || line.starts_with("(cherry picked from") {
        format!("  {line}")
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::guard_line;

    #[test]
    fn trailer_shaped_lines_of_the_agent_are_indented() {
        for line in [
            "Agent-Task-Receipt: none",
            "Signed-off-by: someone <a@b>",
            "Token = value",
            "Token\t: value",
            "---",
            "--- a/file",
            "(cherry picked from commit 0000)",
        ] {
            assert_eq!(guard_line(line), format!("  {line}"), "{line:?}");
        }
    }

    #[test]
    fn prose_lines_are_kept_as_they_are() {
        for line in [
            "",
            "Fix the parser",
            "a-b - c: words after a dash separator",
            "- a list item: with a colon",
            "  indented: already",
        ] {
            assert_eq!(guard_line(line), line, "{line:?}");
        }
    }
}
