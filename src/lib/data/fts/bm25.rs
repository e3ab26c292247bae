//! What this node needs to know about its FTS5 index beyond SQL: the
//! on-disk integers FTS5 keeps per row and per table, the token a simple
//! quoted query part makes, and the bm25 formula FTS5 ranks with,
//! reproduced operation for operation so that a score computed here is the
//! same double FTS5's `bm25()` returns.
//!
//! - `record_fts_docsize.sz` is one SQLite varint per column: the row's
//!   token count in that column (data schema 4 has one column, `document`;
//!   schemas 1-3 also had `record_id` and `collection_id`, `UNINDEXED`,
//!   which always counted 0);
//! - `record_fts_data` row 1 (the "averages" record) is a varint row count
//!   followed by one varint token total per column;
//! - bm25 (FTS5's `fts5Bm25Function`, k1 = 1.2, b = 0.75): for each phrase
//!   `i` in query order, `score += idf[i] * ((f[i] * (k1 + 1)) / (f[i] + k1 *
//!   (1 - b + b * D / avgdl)))`, where `D` is the row's token count over all
//!   columns, `avgdl` = total tokens / rows, `idf = ln((N - n + 0.5) / (n +
//!   0.5))` with `n` the number of rows holding the phrase, replaced by
//!   `1e-6` when it is not positive; `bm25()` returns `-score`.
//!
//! The tests check every piece against FTS5 itself.

/// Reads one SQLite varint (big-endian, 7 bits per byte, the ninth byte
/// whole) at the start of `b`: the value and the bytes it took.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((v << 8) | u64::from(byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Every varint of `b`, or `None` when it does not decode exactly.
pub fn varints(mut b: &[u8]) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (v, n) = varint(b)?;
        out.push(v);
        b = &b[n..];
    }
    Some(out)
}

/// A row's token count over all columns, from its `record_fts_docsize.sz`.
pub fn docsize_tokens(sz: &[u8]) -> Option<u64> {
    varints(sz)?
        .into_iter()
        .try_fold(0u64, |a, v| a.checked_add(v))
}

/// A row's token count from its FTS5 docsize record, as SQLite stores it.
pub fn docsize(sz: &[u8]) -> crate::error::Result<i64> {
    docsize_tokens(sz)
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| crate::error::Error::internal("an FTS5 docsize record does not decode"))
}

/// Row count and token total over all columns, from the averages record.
/// An empty record (a table that never held a row) is `(0, 0)`.
pub fn averages(block: &[u8]) -> Option<(u64, u64)> {
    if block.is_empty() {
        return Some((0, 0));
    }
    let (rows, n) = varint(block)?;
    let total = docsize_tokens(&block[n..])?;
    Some((rows, total))
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The inverse document frequency FTS5 gives a phrase found in `n_hit` of
/// `n_rows` rows.
pub fn idf(n_rows: u64, n_hit: u64) -> f64 {
    let (n, h) = (n_rows as f64, n_hit as f64);
    let idf = ((n - h + 0.5) / (h + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The bm25 score (`-bm25()`, so higher is better) of a row of `tokens`
/// tokens in which phrase `i` occurs `freq[i]` times, with `idf[i]` per
/// phrase and the table's `avgdl`.
pub fn bm25_score(idf: &[f64], freq: &[f64], tokens: u64, avgdl: f64) -> f64 {
    let d = tokens as f64;
    let mut score = 0.0;
    for (w, f) in idf.iter().zip(freq) {
        score += w * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl)));
    }
    score
}

/// The average row length FTS5 uses.
pub fn avgdl(rows: u64, total_tokens: u64) -> f64 {
    total_tokens as f64 / rows as f64
}

/// The one token FTS5's `unicode61` tokenizer (default options) makes of a
/// quoted query part, when that can be known without its Unicode tables:
/// the part is ASCII and holds exactly one run of ASCII letters and digits
/// (ASCII letters fold to lower case, every other ASCII character
/// separates). `None` for anything else.
pub fn ascii_single_token(part: &str) -> Option<String> {
    if !part.is_ascii() {
        return None;
    }
    let mut runs = part
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|r| !r.is_empty());
    let token = runs.next()?;
    if runs.next().is_some() {
        return None;
    }
    Some(token.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode() {
        assert_eq!(varint(&[0x0f]), Some((15, 1)));
        assert_eq!(varint(&[0x86, 0x8d, 0x20]), Some((100_000, 3)));
        assert_eq!(varint(&[0xdb, 0xc6, 0x60]), Some((1_500_000, 3)));
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(docsize_tokens(&[0, 0, 0x0f]), Some(15));
        assert_eq!(
            averages(&[0x86, 0x8d, 0x20, 0, 0, 0xdb, 0xc6, 0x60]),
            Some((100_000, 1_500_000))
        );
        assert_eq!(averages(&[]), Some((0, 0)));
        assert_eq!(docsize_tokens(&[0x80]), None);
    }

    #[test]
    fn single_tokens() {
        assert_eq!(ascii_single_token("Shared").as_deref(), Some("shared"));
        assert_eq!(ascii_single_token("words.").as_deref(), Some("words"));
        assert_eq!(ascii_single_token("hello.world"), None);
        assert_eq!(ascii_single_token("!!!"), None);
        assert_eq!(ascii_single_token("café"), None);
        assert_eq!(ascii_single_token("a_b"), None);
    }

    /// The pieces above against FTS5 itself, on a table with the column
    /// layout of data schemas 1-3: docsize, averages, and bm25 to the last
    /// bit.
    #[test]
    fn matches_fts5() {
        let c = crate::store::in_memory();
        c.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(a UNINDEXED, b UNINDEXED, document, tokenize='unicode61');",
        )
        .expect("fts");
        let docs = [
            "alpha beta gamma",
            "alpha alpha beta",
            "beta delta epsilon zeta eta theta iota kappa lambda mu nu xi",
            "Alpha, BETA! gamma-delta",
            "zeta",
            "alpha beta alpha beta alpha beta alpha",
        ];
        for (i, d) in docs.iter().enumerate() {
            c.execute(
                "INSERT INTO t(rowid, a, b, document) VALUES (?1, 'x y z', 'w', ?2)",
                rusqlite::params![i as i64 + 1, d],
            )
            .expect("insert");
        }
        let avg: Vec<u8> = c
            .query_row("SELECT block FROM t_data WHERE id = 1", [], |r| r.get(0))
            .expect("averages");
        let (rows, total) = averages(&avg).expect("decode");
        let want_total: u64 = docs
            .iter()
            .map(|d| {
                d.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .count() as u64
            })
            .sum();
        assert_eq!((rows, total), (docs.len() as u64, want_total));
        let avgdl = avgdl(rows, total);
        for (query, phrases) in [
            ("\"alpha\"", vec!["alpha"]),
            ("\"alpha\" AND \"beta\"", vec!["alpha", "beta"]),
            ("\"beta\" AND \"alpha\"", vec!["beta", "alpha"]),
            ("\"zeta\"", vec!["zeta"]),
            ("\"beta\" AND \"beta\"", vec!["beta", "beta"]),
        ] {
            let mut st = c
                .prepare("SELECT rowid, bm25(t), (SELECT sz FROM t_docsize WHERE id = t.rowid) FROM t WHERE t MATCH ?1")
                .expect("prepare");
            let got: Vec<(i64, f64, Vec<u8>)> = st
                .query_map([query], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert!(!got.is_empty(), "{query}");
            let idfs: Vec<f64> = phrases
                .iter()
                .map(|p| {
                    let hits = docs
                        .iter()
                        .filter(|d| {
                            d.to_lowercase()
                                .split(|c: char| !c.is_alphanumeric())
                                .any(|w| w == *p)
                        })
                        .count() as u64;
                    idf(rows, hits)
                })
                .collect();
            for (rowid, rank, sz) in got {
                let doc = docs[rowid as usize - 1].to_lowercase();
                let words: Vec<&str> = doc
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .collect();
                let freq: Vec<f64> = phrases
                    .iter()
                    .map(|p| words.iter().filter(|w| *w == p).count() as f64)
                    .collect();
                let tokens = docsize_tokens(&sz).expect("sz");
                assert_eq!(tokens, words.len() as u64);
                let score = bm25_score(&idfs, &freq, tokens, avgdl);
                assert_eq!(
                    (-rank).to_bits(),
                    score.to_bits(),
                    "{query} row {rowid}: {rank} vs {score}"
                );
            }
        }
    }

    /// Data schema 4's index (contentless, deletes by row id, one column)
    /// against schema 3's (stored content, two `UNINDEXED` columns), fed
    /// the same rows, deletes and later rows: the same rows, token counts,
    /// averages, and every ranked match (row ids, order, bm25 bits).
    #[test]
    fn contentless_index_ranks_like_the_stored_one() {
        let c = crate::store::in_memory();
        c.execute_batch(
            "CREATE VIRTUAL TABLE o USING fts5(a UNINDEXED, b UNINDEXED, document, tokenize='unicode61');
             CREATE VIRTUAL TABLE n USING fts5(document, tokenize='unicode61', content='', contentless_delete=1);",
        )
        .expect("fts");
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let words = ["alpha", "beta", "gamma", "delta", "Café", "zeta", "urn"];
        let insert = |rowid: i64, doc: &str| {
            c.execute(
                "INSERT INTO o(rowid, a, b, document) VALUES (?1, 'rec_x', 'default', ?2)",
                rusqlite::params![rowid, doc],
            )
            .expect("o");
            c.execute(
                "INSERT INTO n(rowid, document) VALUES (?1, ?2)",
                rusqlite::params![rowid, doc],
            )
            .expect("n");
        };
        for rowid in 1..=300i64 {
            let len = 1 + next() % 9;
            let doc: Vec<&str> = (0..len)
                .map(|_| words[(next() % words.len() as u64) as usize])
                .collect();
            insert(rowid, &doc.join(" "));
            if rowid % 7 == 0 {
                let gone = 1 + (next() % rowid as u64) as i64;
                for t in ["o", "n"] {
                    c.execute(&format!("DELETE FROM {t} WHERE rowid = ?1"), [gone])
                        .expect("delete");
                }
            }
        }
        let rows = |sql: &str| -> Vec<(i64, u64)> {
            c.prepare(sql)
                .expect("prepare")
                .query_map([], |r| {
                    let sz: Vec<u8> = r.get(1)?;
                    Ok((r.get(0)?, docsize_tokens(&sz).unwrap_or(u64::MAX)))
                })
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        let old = rows("SELECT id, sz FROM o_docsize ORDER BY id");
        assert!(old.len() > 200, "{}", old.len());
        assert_eq!(old, rows("SELECT id, sz FROM n_docsize ORDER BY id"));
        let avg = |t: &str| -> (u64, u64) {
            let b: Vec<u8> = c
                .query_row(
                    &format!("SELECT block FROM {t}_data WHERE id = 1"),
                    [],
                    |r| r.get(0),
                )
                .expect("averages");
            averages(&b).expect("decode")
        };
        assert_eq!(avg("o"), avg("n"));
        for q in [
            "\"alpha\"",
            "\"beta\" AND \"urn\"",
            "\"café\"",
            "\"zeta\" OR \"gamma\"",
            "\"alpha beta\"",
        ] {
            let ranked = |t: &str| -> Vec<(i64, u64)> {
                c.prepare(&format!(
                    "SELECT rowid, bm25({t}) AS rank FROM {t} WHERE {t} MATCH ?1 ORDER BY rank"
                ))
                .expect("prepare")
                .query_map([q], |r| Ok((r.get(0)?, r.get::<_, f64>(1)?.to_bits())))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
            };
            let o = ranked("o");
            assert!(!o.is_empty(), "{q}");
            assert_eq!(o, ranked("n"), "{q}");
        }
    }
}
