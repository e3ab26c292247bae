//! Change-feed cursors: only the exact encoding of a position decodes, and
//! it decodes to that position under the same filter only.
#![no_main]
use agent_task::data::cursor::{MAX_SEQUENCE, decode, encode};
use libfuzzer_sys::fuzz_target;

const FEED: &str = "feed_123e4567-e89b-42d3-a456-426614174000";

fuzz_target!(|data: &[u8]| {
    let Some((sel, rest)) = data.split_first() else {
        return;
    };
    let filter = match sel % 3 {
        0 => None,
        1 => Some("notes"),
        _ => Some("default"),
    };
    let text = String::from_utf8_lossy(rest);
    if let Ok(seq) = decode(&text, FEED, filter) {
        assert!(seq >= 0);
        assert_eq!(encode(FEED, filter, seq), text);
    }
    // A position built from the input round-trips (positions are safe
    // integers: `data::cursor::tests::sequences_are_safe_integers`).
    if rest.len() >= 8 {
        let n = i64::from_be_bytes(rest[..8].try_into().expect("8")) & MAX_SEQUENCE;
        let c = encode(FEED, filter, n);
        assert_eq!(decode(&c, FEED, filter).expect("own cursor"), n);
    }
});
