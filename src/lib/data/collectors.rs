//! The node's local collector registry: `text`, `file` (restricted to
//! operator-configured roots) and, when built, `http`
//! (spec/agent-data-facts.md §14).

use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One collected item, before the node validates and stores it.
#[derive(Debug, Clone, Default)]
pub struct Item {
    /// The exact content bytes.
    pub bytes: Vec<u8>,
    /// The media type as given (normalised later by the node).
    pub media_type: String,
    /// `source.uri`.
    pub uri: String,
    /// `source.external_id`.
    pub external_id: Option<String>,
    /// Caller metadata (an object, validated later).
    pub metadata: Option<Value>,
    /// `observed_at` as given.
    pub observed_at: Option<String>,
    /// `key`.
    pub key: Option<String>,
    /// `version`.
    pub version: Option<String>,
    /// `supersedes_id`.
    pub supersedes_id: Option<String>,
    /// Provenance entries (shape-checked).
    pub provenance: Option<Vec<Map<String, Value>>>,
    /// Signature (shape-checked).
    pub signature: Option<Map<String, Value>>,
}

/// What a collector run returns.
#[derive(Debug, Default)]
pub struct Output {
    /// The items, in order.
    pub items: Vec<Item>,
    /// An optional continuation cursor.
    pub cursor: Option<String>,
}

/// What a collector may use.
#[derive(Debug, Clone)]
pub struct Env<'a> {
    /// The effective record byte limit.
    pub limit: u64,
    /// Canonical roots the file collector may read under.
    pub file_roots: &'a [PathBuf],
    /// Whether the http collector may reach private and reserved
    /// addresses (operator opt-in in the node config).
    pub http_allow_private_networks: bool,
}

/// A built-in collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collector {
    /// Caller-supplied UTF-8 text.
    Text,
    /// One local regular file under a configured root.
    File,
    /// One HTTP(S) resource through the SSRF-safe fetcher.
    Http,
}

/// Every registered collector, sorted by id.
pub fn registry() -> &'static [Collector] {
    &[Collector::File, Collector::Http, Collector::Text]
}

/// Looks a collector up in the local registry.
pub fn lookup(id: &str) -> Option<Collector> {
    registry().iter().copied().find(|c| c.id() == id)
}

impl Collector {
    /// The collector id.
    pub fn id(self) -> &'static str {
        match self {
            Collector::Text => "text",
            Collector::File => "file",
            Collector::Http => "http",
        }
    }

    /// The manifest entry.
    pub fn describe(self) -> Value {
        match self {
            Collector::File => json!({
                "collector_id": "file",
                "description": "Collect one local regular file",
                "input_schema": {"type": "object", "required": ["path"], "properties": {
                    "path": {"type": "string"}, "media_type": {"type": "string"},
                    "source_uri": {"type": "string"}}}
            }),
            Collector::Http => json!({
                "collector_id": "http",
                "description": "Collect one HTTP(S) resource with bounded redirects, time, and bytes",
                "input_schema": {"type": "object", "required": ["url"], "properties": {
                    "url": {"type": "string", "format": "uri"}, "headers": {"type": "object"}}}
            }),
            Collector::Text => json!({
                "collector_id": "text",
                "description": "Collect caller-supplied UTF-8 text",
                "input_schema": {"type": "object", "required": ["text"], "properties": {
                    "text": {"type": "string"}, "media_type": {"type": "string"},
                    "source_uri": {"type": "string"}}}
            }),
        }
    }

    /// Runs the collector on an input object.
    pub fn run(self, input: &Map<String, Value>, env: &Env<'_>) -> Result<Output> {
        let item = match self {
            Collector::Text => text(input, env)?,
            Collector::File => file(input, env)?,
            Collector::Http => http(input, env)?,
        };
        Ok(Output {
            items: vec![item],
            cursor: None,
        })
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

/// An optional field that must be a non-empty string when present.
pub fn opt_str(input: &Map<String, Value>, field: &str) -> Result<Option<String>> {
    match input.get(field) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{field} must be a non-empty string"))),
    }
}

fn req_str(input: &Map<String, Value>, field: &str) -> Result<String> {
    opt_str(input, field)?.ok_or_else(|| bad(format!("{field} must be a non-empty string")))
}

/// The fields every built-in collector accepts (§14.A), into `item`.
pub fn common_fields(input: &Map<String, Value>, item: &mut Item) -> Result<()> {
    match input.get("metadata") {
        None => {}
        Some(v @ Value::Object(_)) => item.metadata = Some(v.clone()),
        Some(_) => {
            return Err(Error::new(
                Code::InvalidJson,
                "metadata must be a JSON object",
            ));
        }
    }
    item.observed_at = opt_str(input, "observed_at")?;
    item.key = opt_str(input, "key")?;
    item.version = opt_str(input, "version")?;
    item.supersedes_id = opt_str(input, "supersedes_id")?;
    if let Some(p) = input.get("provenance") {
        let Value::Array(entries) = p else {
            return Err(bad("provenance must be an array"));
        };
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let Value::Object(m) = e else {
                return Err(bad("provenance entries must be objects"));
            };
            let mut n = Map::new();
            n.insert("activity".into(), req_str(m, "activity")?.into());
            n.insert("at".into(), req_str(m, "at")?.into());
            if let Some(a) = opt_str(m, "actor")? {
                n.insert("actor".into(), a.into());
            }
            match m.get("input_ids") {
                None => {}
                Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => {
                    n.insert("input_ids".into(), Value::Array(ids.clone()));
                }
                Some(_) => return Err(bad("provenance input_ids must be an array of strings")),
            }
            out.push(n);
        }
        item.provenance = Some(out);
    }
    if let Some(s) = input.get("signature") {
        let Value::Object(m) = s else {
            return Err(bad("signature must be an object"));
        };
        let mut n = Map::new();
        for f in ["algorithm", "signer", "value"] {
            n.insert(f.into(), req_str(m, f)?.into());
        }
        item.signature = Some(n);
    }
    Ok(())
}

/// The error for content over the effective limit.
pub fn too_large(limit: u64) -> Error {
    Error::new(
        Code::ContentTooLarge,
        format!("Collected content exceeds the {limit}-byte limit"),
    )
    .with("max_record_bytes", limit)
}

fn text(input: &Map<String, Value>, env: &Env<'_>) -> Result<Item> {
    let text = req_str(input, "text")?;
    let mut item = Item {
        media_type: opt_str(input, "media_type")?.unwrap_or_else(|| "text/plain".into()),
        ..Item::default()
    };
    let source_uri = opt_str(input, "source_uri")?;
    item.external_id = opt_str(input, "external_id")?;
    common_fields(input, &mut item)?;
    if text.len() as u64 > env.limit {
        return Err(too_large(env.limit));
    }
    item.uri = match source_uri {
        Some(u) => u,
        None => format!(
            "urn:agent-data:text:sha256:{}",
            Sha256Hex::digest(text.as_bytes())
        ),
    };
    item.bytes = text.into_bytes();
    Ok(item)
}

/// The media type the file collector infers from an extension.
pub fn media_type_for_path(path: &str) -> &'static str {
    let lower = path.to_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "txt" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "jsonl" => "application/x-ndjson",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        _ => "application/octet-stream",
    }
}

/// `file://` URL of an absolute path, percent-encoding every byte outside
/// the URL path-safe set.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn file(input: &Map<String, Value>, env: &Env<'_>) -> Result<Item> {
    let path = req_str(input, "path")?;
    let mut item = Item::default();
    let media_type = opt_str(input, "media_type")?;
    let source_uri = opt_str(input, "source_uri")?;
    let external_id = opt_str(input, "external_id")?;
    common_fields(input, &mut item)?;
    if env.file_roots.is_empty() {
        return Err(Error::new(
            Code::InvalidFile,
            "the file collector has no configured roots; run `agent-task data init --file-root DIR` or list file_roots in the node config",
        ));
    }
    let opened = open_under_roots(&path, env.file_roots)?;
    let md = opened.metadata;
    if md.len() > env.limit {
        return Err(too_large(env.limit));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    opened
        .file
        .take(env.limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|_| file_refused())?;
    if bytes.len() as u64 > env.limit {
        return Err(too_large(env.limit));
    }
    let real = opened.path;
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .map(crate::clock::rfc3339_millis);
    let real_str = real.to_str().ok_or_else(file_refused)?.to_owned();
    item.media_type = media_type.unwrap_or_else(|| media_type_for_path(&real_str).into());
    item.uri = source_uri.unwrap_or_else(|| file_url(&real));
    item.external_id = Some(external_id.unwrap_or_else(|| real_str.clone()));
    if item.observed_at.is_none() {
        item.observed_at = mtime.clone();
    }
    let mut meta = match item.metadata.take() {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    meta.insert("file_name".into(), name.into());
    meta.insert("file_size".into(), bytes.len().into());
    if let Some(m) = mtime {
        meta.insert("file_modified_at".into(), m.into());
    }
    item.metadata = Some(Value::Object(meta));
    item.bytes = bytes;
    Ok(item)
}

/// The one refusal of the file collector for a path it will not read:
/// outside every root, missing, unreadable, a link anywhere on the way, a
/// file with more than one hard link, or not a regular file all give this
/// same error (same code, message and
/// status), so the answer is no oracle for which host paths exist.
pub fn file_refused() -> Error {
    Error::new(
        Code::InvalidFile,
        "path is not a readable regular file beneath a configured file root (symbolic links are not followed; a file with more than one hard link is refused)",
    )
}

/// Opens `path` (absolute, or relative to the working directory) beneath
/// the first configured root it lies under, by name relative to the root's
/// descriptor (see [`super::beneath`]).
fn open_under_roots(path: &str, roots: &[PathBuf]) -> Result<super::beneath::Opened> {
    let abs = std::path::absolute(path).map_err(|_| file_refused())?;
    // `strip_prefix` drops a trailing `/` or `/.`, which must not turn
    // "a directory named f" into "the file f".
    if !super::beneath::names_an_entry(&abs) {
        return Err(file_refused());
    }
    for root in roots {
        let Ok(rel) = abs.strip_prefix(root) else {
            continue;
        };
        if let Ok(o) = super::beneath::open_beneath(root, rel, super::beneath::Strategy::Auto) {
            return Ok(o);
        }
    }
    Err(file_refused())
}

/// Redirects the http collector follows.
pub const HTTP_MAX_REDIRECTS: u32 = 3;
/// Whole-collection deadline of the http collector.
pub const HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

fn http(input: &Map<String, Value>, env: &Env<'_>) -> Result<Item> {
    let url = req_str(input, "url")?;
    let mut headers = Vec::new();
    match input.get("headers") {
        None => {}
        Some(Value::Object(h)) => {
            for (k, v) in h {
                let Value::String(v) = v else {
                    return Err(bad("headers must be an object of strings"));
                };
                headers.push((k.clone(), v.clone()));
            }
        }
        Some(_) => return Err(bad("headers must be an object of strings")),
    }
    let mut item = Item {
        external_id: opt_str(input, "external_id")?,
        ..Item::default()
    };
    common_fields(input, &mut item)?;
    let policy = crate::net::FetchPolicy {
        allow_private_networks: env.http_allow_private_networks,
        max_redirects: HTTP_MAX_REDIRECTS,
        timeout: HTTP_TIMEOUT,
        max_bytes: env.limit,
    };
    let resp = crate::net::fetch(&crate::net::FetchRequest { url, headers }, &policy)?;
    if !(200..300).contains(&resp.status) {
        return Err(Error::new(
            Code::HttpStatusError,
            format!("HTTP collection ended with status {}", resp.status),
        )
        .with("status", resp.status));
    }
    if resp.body.len() as u64 > env.limit {
        return Err(too_large(env.limit));
    }
    item.media_type = resp
        .header("content-type")
        .unwrap_or("application/octet-stream")
        .to_owned();
    let mut meta = match item.metadata.take() {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    meta.insert("http_status".into(), resp.status.into());
    meta.insert("final_url".into(), resp.final_url.clone().into());
    if let Some(e) = resp.header("etag") {
        meta.insert("etag".into(), e.into());
    }
    if let Some(lm) = resp.header("last-modified") {
        meta.insert("last_modified".into(), lm.into());
        if item.observed_at.is_none() {
            item.observed_at = jiff::fmt::rfc2822::DateTimeParser::new()
                .parse_timestamp(lm)
                .ok()
                .map(crate::clock::rfc3339_millis);
        }
    }
    item.metadata = Some(Value::Object(meta));
    item.uri = resp.final_url;
    item.bytes = resp.body;
    Ok(item)
}
