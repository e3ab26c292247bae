//! The evaluation of a subject's tasks from the journal and the imported
//! transfers: what a checkpoint (reuse), a receipt, qualification and
//! landing's admission all read.

use super::change::StoredSubject;
use super::collector::{self as col, ImportedRow};
use crate::contract::Standing;
use crate::contract::{ActionClass, WorkflowTask};
use crate::error::Result;
use crate::store::Connection;
use crate::workflow::journal;

/// One task's evaluation.
#[derive(Debug, Clone)]
pub struct TaskEval<'s> {
    /// The task (one of the evaluated subject's, borrowed from it).
    pub task: &'s WorkflowTask,
    /// pending|claimed|succeeded|failed|uncertain|blocked
    pub state: &'static str,
    /// The journal's state (`pending`, `leased`, `expired`, `finished`,
    /// `cancelled`): what the `next` command shows.
    pub journal_state: String,
    /// Failure code (required tasks not succeeded).
    pub code: Option<&'static str>,
    /// How it stands for the next action ([`crate::contract::decide_next`]).
    pub standing: Standing,
    /// The imported transfer of its current attempt.
    pub transfer: Option<ImportedRow>,
}

/// Evaluates every task of a subject from the journal and imported transfers.
pub fn evaluate<'s>(
    j: Option<&Connection>,
    a: &Connection,
    s: &'s StoredSubject,
    now_ms: i64,
) -> Result<Vec<TaskEval<'s>>> {
    let mut out = Vec::new();
    for t in s.tasks.iter() {
        let (jstate, row) = journal::task_state(j, &t.task_id, now_ms)?;
        let transfer = match &row {
            Some(r) if jstate != "pending" => col::imported_for_attempt(a, &r.attempt.attempt_id)?,
            _ => None,
        };
        let collected = matches!(t.action_class, ActionClass::Command | ActionClass::Review);
        let review = t.action_class == ActionClass::Review;
        let (state, code, standing) = match (t.action_class, jstate.as_str()) {
            // The one claimability decision, projected: an unresolved older
            // subject blocks; an incomplete dependency leaves the task
            // pending (not a qualify failure of its own) but unclaimable.
            (_, "pending") => {
                let c = journal::claimability(j, &super::Rechecks::new(a), t, &s.tasks, now_ms)?;
                match (c.prior_unresolved, c.dependency) {
                    (Some(p), _) => (
                        "blocked",
                        Some("prior_subject_unresolved"),
                        Standing::PriorUnresolved(p),
                    ),
                    (None, Some(_)) => (
                        "pending",
                        Some("task_pending"),
                        Standing::DependencyIncomplete,
                    ),
                    (None, None) => (
                        "pending",
                        Some("task_pending"),
                        Standing::Claimable { collected },
                    ),
                }
            }
            (_, "leased") => ("claimed", Some("attempt_in_progress"), Standing::InProgress),
            (_, "expired" | "cancelled") => {
                ("uncertain", Some("attempt_uncertain"), Standing::Uncertain)
            }
            (ActionClass::Command, "finished") => match &transfer {
                Some(x) if x.outcome == "passed" => ("succeeded", None, Standing::Succeeded),
                Some(_) => (
                    "failed",
                    Some("collector_not_passed"),
                    Standing::Failed { review },
                ),
                None => ("failed", Some("result_failed"), Standing::Failed { review }),
            },
            // A failed review is retained as failed evidence: the code says
            // why (the record's failure), and the way on is a new revision.
            (ActionClass::Review, "finished") => match &transfer {
                Some(x) if x.outcome == "passed" => ("succeeded", None, Standing::Succeeded),
                Some(x) => (
                    "failed",
                    Some(review_failure_code(&x.status)),
                    Standing::Failed { review },
                ),
                None => (
                    "failed",
                    Some("result_failed"),
                    Standing::Failed { review: false },
                ),
            },
            (_, "finished") => {
                if journal::dependency_complete(j, &super::Rechecks::new(a), t, now_ms)? {
                    ("succeeded", None, Standing::Succeeded)
                } else {
                    ("failed", Some("result_failed"), Standing::Failed { review })
                }
            }
            _ => ("blocked", Some("unknown_state"), Standing::Blocked),
        };
        out.push(TaskEval {
            task: t,
            state,
            journal_state: jstate,
            code,
            standing,
            transfer,
        });
    }
    Ok(out)
}

/// The stable failure code of a failed review's retained status (the
/// record's `failure`), `review_not_passed` for anything else.
fn review_failure_code(status: &str) -> &'static str {
    use crate::collector::review::types::ReviewFailure as F;
    const ALL: [F; 12] = [
        F::ReviewNothingSelected,
        F::ReviewCoverageIncomplete,
        F::ReviewBudgetExceeded,
        F::ReviewCallUncertain,
        F::ReviewExecutableMismatch,
        F::ReviewCallFailed,
        F::ReviewCallTimedOut,
        F::ReviewOutputExceeded,
        F::ReviewErrorResult,
        F::ReviewAnswerMalformed,
        F::ReviewModelMismatch,
        F::ReviewCriteriaFailed,
    ];
    ALL.iter()
        .map(|f| f.as_str())
        .find(|c| *c == status)
        .unwrap_or("review_not_passed")
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, NOW_MS, fixture};
    use super::super::{admin, change};
    use super::*;
    use crate::store::params;
    use crate::workflow::journal::Now;
    use serde_json::json;

    fn state_of(f: &fixture::Fixture, now_ms: i64) -> Vec<(&'static str, Option<&'static str>)> {
        let (_, s) = change::find_task(&f.a, &f.command.task_id).expect("find");
        evaluate(Some(&f.j), &f.a, &s, now_ms)
            .expect("evaluate")
            .iter()
            .map(|e| (e.state, e.code))
            .collect()
    }

    fn import(f: &fixture::Fixture, attempt_id: &str, outcome: &str, status: &str) {
        f.a.execute(
            "INSERT INTO imported_transfers VALUES ('op', 'digest', 1, 'up', ?1, ?2, 1, ?3, 1, ?4, 'cp', ?5, ?6, 1, ?7, ?8, x'7b7d', 't')",
            params![
                f.command.task_id,
                attempt_id,
                fixture::CHANGE,
                fixture::REG,
                fixture::OWNER,
                fixture::AGENT,
                outcome,
                status
            ],
        )
        .expect("imported");
    }

    /// Claims the command task for the fixture's registration.
    fn claim(f: &fixture::Fixture) -> String {
        let who = admin::Authenticated {
            actor: fixture::actor(),
            grant_generation: 1,
        };
        let out = col::collector_claim(&f.command.task_id, "req_1", None)(
            &f.j,
            &f.a,
            &who,
            Now { ms: NOW_MS },
        )
        .expect("claim");
        out["attempt"]["attempt_id"]
            .as_str()
            .expect("attempt")
            .to_owned()
    }

    #[test]
    fn a_collected_task_goes_from_pending_to_claimed_to_uncertain() {
        let f = fixture();
        let pending = ("pending", Some("task_pending"));
        assert_eq!(state_of(&f, NOW_MS), vec![pending, pending]);
        let (_, s) = change::find_task(&f.a, &f.command.task_id).expect("find");
        let e = evaluate(Some(&f.j), &f.a, &s, NOW_MS).expect("evaluate");
        assert_eq!(
            serde_json::to_value(crate::contract::task_next(
                &f.command.task_id,
                &e[0].standing
            ))
            .expect("json"),
            json!({"operation": "collector_claim", "task_id": f.command.task_id})
        );
        claim(&f);
        assert_eq!(
            state_of(&f, NOW_MS),
            vec![("claimed", Some("attempt_in_progress")), pending]
        );
        // Past the lease (the recipe's minute and two more).
        assert_eq!(
            state_of(&f, NOW_MS + 4 * 60_000)[0],
            ("uncertain", Some("attempt_uncertain"))
        );
    }

    #[test]
    fn a_finished_command_succeeds_only_on_a_passed_import() {
        for (import_as, want) in [
            (None, ("failed", Some("result_failed"))),
            (Some("failed"), ("failed", Some("collector_not_passed"))),
            (Some("passed"), ("succeeded", None)),
        ] {
            let f = fixture();
            let id = claim(&f);
            if let Some(outcome) = import_as {
                import(&f, &id, outcome, "completed");
            }
            journal::finish_attempt(&f.j, &id, "t").expect("finish");
            assert_eq!(state_of(&f, NOW_MS)[0], want, "{import_as:?}");
        }
    }

    #[test]
    fn a_failed_review_is_reported_under_its_own_failure_code() {
        assert_eq!(
            review_failure_code("review_criteria_failed"),
            "review_criteria_failed"
        );
        assert_eq!(
            review_failure_code("review_call_uncertain"),
            "review_call_uncertain"
        );
        assert_eq!(review_failure_code("completed"), "review_not_passed");
        assert_eq!(review_failure_code(""), "review_not_passed");
    }
}
