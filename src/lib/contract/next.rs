//! The typed next operation a workflow output names (its `next` member):
//! an operation, and the task or change it applies to, or why there is
//! none. Every producer of the hint builds one of these; the outputs that
//! carry it as JSON take it through `From<Next> for Value`.
//!
//! [`decide`] is the one rule that picks the next action of a subject
//! (spec: workflow-task-contract, `qualification`): `qualify`, the Stop
//! hook (through qualification) and the `next` command all take it from
//! here. It is pure: the callers read the journal and the authority and
//! describe each task by its [`Standing`].

use serde::Serialize;
use serde_json::{Map, Value};

/// `{"operation": …}` with its optional `change_id`, `reason` and
/// `task_id` (absent when `None`). The fields are in key order, the order
/// a JSON object of this crate serialises its members in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Next {
    /// The Change the operation applies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// The operation (`claim`, `checkpoint`, `none`, …).
    pub operation: &'static str,
    /// Why, when the operation is `none` or needs one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The task the operation applies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl Next {
    /// `operation` alone.
    pub fn op(operation: &'static str) -> Next {
        Next {
            change_id: None,
            operation,
            reason: None,
            task_id: None,
        }
    }

    /// `{"operation": "none"}`.
    pub fn none() -> Next {
        Next::op("none")
    }

    /// `{"operation": "checkpoint"}`.
    pub fn checkpoint() -> Next {
        Next::op("checkpoint")
    }

    /// `operation` on a task.
    pub fn task(operation: &'static str, task_id: impl Into<String>) -> Next {
        Next {
            task_id: Some(task_id.into()),
            ..Next::op(operation)
        }
    }

    /// `operation` on a Change.
    pub fn change(operation: &'static str, change_id: impl Into<String>) -> Next {
        Next {
            change_id: Some(change_id.into()),
            ..Next::op(operation)
        }
    }

    /// `operation`, with its reason.
    pub fn because(operation: &'static str, reason: &'static str) -> Next {
        Next {
            reason: Some(reason),
            ..Next::op(operation)
        }
    }

    /// Whether the operation is `none`.
    pub fn is_none(&self) -> bool {
        self.operation == "none"
    }

    /// The same operation without its `reason` (the spec's
    /// qualification shape carries none).
    pub fn without_reason(self) -> Next {
        Next {
            reason: None,
            ..self
        }
    }
}

/// How one task of a current subject stands, as the next action reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Pending and claimable. `collected`: a command or review step, which
    /// the enrolled collector runs (`collector_claim`); an agent-owned
    /// step's own claim is not one of the spec's five operations.
    Claimable {
        /// A command or review step.
        collected: bool,
    },
    /// Pending, but a dependency is not complete: the claim path would
    /// refuse it.
    DependencyIncomplete,
    /// Pending, but an older subject's attempt for the same change,
    /// profile and step (this task id) is unresolved.
    PriorUnresolved(String),
    /// Claimed under a live lease.
    InProgress,
    /// An expired or cancelled attempt, uncertain until reconciled.
    Uncertain,
    /// Finished and satisfied.
    Succeeded,
    /// Finished and failed (`review`: a failed review). A finished failed
    /// attempt has no operation (`none`): retrying needs a new checkpoint,
    /// which the agent makes after fixing the work.
    Failed {
        /// A review step.
        review: bool,
    },
    /// A state the rules do not know.
    Blocked,
}

/// How the subject itself stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectStanding {
    /// The Change has no checkpoint yet.
    NoCheckpoint,
    /// The subject is not current (superseded, or the local bytes differ).
    Superseded,
    /// The revision changes a protected path.
    ProtectedPathChanged,
    /// Current; the state of its receipt (read only once every required
    /// task succeeded).
    Current(ReceiptStanding),
}

/// The receipt of a current subject whose required tasks all succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptStanding {
    /// A receipt exists and matches.
    Current,
    /// No receipt, or one that no longer matches the evidence.
    Missing,
    /// The receipt cannot be built from the retained evidence (the
    /// failures say why; nothing the agent can run helps).
    Unbuildable,
}

/// The next action for one task in `standing` (a `none` may carry why).
pub fn for_task(task_id: &str, standing: &Standing) -> Next {
    match standing {
        Standing::Claimable { collected: true } => Next::task("collector_claim", task_id),
        Standing::Claimable { collected: false } => Next::none(),
        Standing::DependencyIncomplete => Next::because("none", "dependency_incomplete"),
        Standing::PriorUnresolved(prior) => Next::task("reconcile", prior.as_str()),
        Standing::InProgress => Next::because("none", "attempt_in_progress"),
        Standing::Uncertain => Next::task("reconcile", task_id),
        // A finished failed attempt, a failed review included, has no
        // operation: the claim path claims only a task with no attempt or
        // a replaced one, so the way on is a new checkpoint, which the
        // agent makes after fixing the work (the spec's rule).
        Standing::Succeeded | Standing::Failed { .. } | Standing::Blocked => Next::none(),
    }
}

/// The next action of a subject: a superseded (or never checkpointed)
/// subject or a protected-path change is `checkpoint`; otherwise the
/// first task operation among the `required` tasks (in order) that are
/// not succeeded; when every one of them succeeded, `collector_finalize`
/// until a current receipt exists; else `none` (a finished failed
/// attempt, a live attempt, or a qualified subject). Only the five
/// operations come out: `collector_claim`, `reconcile`,
/// `collector_finalize`, `checkpoint`, `none`.
pub fn decide<'a>(
    subject: SubjectStanding,
    required: impl IntoIterator<Item = (&'a str, &'a Standing)>,
) -> Next {
    let receipt = match subject {
        SubjectStanding::NoCheckpoint | SubjectStanding::Superseded => return Next::checkpoint(),
        SubjectStanding::ProtectedPathChanged => {
            return Next::because("checkpoint", "protected_path_changed");
        }
        SubjectStanding::Current(r) => r,
    };
    let mut all_succeeded = true;
    for (task_id, standing) in required {
        if *standing == Standing::Succeeded {
            continue;
        }
        all_succeeded = false;
        let n = for_task(task_id, standing);
        if !n.is_none() {
            return n;
        }
    }
    match (all_succeeded, receipt) {
        (true, ReceiptStanding::Missing) => Next::op("collector_finalize"),
        _ => Next::none(),
    }
}

/// The command of this CLI to run for `next` (the `hint` a CLI output
/// carries beside `next`, never inside it), or `None` for `none`. Words in
/// capitals are for the caller to fill in; a `reconcile` starts with
/// `recovery`, which names the attempt and fence `reconcile` takes.
pub fn hint(next: &Next, change_id: &str) -> Option<String> {
    let task = next.task_id.as_deref().unwrap_or_default();
    match next.operation {
        "collector_claim" => Some(format!("agent-task collector-claim {task}")),
        "claim" => Some(format!("agent-task claim {task} --request-id REQUEST_ID")),
        "reconcile" => Some(format!("agent-task recovery --task {task}")),
        "collector_finalize" => Some(format!("agent-task finalize --change {change_id}")),
        "checkpoint" => Some(format!("agent-task checkpoint --change {change_id}")),
        "land" => Some(format!("agent-task land --change {change_id}")),
        _ => None,
    }
}

impl From<Next> for Value {
    fn from(n: Next) -> Value {
        let mut m = Map::new();
        if let Some(c) = n.change_id {
            m.insert("change_id".into(), c.into());
        }
        m.insert("operation".into(), n.operation.into());
        if let Some(r) = n.reason {
            m.insert("reason".into(), r.into());
        }
        if let Some(t) = n.task_id {
            m.insert("task_id".into(), t.into());
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value and the serialised bytes are the ones the hint's `json!`
    /// literals made.
    #[test]
    fn renders_as_the_literal_hint() {
        let cases = [
            (Next::none(), r#"{"operation":"none"}"#),
            (Next::checkpoint(), r#"{"operation":"checkpoint"}"#),
            (
                Next::task("claim", "t1"),
                r#"{"operation":"claim","task_id":"t1"}"#,
            ),
            (
                Next::change("land", "c1"),
                r#"{"change_id":"c1","operation":"land"}"#,
            ),
            (
                Next::because("none", "attempt_in_progress"),
                r#"{"operation":"none","reason":"attempt_in_progress"}"#,
            ),
        ];
        for (n, want) in cases {
            assert_eq!(serde_json::to_string(&n).expect("serialise"), want);
            assert_eq!(Value::from(n).to_string(), want);
        }
    }

    fn cur() -> SubjectStanding {
        SubjectStanding::Current(ReceiptStanding::Missing)
    }

    #[test]
    fn a_subject_that_is_not_current_or_changes_a_protected_path_is_a_checkpoint() {
        let pending = Standing::Claimable { collected: true };
        for s in [SubjectStanding::NoCheckpoint, SubjectStanding::Superseded] {
            assert_eq!(decide(s, [("t1", &pending)]), Next::checkpoint());
        }
        let p = decide(SubjectStanding::ProtectedPathChanged, [("t1", &pending)]);
        assert_eq!(p.operation, "checkpoint");
        assert_eq!(p.without_reason(), Next::checkpoint());
    }

    #[test]
    fn a_pending_collected_task_is_a_collector_claim_and_an_agent_owned_one_is_none() {
        let c = Standing::Claimable { collected: true };
        assert_eq!(
            decide(cur(), [("t1", &c)]),
            Next::task("collector_claim", "t1")
        );
        let a = Standing::Claimable { collected: false };
        assert_eq!(decide(cur(), [("t1", &a)]), Next::none());
    }

    #[test]
    fn an_unresolved_older_subject_is_reconciled_by_its_task() {
        let p = Standing::PriorUnresolved("old".into());
        assert_eq!(decide(cur(), [("t1", &p)]), Next::task("reconcile", "old"));
    }

    #[test]
    fn an_uncertain_attempt_is_reconciled_and_a_live_one_waits() {
        assert_eq!(
            decide(cur(), [("t1", &Standing::Uncertain)]),
            Next::task("reconcile", "t1")
        );
        let n = decide(cur(), [("t1", &Standing::InProgress)]);
        assert_eq!(n, Next::none());
        assert_eq!(
            for_task("t1", &Standing::InProgress),
            Next::because("none", "attempt_in_progress")
        );
    }

    #[test]
    fn a_finished_failed_attempt_is_none_a_failed_review_too() {
        let f = Standing::Failed { review: false };
        assert_eq!(decide(cur(), [("t1", &f)]), Next::none());
        let r = Standing::Failed { review: true };
        assert_eq!(decide(cur(), [("t1", &r)]), Next::none());
        // A dependant of a failed task is not claimable: still none.
        let d = Standing::DependencyIncomplete;
        assert_eq!(decide(cur(), [("t1", &f), ("t2", &d)]), Next::none());
    }

    #[test]
    fn the_first_task_with_an_operation_wins() {
        let live = Standing::InProgress;
        let pending = Standing::Claimable { collected: true };
        assert_eq!(
            decide(cur(), [("t1", &live), ("t2", &pending)]),
            Next::task("collector_claim", "t2")
        );
    }

    #[test]
    fn every_task_succeeded_is_finalize_until_a_current_receipt_then_none() {
        let ok = Standing::Succeeded;
        assert_eq!(decide(cur(), [("t1", &ok)]), Next::op("collector_finalize"));
        assert_eq!(decide(cur(), []), Next::op("collector_finalize"));
        let q = SubjectStanding::Current(ReceiptStanding::Current);
        assert_eq!(decide(q, [("t1", &ok)]), Next::none());
        let u = SubjectStanding::Current(ReceiptStanding::Unbuildable);
        assert_eq!(decide(u, [("t1", &ok)]), Next::none());
    }

    #[test]
    fn only_the_five_operations_come_out() {
        let all = [
            Standing::Claimable { collected: true },
            Standing::Claimable { collected: false },
            Standing::DependencyIncomplete,
            Standing::PriorUnresolved("p".into()),
            Standing::InProgress,
            Standing::Uncertain,
            Standing::Succeeded,
            Standing::Failed { review: false },
            Standing::Failed { review: true },
            Standing::Blocked,
        ];
        for s in &all {
            let n = decide(cur(), [("t", s)]);
            assert!(
                matches!(
                    n.operation,
                    "collector_claim" | "reconcile" | "collector_finalize" | "checkpoint" | "none"
                ),
                "{n:?}"
            );
            assert_eq!(
                n.task_id.is_some(),
                matches!(n.operation, "collector_claim" | "reconcile")
            );
        }
    }

    #[test]
    fn hints_name_commands_of_this_cli() {
        assert_eq!(
            hint(&Next::task("collector_claim", "t1"), "c").as_deref(),
            Some("agent-task collector-claim t1")
        );
        assert_eq!(
            hint(&Next::op("collector_finalize"), "c").as_deref(),
            Some("agent-task finalize --change c")
        );
        assert_eq!(hint(&Next::none(), "c"), None);
    }
}
