//! The landing rows of `authority.sqlite` (`landings`): a landing's
//! durable intent, its states (`pending`, `landed`, `abandoned`) and the
//! repository head it moves. The phases that write them are
//! `workflow::service::land`.

use crate::error::{Code, Error, Result};
use crate::store::{Connection, OptionalExtension, params};

/// A landing as its durable row records it.
#[derive(Debug, Clone)]
pub(crate) struct Landing {
    pub(crate) landing_id: String,
    pub(crate) repo_id: String,
    pub(crate) change_id: String,
    pub(crate) change_version: u64,
    pub(crate) revision: String,
    /// `None` only for a landing the operator allowed with protected changes.
    pub(crate) receipt_digest: Option<String>,
    pub(crate) old_head: String,
    pub(crate) git: Option<GitIntent>,
    /// Whether the operator's `--allow-protected-change` let it land.
    pub(crate) allow_protected_change: bool,
    /// How many protected paths it changes (0 unless allowed).
    pub(crate) protected_changes: u64,
}

/// What phase 2 needs: the branch, its value when the intent was made
/// (all zeros: absent) and the commit it must move to.
#[derive(Debug, Clone)]
pub(crate) struct GitIntent {
    pub(crate) ref_name: String,
    pub(crate) expected_old: String,
    pub(crate) commit: String,
}

/// The landed landing of a Change (its latest version that landed).
pub(crate) fn landed_landing(a: &Connection, change_id: &str) -> Result<Option<Landing>> {
    let row = a
        .prepare_cached(
            "SELECT landing_id, repo_id, change_version, revision, receipt_digest, old_head, \
             git_commit, ref_name, expected_old, allow_protected_change, protected_changes \
             FROM landings WHERE change_id = ?1 AND state = 'landed' \
             ORDER BY change_version DESC LIMIT 1",
        )?
        .query_row(params![change_id], |r| {
            Ok((
                (
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                ),
                (
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ),
                (r.get::<_, i64>(9)?, r.get::<_, i64>(10)?),
            ))
        })
        .optional()?;
    let Some((
        (landing_id, repo_id, version, revision, receipt_digest, old_head),
        (commit, ref_name, expected_old),
        (allowed, protected_changes),
    )) = row
    else {
        return Ok(None);
    };
    Ok(Some(Landing {
        landing_id,
        repo_id,
        change_id: change_id.to_owned(),
        change_version: u64::try_from(version)
            .map_err(|_| Error::new(Code::IntegrityError, "negative change version"))?,
        revision,
        receipt_digest,
        old_head,
        git: commit.map(|commit| GitIntent {
            ref_name: ref_name.unwrap_or_default(),
            expected_old: expected_old.unwrap_or_default(),
            commit,
        }),
        allow_protected_change: allowed == 1,
        protected_changes: u64::try_from(protected_changes)
            .map_err(|_| Error::new(Code::IntegrityError, "negative protected change count"))?,
    }))
}

/// Moves the authority's head to the landed revision; returns how many
/// live subjects of other Changes that made stale (their target moved).
pub(crate) fn set_head(at: &Connection, p: &Landing) -> Result<u64> {
    let before = super::live_subjects_except(at, Some(&p.change_id))?;
    at.prepare_cached("UPDATE repositories SET head_revision = ?2 WHERE repo_id = ?1")?
        .execute(params![p.repo_id, p.revision])?;
    let after = super::live_subjects_except(at, Some(&p.change_id))?;
    Ok(before.saturating_sub(after))
}

pub(crate) fn abandon(at: &Connection, p: &Landing, reason: &str) -> Result<()> {
    at.prepare_cached("UPDATE landings SET state = 'abandoned', reason = ?2 WHERE landing_id = ?1 AND state = 'pending'")?.execute(params![p.landing_id, reason],
    )?;
    Ok(())
}

pub(crate) fn insert_landing(at: &Connection, p: &Landing, state: &str, ts: &str) -> Result<()> {
    let landed_at = (state == "landed").then_some(ts);
    let g = p.git.as_ref();
    at.prepare_cached("INSERT INTO landings(landing_id, repo_id, change_id, change_version, revision, receipt_digest, old_head, \
         git_commit, ref_name, expected_old, state, reason, intent_at, landed_at, allow_protected_change, protected_changes) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,NULL,?12,?13,?14,?15)")?.execute(params![
            p.landing_id,
            p.repo_id,
            p.change_id,
            p.change_version as i64,
            p.revision,
            p.receipt_digest,
            p.old_head,
            g.map(|g| g.commit.as_str()),
            g.map(|g| g.ref_name.as_str()),
            g.map(|g| g.expected_old.as_str()),
            state,
            ts,
            landed_at,
            i64::from(p.allow_protected_change),
            p.protected_changes as i64
        ],
    )?;
    Ok(())
}

/// The pending landing of a repository (at most one: a unique index).
pub(crate) fn pending_landing(a: &Connection, repo_id: &str) -> Result<Option<Landing>> {
    let row = a
        .prepare_cached("SELECT landing_id, repo_id, change_id, change_version, revision, receipt_digest, old_head, \
             git_commit, ref_name, expected_old, allow_protected_change, protected_changes \
             FROM landings WHERE repo_id = ?1 AND state = 'pending'")?.query_row(params![repo_id],
            |r| {
                Ok((
                    Landing {
                        landing_id: r.get(0)?,
                        repo_id: r.get(1)?,
                        change_id: r.get(2)?,
                        change_version: 0,
                        revision: r.get(4)?,
                        receipt_digest: r.get(5)?,
                        old_head: r.get(6)?,
                        git: None,
                        allow_protected_change: r.get::<_, i64>(10)? == 1,
                        protected_changes: u64::try_from(r.get::<_, i64>(11)?).unwrap_or(0),
                    },
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ))
            },
        )
        .optional()?;
    let Some((mut l, version, commit, ref_name, expected_old)) = row else {
        return Ok(None);
    };
    l.change_version = u64::try_from(version)
        .map_err(|_| Error::new(Code::IntegrityError, "negative change version"))?;
    l.git = match (commit, ref_name, expected_old) {
        (Some(commit), Some(ref_name), Some(expected_old)) => Some(GitIntent {
            ref_name,
            expected_old,
            commit,
        }),
        _ => None,
    };
    Ok(Some(l))
}

/// Phase 3's mark: a `pending` landing becomes `landed` at `ts`; the
/// number of rows changed (1 unless it was no longer pending).
pub(crate) fn mark_landed(at: &Connection, p: &Landing, ts: &str) -> Result<usize> {
    Ok(at.prepare_cached("UPDATE landings SET state = 'landed', landed_at = ?2 WHERE landing_id = ?1 AND state = 'pending'")?.execute(params![p.landing_id, ts],
        )?)
}
