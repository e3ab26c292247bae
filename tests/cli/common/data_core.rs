//! A data node environment and its collect and change-feed calls. Moved from
//! `data_core.rs`, whose tests and others share it.

use crate::common::TestEnv;
use serde_json::Value;

pub fn data_env() -> TestEnv {
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    env
}

pub fn collect(env: &TestEnv, coll: &str, input: &Value) -> Value {
    collect_run(env, coll, input).json()
}

/// Every change event after the start of the feed (unfiltered).
pub fn all_changes(env: &TestEnv) -> Vec<Value> {
    changes(env, &["--limit", "1000"])["changes"]
        .as_array()
        .expect("changes")
        .clone()
}

/// `data collect` of one text-collector input, its outcome unchecked.
pub fn collect_run(env: &TestEnv, coll: &str, input: &Value) -> crate::common::Output {
    env.run(&[
        "data",
        "collect",
        "--collection",
        coll,
        "--collector",
        "text",
        "--input",
        &input.to_string(),
    ])
}

pub fn changes(env: &TestEnv, args: &[&str]) -> Value {
    let mut a = vec!["data", "changes"];
    a.extend_from_slice(args);
    env.run(&a).json()
}
