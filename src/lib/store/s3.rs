//! The S3-compatible blob store: a data directory whose `blob-store.json`
//! names a bucket keeps its objects there instead of in `cas/`
//! (`docs/blob-store.md`).
//!
//! Requests are presigned with SigV4 by `rusty-s3` (sans-IO) and sent over
//! the toolkit's one `ureq` client configuration (`net::client_builder`:
//! no proxy from the environment, no redirect followed), each with a
//! connect timeout and a whole-request deadline. Keys come from the digest
//! alone: `<prefix>sha256/<hex>`.
//!
//! A put asks the bucket for the object first (HEAD with
//! `x-amz-checksum-mode: ENABLED`: an object of the right length whose
//! stored SHA-256 checksum is the digest is kept, anything else is uploaded
//! again), uploads it with `x-amz-checksum-sha256` (in parts above the
//! multipart threshold, each part with its own checksum) and confirms the
//! stored length with a HEAD before it returns, so the metadata naming the
//! object commits only after the object is in the bucket. The bytes are
//! hashed once: a put of a stated digest verifies them while it sends them
//! (the last byte of a single PUT leaves only once the digest matched; a
//! multipart upload completes only then), so other bytes than announced
//! are refused with no object under the key; a put of unknown digest
//! hashes while it spools and sends the spool. A read spools the object
//! (memory up to [`MEM_SPOOL`], else a private temp file) bounded by its
//! recorded length and verifies size and SHA-256 before a byte is handed
//! out.
//!
//! Every request goes through `S3Store::request`: signed once, sent with
//! a whole-request deadline, retried a bounded number of times with backoff
//! on transport failures, timeouts, 5xx answers and S3's retryable codes
//! (`SlowDown`, `RequestTimeout`, `InternalError`); what still fails, and
//! every other refusal (credentials, a missing bucket, a redirect, a TLS
//! failure), is `blob_store_unavailable`.

use super::blob::{BlobBatch, BlobStore, ListedBlob};
use super::cas::{CasStats, PutOutcome};
use super::private_fs;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use rusty_s3::{Bucket, Credentials, Method, S3Action, UrlStyle};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The configuration file inside a data directory that selects the S3 store.
pub const CONFIG_FILE: &str = "blob-store.json";
/// What `info` shows for this store.
pub const KIND: &str = "s3";

/// Largest configuration or credentials file read.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// Largest listing page read from the server.
pub const MAX_ANSWER_BYTES: u64 = 8 << 20;
/// Attempts of one request (transport failures, timeouts, 5xx).
const ATTEMPTS: u32 = 4;
/// First backoff; each next one is four times longer.
const BACKOFF: Duration = Duration::from_millis(100);
/// Validity of a presigned URL (well over any one request's deadline).
const SIGNED_FOR: Duration = Duration::from_secs(3600);
/// Most listing pages `cas fsck` walks (1000 keys each).
const MAX_LIST_PAGES: u32 = 100_000;
/// Most pages in a row without a key that still claim more.
const MAX_EMPTY_PAGES: u32 = 16;
/// Most parts of a multipart upload (S3's limit).
const MAX_PARTS: u64 = 10_000;
/// The default size above which an object goes up in parts, in MiB.
const DEFAULT_MULTIPART_THRESHOLD_MIB: u64 = 64;
/// The largest part size chosen from the threshold (bigger objects get
/// bigger parts only when 10,000 would not hold them).
const MAX_PART: u64 = 16 << 20;
/// Largest CA file read.
const MAX_CA_BYTES: u64 = 1 << 20;
const BUF: usize = 64 * 1024;
/// Objects whose size (recorded, announced or bounded) is at most this
/// are spooled in memory rather than in a temp file under `cas/tmp/`.
const MEM_SPOOL: u64 = 64 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    kind: String,
    endpoint: String,
    region: String,
    bucket: String,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    path_style: bool,
    credentials_file: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    multipart_threshold_mib: Option<u64>,
    #[serde(default)]
    ca_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    access_key_id: String,
    secret_access_key: String,
}

/// A bucket as a blob store.
pub struct S3Store {
    bucket: Bucket,
    creds: Credentials,
    prefix: String,
    agent: ureq::Agent,
    spool: PathBuf,
    timeout: Duration,
    /// Objects over this many bytes go up in parts.
    multipart_threshold: u64,
    /// The size of those parts (see `S3Store::part_size`).
    part_size: u64,
}

impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("S3Store")
            .field("endpoint", &self.bucket.base_url().as_str())
            .field("bucket", &self.bucket.name())
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn config_error(msg: impl Into<String>) -> Error {
    Error::new(Code::Config, msg.into()).with("file", CONFIG_FILE)
}

fn read_small(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    let Some(f) = private_fs::open_private_read(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(config_error(format!(
            "{what} {} is over {MAX_CONFIG_BYTES} bytes",
            path.display()
        )));
    }
    Ok(Some(bytes))
}

fn bounded(what: &str, v: &str, max: usize) -> Result<()> {
    if v.len() > max || v.chars().any(char::is_control) {
        return Err(config_error(format!(
            "{what} is over {max} bytes or holds control characters"
        )));
    }
    Ok(())
}

/// Loads the data directory's S3 store when `root/blob-store.json` exists
/// (`Ok(None)`: the directory uses its local CAS). The file and the
/// credentials file it names must be owner-private regular files; the
/// credentials path must be absolute.
pub(crate) fn load(root: &Path, spool: PathBuf) -> Result<Option<S3Store>> {
    Ok(load_file(&root.join(CONFIG_FILE), spool)?.map(|(store, _)| store))
}

/// Loads an S3 store from a configuration file in the `blob-store.json`
/// format anywhere (`cas migrate --to s3 --config FILE`), under the same
/// rules, with the file's bytes as read (`Ok(None)`: no such file).
pub(crate) fn load_file(path: &Path, spool: PathBuf) -> Result<Option<(S3Store, Vec<u8>)>> {
    let Some(bytes) = read_small(path, "the blob-store configuration")? else {
        return Ok(None);
    };
    let c: ConfigFile = serde_json::from_slice(&bytes)
        .map_err(|e| config_error(format!("{CONFIG_FILE} is not valid: {e}")))?;
    if c.kind != KIND {
        return Err(config_error(format!(
            "{CONFIG_FILE}: kind must be \"{KIND}\", not {:?}",
            c.kind
        )));
    }
    bounded("endpoint", &c.endpoint, 2048)?;
    bounded("region", &c.region, 64)?;
    bounded("prefix", &c.prefix, 512)?;
    bounded("credentials_file", &c.credentials_file, 4096)?;
    let endpoint = url::Url::parse(&c.endpoint)
        .map_err(|e| config_error(format!("endpoint {:?} is not a URL: {e}", c.endpoint)))?;
    let host = endpoint.host_str().unwrap_or_default().to_owned();
    let scheme_ok = match endpoint.scheme() {
        "https" => true,
        "http" => crate::net::is_loopback_host(&host),
        _ => false,
    };
    if !scheme_ok
        || host.is_empty()
        || endpoint.query().is_some()
        || endpoint.fragment().is_some()
        || !endpoint.username().is_empty()
        || endpoint.password().is_some()
    {
        return Err(config_error(
            "endpoint must be an https:// URL (http:// only on loopback) without credentials, \
             query or fragment",
        ));
    }
    let bucket_ok = (3..=63).contains(&c.bucket.len())
        && c.bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !bucket_ok {
        return Err(config_error(
            "bucket must be 3 to 63 lowercase letters, digits, '-' or '.'",
        ));
    }
    if c.region.is_empty() {
        return Err(config_error("region is empty"));
    }
    let prefix_ok = !c.prefix.starts_with('/')
        && c.prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.'))
        && !c.prefix.split('/').any(|s| s == ".." || s == ".");
    if !prefix_ok {
        return Err(config_error(
            "prefix may hold only letters, digits, '/', '-', '_' and '.', and must not start \
             with '/'",
        ));
    }
    let cred_path = PathBuf::from(&c.credentials_file);
    if !cred_path.is_absolute() {
        return Err(config_error("credentials_file must be an absolute path"));
    }
    let cred_bytes = read_small(&cred_path, "the credentials file")?.ok_or_else(|| {
        config_error(format!(
            "the credentials file {} does not exist",
            cred_path.display()
        ))
    })?;
    let cred: CredentialsFile = serde_json::from_slice(&cred_bytes).map_err(|_| {
        // The parser's message could quote the secret: not repeated.
        config_error(format!(
            "the credentials file {} is not {{\"access_key_id\", \"secret_access_key\"}} JSON",
            cred_path.display()
        ))
    })?;
    if cred.access_key_id.is_empty()
        || cred.secret_access_key.is_empty()
        || cred.access_key_id.len() > 256
        || cred.secret_access_key.len() > 256
    {
        return Err(config_error("the credentials are empty or over 256 bytes"));
    }
    let style = if c.path_style {
        UrlStyle::Path
    } else {
        UrlStyle::VirtualHost
    };
    let bucket = Bucket::new(endpoint, style, c.bucket.clone(), c.region.clone())
        .map_err(|e| config_error(format!("bucket: {e}")))?;
    let timeout = Duration::from_millis(c.timeout_ms.unwrap_or(30_000).clamp(100, 600_000));
    let threshold_mib = c
        .multipart_threshold_mib
        .unwrap_or(DEFAULT_MULTIPART_THRESHOLD_MIB);
    if !(5..=5120).contains(&threshold_mib) {
        return Err(config_error("multipart_threshold_mib must be 5 to 5120"));
    }
    let mut builder = crate::net::client_builder(None)
        .timeout_connect(Some(timeout.min(Duration::from_secs(10))))
        .user_agent(concat!("agent-task/", env!("CARGO_PKG_VERSION")));
    if let Some(ca) = &c.ca_file {
        bounded("ca_file", ca, 4096)?;
        let roots = load_ca(Path::new(ca))?;
        builder = builder.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(roots)))
                .build(),
        );
    }
    let agent: ureq::Agent = builder.build().into();
    let store = S3Store {
        bucket,
        creds: Credentials::new(cred.access_key_id, cred.secret_access_key),
        prefix: c.prefix,
        agent,
        spool,
        timeout,
        multipart_threshold: threshold_mib << 20,
        part_size: (threshold_mib << 20).min(MAX_PART),
    };
    Ok(Some((store, bytes)))
}

/// The certificates of the CA file `ca_file` names: an absolute path to a
/// regular file (not a symbolic link) owned by the operator (or root), not
/// writable by group or others, at most 1 MiB of PEM holding at least one
/// certificate. Anything else is `config`.
fn load_ca(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let shown = path.display().to_string();
    let refuse =
        |why: &str| config_error(format!("ca_file {shown} {why}")).with("path", shown.clone());
    if !path.is_absolute() {
        return Err(refuse("is not an absolute path"));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("is a symbolic link"),
            _ => refuse(&format!("cannot be opened: {e}")),
        })?;
    let md = f.metadata().map_err(|e| Error::io("stat", path, e))?;
    if !md.is_file() {
        return Err(refuse("is not a regular file"));
    }
    if md.uid() != rustix::process::geteuid().as_raw() && md.uid() != 0 {
        return Err(refuse("is not owned by the operator (or root)"));
    }
    if md.mode() & 0o022 != 0 {
        return Err(refuse("is writable by group or others"));
    }
    let mut bytes = Vec::new();
    f.take(MAX_CA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_CA_BYTES {
        return Err(refuse("is over 1 MiB"));
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| refuse(&format!("is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(refuse("holds no PEM certificate"));
    }
    Ok(certs
        .iter()
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect())
}

fn b64(bytes: &[u8]) -> String {
    data_encoding::BASE64.encode(bytes)
}

type Response = ureq::http::Response<ureq::Body>;

fn unavailable(what: &str, why: impl Into<String>) -> Error {
    Error::new(
        Code::BlobStoreUnavailable,
        format!("the blob store could not {what}: {}", why.into()),
    )
}

/// Bytes of an error body read for its code; the rest is never read.
pub const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The `<Code>` of an S3 error body (bounded read), if any.
fn s3_code(resp: Response) -> Option<String> {
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_ERROR_BODY)
        .read_to_end(&mut body)
        .ok()?;
    error_code(&body)
}

/// The `<Code>` an S3 error body names: the first one, only when it is
/// 1 to 64 ASCII letters and digits (anything else a server sends is not
/// shown), read from the first [`MAX_ERROR_BODY`] bytes.
pub fn error_code(body: &[u8]) -> Option<String> {
    let body = &body[..body.len().min(MAX_ERROR_BODY as usize)];
    let text = String::from_utf8_lossy(body);
    let start = text.find("<Code>")? + "<Code>".len();
    let end = text[start..].find("</Code>")? + start;
    let code = &text[start..end];
    (!code.is_empty() && code.len() <= 64 && code.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| code.to_owned())
}

/// One page of a bucket listing, as [`list_page`] decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// The objects under the prefix, the prefix taken off their keys.
    pub blobs: Vec<ListedBlob>,
    /// The continuation token of the next page, if the server gave one.
    pub next: Option<String>,
    /// The first and last key of the page as listed (under the prefix or
    /// not), to check that pages go forward.
    pub first_key: Option<String>,
    /// See `first_key`.
    pub last_key: Option<String>,
}

/// Decodes one `ListObjectsV2` answer body: at most [`MAX_ANSWER_BYTES`],
/// UTF-8, the S3 XML; keys outside `prefix` are skipped. Anything else is
/// `blob_store_unavailable`, nothing from it used.
pub fn list_page(body: &[u8], prefix: &str) -> Result<ListPage> {
    let what = "list its objects";
    if body.len() as u64 > MAX_ANSWER_BYTES {
        return Err(unavailable(what, "a listing page over 8 MiB"));
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| unavailable(what, "a listing page that is not UTF-8"))?;
    let page = rusty_s3::actions::ListObjectsV2::parse_response(text)
        .map_err(|e| unavailable(what, format!("an unreadable listing page: {e}")))?;
    let first_key = page.contents.first().map(|c| c.key.clone());
    let last_key = page.contents.last().map(|c| c.key.clone());
    let blobs = page
        .contents
        .into_iter()
        .filter_map(|c| {
            c.key.strip_prefix(prefix).map(|name| ListedBlob {
                name: name.to_owned(),
                size: c.size.unwrap_or(0),
            })
        })
        .collect();
    Ok(ListPage {
        blobs,
        next: page.next_continuation_token,
        first_key,
        last_key,
    })
}

fn refused(what: &str, status: u16, code: Option<String>) -> Error {
    let shown = code.clone().unwrap_or_default();
    let mut e = unavailable(
        what,
        format!("the server answered HTTP {status} {shown}").trim_end(),
    )
    .with("status", status);
    if let Some(c) = code {
        e = e.with("s3_code", c);
    }
    e
}

fn length_of(resp: &Response) -> Option<u64> {
    resp.headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
}

fn integrity(digest: &Sha256Hex, why: &str) -> Error {
    Error::new(
        Code::IntegrityError,
        format!("object {digest} in the bucket does not match its digest or size ({why})"),
    )
    .with("digest", digest.to_string())
}

fn missing(digest: &Sha256Hex) -> Error {
    Error::new(
        Code::IntegrityError,
        format!("object {digest} is missing from the store"),
    )
    .with("digest", digest.to_string())
}

/// How often a request is tried.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Up to [`ATTEMPTS`] times with backoff, on a transport failure, a
    /// timeout, a 5xx answer or one of S3's retryable codes.
    Bounded,
    /// Once (the best-effort abort of a failed multipart upload).
    Once,
}

/// The body a request sends.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Empty,
    Bytes(&'a [u8]),
    /// The first `len` bytes of a local file, read afresh on every attempt.
    File(&'a Path, u64),
    /// A caller's reader, verified as it is sent and kept for the attempts
    /// after the first ([`Tee`]).
    Tee(&'a (dyn TeeBody + 'a)),
}

/// One request: what it is for (the error message), the headers signed
/// with it, its body, its whole-request deadline, its retry policy and the
/// statuses outside 2xx its caller interprets itself (a 404 of a HEAD).
struct Call<'a> {
    what: &'a str,
    headers: &'a [(&'static str, String)],
    payload: Payload<'a>,
    deadline: Duration,
    retry: Retry,
    accept: &'a [u16],
}

impl<'a> Call<'a> {
    fn new(what: &'a str, deadline: Duration) -> Call<'a> {
        Call {
            what,
            headers: &[],
            payload: Payload::Empty,
            deadline,
            retry: Retry::Bounded,
            accept: &[],
        }
    }
}

/// S3's error codes that mean "try again" whatever the status says
/// (`RequestTimeout` comes as a 400).
fn retryable_code(code: &str) -> bool {
    matches!(code, "SlowDown" | "RequestTimeout" | "InternalError")
}

/// Why one attempt failed.
enum Failed {
    /// The connection, the TLS handshake or the deadline: `ureq`'s error.
    Transport(ureq::Error),
    /// Something on this side (the body's file): not retried.
    Local(Error),
}

/// A TLS failure (an unknown issuer, a name mismatch, a handshake
/// refused): retrying cannot help. `ureq` passes rustls's errors up
/// wrapped in an I/O error.
fn is_tls(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Rustls(_) | ureq::Error::Tls(_) | ureq::Error::TlsRequired => true,
        ureq::Error::Io(io) => io
            .get_ref()
            .is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>()),
        _ => false,
    }
}

/// An object's stored length and, when the server keeps one, its
/// `x-amz-checksum-sha256` (base64; `…-N` for a multipart object).
struct Stat {
    len: u64,
    sha256: Option<String>,
}

/// The `x-amz-checksum-sha256` of an answer, when it is a short ASCII value.
fn checksum_of(resp: &Response) -> Option<String> {
    let v = resp.headers().get("x-amz-checksum-sha256")?.to_str().ok()?;
    (!v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| v.to_owned())
}

/// The checksum S3 keeps for a multipart upload with SHA-256: the SHA-256
/// of the parts' SHA-256 digests, in base64, and `-` the part count.
fn composite_checksum(parts: &[[u8; 32]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    format!("{}-{}", b64(&h.finalize()), parts.len())
}

/// The body of `CompleteMultipartUpload`: each part's number, ETag and
/// SHA-256 checksum. ETags were checked to be plain ASCII without markup.
fn complete_body(parts: &[(String, String)]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    for (i, (etag, sum)) in parts.iter().enumerate() {
        xml.push_str(&format!(
            "<Part><ChecksumSHA256>{sum}</ChecksumSHA256><ETag>{etag}</ETag>\
             <PartNumber>{}</PartNumber></Part>",
            i + 1
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    xml
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a small answer (a multipart
/// upload's id or result).
fn small_answer(resp: Response, what: &str) -> Result<String> {
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_ERROR_BODY + 1)
        .read_to_end(&mut body)
        .map_err(|e| unavailable(what, format!("the answer broke off: {e}")))?;
    if body.len() as u64 > MAX_ERROR_BODY {
        return Err(unavailable(what, "an answer over 64 KiB"));
    }
    String::from_utf8(body).map_err(|_| unavailable(what, "an answer that is not UTF-8"))
}

impl S3Store {
    fn key(&self, digest: &Sha256Hex) -> String {
        format!("{}sha256/{}", self.prefix, digest.as_str())
    }

    fn deadline(&self, bytes: u64) -> Duration {
        // The base timeout plus a second per MiB (a floor of 1 MiB/s),
        // counted up to the largest object (4 GiB).
        self.timeout + Duration::from_secs(bytes.min(4 << 30) >> 20)
    }

    /// The one way a request goes out: signs `action` with `c`'s headers,
    /// sends it under `c`'s deadline and retries per `c.retry`. Returns a
    /// 2xx answer or one of `c.accept`; a redirect (never followed), any
    /// other 4xx and what still fails after the attempts are
    /// `blob_store_unavailable` (with `details.status` and `s3_code` when
    /// the server answered; `details.reason` `tls` for a TLS failure, which
    /// is not retried).
    fn request<'a, A: S3Action<'a>>(&self, mut action: A, c: &Call<'_>) -> Result<Response> {
        for (name, value) in c.headers {
            action.headers_mut().insert(*name, value.clone());
        }
        let method = A::METHOD;
        let url = action.sign(SIGNED_FOR);
        let attempts = match c.retry {
            Retry::Bounded => ATTEMPTS,
            Retry::Once => 1,
        };
        let mut last = String::new();
        let mut answered: Option<(u16, Option<String>)> = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                std::thread::sleep(BACKOFF * 4u32.pow(attempt - 1));
            }
            let resp = match self.send_once(method, &url, c) {
                Ok(r) => r,
                Err(Failed::Local(e)) => return Err(e),
                Err(Failed::Transport(e)) if is_tls(&e) => {
                    return Err(
                        unavailable(c.what, format!("TLS failed: {e}")).with("reason", "tls")
                    );
                }
                Err(Failed::Transport(e)) => {
                    last = e.to_string();
                    answered = None;
                    continue;
                }
            };
            let status = resp.status().as_u16();
            if (200..300).contains(&status) || c.accept.contains(&status) {
                return Ok(resp);
            }
            // A HEAD answer has no body to read a code from.
            let code = if method == Method::Head {
                None
            } else {
                s3_code(resp)
            };
            let again = status >= 500 || code.as_deref().is_some_and(retryable_code);
            if !again {
                return Err(refused(c.what, status, code));
            }
            last = format!("HTTP {status} {}", code.clone().unwrap_or_default())
                .trim_end()
                .to_owned();
            answered = Some((status, code));
        }
        let mut e = unavailable(c.what, format!("{last} (after {attempts} attempts)"));
        if let Some((status, code)) = answered {
            e = e.with("status", status);
            if let Some(code) = code {
                e = e.with("s3_code", code);
            }
        }
        Err(e)
    }

    fn send_once(
        &self,
        method: Method,
        url: &url::Url,
        c: &Call<'_>,
    ) -> std::result::Result<Response, Failed> {
        let mut req = ureq::http::Request::builder()
            .method(method.to_str())
            .uri(url.as_str());
        for (name, value) in c.headers {
            req = req.header(*name, value.as_str());
        }
        fn built<T>(
            r: std::result::Result<T, ureq::http::Error>,
        ) -> std::result::Result<T, Failed> {
            r.map_err(|e| Failed::Local(Error::new(Code::Internal, format!("request: {e}"))))
        }
        match c.payload {
            Payload::Empty => self.run(built(req.body(()))?, c.deadline),
            Payload::Bytes(b) => self.run(built(req.body(b))?, c.deadline),
            Payload::File(path, len) => {
                let mut file = std::fs::File::open(path)
                    .map_err(|e| Failed::Local(Error::io("open", path, e)))?
                    .take(len);
                let req = req.header("content-length", len.to_string());
                let body = ureq::SendBody::from_reader(&mut file);
                self.run(built(req.body(body))?, c.deadline)
            }
            Payload::Tee(tee) => {
                let mut body = tee.attempt();
                let req = req.header("content-length", tee.len().to_string());
                let sent = self.run(
                    built(req.body(ureq::SendBody::from_reader(&mut *body)))?,
                    c.deadline,
                );
                drop(body);
                // Bytes other than announced (or a failing reader) ended the
                // body short of its length: refused here, never retried.
                match tee.fault() {
                    Some(e) => Err(Failed::Local(e)),
                    None => sent,
                }
            }
        }
    }

    fn run(
        &self,
        req: ureq::http::Request<impl ureq::AsSendBody>,
        deadline: Duration,
    ) -> std::result::Result<Response, Failed> {
        let req = self
            .agent
            .configure_request(req)
            .timeout_global(Some(deadline))
            .timeout_recv_body(Some(deadline))
            .timeout_per_read(Some(self.timeout))
            .build();
        self.agent.run(req).map_err(Failed::Transport)
    }

    /// The stored length and checksum of an object (`None`: absent), asked
    /// with `x-amz-checksum-mode: ENABLED`. A missing bucket is
    /// `blob_store_unavailable`, never "absent".
    fn head(&self, digest: &Sha256Hex) -> Result<Option<Stat>> {
        let key = self.key(digest);
        let what = "stat an object";
        let headers = [("x-amz-checksum-mode", "ENABLED".to_owned())];
        let resp = self.request(
            self.bucket.head_object(Some(&self.creds), &key),
            &Call {
                headers: &headers,
                accept: &[404],
                ..Call::new(what, self.timeout)
            },
        )?;
        if resp.status().as_u16() == 404 {
            self.check_bucket()?;
            return Ok(None);
        }
        let len =
            length_of(&resp).ok_or_else(|| unavailable(what, "a HEAD answer without a length"))?;
        Ok(Some(Stat {
            len,
            sha256: checksum_of(&resp),
        }))
    }

    fn check_bucket(&self) -> Result<()> {
        let what = "reach its bucket";
        let resp = self.request(
            self.bucket.head_bucket(Some(&self.creds)),
            &Call {
                accept: &[404],
                ..Call::new(what, self.timeout)
            },
        )?;
        match resp.status().as_u16() {
            404 => Err(refused(what, 404, Some("NoSuchBucket".into()))
                .with("bucket", self.bucket.name().to_owned())),
            _ => Ok(()),
        }
    }

    /// The size of the parts of an object of `size` bytes: the configured
    /// part size, grown when 10,000 parts would not hold the object.
    fn part_size(&self, size: u64) -> u64 {
        self.part_size
            .max(size.div_ceil(MAX_PARTS).next_multiple_of(1 << 20))
    }

    /// The SHA-256 digest of each part of `size` bytes read from `src`, as
    /// this store would cut them.
    fn part_digests(&self, src: &mut dyn Read, size: u64) -> Result<Vec<[u8; 32]>> {
        let part = self.part_size(size);
        let mut out = Vec::new();
        let mut buf = vec![0u8; BUF];
        let mut left = size;
        while left > 0 {
            let mut h = Sha256::new();
            let mut in_part = part.min(left);
            left -= in_part;
            while in_part > 0 {
                let n = usize::try_from(in_part.min(BUF as u64)).unwrap_or(BUF);
                src.read_exact(&mut buf[..n]).map_err(read_input)?;
                h.update(&buf[..n]);
                in_part -= n as u64;
            }
            out.push(h.finalize().into());
        }
        Ok(out)
    }

    /// What a HEAD's checksum can vouch for: the object's SHA-256 itself
    /// (`Whole`), or the composite of as many parts as this store would
    /// cut (`Composite`: the parts' digests decide). No checksum, or
    /// another one, is no proof.
    fn vouches(&self, st: &Stat, digest: &Sha256Hex, size: u64) -> Vouch {
        let Some(reported) = st.sha256.as_deref().filter(|_| st.len == size) else {
            return Vouch::No;
        };
        if reported == b64(&digest.to_bytes()) {
            return Vouch::Whole;
        }
        let parts = size.div_ceil(self.part_size(size));
        match reported.rsplit_once('-') {
            Some((_, n)) if n.parse::<u64>().ok() == Some(parts) && parts > 0 => {
                Vouch::Composite(reported.to_owned())
            }
            _ => Vouch::No,
        }
    }

    /// The outcome of an upload once a HEAD confirms the stored length
    /// (the length only: a server may keep no checksum for what it
    /// assembled, s3s-fs after a multipart upload, or a stale one).
    fn confirm(&self, digest: &Sha256Hex, size: u64, existed: bool) -> Result<PutOutcome> {
        match self.head(digest)? {
            Some(st) if st.len == size => Ok(PutOutcome {
                digest: digest.clone(),
                size,
                created: !existed,
                repaired: existed,
            }),
            got => Err(unavailable(
                "store an object",
                format!(
                    "the bucket holds {:?} bytes for it after a put of {size}",
                    got.map(|s| s.len)
                ),
            )
            .with("digest", digest.to_string())),
        }
    }

    /// Uploads bytes already verified on this side as `digest` (memory or
    /// a spool file) and confirms their length. An object already there
    /// is kept only when the bucket vouches for its bytes (same length and
    /// the same SHA-256 checksum); otherwise it is uploaded again (keys are
    /// content addresses: a re-upload is harmless).
    fn put_verified(
        &self,
        v: Verified<'_>,
        digest: &Sha256Hex,
        size: u64,
        before: Option<Stat>,
    ) -> Result<PutOutcome> {
        if let Some(st) = &before {
            let kept = match self.vouches(st, digest, size) {
                Vouch::No => false,
                Vouch::Whole => true,
                Vouch::Composite(reported) => {
                    composite_checksum(&self.part_digests(&mut *v.reader()?, size)?) == reported
                }
            };
            if kept {
                return Ok(kept_outcome(digest, size));
            }
        }
        if size > self.multipart_threshold {
            self.put_multipart(&mut *v.reader()?, None, digest, size)?;
        } else {
            let payload = match v {
                Verified::Bytes(b) => Payload::Bytes(b),
                Verified::File(p) => Payload::File(p, size),
            };
            self.put_single(payload, digest, size)?;
        }
        self.confirm(digest, size, before.is_some())
    }

    /// Uploads what `reader` yields as `digest` of `size` bytes, verifying
    /// it while it is sent: one pass over the bytes, no spool file for an
    /// object up to [`MEM_SPOOL`]. Other bytes are `integrity_error` and
    /// nothing becomes visible under the key: a single PUT's body stops
    /// short of its length before the last byte (the server stores no
    /// object from a broken body), a multipart upload is aborted before
    /// CompleteMultipartUpload.
    ///
    /// `whole`, when given, is everything `reader` yields, in memory: a
    /// single PUT then sends and replays it as it is, with no copy kept.
    fn put_streamed(
        &self,
        reader: &mut dyn Read,
        whole: Option<&[u8]>,
        digest: &Sha256Hex,
        size: u64,
    ) -> Result<PutOutcome> {
        let before = self.head(digest)?;
        if let Some(st) = &before {
            match self.vouches(st, digest, size) {
                Vouch::No => {}
                Vouch::Whole => {
                    // Kept; the caller's bytes are still checked.
                    let (d, n) = hash_all(reader, size)?;
                    if d != *digest || n != size {
                        return Err(put_mismatch(digest, size, &got_bytes(n, &d, size)));
                    }
                    return Ok(kept_outcome(digest, size));
                }
                Vouch::Composite(_) => {
                    // The parts decide, and the bytes may have to go up
                    // after all: spooled once, then as verified bytes.
                    let (spool, d, n) =
                        self.spool_in(reader, size, || put_mismatch(digest, size, "more bytes"))?;
                    if d != *digest || n != size {
                        return Err(put_mismatch(digest, size, &got_bytes(n, &d, size)));
                    }
                    return self.put_verified(spool.verified(), digest, size, before);
                }
            }
        }
        if size > self.multipart_threshold {
            self.put_multipart(reader, Some(digest), digest, size)?;
        } else {
            let keep = if let Some(bytes) = whole {
                Keep::Slice(bytes)
            } else if size <= MEM_SPOOL {
                Keep::Memory(Vec::with_capacity(usize::try_from(size).unwrap_or(0)))
            } else {
                Keep::File(self.temp("put-")?)
            };
            let tee = Tee {
                st: std::cell::RefCell::new(TeeState {
                    reader,
                    keep,
                    hasher: Sha256::new(),
                    taken: 0,
                    size,
                    digest: digest.clone(),
                    fault: None,
                    verified: false,
                }),
            };
            self.put_single(Payload::Tee(&tee), digest, size)?;
            if !tee.st.borrow().verified {
                return Err(unavailable(
                    "store an object",
                    "the server answered before the whole body was sent",
                ));
            }
        }
        self.confirm(digest, size, before.is_some())
    }

    /// One PUT with the object's `x-amz-checksum-sha256`.
    fn put_single(&self, payload: Payload<'_>, digest: &Sha256Hex, size: u64) -> Result<()> {
        let key = self.key(digest);
        let headers = [("x-amz-checksum-sha256", b64(&digest.to_bytes()))];
        self.request(
            self.bucket.put_object(Some(&self.creds), &key),
            &Call {
                headers: &headers,
                payload,
                ..Call::new("store an object", self.deadline(size))
            },
        )?;
        Ok(())
    }

    /// CreateMultipartUpload (SHA-256 checksums), an UploadPart per part
    /// with its checksum, CompleteMultipartUpload naming each part's ETag
    /// and checksum; on any failure (other bytes than `check` included) the
    /// upload is aborted (best effort).
    fn put_multipart(
        &self,
        src: &mut dyn Read,
        check: Option<&Sha256Hex>,
        digest: &Sha256Hex,
        size: u64,
    ) -> Result<()> {
        let what = "store an object";
        let key = self.key(digest);
        let headers = [("x-amz-checksum-algorithm", "SHA256".to_owned())];
        let resp = self.request(
            self.bucket.create_multipart_upload(Some(&self.creds), &key),
            &Call {
                headers: &headers,
                ..Call::new(what, self.timeout)
            },
        )?;
        let text = small_answer(resp, what)?;
        let created = rusty_s3::actions::CreateMultipartUpload::parse_response(&text)
            .map_err(|e| unavailable(what, format!("an unreadable multipart upload id: {e}")))?;
        let upload_id = created.upload_id();
        if upload_id.is_empty()
            || upload_id.len() > 1024
            || !upload_id.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(unavailable(what, "a malformed multipart upload id"));
        }
        let done = self.upload_parts(src, check, &key, upload_id, digest, size);
        if done.is_err() {
            // Best effort: parts left behind cost storage, never correctness.
            let _ = self.request(
                self.bucket
                    .abort_multipart_upload(Some(&self.creds), &key, upload_id),
                &Call {
                    retry: Retry::Once,
                    accept: &[404],
                    ..Call::new("abort a multipart upload", self.timeout)
                },
            );
        }
        done
    }

    /// The parts and the completion. With `check`, the bytes are not
    /// verified yet: each part also feeds the whole object's hash (on a
    /// second thread, while the part goes up), and the digest and the
    /// length are compared before CompleteMultipartUpload, so other bytes
    /// never complete the upload.
    fn upload_parts(
        &self,
        src: &mut dyn Read,
        check: Option<&Sha256Hex>,
        key: &str,
        upload_id: &str,
        digest: &Sha256Hex,
        size: u64,
    ) -> Result<()> {
        let what = "store an object";
        let part = self.part_size(size);
        let short = |got: u64| match check {
            Some(_) => put_mismatch(digest, size, &format!("{got} bytes")),
            None => Error::new(
                Code::Io,
                format!("the spooled copy of {digest} changed while it was sent"),
            ),
        };
        let mut buf = vec![0u8; usize::try_from(part.min(size)).unwrap_or(BUF)];
        let mut whole = check.map(|_| Sha256::new());
        let mut done: Vec<(String, String)> = Vec::new();
        let mut sent = 0u64;
        while sent < size {
            let number = u16::try_from(done.len() + 1)
                .map_err(|_| Error::new(Code::TooLarge, "an object of over 10,000 parts"))?;
            let len = usize::try_from(part.min(size - sent)).unwrap_or(buf.len());
            let got = read_full(src, &mut buf[..len])?;
            if got < len {
                return Err(short(sent + got as u64));
            }
            let bytes = &buf[..len];
            let (sum, resp) = std::thread::scope(|s| {
                let hashing = whole.as_mut().map(|h| s.spawn(move || h.update(bytes)));
                let sum = b64(&Sha256::digest(bytes));
                let headers = [("x-amz-checksum-sha256", sum.clone())];
                let resp = self.request(
                    self.bucket
                        .upload_part(Some(&self.creds), key, number, upload_id),
                    &Call {
                        headers: &headers,
                        payload: Payload::Bytes(bytes),
                        ..Call::new(what, self.deadline(len as u64))
                    },
                );
                let joined = hashing.map_or(Ok(()), std::thread::ScopedJoinHandle::join);
                match joined {
                    Ok(()) => (sum, resp),
                    Err(_) => (
                        sum,
                        Err(Error::new(Code::Internal, "the hashing thread failed")),
                    ),
                }
            });
            let etag = resp?
                .headers()
                .get("etag")
                .and_then(|v| v.to_str().ok())
                .filter(|v| {
                    !v.is_empty()
                        && v.len() <= 256
                        && v.bytes()
                            .all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'&'))
                })
                .ok_or_else(|| unavailable(what, "a part's answer without a plain ETag"))?
                .to_owned();
            done.push((etag, sum));
            sent += len as u64;
        }
        if let (Some(h), Some(expected)) = (whole, check) {
            if read_full(src, &mut [0u8; 1])? > 0 {
                return Err(put_mismatch(digest, size, "more bytes"));
            }
            let d = Sha256Hex::from_bytes(h.finalize().into());
            if d != *expected {
                return Err(put_mismatch(digest, size, &got_bytes(size, &d, size)));
            }
        }
        let body = complete_body(&done);
        let resp = self.request(
            self.bucket.complete_multipart_upload(
                Some(&self.creds),
                key,
                upload_id,
                std::iter::empty::<&str>(),
            ),
            &Call {
                payload: Payload::Bytes(body.as_bytes()),
                ..Call::new(what, self.deadline(size))
            },
        )?;
        // A 200 may still carry an <Error> (S3 answers before it is done).
        let status = resp.status().as_u16();
        let text = small_answer(resp, what)?;
        if text.contains("<Error>") || !text.contains("CompleteMultipartUploadResult") {
            return Err(refused(what, status, error_code(text.as_bytes())));
        }
        Ok(())
    }

    fn temp(&self, prefix: &str) -> Result<tempfile::NamedTempFile> {
        private_fs::ensure_private_dir(&self.spool)?;
        tempfile::Builder::new()
            .prefix(prefix)
            .tempfile_in(&self.spool)
            .map_err(|e| Error::io("create temp file in", &self.spool, e))
    }

    /// Spools `reader` (at most `max_bytes`), hashed on the way: in memory
    /// up to [`MEM_SPOOL`], past it in a private temp file.
    fn spool_in(
        &self,
        reader: &mut dyn Read,
        max_bytes: u64,
        too_large: impl FnOnce() -> Error,
    ) -> Result<(Spool, Sha256Hex, u64)> {
        let mut hasher = Sha256::new();
        let in_memory = max_bytes.min(MEM_SPOOL);
        let mut mem = Vec::new();
        (&mut *reader)
            .take(in_memory + 1)
            .read_to_end(&mut mem)
            .map_err(read_input)?;
        hasher.update(&mem);
        let mut size = mem.len() as u64;
        if size <= in_memory {
            return Ok((
                Spool::Memory(mem),
                Sha256Hex::from_bytes(hasher.finalize().into()),
                size,
            ));
        }
        if size > max_bytes {
            return Err(too_large().with("max_bytes", max_bytes));
        }
        let mut tmp = self.temp("put-")?;
        tmp.write_all(&mem)
            .map_err(|e| Error::io("write", tmp.path(), e))?;
        drop(mem);
        let mut buf = vec![0u8; BUF];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_input(e)),
            };
            size += n as u64;
            if size > max_bytes {
                return Err(too_large().with("max_bytes", max_bytes));
            }
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| Error::io("write", tmp.path(), e))?;
        }
        Ok((
            Spool::File(tmp),
            Sha256Hex::from_bytes(hasher.finalize().into()),
            size,
        ))
    }

    /// Downloads an object into `out`, at most `limit` bytes, and returns
    /// its digest and size as read (the caller compares). `Ok(None)`: the
    /// object does not exist.
    fn fetch(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
        out: &mut dyn Write,
    ) -> Result<Option<(Sha256Hex, u64)>> {
        let key = self.key(digest);
        let what = "read an object";
        // The deadline follows the size: of an object of unknown size
        // (`cas cat`, `cas fsck`), the bucket's HEAD tells it first.
        let expected_size = match expected_size {
            Some(s) => Some(s),
            None => match self.head(digest)? {
                None => return Ok(None),
                Some(st) => Some(st.len),
            },
        };
        let limit = expected_size.unwrap_or(max_bytes).min(max_bytes);
        let deadline = self.deadline(limit);
        let resp = self.request(
            self.bucket.get_object(Some(&self.creds), &key),
            &Call {
                accept: &[404],
                ..Call::new(what, deadline)
            },
        )?;
        let started = std::time::Instant::now();
        if resp.status().as_u16() == 404 {
            return match s3_code(resp).as_deref() {
                Some("NoSuchBucket") => Err(refused(what, 404, Some("NoSuchBucket".into()))),
                _ => {
                    self.check_bucket()?;
                    Ok(None)
                }
            };
        }
        let announced = length_of(&resp);
        if let Some(len) = announced {
            if expected_size.is_some_and(|s| s != len) {
                return Err(integrity(digest, &format!("{len} bytes stored")));
            }
            if len > max_bytes {
                return Err(Error::new(
                    Code::TooLarge,
                    format!("object {digest} is {len} bytes, over {max_bytes}"),
                ));
            }
        }
        let mut body = resp.into_body().into_reader().take(limit.saturating_add(1));
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; BUF];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(unavailable(what, format!("the body broke off: {e}"))),
            };
            // A backstop to the client's deadline, which covers the body.
            if started.elapsed() > deadline {
                return Err(unavailable(
                    what,
                    "the body did not arrive before its deadline",
                ));
            }
            size += n as u64;
            if size > limit {
                return Err(match expected_size {
                    Some(_) => integrity(digest, "longer than its recorded size"),
                    None => Error::new(
                        Code::TooLarge,
                        format!("object {digest} is over {max_bytes} bytes"),
                    ),
                });
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| Error::new(Code::Io, format!("spooling object {digest}: {e}")))?;
        }
        // Fewer bytes than the answer announced: the transfer broke off
        // (a deadline, a dropped connection), not the object.
        if let Some(len) = announced.filter(|&len| size < len) {
            return Err(unavailable(
                what,
                format!("the body broke off after {size} of {len} bytes"),
            ));
        }
        Ok(Some((
            Sha256Hex::from_bytes(hasher.finalize().into()),
            size,
        )))
    }

    /// Spools a verified object, bounded by its recorded length (or by
    /// `max_bytes`): in memory when that bound is at most [`MEM_SPOOL`],
    /// else in a private temp file (rewound). Nothing of it is handed out
    /// before its size and SHA-256 are checked.
    fn spool_out(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<(Spool, u64)> {
        let bound = expected_size.unwrap_or(max_bytes).min(max_bytes);
        let mut spool = if bound <= MEM_SPOOL {
            let known = expected_size.map_or(0, |s| s.min(bound));
            Spool::Memory(Vec::with_capacity(usize::try_from(known).unwrap_or(0)))
        } else {
            Spool::File(self.temp("get-")?)
        };
        let got = match &mut spool {
            Spool::Memory(v) => self.fetch(digest, expected_size, max_bytes, v)?,
            Spool::File(t) => self.fetch(digest, expected_size, max_bytes, t.as_file_mut())?,
        };
        let size = match got {
            None => return Err(missing(digest)),
            Some((d, n)) if d == *digest && expected_size.is_none_or(|s| s == n) => n,
            Some(_) => return Err(integrity(digest, "the bytes read hash to another digest")),
        };
        if let Spool::File(tmp) = &mut spool {
            tmp.as_file_mut()
                .rewind()
                .map_err(|e| Error::io("rewind", tmp.path(), e))?;
        }
        Ok((spool, size))
    }
}

/// What a put's pre-upload HEAD can vouch for (see `S3Store::vouches`).
enum Vouch {
    No,
    Whole,
    Composite(String),
}

fn kept_outcome(digest: &Sha256Hex, size: u64) -> PutOutcome {
    PutOutcome {
        digest: digest.clone(),
        size,
        created: false,
        repaired: false,
    }
}

fn read_input(e: std::io::Error) -> Error {
    Error::new(Code::Io, format!("reading input: {e}"))
}

/// Bytes put as `digest` of `size` that were something else (`got`).
fn put_mismatch(digest: &Sha256Hex, size: u64, got: &str) -> Error {
    Error::new(
        Code::IntegrityError,
        format!("the bytes put as object {digest} of {size} bytes were {got}; nothing was stored"),
    )
    .with("digest", digest.to_string())
    .with("size", size)
}

fn got_bytes(n: u64, d: &Sha256Hex, size: u64) -> String {
    if n > size {
        "more bytes".to_owned()
    } else {
        format!("{n} bytes hashing to {d}")
    }
}

/// Reads into `buf` until it is full or the reader ends; the count read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(m) => n += m,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_input(e)),
        }
    }
    Ok(n)
}

/// The digest and length of what `reader` yields, reading at most one
/// byte past `size`.
fn hash_all(reader: &mut dyn Read, size: u64) -> Result<(Sha256Hex, u64)> {
    let mut hasher = Sha256::new();
    let mut n = 0u64;
    let mut buf = vec![0u8; BUF];
    let mut r = reader.take(size.saturating_add(1));
    loop {
        let m = read_full(&mut r, &mut buf)?;
        hasher.update(&buf[..m]);
        n += m as u64;
        if m < buf.len() {
            return Ok((Sha256Hex::from_bytes(hasher.finalize().into()), n));
        }
    }
}

/// Bytes kept on this side: in memory up to [`MEM_SPOOL`], else in a
/// private temp file under `cas/tmp/`.
enum Spool {
    Memory(Vec<u8>),
    File(tempfile::NamedTempFile),
}

impl Spool {
    fn verified(&self) -> Verified<'_> {
        match self {
            Spool::Memory(v) => Verified::Bytes(v),
            Spool::File(t) => Verified::File(t.path()),
        }
    }
}

/// Bytes already hashed on this side and found to be the object's:
/// replayable as they are.
#[derive(Clone, Copy)]
enum Verified<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

impl Verified<'_> {
    fn reader(&self) -> Result<Box<dyn Read + '_>> {
        Ok(match *self {
            Verified::Bytes(b) => Box::new(b),
            Verified::File(p) => {
                Box::new(std::fs::File::open(p).map_err(|e| Error::io("open", p, e))?)
            }
        })
    }
}

/// The body of a single PUT from a caller's reader (see [`Tee`]).
trait TeeBody {
    /// A reader for one attempt: the kept bytes, then the rest of the
    /// caller's reader.
    fn attempt(&self) -> Box<dyn Read + '_>;
    /// The body's length.
    fn len(&self) -> u64;
    /// Why the body was refused (other bytes, a failing reader), once.
    fn fault(&self) -> Option<Error>;
}

/// A caller's reader sent as a PUT body: read once, hashed as it goes and
/// kept (in memory up to [`MEM_SPOOL`], else a temp file) so a retry
/// replays it. The read that would hand out the last byte first checks the
/// reader's end and the digest: other bytes leave the body short of its
/// announced length, which no server stores.
struct Tee<'r> {
    st: std::cell::RefCell<TeeState<'r>>,
}

struct TeeState<'r> {
    reader: &'r mut dyn Read,
    keep: Keep<'r>,
    hasher: Sha256,
    /// Bytes taken from the reader (and kept) so far.
    taken: u64,
    size: u64,
    digest: Sha256Hex,
    fault: Option<Error>,
    /// All `size` bytes taken and found to be `digest`.
    verified: bool,
}

enum Keep<'r> {
    /// The caller's bytes themselves (they are all in memory).
    Slice(&'r [u8]),
    Memory(Vec<u8>),
    File(tempfile::NamedTempFile),
}

impl TeeBody for Tee<'_> {
    fn attempt(&self) -> Box<dyn Read + '_> {
        Box::new(TeeReader { tee: self, pos: 0 })
    }

    fn len(&self) -> u64 {
        self.st.borrow().size
    }

    fn fault(&self) -> Option<Error> {
        self.st.borrow_mut().fault.take()
    }
}

struct TeeReader<'t, 'r> {
    tee: &'t Tee<'r>,
    pos: u64,
}

impl TeeState<'_> {
    fn refuse(&mut self, e: Error) -> std::io::Error {
        let shown = e.to_string();
        self.fault = Some(e);
        std::io::Error::other(shown)
    }
}

impl Read for TeeReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let mut guard = self.tee.st.borrow_mut();
        let st = &mut *guard;
        if self.pos < st.taken {
            // A later attempt: the bytes kept.
            let want = usize::try_from(st.taken - self.pos)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            let kept: &[u8] = match &st.keep {
                Keep::Slice(v) => v,
                Keep::Memory(v) => v,
                Keep::File(t) => {
                    let n = t.as_file().read_at(&mut buf[..want], self.pos)?;
                    self.pos += n as u64;
                    return Ok(n);
                }
            };
            let from = usize::try_from(self.pos).unwrap_or(usize::MAX);
            let src = kept.get(from..from.saturating_add(want)).unwrap_or(&[]);
            buf[..src.len()].copy_from_slice(src);
            let n = src.len();
            self.pos += n as u64;
            return Ok(n);
        }
        if st.fault.is_some() {
            return Err(std::io::Error::other("the body was refused"));
        }
        if st.taken == st.size {
            return Ok(0);
        }
        let want = usize::try_from(st.size - st.taken)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = match st.keep {
            Keep::Slice(all) => {
                let from = usize::try_from(st.taken).unwrap_or(usize::MAX);
                let src = all.get(from..).unwrap_or(&[]);
                let n = want.min(src.len());
                buf[..n].copy_from_slice(&src[..n]);
                n
            }
            _ => loop {
                match st.reader.read(&mut buf[..want]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(st.refuse(read_input(e))),
                }
            },
        };
        if n == 0 {
            let got = format!("{} bytes", st.taken);
            return Err(st.refuse(put_mismatch(&st.digest, st.size, &got)));
        }
        st.hasher.update(&buf[..n]);
        match &mut st.keep {
            Keep::Slice(_) => {}
            Keep::Memory(v) => v.extend_from_slice(&buf[..n]),
            Keep::File(t) => {
                if let Err(e) = t.write_all(&buf[..n]) {
                    let path = t.path().to_owned();
                    return Err(st.refuse(Error::io("write", &path, e)));
                }
            }
        }
        st.taken += n as u64;
        if st.taken == st.size {
            // The last bytes go out only once the reader has ended and
            // the digest is the one announced.
            let more = match st.keep {
                Keep::Slice(all) => usize::from(all.len() as u64 > st.size),
                _ => match read_full(&mut *st.reader, &mut [0u8; 1]) {
                    Ok(m) => m,
                    Err(e) => return Err(st.refuse(e)),
                },
            };
            let d = Sha256Hex::from_bytes(std::mem::take(&mut st.hasher).finalize().into());
            if more > 0 || d != st.digest {
                let got = if more > 0 {
                    "more bytes".to_owned()
                } else {
                    format!("{} bytes hashing to {d}", st.size)
                };
                return Err(st.refuse(put_mismatch(&st.digest, st.size, &got)));
            }
            st.verified = true;
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl BlobStore for S3Store {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn put(&self, reader: &mut dyn Read, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        self.put_streamed(reader, None, digest, size)
    }

    fn put_bytes_as(&self, bytes: &[u8], digest: &Sha256Hex) -> Result<PutOutcome> {
        self.put_streamed(&mut &bytes[..], Some(bytes), digest, bytes.len() as u64)
    }

    fn put_bytes(&self, bytes: &[u8]) -> Result<PutOutcome> {
        let digest = Sha256Hex::digest(bytes);
        let before = self.head(&digest)?;
        self.put_verified(Verified::Bytes(bytes), &digest, bytes.len() as u64, before)
    }

    fn put_stream(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        let (spool, d, n) = self.spool_in(reader, max_bytes, || {
            Error::new(Code::TooLarge, format!("content exceeds {max_bytes} bytes"))
        })?;
        let before = self.head(&d)?;
        self.put_verified(spool.verified(), &d, n, before)
    }

    fn get(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<Vec<u8>> {
        let (spool, size) = self.spool_out(digest, expected_size, max_bytes)?;
        let tmp = match spool {
            Spool::Memory(bytes) => return Ok(bytes),
            Spool::File(tmp) => tmp,
        };
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        tmp.as_file()
            .take(size)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", tmp.path(), e))?;
        if bytes.len() as u64 != size {
            return Err(Error::new(
                Code::Io,
                format!("the spooled copy of {digest} changed while it was read"),
            ));
        }
        Ok(bytes)
    }

    fn copy_to(&self, digest: &Sha256Hex, size: u64, out: &mut dyn Write) -> Result<u64> {
        let (spool, n) = self.spool_out(digest, Some(size), size)?;
        let copied = match &spool {
            Spool::Memory(bytes) => out.write_all(bytes).map(|()| bytes.len() as u64),
            Spool::File(tmp) => std::io::copy(&mut tmp.as_file().take(n), out),
        }
        .map_err(|e| Error::new(Code::Io, format!("writing object {digest}: {e}")))?;
        if copied != n {
            return Err(Error::new(
                Code::Io,
                format!("the spooled copy of {digest} changed while it was read"),
            ));
        }
        Ok(n)
    }

    fn exists(&self, digest: &Sha256Hex, size: Option<u64>) -> Result<bool> {
        Ok(match self.head(digest)? {
            None => false,
            Some(st) => size.is_none_or(|s| s == st.len),
        })
    }

    fn verify(&self, digest: &Sha256Hex, expected_size: Option<u64>) -> Result<bool> {
        match self.fetch(digest, expected_size, u64::MAX, &mut std::io::sink())? {
            None => Ok(false),
            Some((d, n)) if d == *digest && expected_size.is_none_or(|s| s == n) => Ok(true),
            Some(_) => Err(integrity(digest, "the bytes read hash to another digest")),
        }
    }

    fn list(&self, each: &mut dyn FnMut(ListedBlob) -> Result<()>) -> Result<()> {
        let prefix = format!("{}sha256/", self.prefix);
        let what = "list its objects";
        let mut token: Option<String> = None;
        let mut last_key: Option<String> = None;
        let mut empty_run = 0u32;
        for _ in 0..MAX_LIST_PAGES {
            let mut action = self.bucket.list_objects_v2(Some(&self.creds));
            action.with_prefix(prefix.clone());
            action.with_max_keys(1000);
            if let Some(t) = &token {
                action.with_continuation_token(t.clone());
            }
            let resp = self.request(action, &Call::new(what, self.timeout))?;
            let mut body = Vec::new();
            resp.into_body()
                .into_reader()
                .take(MAX_ANSWER_BYTES + 1)
                .read_to_end(&mut body)
                .map_err(|e| unavailable(what, format!("the listing broke off: {e}")))?;
            let page = list_page(&body, &prefix)?;
            // Keys come in ascending order across pages: a page that does
            // not go past the last one is a listing going round in circles.
            if let (Some(first), Some(last)) = (&page.first_key, &last_key)
                && first <= last
            {
                return Err(unavailable(what, "a listing page that goes back over keys"));
            }
            if page.last_key.is_some() {
                last_key = page.last_key.clone();
                empty_run = 0;
            } else {
                empty_run += 1;
            }
            for blob in page.blobs {
                each(blob)?;
            }
            match page.next {
                Some(_) if empty_run >= MAX_EMPTY_PAGES => {
                    return Err(unavailable(
                        what,
                        format!("{MAX_EMPTY_PAGES} empty listing pages in a row that claim more"),
                    ));
                }
                Some(t) if Some(&t) == token.as_ref() => {
                    return Err(unavailable(
                        what,
                        "a listing that repeats its continuation token",
                    ));
                }
                Some(t) => token = Some(t),
                None => return Ok(()),
            }
        }
        Err(unavailable(
            what,
            format!("a listing of over {MAX_LIST_PAGES} pages"),
        ))
    }

    fn delete(&self, digest: &Sha256Hex, _lock: &super::DirLock) -> Result<bool> {
        let existed = self.head(digest)?.is_some();
        let key = self.key(digest);
        self.request(
            self.bucket.delete_object(Some(&self.creds), &key),
            &Call {
                accept: &[404],
                ..Call::new("delete an object", self.timeout)
            },
        )?;
        Ok(existed)
    }

    fn batch(&self) -> Box<dyn BlobBatch + '_> {
        Box::new(S3Batch { store: self })
    }

    fn stats(&self) -> Result<CasStats> {
        let mut s = CasStats::default();
        self.list(&mut |b| {
            s.objects += 1;
            s.bytes += b.size;
            Ok(())
        })?;
        Ok(s)
    }
}

/// Every put of a bucket is durable (HEAD-confirmed) when it returns: the
/// batch only carries the adoption of staged files.
struct S3Batch<'a> {
    store: &'a S3Store,
}

impl BlobBatch for S3Batch<'_> {
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<PutOutcome> {
        self.store.put_bytes(bytes)
    }

    fn put_reader(&mut self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        self.store.put_stream(reader, max_bytes)
    }

    fn adopt(&mut self, staged: &Path, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        let mut f = private_fs::open_nofollow_read(staged)?;
        let out = self.store.put(&mut f, digest, size)?;
        std::fs::remove_file(staged).map_err(|e| Error::io("remove", staged, e))?;
        Ok(out)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/s3_answer");

    fn seed(name: &str) -> Vec<u8> {
        std::fs::read(format!("{SEEDS}/{name}")).expect("seed")
    }

    #[test]
    fn an_error_body_names_only_a_short_ascii_code() {
        assert_eq!(
            error_code(&seed("error-nosuchbucket.xml")).as_deref(),
            Some("NoSuchBucket")
        );
        assert_eq!(error_code(b"<Code></Code>"), None);
        assert_eq!(error_code(b"<Code>No Such</Code>"), None);
        assert_eq!(
            error_code(format!("<Code>{}</Code>", "A".repeat(65)).as_bytes()),
            None
        );
        // A code past the bounded head is never read.
        let mut far = vec![b' '; MAX_ERROR_BODY as usize];
        far.extend_from_slice(b"<Code>Late</Code>");
        assert_eq!(error_code(&far), None);
    }

    #[test]
    fn a_listing_page_keeps_the_keys_under_the_prefix() {
        let page = list_page(&seed("list-two.xml"), "team/sha256/").expect("page");
        assert_eq!(
            page.blobs,
            vec![ListedBlob {
                name: "2c85ac8cfed908ad3dea3fcef2b9100f68718fd6d7b5ef833fb5d29f0f6442fd".into(),
                size: 57,
            }]
        );
        assert!(page.next.is_some());
        let empty = list_page(&seed("list-empty.xml"), "team/sha256/").expect("empty");
        assert!(empty.blobs.is_empty() && empty.next.is_none());
        for bad in [&b"\xff\xfe"[..], b"<ListBucketResult>", b"not xml at all"] {
            let e = list_page(bad, "team/sha256/").expect_err("refused");
            assert_eq!(e.code(), Code::BlobStoreUnavailable);
        }
        let huge = vec![b' '; MAX_ANSWER_BYTES as usize + 1];
        assert_eq!(
            list_page(&huge, "p/").expect_err("too big").code(),
            Code::BlobStoreUnavailable
        );
    }

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foo"), "Zm9v");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
        assert_eq!(
            b64(&Sha256Hex::digest(b"hello").to_bytes()),
            "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        );
    }

    #[test]
    fn retries_follow_s3_retryable_codes_only() {
        for c in ["SlowDown", "RequestTimeout", "InternalError"] {
            assert!(retryable_code(c), "{c}");
        }
        for c in [
            "AccessDenied",
            "NoSuchBucket",
            "SignatureDoesNotMatch",
            "BadDigest",
        ] {
            assert!(!retryable_code(c), "{c}");
        }
    }

    #[test]
    fn a_multipart_completion_names_every_part_in_order_with_its_checksum() {
        let parts = vec![
            ("\"e1\"".to_owned(), b64(&[1u8; 32])),
            ("\"e2\"".to_owned(), b64(&[2u8; 32])),
        ];
        let xml = complete_body(&parts);
        let one = xml.find("<PartNumber>1</PartNumber>").expect("part 1");
        let two = xml.find("<PartNumber>2</PartNumber>").expect("part 2");
        assert!(one < two);
        assert!(xml.contains(&format!(
            "<Part><ChecksumSHA256>{}</ChecksumSHA256><ETag>\"e1\"</ETag>",
            b64(&[1u8; 32])
        )));
        // The composite checksum: SHA-256 over the parts' digests, and the count.
        let digests = [[1u8; 32], [2u8; 32]];
        let mut joined = Vec::new();
        joined.extend_from_slice(&digests[0]);
        joined.extend_from_slice(&digests[1]);
        assert_eq!(
            composite_checksum(&digests),
            format!("{}-2", b64(&Sha256::digest(&joined)))
        );
    }

    fn write_private(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }

    /// A loopback server that keeps objects the way S3 does for the
    /// requests a put makes (HEAD, PUT, the multipart calls), one request
    /// per connection, and logs each request with what became of its body.
    struct Fake {
        port: u16,
        log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
        /// Key -> the SHA-256 of the stored bytes and their length.
        objects:
            std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, (Sha256Hex, u64)>>>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Fake {
        /// `fail_puts`: how many single PUTs of each key are answered 503
        /// (after their whole body was read) before one is kept.
        fn start(fail_puts: usize) -> Fake {
            use std::sync::atomic::{AtomicBool, Ordering};
            use std::sync::{Arc, Mutex};
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let log = Arc::new(Mutex::new(Vec::new()));
            let objects: Arc<Mutex<std::collections::HashMap<String, (Sha256Hex, u64)>>> =
                Arc::new(Mutex::new(std::collections::HashMap::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let (l, o, s) = (log.clone(), objects.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut parts: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
                let mut single = std::collections::HashSet::new();
                let mut failed: std::collections::HashMap<String, usize> = Default::default();
                for conn in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(mut conn) = conn else { continue };
                    let Some((method, target, body, whole)) = read_request(&mut conn) else {
                        continue;
                    };
                    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                    let key = path.to_owned();
                    l.lock().expect("log").push(format!(
                        "{method} {query} {} {}",
                        body.len(),
                        if whole { "whole" } else { "short" }
                    ));
                    if !whole {
                        continue;
                    }
                    let mut objs = o.lock().expect("objects");
                    match method.as_str() {
                        "HEAD" if path.contains("/sha256/") => match objs.get(&key) {
                            // The checksum of a single PUT, as S3 keeps it.
                            Some((d, len)) if single.contains(&key) => {
                                let sum = b64(&d.to_bytes());
                                answer(
                                    &mut conn,
                                    "200 OK",
                                    &[("x-amz-checksum-sha256", &sum)],
                                    *len,
                                    b"",
                                )
                            }
                            Some((_, len)) => answer(&mut conn, "200 OK", &[], *len, b""),
                            None => answer(&mut conn, "404 Not Found", &[], 0, b""),
                        },
                        "HEAD" => answer(&mut conn, "200 OK", &[], 0, b""),
                        "PUT" if query.contains("partNumber") => {
                            parts.insert(query.to_owned(), body);
                            answer(&mut conn, "200 OK", &[("etag", "\"e\"")], 0, b"");
                        }
                        "PUT" if failed.get(&key).copied().unwrap_or(0) < fail_puts => {
                            *failed.entry(key.clone()).or_default() += 1;
                            answer(&mut conn, "503 Slow Down", &[], 0, b"");
                        }
                        "PUT" => {
                            let n = body.len() as u64;
                            single.insert(key.clone());
                            objs.insert(key, (Sha256Hex::digest(&body), n));
                            answer(&mut conn, "200 OK", &[], 0, b"");
                        }
                        "POST" if query.contains("uploads") => {
                            let xml = "<InitiateMultipartUploadResult \
                                       xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                                       <Bucket>b-1</Bucket>\
                                       <Key>k</Key><UploadId>up-1</UploadId>\
                                       </InitiateMultipartUploadResult>";
                            answer(&mut conn, "200 OK", &[], xml.len() as u64, xml.as_bytes());
                        }
                        "POST" => {
                            let all: Vec<u8> =
                                std::mem::take(&mut parts).into_values().flatten().collect();
                            let n = all.len() as u64;
                            objs.insert(key, (Sha256Hex::digest(&all), n));
                            let xml =
                                "<CompleteMultipartUploadResult></CompleteMultipartUploadResult>";
                            answer(&mut conn, "200 OK", &[], xml.len() as u64, xml.as_bytes());
                        }
                        "DELETE" => {
                            parts.clear();
                            answer(&mut conn, "204 No Content", &[], 0, b"");
                        }
                        _ => answer(&mut conn, "400 Bad Request", &[], 0, b""),
                    }
                }
            });
            Fake {
                port,
                log,
                objects,
                stop,
            }
        }

        fn store(&self, root: &Path, threshold_mib: u64) -> S3Store {
            let cred = root.join("cred.json");
            write_private(
                &cred,
                r#"{"access_key_id":"AK","secret_access_key":"SECRET"}"#,
            );
            let conf = serde_json::json!({
                "kind": "s3", "endpoint": format!("http://127.0.0.1:{}", self.port),
                "region": "us-east-1", "bucket": "b-1", "prefix": "p/", "path_style": true,
                "credentials_file": cred.display().to_string(), "timeout_ms": 5000,
                "multipart_threshold_mib": threshold_mib,
            });
            write_private(&root.join(CONFIG_FILE), &conf.to_string());
            load(root, root.join("spool"))
                .expect("load")
                .expect("configured")
        }

        /// Returns once the server has handled every earlier connection:
        /// it takes them one at a time, in order, so a HEAD answered
        /// comes after them.
        fn settle(&self, s: &S3Store) {
            let _ = s.exists(&Sha256Hex::digest(b"settle"), None);
        }

        fn log(&self) -> Vec<String> {
            self.log.lock().expect("log").clone()
        }

        /// What the server keeps under `digest`'s key.
        fn object(&self, s: &S3Store, digest: &Sha256Hex) -> Option<(Sha256Hex, u64)> {
            let key = format!("/b-1/{}", s.key(digest));
            self.objects.lock().expect("objects").get(&key).cloned()
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        }
    }

    /// Method, target, the body read and whether it was as long as its
    /// content-length.
    fn read_request(conn: &mut std::net::TcpStream) -> Option<(String, String, Vec<u8>, bool)> {
        conn.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if conn.read(&mut byte).ok()? == 0 || head.len() > 64 * 1024 {
                return None;
            }
            head.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&head).into_owned();
        let mut first = text.lines().next()?.split(' ');
        let method = first.next()?.to_owned();
        let target = first.next()?.to_owned();
        let len: u64 = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = Vec::new();
        let _ = conn.take(len).read_to_end(&mut body);
        let whole = body.len() as u64 == len;
        Some((method, target, body, whole))
    }

    fn answer(
        conn: &mut std::net::TcpStream,
        status: &str,
        headers: &[(&str, &str)],
        len: u64,
        body: &[u8],
    ) {
        let mut head =
            format!("HTTP/1.1 {status}\r\ncontent-length: {len}\r\nconnection: close\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(body);
    }

    fn noise(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 9) as u8)
            .collect()
    }

    #[test]
    fn a_multipart_put_of_other_bytes_is_aborted_before_completion() {
        let t = tempfile::tempdir().expect("tempdir");
        let server = Fake::start(0);
        let s = server.store(t.path(), 5);
        let good = noise(12 << 20, 1);
        let digest = Sha256Hex::digest(&good);
        let size = good.len() as u64;
        let mut last_byte = good.clone();
        last_byte[good.len() - 1] ^= 1;
        let mut longer = good.clone();
        longer.push(0);
        for (bytes, why) in [
            (last_byte, "the last byte differs"),
            (good[..good.len() - 1].to_vec(), "one byte short"),
            (longer, "one byte more"),
        ] {
            let before = server.log().len();
            let e = s.put(&mut &bytes[..], &digest, size).expect_err(why);
            assert_eq!(e.code(), Code::IntegrityError, "{why}: {e:?}");
            server.settle(&s);
            let log = server.log().split_off(before);
            assert!(
                log.iter()
                    .any(|l| l.starts_with("DELETE") && l.contains("uploadId")),
                "{why}: aborted: {log:?}"
            );
            assert!(
                !log.iter()
                    .any(|l| l.starts_with("POST") && l.contains("uploadId")),
                "{why}: never completed: {log:?}"
            );
            assert_eq!(server.object(&s, &digest), None, "{why}: nothing stored");
        }
        // The same bytes as announced go up in three parts and complete.
        let out = s.put(&mut &good[..], &digest, size).expect("put");
        assert!(out.created);
        assert_eq!(server.object(&s, &digest), Some((digest.clone(), size)));
        let parts = server
            .log()
            .iter()
            .filter(|l| l.contains("partNumber"))
            .count();
        assert!(parts >= 3, "parts went up: {parts}");
    }

    #[test]
    fn a_single_put_of_other_bytes_never_sends_a_whole_body() {
        let t = tempfile::tempdir().expect("tempdir");
        let server = Fake::start(0);
        let s = server.store(t.path(), 64);
        let good = noise(3 << 20, 2);
        let digest = Sha256Hex::digest(&good);
        let size = good.len() as u64;
        let mut last_byte = good.clone();
        last_byte[good.len() - 1] ^= 1;
        let mut longer = good.clone();
        longer.push(0);
        for (bytes, why) in [
            (last_byte, "the last byte differs"),
            (good[..good.len() - 1].to_vec(), "one byte short"),
            (longer, "one byte more"),
        ] {
            for from_memory in [false, true] {
                let before = server.log().len();
                let e = if from_memory {
                    s.put_bytes_as(&bytes, &digest)
                } else {
                    s.put(&mut &bytes[..], &digest, size)
                }
                .expect_err(why);
                assert_eq!(e.code(), Code::IntegrityError, "{why}: {e:?}");
                server.settle(&s);
                let log = server.log();
                let puts: Vec<_> = log[before..]
                    .iter()
                    .filter(|l| l.starts_with("PUT"))
                    .collect();
                // One attempt (not retried), its body short of its length.
                assert_eq!(puts.len(), 1, "{why}: {log:?}");
                assert!(puts[0].ends_with("short"), "{why}: {puts:?}");
                assert_eq!(server.object(&s, &digest), None, "{why}: nothing stored");
            }
        }
        let out = s.put(&mut &good[..], &digest, size).expect("put");
        assert!(out.created);
        assert_eq!(server.object(&s, &digest), Some((digest.clone(), size)));
    }

    #[test]
    fn a_retried_single_put_replays_the_bytes_it_kept() {
        let t = tempfile::tempdir().expect("tempdir");
        // Two refusals after a whole body each: the third attempt is kept.
        let server = Fake::start(2);
        let s = server.store(t.path(), 64);
        let good = noise(2 << 20, 3);
        let digest = Sha256Hex::digest(&good);
        let size = good.len() as u64;
        // A reader that hands out small pieces, once.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(1000);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let out = s.put(&mut Trickle(&good), &digest, size).expect("put");
        assert!(out.created);
        let puts = server.log().iter().filter(|l| l.starts_with("PUT")).count();
        assert_eq!(puts, 3);
        assert_eq!(server.object(&s, &digest), Some((digest.clone(), size)));
        // Bytes in memory are replayed from where they are.
        let second = noise(1 << 20, 4);
        let second_digest = Sha256Hex::digest(&second);
        s.put_bytes_as(&second, &second_digest)
            .expect("put from memory");
        assert_eq!(
            server.object(&s, &second_digest),
            Some((second_digest.clone(), second.len() as u64))
        );
        let puts = server.log().iter().filter(|l| l.starts_with("PUT")).count();
        assert_eq!(puts, 6);
        // A put of an object the bucket vouches for sends nothing, and
        // the caller's bytes are still checked.
        let again = s.put(&mut &good[..], &digest, size).expect("put again");
        assert!(!again.created && !again.repaired);
        let mut other = good.clone();
        other[0] ^= 1;
        let e = s
            .put(&mut &other[..], &digest, size)
            .expect_err("other bytes");
        assert_eq!(e.code(), Code::IntegrityError);
        server.settle(&s);
        let puts = server.log().iter().filter(|l| l.starts_with("PUT")).count();
        assert_eq!(puts, 6, "nothing sent again");
    }

    #[test]
    fn the_configuration_is_strict_and_the_credentials_private() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path();
        assert!(load(root, root.join("spool")).expect("none").is_none());
        let cred = root.join("cred.json");
        write_private(
            &cred,
            r#"{"access_key_id":"AK","secret_access_key":"SECRET"}"#,
        );
        let conf = |extra: &str, cred: &str| {
            format!(
                r#"{{"kind":"s3","endpoint":"http://127.0.0.1:9","region":"us-east-1","bucket":"b-1","prefix":"p/","path_style":true,"credentials_file":"{cred}"{extra}}}"#
            )
        };
        let c = cred.display().to_string();
        write_private(&root.join(CONFIG_FILE), &conf("", &c));
        let s = load(root, root.join("spool")).expect("load").expect("some");
        assert_eq!(s.kind(), "s3");
        assert!(!format!("{s:?}").contains("SECRET"), "no secret in Debug");
        assert_eq!(
            s.key(&Sha256Hex::digest(b"hello")),
            "p/sha256/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        for (text, why) in [
            (conf(r#","extra":1"#, &c), "unknown field"),
            (conf("", "cred.json"), "relative credentials path"),
            (conf("", "/nonexistent/cred.json"), "missing credentials"),
            (
                conf("", &c).replace("http://127.0.0.1:9", "http://example.com"),
                "plain http off loopback",
            ),
            (conf("", &c).replace("b-1", "B"), "bad bucket"),
            (conf("", &c).replace("\"p/\"", "\"/p\""), "absolute prefix"),
            (conf("", &c).replace("\"s3\"", "\"gcs\""), "other kind"),
        ] {
            write_private(&root.join(CONFIG_FILE), &text);
            let e = load(root, root.join("spool")).expect_err(why);
            assert_eq!(e.code(), Code::Config, "{why}: {e:?}");
        }
        for (extra, ok) in [
            (r#","multipart_threshold_mib":4"#, false),
            (r#","multipart_threshold_mib":5121"#, false),
            (r#","multipart_threshold_mib":5"#, true),
            (r#","multipart_threshold_mib":5120"#, true),
        ] {
            write_private(&root.join(CONFIG_FILE), &conf(extra, &c));
            match load(root, root.join("spool")) {
                Ok(Some(s)) => {
                    assert!(ok, "{extra}");
                    assert!(s.part_size >= 5 << 20 && s.part_size <= MAX_PART);
                    // 10,000 parts always hold the largest object.
                    assert!(s.part_size(4 << 30) * MAX_PARTS >= 4 << 30);
                    assert!(
                        s.part_size(u64::from(u32::MAX) * 64) * MAX_PARTS
                            >= u64::from(u32::MAX) * 64
                    );
                }
                Ok(None) => panic!("configured"),
                Err(e) => {
                    assert!(!ok, "{extra}: {e:?}");
                    assert_eq!(e.code(), Code::Config);
                }
            }
        }
        write_private(&root.join(CONFIG_FILE), &conf("", &c));
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        }
        let e = load(root, root.join("spool")).expect_err("readable by others");
        assert_eq!(e.code(), Code::InsecurePermissions);
        write_private(
            &cred,
            r#"{"access_key_id":"AK","secret_access_key":"SECRET","x":1}"#,
        );
        let e = load(root, root.join("spool")).expect_err("strict credentials");
        assert!(!e.to_string().contains("SECRET"));
    }

    #[test]
    fn a_ca_file_is_an_operators_pem_with_a_certificate() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path();
        let cred = root.join("cred.json");
        write_private(
            &cred,
            r#"{"access_key_id":"AK","secret_access_key":"SECRET"}"#,
        );
        let conf = |ca: &str| {
            serde_json::json!({
                "kind": "s3", "endpoint": "https://127.0.0.1:9", "region": "us-east-1",
                "bucket": "b-1", "path_style": true,
                "credentials_file": cred.display().to_string(), "ca_file": ca,
            })
            .to_string()
        };
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let pem = params.self_signed(&key).expect("ca").pem();
        let ca = root.join("ca.pem");
        std::fs::write(&ca, &pem).expect("write");
        std::fs::set_permissions(&ca, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let shown = ca.display().to_string();
        write_private(&root.join(CONFIG_FILE), &conf(&shown));
        assert!(load(root, root.join("spool")).expect("load").is_some());

        let link = root.join("ca-link.pem");
        std::os::unix::fs::symlink(&ca, &link).expect("symlink");
        let empty = root.join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").expect("write");
        let open = root.join("open.pem");
        std::fs::write(&open, &pem).expect("write");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let huge = root.join("huge.pem");
        std::fs::write(&huge, pem.repeat((MAX_CA_BYTES as usize / pem.len()) + 2)).expect("write");
        for (path, why) in [
            ("ca.pem".to_owned(), "relative"),
            (root.join("nope.pem").display().to_string(), "missing"),
            (link.display().to_string(), "a symbolic link"),
            (root.display().to_string(), "a directory"),
            (empty.display().to_string(), "no certificate"),
            (open.display().to_string(), "writable by others"),
            (huge.display().to_string(), "over 1 MiB"),
        ] {
            write_private(&root.join(CONFIG_FILE), &conf(&path));
            let e = load(root, root.join("spool")).expect_err(why);
            assert_eq!(e.code(), Code::Config, "{why}: {e:?}");
        }
    }
}
