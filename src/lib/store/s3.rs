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
//! A put first spools the bytes into a private temp file under `cas/tmp/`
//! (hashed on the way, so other bytes than announced are refused with
//! nothing sent), uploads them with `x-amz-checksum-sha256` (the server
//! refuses a body of another digest) and confirms the stored length with a
//! HEAD before it returns, so the metadata naming the object commits only
//! after the object is in the bucket. A read spools the object into a
//! private temp file bounded by its recorded length and verifies size and
//! SHA-256 before a byte is handed out. Transport failures, timeouts and
//! 5xx answers are retried a bounded number of times with backoff; what
//! still fails, and every refusal (credentials, a missing bucket, a
//! redirect), is `blob_store_unavailable`. Multipart uploads are not used:
//! one PUT per object (S3 takes up to 5 GiB that way, over the 4 GiB the
//! largest object here may have).

use super::blob::{BlobBatch, BlobStore, ListedBlob};
use super::cas::{CasStats, PutOutcome};
use super::private_fs;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
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
const BUF: usize = 64 * 1024;

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
    let agent: ureq::Agent = crate::net::client_builder(None)
        .timeout_connect(Some(timeout.min(Duration::from_secs(10))))
        .user_agent(concat!("agent-task/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let store = S3Store {
        bucket,
        creds: Credentials::new(cred.access_key_id, cred.secret_access_key),
        prefix: c.prefix,
        agent,
        spool,
        timeout,
    };
    Ok(Some((store, bytes)))
}

fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(c.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(c.get(2).copied().unwrap_or(0));
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(char::from(T[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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

impl S3Store {
    fn key(&self, digest: &Sha256Hex) -> String {
        format!("{}sha256/{}", self.prefix, digest.as_str())
    }

    fn deadline(&self, bytes: u64) -> Duration {
        // The base timeout plus a second per MiB (a floor of 1 MiB/s),
        // counted up to the largest object (4 GiB).
        self.timeout + Duration::from_secs(bytes.min(4 << 30) >> 20)
    }

    /// Runs one request with bounded retries on transport failures,
    /// timeouts and 5xx answers; the last failure is `blob_store_unavailable`.
    fn call(
        &self,
        what: &str,
        send: &mut dyn FnMut() -> std::result::Result<Response, ureq::Error>,
    ) -> Result<Response> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(BACKOFF * 4u32.pow(attempt - 1));
            }
            match send() {
                Ok(r) if matches!(r.status().as_u16(), 500 | 502 | 503 | 504) => {
                    last = format!("HTTP {}", r.status().as_u16());
                }
                Ok(r) => return Ok(r),
                Err(e) => last = e.to_string(),
            }
        }
        Err(unavailable(
            what,
            format!("{last} (after {ATTEMPTS} attempts)"),
        ))
    }

    /// The stored length of an object (`None`: absent). A missing bucket is
    /// `blob_store_unavailable`, never "absent".
    fn head(&self, digest: &Sha256Hex) -> Result<Option<u64>> {
        let key = self.key(digest);
        let what = "stat an object";
        let resp = self.call(what, &mut || {
            let url = self
                .bucket
                .head_object(Some(&self.creds), &key)
                .sign(SIGNED_FOR);
            self.agent
                .head(url.as_str())
                .config()
                .timeout_global(Some(self.timeout))
                .build()
                .call()
        })?;
        match resp.status().as_u16() {
            200 => length_of(&resp)
                .map(Some)
                .ok_or_else(|| unavailable(what, "a HEAD answer without a length")),
            404 => {
                self.check_bucket()?;
                Ok(None)
            }
            s => Err(refused(what, s, None)),
        }
    }

    fn check_bucket(&self) -> Result<()> {
        let what = "reach its bucket";
        let resp = self.call(what, &mut || {
            let url = self.bucket.head_bucket(Some(&self.creds)).sign(SIGNED_FOR);
            self.agent
                .head(url.as_str())
                .config()
                .timeout_global(Some(self.timeout))
                .build()
                .call()
        })?;
        match resp.status().as_u16() {
            200 => Ok(()),
            404 => Err(refused(what, 404, Some("NoSuchBucket".into()))
                .with("bucket", self.bucket.name().to_owned())),
            s => Err(refused(what, s, None)),
        }
    }

    /// Uploads a verified local file as `digest` and confirms its length.
    fn put_file(&self, path: &Path, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        let before = self.head(digest)?;
        if before == Some(size) {
            return Ok(PutOutcome {
                digest: digest.clone(),
                size,
                created: false,
                repaired: false,
            });
        }
        let key = self.key(digest);
        let checksum = b64(&digest.to_bytes());
        let what = "store an object";
        let resp = self.call(what, &mut || {
            let mut f = match std::fs::File::open(path) {
                Ok(f) => f,
                Err(e) => return Err(ureq::Error::Io(e)),
            };
            let mut action = self.bucket.put_object(Some(&self.creds), &key);
            action
                .headers_mut()
                .insert("x-amz-checksum-sha256", checksum.clone());
            let url = action.sign(SIGNED_FOR);
            self.agent
                .put(url.as_str())
                .config()
                .timeout_global(Some(self.deadline(size)))
                .build()
                .header("x-amz-checksum-sha256", &checksum)
                .header("content-length", &size.to_string())
                .send(ureq::SendBody::from_reader(&mut f))
        })?;
        match resp.status().as_u16() {
            200 => {}
            s => return Err(refused(what, s, s3_code(resp))),
        }
        match self.head(digest)? {
            Some(n) if n == size => Ok(PutOutcome {
                digest: digest.clone(),
                size,
                created: before.is_none(),
                repaired: before.is_some(),
            }),
            got => Err(unavailable(
                what,
                format!("the bucket holds {got:?} bytes for it after a put of {size}"),
            )
            .with("digest", digest.to_string())),
        }
    }

    fn temp(&self, prefix: &str) -> Result<tempfile::NamedTempFile> {
        private_fs::ensure_private_dir(&self.spool)?;
        tempfile::Builder::new()
            .prefix(prefix)
            .tempfile_in(&self.spool)
            .map_err(|e| Error::io("create temp file in", &self.spool, e))
    }

    /// Spools `reader` (at most `max_bytes`) into a private temp file,
    /// hashed on the way.
    fn spool_in(
        &self,
        reader: &mut dyn Read,
        max_bytes: u64,
        too_large: impl FnOnce() -> Error,
    ) -> Result<(tempfile::NamedTempFile, Sha256Hex, u64)> {
        let mut tmp = self.temp("put-")?;
        let (digest, size) =
            super::hashed::copy_hashed(reader, &mut tmp, max_bytes, too_large, |e| {
                Error::new(Code::Io, format!("reading input: {e}"))
            })?;
        Ok((tmp, digest, size))
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
        let limit = expected_size.unwrap_or(max_bytes).min(max_bytes);
        let resp = self.call(what, &mut || {
            let url = self
                .bucket
                .get_object(Some(&self.creds), &key)
                .sign(SIGNED_FOR);
            self.agent
                .get(url.as_str())
                .config()
                .timeout_global(Some(self.deadline(limit)))
                .build()
                .call()
        })?;
        match resp.status().as_u16() {
            200 => {}
            404 => {
                return match s3_code(resp).as_deref() {
                    Some("NoSuchBucket") => Err(refused(what, 404, Some("NoSuchBucket".into()))),
                    _ => {
                        self.check_bucket()?;
                        Ok(None)
                    }
                };
            }
            s => return Err(refused(what, s, s3_code(resp))),
        }
        if let Some(len) = length_of(&resp) {
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
        Ok(Some((
            Sha256Hex::from_bytes(hasher.finalize().into()),
            size,
        )))
    }

    /// Spools a verified object into a private temp file, rewound.
    fn spool_out(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<(tempfile::NamedTempFile, u64)> {
        let mut tmp = self.temp("get-")?;
        let got = self.fetch(digest, expected_size, max_bytes, tmp.as_file_mut())?;
        let size = match got {
            None => return Err(missing(digest)),
            Some((d, n)) if d == *digest && expected_size.is_none_or(|s| s == n) => n,
            Some(_) => return Err(integrity(digest, "the bytes read hash to another digest")),
        };
        tmp.as_file_mut()
            .rewind()
            .map_err(|e| Error::io("rewind", tmp.path(), e))?;
        Ok((tmp, size))
    }
}

impl BlobStore for S3Store {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn put(&self, reader: &mut dyn Read, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        let mismatch = |got: String| {
            Error::new(
                Code::IntegrityError,
                format!(
                    "the bytes put as object {digest} of {size} bytes were {got}; nothing was \
                     stored"
                ),
            )
            .with("digest", digest.to_string())
            .with("size", size)
        };
        let (tmp, d, n) = self.spool_in(reader, size, || mismatch("more bytes".into()))?;
        if d != *digest || n != size {
            return Err(mismatch(format!("{n} bytes hashing to {d}")));
        }
        self.put_file(tmp.path(), digest, size)
    }

    fn put_stream(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        let (tmp, d, n) = self.spool_in(reader, max_bytes, || {
            Error::new(Code::TooLarge, format!("content exceeds {max_bytes} bytes"))
        })?;
        self.put_file(tmp.path(), &d, n)
    }

    fn get(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<Vec<u8>> {
        let (tmp, size) = self.spool_out(digest, expected_size, max_bytes)?;
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
        let (tmp, n) = self.spool_out(digest, Some(size), size)?;
        let copied = std::io::copy(&mut tmp.as_file().take(n), out)
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
            Some(n) => size.is_none_or(|s| s == n),
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
        for _ in 0..MAX_LIST_PAGES {
            let resp = self.call(what, &mut || {
                let mut action = self.bucket.list_objects_v2(Some(&self.creds));
                action.with_prefix(prefix.clone());
                action.with_max_keys(1000);
                if let Some(t) = &token {
                    action.with_continuation_token(t.clone());
                }
                let url = action.sign(SIGNED_FOR);
                self.agent
                    .get(url.as_str())
                    .config()
                    .timeout_global(Some(self.timeout))
                    .build()
                    .call()
            })?;
            match resp.status().as_u16() {
                200 => {}
                s => return Err(refused(what, s, s3_code(resp))),
            }
            let mut body = Vec::new();
            resp.into_body()
                .into_reader()
                .take(MAX_ANSWER_BYTES + 1)
                .read_to_end(&mut body)
                .map_err(|e| unavailable(what, format!("the listing broke off: {e}")))?;
            let page = list_page(&body, &prefix)?;
            for blob in page.blobs {
                each(blob)?;
            }
            match page.next {
                Some(t) if Some(&t) != token.as_ref() => token = Some(t),
                _ => return Ok(()),
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
        let what = "delete an object";
        let resp = self.call(what, &mut || {
            let url = self
                .bucket
                .delete_object(Some(&self.creds), &key)
                .sign(SIGNED_FOR);
            self.agent
                .delete(url.as_str())
                .config()
                .timeout_global(Some(self.timeout))
                .build()
                .call()
        })?;
        match resp.status().as_u16() {
            200 | 204 | 404 => Ok(existed),
            s => Err(refused(what, s, s3_code(resp))),
        }
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

    fn write_private(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
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
}
