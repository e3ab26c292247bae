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

#[cfg(test)]
mod tests {
    use super::*;

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
