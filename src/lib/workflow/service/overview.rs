//! The overview (`agent-task ls`, the `overview` operation): every Change
//! with its subject, group, tasks, current attempts, receipts and landings,
//! in one read of the authority and the journal. The operator reads it
//! locally over every Change ([`operator`]); an agent reads it through the
//! endpoint over its own profile's Changes only ([`agent`]). Each Change's
//! qualification is the answer of `qualification` itself
//! ([`receipt::qualify`], the same library function), never re-derived.
//! The shapes are documented in docs/overview.md.

use super::ctx::AgentCtx;
pub use super::requests::{
    ATTEMPT_STATES, AttemptView, CHANGE_STATES, ChangeView, LandingView, MAX_OVERVIEW_CHANGES,
    Overview, OverviewRequest, ReceiptView, TASK_STATES, TaskView,
};
use crate::clock::Clock;
use crate::contract::Actor;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, params};
use crate::workflow::authority::admin::Authenticated;
use crate::workflow::authority::change::{self, ChangeSel, Scope};
use crate::workflow::authority::receipt;
use crate::workflow::journal::{self, Now};
use std::collections::HashSet;
use std::path::Path;

/// The operator's overview of every Change of the data directory at
/// `root` (no token: the data directory is the operator's), read in one
/// snapshot of the authority and the journal.
pub fn operator(root: &Path, clock: &dyn Clock, req: &OverviewRequest) -> Result<Overview> {
    req.check()?;
    super::ctx::operator_read(root, clock, |j, a, now| {
        build(root, j, a, None, None, req, now)
    })
}

/// The `overview` operation: the bearer's own Changes (same owner, as
/// `qualification` allows) in the request's profile scope. A Change named
/// by `change` outside the scope is `not_found`, of another owner
/// `forbidden`, exactly as `qualification` answers.
pub fn agent(cx: &AgentCtx<'_>, req: &OverviewRequest) -> Result<Overview> {
    req.check()?;
    cx.read(|j, a, who, now| build(cx.root, j, a, Some(who), cx.scope.as_ref(), req, now))
}

fn build(
    root: &Path,
    j: Option<&Connection>,
    a: &Connection,
    who: Option<&Authenticated>,
    scope: Option<&Scope>,
    req: &OverviewRequest,
    now: Now,
) -> Result<Overview> {
    if let Some(id) = &req.change {
        let ch = change::select_in(a, &ChangeSel::Id(id.clone()), scope)?;
        if let Some(w) = who
            && !change::may_view(&ch, &w.actor)
        {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
    }
    let owner = who.map(|w| w.actor.owner_id.as_str());
    let mut ids: Vec<String> = a
        .prepare_cached(
            "SELECT change_id FROM changes \
             WHERE (?1 IS NULL OR repo_id = ?1) AND (?2 IS NULL OR change_id = ?2) \
             AND (?3 IS NULL OR group_label = ?3) \
             AND (?4 IS NULL OR (repo_id = ?4 AND profile_id = ?5)) \
             AND (?6 IS NULL OR owner_id = ?6) \
             ORDER BY group_label IS NULL, group_label, created_at, change_id LIMIT ?7",
        )?
        .query_map(
            params![
                req.repo,
                req.change,
                req.group,
                scope.map(|s| s.repository.as_str()),
                scope.map(|s| s.profile.as_str()),
                owner,
                (MAX_OVERVIEW_CHANGES + 1) as i64
            ],
            |r| r.get(0),
        )?
        .collect::<std::result::Result<_, _>>()?;
    let truncated = ids.len() > MAX_OVERVIEW_CHANGES;
    ids.truncate(MAX_OVERVIEW_CHANGES);
    // The (repository, group) pairs one of whose Changes landed: the
    // others of the pair are stale.
    let landed_groups: HashSet<(String, String)> = a
        .prepare_cached(
            "SELECT DISTINCT c.repo_id, c.group_label FROM changes c \
             JOIN landings l ON l.change_id = c.change_id AND l.state = 'landed' \
             WHERE c.group_label IS NOT NULL",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let mut changes = Vec::with_capacity(ids.len());
    for id in &ids {
        let v = change_view(root, j, a, id, &landed_groups, now)?;
        if keep(&v, req) {
            changes.push(v);
        }
    }
    Ok(Overview {
        now_ms: now.ms,
        changes,
        truncated,
    })
}

fn keep(v: &ChangeView, req: &OverviewRequest) -> bool {
    let state_ok = req.state.as_deref().is_none_or(|s| {
        v.state == s
            || v.tasks
                .iter()
                .any(|t| t.state == s || t.attempt.as_ref().is_some_and(|at| at.state == s))
    });
    let agent_ok = req.by_agent.as_deref().is_none_or(|ag| {
        v.agent_id == ag
            || v.tasks
                .iter()
                .any(|t| t.attempt.as_ref().is_some_and(|at| at.agent_id == ag))
    });
    state_ok && agent_ok
}

fn change_view(
    root: &Path,
    j: Option<&Connection>,
    a: &Connection,
    id: &str,
    landed_groups: &HashSet<(String, String)>,
    now: Now,
) -> Result<ChangeView> {
    let ch = change::change(a, id)?;
    let (title, _) = change::change_message(a, id)?;
    // The qualification of the Change's current subject, as its owner
    // reads it: the one function `qualification` runs.
    let owner = Authenticated {
        actor: Actor {
            owner_id: ch.owner_id.clone(),
            agent_id: ch.agent_id.clone(),
        },
        grant_generation: 0,
    };
    let q = receipt::qualify(root, &ChangeSel::Id(ch.change_id.clone()), None)(j, a, &owner, now)?;
    let qualified = q["qualified"].as_bool().unwrap_or(false);
    let subject_current = q["subject_current"].as_bool().unwrap_or(false);
    let revision = q["revision"].as_str().map(str::to_owned);
    let mut tasks = Vec::new();
    for t in q["tasks"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let (Some(task_id), Some(step_id), Some(state)) = (
            t["task_id"].as_str(),
            t["step_id"].as_str(),
            t["state"].as_str(),
        ) else {
            return Err(Error::internal("qualification answered a malformed task"));
        };
        let attempt = journal::task_state(j, task_id, now.ms)?
            .1
            .filter(|r| r.state(now.ms) != journal::AttemptState::Replaced)
            .map(|r| {
                let st = r.state(now.ms);
                AttemptView {
                    attempt_id: r.attempt.attempt_id.clone(),
                    state: st.as_str().to_owned(),
                    owner_id: r.attempt.agent.owner_id.clone(),
                    agent_id: r.attempt.agent.agent_id.clone(),
                    executor: r.attempt.executor.clone(),
                    fence: r.attempt.fence,
                    lease_expires_ms: r.lease_expires_ms,
                    lease_remaining_ms: (st == journal::AttemptState::Leased)
                        .then(|| (r.lease_expires_ms - now.ms).max(0)),
                }
            });
        tasks.push(TaskView {
            task_id: task_id.to_owned(),
            step_id: step_id.to_owned(),
            required: t["required"].as_bool().unwrap_or(false),
            state: state.to_owned(),
            attempt,
        });
    }
    let receipts = a
        .prepare_cached(
            "SELECT change_version, receipt_digest, created_at FROM receipts \
             WHERE change_id = ?1 ORDER BY change_version",
        )?
        .query_map(params![id], |r| {
            Ok(ReceiptView {
                version: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                receipt_digest: r.get(1)?,
                created_at: r.get(2)?,
            })
        })?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let landings = a
        .prepare_cached(
            "SELECT change_version, state, git_commit, landed_at, landed_by FROM landings \
             WHERE change_id = ?1 ORDER BY intent_at, landing_id",
        )?
        .query_map(params![id], |r| {
            Ok(LandingView {
                version: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                state: r.get(1)?,
                git_commit: r.get(2)?,
                landed_at: r.get(3)?,
                landed_by: r.get(4)?,
            })
        })?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let landed = landings.iter().any(|l| l.state == "landed");
    let stale = ch
        .group
        .as_ref()
        .is_some_and(|g| landed_groups.contains(&(ch.repository.clone(), g.clone())));
    let state = if landed {
        "landed"
    } else if stale {
        "stale"
    } else if ch.version == 0 {
        "open"
    } else if qualified {
        "qualified"
    } else {
        "working"
    };
    Ok(ChangeView {
        change_id: ch.change_id,
        repository: ch.repository,
        profile: ch.profile,
        owner_id: ch.owner_id,
        agent_id: ch.agent_id,
        group: ch.group,
        title: title.filter(|t| !t.is_empty()),
        version: ch.version,
        revision,
        state: state.to_owned(),
        qualified,
        subject_current,
        tasks,
        receipts,
        landings,
    })
}
