//! The retained collector state of an execution, and the crash-hook variable
//! the fault tests set. Moved from `collect_faults.rs`, whose tests and others
//! share it.

use crate::common::collect_flow::Loop;
use serde_json::Value;

/// A claimed, collected and signed transfer that was never uploaded.
pub fn retained(l: &Loop) -> (Value, Vec<u8>, String) {
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let out = l.agent_env(
        &[(CRASH, "after_sign")],
        &[
            "collect",
            "--descriptor",
            dp.to_str().expect("utf8"),
            "--collector-dir",
            l.collector.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.code, -1, "killed by SIGKILL: {out}");
    let bytes = l.read_retained(&d, "transfer").expect("retained transfer");
    (d, bytes, t)
}

pub const CRASH: &str = "AGENT_TASK_TEST_CRASH_AT";
