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
//!   matches quickly), and so at least [`SMALL`] (fewer are cheap to score).
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

/// Fewer matches than this are ranked by FTS5 itself: scoring them all
/// costs about as much as planning this path.
const SMALL: i64 = if cfg!(test) { 8 } else { 1000 };

/// Rows this path may walk and drop (not a match, or in a collection the
/// query does not ask for) before it gives the query back to FTS5.
const MAX_WASTE: usize = 256;

/// What the walk needs to score a row: per phrase, its IDF; the table's
/// average row length; whether every row holds every phrase.
struct Plan {
    idf: Vec<f64>,
    ones: Vec<f64>,
    avgdl: f64,
    all_match: bool,
}

impl Plan {
    fn score(&self, tokens: i64) -> f64 {
        fts::bm25_score(&self.idf, &self.ones, tokens.max(0) as u64, self.avgdl)
    }
}

/// The quoted phrases of a MATCH expression built by `fts_match`, in
/// order (the expression holds only quoted phrases, `AND` and
/// parentheses; a phrase cannot contain a quote).
fn phrases(expr: &str) -> Vec<&str> {
    expr.split('"').skip(1).step_by(2).collect()
}

/// Per-term `fts5vocab` counts (rows holding the term, instances), kept
/// per thread for one database version: reading them walks the term's
/// whole doclist (2 ms for a term in 100,000 rows). `PRAGMA data_version`
/// changes whenever another connection commits, and readers never write,
/// so an entry is exact for as long as the version it was read at holds.
struct VocabCache {
    db: String,
    version: i64,
    terms: std::collections::HashMap<String, Option<(i64, i64)>>,
}

/// Entries one thread keeps (a few hundred kilobytes at most).
const VOCAB_CACHE_TERMS: usize = 4096;

thread_local! {
    static VOCAB: std::cell::RefCell<Option<VocabCache>> = const { std::cell::RefCell::new(None) };
}

/// Forgets this thread's cached counts (the next read is on another
/// connection, whose `data_version` says nothing about them).
pub(crate) fn forget_vocab() {
    VOCAB.with(|v| *v.borrow_mut() = None);
}

/// The cached counts of `tokens` for this connection's current snapshot,
/// when every one is known.
fn cached(c: &Connection, version: i64, tokens: &[String]) -> Option<Vec<Option<(i64, i64)>>> {
    let db = c.path().unwrap_or("");
    VOCAB.with(|v| {
        let v = v.borrow();
        let cache = v.as_ref().filter(|x| x.version == version && x.db == db)?;
        tokens.iter().map(|t| cache.terms.get(t).copied()).collect()
    })
}

fn remember(c: &Connection, version: i64, token: &str, stats: Option<(i64, i64)>) {
    let db = c.path().unwrap_or("");
    VOCAB.with(|v| {
        let mut v = v.borrow_mut();
        let stale = v.as_ref().is_none_or(|x| {
            x.version != version || x.db != db || x.terms.len() >= VOCAB_CACHE_TERMS
        });
        if stale {
            *v = Some(VocabCache {
                db: db.to_owned(),
                version,
                terms: std::collections::HashMap::new(),
            });
        }
        if let Some(x) = v.as_mut() {
            x.terms.insert(token.to_owned(), stats);
        }
    });
}

fn plan(c: &Connection, expr: &str) -> Result<Option<Plan>> {
    let complete: Option<i64> = c
        .prepare_cached("SELECT 1 FROM node_meta WHERE key = 'doclen_complete'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if complete.is_none() {
        return Ok(None);
    }
    let mut tokens = Vec::new();
    for p in phrases(expr) {
        match fts::ascii_single_token(p) {
            Some(t) => tokens.push(t),
            None => return Ok(None),
        }
    }
    if tokens.is_empty() {
        return Ok(None);
    }
    let block: Option<Vec<u8>> = c
        .prepare_cached("SELECT block FROM record_fts_data WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    let Some((rows, total)) = block.as_deref().and_then(fts::averages) else {
        return Ok(None);
    };
    if rows < SMALL as u64 {
        return Ok(None);
    }
    let version: i64 = c.query_row("PRAGMA data_version", [], |r| r.get(0))?;
    let stats = match cached(c, version, &tokens) {
        Some(s) => s,
        None => {
            // Few matches: FTS5 ranks them cheaply, and reading the
            // counts of a common term would cost more than that.
            let many: i64 = c
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM record_fts WHERE record_fts MATCH ?1 LIMIT ?2)",
                )?
                .query_row(rusqlite::params![expr, SMALL], |r| r.get(0))?;
            if many < SMALL {
                return Ok(None);
            }
            let mut out = Vec::with_capacity(tokens.len());
            for t in &tokens {
                let s: Option<(i64, i64)> = c
                    .prepare_cached("SELECT doc, cnt FROM record_fts_vocab WHERE term = ?1")?
                    .query_row([t], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                remember(c, version, t, s);
                out.push(s);
            }
            out
        }
    };
    let mut idf = Vec::with_capacity(tokens.len());
    let mut all_match = true;
    let mut missing = 0.0;
    for s in stats {
        let Some((doc, cnt)) = s else {
            return Ok(None);
        };
        if doc != cnt || doc <= 0 {
            return Ok(None);
        }
        let doc = doc as u64;
        all_match &= doc == rows;
        missing += 1.0 - doc as f64 / rows as f64;
        idf.push(fts::idf(rows, doc));
    }
    // At least half of all rows match (inclusion-exclusion), and so at
    // least SMALL.
    if missing > 0.5 {
        return Ok(None);
    }
    Ok(Some(Plan {
        ones: vec![1.0; idf.len()],
        idf,
        avgdl: fts::avgdl(rows, total),
        all_match,
    }))
}

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
    let Some(plan) = plan(c, expr)? else {
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
            let sz: Option<Vec<u8>> = c
                .prepare_cached("SELECT sz FROM record_fts_docsize WHERE id = ?1")?
                .query_row([rid], |r| r.get(0))
                .optional()?;
            let fresh = sz
                .as_deref()
                .and_then(fts::docsize_tokens)
                .is_some_and(|n| i64::try_from(n).is_ok_and(|n| n == ntok));
            if !fresh {
                continue;
            }
            if !plan.all_match {
                let m: Option<i64> = c
                    .prepare_cached(
                        "SELECT 1 FROM record_fts WHERE record_fts MATCH ?1 AND rowid = ?2",
                    )?
                    .query_row(rusqlite::params![expr, rid], |r| r.get(0))
                    .optional()?;
                if m.is_none() {
                    waste += 1;
                    if waste > MAX_WASTE {
                        return Ok(None);
                    }
                    continue;
                }
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

    #[test]
    fn phrases_of_chains_and_trees() {
        assert_eq!(phrases("\"a\" AND \"b c\""), ["a", "b c"]);
        assert_eq!(
            phrases("(\"a\" AND \"OR\") AND (\"b\" AND \"c\")"),
            ["a", "OR", "b", "c"]
        );
        assert_eq!(phrases("\"only\""), ["only"]);
    }

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
