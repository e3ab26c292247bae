//! The benchmark corpora, shared by `data-load jsonl` (which writes them as
//! collector input lines) and `ingest-probe` (which inserts the rows bulk
//! ingest would write for them), so both measure the same documents.
//!
//! - `short`: `bulk record number {i} token{i} shared words`, metadata `{"i": i}`
//!   (the corpus of issue #13's first measurements);
//! - `kb`: about 1 KB of words drawn from a fixed 8,192-word vocabulary with a
//!   skewed (roughly Zipfian) distribution, plus `token{i}` and `shared words`,
//!   metadata `{"i": i}`.

/// The corpus kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// About 40 bytes of text.
    Short,
    /// About 1 KB of text.
    Kb,
}

impl Kind {
    /// From a command-line word.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "short" => Some(Kind::Short),
            "kb" => Some(Kind::Kb),
            _ => None,
        }
    }
}

/// A deterministic 64-bit mixer (splitmix64).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const SYLLABLES: [&str; 32] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "ja", "ke", "li",
    "ma", "no", "pe", "qui", "ra", "se", "to", "u", "ve", "wa", "xi", "yo", "ze", "an", "el", "or",
];

/// Word `w` of the vocabulary (two to four syllables).
pub fn word(w: u64, out: &mut String) {
    let h = mix(w ^ 0x5eed);
    let n = 2 + (h % 3);
    for k in 0..n {
        out.push_str(SYLLABLES[((h >> (8 + 5 * k)) & 31) as usize]);
    }
}

/// The text of record `i`.
pub fn text(kind: Kind, i: u64) -> String {
    match kind {
        Kind::Short => format!("bulk record number {i} token{i} shared words"),
        Kind::Kb => {
            let mut s = String::with_capacity(1100);
            s.push_str("token");
            s.push_str(&i.to_string());
            s.push_str(" shared words");
            let mut k = 0u64;
            while s.len() < 1000 {
                let r = mix(i.wrapping_mul(1_000_003).wrapping_add(k));
                // Skewed choice: small word numbers are far more frequent.
                let w = (r % 8192) * ((r >> 20) % 8192) / 8192;
                s.push(' ');
                word(w, &mut s);
                if (r >> 40).is_multiple_of(13) {
                    s.push('.');
                }
                k += 1;
            }
            s
        }
    }
}

/// The collector input line (JSON) of record `i`.
pub fn input_line(kind: Kind, i: u64) -> String {
    format!(
        "{{\"text\":\"{}\",\"metadata\":{{\"i\":{i}}}}}",
        text(kind, i)
    )
}
