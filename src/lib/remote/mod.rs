//! The client of a workspace endpoint: what an agent that holds nothing but
//! its token file and the endpoint URL runs (`--endpoint URL --repository R
//! --profile P` on the agent commands). One [`Client`] per command: JSON
//! operations on `…/agent-tasks`, and the remote checkpoint in phases
//! ([`Client::checkpoint`]): walk and hash the workspace with the same
//! walker and canonical manifest as a local checkpoint, post the manifest,
//! upload only the blobs the authority lacks in bounded packs, commit.
//! Wire format: `docs/workspace-http.md`.

pub mod cache;
pub mod upload;

use crate::contract::CAPABILITY;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use crate::workflow::service::facade::OperationRequest;
use crate::workflow::service::snapshot::{self, Entry, MODE_LINK};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Where a workspace profile is served.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Base URL (`http://host:port`).
    pub base: String,
    /// Repository id of the workspace profile.
    pub repository: String,
    /// Profile id.
    pub profile: String,
}

/// Largest answer read from the endpoint (a manifest answer lists missing
/// entries by index: at most a few bytes per entry).
pub const MAX_ANSWER: u64 = 32 * 1024 * 1024;
/// Time limit of one JSON operation.
pub const OP_TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes of blobs the client puts in one pack (a larger blob goes alone).
pub const PACK_TARGET: u64 = 8 * 1024 * 1024;

/// A client of one workspace profile for one token.
pub struct Client {
    endpoint: Endpoint,
    token: String,
    ops: ureq::Agent,
    bulk: ureq::Agent,
}

fn seg(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::EndpointResponseInvalid, msg)
}

/// The typed error a refusal body carries (`{"error","message","details"?}`
/// with a code this binary knows), else `endpoint_response_invalid`.
fn remote_error(status: u16, body: &[u8]) -> Error {
    let v: Option<Map<String, Value>> = serde_json::from_slice(body).ok();
    let parsed = v.as_ref().and_then(|m| {
        let msg = m.get("message")?.as_str()?;
        Error::from_wire(
            m.get("error")?.as_str()?,
            msg.chars().take(2048).collect::<String>(),
        )
    });
    match parsed {
        Some(e) => {
            let mut e = e.with("endpoint_status", status);
            if let Some(Value::Object(d)) = v.as_ref().and_then(|m| m.get("details")) {
                for (k, val) in d.iter().take(32) {
                    e = e.with(k, val.clone());
                }
            }
            e
        }
        None => invalid(format!(
            "the endpoint answered HTTP {status} without a typed error"
        ))
        .with("endpoint_status", status),
    }
}

impl Client {
    /// A client for `endpoint` with the agent token `token`. Only `http`
    /// and `https` URLs without credentials, query or fragment.
    pub fn new(endpoint: Endpoint, token: String) -> Result<Client> {
        let base = endpoint.base.trim_end_matches('/');
        let url = url::Url::parse(base)
            .map_err(|e| Error::new(Code::InvalidUrl, format!("--endpoint is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::new(
                Code::InvalidUrlScheme,
                "--endpoint must be an http or https URL",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Error::new(
                Code::InvalidUrlCredentials,
                "--endpoint may not carry credentials (the token file is the bearer)",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(Error::new(
                Code::InvalidUrl,
                "--endpoint is a base URL without query or fragment",
            ));
        }
        for (what, v) in [
            ("--repository", &endpoint.repository),
            ("--profile", &endpoint.profile),
        ] {
            crate::contract::check_id(what, v)?;
        }
        let agent = |global: Option<Duration>| -> ureq::Agent {
            crate::net::client_builder(global)
                .timeout_connect(Some(Duration::from_secs(30)))
                .timeout_recv_response(Some(Duration::from_secs(600)))
                .user_agent(concat!("agent-task/", env!("CARGO_PKG_VERSION")))
                .build()
                .into()
        };
        Ok(Client {
            endpoint: Endpoint {
                base: base.to_owned(),
                ..endpoint
            },
            token,
            ops: agent(Some(OP_TIMEOUT)),
            bulk: agent(None),
        })
    }

    fn url(&self, suffix: &str) -> String {
        format!(
            "{}/v1/hub/workspace/repositories/{}/profiles/{}/agent-tasks{suffix}",
            self.endpoint.base,
            seg(&self.endpoint.repository),
            seg(&self.endpoint.profile)
        )
    }

    /// Reads one answer: the envelope's `result` for `operation` on 200, the
    /// typed remote error otherwise.
    fn answer(
        resp: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        operation: &str,
    ) -> Result<Value> {
        let mut resp = resp.map_err(|e| {
            Error::new(
                Code::EndpointUnreachable,
                format!("the workspace endpoint could not be reached: {e}"),
            )
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => {
                    invalid(format!("the endpoint's answer is over {MAX_ANSWER} bytes"))
                }
                e => Error::new(
                    Code::EndpointUnreachable,
                    format!("reading the endpoint's answer failed: {e}"),
                ),
            })?;
        if status != 200 {
            return Err(remote_error(status, &body));
        }
        let v: Map<String, Value> = serde_json::from_slice(&body)
            .map_err(|_| invalid("the endpoint's answer is not a JSON object"))?;
        let ok = v.len() == 4
            && v.get("capability").and_then(Value::as_str) == Some(CAPABILITY)
            && v.get("schema_version").and_then(Value::as_u64) == Some(1)
            && v.get("operation").and_then(Value::as_str) == Some(operation);
        match v.get("result") {
            Some(r) if ok => Ok(r.clone()),
            _ => Err(invalid(format!(
                "the endpoint's answer is not a {operation} envelope"
            ))),
        }
    }

    /// Runs one operation on the task route.
    pub fn op(&self, r: &OperationRequest) -> Result<Value> {
        let body = serde_json::to_vec(r).map_err(|e| Error::new(Code::Usage, e.to_string()))?;
        let resp = self
            .ops
            .post(self.url(""))
            .header("authorization", &format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .send(&body[..]);
        Self::answer(resp, r.name())
    }

    /// Posts a checkpoint manifest (phase 1).
    pub fn manifest(&self, change_id: &str, bytes: &[u8]) -> Result<Value> {
        let resp = self
            .bulk
            .post(self.url(&format!("/changes/{}/manifest", seg(change_id))))
            .header("authorization", &format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .send(bytes);
        Self::answer(resp, "checkpoint_manifest")
    }

    /// Uploads one pack of blobs read from `root` (phase 2). Each blob is
    /// hashed as it is read; one that no longer matches its manifest entry
    /// aborts the upload with `conflict` (the workspace changed: checkpoint
    /// again).
    fn pack(&self, change_id: &str, root: &Path, blobs: &[&Entry]) -> Result<Value> {
        let len: u64 = blobs
            .iter()
            .map(|e| e.size + crate::workflow::service::remote::FRAME_HEADER as u64)
            .sum();
        let failure = Rc::new(RefCell::new(None));
        let mut reader = PackReader {
            root: root.to_path_buf(),
            blobs: blobs.iter().map(|e| (*e).clone()).collect(),
            next: 0,
            current: None,
            failure: failure.clone(),
        };
        let resp = self
            .bulk
            .post(self.url(&format!("/changes/{}/blobs", seg(change_id))))
            .header("authorization", &format!("Bearer {}", self.token))
            .header("content-type", "application/octet-stream")
            .header("content-length", &len.to_string())
            .send(ureq::SendBody::from_reader(&mut reader));
        if let Some(e) = failure.borrow_mut().take() {
            return Err(e);
        }
        Self::answer(resp, "checkpoint_blobs")
    }

    /// A remote checkpoint of `root` for `change_id` (the phases above);
    /// returns the commit's output (the same fields as a local checkpoint)
    /// with what was uploaded. `cache` is the client's stat cache file.
    pub fn checkpoint(
        &self,
        change_id: &str,
        root: &Path,
        max_revision_bytes: u64,
        cache_file: Option<&Path>,
        (new_subject, message): (bool, Option<&str>),
    ) -> Result<Value> {
        let canon = std::fs::canonicalize(root).map_err(|e| Error::io("resolve", root, e))?;
        let key = canon
            .to_str()
            .ok_or_else(|| Error::new(Code::InvalidInput, "workspace path is not UTF-8"))?
            .to_owned();
        let cached = cache_file.map(|p| cache::load(p, &key)).unwrap_or_default();
        crate::progress::phase("reading the workspace", None);
        let scan = snapshot::scan_client(&canon, &cached, max_revision_bytes)?;
        if let Some(p) = cache_file {
            // Facts about the files, whatever the endpoint says next; a
            // cache that cannot be written only costs a re-read later.
            let _ = cache::store(
                p,
                &key,
                &scan.cache_rows,
                &scan.revision,
                scan.scanned_at_ns,
            );
        }
        crate::progress::phase("sending the manifest", None);
        let neg = self.manifest(change_id, &scan.manifest_bytes)?;
        let revision = neg
            .get("revision")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the manifest answer has no revision"))?;
        if revision != scan.revision.as_str() {
            return Err(invalid(
                "the endpoint computed another revision from the same manifest",
            ));
        }
        let max_pack = neg
            .pointer("/limits/max_pack_bytes")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid("the manifest answer has no pack limit"))?;
        let mut missing: Vec<&Entry> = Vec::new();
        for i in neg
            .get("missing")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("the manifest answer has no missing list"))?
        {
            let e = i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| scan.manifest.entries.get(i))
                .ok_or_else(|| invalid("the manifest answer names an entry that is not there"))?;
            missing.push(e);
        }
        let frame = crate::workflow::service::remote::FRAME_HEADER as u64;
        if let Some(e) = missing.iter().find(|e| e.size + frame > max_pack) {
            return Err(Error::new(
                Code::TooLarge,
                format!(
                    "{} is {} bytes: over the endpoint's pack limit of {max_pack} bytes (serve --max-pack-bytes)",
                    e.path, e.size
                ),
            )
            .with("path", e.path.clone()));
        }
        let target = PACK_TARGET.min(max_pack);
        let (mut uploaded, mut uploaded_bytes, mut packs) = (0u64, 0u64, 0u64);
        crate::progress::phase("sending blobs", Some(missing.len() as u64));
        let mut i = 0;
        while i < missing.len() {
            let mut j = i;
            let mut bytes = 0u64;
            while j < missing.len() && (j == i || bytes + missing[j].size + frame <= target) {
                bytes += missing[j].size + frame;
                j += 1;
            }
            let out = self.pack(change_id, &canon, &missing[i..j])?;
            uploaded += out.get("stored").and_then(Value::as_u64).unwrap_or(0);
            uploaded_bytes += out.get("stored_bytes").and_then(Value::as_u64).unwrap_or(0);
            packs += 1;
            crate::progress::inc((j - i) as u64);
            i = j;
        }
        crate::progress::phase("committing the revision", None);
        let mut out = self.op(&OperationRequest::CheckpointCommit(
            crate::workflow::service::facade::CheckpointCommitRequest {
                change: crate::workflow::service::change::ChangeSel::Id(change_id.to_owned()),
                revision: scan.revision.clone(),
                new_subject,
                message: message.map(str::to_owned),
            },
        ))?;
        if let Some(m) = out.as_object_mut() {
            m.insert("hashed".into(), Value::from(scan.hashed));
            m.insert(
                "upload".into(),
                serde_json::to_value(UploadSummary {
                    missing_blobs: missing.len(),
                    packs,
                    stored_blobs: uploaded,
                    stored_bytes: uploaded_bytes,
                })?,
            );
        }
        Ok(out)
    }
}

/// Streams a pack: for each blob its frame header, then its bytes read
/// from the workspace (a link: its target), hashed on the way.
struct PackReader {
    root: PathBuf,
    blobs: Vec<Entry>,
    next: usize,
    current: Option<Frame>,
    failure: Rc<RefCell<Option<Error>>>,
}

struct Frame {
    head: Vec<u8>,
    head_at: usize,
    body: Box<dyn Read>,
    entry: Entry,
    seen: u64,
    hasher: sha2::Sha256,
}

impl PackReader {
    fn open(&self, e: &Entry) -> Result<Box<dyn Read>> {
        let p = self.root.join(&e.path);
        if e.mode == MODE_LINK {
            let t = std::fs::read_link(&p).map_err(|err| Error::io("readlink", &p, err))?;
            let bytes = std::os::unix::ffi::OsStrExt::as_bytes(t.as_os_str()).to_vec();
            Ok(Box::new(std::io::Cursor::new(bytes)))
        } else {
            Ok(Box::new(crate::store::private_fs::open_nofollow_read(&p)?))
        }
    }

    fn fail(&self, e: Error) -> std::io::Error {
        let msg = e.to_string();
        *self.failure.borrow_mut() = Some(e);
        std::io::Error::other(msg)
    }
}

fn changed(e: &Entry) -> Error {
    Error::new(
        Code::Conflict,
        format!("{} changed while it was uploaded: checkpoint again", e.path),
    )
    .with("path", e.path.clone())
}

impl Read for PackReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        loop {
            if self.current.is_none() {
                let Some(e) = self.blobs.get(self.next).cloned() else {
                    return Ok(0);
                };
                self.next += 1;
                let body = self.open(&e).map_err(|err| self.fail(err))?;
                let mut head = e.sha256.to_bytes().to_vec();
                head.extend_from_slice(&e.size.to_be_bytes());
                self.current = Some(Frame {
                    head,
                    head_at: 0,
                    body,
                    entry: e,
                    seen: 0,
                    hasher: sha2::Sha256::new(),
                });
            }
            let Some(f) = self.current.as_mut() else {
                continue;
            };
            if f.head_at < f.head.len() {
                let n = (f.head.len() - f.head_at).min(buf.len());
                buf[..n].copy_from_slice(&f.head[f.head_at..f.head_at + n]);
                f.head_at += n;
                return Ok(n);
            }
            let left = f.entry.size - f.seen;
            if left == 0 {
                // One more byte would mean the file grew.
                let mut probe = [0u8; 1];
                let extra = f.body.read(&mut probe)?;
                let digest = Sha256Hex::from_bytes(std::mem::take(&mut f.hasher).finalize().into());
                let entry = f.entry.clone();
                self.current = None;
                if extra != 0 || digest != entry.sha256 {
                    return Err(self.fail(changed(&entry)));
                }
                continue;
            }
            let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
            let n = f.body.read(&mut buf[..want])?;
            if n == 0 {
                let entry = f.entry.clone();
                return Err(self.fail(changed(&entry)));
            }
            f.hasher.update(&buf[..n]);
            f.seen += n as u64;
            return Ok(n);
        }
    }
}

/// `checkpoint --remote`'s `upload` member (a JSON object: fields in key
/// order).
#[derive(serde::Serialize)]
struct UploadSummary {
    missing_blobs: usize,
    packs: u64,
    stored_blobs: u64,
    stored_bytes: u64,
}
