//! `query`: full-text search (FTS5, bm25 order) and list mode, with the
//! `where` subset filter (spec/agent-data-facts.md §9).

use super::super::canon::{clone_object, subset_match, where_needles};
use super::super::collection;
use super::super::fts;
use super::super::syntax::check_collection_id;
use super::{Node, parse_json};
use crate::error::{Code, Error, Result};
use crate::store::OptionalExtension;
use serde_json::{Map, Value};

mod ranked;

pub(crate) use super::super::fts::forget_vocab;

/// How a query finds its page (the answer is the same). Only `Ranked` is
/// used outside tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Strategy {
    /// The ranked walk where it applies (`ranked::top`), else `Plain`.
    Ranked,
    /// The reference's candidate order, in growing batches.
    Plain,
    /// The reference's algorithm batch for batch (tests).
    Literal,
}

/// The envelope if it passes the `where` filter: cheap substring checks
/// first (see [`where_needles`]), then the exact subset match.
pub(crate) fn filtered(
    env: &str,
    filter: Option<&Value>,
    needles: &[String],
) -> Result<Option<Value>> {
    if needles.iter().any(|n| !env.contains(n.as_str())) {
        return Ok(None);
    }
    let env = parse_json(env)?;
    Ok(match filter {
        Some(f) if !subset_match(f, Some(&env)) => None,
        _ => Some(env),
    })
}

/// `query` request (`POST /v1/data/query`), raw members as sent.
#[derive(Debug, Clone, Default)]
pub struct QueryRequest {
    /// `collections`.
    pub collections: Option<Value>,
    /// `text`.
    pub text: Option<Value>,
    /// `where`.
    pub r#where: Option<Value>,
    /// `limit` (`null` means the default).
    pub limit: Option<Value>,
    /// `consistency` (absent or `"local"`).
    pub consistency: Option<Value>,
}

impl QueryRequest {
    /// The members a query request has.
    pub const KEYS: [&'static str; 5] = ["collections", "text", "where", "limit", "consistency"];

    /// From a JSON body, refusing a member the request does not have
    /// (`invalid_input` naming it): the CLI's reading. HTTP and MCP keep
    /// the reference's rule ([`QueryRequest::from_json`]).
    pub fn from_json_strict(body: &Map<String, Value>) -> Result<QueryRequest> {
        if let Some(k) = body.keys().find(|k| !Self::KEYS.contains(&k.as_str())) {
            return Err(Error::new(
                Code::InvalidInput,
                format!(
                    "unknown query request key {k:?} (known: {})",
                    Self::KEYS.join(", ")
                ),
            )
            .with("key", k.clone()));
        }
        Ok(Self::from_json(body))
    }

    /// From a JSON body (unknown members are ignored, as in the reference).
    pub fn from_json(body: &Map<String, Value>) -> QueryRequest {
        QueryRequest {
            collections: body.get("collections").cloned(),
            text: body.get("text").cloned(),
            r#where: body.get("where").cloned(),
            limit: body.get("limit").cloned(),
            consistency: body.get("consistency").cloned(),
        }
    }
}

impl Node {
    /// `query`.
    pub fn query(&self, req: &QueryRequest) -> Result<Value> {
        self.query_with(req, Strategy::Ranked)
    }

    /// `query` by a given [`Strategy`]; all give the same answer.
    pub(crate) fn query_with(&self, req: &QueryRequest, strategy: Strategy) -> Result<Value> {
        match &req.consistency {
            None => {}
            Some(Value::String(s)) if s == "local" => {}
            Some(_) => {
                return Err(Error::new(
                    Code::UnsupportedConsistency,
                    "Only local consistency is available",
                ));
            }
        }
        let collections: Option<Vec<String>> = match &req.collections {
            None => None,
            Some(Value::Array(a)) => {
                let mut ids: Vec<String> = Vec::with_capacity(a.len());
                for v in a {
                    let s = v.as_str().unwrap_or("");
                    check_collection_id(s)?;
                    if !ids.iter().any(|x| x == s) {
                        ids.push(s.to_owned());
                    }
                }
                self.read(|c| {
                    for id in &ids {
                        self.collection(c, id)?;
                    }
                    Ok(())
                })?;
                Some(ids)
            }
            Some(_) => {
                return Err(Error::new(
                    Code::InvalidRequest,
                    "collections must be an array",
                ));
            }
        };
        let limit = match &req.limit {
            None | Some(Value::Null) => self.limits.default_query_limit,
            Some(v) => {
                let n = collection::positive_safe_integer(v).ok_or_else(|| {
                    Error::new(Code::InvalidNumber, "limit must be a positive integer")
                })?;
                if n > self.limits.max_query_limit {
                    return Err(Error::new(
                        Code::LimitExceeded,
                        format!("limit cannot exceed {}", self.limits.max_query_limit),
                    ));
                }
                n
            }
        };
        let filter = clone_object("where", req.r#where.as_ref())?;
        let text = match &req.text {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            _ => return Err(Error::new(Code::InvalidRequest, "text must be a string")),
        };
        let empty = Value::from(Page {
            records: Vec::new(),
        });
        if collections.as_ref().is_some_and(Vec::is_empty) {
            return Ok(empty);
        }
        let text_mode = text.as_deref().is_some_and(|t| !t.trim().is_empty());
        let match_expr = match (&text, text_mode) {
            (Some(t), true) => match crate::data::syntax::fts_match(t)? {
                Some(m) => Some(m),
                None => return Ok(empty),
            },
            _ => None,
        };
        let has_where = !filter.is_empty();
        let filter = Value::Object(filter);
        let limit = limit as usize;
        let batch = if has_where {
            (4 * limit).clamp(100, 500)
        } else {
            limit
        };
        let coll_list = collections.unwrap_or_default();
        let hits = self.read(|c| {
            // One snapshot for the whole query: the statistics the ranking
            // uses and the rows it returns must agree.
            c.execute_batch("BEGIN DEFERRED")?;
            let res = (|| {
                if let Some(m) = &match_expr
                    && strategy == Strategy::Ranked
                    && let Some(hits) =
                        ranked::top(c, m, &coll_list, limit, has_where.then_some(&filter))?
                {
                    return Ok(hits);
                }
                self.plain_hits(
                    c,
                    match_expr.as_deref(),
                    &coll_list,
                    limit,
                    batch,
                    has_where.then_some(&filter),
                    strategy == Strategy::Literal,
                )
            })();
            let _ = c.execute_batch("COMMIT");
            res
        })?;
        Ok(Page { records: hits }.into())
    }

    /// The reference's algorithm (facts §9.3): candidates in batches in a
    /// fixed order (full-text: every match scored by FTS5's bm25, by rank;
    /// list mode: newest first), each loaded, filtered and appended until
    /// `limit` hits or the candidates run out.
    ///
    /// The order is total (rank, then FTS5's row id scan order; row id),
    /// so how it is cut into batches changes nothing but the cost: a
    /// full-text batch after the first is twice the previous one (each
    /// batch scores every match again: the reference's fixed batches cost
    /// O(matches²/batch) when `where` drops most candidates), and list mode
    /// continues below the last row id instead of re-skipping an offset.
    /// `Strategy::Literal` keeps the reference's fixed batches at
    /// increasing offsets (tests compare the two).
    #[allow(clippy::too_many_arguments)]
    fn plain_hits(
        &self,
        c: &crate::store::Connection,
        match_expr: Option<&str>,
        coll_list: &[String],
        limit: usize,
        batch: usize,
        filter: Option<&Value>,
        literal: bool,
    ) -> Result<Vec<Value>> {
        /// Largest full-text batch (a sorter of this many rows).
        const MAX_BATCH: usize = 16384;
        let needles = filter.map(where_needles).unwrap_or_default();
        let mut hits: Vec<Value> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut offset = 0usize;
        let mut size = batch;
        let mut below = i64::MAX;
        let placeholders = (0..coll_list.len())
            .map(|i| format!("?{}", i + 4))
            .collect::<Vec<_>>()
            .join(",");
        let in_collections = |col: &str| {
            if coll_list.is_empty() {
                String::new()
            } else {
                format!("AND {col} IN ({placeholders})")
            }
        };
        let list_below = match_expr.is_none() && !literal;
        let mut scanned = 0usize;
        if list_below && !needles.is_empty() {
            // Rows its needles rule out cost a substring search each: scan
            // more of them per statement.
            size = size.max(1000);
        }
        loop {
            let mut params: Vec<rusqlite::types::Value> = Vec::new();
            // (record row id, envelope if already read, rank)
            type Candidate = (i64, Option<String>, Option<f64>);
            let candidates: Vec<Candidate> = if let Some(m) = match_expr {
                fts::fts5_page(c, m, coll_list, size, offset)?
                    .into_iter()
                    .map(|(rid, rank)| (rid, None, Some(rank)))
                    .collect()
            } else if literal {
                let sql = format!(
                    "SELECT r.rid FROM records r WHERE ?1 IS NULL {} \
                     AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.rid = r.rid) \
                     ORDER BY r.rid DESC LIMIT ?2 OFFSET ?3",
                    in_collections("r.collection_id")
                );
                params.push(rusqlite::types::Value::Null);
                params.push((size as i64).into());
                params.push((offset as i64).into());
                params.extend(coll_list.iter().map(|s| s.clone().into()));
                let mut st = c.prepare_cached(&sql)?;
                let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    Ok((r.get::<_, i64>(0)?, None, None))
                })?;
                rows.collect::<rusqlite::Result<_>>()?
            } else {
                // Tombstoned rows are dropped below, after the needles:
                // one index probe per row the needles let through instead
                // of one per row scanned.
                let sql = format!(
                    "SELECT r.rid, r.envelope_json FROM records r WHERE r.rid < ?1 {} \
                     ORDER BY r.rid DESC LIMIT ?2 OFFSET ?3",
                    in_collections("r.collection_id")
                );
                params.push(below.into());
                params.push((size as i64).into());
                params.push(0i64.into());
                params.extend(coll_list.iter().map(|s| s.clone().into()));
                let mut tombstoned = c.prepare_cached("SELECT 1 FROM tombstones WHERE rid = ?1")?;
                let mut st = c.prepare_cached(&sql)?;
                let mut rows = st.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                scanned = 0;
                // The `where` needles (necessary, not sufficient: the exact
                // match below decides) are checked on the row's text in
                // place, so a row that cannot match is never copied out.
                while let Some(row) = rows.next()? {
                    scanned += 1;
                    let rid = row.get::<_, i64>(0)?;
                    below = below.min(rid);
                    let env = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                    if needles.iter().any(|n| !env.contains(n.as_str())) {
                        continue;
                    }
                    if tombstoned.exists([rid])? {
                        continue;
                    }
                    out.push((rid, Some(env.to_owned()), None));
                }
                out
            };
            // Rows the batch covered (list mode leaves out, unread, those
            // its needles rule out).
            let n = if list_below {
                scanned
            } else {
                candidates.len()
            };
            let mut new = 0usize;
            for (rid, env, rank) in candidates {
                if !seen.insert(rid) {
                    continue;
                }
                new += 1;
                let env = match env {
                    Some(e) => Some(e),
                    None => c
                        .prepare_cached(
                            "SELECT r.envelope_json FROM records r WHERE r.rid = ?1 \
                             AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.rid = r.rid)",
                        )?
                        .query_row([rid], |r| r.get(0))
                        .optional()?,
                };
                let Some(env) = env else { continue };
                let Some(env) = filtered(&env, filter, &needles)? else {
                    continue;
                };
                let mut hit = Map::new();
                hit.insert("record".into(), env);
                if let Some(rank) = rank {
                    let score = (-rank).max(0.0);
                    hit.insert(
                        "score".into(),
                        serde_json::Number::from_f64(score)
                            .map(Value::Number)
                            .unwrap_or(Value::Null),
                    );
                }
                hits.push(Value::Object(hit));
                if hits.len() >= limit {
                    break;
                }
            }
            // (List mode continues below its last row, so it always
            // progresses while rows remain.)
            if hits.len() >= limit || n < size || (new == 0 && !list_below) {
                break;
            }
            offset += size;
            if !literal && match_expr.is_some() {
                size = (size * 2).min(MAX_BATCH).max(batch);
            }
        }
        hits.truncate(limit);
        Ok(hits)
    }
}
/// A query's answer: its records (a local node answers with its own
/// consistency, `local`).
struct Page {
    records: Vec<Value>,
}

impl From<Page> for Value {
    fn from(p: Page) -> Value {
        let mut m = Map::new();
        m.insert("consistency".into(), "local".into());
        m.insert("records".into(), Value::Array(p.records));
        Value::Object(m)
    }
}
