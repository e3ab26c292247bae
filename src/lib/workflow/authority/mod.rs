//! The native authority: repositories, revisions, changes, requirements,
//! actors and tokens, executor enrollment (`authority.sqlite`).
//!
//! Every operator act that changes policy (repository add, requirement
//! install, enrollment, enrollment revocation) bumps the policy epoch by
//! one and records the act; every context binds the epoch it was made
//! under, so a policy act makes older subjects stale. Tokens have their own
//! grant generation instead (issuing a token does not change policy).

pub mod admin;
pub mod auth;
pub mod change;
pub mod checkout;
pub mod checkpoint;
pub mod collector;
pub mod evaluate;
pub mod evidence;
#[cfg(test)]
mod fixture;
pub mod forge;
mod kind;
pub mod landing;
pub mod receipt;
pub mod review;
pub mod schema;
pub mod snapshot;
mod walk;

use crate::contract::{Actor, ExecutorEnrollment, WorkflowTask};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, OptionalExtension, params};

/// The current policy epoch.
pub fn policy_epoch(conn: &Connection) -> Result<u64> {
    let e: i64 = conn
        .prepare_cached("SELECT epoch FROM policy WHERE singleton = 1")?
        .query_row([], |r| r.get(0))?;
    epoch_of(e)
}

/// A stored policy epoch as a number (never negative).
pub(crate) fn epoch_of(e: i64) -> Result<u64> {
    u64::try_from(e).map_err(|_| Error::new(Code::IntegrityError, "negative policy epoch"))
}

/// Bumps the policy epoch (inside the caller's transaction) and records the
/// act; returns the new epoch and how many live subjects it made stale
/// (every subject current before the act: each binds the epoch).
pub(crate) fn bump_epoch(
    conn: &Connection,
    act: &str,
    detail: &str,
    now: &str,
) -> Result<(u64, u64)> {
    let stale = live_subjects(conn)?;
    // The forge's `error` statuses of the subjects this act makes stale,
    // in this same transaction.
    forge::on_policy_act(conn, act, now)?;
    let e = policy_epoch(conn)? + 1;
    conn.prepare_cached("UPDATE policy SET epoch = ?1 WHERE singleton = 1")?
        .execute(params![e as i64])?;
    conn.prepare_cached("INSERT INTO policy_acts(epoch, act, detail, at) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![e as i64, act, detail, now])?;
    Ok((e, stale))
}

/// How many Changes have a current subject now (checkpointed, not
/// superseded, not stale): the subjects a policy act makes stale.
pub(crate) fn live_subjects(conn: &Connection) -> Result<u64> {
    live_subjects_except(conn, None)
}

/// [`live_subjects`] of every Change but `except`.
pub(crate) fn live_subjects_except(conn: &Connection, except: Option<&str>) -> Result<u64> {
    let ids: Vec<String> = conn
        .prepare_cached("SELECT change_id FROM changes WHERE current_version > 0")?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    let mut n = 0u64;
    for id in ids.into_iter().filter(|i| Some(i.as_str()) != except) {
        let ch = change::change(conn, &id)?;
        let Ok(s) = change::current_subject(conn, &ch) else {
            continue;
        };
        if change::subject_staleness(conn, &s)?.is_none() {
            n += 1;
        }
    }
    Ok(n)
}

/// A repository row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Repository {
    /// Id.
    pub repo_id: String,
    /// Source directory.
    pub source: String,
    /// Protected target name.
    pub target: String,
    /// The target's head revision.
    pub head_revision: String,
    /// When registered.
    pub created_at: String,
}

/// Loads a repository, `not_found` when absent.
pub fn repository(conn: &Connection, repo_id: &str) -> Result<Repository> {
    conn.prepare_cached("SELECT repo_id, source, target, head_revision, created_at FROM repositories WHERE repo_id = ?1")?.query_row(params![repo_id],
        |r| {
            Ok(Repository {
                repo_id: r.get(0)?,
                source: r.get(1)?,
                target: r.get(2)?,
                head_revision: r.get(3)?,
                created_at: r.get(4)?,
            })
        },
    )
    .optional()?
    .ok_or_else(|| {
        Error::new(Code::NotFound, format!("no repository {repo_id}")).with("repository", repo_id)
    })
}

/// The installed requirement digest and bytes of a repository profile.
pub fn installed_requirement(
    conn: &Connection,
    repo_id: &str,
    profile: &str,
) -> Result<Option<(String, Vec<u8>)>> {
    Ok(conn
        .prepare_cached("SELECT i.requirement_digest, r.bytes FROM installed_requirements i \
             JOIN requirements r USING (requirement_digest) WHERE i.repo_id = ?1 AND i.profile_id = ?2")?.query_row(params![repo_id, profile],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The digest of the installed requirement of a repository profile, when
/// one is installed and its bytes are stored (they are not read).
pub fn installed_requirement_digest(
    conn: &Connection,
    repo_id: &str,
    profile: &str,
) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT i.requirement_digest FROM installed_requirements i \
             JOIN requirements r USING (requirement_digest) WHERE i.repo_id = ?1 AND i.profile_id = ?2",
        )?
        .query_row(params![repo_id, profile], |r| r.get(0))
        .optional()?)
}

/// The journal's view of the authority, over one authority connection of
/// the caller's session. A request's task is looked up once: the first
/// [`find_task`](crate::workflow::journal::Authority::find_task) (checked
/// against the request's [`change::Scope`], if any) is kept and answers
/// the later ones of the same task.
pub struct Rechecks<'a> {
    conn: &'a Connection,
    scope: Option<&'a change::Scope>,
    known: Option<&'a change::StoredSubject>,
    found: std::cell::RefCell<Option<Found>>,
}

/// A task and the subject it was found in, shared by the request's later
/// lookups of the same task (not copied for each).
pub type Found = std::rc::Rc<change::FoundAt>;

impl<'a> Rechecks<'a> {
    /// Over `conn`, with no scope (the CLI; the authority's own rechecks).
    pub fn new(conn: &'a Connection) -> Rechecks<'a> {
        Rechecks::scoped(conn, None)
    }

    /// Over `conn`, refusing tasks outside `scope` with `not_found`.
    pub fn scoped(conn: &'a Connection, scope: Option<&'a change::Scope>) -> Rechecks<'a> {
        Rechecks {
            conn,
            scope,
            known: None,
            found: std::cell::RefCell::new(None),
        }
    }

    /// Over `conn`, with no scope, knowing the subject `s` (loaded from
    /// `conn` in the caller's transaction): a task of `s` is found by the
    /// task index alone, its subject not loaded again, and the live
    /// checks' staleness does not load it again either.
    pub fn knowing(conn: &'a Connection, s: &'a change::StoredSubject) -> Rechecks<'a> {
        Rechecks {
            known: Some(s),
            ..Rechecks::new(conn)
        }
    }

    /// The subject this was made knowing ([`Rechecks::knowing`]).
    pub fn known(&self) -> Option<&'a change::StoredSubject> {
        self.known
    }

    /// The authority connection.
    pub fn conn(&self) -> &'a Connection {
        self.conn
    }

    /// The stored task and its subject, looked up (and checked against
    /// the scope) the first time a request asks for it.
    pub fn task(&self, task_id: &str) -> Result<Found> {
        let kept = self
            .found
            .borrow()
            .as_ref()
            .filter(|x| x.task().task_id == task_id)
            .cloned();
        match kept {
            Some(x) => Ok(x),
            None => {
                let x = std::rc::Rc::new(change::find_task_at(
                    self.conn, task_id, self.scope, self.known,
                )?);
                *self.found.borrow_mut() = Some(x.clone());
                Ok(x)
            }
        }
    }
}

impl crate::workflow::journal::Authority for Rechecks<'_> {
    fn find_task(
        &self,
        task_id: &str,
        actor: &Actor,
    ) -> Result<crate::workflow::journal::FoundTask> {
        let found = self.task(task_id)?;
        let s = found.subject();
        let visible = change::may_view(&s.change, actor);
        crate::workflow::journal::FoundTask::new(s.tasks.clone(), found.index(), visible)
    }

    fn staleness(&self, task: &WorkflowTask) -> Result<Option<&'static str>> {
        // The subject this knows, else the one the request's task was
        // found in: both were read from `conn` in this unit of work, so
        // the Change row and the subject are not read a second time
        // (`staleness_in` still reads them when `task` names another).
        let found = self.found.borrow();
        let known = self.known.or_else(|| found.as_ref().map(|x| x.subject()));
        change::staleness_knowing(self.conn, task, known)
    }

    fn registration(&self, registration_id: &str) -> Result<Option<(ExecutorEnrollment, bool)>> {
        auth::registration(self.conn, registration_id)
    }

    fn controller_passed(&self, task_id: &str, attempt_id: &str) -> Result<bool> {
        let Some(row) = collector::imported_for_attempt(self.conn, attempt_id)? else {
            return Ok(false);
        };
        if row.task_id != task_id || row.outcome != "passed" {
            return Ok(false);
        }
        let registration_id: String = self.conn.query_row(
            "SELECT registration_id FROM imported_transfers WHERE attempt_id = ?1",
            params![attempt_id],
            |r| r.get(0),
        )?;
        Ok(matches!(
            auth::registration(self.conn, &registration_id)?,
            Some((_, false))
        ))
    }
}
