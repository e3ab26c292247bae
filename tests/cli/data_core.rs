//! The data node through the real binary: record ids, collections,
//! collect, exact reads, query, the change feed and tombstones.

use crate::common::data_core::*;
use crate::common::repo_root;
use serde_json::{Value, json};

#[test]
fn record_ids_match_the_reference_vectors() {
    let env = data_env();
    let doc: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("fixtures/agent-data-record-ids.json")).expect("fixture"),
    )
    .expect("json");
    for v in doc["vectors"].as_array().expect("vectors") {
        let c = &v["collection"];
        let id = c["id"].as_str().expect("id");
        if id != "default" {
            let out = env.run(&[
                "data",
                "collection",
                "create",
                "--id",
                id,
                "--schema-version",
                c["schema"]["version"].as_str().expect("v"),
            ]);
            assert_eq!(out.code, 0, "{out}");
        }
        let r = collect(&env, id, &v["input"]);
        assert_eq!(r["inserted"], 1, "{}", v["name"]);
        let rec = &r["records"][0];
        assert_eq!(rec["id"], v["id"], "vector {}", v["name"]);
        assert_eq!(rec["content"]["sha256"], v["sha256"]);
        assert_eq!(
            rec["content"]["blob_ref"],
            format!("sha256:{}", v["sha256"].as_str().expect("s"))
        );
    }
    // Vector B again with other metadata: same id, first envelope kept.
    let b = &doc["vectors"][1];
    let mut input = b["input"].clone();
    input["metadata"] = json!({"refresh_marker": "must_not_replace_first_envelope"});
    input["observed_at"] = json!("2027-01-01T00:00:00Z");
    let again = collect(&env, "notes", &input);
    assert_eq!(again["inserted"], 0);
    assert_eq!(again["existing"], 1);
    assert_eq!(again["records"][0]["id"], b["id"]);
    assert_eq!(
        again["records"][0]["metadata"],
        json!({"lang": "en", "tags": ["x"]})
    );
    assert_eq!(
        again["records"][0]["observed_at"],
        "2026-07-11T09:00:00.000Z"
    );
    // No second event for the re-collect: 4 vectors, 4 events.
    assert_eq!(all_changes(&env).len(), 4);
}

#[test]
fn lifecycle_read_feed_tombstone() {
    let env = data_env();
    env.run(&["data", "collection", "create", "--id", "scratch"])
        .json();
    let doomed = collect(
        &env,
        "scratch",
        &json!({"text": "agent data conformance sentinel doomed", "key": "k-doomed", "version": "1"}),
    );
    let control = collect(
        &env,
        "scratch",
        &json!({"text": "agent data conformance sentinel control"}),
    );
    collect(&env, "default", &json!({"text": "elsewhere"}));
    let d = doomed["records"][0]["id"].as_str().expect("id").to_owned();
    let c = control["records"][0]["id"].as_str().expect("id").to_owned();
    assert!(
        doomed["records"][0].get("observed_at").is_none(),
        "text must not invent observed_at"
    );

    // Exact read verifies and returns utf8 bytes.
    let got = env.run(&["data", "get", &d]).json();
    assert_eq!(
        got["content"],
        json!({"encoding": "utf8", "data": "agent data conformance sentinel doomed"})
    );
    assert_eq!(got["record"], doomed["records"][0]);
    let out = env.path("doomed.bin");
    let w = env
        .run(&["data", "get", &c, "--content-out", out.to_str().expect("p")])
        .json();
    assert_eq!(w["size"], 39);
    assert_eq!(
        std::fs::read(&out).expect("read"),
        b"agent data conformance sentinel control"
    );

    // Filtered paging, limit 1, replay-stable cursors.
    let p1 = changes(&env, &["--collection", "scratch", "--limit", "1"]);
    assert_eq!(p1["has_more"], true);
    assert_eq!(p1["changes"][0]["record_id"], d.as_str());
    assert_eq!(p1["changes"][0]["type"], "record.created");
    assert_eq!(p1["changes"][0]["id"], "change_1");
    assert_eq!(p1["changes"][0]["record"], doomed["records"][0]);
    let cur1 = p1["cursor"].as_str().expect("cursor");
    let p2 = changes(
        &env,
        &["--collection", "scratch", "--limit", "1", "--cursor", cur1],
    );
    assert_eq!(
        p2,
        changes(
            &env,
            &["--collection", "scratch", "--limit", "1", "--cursor", cur1]
        )
    );
    assert_eq!(p2["changes"][0]["record_id"], c.as_str());
    assert!(p2["changes"][0]["sequence"].as_i64() > p1["changes"][0]["sequence"].as_i64());
    let cur2 = p2["cursor"].as_str().expect("cursor");
    let p3 = changes(
        &env,
        &["--collection", "scratch", "--limit", "1", "--cursor", cur2],
    );
    assert_eq!(p3["changes"], json!([]));
    assert_eq!(p3["has_more"], false);
    assert_eq!(p3["cursor"], cur2, "an empty page repeats the position");
    // The filtered cursor is refused without the filter, and with another one.
    env.run(&["data", "changes", "--cursor", cur2])
        .error("invalid_cursor", 65);
    env.run(&[
        "data",
        "changes",
        "--collection",
        "default",
        "--cursor",
        cur2,
    ])
    .error("invalid_cursor", 65);
    env.run(&["data", "changes", "--cursor", "not-an-agent-data-cursor"])
        .error("invalid_cursor", 65);
    env.run(&["data", "changes", "--limit", "1001"])
        .error("limit_exceeded", 65);
    env.run(&["data", "changes", "--collection", ""])
        .error("invalid_collection_id", 65);
    env.run(&["data", "changes", "--collection", "nope"])
        .error("collection_not_found", 66);

    // Query by id.
    let q =
        json!({"collections": ["scratch"], "where": {"id": d}, "consistency": "local", "limit": 1})
            .to_string();
    let hits = env.run(&["data", "query", &q]).json();
    assert_eq!(hits["records"].as_array().expect("a").len(), 1);
    assert_eq!(hits["records"][0]["record"], doomed["records"][0]);

    // Reason over 1000 UTF-16 units: refused, nothing written.
    let long = "x".repeat(1001);
    env.run(&["data", "tombstone", &d, "--reason", &long])
        .error("invalid_request", 65);
    let emoji = "😀".repeat(501); // 1002 UTF-16 units, 501 chars
    env.run(&["data", "tombstone", &d, "--reason", &emoji])
        .error("invalid_request", 65);
    assert_eq!(
        changes(&env, &["--collection", "scratch", "--cursor", cur2])["changes"],
        json!([])
    );
    env.run(&["data", "get", &d]).json();

    let t = env
        .run(&["data", "tombstone", &d, "--reason", "conformance"])
        .json();
    assert_eq!(t["tombstoned"], true);
    assert_eq!(t["tombstone"]["reason"], "conformance");
    assert_eq!(t["tombstone"]["collection_id"], "scratch");
    env.run(&["data", "get", &d]).error("record_tombstoned", 66);
    let hits = env.run(&["data", "query", &q]).json();
    assert_eq!(hits["records"], json!([]));
    let ev = changes(&env, &["--collection", "scratch", "--cursor", cur2]);
    assert_eq!(ev["changes"].as_array().expect("a").len(), 1);
    assert_eq!(ev["changes"][0]["type"], "record.tombstoned");
    assert_eq!(ev["changes"][0]["tombstone"], t["tombstone"]);
    let cur3 = ev["cursor"].as_str().expect("c").to_owned();
    // Idempotent: first tombstone returned verbatim, no event.
    let again = env
        .run(&[
            "data",
            "tombstone",
            &d,
            "--reason",
            "a later reason must not rewrite the first",
        ])
        .json();
    assert_eq!(again, t);
    assert_eq!(
        changes(&env, &["--collection", "scratch", "--cursor", &cur3])["changes"],
        json!([])
    );
    // Re-collecting tombstoned content does not resurrect it.
    let re = collect(
        &env,
        "scratch",
        &json!({"text": "agent data conformance sentinel doomed", "key": "k-doomed", "version": "1"}),
    );
    assert_eq!(re["existing"], 1);
    env.run(&["data", "get", &d]).error("record_tombstoned", 66);
    // Supersession may point at a tombstoned record, but not across collections.
    let sup = collect(&env, "scratch", &json!({"text": "v2", "supersedes_id": d}));
    assert_eq!(sup["records"][0]["supersedes_id"], d.as_str());
    let other = collect_run(&env, "default", &json!({"text": "v3", "supersedes_id": d}));
    other.error("superseded_record_collection_mismatch", 65);
    let missing = format!("rec_{}", "0".repeat(64));
    collect_run(
        &env,
        "default",
        &json!({"text": "v3", "supersedes_id": missing}),
    )
    .error("superseded_record_not_found", 65);
    env.run(&["data", "tombstone", &missing])
        .error("record_not_found", 66);
    env.run(&["data", "get", "rec_XYZ"])
        .error("invalid_record_id", 65);
    env.run(&["data", "tombstone", "nope"])
        .error("invalid_record_id", 65);
}

#[test]
fn collections_and_policies() {
    let env = data_env();
    let list = env.run(&["data", "collection", "list"]).json();
    assert_eq!(list["collections"][0]["id"], "default");
    assert_eq!(list["collections"][0]["name"], "Default");
    let def = env.path("c.json");
    std::fs::write(&def, r#"{"id":"pics","schema":{"version":"2"},"policy":{"allowed_media_types":["IMAGE/PNG"],"max_record_bytes":8},"extra":true}"#).expect("w");
    let created = env
        .run(&[
            "data",
            "collection",
            "create",
            "--file",
            def.to_str().expect("p"),
        ])
        .json();
    assert_eq!(created["created"], true);
    assert_eq!(
        created["collection"]["policy"]["allowed_media_types"],
        json!(["image/png"])
    );
    let again = env
        .run(&[
            "data",
            "collection",
            "create",
            "--file",
            def.to_str().expect("p"),
        ])
        .json();
    assert_eq!(again["created"], false);
    assert_eq!(
        again["collection"]["created_at"],
        created["collection"]["created_at"]
    );
    env.run(&[
        "data",
        "collection",
        "create",
        "--id",
        "pics",
        "--schema-version",
        "3",
    ])
    .error("collection_conflict", 65);
    env.run(&["data", "collection", "create", "--id=-bad"])
        .error("invalid_collection_id", 65);

    let run = |coll: &str, input: Value| {
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
    };
    run(
        "pics",
        json!({"text": "123456789", "media_type": "image/png"}),
    )
    .error("content_too_large", 65);
    run("pics", json!({"text": "1234", "media_type": "text/plain"}))
        .error("media_type_not_allowed", 65);
    run("pics", json!({"text": "1234", "media_type": "not a type"}))
        .error("invalid_media_type", 65);
    let ok = run(
        "pics",
        json!({"text": "café", "media_type": "Image/PNG; x=1"}),
    )
    .json();
    let id = ok["records"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(
        env.run(&["data", "get", &id]).json()["content"],
        json!({"encoding": "base64", "data": "Y2Fmw6k="})
    );
    // An empty allow-list denies every type.
    env.run(&[
        "data",
        "collection",
        "create",
        "--id",
        "closed",
        "--allowed-media-type",
        "",
    ])
    .json();
    run("closed", json!({"text": "x"})).error("media_type_not_allowed", 65);
    // Input validation.
    run("default", json!({"text": ""})).error("invalid_input", 65);
    run("default", json!({"text": "x", "key": ""})).error("invalid_input", 65);
    run("default", json!({"text": "x", "metadata": []})).error("invalid_json", 65);
    run(
        "default",
        json!({"text": "x", "observed_at": "2026-01-01T00:00:00"}),
    )
    .error("invalid_date", 65);
    run(
        "default",
        json!({"text": "x", "provenance": [{"activity": "a"}]}),
    )
    .error("invalid_input", 65);
    run(
        "default",
        json!({"text": "x", "provenance": [{"activity": "a", "at": "yesterday"}]}),
    )
    .error("invalid_date", 65);
    run("nope", json!({"text": "x"})).error("collection_not_found", 66);
    env.run(&[
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "nope",
        "--input",
        "{}",
    ])
    .error("collector_not_found", 66);
    env.run(&[
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--input",
        "[1]",
    ])
    .error("invalid_json", 65);
    // Nothing above was written except the one PNG record.
    assert_eq!(all_changes(&env).len(), 1);
}

#[test]
fn query_semantics() {
    let env = data_env();
    for t in [
        "Sunflower protocol café",
        "foo-bar baz hello.world",
        "sunflower sunflower sunflower field",
        "a sunflower in a very long field of many other words and more",
    ] {
        collect(&env, "default", &json!({"text": t}));
    }
    collect(
        &env,
        "default",
        &json!({"text": "tagged", "metadata": {"tags": ["x", "y"], "n": 2}}),
    );
    let q = |body: Value| env.run(&["data", "query", &body.to_string()]).json();
    let texts = |v: &Value| -> Vec<String> {
        v["records"]
            .as_array()
            .expect("a")
            .iter()
            .map(|h| {
                h["record"]["source"]["uri"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    let all = q(json!({}));
    assert_eq!(all["records"].as_array().expect("a").len(), 5);
    assert!(all["records"][0].get("score").is_none());
    assert_eq!(
        all["records"][0]["record"]["metadata"]["n"], 2,
        "newest first"
    );
    let sun = q(json!({"text": "sunflower"}));
    let hits = sun["records"].as_array().expect("a");
    assert_eq!(hits.len(), 3);
    let scores: Vec<f64> = hits
        .iter()
        .map(|h| h["score"].as_f64().expect("score"))
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]) && scores.iter().all(|s| *s >= 0.0),
        "{scores:?}"
    );
    assert_eq!(q(json!({"text": "sun"}))["records"], json!([]));
    assert_eq!(
        q(json!({"text": "cafe"}))["records"]
            .as_array()
            .expect("a")
            .len(),
        1
    );
    assert_eq!(
        q(json!({"text": "ＳＵＮＦＬＯＷＥＲ field"}))["records"]
            .as_array()
            .expect("a")
            .len(),
        2
    );
    assert_eq!(q(json!({"text": "world.hello"}))["records"], json!([]));
    assert_eq!(
        q(json!({"text": "hello.world"}))["records"]
            .as_array()
            .expect("a")
            .len(),
        1
    );
    assert_eq!(q(json!({"text": "***"}))["records"], json!([]));
    assert_eq!(q(json!({"text": "sunflower !!!"}))["records"], json!([]));
    assert_eq!(
        q(json!({"text": "urn"}))["records"]
            .as_array()
            .expect("a")
            .len(),
        5
    );
    assert_eq!(
        q(json!({"text": "tags"}))["records"]
            .as_array()
            .expect("a")
            .len(),
        1
    );
    assert_eq!(
        q(json!({"where": {"metadata": {"tags": ["x", "y"]}}}))["records"]
            .as_array()
            .expect("a")
            .len(),
        1
    );
    assert_eq!(
        q(json!({"where": {"metadata": {"tags": ["y", "x"]}}}))["records"],
        json!([])
    );
    assert_eq!(q(json!({"where": {"key": null}}))["records"], json!([]));
    assert_eq!(
        q(json!({"where": {"metadata": {"n": 2.0}}}))["records"]
            .as_array()
            .expect("a")
            .len(),
        1
    );
    assert_eq!(
        q(json!({"text": "sunflower", "collections": []}))["records"],
        json!([])
    );
    assert_eq!(texts(&q(json!({"limit": 2}))).len(), 2);
    assert_eq!(
        q(json!({"limit": null}))["records"]
            .as_array()
            .expect("a")
            .len(),
        5
    );
    let e = |body: Value, code: &str| {
        env.run(&["data", "query", &body.to_string()]).error(
            code,
            if code == "collection_not_found" {
                66
            } else {
                65
            },
        )
    };
    e(json!({"collections": [], "limit": 101}), "limit_exceeded");
    e(json!({"limit": 0}), "invalid_number");
    e(json!({"limit": "5"}), "invalid_number");
    e(json!({"limit": 1.5}), "invalid_number");
    e(json!({"consistency": null}), "unsupported_consistency");
    e(
        json!({"consistency": "eventual"}),
        "unsupported_consistency",
    );
    e(json!({"collections": "default"}), "invalid_request");
    e(json!({"collections": ["-x"]}), "invalid_collection_id");
    e(json!({"collections": ["nope"]}), "collection_not_found");
    e(json!({"where": []}), "invalid_json");
    e(json!({"text": 5}), "invalid_request");
}

#[test]
fn concurrent_processes_collect_one_record() {
    let env = data_env();
    let spawned: Vec<_> = (0..8)
        .map(|i| {
            std::process::Command::new(crate::common::bin())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .args([
                    "--data-dir",
                    env.data_dir.to_str().expect("p"),
                    "--lock-timeout-ms",
                    "60000",
                    "data",
                    "collect",
                    "--collection",
                    "default",
                    "--collector",
                    "text",
                    "--input",
                    &json!({"text": "concurrent", "metadata": {"writer": i}}).to_string(),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    let mut inserted = 0;
    for c in spawned {
        let out = c.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        inserted += v["inserted"].as_i64().expect("n");
        ids.insert(v["records"][0]["id"].as_str().expect("id").to_owned());
    }
    assert_eq!(ids.len(), 1);
    assert_eq!(inserted, 1, "exactly one process inserted");
    assert_eq!(all_changes(&env).len(), 1);
}

/// Records are keyed by the 32 bytes their id names (data schema 5), which
/// an id in upper case shares: such an id is refused as malformed
/// wherever it is given, and never reaches, reads or changes the record.
#[test]
fn an_id_in_upper_case_is_not_the_record() {
    let env = data_env();
    let r = collect(&env, "default", &json!({"text": "case sentinel"}));
    let id = r["records"][0]["id"].as_str().expect("id").to_owned();
    let upper = format!("rec_{}", id["rec_".len()..].to_ascii_uppercase());
    assert_ne!(upper, id);
    env.run(&["data", "get", &upper])
        .error("invalid_record_id", 65);
    env.run(&["data", "tombstone", &upper])
        .error("invalid_record_id", 65);
    collect_run(
        &env,
        "default",
        &json!({"text": "a successor", "supersedes_id": upper}),
    )
    .error("invalid_record_id", 65);
    // Nothing changed: the record reads, untombstoned; one event.
    let got = env.run(&["data", "get", &id]).json();
    assert_eq!(got["record"]["id"], id.as_str());
    assert_eq!(got["content"]["data"], "case sentinel");
    let events = all_changes(&env);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["record_id"], id.as_str());
    // The same content collected again is the same record.
    let again = collect(&env, "default", &json!({"text": "case sentinel"}));
    assert_eq!(again["existing"], 1);
    assert_eq!(again["records"][0]["id"], id.as_str());
}
