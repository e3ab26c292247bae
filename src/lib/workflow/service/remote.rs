//! Changes an agent drives through the workspace endpoint with nothing but
//! its token: `change_open`, `change_subject`, and the checkpoint in three
//! phases (a negotiation the way git push negotiates, then blob uploads,
//! then the commit). Wire format: `docs/workspace-http.md`.
//!
//! 1. **Manifest** ([`manifest`]): the client walks its workspace with the
//!    same walker and canonical manifest as a local checkpoint
//!    ([`crate::workflow::authority::snapshot::scan_client`]) and posts the manifest bytes. They
//!    are streamed into the staging area, then admitted under the lock
//!    ([`crate::workflow::authority::snapshot::admit_manifest`]: canonical form, path rules,
//!    size caps). The Change gets one open *checkpoint session* naming the
//!    revision and the blobs the authority lacks; the answer lists them as
//!    manifest entry indexes.
//! 2. **Blobs** ([`blobs`]): packs of `sha256 || u64be size || bytes`
//!    frames. Only blobs the session asked for are accepted, each with its
//!    manifest size, hashed while it streams into the staging area (never
//!    the CAS) and kept only if it matches. What is staged and not yet
//!    referenced by a revision counts against the actor's quota and
//!    expires with a TTL.
//! 3. **Commit** ([`commit`]): under the lock, the session's manifest is
//!    admitted again, every entry must be present (CAS or staging), link
//!    targets are checked, and the version is recorded exactly as a local
//!    checkpoint records it (the target head becomes the base, protected
//!    paths are listed); only then are the staged blobs moved into the CAS.

use crate::clock::{rfc3339_millis, unix_millis};
use crate::contract::check_id;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, Deferred, OptionalExtension, Staging, Work, params};
use crate::wire::digest::Sha256Hex;
use crate::workflow::authority::admin::{self, Authenticated};
use crate::workflow::authority::change::{
    self, Change, ChangeOpenOutput, ENDPOINT_WORKSPACE_PREFIX,
};
use crate::workflow::authority::checkpoint as ckpt;
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::authority::snapshot::{self, MODE_LINK};
use crate::workflow::journal::JournalWork;
use crate::workflow::service::ctx::AgentCtx;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;

/// What the operator bounds about remote checkpoints (`serve` flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteLimits {
    /// Largest revision (sum of its sizes), as `checkpoint --max-revision-bytes`.
    pub max_revision_bytes: u64,
    /// Largest manifest body.
    pub max_manifest_bytes: u64,
    /// Largest blob pack body (and so the largest single blob).
    pub max_pack_bytes: u64,
    /// Most staged bytes not yet referenced by a revision, per actor.
    pub quota_bytes: u64,
    /// How long a checkpoint session and an unreferenced staged blob live.
    pub ttl_ms: u64,
    /// Most open checkpoint sessions per actor.
    pub max_sessions: u64,
}

/// Default largest manifest body: 64 MiB (about 500,000 entries).
pub const DEFAULT_MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// Default largest pack body: 256 MiB.
pub const DEFAULT_MAX_PACK_BYTES: u64 = 256 << 20;
/// Default staging quota per actor: 4 GiB (two default-size revisions).
pub const DEFAULT_QUOTA_BYTES: u64 = 4 << 30;
/// Default session and staged-blob lifetime: 24 hours.
pub const DEFAULT_TTL_MS: u64 = 24 * 3600 * 1000;
/// Default open sessions per actor.
pub const DEFAULT_MAX_SESSIONS: u64 = 8;
/// Most missing entries a `blobs_missing` error lists.
const LISTED_MISSING: usize = 64;

impl Default for RemoteLimits {
    fn default() -> Self {
        RemoteLimits {
            max_revision_bytes: snapshot::DEFAULT_MAX_REVISION_BYTES,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            max_pack_bytes: DEFAULT_MAX_PACK_BYTES,
            quota_bytes: DEFAULT_QUOTA_BYTES,
            ttl_ms: DEFAULT_TTL_MS,
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

impl RemoteLimits {
    fn json(&self) -> LimitsOutput {
        LimitsOutput {
            max_manifest_bytes: self.max_manifest_bytes,
            max_pack_bytes: self.max_pack_bytes,
            max_revision_bytes: self.max_revision_bytes,
            staging_quota_bytes: self.quota_bytes,
            staging_ttl_ms: self.ttl_ms,
        }
    }
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// The endpoint's limits, as a checkpoint session's answer lists them.
#[derive(Serialize)]
struct LimitsOutput {
    max_manifest_bytes: u64,
    max_pack_bytes: u64,
    max_revision_bytes: u64,
    staging_quota_bytes: u64,
    staging_ttl_ms: u64,
}

/// `change_subject`'s output; `revision` and `context_digest` are null
/// before the first checkpoint, `landed_revision` only for a landed
/// Change.
#[derive(Serialize)]
struct SubjectOutput<'a> {
    base_revision: &'a str,
    change_id: &'a str,
    context_digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    landed_revision: Option<String>,
    revision: Option<Sha256Hex>,
    version: u64,
    workspace: &'a str,
}

/// A checkpoint session's answer: what the endpoint still needs.
#[derive(Serialize)]
struct SessionOutput<'a> {
    change_id: &'a str,
    expires_at: String,
    files: usize,
    limits: LimitsOutput,
    manifest_sha256: &'a Sha256Hex,
    missing: Vec<usize>,
    missing_blobs: usize,
    missing_bytes: u64,
    revision: &'a Sha256Hex,
    total_bytes: u64,
}

/// A blob upload's answer.
#[derive(Serialize)]
struct StoredOutput<'a> {
    change_id: &'a str,
    skipped: u64,
    stored: usize,
    stored_bytes: u64,
}

fn ms(i: u64) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}

/// Opens a Change for the bearer's actor on the profile's repository and
/// profile. The workspace is the client's and never named: the Change
/// records `endpoint:<change_id>`. With `request_id`, a retry by the same
/// actor returns the Change that request opened.
pub fn change_open(
    cx: &AgentCtx<'_>,
    repo_id: &str,
    profile: &str,
    request_id: Option<&str>,
    (title, body, group): (Option<&str>, Option<&str>, Option<&str>),
) -> Result<Deferred<Value>> {
    if let Some(r) = request_id {
        check_id("request_id", r)?;
    }
    let title = title.map(change::clean_title).transpose()?;
    let body = body.map(change::clean_body).transpose()?;
    let group = group.map(change::check_group).transpose()?;
    let (token, repo_id, profile) = (cx.token.to_owned(), repo_id.to_owned(), profile.to_owned());
    let request_id = request_id.map(str::to_owned);
    // Under `serve` a mutation of the writer (a batch of operator-plan
    // writes), answered once its batch is durable.
    cx.session_deferred(super::admin::WRITE_PLAN, move |w| {
        let (tx, now) = (w.authority()?, w.now_text());
        let out = change_open_in(
            tx,
            &now,
            &token,
            (&repo_id, &profile),
            request_id.as_deref(),
            group.as_deref(),
        )?;
        change::set_message(tx, &out.change.change_id, title.as_deref(), body.as_deref())?;
        serde_json::to_value(&out)
            .map_err(|e| Error::internal(format!("cannot render output: {e}")))
    })
}

fn change_open_in(
    tx: &Connection,
    now: &str,
    token: &str,
    (repo_id, profile): (&str, &str),
    request_id: Option<&str>,
    group: Option<&str>,
) -> Result<ChangeOpenOutput> {
    let who = admin::authenticate(tx, token)?;
    if let Some(r) = request_id {
        let prior: Option<String> = tx
            .query_row(
                "SELECT change_id FROM changes WHERE owner_id = ?1 AND agent_id = ?2 AND open_request_id = ?3",
                params![who.actor.owner_id, who.actor.agent_id, r],
                |x| x.get(0),
            )
            .optional()?;
        if let Some(id) = prior {
            let ch = change::change(tx, &id)?;
            if ch.repository != repo_id || ch.profile != profile {
                return Err(Error::new(
                    Code::IdempotencyConflict,
                    "this request id already opened a change in another profile",
                )
                .with("change_id", id));
            }
            return Ok(ChangeOpenOutput { change: ch });
        }
    }
    let repo = crate::workflow::authority::repository(tx, repo_id)?;
    if crate::workflow::authority::installed_requirement(tx, repo_id, profile)?.is_none() {
        return Err(Error::new(
            Code::NotFound,
            format!("no requirement installed for {repo_id} profile {profile}"),
        ));
    }
    let id = crate::wire::random_id("ch")?;
    tx.execute(
        "INSERT INTO changes(change_id, repo_id, profile_id, workspace, owner_id, agent_id, base_revision, current_version, created_at, open_request_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9)",
        params![
            id,
            repo_id,
            profile,
            format!("{ENDPOINT_WORKSPACE_PREFIX}{id}"),
            who.actor.owner_id,
            who.actor.agent_id,
            repo.head_revision,
            now,
            request_id
        ],
    )?;
    // A retry of the same request id (above) answers the Change it opened,
    // with the group recorded then.
    change::set_group(tx, &id, group)?;
    Ok(ChangeOpenOutput {
        change: change::change(tx, &id)?,
    })
}

/// The current subject of a Change as the Stop hook compares it: version,
/// revision and context digest (null before the first checkpoint), base
/// and workspace. Read-only.
pub fn subject(cx: &AgentCtx<'_>, sel: &change::ChangeSel) -> Result<Value> {
    cx.read(|_j, a, who, _now| {
        let ch = change::select_in(a, sel, cx.scope.as_ref())?;
        if !change::may_view(&ch, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
        let (revision, context_digest) = if ch.version == 0 {
            (None, None)
        } else {
            let s = change::current_subject(a, &ch)?;
            (
                Some(s.context.revision.clone()),
                Some(s.context_digest.to_string()),
            )
        };
        // Only for a landed Change (closed): the Stop hook's landed rule.
        let landed_revision = change::landed(a, &ch.change_id)?.map(|l| l.revision);
        Ok(serde_json::to_value(SubjectOutput {
            base_revision: &ch.base_revision,
            change_id: &ch.change_id,
            context_digest,
            landed_revision,
            revision,
            version: ch.version,
            workspace: &ch.workspace,
        })?)
    })
}

/// `change_list`: the caller's own Changes in the request's scope that
/// have not landed, oldest first (at most [`change::MAX_LISTED_CHANGES`]):
/// `{changes: [{change_id, version, revision, workspace}]}`, `revision`
/// null before the first checkpoint. Read-only.
pub fn open_changes(cx: &AgentCtx<'_>) -> Result<Value> {
    cx.read(|_j, a, who, _now| {
        let list = change::open_changes_of(a, &who.actor.owner_id, cx.scope.as_ref())?;
        let mut changes = Vec::with_capacity(list.len());
        for ch in list {
            let revision = if ch.version == 0 {
                None
            } else {
                Some(change::current_subject(a, &ch)?.context.revision.clone())
            };
            changes.push(OpenChange {
                change_id: ch.change_id,
                version: ch.version,
                revision,
                workspace: ch.workspace,
            });
        }
        Ok(serde_json::to_value(OpenChanges { changes })?)
    })
}

/// The output of `change_list` ([`open_changes`]).
#[derive(Debug, serde::Serialize)]
pub struct OpenChanges {
    /// The caller's open Changes, oldest first.
    pub changes: Vec<OpenChange>,
}

/// One open Change of [`OpenChanges`].
#[derive(Debug, serde::Serialize)]
pub struct OpenChange {
    /// The Change.
    pub change_id: String,
    /// Its current version (0 before the first checkpoint).
    pub version: u64,
    /// Its current subject's revision (`null` before the first checkpoint).
    pub revision: Option<Sha256Hex>,
    /// Its workspace.
    pub workspace: String,
}

/// An open checkpoint session.
#[derive(Debug, Clone)]
struct Session {
    owner_id: String,
    agent_id: String,
    revision: String,
    manifest_sha256: String,
    manifest_size: u64,
    expires_at_ms: i64,
}

fn session(conn: &Connection, change_id: &str) -> Result<Option<Session>> {
    Ok(conn
        .query_row(
            "SELECT owner_id, agent_id, revision, manifest_sha256, manifest_size, expires_at_ms FROM checkpoint_sessions WHERE change_id = ?1",
            params![change_id],
            |r| {
                Ok(Session {
                    owner_id: r.get(0)?,
                    agent_id: r.get(1)?,
                    revision: r.get(2)?,
                    manifest_sha256: r.get(3)?,
                    manifest_size: r.get::<_, i64>(4)?.max(0) as u64,
                    expires_at_ms: r.get(5)?,
                })
            },
        )
        .optional()?)
}

fn no_session(change_id: &str, reason: &str, msg: &str) -> Error {
    Error::new(Code::Conflict, msg.to_owned())
        .with("change_id", change_id)
        .with("reason", reason)
        .with("next", crate::contract::Next::checkpoint())
}

/// The Change a remote checkpoint names, for the caller: its owner's, and
/// opened through the endpoint.
fn endpoint_change(
    conn: &Connection,
    who: &Authenticated,
    change_id: &str,
    scope: Option<&change::Scope>,
) -> Result<Change> {
    let ch = change::select_in(conn, &change::ChangeSel::Id(change_id.to_owned()), scope)?;
    change::check_owner(&ch, who)?;
    if !ch.via_endpoint() {
        return Err(Error::new(
            Code::Conflict,
            "this change was opened on a workspace of the authority's host: checkpoint it there \
             (checkpoint without --endpoint)",
        )
        .with("change_id", change_id));
    }
    // A landed Change takes no further checkpoint (nor its uploads).
    change::check_open(conn, &ch)?;
    Ok(ch)
}

/// Staged bytes charged to an actor.
fn staged_bytes(conn: &Connection, who: &Authenticated) -> Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT COALESCE(SUM(size), 0) FROM staged_blobs WHERE owner_id = ?1 AND agent_id = ?2",
        params![who.actor.owner_id, who.actor.agent_id],
        |r| r.get(0),
    )?;
    Ok(n.max(0) as u64)
}

fn quota_error(limit: u64, staged: u64, wanted: u64) -> Error {
    Error::new(
        Code::UploadQuotaExceeded,
        format!(
            "the staged blobs of this agent not yet referenced by a revision would exceed the \
             quota of {limit} bytes (staged {staged}, this upload {wanted}); commit or let them \
             expire"
        ),
    )
    .with("staging_quota_bytes", limit)
    .with("staged_bytes", staged)
}

/// Whether a staged row of this digest and size exists.
fn staged_row(conn: &Connection, sha: &str, size: u64) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM staged_blobs WHERE sha256 = ?1 AND size = ?2",
            params![sha, ms(size)],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .is_some())
}

/// Expired sessions and staged blobs go; so do staged files a crash left
/// without a row once they are older than the TTL (by their file time).
fn collect_garbage(tx: &Connection, staging: &Staging, now_ms: i64, ttl_ms: u64) -> Result<()> {
    tx.execute(
        "DELETE FROM checkpoint_sessions WHERE expires_at_ms <= ?1",
        params![now_ms],
    )?;
    let cutoff = now_ms.saturating_sub(ms(ttl_ms));
    let expired: Vec<String> = tx
        .prepare("SELECT sha256 FROM staged_blobs WHERE staged_at_ms <= ?1")?
        .query_map(params![cutoff], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for sha in &expired {
        if let Ok(d) = Sha256Hex::parse(sha) {
            staging.remove(&d)?;
        }
        tx.execute("DELETE FROM staged_blobs WHERE sha256 = ?1", params![sha])?;
    }
    let file_cutoff = std::time::SystemTime::now()
        .checked_sub(std::time::Duration::from_millis(ttl_ms))
        .unwrap_or(std::time::UNIX_EPOCH);
    let mut keep = |d: &Sha256Hex| -> Result<bool> {
        Ok(tx
            .query_row(
                "SELECT 1 FROM staged_blobs WHERE sha256 = ?1",
                params![d.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .is_some())
    };
    staging.sweep(file_cutoff, &mut keep)?;
    Ok(())
}

/// The distinct blobs of a manifest: digest → (first entry index, size).
/// One digest with two sizes cannot be real bytes.
fn distinct(m: &snapshot::Manifest) -> Result<Vec<(Sha256Hex, usize, u64)>> {
    let mut seen: HashMap<&str, (usize, u64)> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in m.entries.iter().enumerate() {
        match seen.get(e.sha256.as_str()) {
            Some((_, size)) if *size != e.size => {
                return Err(Error::new(
                    Code::ManifestInvalid,
                    format!("manifest entry {i} gives digest {} a second size", e.sha256),
                )
                .with("index", i));
            }
            Some(_) => {}
            None => {
                seen.insert(e.sha256.as_str(), (i, e.size));
                out.push((e.sha256.clone(), i, e.size));
            }
        }
    }
    Ok(out)
}

/// Phase 1: admits the manifest `body` for a checkpoint of `change_id`,
/// opens (or replaces) the Change's checkpoint session and answers which
/// blobs the authority lacks (manifest entry indexes, one per digest).
/// The body is staged and the manifest admitted (parsed, canonical form,
/// path rules, caps) and made durable before the unit of work, which
/// under `serve` is a mutation of the writer, answered once its batch is
/// durable: a slow client or a large manifest never holds a batch.
pub fn manifest(
    cx: &AgentCtx<'_>,
    change_id: &str,
    body: &mut dyn Read,
    limits: &RemoteLimits,
) -> Result<Deferred<Value>> {
    check_id("change_id", change_id)?;
    let dir = DataDir::open(cx.root)?;
    let staging = dir.staging();
    // Streamed to a staged file before the lock is taken: a slow client
    // never holds the data-directory lock.
    let (msha, msize) = staging.put_any(body, limits.max_manifest_bytes)?;
    let admitted = staging
        .read(&msha, msize, limits.max_manifest_bytes)
        .and_then(|bytes| snapshot::admit_manifest(&bytes, limits.max_revision_bytes))
        .and_then(|adm| {
            let blobs = distinct(&adm.manifest)?;
            // The staged manifest is durable before a row names it.
            staging.sync()?;
            Ok((adm, blobs))
        });
    let (adm, blobs) = match admitted {
        Ok(x) => x,
        Err(e) => {
            // Nothing of a refused manifest stays, unless a row (another
            // session's, the same bytes) claims the file.
            forget_unclaimed(cx, &staging, &[(msha, msize)]);
            return Err(e);
        }
    };
    let m = StagedManifest {
        change_id: change_id.to_owned(),
        token: cx.token.to_owned(),
        scope: cx.scope.clone(),
        limits: limits.clone(),
        staging,
        msha,
        msize,
        adm,
        blobs,
    };
    cx.session_deferred(super::admin::WRITE_PLAN, move |w| {
        let tx = w.authority()?;
        // Whether a row claimed the manifest's file before this mutation:
        // if none did, a refusal removes the file (its own row, if it
        // wrote one, is rolled back with it).
        let claimed = staged_row(tx, m.msha.as_str(), m.msize)?;
        let out = manifest_in(w, &m);
        if out.is_err() && !claimed {
            let _ = m.staging.remove(&m.msha);
        }
        out
    })
}

/// A manifest staged and admitted, for its unit of work.
struct StagedManifest {
    change_id: String,
    token: String,
    scope: Option<change::Scope>,
    limits: RemoteLimits,
    staging: Staging,
    msha: Sha256Hex,
    msize: u64,
    adm: snapshot::Admitted,
    blobs: Vec<(Sha256Hex, usize, u64)>,
}

/// The unit of work of [`manifest`], under the lock.
fn manifest_in(w: &Work<'_>, m: &StagedManifest) -> Result<Value> {
    let (tx, dir, now_ms) = (w.authority()?, w.dir(), w.now_ms());
    let (staging, limits, adm, blobs) = (&m.staging, &m.limits, &m.adm, &m.blobs);
    let (msha, msize) = (&m.msha, m.msize);
    collect_garbage(tx, staging, now_ms, limits.ttl_ms)?;
    let who = admin::authenticate(tx, &m.token)?;
    let ch = endpoint_change(tx, &who, &m.change_id, m.scope.as_ref())?;
    let others: i64 = tx.query_row(
        "SELECT count(*) FROM checkpoint_sessions WHERE owner_id = ?1 AND agent_id = ?2 AND change_id <> ?3",
        params![who.actor.owner_id, who.actor.agent_id, ch.change_id],
        |r| r.get(0),
    )?;
    if others.max(0) as u64 >= limits.max_sessions {
        return Err(Error::new(
            Code::UploadQuotaExceeded,
            format!(
                "this agent already has {others} open checkpoint sessions (at most {}): commit \
                 them or let them expire",
                limits.max_sessions
            ),
        )
        .with("max_sessions", limits.max_sessions));
    }
    tx.execute(
        "DELETE FROM checkpoint_sessions WHERE change_id = ?1",
        params![ch.change_id],
    )?;
    let expires = now_ms.saturating_add(ms(limits.ttl_ms));
    tx.execute(
        "INSERT INTO checkpoint_sessions(change_id, owner_id, agent_id, revision, manifest_sha256, manifest_size, files, total_bytes, created_at_ms, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            ch.change_id,
            who.actor.owner_id,
            who.actor.agent_id,
            adm.revision.as_str(),
            msha.as_str(),
            ms(msize),
            adm.manifest.entries.len() as i64,
            ms(adm.total_bytes),
            now_ms,
            expires
        ],
    )?;
    let cas = dir.blobs()?;
    let mut missing = Vec::new();
    let mut missing_bytes = 0u64;
    {
        let mut ask = tx.prepare_cached(
            "INSERT INTO checkpoint_session_blobs(change_id, sha256, size) VALUES (?1, ?2, ?3)",
        )?;
        let mut touch =
            tx.prepare_cached("UPDATE staged_blobs SET staged_at_ms = ?2 WHERE sha256 = ?1")?;
        for (sha, index, size) in blobs {
            if cas.exists(sha, Some(*size))? {
                continue;
            }
            if staged_row(tx, sha.as_str(), *size)? && staging.present(sha, *size)? {
                // Lives as long as the session that needs it.
                touch.execute(params![sha.as_str(), now_ms])?;
                continue;
            }
            ask.execute(params![ch.change_id, sha.as_str(), ms(*size)])?;
            missing.push(*index);
            missing_bytes = missing_bytes.saturating_add(*size);
        }
    }
    // The manifest itself is staged until the commit moves it.
    if cas.exists(msha, Some(msize))? {
        staging.remove(msha)?;
    } else {
        // Present and durable (synced before this unit of work).
        if !staging.present(msha, msize)? {
            return Err(Error::new(
                Code::Conflict,
                "the staged manifest was removed while it was admitted: post it again",
            ));
        }
        tx.execute(
            "INSERT INTO staged_blobs(sha256, size, owner_id, agent_id, staged_at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT(sha256) DO UPDATE SET staged_at_ms = excluded.staged_at_ms",
            params![msha.as_str(), ms(msize), who.actor.owner_id, who.actor.agent_id, now_ms],
        )?;
        let staged = staged_bytes(tx, &who)?;
        if staged > limits.quota_bytes {
            return Err(quota_error(limits.quota_bytes, staged, msize));
        }
    }
    let listed = missing.len();
    Ok(serde_json::to_value(SessionOutput {
        change_id: &ch.change_id,
        expires_at: rfc3339_millis(
            jiff::Timestamp::from_millisecond(expires).unwrap_or(jiff::Timestamp::MAX),
        ),
        files: adm.manifest.entries.len(),
        limits: limits.json(),
        manifest_sha256: msha,
        missing,
        missing_blobs: listed,
        missing_bytes,
        revision: &adm.revision,
        total_bytes: adm.total_bytes,
    })?)
}

/// Removes staged files no row claims (best effort, under the lock).
fn forget_unclaimed(cx: &AgentCtx<'_>, staging: &Staging, files: &[(Sha256Hex, u64)]) {
    let (staging, files) = (staging.clone(), files.to_vec());
    let _ = cx.session(super::admin::WRITE_PLAN, move |w| {
        let tx = w.authority()?;
        for (sha, size) in &files {
            if !staged_row(tx, sha.as_str(), *size)? {
                staging.remove(sha)?;
            }
        }
        Ok(())
    });
}

/// Reads up to `buf.len()` bytes; fewer only at the end of the stream.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let msg = e.to_string();
                return Err(
                    match e.into_inner().map(|inner| inner.downcast::<Error>()) {
                        Some(Ok(typed)) => *typed,
                        _ => Error::new(
                            Code::InvalidRequest,
                            format!("cannot read the request body: {msg}"),
                        ),
                    },
                );
            }
        }
    }
    Ok(n)
}

/// Reads and drops exactly `size` bytes (a frame of a blob already held).
fn discard(r: &mut dyn Read, size: u64, sha: &Sha256Hex) -> Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let n = read_full(r, &mut buf[..want])?;
        if n == 0 {
            return Err(Error::new(
                Code::InvalidRequest,
                format!("the body ended inside blob {sha}"),
            ));
        }
        left -= n as u64;
    }
    Ok(())
}

/// Length of a frame header: 32 raw digest bytes and a big-endian u64 size.
pub const FRAME_HEADER: usize = 40;

/// Phase 2: stores a pack of blobs for the Change's open session. Each
/// frame must name a blob the session asked for, with its manifest size,
/// and hash to it; frames of blobs already held are read and dropped.
/// Blobs stored before a refused frame stay staged (they were asked for
/// and verified) and are charged to the actor. The charge is a unit of
/// work of its own (under `serve` a mutation of the writer); the
/// [`Deferred`] answers once it is durable: its error when the charge
/// failed, else the pack's answer (the refused frame's error, if any).
pub fn blobs(
    cx: &AgentCtx<'_>,
    change_id: &str,
    body: &mut dyn Read,
    limits: &RemoteLimits,
) -> Result<Deferred<Result<Value>>> {
    check_id("change_id", change_id)?;
    let (dir, conn) = admin::open_read(cx.root)?;
    let who = admin::authenticate(&conn, cx.token)?;
    endpoint_change(&conn, &who, change_id, cx.scope.as_ref())?;
    let now_ms = unix_millis(cx.clock.now());
    match session(&conn, change_id)? {
        Some(s)
            if s.expires_at_ms > now_ms
                && s.owner_id == who.actor.owner_id
                && s.agent_id == who.actor.agent_id => {}
        Some(s) if s.expires_at_ms <= now_ms => {
            return Err(no_session(
                change_id,
                "session_expired",
                "the change's checkpoint session expired: post the manifest again",
            ));
        }
        Some(_) => {
            return Err(no_session(
                change_id,
                "session_of_another_agent",
                "the change's open checkpoint session belongs to another agent",
            ));
        }
        None => {
            return Err(no_session(
                change_id,
                "no_session",
                "the change has no open checkpoint session: post its manifest first",
            ));
        }
    }
    let cas = dir.blobs()?;
    let staging = dir.staging();
    let staged_before = staged_bytes(&conn, &who)?;
    let mut stored: Vec<(Sha256Hex, u64)> = Vec::new();
    let mut stored_bytes = 0u64;
    let mut skipped = 0u64;
    let mut failure: Option<Error> = None;
    {
        let mut asked = conn.prepare_cached(
            "SELECT size FROM checkpoint_session_blobs WHERE change_id = ?1 AND sha256 = ?2",
        )?;
        loop {
            let mut head = [0u8; FRAME_HEADER];
            let n = match read_full(body, &mut head) {
                Ok(n) => n,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            if n == 0 {
                break;
            }
            if n < FRAME_HEADER {
                failure = Some(Error::new(
                    Code::InvalidRequest,
                    "the body ended inside a frame header (32-byte digest, 8-byte size)",
                ));
                break;
            }
            let mut raw = [0u8; 32];
            raw.copy_from_slice(&head[..32]);
            let sha = Sha256Hex::from_bytes(raw);
            let mut sz = [0u8; 8];
            sz.copy_from_slice(&head[32..]);
            let size = u64::from_be_bytes(sz);
            let want: Option<i64> = asked
                .query_row(params![change_id, sha.as_str()], |r| r.get(0))
                .optional()?;
            if want != Some(ms(size)) {
                failure = Some(
                    Error::new(
                        Code::BlobNotRequested,
                        format!(
                            "blob {sha} of {size} bytes is not one this change's checkpoint \
                             session asked for"
                        ),
                    )
                    .with("sha256", sha.to_string())
                    .with("size", size)
                    .with("stored_before", stored.len()),
                );
                break;
            }
            let held = cas.exists(&sha, Some(size))?
                || stored.iter().any(|(d, _)| *d == sha)
                || (staged_row(&conn, sha.as_str(), size)? && staging.present(&sha, size)?);
            if held {
                if let Err(e) = discard(body, size, &sha) {
                    failure = Some(e);
                    break;
                }
                skipped += 1;
                continue;
            }
            let after = staged_before
                .saturating_add(stored_bytes)
                .saturating_add(size);
            if after > limits.quota_bytes {
                failure = Some(
                    quota_error(limits.quota_bytes, staged_before + stored_bytes, size)
                        .with("stored_before", stored.len()),
                );
                break;
            }
            if let Err(e) = staging.put_exact(body, &sha, size) {
                failure = Some(e.with("stored_before", stored.len()));
                break;
            }
            stored.push((sha, size));
            stored_bytes += size;
        }
    }
    drop(conn);
    let reply = serde_json::to_value(StoredOutput {
        change_id,
        skipped,
        stored: stored.len(),
        stored_bytes,
    })?;
    if stored.is_empty() {
        return match failure {
            Some(e) => Err(e),
            None => Ok(Deferred::done(Ok(Ok(reply)))),
        };
    }
    // The staged files are durable before the rows naming them commit.
    staging.sync()?;
    let quota = limits.quota_bytes;
    // Under `serve` a mutation of the writer, answered once its batch is
    // durable. A refusal (the quota, counted again under the lock) removes
    // the files that no row claimed before it (its own rows are rolled
    // back with it); a frame refused earlier is answered once the blobs
    // before it are charged.
    cx.session_deferred(super::admin::WRITE_PLAN, move |w| {
        let tx = w.authority()?;
        let mut fresh = Vec::new();
        let out = (|| {
            let mut ins = tx.prepare_cached(
                "INSERT INTO staged_blobs(sha256, size, owner_id, agent_id, staged_at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT(sha256) DO NOTHING",
            )?;
            for (sha, size) in &stored {
                let n = ins.execute(params![
                    sha.as_str(),
                    ms(*size),
                    who.actor.owner_id,
                    who.actor.agent_id,
                    now_ms
                ])?;
                if n == 1 {
                    fresh.push(sha);
                }
            }
            let staged = staged_bytes(tx, &who)?;
            if staged > quota {
                return Err(quota_error(quota, staged, stored_bytes));
            }
            Ok(())
        })();
        if let Err(e) = out {
            for sha in fresh {
                let _ = staging.remove(sha);
            }
            return Err(e);
        }
        // Charged (kept, committed with the batch) even when a later
        // frame was refused: that refusal is the answer.
        Ok(match failure {
            Some(e) => Err(e),
            None => Ok(reply),
        })
    })
}

/// What a remote checkpoint's commit stored (or found stored) in a bucket
/// before it took the lock: the digests and sizes, and the blob-store
/// configuration they are in.
struct Preuploaded {
    blob_config: Vec<u8>,
    stored: std::collections::HashSet<(Sha256Hex, u64)>,
}

/// Before the lock, with a bucket configured: uploads the staged blobs of
/// the change's open session (and notes the ones the bucket already
/// holds: each put and each check confirms the length with a HEAD), so
/// that the unit of work neither uploads nor asks the bucket about them.
/// Reads only; `Ok(None)` when there is nothing to prepare (the local
/// CAS, whose adoption is a rename under the lock, or a refusal the unit
/// of work gives with its own answer). An unreachable bucket is the
/// command's answer, with no lock taken and nothing committed.
fn preupload(
    root: &std::path::Path,
    token: &str,
    scope: Option<&change::Scope>,
    change_id: &str,
    revision: &Sha256Hex,
    limits: &RemoteLimits,
) -> Result<Option<Preuploaded>> {
    let Ok(dir) = DataDir::open(root) else {
        return Ok(None);
    };
    let Some(blob_config) = dir.blob_config()? else {
        return Ok(None);
    };
    let Ok(Some(conn)) = dir.open_read(&crate::workflow::authority::schema::SPEC) else {
        return Ok(None);
    };
    let Ok(who) = admin::authenticate(&conn, token) else {
        return Ok(None);
    };
    if endpoint_change(&conn, &who, change_id, scope).is_err() {
        return Ok(None);
    }
    let Some(s) = session(&conn, change_id)? else {
        return Ok(None);
    };
    if s.revision != revision.as_str() {
        return Ok(None);
    }
    let (cas, staging) = (dir.blobs()?, dir.staging());
    let msha = Sha256Hex::parse(&s.manifest_sha256)?;
    let manifest_staged = staging.present(&msha, s.manifest_size)?;
    let bytes = if manifest_staged {
        staging.read(&msha, s.manifest_size, limits.max_manifest_bytes)?
    } else {
        cas.get(&msha, Some(s.manifest_size), limits.max_manifest_bytes)?
    };
    let Ok(adm) = snapshot::admit_manifest(&bytes, limits.max_revision_bytes) else {
        return Ok(None);
    };
    if adm.revision != *revision {
        return Ok(None);
    }
    crate::testhooks::upload_pause();
    let mut stored = std::collections::HashSet::new();
    let mut wanted: Vec<(Sha256Hex, u64)> = distinct(&adm.manifest)?
        .into_iter()
        .map(|(sha, _, size)| (sha, size))
        .collect();
    wanted.push((msha, s.manifest_size));
    for (sha, size) in wanted {
        if staged_row(&conn, sha.as_str(), size)? && staging.present(&sha, size)? {
            let path = staging.path(&sha);
            let mut f = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
            cas.put(&mut f, &sha, size)?;
        } else if !cas.exists(&sha, Some(size))? {
            // Missing: the unit of work lists what to upload.
            continue;
        }
        stored.insert((sha, size));
    }
    Ok(Some(Preuploaded {
        blob_config,
        stored,
    }))
}

/// Phase 3: records the Change's next version from its open session's
/// manifest, once every entry is present, exactly as a local checkpoint
/// records one; moves the staged blobs into the CAS; closes the session.
/// With a bucket configured, the staged blobs are uploaded before the
/// lock ([`preupload`]) and only the rows are written under it.
pub fn commit(
    cx: &AgentCtx<'_>,
    change_id: &str,
    revision: &Sha256Hex,
    (new_subject, message): (bool, Option<&str>),
    limits: &RemoteLimits,
) -> Result<Deferred<Value>> {
    check_id("change_id", change_id)?;
    let message = message.map(change::split_message).transpose()?;
    let (change_id, revision, limits) = (change_id.to_owned(), revision.clone(), limits.clone());
    let (token, scope) = (cx.token.to_owned(), cx.scope.clone());
    let pre = preupload(
        cx.root,
        &token,
        scope.as_ref(),
        &change_id,
        &revision,
        &limits,
    )?;
    // Under `serve` a batch of the writer (of its own: the plan differs
    // from the agent mutations'), answered once it is durable.
    cx.session_deferred(ckpt::CHECKPOINT_PLAN, move |w| {
        let (change_id, revision, limits) = (change_id.as_str(), &revision, &limits);
        let (tx, dir, now) = (w.authority()?, w.dir(), w.now_text());
        let now = now.as_str();
        let now_ms = w.now_ms();
        let cas = dir.blobs()?;
        let staging = dir.staging();
        // What was stored before the lock counts only in the same store.
        let config = dir.blob_config()?;
        let pre = pre.filter(|p| config.as_ref() == Some(&p.blob_config));
        let prestored = |sha: &Sha256Hex, size: u64| {
            pre.as_ref()
                .is_some_and(|p| p.stored.contains(&(sha.clone(), size)))
        };
        let in_store = |sha: &Sha256Hex, size: u64| -> Result<bool> {
            Ok(prestored(sha, size) || cas.exists(sha, Some(size))?)
        };
        let mut uploaded: Vec<Sha256Hex> = Vec::new();
        collect_garbage(tx, &staging, now_ms, limits.ttl_ms)?;
        let who = admin::authenticate(tx, &token)?;
        let ch = endpoint_change(tx, &who, change_id, scope.as_ref())?;
        let s = session(tx, change_id)?.ok_or_else(|| {
            no_session(
                change_id,
                "no_session",
                "the change has no open checkpoint session (committed already, replaced or \
                 expired): post its manifest again",
            )
        })?;
        if s.revision != revision.as_str() {
            return Err(no_session(
                change_id,
                "session_replaced",
                "the change's open checkpoint session is for another revision (a later manifest \
                 replaced it)",
            )
            .with("session_revision", s.revision));
        }
        let msha = Sha256Hex::parse(&s.manifest_sha256)?;
        let manifest_staged = !in_store(&msha, s.manifest_size)?;
        let bytes = if manifest_staged || staging.present(&msha, s.manifest_size)? {
            staging.read(&msha, s.manifest_size, limits.max_manifest_bytes)?
        } else {
            cas.get(&msha, Some(s.manifest_size), limits.max_manifest_bytes)?
        };
        let adm = snapshot::admit_manifest(&bytes, limits.max_revision_bytes)?;
        if adm.revision != *revision {
            return Err(Error::new(
                Code::IntegrityError,
                "the session's manifest is not the session's revision",
            ));
        }
        let basis = ckpt::version_basis(tx, &ch)?;
        let mut adopt = Vec::new();
        let mut missing = Vec::new();
        for (sha, index, size) in distinct(&adm.manifest)? {
            if prestored(&sha, size) {
                if staged_row(tx, sha.as_str(), size)? {
                    uploaded.push(sha);
                }
                continue;
            }
            if cas.exists(&sha, Some(size))? {
                continue;
            }
            if staged_row(tx, sha.as_str(), size)? && staging.present(&sha, size)? {
                adopt.push((sha, size));
            } else {
                missing.push(index);
            }
        }
        if !missing.is_empty() {
            let n = missing.len();
            missing.truncate(LISTED_MISSING);
            return Err(Error::new(
                Code::BlobsMissing,
                format!("{n} blob(s) of the manifest are neither stored nor staged: upload them"),
            )
            .with("missing_blobs", n)
            .with("missing", missing)
            .with("revision", revision.to_string()));
        }
        for e in adm.manifest.entries.iter().filter(|e| e.mode == MODE_LINK) {
            let target = if staging.present(&e.sha256, e.size)? {
                staging.read(&e.sha256, e.size, snapshot::MAX_LINK_TARGET)?
            } else {
                cas.get(&e.sha256, Some(e.size), snapshot::MAX_LINK_TARGET)?
            };
            if target.contains(&0) {
                return Err(Error::new(
                    Code::PathNotRepresentable,
                    format!(
                        "the symbolic link {:?} has a target with a NUL byte",
                        e.path.chars().take(200).collect::<String>()
                    ),
                )
                .with("path", e.path.chars().take(200).collect::<String>())
                .with("reason", "link target contains NUL"));
            }
        }
        if let Some((title, body)) = &message {
            change::set_message(tx, change_id, Some(title), Some(body))?;
        }
        let out = match ckpt::reusable(w.journal(), tx, &ch, revision, now_ms, new_subject)? {
            // The current subject's tree while it is live: returned as it is.
            Some(cur) => {
                ckpt::reused_output(tx, &cur, adm.manifest.entries.len(), adopt.len() as u64)?
            }
            None => {
                change::record_revision(
                    tx,
                    revision,
                    &msha,
                    bytes.len(),
                    adm.manifest.entries.len(),
                    now,
                )?;
                ckpt::record_version(
                    tx,
                    dir,
                    now,
                    &ch,
                    &basis,
                    revision,
                    &adm.manifest,
                    adopt.len() as u64,
                )?
            }
        };
        // Every check passed: the staged blobs become store objects, made
        // durable before the rows naming them commit.
        let mut batch = cas.batch();
        for (sha, size) in &adopt {
            batch.adopt(&staging.path(sha), sha, *size)?;
        }
        if manifest_staged {
            batch.adopt(&staging.path(&msha), &msha, s.manifest_size)?;
        }
        batch.commit()?;
        // Uploaded before the lock: the staged copies are done with.
        for sha in &uploaded {
            staging.remove(sha)?;
        }
        if !manifest_staged && prestored(&msha, s.manifest_size) {
            staging.remove(&msha)?;
        }
        {
            let mut del = tx.prepare_cached("DELETE FROM staged_blobs WHERE sha256 = ?1")?;
            for (sha, _) in &adopt {
                del.execute(params![sha.as_str()])?;
            }
            for sha in &uploaded {
                del.execute(params![sha.as_str()])?;
            }
            del.execute(params![msha.as_str()])?;
        }
        tx.execute(
            "DELETE FROM checkpoint_sessions WHERE change_id = ?1",
            params![change_id],
        )?;
        serde_json::to_value(&out)
            .map_err(|e| Error::internal(format!("cannot render output: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_blobs_refuse_two_sizes_for_one_digest() {
        let e = |p: &str, d: &Sha256Hex, size| snapshot::Entry {
            path: p.into(),
            mode: snapshot::MODE_FILE,
            size,
            sha256: d.clone(),
        };
        let a = Sha256Hex::digest(b"a");
        let b = Sha256Hex::digest(b"b");
        let m = snapshot::Manifest {
            version: 1,
            entries: vec![e("x", &a, 1), e("y", &b, 1), e("z", &a, 1)],
        };
        let d = distinct(&m).expect("distinct");
        assert_eq!(d, vec![(a.clone(), 0, 1), (b, 1, 1)]);
        let m = snapshot::Manifest {
            version: 1,
            entries: vec![e("x", &a, 1), e("z", &a, 2)],
        };
        assert_eq!(
            distinct(&m).map_err(|e| e.code()).err(),
            Some(Code::ManifestInvalid)
        );
    }
}
