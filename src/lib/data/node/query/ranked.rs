//! Ranked text queries that do not score every match.
//!
//! FTS5 ranks `ORDER BY bm25 LIMIT n` by scoring every matching row, about
//! a microsecond each: 100 ms for a term every one of 100,000 records
//! holds. This path returns the same page (the same records, order and
//! scores, to the bit) while looking at a few rows, when the query allows
//! it to know every score without reading the index:
//!
//! - every phrase is a single ASCII token, so its token is known exactly
//!   (`fts::ascii_single_token`);
//! - every such token occurs at most once in any row (`fts5vocab` says its
//!   instance count equals its row count), so a matching row's phrase
//!   frequencies are all 1 and its bm25 score depends on its length alone
//!   ([`fts::bm25_score`], FTS5's arithmetic), and never increases with it;
//! - at least half of all rows match (so walking rows by length finds
//!   matches quickly), and so at least `SMALL` (fewer are cheap to score;
//!   `fts::plan` decides all this).
//!
//! It then walks rows in `record_doclen` order (length, then row id),
//! grouping lengths whose scores are the same double, so rows come out in
//! exactly FTS5's order: score descending, ties in row id order (the
//! sorter keeps ties in scan order, and a MATCH scan is in row id order).
//! A row is checked against `record_fts_docsize` (an entry left stale by a
//! re-index is skipped) and, unless every row holds every token, against
//! the MATCH itself. Anything else, or more than [`MAX_WASTE`] rows walked
//! that are not results, gives the query back to FTS5 (`Ok(None)`).

use crate::data::canon::where_needles;
use crate::data::fts;
use crate::error::Result;
use crate::store::{Connection, OptionalExtension};
use serde_json::{Map, Value};

/// Rows this path may walk and drop (not a match, or in a collection the
/// query does not ask for) before it gives the query back to FTS5.
const MAX_WASTE: usize = 256;

fn next_length(c: &Connection, after: Option<i64>) -> Result<Option<i64>> {
    Ok(
        c.prepare_cached("SELECT ntok FROM record_doclen WHERE ntok > ?1 ORDER BY ntok LIMIT 1")?
            .query_row([after.unwrap_or(i64::MIN)], |r| r.get(0))
            .optional()?,
    )
}

/// The page of a ranked text query, or `None` to let FTS5 rank it.
pub(super) fn top(
    c: &Connection,
    expr: &str,
    collections: &[String],
    limit: usize,
    filter: Option<&Value>,
) -> Result<Option<Vec<Value>>> {
    let Some(plan) = fts::plan(c, expr)? else {
        return Ok(None);
    };
    let needles = filter.map(where_needles).unwrap_or_default();
    let mut hits = Vec::new();
    let mut waste = 0usize;
    let mut next = next_length(c, None)?;
    while let Some(lo) = next {
        // One score class: the consecutive lengths whose scores are the
        // same double (almost always one length).
        let score = plan.score(lo);
        let mut hi = lo;
        next = next_length(c, Some(lo))?;
        while let Some(n) = next {
            if plan.score(n).to_bits() != score.to_bits() {
                break;
            }
            hi = n;
            next = next_length(c, Some(n))?;
        }
        // One length reads in key order; several need a sort.
        let mut class = if lo == hi {
            c.prepare_cached("SELECT rid, ntok FROM record_doclen WHERE ntok = ?1 ORDER BY rid")?
        } else {
            c.prepare_cached(
                "SELECT rid, ntok FROM record_doclen WHERE ntok BETWEEN ?1 AND ?2 ORDER BY rid",
            )?
        };
        let mut rows = if lo == hi {
            class.query([lo])?
        } else {
            class.query([lo, hi])?
        };
        while let Some(r) = rows.next()? {
            let (rid, ntok): (i64, i64) = (r.get(0)?, r.get(1)?);
            // Every check below only drops rows, so their order changes
            // no result: the `where` needles come first, tested on the
            // envelope in place, so a row they rule out costs one lookup
            // (a selective `where` on an all-match text walks every row).
            let mut rec = c.prepare_cached(
                "SELECT r.collection_id, r.envelope_json FROM records r WHERE r.rid = ?1",
            )?;
            let mut found = rec.query([rid])?;
            let Some(row) = found.next()? else {
                continue;
            };
            let env = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            if needles.iter().any(|n| !env.contains(n.as_str())) {
                continue;
            }
            let (coll, env): (String, String) = (row.get(0)?, env.to_owned());
            drop(found);
            let fresh =
                fts::tokens(c, rid)?.is_some_and(|n| i64::try_from(n).is_ok_and(|n| n == ntok));
            if !fresh {
                continue;
            }
            if !plan.all_match && !fts::matches(c, expr, rid)? {
                waste += 1;
                if waste > MAX_WASTE {
                    return Ok(None);
                }
                continue;
            }
            if !collections.is_empty() && !collections.contains(&coll) {
                waste += 1;
                if waste > MAX_WASTE {
                    return Ok(None);
                }
                continue;
            }
            let tombstoned = c
                .prepare_cached("SELECT 1 FROM tombstones WHERE rid = ?1")?
                .exists([rid])?;
            if tombstoned {
                continue;
            }
            let Some(env) = super::filtered(&env, filter, &needles)? else {
                continue;
            };
            let mut hit = Map::new();
            hit.insert("record".into(), env);
            hit.insert(
                "score".into(),
                serde_json::Number::from_f64(score).map_or(Value::Null, Value::Number),
            );
            hits.push(Value::Object(hit));
            if hits.len() >= limit {
                return Ok(Some(used(hits)));
            }
        }
    }
    Ok(Some(used(hits)))
}

#[cfg(test)]
thread_local! {
    /// How many queries this thread answered on this path (tests check the
    /// differential test exercises it).
    pub(super) static USED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn used<T>(v: T) -> T {
    #[cfg(test)]
    USED.with(|u| u.set(u.get() + 1));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The differential test: over random corpora (lengths with ties,
    /// terms in most rows once, terms repeated in some rows, non-ASCII
    /// rows, two collections, tombstones) and random queries (limits,
    /// collection filters, `where`), the page is the plain full-scoring
    /// query's, serialised byte for byte; and this path answers a good
    /// share of them.
    #[test]
    fn same_page_as_scoring_every_match() {
        use super::super::Strategy;
        use crate::data::node::{BulkRequest, QueryRequest, TombstoneRequest};
        use serde_json::json;
        let mut used_total = 0;
        let mut queries = 0;
        for seed in 1..=6u64 {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let t = tempfile::tempdir().expect("tempdir");
            let root = t.path().join("d");
            let node = crate::data::node::test_node(&root);
            node.create_collection(&json!({"id": "other"}))
                .expect("collection");
            let common = ["alpha", "beta", "gamma", "delta"];
            let presence = [1.0, 0.95, 0.8, 0.6];
            let repeat_beta = seed % 3 == 0;
            let docs = 80 + (next() % 200) as usize;
            let mut lines = [String::new(), String::new()];
            for k in 0..docs {
                let mut words: Vec<String> = Vec::new();
                for (w, p) in common.iter().zip(presence) {
                    if (next() % 1000) as f64 / 1000.0 < p {
                        words.push((*w).to_owned());
                    }
                }
                if repeat_beta && next() % 7 == 0 {
                    words.push("beta".into());
                }
                for _ in 0..(next() % 12) {
                    words.push(format!("w{}", next() % 30));
                }
                if next() % 11 == 0 {
                    words.push("café".into());
                }
                let n = words.len();
                for i in 0..n {
                    let j = (next() as usize) % n;
                    words.swap(i, j);
                }
                let text = format!("{} n{k}", words.join(" "));
                let coll = usize::from(next() % 4 == 0);
                lines[coll].push_str(&json!({"text": text, "metadata": {"g": k % 3}}).to_string());
                lines[coll].push('\n');
            }
            for (coll, body) in ["default", "other"].iter().zip(&lines) {
                let req = BulkRequest {
                    collection_id: (*coll).into(),
                    collector_id: "text".into(),
                    batch_lines: 37,
                    flush: crate::data::node::DEFAULT_FLUSH,
                };
                node.ingest_lines(&req, std::io::Cursor::new(body.clone()), &|_| {})
                    .expect("ingest");
            }
            // Tombstone a few.
            let all = node
                .query(&QueryRequest {
                    limit: Some(json!(100)),
                    ..QueryRequest::default()
                })
                .expect("list");
            for r in all["records"]
                .as_array()
                .expect("records")
                .iter()
                .step_by(13)
            {
                let id = r["record"]["id"].as_str().expect("id").to_owned();
                node.tombstone(&TombstoneRequest {
                    record_id: id,
                    reason: None,
                })
                .expect("tombstone");
            }
            let texts = [
                "alpha",
                "urn",
                "alpha beta",
                "beta",
                "Alpha text",
                "gamma",
                "alpha gamma delta",
                "urn alpha",
                "beta.",
                "w3",
                "g",
                "alpha alpha",
                "data urn text",
            ];
            for _ in 0..24 {
                let text = texts[(next() as usize) % texts.len()];
                let mut req = QueryRequest {
                    // Some list-mode queries too (no text): plain and
                    // literal batching must agree there as well.
                    text: (next() % 6 != 0).then(|| json!(text)),
                    limit: Some(json!([1, 3, 20, 100][(next() % 4) as usize])),
                    ..QueryRequest::default()
                };
                match next() % 4 {
                    0 => req.collections = Some(json!(["other"])),
                    1 => req.collections = Some(json!(["default", "other"])),
                    _ => {}
                }
                match next() % 9 {
                    0..=2 => req.r#where = Some(json!({"metadata": {"g": next() % 3}})),
                    // A needle every row holds, one no row holds, and
                    // two needles at once.
                    3 => req.r#where = Some(json!({"content": {"media_type": "text/plain"}})),
                    4 => req.r#where = Some(json!({"metadata": {"g": "1"}})),
                    5 => {
                        req.r#where = Some(json!({"metadata": {"g": next() % 3},
                            "source": {"collector_id": "text"}}));
                    }
                    _ => {}
                }
                if next() % 5 == 0 {
                    // A write between queries: the cached term counts of
                    // the previous snapshot must not be used.
                    // It may break what a stale cache would assume: that
                    // every row holds "alpha", or that "urn" and "beta"
                    // occur at most once per row.
                    let text = match next() % 3 {
                        0 => format!("beta gamma late{}", next() % 1000),
                        1 => format!("alpha beta beta urn urn late{}", next() % 1000),
                        _ => format!("alpha beta gamma delta late{}", next() % 1000),
                    };
                    let line = json!({"text": text});
                    let req = BulkRequest {
                        collection_id: "default".into(),
                        collector_id: "text".into(),
                        batch_lines: 1,
                        flush: crate::data::node::DEFAULT_FLUSH,
                    };
                    node.ingest_lines(&req, std::io::Cursor::new(line.to_string()), &|_| {})
                        .expect("late ingest");
                }
                let before = USED.with(|u| u.get());
                let fast = node.query_with(&req, Strategy::Ranked).expect("fast");
                used_total += USED.with(|u| u.get()) - before;
                let plain = node.query_with(&req, Strategy::Plain).expect("plain");
                let literal = node.query_with(&req, Strategy::Literal).expect("literal");
                assert_eq!(
                    serde_json::to_string(&plain).expect("json"),
                    serde_json::to_string(&literal).expect("json"),
                    "seed {seed}, {req:?}"
                );
                queries += 1;
                assert_eq!(
                    serde_json::to_string(&fast).expect("json"),
                    serde_json::to_string(&plain).expect("json"),
                    "seed {seed}, {req:?}"
                );
            }
        }
        assert!(
            used_total * 3 >= queries,
            "the ranked path answered {used_total} of {queries}"
        );
    }
}
