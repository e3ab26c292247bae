//! A record's FTS row: the document the index holds for it
//! ([`index_document`], spec/agent-data-facts.md §8.3), and every
//! statement that writes or reads a row of `record_fts` and its token
//! count (`record_fts_docsize`, copied into `record_doclen`): insert,
//! delete on a tombstone, whether a row is indexed, its token count,
//! whether it matches. Each runs inside the caller's unit of work
//! (`data::writer`'s for writes, a read snapshot for reads).

use super::bm25::{docsize, docsize_tokens};
use crate::data::canon::js_number_text;
use crate::data::syntax::is_textual;
use crate::error::Result;
use crate::store::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

/// The FTS row of record row `rid` (data schema 4: the index alone, no
/// stored columns).
const INSERT_FTS: &str = "INSERT INTO record_fts(rowid, document) VALUES (?1, ?2)";

/// Writes the FTS rows `(rid, document)`, in order, on one cached
/// statement (their token counts follow: [`insert_doclen`],
/// [`insert_doclen_range`]).
pub(crate) fn insert<'a>(
    conn: &Connection,
    rows: impl IntoIterator<Item = (i64, &'a str)>,
) -> Result<()> {
    let mut fts = conn.prepare_cached(INSERT_FTS)?;
    for (rid, document) in rows {
        fts.execute(params![rid, document])?;
    }
    Ok(())
}

/// Copies a row's token count from FTS5's docsize record.
pub(crate) fn insert_doclen(conn: &Connection, rid: i64) -> Result<()> {
    let sz: Vec<u8> = conn
        .prepare_cached("SELECT sz FROM record_fts_docsize WHERE id = ?1")?
        .query_row([rid], |r| r.get(0))?;
    conn.prepare_cached("INSERT OR IGNORE INTO record_doclen(ntok, rid) VALUES (?1, ?2)")?
        .execute(params![docsize(&sz)?, rid])?;
    Ok(())
}

/// [`insert_doclen`] for the contiguous run of new rows `first..=last`.
pub(crate) fn insert_doclen_range(conn: &Connection, first: i64, last: i64) -> Result<()> {
    let mut read =
        conn.prepare_cached("SELECT id, sz FROM record_fts_docsize WHERE id BETWEEN ?1 AND ?2")?;
    let mut ins =
        conn.prepare_cached("INSERT OR IGNORE INTO record_doclen(ntok, rid) VALUES (?1, ?2)")?;
    let mut rows = read.query(params![first, last])?;
    while let Some(r) = rows.next()? {
        let rid: i64 = r.get(0)?;
        let sz: Vec<u8> = r.get(1)?;
        ins.execute(params![docsize(&sz)?, rid])?;
    }
    Ok(())
}

/// Refills `record_doclen` from every row's docsize record (the schema's
/// one-time completion, `data::schema`).
pub(crate) fn rebuild_doclen(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM record_doclen", [])?;
    let mut read = conn.prepare("SELECT id, sz FROM record_fts_docsize")?;
    let mut ins = conn.prepare("INSERT INTO record_doclen(ntok, rid) VALUES (?1, ?2)")?;
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let rid: i64 = r.get(0)?;
        let sz: Vec<u8> = r.get(1)?;
        ins.execute(params![docsize(&sz)?, rid])?;
    }
    Ok(())
}

/// Whether record row `rid` has an FTS row (FTS5 keeps one docsize row
/// per indexed row).
pub(crate) fn is_indexed(conn: &Connection, rid: i64) -> Result<bool> {
    let indexed: Option<i64> = conn
        .prepare_cached("SELECT id FROM record_fts_docsize WHERE id = ?1")?
        .query_row([rid], |r| r.get(0))
        .optional()?;
    Ok(indexed.is_some())
}

/// Removes record row `rid`'s FTS row and its token count (a tombstone).
pub(crate) fn delete(conn: &Connection, rid: i64) -> Result<()> {
    let sz: Option<Vec<u8>> = conn
        .query_row(
            "SELECT sz FROM record_fts_docsize WHERE id = ?1",
            [rid],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(sz) = sz {
        conn.execute(
            "DELETE FROM record_doclen WHERE ntok = ?1 AND rid = ?2",
            params![docsize(&sz)?, rid],
        )?;
    }
    conn.execute("DELETE FROM record_fts WHERE rowid = ?1", [rid])?;
    Ok(())
}

/// Record row `rid`'s token count as FTS5 keeps it, when it has an FTS
/// row whose docsize record decodes.
pub(crate) fn tokens(conn: &Connection, rid: i64) -> Result<Option<u64>> {
    let sz: Option<Vec<u8>> = conn
        .prepare_cached("SELECT sz FROM record_fts_docsize WHERE id = ?1")?
        .query_row([rid], |r| r.get(0))
        .optional()?;
    Ok(sz.as_deref().and_then(docsize_tokens))
}

/// Whether record row `rid`'s FTS row matches the MATCH expression `expr`.
pub(crate) fn matches(conn: &Connection, expr: &str, rid: i64) -> Result<bool> {
    let m: Option<i64> = conn
        .prepare_cached("SELECT 1 FROM record_fts WHERE record_fts MATCH ?1 AND rowid = ?2")?
        .query_row(params![expr, rid], |r| r.get(0))
        .optional()?;
    Ok(m.is_some())
}

/// The FTS document of a record (spec/agent-data-facts.md §8.3).
pub fn index_document(env: &Map<String, Value>, bytes: &[u8], media_type: &str) -> String {
    let source = env.get("source");
    document_of(
        bytes,
        media_type,
        source.and_then(|s| s.get("uri")).and_then(Value::as_str),
        source
            .and_then(|s| s.get("external_id"))
            .and_then(Value::as_str),
        env.get("key").and_then(Value::as_str),
        env.get("metadata"),
    )
}

/// [`index_document`] from the members it reads.
pub(crate) fn document_of(
    bytes: &[u8],
    media_type: &str,
    uri: Option<&str>,
    external_id: Option<&str>,
    key: Option<&str>,
    metadata: Option<&Value>,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    if is_textual(media_type)
        && let Ok(s) = std::str::from_utf8(bytes)
    {
        parts.push(s.to_owned());
    }
    for s in [uri, external_id, key].into_iter().flatten() {
        parts.push(s.to_owned());
    }
    if let Some(m) = metadata {
        flatten(m, &mut parts);
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n")
}

fn flatten(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                flatten(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(js_number_text(n)),
        Value::Bool(b) => out.push(b.to_string()),
        Value::Null => {}
    }
}
