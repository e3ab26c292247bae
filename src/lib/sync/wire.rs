//! The `agent-data-sync/v1` wire (facts §10–§12): limits, the page
//! request, the page response's shape, the page-control payload, the sync
//! payload objects and the sync timestamp profile.

use super::adds::bundle::{self, Bundle};
use super::adds::encoding::{b64u_fixed, is_key_b64u, x25519_key_id};
use super::adds::grant::Recipient;
use super::adds::jcs::utf16_len;
use crate::data::syntax::{is_collection_id, is_record_id};
use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The protocol name.
pub const PROTOCOL: &str = "agent-data-sync/v1";
/// The payload protocol.
pub const OBJECT_PROTOCOL: &str = "agent-data-sync-object/v1";
/// The inline profile.
pub const INLINE_PROFILE: &str = "adds/0.1-inline";
/// Manifest `media_type` of every sync object.
pub const MEDIA_TYPE: &str = "application/vnd.agenttool.data-sync+json";
/// Manifest `schema` of every sync object.
pub const SCHEMA: &str = "urn:agenttool:agent-data-sync-object:v1";
/// Longest cursor.
pub const MAX_CURSOR: usize = 4096;
/// Longest node id.
pub const MAX_NODE_ID: usize = 512;

/// `SyncLimits` (facts §12.7), advertised in the manifest's `sync` descriptor.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct SyncLimits {
    /// Page `limit` when absent.
    pub default_page_changes: u64,
    /// Ceiling on a requested limit and on changes accepted from a peer.
    pub max_page_changes: u64,
    /// Record-content budget per page when absent.
    pub default_plaintext_bytes: u64,
    /// Ceiling on the budget.
    pub max_plaintext_bytes: u64,
    /// Pull `max_pages` when absent.
    pub default_pull_pages: u64,
    /// Ceiling on `max_pages`.
    pub max_pull_pages: u64,
    /// Encoded page and decrypted object ceiling.
    pub max_response_bytes: u64,
    /// One deadline per page request.
    pub request_timeout_ms: u64,
    /// Lifetime of the grants a source issues.
    pub grant_ttl_seconds: u64,
}

impl Default for SyncLimits {
    fn default() -> Self {
        SyncLimits {
            default_page_changes: 10,
            max_page_changes: 100,
            default_plaintext_bytes: 1_048_576,
            max_plaintext_bytes: 10_485_760,
            default_pull_pages: 10,
            max_pull_pages: 100,
            max_response_bytes: 33_554_432,
            request_timeout_ms: 15_000,
            grant_ttl_seconds: 300,
        }
    }
}

fn req_err(code: Code, msg: &str) -> Error {
    Error::new(code, msg.to_owned())
}

pub use crate::data::node::is_feed_id;

/// 1–512 characters, no C0 controls or DEL.
pub fn is_node_id(s: &str) -> bool {
    let n = utf16_len(s);
    (1..=MAX_NODE_ID).contains(&n) && !s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f)
}

/// A 1–4096 character cursor.
pub fn is_cursor(s: &str) -> bool {
    (1..=MAX_CURSOR).contains(&utf16_len(s))
}

/// Parses a recipient object exactly (`invalid_recipient`).
pub fn parse_recipient(v: &Value) -> Result<Recipient> {
    let bad = |m: &str| req_err(Code::InvalidRecipient, m);
    let Value::Object(m) = v else {
        return Err(bad("recipient must be an object"));
    };
    if m.len() != 3
        || !["id", "x25519_public_key", "x25519_key_id"]
            .iter()
            .all(|k| m.contains_key(*k))
    {
        return Err(bad(
            "recipient must be exactly {id, x25519_public_key, x25519_key_id}",
        ));
    }
    let id = m["id"].as_str().unwrap_or("");
    if !(1..=2048).contains(&utf16_len(id)) {
        return Err(bad("recipient.id must be a 1-2048 character string"));
    }
    let key = m["x25519_public_key"].as_str().unwrap_or("");
    if !is_key_b64u(key) {
        return Err(bad(
            "recipient.x25519_public_key must be 32 bytes of canonical base64url",
        ));
    }
    let raw = b64u_fixed::<32>(key, "key").map_err(|_| bad("recipient key"))?;
    if m["x25519_key_id"].as_str() != Some(x25519_key_id(&raw).as_str()) {
        return Err(bad("recipient.x25519_key_id is not the key's fingerprint"));
    }
    Ok(Recipient::new(id, &raw))
}

/// A normalised page request (facts §12.3).
#[derive(Debug, Clone)]
pub struct PageRequest {
    /// Collection.
    pub collection_id: String,
    /// Opaque cursor (with its feed id).
    pub cursor: Option<String>,
    /// The feed the cursor belongs to.
    pub expected_feed_id: Option<String>,
    /// Changes at most.
    pub limit: u64,
    /// Record-content budget.
    pub max_plaintext_bytes: u64,
    /// Who the grants are for.
    pub recipient: Recipient,
}

impl PageRequest {
    /// The request body the destination sends.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("protocol".into(), PROTOCOL.into());
        m.insert("collection_id".into(), self.collection_id.clone().into());
        if let (Some(c), Some(f)) = (&self.cursor, &self.expected_feed_id) {
            m.insert("cursor".into(), c.clone().into());
            m.insert("expected_feed_id".into(), f.clone().into());
        }
        m.insert("limit".into(), self.limit.into());
        m.insert(
            "max_plaintext_bytes".into(),
            self.max_plaintext_bytes.into(),
        );
        m.insert("recipient".into(), self.recipient.to_json());
        Value::Object(m)
    }
}

/// A positive safe integer option: absent or `null` → `default`; not a
/// positive integer → `invalid_sync_request`; above `max` →
/// `sync_limit_exceeded`.
pub fn bounded(v: Option<&Value>, default: u64, max: u64, name: &str) -> Result<u64> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(x) => match x.as_u64() {
            Some(n) if n >= 1 && n as f64 <= 9_007_199_254_740_991.0 => {
                if n > max {
                    Err(Error::new(
                        Code::SyncLimitExceeded,
                        format!("{name} cannot exceed {max}"),
                    ))
                } else {
                    Ok(n)
                }
            }
            _ => Err(Error::new(
                Code::InvalidSyncRequest,
                format!("{name} must be a positive integer"),
            )),
        },
    }
}

/// Normalises a page request body (after the scope check).
pub fn parse_page_request(body: &Map<String, Value>, limits: &SyncLimits) -> Result<PageRequest> {
    const KEYS: &[&str] = &[
        "protocol",
        "collection_id",
        "cursor",
        "expected_feed_id",
        "limit",
        "max_plaintext_bytes",
        "recipient",
    ];
    if let Some(k) = body.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Error::new(
            Code::InvalidSyncRequest,
            format!("unknown sync request member {k:?}"),
        ));
    }
    if body.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
        return Err(req_err(
            Code::UnsupportedSyncProtocol,
            "protocol must be agent-data-sync/v1",
        ));
    }
    let collection_id = body
        .get("collection_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !is_collection_id(collection_id) {
        return Err(req_err(
            Code::InvalidCollectionId,
            "collection_id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        ));
    }
    let cursor = match body.get("cursor") {
        None => None,
        Some(Value::String(s)) if is_cursor(s) => Some(s.clone()),
        Some(_) => {
            return Err(req_err(
                Code::InvalidSyncCursor,
                "cursor must be a 1-4096 character string",
            ));
        }
    };
    let expected_feed_id = match body.get("expected_feed_id") {
        None => None,
        Some(Value::String(s)) if is_feed_id(s) => Some(s.clone()),
        Some(_) => {
            return Err(req_err(
                Code::InvalidFeedId,
                "expected_feed_id is not a feed id",
            ));
        }
    };
    if cursor.is_some() != expected_feed_id.is_some() {
        return Err(req_err(
            Code::InvalidSyncRequest,
            "cursor and expected_feed_id must be sent together",
        ));
    }
    let limit = bounded(
        body.get("limit"),
        limits.default_page_changes,
        limits.max_page_changes,
        "limit",
    )?;
    let max_plaintext_bytes = bounded(
        body.get("max_plaintext_bytes"),
        limits.default_plaintext_bytes,
        limits.max_plaintext_bytes,
        "max_plaintext_bytes",
    )?;
    let recipient = parse_recipient(body.get("recipient").unwrap_or(&Value::Null))?;
    Ok(PageRequest {
        collection_id: collection_id.to_owned(),
        cursor,
        expected_feed_id,
        limit,
        max_plaintext_bytes,
        recipient,
    })
}

/// One inline encrypted object, wire-decoded.
#[derive(Debug, Clone)]
pub struct Inline {
    /// The bundle.
    pub bundle: Bundle,
    /// The grant (an object, validated when opened).
    pub grant: Value,
}

/// One change header.
#[derive(Debug, Clone)]
pub struct Header {
    /// `change_<sequence>`.
    pub id: String,
    /// `record.created` or `record.tombstoned`.
    pub kind: String,
    /// Sequence.
    pub sequence: u64,
    /// Collection.
    pub collection_id: String,
    /// Record.
    pub record_id: String,
    /// When.
    pub occurred_at: String,
    /// Its object.
    pub object: Inline,
}

/// A page whose shape passed (facts §12.4), not yet opened.
#[derive(Debug, Clone)]
pub struct PageView {
    /// Source node id.
    pub origin_node_id: String,
    /// Feed id.
    pub feed_id: String,
    /// Collection.
    pub collection_id: String,
    /// The request cursor, echoed.
    pub previous_cursor: Option<String>,
    /// The next cursor.
    pub cursor: String,
    /// More after this page.
    pub has_more: bool,
    /// The collection object.
    pub collection_object: Inline,
    /// Changes in order.
    pub changes: Vec<Header>,
    /// The page-control object.
    pub control_object: Inline,
}

fn page_err(msg: impl Into<String>) -> Error {
    Error::new(
        Code::InvalidSyncPage,
        format!("invalid sync page: {}", msg.into()),
    )
}

fn exact_keys<'a>(
    v: &'a Value,
    required: &[&str],
    optional: &[&str],
) -> Option<&'a Map<String, Value>> {
    let Value::Object(m) = v else { return None };
    let known = |k: &str| required.contains(&k) || optional.contains(&k);
    (m.keys().all(|k| known(k)) && required.iter().all(|k| m.contains_key(*k))).then_some(m)
}

/// The inline object at `v`; its grant is moved out of the page.
fn inline(v: Option<&mut Value>, budget: &mut u64) -> Result<Inline> {
    let v = v.ok_or_else(|| page_err("inline object keys"))?;
    let m = exact_keys(v, &["profile", "bundle", "grant"], &[])
        .ok_or_else(|| page_err("inline object keys"))?;
    if m["profile"] != INLINE_PROFILE {
        return Err(page_err("inline object profile"));
    }
    if !m["grant"].is_object() {
        return Err(page_err("inline object grant"));
    }
    let bundle = bundle::decode_wire(&m["bundle"], budget)?;
    Ok(Inline {
        bundle,
        grant: v["grant"].take(),
    })
}

/// Validates a page's shape before any decryption; every failure is
/// `invalid_sync_page`, a byte overrun `sync_response_too_large`. The
/// page is consumed: its grants move into the view.
pub fn validate_page(mut v: Value, limit: u64, limits: &SyncLimits) -> Result<PageView> {
    let m = exact_keys(
        &v,
        &[
            "protocol",
            "origin_node_id",
            "feed_id",
            "collection_id",
            "cursor",
            "has_more",
            "collection_object",
            "changes",
            "control_object",
        ],
        &["previous_cursor"],
    )
    .ok_or_else(|| page_err("page keys"))?;
    if m["protocol"] != PROTOCOL {
        return Err(page_err("protocol"));
    }
    let text = |k: &str| m[k].as_str().map(str::to_owned);
    let origin_node_id = text("origin_node_id")
        .filter(|s| is_node_id(s))
        .ok_or_else(|| page_err("origin_node_id"))?;
    let feed_id = text("feed_id")
        .filter(|s| is_feed_id(s))
        .ok_or_else(|| page_err("feed_id"))?;
    let collection_id = text("collection_id")
        .filter(|s| is_collection_id(s))
        .ok_or_else(|| page_err("collection_id"))?;
    let previous_cursor = match m.get("previous_cursor") {
        None => None,
        Some(Value::String(s)) if is_cursor(s) => Some(s.clone()),
        Some(_) => return Err(page_err("previous_cursor")),
    };
    let cursor = text("cursor")
        .filter(|s| is_cursor(s))
        .ok_or_else(|| page_err("cursor"))?;
    let has_more = m["has_more"]
        .as_bool()
        .ok_or_else(|| page_err("has_more"))?;
    let arr = v
        .get_mut("changes")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| page_err("changes"))?;
    if arr.len() as u64 > limit || arr.len() as u64 > limits.max_page_changes {
        return Err(page_err("more changes than requested"));
    }
    if has_more && arr.is_empty() {
        return Err(page_err("has_more with no changes"));
    }
    let mut budget = limits.max_response_bytes;
    let mut changes = Vec::with_capacity(arr.len());
    let mut last = 0u64;
    for c in arr {
        let h = exact_keys(
            c,
            &[
                "id",
                "type",
                "sequence",
                "collection_id",
                "record_id",
                "occurred_at",
                "object",
            ],
            &[],
        )
        .ok_or_else(|| page_err("change keys"))?;
        let kind = h["type"].as_str().unwrap_or("");
        if kind != "record.created" && kind != "record.tombstoned" {
            return Err(page_err("change type"));
        }
        let sequence = match h["sequence"].as_u64() {
            Some(n) if n > last && n as f64 <= 9_007_199_254_740_991.0 => n,
            _ => return Err(page_err("change sequences must increase")),
        };
        last = sequence;
        if h["id"].as_str() != Some(format!("change_{sequence}").as_str()) {
            return Err(page_err("change id"));
        }
        if h["collection_id"].as_str() != Some(collection_id.as_str()) {
            return Err(page_err("change collection_id"));
        }
        let record_id = h["record_id"].as_str().unwrap_or("");
        if !is_record_id(record_id) {
            return Err(page_err("change record_id"));
        }
        let occurred_at = h["occurred_at"].as_str().unwrap_or("");
        if parse_instant(occurred_at).is_none() {
            return Err(page_err("change occurred_at"));
        }
        let (kind, record_id, occurred_at) = (
            kind.to_owned(),
            record_id.to_owned(),
            occurred_at.to_owned(),
        );
        changes.push(Header {
            id: format!("change_{sequence}"),
            kind,
            sequence,
            collection_id: collection_id.clone(),
            record_id,
            occurred_at,
            object: inline(c.get_mut("object"), &mut budget)?,
        });
    }
    let collection_object = inline(v.get_mut("collection_object"), &mut budget)?;
    let control_object = inline(v.get_mut("control_object"), &mut budget)?;
    Ok(PageView {
        origin_node_id,
        feed_id,
        collection_id,
        previous_cursor,
        cursor,
        has_more,
        collection_object,
        changes,
        control_object,
    })
}

/// The page-control payload of a page (facts §10): its routing with every
/// object replaced by its root CID.
#[allow(clippy::too_many_arguments)] // one argument per routing member
pub fn control_payload(
    origin_node_id: &str,
    feed_id: &str,
    collection_id: &str,
    previous_cursor: Option<&str>,
    cursor: &str,
    has_more: bool,
    collection_object_cid: &str,
    changes: &[(u64, &str, &str, &str, &str)],
) -> Value {
    let mut m = Map::new();
    m.insert("protocol".into(), OBJECT_PROTOCOL.into());
    m.insert("kind".into(), "page".into());
    m.insert("origin_node_id".into(), origin_node_id.into());
    m.insert("feed_id".into(), feed_id.into());
    m.insert("collection_id".into(), collection_id.into());
    if let Some(p) = previous_cursor {
        m.insert("previous_cursor".into(), p.into());
    }
    m.insert("cursor".into(), cursor.into());
    m.insert("has_more".into(), has_more.into());
    m.insert("collection_object_cid".into(), collection_object_cid.into());
    m.insert(
        "changes".into(),
        Value::Array(
            changes
                .iter()
                .map(|(seq, kind, record_id, occurred_at, cid)| {
                    json!({"id": format!("change_{seq}"), "type": kind, "sequence": seq,
                           "collection_id": collection_id, "record_id": record_id,
                           "occurred_at": occurred_at, "object_cid": cid})
                })
                .collect(),
        ),
    );
    Value::Object(m)
}

impl PageView {
    /// The control payload this page must carry.
    pub fn rebuilt_control(&self) -> Value {
        let changes: Vec<(u64, &str, &str, &str, &str)> = self
            .changes
            .iter()
            .map(|h| {
                (
                    h.sequence,
                    h.kind.as_str(),
                    h.record_id.as_str(),
                    h.occurred_at.as_str(),
                    h.object.bundle.root.as_str(),
                )
            })
            .collect();
        control_payload(
            &self.origin_node_id,
            &self.feed_id,
            &self.collection_id,
            self.previous_cursor.as_deref(),
            &self.cursor,
            self.has_more,
            &self.collection_object.bundle.root,
            &changes,
        )
    }
}

/// Checks a decrypted payload's shape (facts §10); returns its kind.
pub fn payload_kind(v: &Value) -> Option<&'static str> {
    let Value::Object(m) = v else { return None };
    if m.get("protocol").and_then(Value::as_str) != Some(OBJECT_PROTOCOL) {
        return None;
    }
    let keys = |want: &[&str], opt: &[&str]| {
        m.keys()
            .all(|k| want.contains(&k.as_str()) || opt.contains(&k.as_str()))
            && want.iter().all(|k| m.contains_key(*k))
    };
    match m.get("kind").and_then(Value::as_str)? {
        "collection"
            if keys(&["protocol", "kind", "collection"], &[]) && m["collection"].is_object() =>
        {
            Some("collection")
        }
        "record"
            if keys(&["protocol", "kind", "record", "content"], &[]) && m["record"].is_object() =>
        {
            let c = m["content"].as_object()?;
            (c.len() == 2 && c.get("encoding")? == "base64url" && c.get("data")?.is_string())
                .then_some("record")
        }
        "tombstone"
            if keys(&["protocol", "kind", "tombstone"], &[]) && m["tombstone"].is_object() =>
        {
            Some("tombstone")
        }
        "page"
            if keys(
                &[
                    "protocol",
                    "kind",
                    "origin_node_id",
                    "feed_id",
                    "collection_id",
                    "cursor",
                    "has_more",
                    "collection_object_cid",
                    "changes",
                ],
                &["previous_cursor"],
            ) =>
        {
            Some("page")
        }
        _ => None,
    }
}

/// A parsed sync-profile instant: UTC whole seconds and the fraction's
/// digits without trailing zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instant {
    /// Seconds since the epoch (UTC).
    pub seconds: i64,
    /// Fraction digits, trailing zeros stripped.
    pub fraction: String,
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`
/// with a valid calendar, no leap second, offset ≤ 23:59.
pub fn parse_instant(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = b.get(r)?;
        t.iter()
            .all(u8::is_ascii_digit)
            .then(|| t.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut i = 19;
    let mut fraction = String::new();
    if b[i] == b'.' {
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == start {
            return None;
        }
        fraction = s[start..j].trim_end_matches('0').to_owned();
        i = j;
    }
    let offset = match b.get(i)? {
        b'Z' if i + 1 == b.len() => 0,
        c @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *c == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let dim = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > dim[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || se > 59
    {
        return None;
    }
    let seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset;
    Some(Instant { seconds, fraction })
}

/// Whether two sync timestamps denote the same instant.
pub fn same_instant(a: &str, b: &str) -> bool {
    matches!((parse_instant(a), parse_instant(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants() {
        assert!(same_instant(
            "2026-12-01T12:00:00.1Z",
            "2026-12-01T12:00:00.100000Z"
        ));
        assert!(same_instant(
            "2026-12-01T12:00:00.1Z",
            "2026-12-01T13:00:00.1+01:00"
        ));
        assert!(!same_instant(
            "2026-12-01T12:00:00.1Z",
            "2026-12-01T12:00:00.01Z"
        ));
        assert_eq!(
            parse_instant("1970-01-01T00:00:00Z").map(|i| i.seconds),
            Some(0)
        );
        assert_eq!(
            parse_instant("2026-12-01T00:00:00Z").map(|i| i.seconds),
            Some(1_796_083_200)
        );
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:60Z",
            "2026-12-01t00:00:00Z",
            "2026-12-01T00:00:00z",
            "2026-12-01T00:00:00.Z",
            "2026-12-01T00:00:00+24:00",
            "2026-12-01T00:00:00",
        ] {
            assert!(parse_instant(bad).is_none(), "{bad}");
        }
        assert!(parse_instant("2024-02-29T23:59:59.123456789012Z").is_some());
    }

    #[test]
    fn request_normalisation() {
        let l = SyncLimits::default();
        let rcpt = json!({"id":"did:x","x25519_public_key":"D6poTtKIZ7l_Smot7l34zpdOdrcBjj8iocTPJnhXDyA","x25519_key_id":"sha256:Zc9cmx3l1B91jLZ_LQXz4xaiA_y1Y1HZ4_FY4Clix00"});
        let base = json!({"protocol": PROTOCOL, "collection_id": "c", "recipient": rcpt});
        let p = |v: Value| parse_page_request(v.as_object().expect("o"), &l).map_err(|e| e.code());
        let ok = p(base.clone()).expect("ok");
        assert_eq!((ok.limit, ok.max_plaintext_bytes), (10, 1_048_576));
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            p(b)
        };
        assert_eq!(with("limit", json!(null)).map(|r| r.limit), Ok(10));
        assert_eq!(
            with("limit", json!(0)).err(),
            Some(Code::InvalidSyncRequest)
        );
        assert_eq!(
            with("limit", json!(1.5)).err(),
            Some(Code::InvalidSyncRequest)
        );
        assert_eq!(
            with("limit", json!(101)).err(),
            Some(Code::SyncLimitExceeded)
        );
        assert_eq!(
            with("cursor", json!(null)).err(),
            Some(Code::InvalidSyncCursor)
        );
        assert_eq!(
            with("cursor", json!("x")).err(),
            Some(Code::InvalidSyncRequest)
        );
        assert_eq!(
            with("expected_feed_id", json!(null)).err(),
            Some(Code::InvalidFeedId)
        );
        assert_eq!(
            with("extra", json!(1)).err(),
            Some(Code::InvalidSyncRequest)
        );
        assert_eq!(
            with("protocol", json!("x")).err(),
            Some(Code::UnsupportedSyncProtocol)
        );
        assert_eq!(
            with("collection_id", json!("-")).err(),
            Some(Code::InvalidCollectionId)
        );
        let mut r = rcpt.clone();
        r["x25519_key_id"] = json!("sha256:AAAA");
        assert_eq!(with("recipient", r).err(), Some(Code::InvalidRecipient));
    }
}
