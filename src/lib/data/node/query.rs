//! `query`: full-text search (FTS5, bm25 order) and list mode, with the
//! `where` subset filter (spec/agent-data-facts.md §9).

use super::super::canon::{clone_object, subset_match};
use super::super::collection;
use super::super::syntax::check_collection_id;
use super::{Node, parse_json};
use crate::error::{Code, Error, Result};
use crate::store::OptionalExtension;
use serde_json::{Map, Value, json};

mod ranked;

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
        self.query_with(req, true)
    }

    /// `query`, with or without the ranked path that avoids scoring every
    /// match (`ranked::top`); both give the same answer.
    pub(crate) fn query_with(&self, req: &QueryRequest, fast: bool) -> Result<Value> {
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
        let empty = json!({"records": [], "consistency": "local"});
        if collections.as_ref().is_some_and(Vec::is_empty) {
            return Ok(empty);
        }
        let text_mode = text.as_deref().is_some_and(|t| !t.trim().is_empty());
        let match_expr = match (&text, text_mode) {
            (Some(t), true) => match fts_match(t) {
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
                    && fast
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
                    has_where,
                    &filter,
                )
            })();
            let _ = c.execute_batch("COMMIT");
            res
        })?;
        Ok(json!({"records": hits, "consistency": "local"}))
    }

    /// The reference's algorithm (facts §9.3): candidates in batches at
    /// increasing offsets (full-text: every match scored by FTS5's bm25,
    /// ordered by rank), each loaded, filtered and appended until `limit`.
    #[allow(clippy::too_many_arguments)]
    fn plain_hits(
        &self,
        c: &crate::store::Connection,
        match_expr: Option<&str>,
        coll_list: &[String],
        limit: usize,
        batch: usize,
        has_where: bool,
        filter: &Value,
    ) -> Result<Vec<Value>> {
        {
            let mut hits: Vec<Value> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut offset = 0usize;
            let placeholders = (0..coll_list.len())
                .map(|i| format!("?{}", i + 4))
                .collect::<Vec<_>>()
                .join(",");
            loop {
                let mut params: Vec<rusqlite::types::Value> = Vec::new();
                let candidates: Vec<(String, Option<f64>)> = if let Some(m) = match_expr {
                    let sql = format!(
                        "SELECT record_id, bm25(record_fts) AS rank FROM record_fts \
                         WHERE record_fts MATCH ?1 {} ORDER BY rank LIMIT ?2 OFFSET ?3",
                        if coll_list.is_empty() {
                            String::new()
                        } else {
                            format!("AND collection_id IN ({placeholders})")
                        }
                    );
                    params.push(m.to_owned().into());
                    params.push((batch as i64).into());
                    params.push((offset as i64).into());
                    params.extend(coll_list.iter().map(|s| s.clone().into()));
                    let mut st = c.prepare_cached(&sql)?;
                    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                        Ok((r.get::<_, String>(0)?, Some(r.get::<_, f64>(1)?)))
                    })?;
                    rows.collect::<rusqlite::Result<_>>()?
                } else {
                    let sql = format!(
                        "SELECT r.id FROM records r WHERE ?1 IS NULL {} \
                         AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.record_id = r.id) \
                         ORDER BY r.rid DESC LIMIT ?2 OFFSET ?3",
                        if coll_list.is_empty() {
                            String::new()
                        } else {
                            format!("AND r.collection_id IN ({placeholders})")
                        }
                    );
                    params.push(rusqlite::types::Value::Null);
                    params.push((batch as i64).into());
                    params.push((offset as i64).into());
                    params.extend(coll_list.iter().map(|s| s.clone().into()));
                    let mut st = c.prepare_cached(&sql)?;
                    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                        Ok((r.get::<_, String>(0)?, None))
                    })?;
                    rows.collect::<rusqlite::Result<_>>()?
                };
                let n = candidates.len();
                let mut new = 0usize;
                for (id, rank) in candidates {
                    if !seen.insert(id.clone()) {
                        continue;
                    }
                    new += 1;
                    let env: Option<String> = c
                        .prepare_cached(
                            "SELECT r.envelope_json FROM records r WHERE r.id = ?1 \
                             AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.record_id = r.id)",
                        )?
                        .query_row([&id], |r| r.get(0))
                        .optional()?;
                    let Some(env) = env else { continue };
                    let env = parse_json(&env)?;
                    if has_where && !subset_match(filter, Some(&env)) {
                        continue;
                    }
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
                if hits.len() >= limit || n < batch || new == 0 {
                    break;
                }
                offset += batch;
            }
            hits.truncate(limit);
            Ok(hits)
        }
    }
}

/// The FTS5 MATCH expression for a query text, or `None` when no token
/// remains (which matches nothing).
pub fn fts_match(text: &str) -> Option<String> {
    use unicode_normalization::UnicodeNormalization;
    let norm: String = text
        .nfkc()
        .map(|c| if "\"*:^(){}[]~+-".contains(c) { ' ' } else { c })
        .collect();
    let parts: Vec<String> = norm
        .split(char::is_whitespace)
        .filter(|p| !p.is_empty())
        .map(|p| format!("\"{p}\""))
        .collect();
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(" AND "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_strings() {
        assert_eq!(
            fts_match("foo-bar baz").as_deref(),
            Some("\"foo\" AND \"bar\" AND \"baz\"")
        );
        assert_eq!(fts_match("ＨＥＬＬＯ").as_deref(), Some("\"HELLO\""));
        assert_eq!(fts_match("***"), None);
        assert_eq!(
            fts_match("a OR b").as_deref(),
            Some("\"a\" AND \"OR\" AND \"b\"")
        );
    }
}
