//! Identifier syntax, media types and timestamps of `agent-data/v1`
//! (spec/agent-data-facts.md §1).

use crate::error::{Code, Error, Result};

/// `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`.
pub fn is_collection_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

/// Checks a collection id (`invalid_collection_id`).
pub fn check_collection_id(s: &str) -> Result<()> {
    if is_collection_id(s) {
        Ok(())
    } else {
        Err(Error::new(
            Code::InvalidCollectionId,
            "collection_id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        ))
    }
}

/// `^rec_[a-f0-9]{64}$`.
pub fn is_record_id(s: &str) -> bool {
    s.len() == 68
        && s.starts_with("rec_")
        && s.as_bytes()[4..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// Checks a record id (`invalid_record_id`).
pub fn check_record_id(s: &str) -> Result<()> {
    if is_record_id(s) {
        Ok(())
    } else {
        Err(Error::new(
            Code::InvalidRecordId,
            "record id must match ^rec_[a-f0-9]{64}$",
        ))
    }
}

/// `^[a-z][a-z0-9._-]{0,63}$` (collector ids).
pub fn is_collector_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b[1..].iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-')
        })
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_lowercase()
        || c.is_ascii_digit()
        || matches!(
            c,
            b'!' | b'#' | b'$' | b'&' | b'^' | b'_' | b'.' | b'+' | b'-'
        )
}

/// Normalises a media type: text before the first `;`, trimmed,
/// lowercased, then `type/subtype` of token characters.
pub fn normalize_media_type(raw: &str) -> Result<String> {
    let base = raw.split(';').next().unwrap_or("").trim().to_lowercase();
    let ok = match base.split_once('/') {
        Some((t, s)) => {
            !t.is_empty()
                && !s.is_empty()
                && t.bytes().all(is_token_char)
                && s.bytes().all(is_token_char)
        }
        None => false,
    };
    if ok {
        Ok(base)
    } else {
        Err(Error::new(
            Code::InvalidMediaType,
            "media_type must be a valid type/subtype media type",
        ))
    }
}

/// Whether a (normalised) media type is decoded as text.
pub fn is_textual(media_type: &str) -> bool {
    media_type.starts_with("text/")
        || media_type == "application/json"
        || media_type.ends_with("+json")
        || media_type == "application/xml"
        || media_type.ends_with("+xml")
        || media_type == "application/javascript"
}

/// Normalises a timestamp: accepts
/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)` with a valid calendar date and
/// returns UTC `YYYY-MM-DDTHH:MM:SS.mmmZ` (extra fraction digits truncated).
pub fn normalize_date(field: &str, s: &str) -> Result<String> {
    let shape = || {
        Error::new(
            Code::InvalidDate,
            format!("{field} must be RFC 3339 with a timezone"),
        )
    };
    let range = || {
        Error::new(
            Code::InvalidDate,
            format!("{field} must be a valid RFC 3339 timestamp"),
        )
    };
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(shape());
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return Err(shape());
    };
    let mut i = 19;
    let mut nanos: i64 = 0;
    if b[i] == b'.' {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        let n = end - start;
        if n == 0 || n > 9 {
            return Err(shape());
        }
        let frac = digits(start..end).ok_or_else(shape)?;
        nanos = frac * 10i64.pow((9 - n) as u32);
        i = end;
    }
    let offset_secs: i64 = match &b[i..] {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (Some(oh), Some(om)) = (digits(i + 1..i + 3), digits(i + 4..i + 6)) else {
                return Err(shape());
            };
            if oh > 23 || om > 59 {
                return Err(range());
            }
            let v = oh * 3600 + om * 60;
            if *sign == b'-' { -v } else { v }
        }
        _ => return Err(shape()),
    };
    if hour > 23 || minute > 59 || second > 59 {
        return Err(range());
    }
    let date = jiff::civil::Date::new(year as i16, month as i8, day as i8).map_err(|_| range())?;
    let dt = date.at(hour as i8, minute as i8, second as i8, 0);
    let local = jiff::tz::Offset::UTC
        .to_timestamp(dt)
        .map_err(|_| range())?;
    let ts = local
        .checked_sub(jiff::SignedDuration::from_secs(offset_secs))
        .map_err(|_| range())?;
    let millis = nanos / 1_000_000;
    let ts = ts
        .checked_add(jiff::SignedDuration::from_millis(millis))
        .map_err(|_| range())?;
    Ok(crate::clock::rfc3339_millis(ts))
}

/// Most terms (quoted FTS5 phrases) one text query may have; more is
/// `query_too_complex` (docs/data-node.md). A query ANDs every term, so a
/// longer one matches nothing any real record holds, while its cost grows
/// with every term.
pub const MAX_QUERY_TERMS: usize = 1024;

/// The FTS5 MATCH expression for a query text (facts §18.11: NFKC, the
/// operator characters `"*:^(){}[]~+-` become spaces, every whitespace-split
/// token is quoted and all are ANDed), `Ok(None)` when no token remains
/// (which matches nothing), `query_too_complex` past [`MAX_QUERY_TERMS`].
///
/// The terms are ANDed as a balanced tree of parentheses, not a chain:
/// FTS5 merges `a AND b` into an n-ary node by copying the children of
/// both sides, so a left-deep chain of n terms costs O(n²) copies while a
/// balanced tree costs O(n log n). The phrases, their order and so the
/// BM25 scores are the same either way.
pub fn fts_match(text: &str) -> Result<Option<String>> {
    use unicode_normalization::UnicodeNormalization;
    let norm: String = text
        .nfkc()
        .map(|c| {
            if FTS_OPERATOR_CHARS.contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut terms: Vec<&str> = Vec::new();
    for t in norm.split(char::is_whitespace).filter(|p| !p.is_empty()) {
        if terms.len() == MAX_QUERY_TERMS {
            return Err(Error::new(
                Code::QueryTooComplex,
                format!("a text query may have at most {MAX_QUERY_TERMS} terms"),
            )
            .with("max_terms", MAX_QUERY_TERMS));
        }
        terms.push(t);
    }
    if terms.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(norm.len() + terms.len() * 8);
    and_tree(&terms, &mut out);
    Ok(Some(out))
}

/// What [`fts_match`] did to a query text that a person may not expect:
/// the operator characters it replaced by spaces (so `foo-bar` searches
/// `"foo" AND "bar"`), and the FTS5 operator words it searched as plain
/// words (`OR`, `AND`, `NOT`, `NEAR`).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct QueryTextNotes {
    /// Each replaced character once, in order of first appearance.
    pub replaced: Vec<char>,
    /// Each operator word taken literally once, in order of first appearance.
    pub literal: Vec<String>,
}

impl QueryTextNotes {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.replaced.is_empty() && self.literal.is_empty()
    }
}

/// The notes on `text` (the same normalisation as [`fts_match`]).
pub fn query_text_notes(text: &str) -> QueryTextNotes {
    use unicode_normalization::UnicodeNormalization;
    let mut notes = QueryTextNotes::default();
    let norm: String = text
        .nfkc()
        .map(|c| {
            if FTS_OPERATOR_CHARS.contains(c) {
                if !notes.replaced.contains(&c) {
                    notes.replaced.push(c);
                }
                ' '
            } else {
                c
            }
        })
        .collect();
    for t in norm.split(char::is_whitespace) {
        if ["OR", "AND", "NOT", "NEAR"].contains(&t) && !notes.literal.iter().any(|w| w == t) {
            notes.literal.push(t.to_owned());
        }
    }
    notes
}

/// The characters FTS5 would read as query syntax, which a query text has
/// replaced by spaces (facts §18.11).
const FTS_OPERATOR_CHARS: &str = "\"*:^(){}[]~+-";

/// Writes `terms` (at least one) as quoted phrases ANDed in a balanced
/// tree.
fn and_tree(terms: &[&str], out: &mut String) {
    if let [t] = terms {
        out.push('"');
        out.push_str(t);
        out.push('"');
        return;
    }
    let (l, r) = terms.split_at(terms.len() / 2);
    and_group(l, out);
    out.push_str(" AND ");
    and_group(r, out);
}

fn and_group(terms: &[&str], out: &mut String) {
    if terms.len() > 1 {
        out.push('(');
        and_tree(terms, out);
        out.push(')');
    } else {
        and_tree(terms, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_strings() {
        let m = |t: &str| fts_match(t).expect("ok");
        assert_eq!(
            m("foo-bar baz").as_deref(),
            Some("\"foo\" AND (\"bar\" AND \"baz\")")
        );
        assert_eq!(m("ＨＥＬＬＯ").as_deref(), Some("\"HELLO\""));
        assert_eq!(m("***"), None);
        assert_eq!(m("  "), None);
        assert_eq!(m("a b").as_deref(), Some("\"a\" AND \"b\""));
        assert_eq!(
            m("a OR b c").as_deref(),
            Some("(\"a\" AND \"OR\") AND (\"b\" AND \"c\")")
        );
    }

    #[test]
    fn query_text_notes_name_replacements_and_literal_words() {
        let n = query_text_notes("foo-bar OR NOT x-y (z) NEAR or");
        assert_eq!(n.replaced, vec!['-', '(', ')']);
        assert_eq!(n.literal, vec!["OR", "NOT", "NEAR"]);
        assert!(query_text_notes("plain words").is_empty());
        // Full-width characters normalise (NFKC) before the check.
        assert_eq!(query_text_notes("ａ＋ｂ").replaced, vec!['+']);
    }

    /// The balanced tree matches the same rows with the same BM25 scores as
    /// the reference's chain of ANDs.
    #[test]
    fn balanced_tree_scores_like_the_chain() {
        let c = crate::store::in_memory();
        c.execute_batch("CREATE VIRTUAL TABLE f USING fts5(body, tokenize='unicode61')")
            .expect("fts");
        for body in [
            "alpha beta gamma delta",
            "alpha alpha beta gamma delta epsilon",
            "beta gamma delta alpha zeta alpha",
            "alpha beta",
        ] {
            c.execute("INSERT INTO f(body) VALUES (?1)", [body])
                .expect("insert");
        }
        let scores = |expr: &str| -> Vec<(i64, f64)> {
            let mut st = c
                .prepare("SELECT rowid, bm25(f) FROM f WHERE f MATCH ?1 ORDER BY rank, rowid")
                .expect("prepare");
            st.query_map([expr], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        for text in [
            "alpha beta gamma delta",
            "alpha gamma",
            "delta alpha beta",
            "alpha",
        ] {
            let chain = text
                .split(' ')
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(" AND ");
            let tree = fts_match(text).expect("ok").expect("terms");
            let (a, b) = (scores(&chain), scores(&tree));
            assert!(!a.is_empty(), "{text}");
            assert_eq!(a, b, "{text}: {chain} vs {tree}");
        }
    }

    #[test]
    fn term_cap() {
        let at_cap = vec!["w"; MAX_QUERY_TERMS].join(" ");
        let m = fts_match(&at_cap).expect("at the cap").expect("terms");
        assert_eq!(m.matches("\"w\"").count(), MAX_QUERY_TERMS);
        // Balanced: parentheses nest about log2(n) deep.
        let mut depth = 0i32;
        let mut max = 0;
        for c in m.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            max = max.max(depth);
        }
        assert_eq!(depth, 0);
        assert!(max <= 11, "{max}");
        let over = format!("{at_cap} w");
        let e = fts_match(&over).expect_err("over the cap");
        assert_eq!(e.code(), Code::QueryTooComplex);
        assert_eq!(e.code().http_status(), 400);
        // Separators that vanish are not terms.
        fts_match(&format!("{at_cap} - * ()")).expect("still at the cap");
    }

    #[test]
    fn ids() {
        assert!(is_collection_id("default"));
        assert!(is_collection_id("a.b_c:d-e"));
        assert!(!is_collection_id(".a"));
        assert!(!is_collection_id(""));
        assert!(is_collection_id(&"a".repeat(128)));
        assert!(!is_collection_id(&"a".repeat(129)));
        assert!(is_record_id(&format!("rec_{}", "a".repeat(64))));
        assert!(!is_record_id(&format!("rec_{}", "A".repeat(64))));
        assert!(is_collector_id("text"));
        assert!(!is_collector_id("Text"));
    }

    #[test]
    fn media_types() {
        assert_eq!(
            normalize_media_type("Text/Markdown; charset=UTF-8").expect("ok"),
            "text/markdown"
        );
        assert!(normalize_media_type("text").is_err());
        assert!(normalize_media_type("text/ plain").is_err());
        assert!(is_textual("application/ld+json"));
        assert!(!is_textual("application/x-ndjson"));
        assert!(!is_textual("application/yaml"));
    }

    #[test]
    fn dates() {
        assert_eq!(
            normalize_date("t", "2026-07-11T10:00:00+01:00").expect("ok"),
            "2026-07-11T09:00:00.000Z"
        );
        assert_eq!(
            normalize_date("t", "2026-07-11T10:00:00.9999Z").expect("ok"),
            "2026-07-11T10:00:00.999Z"
        );
        assert_eq!(
            normalize_date("t", "2024-02-29T00:00:00.123456789-00:30").expect("ok"),
            "2024-02-29T00:30:00.123Z"
        );
        for bad in [
            "2026-07-11t10:00:00Z",
            "2026-07-11T10:00:00",
            "2026-07-11T10:00:00z",
            "2026-07-11T10:00:00.Z",
            "2026-07-11T10:00:00.1234567890Z",
        ] {
            assert!(
                normalize_date("t", bad)
                    .expect_err(bad)
                    .message()
                    .contains("timezone"),
                "{bad}"
            );
        }
        for bad in [
            "2023-02-29T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01T00:00:00+24:00",
        ] {
            assert!(
                normalize_date("t", bad)
                    .expect_err(bad)
                    .message()
                    .contains("valid"),
                "{bad}"
            );
        }
    }
}
