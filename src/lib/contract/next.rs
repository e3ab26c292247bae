//! The typed next operation a workflow output names (its `next` member):
//! an operation, and the task or change it applies to, or why there is
//! none. Every producer of the hint builds one of these; the outputs that
//! carry it as JSON take it through `From<Next> for Value`.

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
}
