//! Candidates as pull requests (`propose`) and the landings a forge makes
//! (`forge sync`), the workflow half of them (docs/forge.md, section 5):
//! the candidate commit written and recorded, its note, the request rows
//! recorded before and after each API call, and a forge-side merge
//! recorded as a landing with its note. Pushing, fetching and the forge's
//! API are the face-level `crate::forge` job's.

use super::admin::with_write;
use crate::clock::{Clock, rfc3339_millis, unix_millis};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, OptionalExtension, Session, params};
use crate::workflow::attest;
use crate::workflow::authority::forge::{self, Forge, no_forge};
use crate::workflow::authority::landing::{
    GitIntent, Landing, insert_landing, landed_landing, set_head,
};
use crate::workflow::authority::receipt::{RECEIPT_PLAN, admit, admit_candidate};
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::authority::{auth, change, repository};
use crate::workflow::git::objects::{git, git_ref_value};
use crate::workflow::git::repo as repo_git;
use crate::workflow::journal::JournalWork;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::workflow::authority::forge::{ForgeRequest, Proposal};

/// `propose` request.
#[derive(Debug, Clone)]
pub struct ProposeRequest {
    /// Repository.
    pub repo_id: String,
    /// Change.
    pub change_id: String,
    /// `--unqualified`: propose a current subject that does not qualify
    /// (yet), so its `pending` and `failure` statuses have a commit; no
    /// note is written for it.
    pub allow_unqualified: bool,
    /// `--author "Name <email>"`, as `land`'s.
    pub author: Option<String>,
}

/// One task of the proposed subject, for the request's body.
#[derive(Debug, Clone, Serialize)]
pub struct ProposedTask {
    /// The workflow step.
    pub step_id: String,
    /// The task.
    pub task_id: String,
    /// Whether the step is required.
    pub required: bool,
    /// The retained transfer the receipt names for it (qualified only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_digest: Option<String>,
}

/// What `propose` pushes and opens the request from.
#[derive(Debug, Clone)]
pub struct ProposalPlan {
    /// The candidate commit's row.
    pub proposal: Proposal,
    /// The Change's profile (`agent-task/<profile>`).
    pub profile: String,
    /// The target branch (the request's base).
    pub target: String,
    /// The repository's git work tree.
    pub source: PathBuf,
    /// The forge.
    pub forge: Forge,
    /// The agent's title and body of the Change (agent-authored: the
    /// face quotes them, never renders them).
    pub title: Option<String>,
    /// See `title`.
    pub body: Option<String>,
    /// The subject's tasks.
    pub tasks: Vec<ProposedTask>,
    /// Why the subject does not qualify (`--unqualified` only).
    pub not_qualified: Option<String>,
    /// The authority key's id.
    pub key_id: String,
    /// The note's summary (`null` for an unqualified proposal).
    pub attestation: Value,
    /// The Change's request so far.
    pub request: Option<ForgeRequest>,
}

/// The candidate commit of the Change's current subject: the commit
/// `land` would write (same tree check, same message and trailers; its
/// parent the target branch's current value), recorded for the version
/// before anything leaves the machine and reused by a rerun; with a
/// qualified subject, its note. The target branch does not move and no
/// landing is recorded.
pub fn prepare(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ProposeRequest,
) -> Result<ProposalPlan> {
    if let Some(a) = &req.author {
        repo_git::Ident::parse(a)?;
    }
    let mut s = Session::open(root, timeout, clock, RECEIPT_PLAN)?;
    let (ts, now_ms) = (rfc3339_millis(s.now()), unix_millis(s.now()));
    s.apply(|w| repository(w.authority()?, &req.repo_id).map(drop))?;
    attest::key::ensure(s.dir(), s.lock(), &ts)?;
    let mut plan = s.apply(|w| {
        let (at, dir, j) = (w.authority()?, w.dir(), w.journal());
        let forge = forge::forge(at, &req.repo_id)?.ok_or_else(|| no_forge(&req.repo_id))?;
        let ch = change::change(at, &req.change_id)?;
        if ch.repository != req.repo_id {
            return Err(Error::new(
                Code::InvalidInput,
                "the change belongs to another repository",
            ));
        }
        if landed_landing(at, &req.change_id)?.is_some() {
            return Err(Error::new(
                Code::ChangeClosed,
                "this change has landed: there is nothing to propose",
            )
            .with("change_id", req.change_id.clone()));
        }
        let (ad, refusal) = admit_candidate(
            j,
            at,
            dir,
            &req.repo_id,
            &req.change_id,
            now_ms,
            req.allow_unqualified,
        )?;
        let src = PathBuf::from(&ad.repo.source);
        if !super::land::is_git_top(&src) {
            return Err(Error::new(
                Code::InvalidInput,
                "the repository's source is not the top of a git work tree: there is no commit to propose",
            ));
        }
        let version = ad.subject.version;
        let existing = forge::proposal(at, &req.change_id, version)?.filter(|p| {
            p.receipt_digest == ad.receipt
                && git(&src, None, &["cat-file", "-e", &format!("{}^{{commit}}", p.git_commit)], None).is_ok()
        });
        let proposal = match existing {
            Some(p) => p,
            None => {
                let parent = git_ref_value(&src, &format!("refs/heads/{}", ad.repo.target))?;
                let commit = super::land::write_commit(
                    dir,
                    at,
                    &ad,
                    req.author.as_deref(),
                    parent.as_deref(),
                )?;
                let p = Proposal {
                    change_id: req.change_id.clone(),
                    change_version: version,
                    repo_id: req.repo_id.clone(),
                    revision: ad.subject.context.revision.as_str().to_owned(),
                    git_commit: commit,
                    qualified: ad.receipt.is_some(),
                    receipt_digest: ad.receipt.clone(),
                    state: "committed".into(),
                    created_at: ts.clone(),
                };
                forge::insert_proposal(at, &p)?;
                p
            }
        };
        let transfers = match &ad.receipt {
            Some(d) => receipt_transfers(at, d)?,
            None => Vec::new(),
        };
        let tasks = ad
            .subject
            .tasks
            .iter()
            .map(|t| ProposedTask {
                step_id: t.subject.step_id.clone(),
                task_id: t.task_id.clone(),
                required: t.required,
                transfer_digest: transfers
                    .iter()
                    .find(|(task, _)| task == &t.task_id)
                    .map(|(_, d)| d.clone()),
            })
            .collect();
        let (title, body) = change::change_message(at, &req.change_id)?;
        Ok(ProposalPlan {
            proposal,
            profile: ad.subject.change.profile.clone(),
            target: ad.repo.target.clone(),
            source: src,
            forge,
            title,
            body,
            tasks,
            not_qualified: refusal.map(|e| e.message().to_owned()),
            key_id: attest::key::load_required(dir)?.key_id().to_owned(),
            attestation: Value::Null,
            request: forge::request(at, &req.change_id)?,
        })
    })?;
    // The proposal is durable before its note is written.
    s.commit()?;
    if plan.proposal.qualified {
        let p = plan.proposal.clone();
        let src = plan.source.clone();
        plan.attestation = s.apply(|w| {
            attest::ensure_proposal_note(w.dir(), w.journal(), w.authority()?, &src, &p, now_ms)
        })?;
        s.rollback();
    }
    Ok(plan)
}

/// The receipt's `(task, transfer)` pairs.
fn receipt_transfers(at: &Connection, digest: &str) -> Result<Vec<(String, String)>> {
    let bytes: Option<Vec<u8>> = at
        .prepare_cached("SELECT receipt_json FROM receipts WHERE receipt_digest = ?1")?
        .query_row(params![digest], |r| r.get(0))
        .optional()?;
    let v: Value = bytes
        .map(|b| serde_json::from_slice(&b))
        .transpose()?
        .unwrap_or(Value::Null);
    Ok(v["transfers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some((
                t["task_id"].as_str()?.to_owned(),
                t["transfer_digest"].as_str()?.to_owned(),
            ))
        })
        .collect())
}

/// The proposal's branch and notes are on the forge.
pub fn mark_pushed(root: &Path, timeout: Duration, clock: &dyn Clock, p: &Proposal) -> Result<()> {
    with_write(
        root,
        timeout,
        clock,
        forge::mark_proposal_pushed(&p.change_id, p.change_version),
    )
}

/// Records the intent to open a request (before the API call); an
/// existing row is returned as it is.
pub fn request_intent(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    r: &ForgeRequest,
) -> Result<ForgeRequest> {
    with_write(root, timeout, clock, forge::request_intent(r))
}

/// Records the request the forge opened or updated for proposal `p`
/// (its head commit and version).
pub fn request_open(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    p: &Proposal,
    number: u64,
    url: &str,
) -> Result<ForgeRequest> {
    with_write(
        root,
        timeout,
        clock,
        forge::request_open(&p.change_id, number, url, &p.git_commit, p.change_version),
    )
}

/// Records a request closed (`landed` or `merged`).
pub fn request_closed(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    change_id: &str,
    reason: &'static str,
) -> Result<()> {
    with_write(
        root,
        timeout,
        clock,
        forge::request_closed(change_id, reason),
    )
}

/// The Change's request, if any (read-only).
pub fn request_of(root: &Path, change_id: &str) -> Result<Option<ForgeRequest>> {
    let (_dir, at) = auth::open_read(root)?;
    forge::request(&at, change_id)
}

/// The requests of `repo_id` still open whose Change has landed, with
/// how (`land` or `forge_sync`) (read-only).
pub fn requests_of_landed(root: &Path, repo_id: &str) -> Result<Vec<(ForgeRequest, String)>> {
    let (_dir, at) = auth::open_read(root)?;
    forge::requests_of_landed(&at, repo_id)
}

/// What `forge sync` works from (read-only).
#[derive(Debug, Clone)]
pub struct SyncPlan {
    /// The forge.
    pub forge: Forge,
    /// The repository's git work tree.
    pub source: PathBuf,
    /// The target branch's name.
    pub target: String,
    /// The last forge commit an earlier sync walked to.
    pub last_synced: Option<String>,
}

/// `forge sync`'s plan for `repo_id`: `not_found` without a forge.
pub fn sync_plan(root: &Path, repo_id: &str) -> Result<SyncPlan> {
    let (_dir, at) = auth::open_read(root)?;
    let repo = repository(&at, repo_id)?;
    let forge = forge::forge(&at, repo_id)?.ok_or_else(|| no_forge(repo_id))?;
    Ok(SyncPlan {
        forge,
        source: PathBuf::from(repo.source),
        target: repo.target,
        last_synced: forge::last_synced(&at, repo_id)?,
    })
}

/// Records how far `forge sync` walked the forge's target.
pub fn set_synced(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    commit: &str,
) -> Result<()> {
    with_write(root, timeout, clock, forge::set_synced(repo_id, commit))
}

/// A commit of the forge's target recorded as a Change's landing.
#[derive(Debug, Clone, Serialize)]
pub struct ForgeLanded {
    /// The forge's commit.
    pub git_commit: String,
    /// The Change.
    pub change_id: String,
    /// Its landed version.
    pub change_version: u64,
    /// The qualified revision the commit's tree is.
    pub revision: String,
    /// The receipt.
    pub receipt_digest: Option<String>,
    /// Whether an earlier sync had recorded it (its note is checked again).
    pub already_recorded: bool,
    /// The note's summary.
    pub attestation: Value,
}

/// `forge sync`, for one commit of the forge's target (fetched into the
/// source) whose tree's revision, recomputed as `verify` does, is
/// `revision`: when the current subject of a Change of `repo_id` that has
/// not landed has that revision and passes every admission recheck of
/// `land`, records the commit as its landing (`landed_by: forge_sync`),
/// moves the authority's head, marks its request merged and writes the
/// landing's note on the commit. `None`: no qualified revision is that
/// tree (no note). A commit recorded earlier answers again (its note
/// rewritten if missing).
pub fn land_forge_commit(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    commit: &str,
    parent: Option<&str>,
    revision: &str,
) -> Result<Option<ForgeLanded>> {
    let mut s = Session::open(root, timeout, clock, RECEIPT_PLAN)?;
    let (ts, now_ms) = (rfc3339_millis(s.now()), unix_millis(s.now()));
    attest::key::ensure(s.dir(), s.lock(), &ts)?;
    let found = s.apply(|w| {
        let (at, dir, j) = (w.authority()?, w.dir(), w.journal());
        let repo = repository(at, repo_id)?;
        let earlier: Option<(String, i64, String, Option<String>)> = at
            .prepare_cached(
                "SELECT change_id, change_version, revision, receipt_digest FROM landings \
                 WHERE repo_id = ?1 AND git_commit = ?2 AND state = 'landed' LIMIT 1",
            )?
            .query_row(params![repo_id, commit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        if let Some((change_id, version, revision, receipt_digest)) = earlier {
            return Ok(Some((
                change_id,
                version as u64,
                revision,
                receipt_digest,
                true,
            )));
        }
        let candidates: Vec<String> = at
            .prepare_cached(
                "SELECT c.change_id FROM changes c JOIN change_versions v \
                 ON v.change_id = c.change_id AND v.version = c.current_version \
                 WHERE c.repo_id = ?1 AND v.revision = ?2 AND NOT EXISTS (SELECT 1 FROM landings l \
                 WHERE l.change_id = c.change_id AND l.state <> 'abandoned') ORDER BY c.change_id",
            )?
            .query_map(params![repo_id, revision], |r| r.get(0))?
            .collect::<std::result::Result<_, _>>()?;
        for change_id in candidates {
            let Ok(ad) = admit(j, at, dir, repo_id, &change_id, now_ms, false) else {
                continue;
            };
            let zeros = "0".repeat(commit.len());
            let landing = Landing {
                landing_id: crate::wire::random_id("land")?,
                repo_id: repo_id.to_owned(),
                change_id: change_id.clone(),
                change_version: ad.subject.version,
                revision: revision.to_owned(),
                receipt_digest: ad.receipt.clone(),
                old_head: repo.head_revision.clone(),
                git: Some(GitIntent {
                    ref_name: format!("refs/heads/{}", repo.target),
                    expected_old: parent.map(str::to_owned).unwrap_or(zeros),
                    commit: commit.to_owned(),
                }),
                allow_protected_change: false,
                protected_changes: 0,
            };
            insert_landing(at, &landing, "landed", &ts)?;
            at.prepare_cached(
                "UPDATE landings SET landed_by = 'forge_sync' WHERE landing_id = ?1",
            )?
            .execute(params![landing.landing_id])?;
            set_head(at, &landing)?;
            forge::request_closed(&change_id, "merged")(at, dir, &ts)?;
            return Ok(Some((
                change_id,
                ad.subject.version,
                revision.to_owned(),
                ad.receipt,
                false,
            )));
        }
        Ok(None)
    })?;
    s.commit()?;
    let Some((change_id, version, revision, receipt_digest, already)) = found else {
        return Ok(None);
    };
    let source = s.apply(|w| repository(w.authority()?, repo_id))?.source;
    let attestation = s.apply(|w| {
        attest::ensure_forge_landing_note(
            w.dir(),
            w.authority()?,
            Path::new(&source),
            &change_id,
            version,
        )
    })?;
    s.rollback();
    Ok(Some(ForgeLanded {
        git_commit: commit.to_owned(),
        change_id,
        change_version: version,
        revision,
        receipt_digest,
        already_recorded: already,
        attestation,
    }))
}

/// After `forge sync`: moves the source's target branch to the forge's
/// `new` commit when that is a fast-forward (compare-and-swap on the old
/// value). A branch checked out in the source's own work tree moves with
/// its index and files when they are clean, as `land --update-worktree`
/// does; otherwise it stays. Returns what happened: `up_to_date`,
/// `fast_forwarded`, `ahead` (the local branch holds the forge's and more:
/// a landing not pushed yet), `diverged` (each has commits the other has
/// not), `checked_out_elsewhere` or `worktree_not_clean`.
pub fn advance_target(source: &Path, target: &str, new: &str) -> Result<&'static str> {
    let ref_name = format!("refs/heads/{target}");
    let old = git_ref_value(source, &ref_name)?;
    let Some(old) = old else {
        git(
            source,
            None,
            &[
                "update-ref",
                "-m",
                "agent-task forge sync",
                &ref_name,
                new,
                &"0".repeat(new.len()),
            ],
            None,
        )?;
        return Ok("fast_forwarded");
    };
    if old == new {
        return Ok("up_to_date");
    }
    if git(
        source,
        None,
        &["merge-base", "--is-ancestor", &old, new],
        None,
    )
    .is_err()
    {
        let ahead = git(
            source,
            None,
            &["merge-base", "--is-ancestor", new, &old],
            None,
        )
        .is_ok();
        return Ok(if ahead { "ahead" } else { "diverged" });
    }
    let wts = repo_git::checked_out(source, &ref_name)?;
    let here = std::fs::canonicalize(source).ok();
    let mut move_worktree = false;
    if let Some(w) = wts.first() {
        if wts.len() > 1 || std::fs::canonicalize(w).ok() != here {
            return Ok("checked_out_elsewhere");
        }
        if !repo_git::index_is(source, &old)? || repo_git::dirty(source, &old, Some(new))?.is_some()
        {
            return Ok("worktree_not_clean");
        }
        move_worktree = true;
    }
    git(
        source,
        None,
        &[
            "update-ref",
            "-m",
            "agent-task forge sync",
            &ref_name,
            new,
            &old,
        ],
        None,
    )?;
    if move_worktree {
        repo_git::fast_forward(source, &old, new)?;
    }
    Ok("fast_forwarded")
}
