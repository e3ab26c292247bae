//! D. The slice1 fixture lifecycle (facts §15.4 D): owned caller-text
//! records in an operator-provisioned scratch collection, cursor paging,
//! exact reads, query, and the tombstone lifecycle. A mutating request
//! whose outcome is unknown is never retried; the run is marked uncertain.

use super::transport::{Answer, Auth, Probe, expect_error};
use super::validate::{self, ChangePage, is_timestamp};
use super::{Outcome, Runner};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::time::Instant;

type Step<T = ()> = std::result::Result<T, Outcome>;

/// Everything but `A-Za-z0-9-._~` is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// The fixture state carried between checks.
#[derive(Default)]
struct Fx {
    scratch: String,
    schema_version: String,
    baseline: String,
    doomed: Option<(String, Value)>,
    control: Option<(String, Value)>,
    terminal: String,
    created_confirmed: bool,
    read_confirmed: bool,
    tombstone_response: Option<Map<String, Value>>,
    after_tombstone: String,
}

fn text(run: &str, role: &str) -> String {
    format!("agent data conformance sentinel {run} {role}")
}

fn metadata(run: &str, role: &str) -> Value {
    json!({"agent_data_conformance": {
        "suite": super::SUITE_ID, "run_id": run, "role": role}})
}

fn input(run: &str, role: &str) -> Value {
    json!({
        "text": text(run, role),
        "media_type": "text/plain",
        "source_uri": format!("urn:agent-data:conformance:{run}:{role}"),
        "external_id": format!("{run}:{role}"),
        "key": format!("conformance-{run}-{role}"),
        "version": "1",
        "metadata": metadata(run, role),
    })
}

fn collect_body(scratch: &str, input: Value) -> Value {
    json!({"collection_id": scratch, "collector_id": "text", "input": input})
}

fn sha256_hex(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(b))
}

/// Runs D1..D16 in order.
pub(crate) fn run(r: &mut Runner) {
    let mut fx = Fx {
        scratch: r.opts.scratch_collection.clone().unwrap_or_default(),
        ..Fx::default()
    };
    let t = Instant::now();
    if let Err(reason) = prerequisites(r, &mut fx) {
        r.record(
            "changes.fixture_baseline",
            Outcome::blocked("records.fixture_prerequisite"),
            t,
        );
        r.record(
            "records.fixture_prerequisite",
            Outcome::inconclusive(reason),
            t,
        );
        block_rest(r, 2, "records.fixture_prerequisite");
        return;
    }
    let ok = r.check("changes.fixture_baseline", |r| baseline(r, &mut fx));
    if !ok {
        r.record(
            "records.fixture_prerequisite",
            Outcome {
                blocked_by: Some("changes.fixture_baseline".into()),
                ..Outcome::inconclusive("change_baseline_unavailable")
            },
            Instant::now(),
        );
        block_rest(r, 2, "changes.fixture_baseline");
        return;
    }
    r.check("records.fixture_prerequisite", |_| Ok(()));

    step(
        r,
        "records.collect_owned_fixture",
        &["records.fixture_prerequisite"],
        &mut fx,
        collect_doomed,
    );
    step(
        r,
        "records.collect_idempotent",
        &["records.collect_owned_fixture"],
        &mut fx,
        collect_again,
    );
    step(
        r,
        "records.collect_distinct_control",
        &["records.collect_owned_fixture"],
        &mut fx,
        collect_control,
    );
    step(
        r,
        "changes.fixture_create_pagination",
        &["records.collect_distinct_control"],
        &mut fx,
        create_pagination,
    );
    step(
        r,
        "changes.cursor_filter_binding",
        &["changes.fixture_create_pagination"],
        &mut fx,
        filter_binding,
    );
    step(
        r,
        "records.resolve_and_verify_digest",
        &["records.collect_distinct_control"],
        &mut fx,
        resolve,
    );
    // Ownership: the created event and the exact read both confirmed.
    if fx.created_confirmed && fx.read_confirmed {
        for (id, _) in [&fx.doomed, &fx.control].into_iter().flatten() {
            r.mutation.owned.push(id.clone());
        }
    }
    let owned = [
        "changes.fixture_create_pagination",
        "records.resolve_and_verify_digest",
    ];
    step(
        r,
        "query.owned_fixture_active",
        &owned,
        &mut fx,
        query_active,
    );
    step(
        r,
        "tombstones.reason_limit_nonmutating",
        &owned,
        &mut fx,
        reason_limit,
    );
    step(
        r,
        "tombstones.append_owned_fixture",
        &["tombstones.reason_limit_nonmutating"],
        &mut fx,
        append,
    );
    step(
        r,
        "tombstones.read_gone",
        &["tombstones.append_owned_fixture"],
        &mut fx,
        read_gone,
    );
    step(
        r,
        "tombstones.query_isolation",
        &["tombstones.append_owned_fixture"],
        &mut fx,
        query_isolation,
    );
    step(
        r,
        "tombstones.change_event",
        &["tombstones.append_owned_fixture"],
        &mut fx,
        change_event,
    );
    step(
        r,
        "tombstones.idempotent",
        &["tombstones.change_event"],
        &mut fx,
        idempotent,
    );
    let t = Instant::now();
    let o = match finalize(r, &fx) {
        Ok(()) => Outcome::pass(),
        Err(o) => o,
    };
    r.record("tombstones.fixture_finalization", o, t);
}

fn block_rest(r: &mut Runner, from: usize, by: &str) {
    for d in &super::checks::FIXTURE[from..] {
        r.record(d.id, Outcome::blocked(by), Instant::now());
    }
}

fn step(
    r: &mut Runner,
    id: &'static str,
    needs: &[&str],
    fx: &mut Fx,
    f: fn(&mut Runner, &mut Fx) -> Step,
) {
    if let Some(by) = needs.iter().find(|n| !r.passed(n)) {
        r.record(id, Outcome::blocked(by), Instant::now());
        return;
    }
    r.check(id, |r| f(r, fx));
}

fn prerequisites(r: &Runner, fx: &mut Fx) -> std::result::Result<(), &'static str> {
    if r.opts.token.is_none() {
        return Err("credential_missing");
    }
    let Some(m) = r.well_known.as_ref() else {
        return Err("manifest_unavailable");
    };
    if !r.discovery_verified {
        return Err("manifest_pair_not_verified");
    }
    let Some(cols) = r.collections.as_ref() else {
        return Err("collection_list_unavailable");
    };
    if m.get("node_id").and_then(Value::as_str) != r.opts.expected_node_id.as_deref() {
        return Err("expected_node_mismatch");
    }
    if !r.opts.allow_mutations {
        return Err("persistent_residue_not_acknowledged");
    }
    let text_advertised = m
        .get("collectors")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.get("collector_id").and_then(Value::as_str) == Some("text"))
        });
    if !text_advertised {
        return Err("text_collector_not_advertised");
    }
    let Some(col) = cols
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(fx.scratch.as_str()))
    else {
        return Err("scratch_collection_not_found");
    };
    let policy = col.get("policy");
    if let Some(types) = policy
        .and_then(|p| p.get("allowed_media_types"))
        .and_then(Value::as_array)
        && !types.iter().any(|t| t.as_str() == Some("text/plain"))
    {
        return Err("scratch_collection_rejects_text_plain");
    }
    let node_max = r.limit("max_record_bytes").unwrap_or(0);
    let col_max = policy
        .and_then(|p| p.get("max_record_bytes"))
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX);
    let longest = text(&r.run_id, "control").len() as u64;
    if node_max.min(col_max) < longest {
        return Err("scratch_collection_record_limit_too_small");
    }
    let body = collect_body(&fx.scratch, input(&r.run_id, "control")).to_string();
    let reason = json!({"reason": "x".repeat(1001)}).to_string();
    let need = body.len().max(reason.len()) as u64;
    if r.limit("max_body_bytes").unwrap_or(0) < need {
        return Err("scratch_fixture_exceeds_body_limit");
    }
    fx.schema_version = col
        .get("schema")
        .and_then(|s| s.get("version"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(())
}

fn change_limit(r: &Runner) -> u64 {
    r.limit("max_change_limit").unwrap_or(1).min(1000)
}

fn changes(
    r: &mut Runner,
    collection: Option<&str>,
    cursor: Option<&str>,
    limit: u64,
) -> Step<(Answer, ChangePage)> {
    let mut path = format!("/v1/data/changes?limit={limit}");
    if let Some(c) = collection {
        path.push_str(&format!("&collection_id={}", enc(c)));
    }
    if let Some(c) = cursor {
        path.push_str(&format!("&cursor={}", enc(c)));
    }
    let a = r.send(&Probe::get(path, Auth::Valid))?;
    if a.status != 200 {
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    let page = validate::change_page(&a.body, limit)?;
    Ok((a, page))
}

fn baseline(r: &mut Runner, fx: &mut Fx) -> Step {
    let limit = change_limit(r);
    let mut cursor: Option<String> = None;
    let scratch = fx.scratch.clone();
    for _ in 0..r.opts.max_change_pages {
        let (_, page) = changes(r, Some(&scratch), cursor.as_deref(), limit)?;
        if !page.has_more {
            fx.baseline = page.cursor;
            return Ok(());
        }
        cursor = Some(page.cursor);
    }
    Err(Outcome::inconclusive("change_baseline_page_cap_reached"))
}

/// A mutating POST: a lost or malformed answer marks the run uncertain.
fn mutate(r: &mut Runner, p: &Probe) -> Step<Answer> {
    r.mutation.started = true;
    match r.send(p) {
        Ok(a) => Ok(a),
        Err(o) => {
            r.mutation.uncertain = true;
            Err(o)
        }
    }
}

/// validateRecord of facts §15.4 D.
fn validate_record(rec: &Value, fx: &Fx, run: &str, role: &str) -> Step<String> {
    let bad = |what: &str| Outcome::fail(&format!("record_invalid_{what}"));
    let m = rec.as_object().ok_or_else(|| bad("shape"))?;
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    if s("protocol") != Some("agent-data/v1") {
        return Err(bad("protocol"));
    }
    let id = s("id")
        .filter(|i| !i.is_empty() && i.len() <= 1024)
        .ok_or_else(|| bad("id"))?;
    if s("collection_id") != Some(fx.scratch.as_str()) {
        return Err(bad("collection_id"));
    }
    let src = m.get("source").ok_or_else(|| bad("source"))?;
    let inp = input(run, role);
    if src.get("collector_id").and_then(Value::as_str) != Some("text")
        || src.get("uri") != inp.get("source_uri")
        || src.get("external_id") != inp.get("external_id")
    {
        return Err(bad("source"));
    }
    let body = text(run, role);
    let c = m.get("content").ok_or_else(|| bad("content"))?;
    if c.get("sha256").and_then(Value::as_str) != Some(sha256_hex(body.as_bytes()).as_str())
        || c.get("size").and_then(Value::as_u64) != Some(body.len() as u64)
        || c.get("media_type").and_then(Value::as_str) != Some("text/plain")
        || c.get("blob_ref")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(bad("content"));
    }
    if s("schema_version") != Some(fx.schema_version.as_str()) {
        return Err(bad("schema_version"));
    }
    if m.get("metadata") != Some(&metadata(run, role)) {
        return Err(bad("metadata"));
    }
    if m.get("key") != inp.get("key") || m.get("version") != inp.get("version") {
        return Err(bad("key_version"));
    }
    if m.contains_key("supersedes_id") {
        return Err(bad("supersedes_id"));
    }
    if m.get("provenance").is_some_and(|p| !p.is_array()) {
        return Err(bad("provenance"));
    }
    if m.get("signature").is_some_and(|p| !p.is_object()) {
        return Err(bad("signature"));
    }
    if !s("ingested_at").is_some_and(is_timestamp) {
        return Err(bad("ingested_at"));
    }
    if m.contains_key("observed_at") {
        return Err(bad("observed_at"));
    }
    Ok(id.to_owned())
}

fn collect(
    r: &mut Runner,
    fx: &Fx,
    role: &str,
    body_input: Value,
    inserted: u64,
) -> Step<(String, Value)> {
    let a = mutate(
        r,
        &Probe::post_json(
            "/v1/data/collect",
            Auth::Valid,
            &collect_body(&fx.scratch, body_input),
        ),
    )?;
    if a.status != 200 {
        if a.status >= 400 {
            // A definite refusal: nothing was created.
            return Err(Outcome::fail("unexpected_http_status").status(a.status));
        }
        r.mutation.uncertain = true;
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    let records = a.body.get("records").and_then(Value::as_array);
    let Some([rec]) = records.map(Vec::as_slice) else {
        r.mutation.uncertain = true;
        return Err(Outcome::fail("collect_records_invalid"));
    };
    let run = r.run_id.clone();
    let id = match validate_record(rec, fx, &run, role) {
        Ok(id) => id,
        Err(o) => {
            if let Some(id) = rec.get("id").and_then(Value::as_str) {
                push_unique(&mut r.mutation.created, id);
            }
            return Err(o);
        }
    };
    if inserted == 1 {
        push_unique(&mut r.mutation.created, &id);
    }
    let counts = (
        a.body.get("inserted").and_then(Value::as_u64),
        a.body.get("existing").and_then(Value::as_u64),
    );
    if counts != (Some(inserted), Some(1 - inserted)) {
        return Err(Outcome::fail("collect_counts_unexpected"));
    }
    if let Some(c) = a.body.get("cursor")
        && c.as_str().is_none_or(str::is_empty)
    {
        return Err(Outcome::fail("collect_cursor_invalid"));
    }
    Ok((id, rec.clone()))
}

fn push_unique(v: &mut Vec<String>, id: &str) {
    if !v.iter().any(|x| x == id) {
        v.push(id.to_owned());
    }
}

fn collect_doomed(r: &mut Runner, fx: &mut Fx) -> Step {
    let inp = input(&r.run_id, "doomed");
    fx.doomed = Some(collect(r, fx, "doomed", inp, 1)?);
    Ok(())
}

fn collect_again(r: &mut Runner, fx: &mut Fx) -> Step {
    let mut inp = input(&r.run_id, "doomed");
    inp["metadata"]["agent_data_conformance"]["refresh_marker"] =
        json!("must_not_replace_first_envelope");
    let (id, env) = collect(r, fx, "doomed", inp, 0)?;
    match &fx.doomed {
        Some((first_id, first)) if *first_id == id && *first == env => Ok(()),
        Some((first_id, _)) if *first_id != id => Err(Outcome::fail("recollect_id_changed")),
        _ => Err(Outcome::fail("recollect_envelope_changed")),
    }
}

fn collect_control(r: &mut Runner, fx: &mut Fx) -> Step {
    let inp = input(&r.run_id, "control");
    let (id, env) = collect(r, fx, "control", inp, 1)?;
    if fx.doomed.as_ref().is_some_and(|(d, _)| *d == id) {
        return Err(Outcome::fail("control_id_not_distinct"));
    }
    fx.control = Some((id, env));
    Ok(())
}

fn ids(fx: &Fx) -> Step<(String, Value, String, Value)> {
    match (&fx.doomed, &fx.control) {
        (Some((d, de)), Some((c, ce))) => Ok((d.clone(), de.clone(), c.clone(), ce.clone())),
        _ => Err(Outcome::inconclusive("fixture_state_missing")),
    }
}

fn create_pagination(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, doomed_env, control, control_env) = ids(fx)?;
    let scratch = fx.scratch.clone();
    let base = fx.baseline.clone();
    let (a1, p1) = changes(r, Some(&scratch), Some(&base), 1)?;
    let bad = |w: &str| Outcome::fail(&format!("create_page_{w}"));
    let [e1] = p1.changes.as_slice() else {
        return Err(bad("count"));
    };
    if !p1.has_more
        || e1.get("type").and_then(Value::as_str) != Some("record.created")
        || e1.get("record_id").and_then(Value::as_str) != Some(doomed.as_str())
        || e1.get("record") != Some(&doomed_env)
    {
        return Err(bad("first"));
    }
    let (a1b, _) = changes(r, Some(&scratch), Some(&base), 1)?;
    if a1b.body != a1.body {
        return Err(Outcome::fail("cursor_replay_unstable"));
    }
    let (_, p2) = changes(r, Some(&scratch), Some(&p1.cursor), 1)?;
    let [e2] = p2.changes.as_slice() else {
        return Err(bad("count"));
    };
    let seq = |e: &Map<String, Value>| e.get("sequence").and_then(Value::as_u64).unwrap_or(0);
    if e2.get("type").and_then(Value::as_str) != Some("record.created")
        || e2.get("record_id").and_then(Value::as_str) != Some(control.as_str())
        || e2.get("record").is_some_and(|rec| *rec != control_env)
        || seq(e2) <= seq(e1)
        || e2.get("id") == e1.get("id")
    {
        return Err(bad("second"));
    }
    let (_, p3) = changes(r, Some(&scratch), Some(&p2.cursor), 1)?;
    if !p3.changes.is_empty() || p3.has_more {
        return Err(bad("terminal"));
    }
    fx.terminal = p3.cursor;
    fx.created_confirmed = true;
    Ok(())
}

fn filter_binding(r: &mut Runner, fx: &mut Fx) -> Step {
    let path = format!("/v1/data/changes?cursor={}&limit=1", enc(&fx.terminal));
    let a = r.send(&Probe::get(path, Auth::Valid))?;
    expect_error(&a, 400, "invalid_cursor")
}

fn read(r: &mut Runner, id: &str) -> Step<Answer> {
    r.send(&Probe::get(
        format!("/v1/data/records/{}", enc(id)),
        Auth::Valid,
    ))
}

fn resolve(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, doomed_env, control, control_env) = ids(fx)?;
    let run = r.run_id.clone();
    for (id, env, role) in [
        (doomed, doomed_env, "doomed"),
        (control, control_env, "control"),
    ] {
        let a = read(r, &id)?;
        if a.status != 200 {
            return Err(Outcome::fail("unexpected_http_status").status(a.status));
        }
        if a.body.get("record") != Some(&env) {
            return Err(Outcome::fail("read_record_mismatch"));
        }
        let content = a
            .body
            .get("content")
            .ok_or_else(|| Outcome::fail("read_content_invalid"))?;
        let data = content
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| Outcome::fail("read_content_invalid"))?;
        let bytes = match content.get("encoding").and_then(Value::as_str) {
            Some("utf8") => data.as_bytes().to_vec(),
            Some("base64") => data_encoding::BASE64
                .decode(data.as_bytes())
                .map_err(|_| Outcome::fail("read_content_base64_invalid"))?,
            _ => return Err(Outcome::fail("read_content_encoding_invalid")),
        };
        let want = text(&run, role);
        if bytes != want.as_bytes()
            || env
                .get("content")
                .and_then(|c| c.get("sha256"))
                .and_then(Value::as_str)
                != Some(sha256_hex(&bytes).as_str())
            || env
                .get("content")
                .and_then(|c| c.get("size"))
                .and_then(Value::as_u64)
                != Some(bytes.len() as u64)
        {
            return Err(Outcome::fail("read_digest_mismatch"));
        }
    }
    fx.read_confirmed = true;
    Ok(())
}

fn query_hits(r: &mut Runner, fx: &Fx, id: &str) -> Step<Vec<Value>> {
    let a = r.send(&Probe::post_json(
        "/v1/data/query",
        Auth::Valid,
        &json!({"collections": [fx.scratch], "where": {"id": id}, "consistency": "local", "limit": 1}),
    ))?;
    if a.status != 200 {
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    if a.body.get("consistency").and_then(Value::as_str) != Some("local") {
        return Err(Outcome::fail("query_consistency_invalid"));
    }
    let hits = a
        .body
        .get("records")
        .and_then(Value::as_array)
        .ok_or_else(|| Outcome::fail("query_records_invalid"))?;
    for h in hits {
        if h.get("score")
            .is_some_and(|s| !s.as_f64().is_some_and(f64::is_finite))
        {
            return Err(Outcome::fail("query_score_invalid"));
        }
    }
    Ok(hits.clone())
}

fn query_active(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, doomed_env, _, _) = ids(fx)?;
    let hits = query_hits(r, fx, &doomed)?;
    match hits.as_slice() {
        [h] if h.get("record") == Some(&doomed_env) => Ok(()),
        _ => Err(Outcome::fail("query_hit_mismatch")),
    }
}

fn tombstone(r: &mut Runner, id: &str, reason: &str) -> Step<Answer> {
    mutate(
        r,
        &Probe::post_json(
            format!("/v1/data/records/{}/tombstone", enc(id)),
            Auth::Valid,
            &json!({ "reason": reason }),
        ),
    )
}

fn validate_tombstone(a: &Answer, id: &str, scratch: &str, reason: &str) -> Step {
    if a.status != 200 {
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    let t = a.body.get("tombstone");
    let ok = a.body.get("record_id").and_then(Value::as_str) == Some(id)
        && a.body.get("tombstoned") == Some(&Value::Bool(true))
        && t.and_then(|t| t.get("record_id")).and_then(Value::as_str) == Some(id)
        && t.and_then(|t| t.get("collection_id"))
            .and_then(Value::as_str)
            == Some(scratch)
        && t.and_then(|t| t.get("reason")).and_then(Value::as_str) == Some(reason)
        && t.and_then(|t| t.get("tombstoned_at"))
            .and_then(Value::as_str)
            .is_some_and(is_timestamp);
    if ok {
        Ok(())
    } else {
        Err(Outcome::fail("tombstone_response_invalid"))
    }
}

fn reason_limit(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, ..) = ids(fx)?;
    let a = tombstone(r, &doomed, &"x".repeat(1001))?;
    if a.status == 200 {
        r.mutation.tombstoned.push(doomed.clone());
    }
    expect_error(&a, 400, "invalid_request")?;
    let a = read(r, &doomed)?;
    if a.status != 200 {
        return Err(Outcome::fail("rejected_tombstone_mutated").status(a.status));
    }
    Ok(())
}

fn append(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, ..) = ids(fx)?;
    let reason = format!("agent-data conformance {}", r.run_id);
    let a = tombstone(r, &doomed, &reason)?;
    if a.status == 200 {
        push_unique(&mut r.mutation.tombstoned, &doomed);
    } else if a.status < 400 {
        r.mutation.uncertain = true;
    }
    validate_tombstone(&a, &doomed, &fx.scratch, &reason)?;
    fx.tombstone_response = Some(a.body);
    Ok(())
}

fn read_gone(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, ..) = ids(fx)?;
    let a = read(r, &doomed)?;
    expect_error(&a, 410, "record_tombstoned")
}

fn query_isolation(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, _, control, control_env) = ids(fx)?;
    if !query_hits(r, fx, &doomed)?.is_empty() {
        return Err(Outcome::fail("tombstoned_record_still_queryable"));
    }
    match query_hits(r, fx, &control)?.as_slice() {
        [h] if h.get("record") == Some(&control_env) => Ok(()),
        _ => Err(Outcome::fail("control_record_not_queryable")),
    }
}

fn change_event(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, ..) = ids(fx)?;
    let scratch = fx.scratch.clone();
    let terminal = fx.terminal.clone();
    let (_, p) = changes(r, Some(&scratch), Some(&terminal), 1)?;
    let want = fx
        .tombstone_response
        .as_ref()
        .and_then(|t| t.get("tombstone"))
        .cloned();
    let ok = match p.changes.as_slice() {
        [e] => {
            e.get("type").and_then(Value::as_str) == Some("record.tombstoned")
                && e.get("record_id").and_then(Value::as_str) == Some(doomed.as_str())
                && e.get("collection_id").and_then(Value::as_str) == Some(scratch.as_str())
                && e.get("tombstone").cloned() == want
        }
        _ => false,
    };
    if !ok {
        return Err(Outcome::fail("tombstone_event_invalid"));
    }
    let (_, p2) = changes(r, Some(&scratch), Some(&p.cursor), 1)?;
    if !p2.changes.is_empty() || p2.has_more {
        return Err(Outcome::fail("unexpected_extra_event"));
    }
    fx.after_tombstone = p2.cursor;
    Ok(())
}

fn idempotent(r: &mut Runner, fx: &mut Fx) -> Step {
    let (doomed, ..) = ids(fx)?;
    let a = tombstone(r, &doomed, "a later reason must not rewrite the first")?;
    if a.status != 200 {
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    if Some(&a.body) != fx.tombstone_response.as_ref() {
        return Err(Outcome::fail("tombstone_not_idempotent"));
    }
    let scratch = fx.scratch.clone();
    let after = fx.after_tombstone.clone();
    let (_, p) = changes(r, Some(&scratch), Some(&after), 1)?;
    if !p.changes.is_empty() || p.has_more {
        return Err(Outcome::fail("repeated_tombstone_appended_event"));
    }
    Ok(())
}

fn finalize(r: &mut Runner, fx: &Fx) -> Step {
    if !r.mutation.started {
        let first_blocker = super::checks::FIXTURE
            .iter()
            .map(|d| d.id)
            .find(|id| !r.passed(id))
            .unwrap_or("records.fixture_prerequisite");
        return Err(Outcome::blocked(first_blocker));
    }
    let active: Vec<String> = r
        .mutation
        .owned
        .iter()
        .filter(|id| !r.mutation.tombstoned.contains(id))
        .cloned()
        .collect();
    let reason = format!("agent-data conformance finalization {}", r.run_id);
    let mut failure = None;
    for id in active {
        let a = match tombstone(r, &id, &reason) {
            Ok(a) => a,
            Err(o) => {
                failure.get_or_insert(o);
                continue;
            }
        };
        if a.status == 200 {
            push_unique(&mut r.mutation.tombstoned, &id);
        }
        if let Err(o) = validate_tombstone(&a, &id, &fx.scratch, &reason) {
            failure.get_or_insert(o);
        }
    }
    if r.mutation.uncertain {
        return Err(Outcome::inconclusive("mutation_outcome_uncertain_no_retry"));
    }
    match failure {
        Some(o) => Err(o),
        None if r
            .mutation
            .created
            .iter()
            .any(|id| !r.mutation.owned.contains(id)) =>
        {
            Err(Outcome::inconclusive("unverified_fixture_remains"))
        }
        None => Ok(()),
    }
}
