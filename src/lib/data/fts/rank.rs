//! How the ranked query scores without reading the index: whether a
//! MATCH expression's page can be known from row lengths alone, and what
//! each length scores ([`plan`], [`RankPlan::score`]: bm25 over the
//! table's statistics, with FTS5's arithmetic from `bm25`), the per-thread
//! `fts5vocab` counts it reads, and FTS5's own ranked page ([`fts5_page`],
//! every match scored by `bm25()`) for everything else. The walk over
//! rows by length is the query's (`data::node::query`'s `ranked`).

use super::bm25;
use crate::error::Result;
use crate::store::{Connection, OptionalExtension};

/// Fewer matches than this are ranked by FTS5 itself: scoring them all
/// costs about as much as planning this path.
const SMALL: i64 = if cfg!(test) { 8 } else { 1000 };

/// What the walk needs to score a row: per phrase, its IDF; the table's
/// average row length; whether every row holds every phrase.
pub(crate) struct RankPlan {
    idf: Vec<f64>,
    ones: Vec<f64>,
    avgdl: f64,
    /// Every row holds every phrase (no row needs its MATCH checked).
    pub(crate) all_match: bool,
}

impl RankPlan {
    /// The score of a row of `tokens` tokens that matches.
    pub(crate) fn score(&self, tokens: i64) -> f64 {
        bm25::bm25_score(&self.idf, &self.ones, tokens.max(0) as u64, self.avgdl)
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

/// The plan of a ranked page for `expr`, or `None` when FTS5 must rank
/// it.
pub(crate) fn plan(c: &Connection, expr: &str) -> Result<Option<RankPlan>> {
    let complete: Option<i64> = c
        .prepare_cached("SELECT 1 FROM node_meta WHERE key = 'doclen_complete'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if complete.is_none() {
        return Ok(None);
    }
    let mut tokens = Vec::new();
    for p in phrases(expr) {
        match bm25::ascii_single_token(p) {
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
    let Some((rows, total)) = block.as_deref().and_then(bm25::averages) else {
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
        idf.push(bm25::idf(rows, doc));
    }
    // At least half of all rows match (inclusion-exclusion), and so at
    // least SMALL.
    if missing > 0.5 {
        return Ok(None);
    }
    Ok(Some(RankPlan {
        ones: vec![1.0; idf.len()],
        idf,
        avgdl: bm25::avgdl(rows, total),
        all_match,
    }))
}

/// FTS5's ranked page: the record rows matching `expr` (in `collections`
/// when any are named), every match scored by `bm25()`, by rank, `size`
/// rows from `offset` on. The index is the outer loop: its match order
/// is the scan order ties keep.
pub(crate) fn fts5_page(
    c: &Connection,
    expr: &str,
    collections: &[String],
    size: usize,
    offset: usize,
) -> Result<Vec<(i64, f64)>> {
    let in_collections = if collections.is_empty() {
        String::new()
    } else {
        let placeholders = (0..collections.len())
            .map(|i| format!("?{}", i + 4))
            .collect::<Vec<_>>()
            .join(",");
        format!("AND r.collection_id IN ({placeholders})")
    };
    let sql = format!(
        "SELECT r.rid, bm25(record_fts) AS rank FROM record_fts \
         CROSS JOIN records r ON r.rid = record_fts.rowid \
         WHERE record_fts MATCH ?1 {in_collections} ORDER BY rank LIMIT ?2 OFFSET ?3"
    );
    let mut params: Vec<rusqlite::types::Value> = vec![
        expr.to_owned().into(),
        (size as i64).into(),
        (offset as i64).into(),
    ];
    params.extend(collections.iter().map(|s| s.clone().into()));
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
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
}
