//! Hostile requests against the data node that this product bounds beyond
//! the reference: text queries with too many terms.

use crate::data_core::{all_changes, collect, data_env};
use crate::data_support::{TOKEN, req, serve};
use serde_json::json;

fn terms(n: usize) -> String {
    (0..n)
        .map(|i| format!("t{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// 1,024 terms are a query; one more is `query_too_complex` (400), on the
/// CLI and over HTTP, also for a 120,000-term body just under 1 MiB that
/// used to take 25 s; the server keeps answering and nothing changes.
#[test]
fn text_queries_are_capped_at_1024_terms() {
    let env = data_env();
    collect(&env, "default", &json!({"text": "t1 t2 t3"}));
    let before = all_changes(&env);
    let hit = env.run(&["data", "query", "--text", "t1 t2 t3"]).json();
    assert_eq!(hit["records"].as_array().expect("r").len(), 1);
    env.run(&["data", "query", "--text", &terms(1024)]).json();
    let e = env
        .run(&["data", "query", "--text", &terms(1025)])
        .error("query_too_complex", 65);
    assert_eq!(e["details"]["max_terms"], 1024);

    let s = serve(&env, Some(TOKEN));
    let q = |text: &str| {
        req(
            &s.addr,
            "POST",
            "/v1/data/query",
            Some(TOKEN),
            Some(&json!({"text": text}).to_string()),
        )
    };
    q(&terms(1024)).ok();
    let huge = terms(120_000);
    assert!(huge.len() < 1024 * 1024);
    for text in [terms(1025), huge] {
        let v = q(&text).error(400, "query_too_complex");
        assert_eq!(v["details"]["max_terms"], 1024);
        let m = req(&s.addr, "GET", "/v1/data/manifest", None, None);
        assert_eq!(m.status, 200);
    }
    // Operator characters and extra spaces are not terms.
    q(&format!("{} - * ( ) \"", terms(1024))).ok();
    drop(s);
    assert_eq!(all_changes(&env), before);
}
