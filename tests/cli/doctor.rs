//! `agent-task data doctor` through the real binary against the in-test
//! fake node (`doctor_fake`). Every report is validated against
//! `fixtures/agent-data-conformance-report-v1.schema.json`.

use crate::common::doctor_fake::{FakeConfig, FakeNode, Faults};
use crate::common::{Output, TestEnv, repo_root, run_cmd};
use serde_json::Value;
use std::net::TcpListener;

const TOKEN: &str = "fake-node-bearer-0123456789";

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        repo_root().join("fixtures/agent-data-conformance-report-v1.schema.json"),
    )
    .expect("schema fixture");
    let schema: Value = serde_json::from_str(&text).expect("schema JSON");
    jsonschema::validator_for(&schema).expect("valid schema")
}

/// Runs the doctor with `args`, the bearer in `AGENT_DATA_NODE_TOKEN`.
fn doctor(args: &[&str]) -> Output {
    let env = TestEnv::new();
    let mut c = env.bare_cmd();
    c.args(["data", "doctor"]).args(args);
    c.env("AGENT_DATA_NODE_TOKEN", TOKEN);
    run_cmd(&mut c)
}

/// The report on stdout, schema-checked, with its exit code checked.
fn report(out: &Output, exit: i32) -> Value {
    assert_eq!(out.code, exit, "{out}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    let errors: Vec<String> = schema().iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "report violates the schema: {errors:?}\n{out}"
    );
    assert_eq!(v["tool"]["name"], "agent-task");
    assert!(
        !out.stdout.contains(TOKEN),
        "the bearer must never be reported"
    );
    v
}

fn status_of<'a>(report: &'a Value, id: &str) -> (&'a str, Option<&'a str>) {
    let c = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    (
        c["status"].as_str().expect("status"),
        c["reason_code"].as_str(),
    )
}

fn all_status(report: &Value, want: &str) -> bool {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|c| c["status"] == want)
}

fn slice1_args(origin: &str) -> Vec<String> {
    [
        origin,
        "--profile",
        "slice1",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
        "--scratch-collection",
        "scratch",
        "--expected-node-id",
        "node_fake-1",
        "--allow-mutations",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[test]
fn public_profile_passes_against_a_conforming_node() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let out = doctor(&[&node.origin, "--format", "json"]);
    let r = report(&out, 0);
    assert_eq!(r["verdict"], "pass");
    assert_eq!(r["checks"].as_array().expect("checks").len(), 16);
    assert!(all_status(&r, "pass"), "{out}");
    assert_eq!(r["summary"]["passed"], 16);
    assert_eq!(r["target"]["origin"], node.origin);
    assert_eq!(r["target"]["node_id"], "node_fake-1");
    assert_eq!(r["authorization"]["scheme"], "none");
    assert_eq!(r["run"]["mutating"], false);
    assert_eq!(r["mutation"]["requested"], false);
}

#[test]
fn public_profile_accepts_a_node_without_a_bearer_but_read_is_inconclusive() {
    let node = FakeNode::start(FakeConfig {
        token: None,
        ..FakeConfig::conforming(TOKEN)
    });
    let r = report(&doctor(&[&node.origin]), 0);
    assert!(all_status(&r, "pass"));
    let out = doctor(&[
        &node.origin,
        "--profile",
        "read",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
    ]);
    let r = report(&out, 3);
    assert_eq!(r["verdict"], "inconclusive");
    assert_eq!(
        status_of(&r, "auth.missing_bearer.collections"),
        ("inconclusive", Some("data_auth_not_configured"))
    );
}

#[test]
fn read_profile_passes_with_the_bearer_from_env_or_stdin() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let out = doctor(&[
        &node.origin,
        "--profile",
        "read",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
    ]);
    let r = report(&out, 0);
    assert_eq!(r["checks"].as_array().expect("checks").len(), 25);
    assert_eq!(r["summary"]["passed"], 23);
    assert_eq!(r["summary"]["skipped"], 2);
    assert_eq!(
        status_of(&r, "changes.page_shape"),
        ("skip", Some("requires_scratch_fixture"))
    );
    assert!(r.get("target").and_then(|t| t.get("node_id")).is_none());
    assert!(
        r["limitations"]
            .as_array()
            .expect("limitations")
            .contains(&Value::from("read_profile_avoids_live_change_envelopes"))
    );

    let env = TestEnv::new();
    let mut c = env.bare_cmd();
    c.args([
        "data",
        "doctor",
        &node.origin,
        "--profile",
        "read",
        "--token-stdin",
    ])
    .write_stdin(format!("{TOKEN}\n"));
    let r = report(&run_cmd(&mut c), 0);
    assert_eq!(r["authorization"]["provided"], true);
    assert_eq!(r["verdict"], "pass");
}

#[test]
fn a_rejected_bearer_is_inconclusive() {
    let node = FakeNode::start(FakeConfig::conforming("another-token"));
    let out = doctor(&[
        &node.origin,
        "--profile",
        "read",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
    ]);
    let r = report(&out, 3);
    assert_eq!(
        status_of(&r, "auth.valid_bearer.collections"),
        ("inconclusive", Some("credential_rejected"))
    );
    let (st, _) = status_of(&r, "errors.query_limit");
    assert_eq!(st, "inconclusive");
}

#[test]
fn slice1_passes_and_leaves_no_active_fixture() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let args = slice1_args(&node.origin);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = doctor(&args);
    let r = report(&out, 0);
    assert_eq!(r["checks"].as_array().expect("checks").len(), 39);
    assert!(all_status(&r, "pass"), "{out}");
    assert_eq!(r["target"]["node_id"], "node_fake-1");
    let m = &r["mutation"];
    assert_eq!(m["started"], true);
    assert_eq!(m["record_created"], true);
    assert_eq!(m["tombstone_appended"], true);
    assert_eq!(m["uncertain"], false);
    assert_eq!(m["fixture"]["owned_records"], 2);
    assert_eq!(m["fixture"]["tombstoned_records"], 2);
    assert_eq!(m["fixture"]["active_owned_records"], 0);
    // 2 created + 2 tombstoned events, nothing active.
    assert_eq!(node.scratch_counts(), (4, 0));
    // The report never carries server-assigned record ids.
    assert!(!out.stdout.contains("rec_"), "{out}");
}

#[test]
fn slice1_catches_a_recollect_that_replaces_the_envelope() {
    let node = FakeNode::start(FakeConfig {
        faults: Faults {
            recollect_replaces: true,
            ..Faults::default()
        },
        ..FakeConfig::conforming(TOKEN)
    });
    let args = slice1_args(&node.origin);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = report(&doctor(&args), 1);
    assert_eq!(status_of(&r, "records.collect_idempotent").0, "fail");
}

#[test]
fn slice1_catches_an_unbounded_tombstone_reason() {
    let node = FakeNode::start(FakeConfig {
        faults: Faults {
            unbounded_reason: true,
            ..Faults::default()
        },
        ..FakeConfig::conforming(TOKEN)
    });
    let args = slice1_args(&node.origin);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = report(&doctor(&args), 1);
    assert_eq!(
        status_of(&r, "tombstones.reason_limit_nonmutating"),
        ("fail", Some("unexpected_http_status"))
    );
    assert_eq!(
        status_of(&r, "tombstones.append_owned_fixture"),
        ("inconclusive", Some("prerequisite_inconclusive"))
    );
    // The control fixture is still cleaned up.
    assert_eq!(status_of(&r, "tombstones.fixture_finalization").0, "pass");
    assert_eq!(node.scratch_counts().1, 0);
}

#[test]
fn slice1_with_a_wrong_expected_node_is_inconclusive_and_writes_nothing() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let mut args = slice1_args(&node.origin);
    args[8] = "node_someone-else".into();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = report(&doctor(&args), 3);
    assert_eq!(
        status_of(&r, "records.fixture_prerequisite"),
        ("inconclusive", Some("expected_node_mismatch"))
    );
    assert_eq!(r["mutation"]["started"], false);
    assert!(r["target"].get("node_id").is_none());
    assert_eq!(node.scratch_counts(), (0, 0));
}

fn fault_report(faults: Faults, profile: &str, exit: i32) -> Value {
    let node = FakeNode::start(FakeConfig {
        faults,
        ..FakeConfig::conforming(TOKEN)
    });
    let mut args = vec![node.origin.as_str(), "--profile", profile];
    if profile != "public" {
        args.extend(["--token-env", "AGENT_DATA_NODE_TOKEN"]);
    }
    report(&doctor(&args), exit)
}

#[test]
fn broken_nodes_fail_the_checks_they_break() {
    let r = fault_report(
        Faults {
            no_challenge: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    for route in [
        "collections",
        "collect",
        "query",
        "record",
        "changes",
        "tombstone",
    ] {
        for kind in ["missing_bearer", "wrong_bearer"] {
            assert_eq!(
                status_of(&r, &format!("auth.{kind}.{route}")),
                ("fail", Some("missing_bearer_challenge"))
            );
        }
    }
    assert_eq!(status_of(&r, "discovery.well_known").0, "pass");

    let r = fault_report(
        Faults {
            parse_before_auth: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(
        status_of(&r, "auth.missing_bearer.collect"),
        ("fail", Some("unexpected_http_status"))
    );
    assert_eq!(status_of(&r, "auth.missing_bearer.collections").0, "pass");

    let r = fault_report(
        Faults {
            relative_endpoints: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(
        status_of(&r, "discovery.well_known"),
        ("fail", Some("manifest_endpoint_mismatch"))
    );
    assert_eq!(
        status_of(&r, "discovery.manifest_equivalence"),
        ("inconclusive", Some("prerequisite_inconclusive"))
    );
    assert_eq!(
        status_of(&r, "auth.missing_bearer.collections"),
        ("inconclusive", Some("prerequisite_inconclusive"))
    );

    let r = fault_report(
        Faults {
            expose_collections: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(
        status_of(&r, "discovery.manifest_privacy"),
        ("fail", Some("manifest_exposes_collections"))
    );

    let r = fault_report(
        Faults {
            redirect_manifest: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(
        status_of(&r, "discovery.versioned_manifest"),
        ("fail", Some("redirect_refused"))
    );
    assert_eq!(r["boundaries"]["followed_redirect_observed"], false);

    let r = fault_report(
        Faults {
            clamp_limits: true,
            ..Faults::default()
        },
        "read",
        1,
    );
    assert_eq!(
        status_of(&r, "errors.query_limit"),
        ("fail", Some("unexpected_http_status"))
    );
    assert_eq!(status_of(&r, "errors.change_limit").0, "pass");

    let r = fault_report(
        Faults {
            text_plain_responses: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(
        status_of(&r, "discovery.well_known"),
        ("fail", Some("invalid_response_content_type"))
    );
}

#[test]
fn differing_manifests_fail_equivalence() {
    let r = fault_report(
        Faults {
            versioned_differs: true,
            ..Faults::default()
        },
        "public",
        1,
    );
    assert_eq!(status_of(&r, "discovery.well_known").0, "pass");
    assert_eq!(status_of(&r, "discovery.versioned_manifest").0, "pass");
    assert_eq!(
        status_of(&r, "discovery.manifest_equivalence"),
        ("fail", Some("manifest_mismatch"))
    );
}

#[test]
fn two_transport_failures_open_the_auth_circuit() {
    let node = FakeNode::start(FakeConfig {
        faults: Faults {
            stall_data_routes: true,
            ..Faults::default()
        },
        ..FakeConfig::conforming(TOKEN)
    });
    let out = doctor(&[
        &node.origin,
        "--profile",
        "read",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
        "--timeout-ms",
        "2000",
    ]);
    let r = report(&out, 3);
    assert_eq!(status_of(&r, "discovery.well_known").0, "pass");
    assert_eq!(
        status_of(&r, "auth.missing_bearer.collections"),
        ("inconclusive", Some("request_timeout"))
    );
    assert_eq!(
        status_of(&r, "auth.wrong_bearer.collections"),
        ("inconclusive", Some("request_timeout"))
    );
    for id in [
        "auth.missing_bearer.collect",
        "auth.wrong_bearer.tombstone",
        "errors.query_limit",
    ] {
        assert_eq!(
            status_of(&r, id),
            ("inconclusive", Some("prerequisite_inconclusive")),
            "{id}"
        );
    }
    let blocked = r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "auth.valid_bearer.collections")
        .expect("check");
    assert_eq!(
        blocked["evidence"]["blocked_by"],
        "auth_transport_circuit_open"
    );
}

#[test]
fn an_oversized_response_is_inconclusive() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let r = report(&doctor(&[&node.origin, "--max-response-bytes", "64"]), 3);
    assert_eq!(
        status_of(&r, "discovery.well_known"),
        ("inconclusive", Some("response_too_large"))
    );
}

#[test]
fn an_unreachable_origin_is_inconclusive() {
    let origin = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let r = report(&doctor(&[&origin]), 3);
    assert_eq!(r["verdict"], "inconclusive");
    assert_eq!(
        status_of(&r, "discovery.well_known"),
        ("inconclusive", Some("request_failed"))
    );
    assert_eq!(
        status_of(&r, "auth.wrong_bearer.tombstone"),
        ("inconclusive", Some("prerequisite_inconclusive"))
    );
    assert!(r["target"].get("node_id").is_none());
}

#[test]
fn usage_and_credential_errors_exit_64() {
    let o = "http://127.0.0.1:9";
    doctor(&["http://example.com"]).error("insecure_target", 64);
    doctor(&["ftp://127.0.0.1"]).error("invalid_target_scheme", 64);
    doctor(&["http://u:p@127.0.0.1:9"]).error("target_url_credentials", 64);
    doctor(&["http://127.0.0.1:9/v1"]).error("target_not_origin", 64);
    doctor(&[]).error("usage", 64);
    doctor(&[o, "--profile", "nope"]).error("usage", 64);
    let out = doctor(&[o, "--token", "s3cret-value"]);
    out.error("credential_in_argv", 64);
    assert!(!out.stderr.contains("s3cret-value"), "{out}");
    let out = doctor(&[o, "--bearer=s3cret-value"]);
    out.error("credential_in_argv", 64);
    assert!(!out.stderr.contains("s3cret-value"), "{out}");
    doctor(&[o, "--token-stdin", "--token-env", "X"]).error("credential_source_conflict", 64);
    doctor(&[o, "--token-env", "AGENT_DATA_NODE_TOKEN"]).error("public_profile_token", 64);
    doctor(&[o, "--profile", "read"]).error("credential_source_missing", 64);
    doctor(&[o, "--profile", "read", "--token-env", "NOT_SET_ANYWHERE"])
        .error("credential_env_missing", 64);
    doctor(&[o, "--allow-mutations"]).error("mutation_option_without_slice1", 64);
    doctor(&[
        o,
        "--profile",
        "slice1",
        "--token-env",
        "AGENT_DATA_NODE_TOKEN",
        "--scratch-collection",
        "scratch",
    ])
    .error("mutation_gate_missing", 64);
    doctor(&[o, "--timeout-ms", "999999"]).error("usage", 64);

    let env = TestEnv::new();
    let mut c = env.bare_cmd();
    c.args(["data", "doctor", o, "--profile", "read", "--token-stdin"])
        .write_stdin("two words\n");
    run_cmd(&mut c).error("invalid_credential", 64);
    let mut c = env.bare_cmd();
    c.args(["data", "doctor", o, "--profile", "read", "--token-stdin"])
        .write_stdin("\n");
    run_cmd(&mut c).error("credential_not_single_line", 64);
}

#[test]
fn the_schema_fixture_differs_from_the_reference_only_in_the_tool_name() {
    let ours: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("fixtures/agent-data-conformance-report-v1.schema.json"),
        )
        .expect("fixture"),
    )
    .expect("json");
    let reference =
        repo_root().join("../shared/spec/vectors/agent-data-conformance-report-v1.schema.json");
    let Ok(text) = std::fs::read_to_string(&reference) else {
        // The shared spec folder sits beside the checkout only on project
        // machines; the fixture is still checked for the constant.
        assert_eq!(
            ours["properties"]["tool"]["properties"]["name"]["const"],
            "agent-task"
        );
        return;
    };
    let mut theirs: Value = serde_json::from_str(&text).expect("json");
    theirs["properties"]["tool"]["properties"]["name"]["const"] = "agent-task".into();
    assert_eq!(ours, theirs);
}

#[test]
fn slice1_with_an_unknown_scratch_collection_is_inconclusive() {
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let mut args = slice1_args(&node.origin);
    args[6] = "not-provisioned".into();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = report(&doctor(&args), 3);
    assert_eq!(
        status_of(&r, "records.fixture_prerequisite"),
        ("inconclusive", Some("scratch_collection_not_found"))
    );
    assert_eq!(
        status_of(&r, "tombstones.fixture_finalization"),
        ("inconclusive", Some("prerequisite_inconclusive"))
    );
    assert_eq!(r["mutation"]["started"], false);
    assert_eq!(r["mutation"]["scratch_collection"], "not-provisioned");
}

#[test]
fn the_library_runner_is_callable_without_the_cli() {
    use agent_task::doctor::{DoctorOptions, Profile, Verdict, run};
    let node = FakeNode::start(FakeConfig::conforming(TOKEN));
    let mut opts = DoctorOptions::new(format!("{}/", node.origin), Profile::Slice1);
    opts.token = Some(TOKEN.into());
    opts.scratch_collection = Some("default".into());
    opts.expected_node_id = Some("node_fake-1".into());
    opts.allow_mutations = true;
    opts.run_id = Some("lib-run-1".into());
    let report = run(&opts).expect("runs");
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.exit_code(), 0);
    let doc = serde_json::Value::Object(report.document);
    assert!(schema().is_valid(&doc));
    assert_eq!(doc["run"]["id"], "lib-run-1");
    assert_eq!(doc["mutation"]["fixture"]["run_id"], "lib-run-1");
    assert_eq!(doc["target"]["origin"], node.origin);
}
