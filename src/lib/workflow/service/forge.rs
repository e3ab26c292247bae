//! The repositories' forges (`repo forge set|show|remove`, `repo list`):
//! the authority's rows, written in one operator session. Reading the
//! credential files and talking to the forge are the face-level
//! `crate::forge` job's.

use super::admin::with_write;
use crate::clock::Clock;
use crate::error::Result;
use crate::workflow::authority::{self, auth, forge};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

pub use crate::workflow::authority::forge::{
    Forge, ForgeCredential, ForgeKind, ForgeSetRequest, MAX_URL, PushPlan, StatusRow,
    check_credential, check_project, no_forge,
};

/// `repo forge set`'s write (the face has checked the URLs and the
/// credential file).
pub fn set(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ForgeSetRequest,
) -> Result<Forge> {
    with_write(root, timeout, clock, forge::set(req)?)
}

/// `repo forge remove`: the forge removed.
pub fn remove(root: &Path, timeout: Duration, clock: &dyn Clock, repo_id: &str) -> Result<Forge> {
    with_write(root, timeout, clock, forge::remove(repo_id))
}

/// The forge of `repo_id`: `not_found` for an unknown repository or one
/// without a forge (read-only).
pub fn show(root: &Path, repo_id: &str) -> Result<Forge> {
    let (_dir, at) = auth::open_read(root)?;
    authority::repository(&at, repo_id)?;
    forge::forge(&at, repo_id)?.ok_or_else(|| no_forge(repo_id))
}

/// One row of `repo list`: the repository and its forge, if any.
#[derive(Debug, Serialize)]
pub struct ListedRepository {
    /// The repository.
    #[serde(flatten)]
    pub repository: authority::Repository,
    /// Its forge (absent when none is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forge: Option<Forge>,
}

/// `repo list`: every repository with its forge (read-only).
pub fn repo_list(root: &Path) -> Result<Vec<ListedRepository>> {
    let (_dir, at) = auth::open_read(root)?;
    let mut forges = forge::forges(&at)?.into_iter().peekable();
    let repos = authority::admin::repo_list(root)?;
    let mut out = Vec::with_capacity(repos.len());
    for repository in repos {
        let f = forges.next_if(|f| f.repo_id == repository.repo_id);
        out.push(ListedRepository {
            repository,
            forge: f,
        });
    }
    Ok(out)
}

/// The push plan of a landed Change (read-only).
pub fn push_plan(root: &Path, repo_id: &str, change_id: &str) -> Result<PushPlan> {
    let (_dir, at) = auth::open_read(root)?;
    forge::push_plan(&at, repo_id, change_id)
}

/// The forge of `repo_id`, `None` when the repository has none
/// (read-only; `not_found` for an unknown repository).
pub fn forge_of(root: &Path, repo_id: &str) -> Result<Option<Forge>> {
    let (_dir, at) = auth::open_read(root)?;
    authority::repository(&at, repo_id)?;
    forge::forge(&at, repo_id)
}

/// Records a push attempt's start or end; the state and attempts now.
pub fn record_push(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    plan: &PushPlan,
    pushed: bool,
) -> Result<(String, u64)> {
    with_write(root, timeout, clock, forge::record_push(plan, pushed))
}

/// The revision of `commit`'s tree in `repo`, recomputed from the tree
/// as `verify` does (the manifest of the tree's entries, hashed): what a
/// success status is checked against.
pub fn commit_revision(repo: &Path, commit: &str) -> Result<String> {
    use crate::workflow::attest::git;
    let tree = git::tree_of(repo, commit)?;
    let (manifest, _) = git::tree_manifest(repo, &tree)?;
    Ok(git::TreeRevision::of(&manifest)?
        .revision
        .as_str()
        .to_owned())
}

/// Marks a push's candidate branch as pushed.
pub fn mark_candidate(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    plan: &PushPlan,
) -> Result<()> {
    with_write(
        root,
        timeout,
        clock,
        forge::mark_candidate(&plan.landing_id),
    )
}

/// Every pending commit-status row, oldest first (read-only).
pub fn pending_statuses(root: &Path) -> Result<Vec<StatusRow>> {
    let (_dir, at) = auth::open_read(root)?;
    forge::pending_statuses(&at)
}

/// Marks commit-status rows done: `(seq, outcome, commit)`.
pub fn finish_statuses(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    done: Vec<(i64, &'static str, Option<String>)>,
) -> Result<u64> {
    if done.is_empty() {
        return Ok(0);
    }
    with_write(root, timeout, clock, forge::finish_statuses(done))
}

/// After `land --push` published success itself: the version's pending
/// rows are done.
pub fn finish_version(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    plan: &PushPlan,
) -> Result<u64> {
    with_write(
        root,
        timeout,
        clock,
        forge::finish_version(&plan.change_id, plan.change_version, &plan.commit),
    )
}

/// Whether any forge of this data directory publishes statuses
/// (read-only; `false` without an authority).
pub fn publishes_statuses(root: &Path) -> Result<bool> {
    let (_dir, at) = auth::open_read(root)?;
    Ok(forge::forges(&at)?.iter().any(|f| f.publish_status))
}
