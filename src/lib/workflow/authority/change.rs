//! Changes, their contexts and subjects: the reads every other file of
//! the authority builds on (a checkpoint, which writes a new version, is
//! [`super::checkpoint`]).

use super::snapshot::{self, Snapshot};
use super::{installed_requirement, repository};
use crate::contract::{Actor, WorkflowTask, WorkflowTaskSubject, check_id};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, MAIN_DB, OptionalExtension, params};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Domain of a context digest.
pub const DOMAIN_CONTEXT: &str = "agent-task.change-context.v1";

/// The exact context of one Change version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeContext {
    /// Always 1.
    pub version: u32,
    /// Repository.
    pub repository: String,
    /// Profile.
    pub profile: String,
    /// Change id.
    pub change_id: String,
    /// Change version.
    pub change_version: u64,
    /// Base revision: the target head when this version was checkpointed
    /// (each checkpoint records the head then as the Change's new base).
    pub base_revision: Sha256Hex,
    /// Checkpointed revision.
    pub revision: Sha256Hex,
    /// Target name.
    pub target: String,
    /// Target head at checkpoint.
    pub target_head: Sha256Hex,
    /// Installed requirement.
    pub requirement_digest: Sha256Hex,
    /// Policy epoch.
    pub policy_epoch: u64,
}

/// The stat cache of one scanned root.
pub type StatCache = snapshot::StatCache;

/// The stat cache of one scanned root: its rows, sorted by path bytes,
/// with the recorded state (read-only; one row, one packed value). A
/// damaged value is an empty cache: every file is read again.
pub fn load_stat_cache(conn: &Connection, key: &str) -> Result<StatCache> {
    let found = conn
        .prepare_cached(
            "SELECT rowid, revision, scanned_at_ns, typeof(entries) = 'blob', length(entries) \
             FROM stat_caches WHERE root = ?1",
        )?
        .query_row(params![key], |r| {
            let scanned_at_ns: i64 = r.get(2)?;
            let state = Sha256Hex::parse(r.get_ref(1)?.as_str()?)
                .ok()
                .map(|revision| snapshot::CacheState {
                    revision,
                    scanned_at_ns,
                });
            let (rowid, is_blob, len): (i64, bool, i64) = (r.get(0)?, r.get(3)?, r.get(4)?);
            // Read in place, while this statement still holds its read
            // snapshot: the value is copied once, from the database file
            // into the buffer the cache keeps (a column read would build
            // SQLite's own copy first), and the rows are never built one
            // by one.
            Ok(state.and_then(|st| {
                let len = usize::try_from(len).ok().filter(|_| is_blob)?;
                let mut blob = conn
                    .blob_open(MAIN_DB, "stat_caches", "entries", rowid, true)
                    .ok()?;
                let mut bytes = vec![0u8; len];
                std::io::Read::read_exact(&mut blob, &mut bytes).ok()?;
                StatCache::from_packed(bytes, Some(st))
            }))
        })
        .optional()?
        .flatten();
    Ok(found.unwrap_or_default())
}

/// Loads the stat cache of a root, scans it into the CAS, records the
/// revision and writes back the cache changes and its state (inside
/// `conn`'s transaction).
pub fn store_snapshot(
    conn: &Connection,
    dir: &DataDir,
    root: &Path,
    now: &str,
    max_revision_bytes: u64,
) -> Result<Snapshot> {
    store_snapshot_from(conn, dir, root, now, max_revision_bytes, None)
}

/// Whether a revision is recorded.
fn revision_known(conn: &Connection, r: &Sha256Hex) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM revisions WHERE revision = ?1")?
        .query_row(params![r.as_str()], |x| x.get::<_, i64>(0))
        .optional()?
        .is_some())
}

/// The stat cache's state of a root (its revision and scan time), or
/// `None`: what a scan before the lock read, compared under the lock.
fn cache_stamp(conn: &Connection, key: &str) -> Result<Option<(String, i64)>> {
    Ok(conn
        .prepare_cached("SELECT revision, scanned_at_ns FROM stat_caches WHERE root = ?1")?
        .query_row(params![key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// A stat cache with its stamp, as one load.
struct Loaded(StatCache, Option<(String, i64)>);

impl std::borrow::Borrow<StatCache> for Loaded {
    fn borrow(&self) -> &StatCache {
        &self.0
    }
}

/// A workspace scanned, and its blobs stored, before the data-directory
/// lock was taken ([`prestore_snapshot`]), with what the scan was read
/// against.
pub struct Prestored {
    key: String,
    snap: Snapshot,
    cache: Option<(String, i64)>,
    blob_config: Option<Vec<u8>>,
}

/// Scans `root` and stores its blobs before the lock (`conn` a read
/// connection of the authority): the uploads of a checkpoint's snapshot
/// never hold the lock. Under the lock, [`store_snapshot_from`] takes the
/// result when nothing it depends on moved meanwhile, and scans again
/// otherwise.
pub fn prestore_snapshot(
    conn: &Connection,
    dir: &DataDir,
    root: &Path,
    max_revision_bytes: u64,
) -> Result<Prestored> {
    let key = root
        .to_str()
        .ok_or_else(|| Error::new(Code::InvalidInput, "path is not UTF-8"))?;
    let blob_config = dir.blob_config()?;
    // The cache and its stamp load while the workspace is walked.
    let (snap, stamp) = snapshot::scan_loading(
        root,
        dir.blobs()?.as_ref(),
        || Ok(Loaded(load_stat_cache(conn, key)?, cache_stamp(conn, key)?)),
        &|r| revision_known(conn, r),
        max_revision_bytes,
    )
    .map(|(snap, loaded)| (snap, loaded.1))?;
    Ok(Prestored {
        key: key.to_owned(),
        snap,
        cache: stamp,
        blob_config,
    })
}

/// Whether a snapshot stored before the lock still holds under it: the
/// same root, the stat cache unchanged, the same blob store, and (for the
/// local CAS, where it is a stat per object) every object this scan stored
/// present: the manifest and the files it read. A file that matched the
/// unchanged stat cache names the object its row recorded, exactly as a
/// scan under the lock would trust it (the store never deletes an object
/// outside `cas migrate`, which changes the blob-store configuration
/// compared here). A bucket's objects are trusted from the put's own
/// length confirmation (a HEAD), made before the lock.
fn prestored_holds(conn: &Connection, dir: &DataDir, key: &str, p: &Prestored) -> Result<bool> {
    if p.key != key || cache_stamp(conn, key)? != p.cache || dir.blob_config()? != p.blob_config {
        return Ok(false);
    }
    if p.blob_config.is_some() {
        return Ok(true);
    }
    let blobs = dir.blobs()?;
    if let (Some(bytes), Some(sha)) = (&p.snap.manifest_bytes, &p.snap.manifest_sha256)
        && !blobs.exists(sha, Some(bytes.len() as u64))?
    {
        return Ok(false);
    }
    for (_, row) in &p.snap.cache_updates {
        if !blobs.exists(&Sha256Hex::from_bytes(row.sha256), Some(row.size))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// [`store_snapshot`], taking a snapshot stored before the lock when it
/// still holds ([`prestored_holds`]).
pub fn store_snapshot_from(
    conn: &Connection,
    dir: &DataDir,
    root: &Path,
    now: &str,
    max_revision_bytes: u64,
    pre: Option<Prestored>,
) -> Result<Snapshot> {
    let key = root
        .to_str()
        .ok_or_else(|| Error::new(Code::InvalidInput, "path is not UTF-8"))?;
    let snap = match pre {
        Some(p) if prestored_holds(conn, dir, key, &p)? => p.snap,
        _ => {
            snapshot::scan_loading(
                root,
                dir.blobs()?.as_ref(),
                || load_stat_cache(conn, key),
                &|r| revision_known(conn, r),
                max_revision_bytes,
            )?
            .0
        }
    };
    // The packed cache is exactly this revision's manifest with each
    // file's stat, as of the walk's start. A scan that matched every row
    // of the cache it read (the revision is the cache's own) has none:
    // every row was already trusted, and an unchanged checkpoint then
    // writes nothing.
    if let Some(packed) = &snap.cache_packed {
        conn.prepare_cached(
            "INSERT OR REPLACE INTO stat_caches(root, revision, scanned_at_ns, entries) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            key,
            snap.revision.as_str(),
            snap.scanned_at_ns,
            packed
        ])?;
    }
    // Without manifest bytes the revision is the cache's, already recorded.
    if let (Some(bytes), Some(sha)) = (&snap.manifest_bytes, &snap.manifest_sha256) {
        record_revision(conn, &snap.revision, sha, bytes.len(), snap.files, now)?;
    }
    Ok(snap)
}

/// Records a revision whose manifest bytes (`manifest_size` bytes, named
/// `manifest_sha256` in the store; every object they name too) are
/// durably in the CAS; recording it again changes nothing.
pub(crate) fn record_revision(
    conn: &Connection,
    revision: &Sha256Hex,
    manifest_sha256: &Sha256Hex,
    manifest_size: usize,
    files: usize,
    now: &str,
) -> Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO revisions(revision, manifest_sha256, manifest_size, file_count, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![
            revision.as_str(),
            manifest_sha256.as_str(),
            manifest_size as i64,
            files as i64,
            now
        ],
    )?;
    Ok(())
}

/// A Change row.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Id.
    pub change_id: String,
    /// Repository.
    pub repository: String,
    /// Profile.
    pub profile: String,
    /// Workspace path.
    pub workspace: String,
    /// Owner.
    pub owner_id: String,
    /// Agent that opened it.
    pub agent_id: String,
    /// Base revision.
    pub base_revision: String,
    /// Current version (0: no checkpoint yet).
    pub version: u64,
    /// The group given at `change open --group` (the Changes made for the
    /// same work); absent from the output when none was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// Loads a Change.
pub fn change(conn: &Connection, change_id: &str) -> Result<Change> {
    conn.prepare_cached("SELECT change_id, repo_id, profile_id, workspace, owner_id, agent_id, base_revision, current_version, group_label FROM changes WHERE change_id = ?1")?.query_row(params![change_id],
        |r| {
            Ok(Change {
                change_id: r.get(0)?,
                repository: r.get(1)?,
                profile: r.get(2)?,
                workspace: r.get(3)?,
                owner_id: r.get(4)?,
                agent_id: r.get(5)?,
                base_revision: r.get(6)?,
                version: r.get::<_, i64>(7)? as u64,
                group: r.get(8)?,
            })
        },
    )
    .optional()?
    .ok_or_else(|| Error::new(Code::NotFound, format!("no change {change_id}")).with("change_id", change_id))
}

/// Most Changes `change_list` answers.
pub const MAX_LISTED_CHANGES: usize = 256;

/// The Changes of `owner_id` in `scope` (every repository and profile
/// without one) that have no completed landing, oldest first, at most
/// [`MAX_LISTED_CHANGES`].
pub fn open_changes_of(
    conn: &Connection,
    owner_id: &str,
    scope: Option<&Scope>,
) -> Result<Vec<Change>> {
    let ids: Vec<String> = conn
        .prepare_cached(
            "SELECT c.change_id FROM changes c WHERE (?1 IS NULL OR c.owner_id = ?1) \
             AND (?2 IS NULL OR (c.repo_id = ?2 AND c.profile_id = ?3)) \
             AND NOT EXISTS (SELECT 1 FROM landings l WHERE l.change_id = c.change_id AND l.state = 'landed') \
             ORDER BY c.created_at, c.change_id LIMIT ?4",
        )?
        .query_map(
            params![
                owner_id,
                scope.map(|s| s.repository.as_str()),
                scope.map(|s| s.profile.as_str()),
                MAX_LISTED_CHANGES as i64
            ],
            |r| r.get(0),
        )?
        .collect::<std::result::Result<_, _>>()?;
    ids.iter().map(|id| change(conn, id)).collect()
}

/// The ids of `kind` (`change` or `task`) that `owner_id` may view (every
/// owner's for `None`, the operator; in `scope`, when one is given) and
/// that start with `prefix`, in id order, at most `max`: what an id prefix
/// on the command line may name.
pub fn ids_with_prefix(
    conn: &Connection,
    kind: IdKind,
    owner_id: Option<&str>,
    scope: Option<&Scope>,
    prefix: &str,
    max: usize,
) -> Result<Vec<String>> {
    let sql = match kind {
        IdKind::Change => {
            "SELECT c.change_id FROM changes c WHERE (?1 IS NULL OR c.owner_id = ?1) \
             AND (?2 IS NULL OR (c.repo_id = ?2 AND c.profile_id = ?3)) \
             AND substr(c.change_id, 1, ?4) = ?5 ORDER BY c.change_id LIMIT ?6"
        }
        IdKind::Task => {
            "SELECT t.task_id FROM subject_tasks t JOIN changes c ON c.change_id = t.change_id \
             WHERE (?1 IS NULL OR c.owner_id = ?1) \
             AND (?2 IS NULL OR (c.repo_id = ?2 AND c.profile_id = ?3)) \
             AND substr(t.task_id, 1, ?4) = ?5 ORDER BY t.task_id LIMIT ?6"
        }
        IdKind::Attempt => return Err(Error::internal("attempt ids live in the journal")),
    };
    let ids = conn
        .prepare_cached(sql)?
        .query_map(
            params![
                owner_id,
                scope.map(|s| s.repository.as_str()),
                scope.map(|s| s.profile.as_str()),
                prefix.chars().count() as i64,
                prefix,
                max as i64
            ],
            |r| r.get(0),
        )?
        .collect::<std::result::Result<_, _>>()?;
    Ok(ids)
}

/// Whether `owner_id` may view task `task_id` (in `scope`, when given).
pub fn task_visible(
    conn: &Connection,
    task_id: &str,
    owner_id: &str,
    scope: Option<&Scope>,
) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM subject_tasks t JOIN changes c ON c.change_id = t.change_id \
             WHERE t.task_id = ?1 AND c.owner_id = ?2 \
             AND (?3 IS NULL OR (c.repo_id = ?3 AND c.profile_id = ?4))",
        )?
        .query_row(
            params![
                task_id,
                owner_id,
                scope.map(|s| s.repository.as_str()),
                scope.map(|s| s.profile.as_str())
            ],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The kinds of id the command line accepts a prefix of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A Change id (`ch_…`).
    Change,
    /// A task id (`task_…`).
    Task,
    /// An attempt id (`att_…`).
    Attempt,
}

impl IdKind {
    /// The kind's name in messages and details.
    pub fn as_str(self) -> &'static str {
        match self {
            IdKind::Change => "change",
            IdKind::Task => "task",
            IdKind::Attempt => "attempt",
        }
    }

    /// What every id of the kind starts with.
    pub fn id_prefix(self) -> &'static str {
        match self {
            IdKind::Change => "ch_",
            IdKind::Task => "task_",
            IdKind::Attempt => "att_",
        }
    }

    /// Whether `id` has the whole form of an id of this kind (its prefix
    /// and 32 lowercase hex digits): such an id is looked up as it is.
    pub fn is_full(self, id: &str) -> bool {
        id.strip_prefix(self.id_prefix()).is_some_and(|h| {
            h.len() == 32
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    }
}

/// The Change whose workspace is `ws` (canonical path).
pub fn change_for_workspace(conn: &Connection, ws: &Path) -> Result<Change> {
    let ws = canonical_dir(ws)?;
    let id: Option<String> = conn
        .prepare_cached("SELECT change_id FROM changes WHERE workspace = ?1")?
        .query_row(params![ws], |r| r.get(0))
        .optional()?;
    let id = id.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            format!("no change is open on workspace {ws}"),
        )
    })?;
    change(conn, &id)
}

fn canonical_dir(p: &Path) -> Result<String> {
    let c = std::fs::canonicalize(p).map_err(|e| Error::io("resolve", p, e))?;
    if !c.is_dir() {
        return Err(Error::new(
            Code::InvalidInput,
            format!("{} is not a directory", c.display()),
        ));
    }
    c.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Error::new(Code::InvalidInput, "workspace path is not UTF-8"))
}

/// `change open` output.
#[derive(Debug, Serialize)]
pub struct ChangeOpenOutput {
    /// The Change.
    #[serde(flatten)]
    pub change: Change,
}

/// Opens a Change on a workspace for the authenticated actor.
pub fn change_open(
    token: &str,
    repo_id: &str,
    profile: &str,
    workspace: &Path,
    title: Option<&str>,
    body: Option<&str>,
    group: Option<&str>,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<ChangeOpenOutput>> {
    let ws = canonical_dir(workspace)?;
    let group = group.map(check_group).transpose()?;
    let title = title.map(clean_title).transpose()?;
    let body = body.map(clean_body).transpose()?;
    Ok(move |tx: &Connection, dir: &DataDir, now: &str| {
        let who = super::auth::authenticate(tx, token)?;
        let repo = repository(tx, repo_id)?;
        if installed_requirement(tx, repo_id, profile)?.is_none() {
            return Err(Error::new(
                Code::NotFound,
                format!("no requirement installed for {repo_id} profile {profile}"),
            ));
        }
        if Path::new(&ws).starts_with(dir.root()) || dir.root().starts_with(&ws) {
            return Err(Error::new(
                Code::InvalidInput,
                "the workspace and the data directory must not contain each other",
            ));
        }
        let open: Option<String> = tx
            .prepare_cached("SELECT change_id FROM changes WHERE workspace = ?1")?
            .query_row(params![ws], |r| r.get(0))
            .optional()?;
        if let Some(id) = open {
            return Err(
                Error::new(Code::Conflict, "a change is already open on this workspace")
                    .with("change_id", id),
            );
        }
        let id = crate::wire::random_id("ch")?;
        tx.prepare_cached("INSERT INTO changes(change_id, repo_id, profile_id, workspace, owner_id, agent_id, base_revision, current_version, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8)")?.execute(params![id, repo_id, profile, ws, who.actor.owner_id, who.actor.agent_id, repo.head_revision, now],
        )?;
        set_message(tx, &id, title.as_deref(), body.as_deref())?;
        set_group(tx, &id, group.as_deref())?;
        Ok(ChangeOpenOutput {
            change: change(tx, &id)?,
        })
    })
}

/// Which Change a command names.
#[derive(Debug, Clone)]
pub enum ChangeSel {
    /// By id.
    Id(String),
    /// By workspace path.
    Workspace(std::path::PathBuf),
}

/// Resolves a selector.
pub fn select(conn: &Connection, sel: &ChangeSel) -> Result<Change> {
    match sel {
        ChangeSel::Id(id) => change(conn, id),
        ChangeSel::Workspace(p) => change_for_workspace(conn, p),
    }
}

/// The workspace profile a request arrives through (the HTTP endpoint,
/// MCP): what it names (a Change, a task, an attempt's task) must belong
/// to this repository and profile of the authority. The CLI has none (its
/// data directory is its scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The repository id inside the authority.
    pub repository: String,
    /// The profile id.
    pub profile: String,
}

impl Scope {
    /// `Ok` when there is no scope or `repository`/`profile` are its own;
    /// else `not_found` (a request never learns what another profile
    /// holds).
    pub fn check(scope: Option<&Scope>, repository: &str, profile: &str) -> Result<()> {
        match scope {
            Some(s) if s.repository != repository || s.profile != profile => Err(Error::new(
                Code::NotFound,
                "the change or task is not part of this workspace profile",
            )),
            _ => Ok(()),
        }
    }
}

/// [`select`], then the [`Scope`] check: the one lookup of a Change a
/// request makes.
pub fn select_in(conn: &Connection, sel: &ChangeSel, scope: Option<&Scope>) -> Result<Change> {
    if let ChangeSel::Id(id) = sel {
        check_id("change_id", id)?;
    }
    let ch = select(conn, sel)?;
    Scope::check(scope, &ch.repository, &ch.profile)?;
    Ok(ch)
}

/// What the workspace column of a Change opened through the workspace
/// endpoint starts with: the authority never sees the client's path, so
/// the column names the Change (`endpoint:<change_id>`), never a directory.
pub const ENDPOINT_WORKSPACE_PREFIX: &str = "endpoint:";

impl Change {
    /// Whether this Change was opened through the workspace endpoint (its
    /// revisions arrive as remote checkpoints, never from a local scan).
    pub fn via_endpoint(&self) -> bool {
        self.workspace.starts_with(ENDPOINT_WORKSPACE_PREFIX)
    }
}

/// Refuses a caller of another owner.
pub(crate) fn check_owner(ch: &Change, who: &super::auth::Authenticated) -> Result<()> {
    if ch.owner_id != who.actor.owner_id {
        return Err(Error::new(
            Code::Forbidden,
            "the change belongs to another owner",
        ));
    }
    Ok(())
}

/// One stored subject: a Change version's context and tasks.
#[derive(Debug, Clone)]
pub struct StoredSubject {
    /// The Change (as now).
    pub change: Change,
    /// The version this subject is.
    pub version: u64,
    /// Context.
    pub context: std::sync::Arc<ChangeContext>,
    /// Context digest.
    pub context_digest: Sha256Hex,
    /// Tasks (shared with the parse cache: a subject is immutable, and
    /// every heartbeat and qualification loads its Change's).
    pub tasks: std::sync::Arc<[WorkflowTask]>,
    /// The digests of `tasks`, in their order, computed the first time
    /// they are asked for and then shared like the tasks.
    task_digests: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<[Sha256Hex]>>>,
}

impl StoredSubject {
    /// `tasks[i].digest()` for every task, in order: computed once per
    /// parsed subject (the parse cache keeps them with the tasks), since
    /// every qualification shows every task's digest.
    pub fn task_digests(&self) -> Result<std::sync::Arc<[Sha256Hex]>> {
        if let Some(d) = self.task_digests.get() {
            return Ok(d.clone());
        }
        let d: std::sync::Arc<[Sha256Hex]> = self
            .tasks
            .iter()
            .map(WorkflowTask::digest)
            .collect::<Result<Vec<_>>>()?
            .into();
        Ok(self.task_digests.get_or_init(|| d).clone())
    }

    /// The digest of `t` when `t` is one of `tasks` (equal in every
    /// field, so it serializes to the same bytes) and [`Self::task_digests`]
    /// has computed them already; `None` otherwise (nothing is computed).
    pub fn kept_task_digest(&self, t: &WorkflowTask) -> Option<Sha256Hex> {
        let digests = self.task_digests.get()?;
        let i = self.tasks.iter().position(|x| x == t)?;
        digests.get(i).cloned()
    }
}

/// Loads one version's subject, checking the context bytes' digest.
pub fn subject(conn: &Connection, change_id: &str, version: u64) -> Result<StoredSubject> {
    subject_of(conn, change(conn, change_id)?, version)
}

/// [`subject`] of a Change row the caller has just read from `conn`
/// (not read again).
fn subject_of(conn: &Connection, ch: Change, version: u64) -> Result<StoredSubject> {
    let change_id = ch.change_id.as_str();
    let (digest, bytes, tasks): (String, Vec<u8>, Vec<u8>) = conn
        .prepare_cached("SELECT context_digest, context_bytes, tasks_json FROM change_versions WHERE change_id = ?1 AND version = ?2")?.query_row(params![change_id, version as i64],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?
        .ok_or_else(|| {
            Error::new(Code::NotFound, format!("change {change_id} has no checkpoint {version}"))
                .with("next", crate::contract::Next::checkpoint())
        })?;
    let parsed = parsed_subject(&digest, bytes, tasks)?;
    if parsed.digest.as_str() != digest {
        return Err(Error::new(
            Code::IntegrityError,
            "stored context bytes do not match their digest",
        ));
    }
    Ok(StoredSubject {
        change: ch,
        version,
        context: parsed.context.clone(),
        context_digest: parsed.digest.clone(),
        tasks: parsed.tasks.clone(),
        task_digests: parsed.task_digests.clone(),
    })
}

/// A subject's stored bytes, their context digest and what they parse to.
struct Parsed {
    context_bytes: Vec<u8>,
    tasks_bytes: Vec<u8>,
    digest: Sha256Hex,
    context: std::sync::Arc<ChangeContext>,
    tasks: std::sync::Arc<[WorkflowTask]>,
    task_digests: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<[Sha256Hex]>>>,
}

/// Parsed subjects kept at most (one per Change a `serve` is busy with:
/// every heartbeat's task lookup and every qualification parses its
/// Change's subject). Process-wide: a per-thread memo of a few dozen
/// missed most of the time once more agents than that were looping, each
/// on its own Change, across 16 handler threads.
const PARSED_KEPT: usize = 1024;

static PARSED: std::sync::Mutex<std::collections::VecDeque<std::sync::Arc<Parsed>>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// The digest and parse of a subject's stored bytes, remembered keyed by
/// the exact bytes: a hit is only ever the same bytes byte for byte
/// (compared in full; the row's digest `hint` only narrows the search), so
/// it is exactly what hashing and parsing them again would give; the
/// caller still compares the digest with the row's.
fn parsed_subject(
    hint: &str,
    context_bytes: Vec<u8>,
    tasks_bytes: Vec<u8>,
) -> Result<std::sync::Arc<Parsed>> {
    let hit = PARSED.lock().ok().and_then(|c| {
        c.iter()
            .find(|p| {
                p.digest.as_str() == hint
                    && p.context_bytes == context_bytes
                    && p.tasks_bytes == tasks_bytes
            })
            .cloned()
    });
    if let Some(p) = hit {
        return Ok(p);
    }
    let digest = domain_digest(DOMAIN_CONTEXT, &context_bytes);
    let context: ChangeContext = serde_json::from_slice(&context_bytes)?;
    let tasks: Vec<WorkflowTask> = serde_json::from_slice(&tasks_bytes)?;
    let p = std::sync::Arc::new(Parsed {
        context_bytes,
        tasks_bytes,
        digest,
        context: std::sync::Arc::new(context),
        tasks: tasks.into(),
        task_digests: Default::default(),
    });
    if let Ok(mut c) = PARSED.lock() {
        if c.len() >= PARSED_KEPT {
            c.pop_front();
        }
        c.push_back(p.clone());
    }
    Ok(p)
}

/// The current subject of a Change (`not_found` with next checkpoint when
/// there is no checkpoint yet).
pub fn current_subject(conn: &Connection, ch: &Change) -> Result<StoredSubject> {
    // `ch` was read from `conn` by the caller (every caller reads it in the
    // same transaction): the subject carries that row rather than reading
    // it a second time.
    subject_of(conn, ch.clone(), ch.version)
}

/// Why a subject is not current, or `None` when it is: repository exists,
/// the Change's current version is this one, exact context bytes, policy
/// epoch, target head and installed requirement unchanged.
pub fn staleness(conn: &Connection, t: &WorkflowTask) -> Result<Option<&'static str>> {
    staleness_in(conn, t, None)
}

/// [`staleness`], where the Change and the subject `t` names are not
/// loaded again when they are `known`'s (loaded from `conn` in the same
/// transaction).
pub fn staleness_knowing(
    conn: &Connection,
    t: &WorkflowTask,
    known: Option<&StoredSubject>,
) -> Result<Option<&'static str>> {
    staleness_in(conn, t, known)
}

/// [`staleness`] of every task of `s` (a subject loaded from `conn` in the
/// same read or write transaction), the first reason found: the stored
/// subject each task names is `s` itself, so it is not loaded again per
/// task.
pub fn subject_staleness(conn: &Connection, s: &StoredSubject) -> Result<Option<&'static str>> {
    // What staleness reads from the authority (repository, policy epoch,
    // installed requirement, the Change) depends only on the facts a
    // subject's tasks share; when they do share them, as every checkpoint
    // writes them, those rows are read once, for the first task, and each
    // task only has to be its subject's own. Any other subject takes the
    // task-by-task path.
    let Some(first) = s.tasks.first() else {
        return Ok(None);
    };
    if !s
        .tasks
        .iter()
        .all(|t| same_facts(&t.subject, &first.subject))
    {
        for t in s.tasks.iter() {
            if let Some(r) = staleness_in(conn, t, Some(s))? {
                return Ok(Some(r));
            }
        }
        return Ok(None);
    }
    if let Some(r) = staleness_in(conn, first, Some(s))? {
        return Ok(Some(r));
    }
    // `staleness_in`'s per-task check, with `stored` being `s`: the first
    // task of `s` with each task's id is that task.
    for t in s.tasks.iter() {
        match s.tasks.iter().find(|x| x.task_id == t.task_id) {
            Some(x) if std::ptr::eq(x, t) || x == t => {}
            _ => return Ok(Some("task_changed")),
        }
    }
    Ok(None)
}

/// Whether two tasks' subjects agree on every fact [`staleness_in`] checks
/// against the authority.
fn same_facts(a: &WorkflowTaskSubject, b: &WorkflowTaskSubject) -> bool {
    a.repository == b.repository
        && a.profile == b.profile
        && a.target == b.target
        && a.target_head == b.target_head
        && a.change_id == b.change_id
        && a.change_version == b.change_version
        && a.context_digest == b.context_digest
        && a.policy_epoch == b.policy_epoch
        && a.requirement_digest == b.requirement_digest
}

/// What [`staleness_in`] compares with the authority's own rows for a
/// subject, read in one statement and compared where they lie in the row
/// (no copy of them): whether the repository's target and head are the
/// subject's, the policy epoch as stored, and whether the profile's
/// installed requirement is the subject's. `None` when the repository is
/// not there.
struct StoredFacts {
    target_same: bool,
    policy_epoch: Option<i64>,
    requirement_same: bool,
}

fn stored_facts(conn: &Connection, s: &WorkflowTaskSubject) -> Result<Option<StoredFacts>> {
    // A head or target that is not text (nothing writes one) compares as
    // moved.
    Ok(conn
        .prepare_cached(
            "SELECT r.target, r.head_revision, \
             (SELECT epoch FROM policy WHERE singleton = 1), \
             (SELECT i.requirement_digest FROM installed_requirements i \
              JOIN requirements q USING (requirement_digest) \
              WHERE i.repo_id = r.repo_id AND i.profile_id = ?2) \
             FROM repositories r WHERE r.repo_id = ?1",
        )?
        .query_row(params![s.repository, s.profile], |r| {
            let text = |i: usize| r.get_ref(i).map(|v| v.as_str().ok());
            let target_same = text(0)? == Some(s.target.as_str())
                && s.target_head.as_ref().map(Sha256Hex::as_str) == text(1)?;
            Ok(StoredFacts {
                target_same,
                policy_epoch: r.get(2)?,
                requirement_same: text(3)? == Some(s.requirement_digest.as_str()),
            })
        })
        .optional()?)
}

fn staleness_in(
    conn: &Connection,
    t: &WorkflowTask,
    known: Option<&StoredSubject>,
) -> Result<Option<&'static str>> {
    let s = &t.subject;
    // The repository, the policy epoch and the installed requirement in
    // one read; each is judged below in the order the reasons rank.
    let Some(facts) = stored_facts(conn, s)? else {
        return Ok(Some("repository_missing"));
    };
    // The Change row is read once: from `known` when it is that Change,
    // else from `conn` (and then handed to the subject's load).
    let loaded;
    let stored = match known {
        Some(k) if k.change.change_id == s.change_id => {
            if k.change.version != s.change_version {
                return Ok(Some("change_superseded"));
            }
            if k.version == s.change_version {
                k
            } else {
                loaded = subject_of(conn, k.change.clone(), s.change_version)?;
                &loaded
            }
        }
        _ => {
            let Ok(ch) = change(conn, &s.change_id) else {
                return Ok(Some("change_missing"));
            };
            if ch.version != s.change_version {
                return Ok(Some("change_superseded"));
            }
            loaded = subject_of(conn, ch, s.change_version)?;
            &loaded
        }
    };
    if stored.context_digest != s.context_digest {
        return Ok(Some("context_changed"));
    }
    match stored.tasks.iter().find(|x| x.task_id == t.task_id) {
        Some(x) if x == t => {}
        _ => return Ok(Some("task_changed")),
    }
    let epoch = facts
        .policy_epoch
        .ok_or_else(|| Error::new(Code::IntegrityError, "the policy epoch is missing"))?;
    if super::epoch_of(epoch)? != s.policy_epoch {
        return Ok(Some("policy_changed"));
    }
    if !facts.target_same {
        return Ok(Some("target_moved"));
    }
    if !facts.requirement_same {
        return Ok(Some("requirement_changed"));
    }
    Ok(None)
}

/// Finds a stored task by id, with its subject.
pub fn find_task(conn: &Connection, task_id: &str) -> Result<(WorkflowTask, StoredSubject)> {
    find_task_of(conn, task_id, None)
}

/// [`find_task`], where the subject the task index names is not loaded
/// again when it is `known` (the same Change and version, loaded from
/// `conn` in the same transaction).
fn find_task_of(
    conn: &Connection,
    task_id: &str,
    known: Option<&StoredSubject>,
) -> Result<(WorkflowTask, StoredSubject)> {
    let at = find_at_of(conn, task_id, known)?;
    Ok((at.task().clone(), at.subject))
}

/// A stored task as found: its subject and the task's place among the
/// subject's tasks (the task is not copied out of them).
#[derive(Debug)]
pub struct FoundAt {
    index: usize,
    subject: StoredSubject,
}

impl FoundAt {
    /// The task.
    pub fn task(&self) -> &WorkflowTask {
        // Only `find_at_of` makes one, with an index of the subject's
        // tasks, and neither changes after.
        &self.subject.tasks[self.index]
    }

    /// The subject the task belongs to.
    pub fn subject(&self) -> &StoredSubject {
        &self.subject
    }

    /// The task's place among its subject's tasks.
    pub fn index(&self) -> usize {
        self.index
    }
}

fn find_at_of(conn: &Connection, task_id: &str, known: Option<&StoredSubject>) -> Result<FoundAt> {
    check_id("task_id", task_id)?;
    let row: Option<(String, i64)> = conn
        .prepare_cached("SELECT change_id, version FROM subject_tasks WHERE task_id = ?1")?
        .query_row(params![task_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (cid, v) = row.ok_or_else(|| {
        Error::new(Code::NotFound, format!("no task {task_id}")).with("task_id", task_id)
    })?;
    let subject = match known {
        Some(k) if k.change.change_id == cid && i64::try_from(k.version).ok() == Some(v) => {
            k.clone()
        }
        _ => subject(conn, &cid, v as u64)?,
    };
    let index = subject
        .tasks
        .iter()
        .position(|t| t.task_id == task_id)
        .ok_or_else(|| {
            Error::new(
                Code::IntegrityError,
                "task index names a task its subject lacks",
            )
        })?;
    Ok(FoundAt { index, subject })
}

/// [`find_task`], then the [`Scope`] check: the one lookup of a task a
/// request makes.
pub fn find_task_in(
    conn: &Connection,
    task_id: &str,
    scope: Option<&Scope>,
) -> Result<(WorkflowTask, StoredSubject)> {
    find_task_knowing(conn, task_id, scope, None)
}

/// [`find_task_in`] knowing a subject loaded from `conn` in the same
/// transaction ([`super::Rechecks::knowing`]): a task of it is found
/// without loading it again.
pub fn find_task_knowing(
    conn: &Connection,
    task_id: &str,
    scope: Option<&Scope>,
    known: Option<&StoredSubject>,
) -> Result<(WorkflowTask, StoredSubject)> {
    let (t, s) = find_task_of(conn, task_id, known)?;
    Scope::check(scope, &t.subject.repository, &t.subject.profile)?;
    Ok((t, s))
}

/// [`find_task_knowing`], the task left in its subject.
pub fn find_task_at(
    conn: &Connection,
    task_id: &str,
    scope: Option<&Scope>,
    known: Option<&StoredSubject>,
) -> Result<FoundAt> {
    let at = find_at_of(conn, task_id, known)?;
    let t = &at.task().subject;
    Scope::check(scope, &t.repository, &t.profile)?;
    Ok(at)
}

/// Largest manifest read back from the CAS.
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// Loads a recorded revision's manifest from the CAS, checking that its
/// bytes are that revision.
pub fn load_manifest(
    conn: &Connection,
    dir: &DataDir,
    revision: &Sha256Hex,
) -> Result<snapshot::Manifest> {
    let (msha, msize): (String, i64) = conn
        .prepare_cached("SELECT manifest_sha256, manifest_size FROM revisions WHERE revision = ?1")?
        .query_row(params![revision.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .ok_or_else(|| {
            Error::new(
                Code::IntegrityError,
                format!("revision {revision} is not recorded"),
            )
        })?;
    let msize = u64::try_from(msize)
        .map_err(|_| Error::new(Code::IntegrityError, "negative manifest size"))?;
    let bytes = dir
        .blobs()?
        .get(&Sha256Hex::parse(&msha)?, Some(msize), MAX_MANIFEST_BYTES)?;
    if domain_digest(snapshot::DOMAIN_REVISION, &bytes) != *revision {
        return Err(Error::new(
            Code::IntegrityError,
            format!("the stored manifest is not revision {revision}"),
        ));
    }
    Ok(serde_json::from_slice(&bytes)?)
}

/// The protected changes recorded with a checkpoint (none for a
/// checkpoint made without protected patterns).
pub fn stored_protected(
    conn: &Connection,
    change_id: &str,
    version: u64,
) -> Result<crate::contract::protected::ProtectedChanges> {
    let raw: Option<Option<Vec<u8>>> = conn
        .prepare_cached(
            "SELECT protected_changes FROM change_versions WHERE change_id = ?1 AND version = ?2",
        )?
        .query_row(params![change_id, version as i64], |r| r.get(0))
        .optional()?;
    match raw.flatten() {
        None => Ok(crate::contract::protected::ProtectedChanges::default()),
        Some(b) => serde_json::from_slice(&b).map_err(|e| {
            Error::new(
                Code::IntegrityError,
                format!("stored protected changes are malformed: {e}"),
            )
        }),
    }
}

/// Longest title of a Change, in characters (after cleaning).
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest body of a Change, in bytes (after cleaning).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// A title as a commit subject takes it: every control character
/// (newlines and tabs included) becomes a space, runs of spaces collapse,
/// the ends are trimmed; over [`MAX_TITLE_CHARS`] is `invalid_input`.
pub fn clean_title(s: &str) -> Result<String> {
    let spaced: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let t = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > MAX_TITLE_CHARS {
        return Err(Error::new(
            Code::InvalidInput,
            format!("a title is at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(t)
}

/// A body as a commit message takes it: line ends normalised to `\n`,
/// tabs made spaces, every other control character dropped, trailing
/// spaces and leading/trailing blank lines removed; over
/// [`MAX_BODY_BYTES`] is `invalid_input`.
pub fn clean_body(s: &str) -> Result<String> {
    let norm = s.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<String> = norm
        .split('\n')
        .map(|l| {
            l.chars()
                .filter_map(|c| match c {
                    '\t' => Some(' '),
                    c if c.is_control() => None,
                    c => Some(c),
                })
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let body = match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].join("\n"),
        _ => String::new(),
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(Error::new(
            Code::InvalidInput,
            format!("a body is at most {MAX_BODY_BYTES} bytes"),
        ));
    }
    Ok(body)
}

/// `checkpoint --message`: its first line is the title, the rest (after
/// blank lines) the body, each cleaned and bounded.
pub fn split_message(m: &str) -> Result<(String, String)> {
    let (title, rest) = m.split_once('\n').unwrap_or((m, ""));
    let title = clean_title(title)?;
    if title.is_empty() {
        return Err(Error::new(
            Code::InvalidInput,
            "a message needs a title on its first line",
        ));
    }
    Ok((title, clean_body(rest)?))
}

/// The title and body a Change carries (`None`: never given).
pub fn change_message(
    conn: &Connection,
    change_id: &str,
) -> Result<(Option<String>, Option<String>)> {
    Ok(conn
        .prepare_cached("SELECT title, body FROM changes WHERE change_id = ?1")?
        .query_row(params![change_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((None, None)))
}

/// A group label as `change open --group` takes it: an id's characters
/// and bounds (`[A-Za-z0-9._:@/-]`, 1..=128), else `invalid_input`.
pub fn check_group(g: &str) -> Result<String> {
    crate::contract::check_id("group", g)?;
    Ok(g.to_owned())
}

/// Records a Change's group (a `None` leaves none).
pub(crate) fn set_group(tx: &Connection, change_id: &str, group: Option<&str>) -> Result<()> {
    if let Some(g) = group {
        tx.prepare_cached("UPDATE changes SET group_label = ?2 WHERE change_id = ?1")?
            .execute(params![change_id, g])?;
    }
    Ok(())
}

/// Records a Change's title and body (a `None` leaves that part).
pub(crate) fn set_message(
    tx: &Connection,
    change_id: &str,
    title: Option<&str>,
    body: Option<&str>,
) -> Result<()> {
    if let Some(t) = title {
        tx.prepare_cached("UPDATE changes SET title = ?2 WHERE change_id = ?1")?
            .execute(params![change_id, t])?;
    }
    if let Some(b) = body {
        tx.prepare_cached("UPDATE changes SET body = ?2 WHERE change_id = ?1")?
            .execute(params![change_id, b])?;
    }
    Ok(())
}

/// A Change's landing: the landed version, revision and commit (`None`
/// for a source that is not a git work tree).
#[derive(Debug, Clone)]
pub struct Landed {
    /// Landed version.
    pub version: u64,
    /// Landed revision.
    pub revision: String,
    /// The landed commit.
    pub git_commit: Option<String>,
}

/// The landing of a Change, when it has landed (a landed Change is
/// closed: no further checkpoint).
pub fn landed(conn: &Connection, change_id: &str) -> Result<Option<Landed>> {
    let row = conn
        .prepare_cached(
            "SELECT change_version, revision, git_commit FROM landings \
             WHERE change_id = ?1 AND state = 'landed' ORDER BY change_version DESC LIMIT 1",
        )?
        .query_row(params![change_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    Ok(row.map(|(v, revision, git_commit)| Landed {
        version: u64::try_from(v).unwrap_or(0),
        revision,
        git_commit,
    }))
}

/// Refuses a checkpoint of a landed Change: `change_closed`, with the way
/// on (`details.next = {"command": "change open"}`: an error detail, not
/// the spec's typed next).
pub(crate) fn check_open(conn: &Connection, ch: &Change) -> Result<()> {
    match landed(conn, &ch.change_id)? {
        None => Ok(()),
        Some(l) => Err(Error::new(
            Code::ChangeClosed,
            "this change has landed and is closed: open a new Change for further work",
        )
        .with("change_id", ch.change_id.clone())
        .with("landed_version", l.version)
        .with("landed_revision", l.revision)
        .with("git_commit", l.git_commit)
        .with("next", serde_json::json!({"command": "change open"}))),
    }
}

/// Whether `actor` may view a Change's tasks (same owner).
pub fn may_view(ch: &Change, actor: &Actor) -> bool {
    ch.owner_id == actor.owner_id
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, fixture};
    use super::*;

    /// The task-by-task answer [`subject_staleness`] must give.
    fn each_task(conn: &Connection, s: &StoredSubject) -> Option<&'static str> {
        s.tasks
            .iter()
            .find_map(|t| staleness_in(conn, t, Some(s)).expect("staleness"))
    }

    #[test]
    fn a_stat_cache_loads_whole_and_a_damaged_value_is_an_empty_cache() {
        let f = fixture();
        let row = |ino: u64, b: u8| snapshot::CacheRow {
            ino,
            size: 8,
            mtime_ns: 1_000 + i64::from(b),
            ctime_ns: 2_000,
            mode: snapshot::MODE_FILE,
            sha256: [b; 32],
        };
        // Rows spanning many overflow pages, read through the blob handle.
        let rows: Vec<(String, snapshot::CacheRow)> = (0..3_000u32)
            .map(|i| {
                (
                    format!("src/d{:03}/f{i:05}.txt", i / 100),
                    row(u64::from(i), i as u8),
                )
            })
            .collect();
        let packed = snapshot::encode_cache(rows.iter().map(|(p, r)| (p.as_str(), r)));
        assert!(packed.len() > 64 * 1024);
        let rev = Sha256Hex::digest(b"revision");
        let put = |root: &str, entries: &[u8]| {
            f.a.execute(
                "INSERT OR REPLACE INTO stat_caches(root, revision, scanned_at_ns, entries) \
                 VALUES (?1, ?2, 5, ?3)",
                params![root, rev.as_str(), entries],
            )
            .expect("insert");
        };
        put("/ws/a", &packed);
        put("/ws/b", b"not a cache");
        put("/ws/c", &packed[..packed.len() - 1]);
        put("/ws/d", b"");
        let a = load_stat_cache(&f.a, "/ws/a").expect("load");
        let got: Vec<(String, snapshot::CacheRow)> =
            a.rows().map(|(p, r)| (p.to_owned(), r)).collect();
        assert_eq!(got, rows);
        assert_eq!(
            a.state(),
            Some(&snapshot::CacheState {
                revision: rev.clone(),
                scanned_at_ns: 5
            })
        );
        for damaged in ["/ws/b", "/ws/c", "/ws/d", "/ws/none"] {
            let c = load_stat_cache(&f.a, damaged).expect("load");
            assert_eq!(c.rows().count(), 0, "{damaged}");
            assert_eq!(c.state(), None, "{damaged}");
        }
    }

    #[test]
    fn a_kept_task_digest_is_its_digest_and_only_for_a_task_of_the_subject() {
        let f = fixture();
        let (t, s) = find_task(&f.a, &f.command.task_id).expect("find");
        let digests = s.task_digests().expect("digests");
        for (i, x) in s.tasks.iter().enumerate() {
            assert_eq!(s.kept_task_digest(x), Some(digests[i].clone()));
            assert_eq!(digests[i], x.digest().expect("digest"));
        }
        assert_eq!(s.kept_task_digest(&t), Some(t.digest().expect("digest")));
        // A task that differs in any field is not one of them.
        let mut other = t.clone();
        other.instructions.push_str(" changed");
        assert_eq!(s.kept_task_digest(&other), None);
    }

    #[test]
    fn subject_staleness_reads_shared_facts_once_and_answers_as_task_by_task() {
        let f = fixture();
        let (_, s) = find_task(&f.a, &f.command.task_id).expect("find");
        assert!(
            s.tasks.len() >= 2,
            "the fixture's subject has several tasks"
        );
        assert_eq!(subject_staleness(&f.a, &s).expect("s"), each_task(&f.a, &s));
        // A later task whose facts differ takes the task-by-task path.
        let with = |f: &dyn Fn(&mut Vec<WorkflowTask>)| {
            let mut odd = s.clone();
            let mut tasks = odd.tasks.to_vec();
            f(&mut tasks);
            odd.tasks = tasks.into();
            odd
        };
        let odd = with(&|t| t[1].subject.policy_epoch += 1);
        assert_eq!(
            subject_staleness(&f.a, &odd).expect("s"),
            Some("policy_changed")
        );
        assert_eq!(
            subject_staleness(&f.a, &odd).expect("s"),
            each_task(&f.a, &odd)
        );
        let odd = with(&|t| t[1].subject.repository = "other/repo".into());
        assert_eq!(
            subject_staleness(&f.a, &odd).expect("s"),
            each_task(&f.a, &odd)
        );
        // Two tasks under one id with different contents: task_changed.
        let dup = with(&|t| {
            let mut twin = t[0].clone();
            twin.instructions = "other".into();
            t.push(twin);
        });
        assert_eq!(
            subject_staleness(&f.a, &dup).expect("s"),
            Some("task_changed")
        );
        assert_eq!(
            subject_staleness(&f.a, &dup).expect("s"),
            each_task(&f.a, &dup)
        );
        // A row every task depends on: the same reason either way.
        f.a.execute("UPDATE repositories SET head_revision = 'moved'", [])
            .expect("move");
        assert_eq!(
            subject_staleness(&f.a, &s).expect("s"),
            Some("target_moved")
        );
        assert_eq!(subject_staleness(&f.a, &s).expect("s"), each_task(&f.a, &s));
    }

    #[test]
    fn a_fresh_subject_is_current_and_each_kind_of_change_names_its_reason() {
        let f = fixture();
        let t = &f.command;
        assert_eq!(staleness(&f.a, t).expect("staleness"), None);
        let (_, s) = find_task(&f.a, &t.task_id).expect("find");
        assert_eq!(subject_staleness(&f.a, &s).expect("subject"), None);

        // What the task itself names, checked without touching a row.
        let mut other_repo = t.clone();
        other_repo.subject.repository = "other/repo".into();
        assert_eq!(
            staleness(&f.a, &other_repo).expect("staleness"),
            Some("repository_missing")
        );
        let mut other_change = t.clone();
        other_change.subject.change_id = "chg_other".into();
        assert_eq!(
            staleness(&f.a, &other_change).expect("staleness"),
            Some("change_missing")
        );
        let mut other_context = t.clone();
        other_context.subject.context_digest = Sha256Hex::digest(b"ctx");
        assert_eq!(
            staleness(&f.a, &other_context).expect("staleness"),
            Some("context_changed")
        );
        let mut other_task = t.clone();
        other_task.instructions = "something else".into();
        assert_eq!(
            staleness(&f.a, &other_task).expect("staleness"),
            Some("task_changed")
        );

        // One row changed at a time, each undone before the next.
        f.a.execute(
            "INSERT INTO requirements VALUES ('other', x'7b7d', 'other')",
            [],
        )
        .expect("another requirement");
        let cases: [(&str, &str, &str, &str); 3] = [
            (
                "UPDATE installed_requirements SET requirement_digest = 'other'",
                "UPDATE installed_requirements SET requirement_digest = ?1",
                "requirement_changed",
                "requirement",
            ),
            (
                "UPDATE repositories SET head_revision = 'moved'",
                "UPDATE repositories SET head_revision = ?1",
                "target_moved",
                "head",
            ),
            (
                "UPDATE changes SET current_version = 2",
                "UPDATE changes SET current_version = 1 WHERE ?1 IS NOT NULL",
                "change_superseded",
                "",
            ),
        ];
        for (change, undo, reason, tag) in cases {
            f.a.execute(change, []).expect(reason);
            assert_eq!(staleness(&f.a, t).expect("staleness"), Some(reason));
            f.a.execute(undo, params![Sha256Hex::digest(tag.as_bytes()).as_str()])
                .expect("undo");
            assert_eq!(staleness(&f.a, t).expect("staleness"), None, "{reason}");
        }

        // A policy act makes every live subject stale, and says how many.
        assert_eq!(super::super::live_subjects(&f.a).expect("live"), 1);
        let (epoch, stale) = super::super::bump_epoch(&f.a, "test", "x", "t").expect("bump");
        assert_eq!((epoch, stale), (1, 1));
        assert_eq!(
            staleness(&f.a, t).expect("staleness"),
            Some("policy_changed")
        );
        assert_eq!(super::super::live_subjects(&f.a).expect("live"), 0);
    }

    #[test]
    fn the_rechecks_staleness_after_a_lookup_answers_as_loading_everything_does() {
        use crate::workflow::journal::Authority;
        let f = fixture();
        let t = &f.command;
        // The tasks a staleness check may be asked about: the one looked
        // up, and tasks naming another repository, Change, context or
        // content.
        let mut variants = vec![t.clone(), f.review.clone()];
        for edit in [
            (|x: &mut WorkflowTask| x.subject.repository = "other/repo".into())
                as fn(&mut WorkflowTask),
            |x| x.subject.change_id = "chg_other".into(),
            |x| x.subject.context_digest = Sha256Hex::digest(b"ctx"),
            |x| x.instructions = "something else".into(),
            |x| x.subject.change_version = 2,
        ] {
            let mut v = t.clone();
            edit(&mut v);
            variants.push(v);
        }
        // Each state of the rows, set before the lookup (the rows a unit
        // of work reads do not change under it).
        let head: String =
            f.a.query_row("SELECT head_revision FROM repositories", [], |r| r.get(0))
                .expect("head");
        let states: [(&str, String); 3] = [
            ("SELECT 1", "SELECT 1".into()),
            (
                "UPDATE changes SET current_version = 2",
                "UPDATE changes SET current_version = 1".into(),
            ),
            (
                "UPDATE repositories SET head_revision = 'moved'",
                format!("UPDATE repositories SET head_revision = '{head}'"),
            ),
        ];
        let mut reasons = Vec::new();
        for (set, undo) in states {
            f.a.execute_batch(set).expect("state");
            let r = super::super::Rechecks::new(&f.a);
            Authority::find_task(&r, &t.task_id, &fixture::actor()).expect("find");
            // An answer, or the error's code (a version with no
            // checkpoint is an error either way).
            let code = |x: Result<Option<&'static str>>| x.map_err(|e| e.code());
            for v in &variants {
                let want = code(staleness(&f.a, v));
                assert_eq!(code(Authority::staleness(&r, v)), want, "{set}: {v:?}");
                reasons.extend(want.ok());
            }
            let (_, s) = find_task(&f.a, &t.task_id).expect("find");
            let knowing = super::super::Rechecks::knowing(&f.a, &s);
            for v in &variants {
                assert_eq!(
                    code(Authority::staleness(&knowing, v)),
                    code(staleness(&f.a, v)),
                    "{set}: {v:?}"
                );
            }
            f.a.execute_batch(&undo).expect("undo");
            assert_eq!(staleness(&f.a, t).expect("undone"), None, "{set}");
        }
        // The cases reach every branch the kept subject takes.
        for reason in [
            None,
            Some("repository_missing"),
            Some("change_missing"),
            Some("context_changed"),
            Some("task_changed"),
            Some("change_superseded"),
            Some("target_moved"),
        ] {
            assert!(reasons.contains(&reason), "{reason:?} not reached");
        }
    }

    #[test]
    fn the_facts_read_in_one_statement_are_those_read_one_by_one_and_rank_as_before() {
        // Subjects that differ from the stored one in each fact (compared
        // with the rows at the level of the facts: `staleness` itself would
        // stop at `task_changed` for any of them).
        let f = fixture();
        let t = &f.command;
        type Edit = (&'static str, fn(&mut WorkflowTaskSubject));
        let edits: [Edit; 9] = [
            ("as stored", |_| {}),
            ("another repository", |s| s.repository = "other/repo".into()),
            ("another profile", |s| s.profile = "other".into()),
            ("another target", |s| s.target = "refs/heads/other".into()),
            ("no head", |s| s.target_head = None),
            ("another head", |s| {
                s.target_head = Some(Sha256Hex::digest(b"another head"))
            }),
            ("another requirement", |s| {
                s.requirement_digest = Sha256Hex::digest(b"req")
            }),
            ("another epoch", |s| s.policy_epoch += 1),
            ("another epoch and target", |s| {
                s.policy_epoch += 1;
                s.target = "refs/heads/other".into();
            }),
        ];
        // Each state of the rows: the epoch bumped, the head moved, the
        // target renamed, another requirement installed, and two at once.
        let req: String =
            f.a.query_row(
                "SELECT requirement_digest FROM installed_requirements",
                [],
                |r| r.get(0),
            )
            .expect("installed");
        let policy = "UPDATE policy SET epoch = epoch + 1;";
        let head = "UPDATE repositories SET head_revision = 'moved' || head_revision;";
        let target = "UPDATE repositories SET target = 'moved' || target;";
        let other = "INSERT INTO requirements VALUES ('other', x'00', 'other'); \
                     UPDATE installed_requirements SET requirement_digest = 'other';";
        let undo = format!(
            "UPDATE policy SET epoch = 0; \
             UPDATE repositories SET head_revision = substr(head_revision, 6) \
               WHERE head_revision LIKE 'moved%'; \
             UPDATE repositories SET target = substr(target, 6) WHERE target LIKE 'moved%'; \
             UPDATE installed_requirements SET requirement_digest = '{req}'; \
             DELETE FROM requirements WHERE requirement_digest = 'other';"
        );
        let states = [
            ("SELECT 1;".to_owned(), None),
            (policy.to_owned(), Some("policy_changed")),
            (head.to_owned(), Some("target_moved")),
            (target.to_owned(), Some("target_moved")),
            (other.to_owned(), Some("requirement_changed")),
            // The epoch ranks before the target, the target before the
            // requirement.
            (format!("{policy} {head}"), Some("policy_changed")),
            (format!("{target} {other}"), Some("target_moved")),
        ];
        assert_eq!(staleness(&f.a, t).expect("fresh"), None);
        for (set, want) in &states {
            f.a.execute_batch(set).expect("state");
            for (what, edit) in &edits {
                let mut v = t.clone();
                edit(&mut v.subject);
                let s = &v.subject;
                let got = stored_facts(&f.a, s).expect("facts");
                // One by one, as `staleness` read them before.
                match repository(&f.a, &s.repository) {
                    Err(_) => assert!(got.is_none(), "{set}: {what}"),
                    Ok(repo) => {
                        let got = got.expect("the repository is there");
                        assert_eq!(
                            got.target_same,
                            repo.target == s.target
                                && s.target_head.as_ref().map(Sha256Hex::as_str)
                                    == Some(repo.head_revision.as_str()),
                            "{set}: {what}"
                        );
                        let epoch = super::super::policy_epoch(&f.a).expect("epoch");
                        assert_eq!(got.policy_epoch, i64::try_from(epoch).ok());
                        let req = super::super::installed_requirement_digest(
                            &f.a,
                            &s.repository,
                            &s.profile,
                        )
                        .expect("requirement");
                        assert_eq!(
                            got.requirement_same,
                            req.as_deref() == Some(s.requirement_digest.as_str()),
                            "{set}: {what}"
                        );
                    }
                }
            }
            assert_eq!(staleness(&f.a, t).expect("staleness"), *want, "{set}");
            f.a.execute_batch(&undo).expect("undo");
            assert_eq!(staleness(&f.a, t).expect("undone"), None, "{set}");
        }
    }

    #[test]
    fn a_task_found_in_place_is_the_task_found_by_copy() {
        use crate::workflow::journal::{Authority, FoundTask};
        let f = fixture();
        let r = super::super::Rechecks::new(&f.a);
        for t in [&f.command, &f.review] {
            let (copied, s) = find_task(&f.a, &t.task_id).expect("find");
            let at = find_task_at(&f.a, &t.task_id, None, None).expect("at");
            assert_eq!(at.task(), &copied);
            assert_eq!(at.subject().tasks, s.tasks);
            assert_eq!(&s.tasks[at.index()], &copied);
            let found = Authority::find_task(&r, &t.task_id, &fixture::actor()).expect("found");
            assert_eq!(found.task(), &copied);
            assert_eq!(found.tasks(), &s.tasks);
            assert!(found.visible);
        }
        // A place outside the subject's tasks is refused, not indexed.
        let (_, s) = find_task(&f.a, &f.command.task_id).expect("find");
        let e = FoundTask::new(s.tasks.clone(), s.tasks.len(), true).expect_err("outside");
        assert_eq!(e.code(), Code::IntegrityError);
    }

    #[test]
    fn a_scope_admits_its_own_repository_and_profile_only() {
        let own = Scope {
            repository: fixture::REPO.into(),
            profile: fixture::PROFILE.into(),
        };
        Scope::check(None, "any/repo", "any").expect("no scope");
        Scope::check(Some(&own), fixture::REPO, fixture::PROFILE).expect("its own");
        for (repo, profile) in [("other/repo", fixture::PROFILE), (fixture::REPO, "other")] {
            let e = Scope::check(Some(&own), repo, profile).expect_err("another");
            assert_eq!(e.code(), Code::NotFound);
        }
        let f = fixture();
        let id = &f.command.task_id;
        let (t, _) = find_task_in(&f.a, id, Some(&own)).expect("in scope");
        assert_eq!(&t, &f.command);
        let elsewhere = Scope {
            repository: fixture::REPO.into(),
            profile: "other".into(),
        };
        assert_eq!(
            find_task_in(&f.a, id, Some(&elsewhere))
                .expect_err("out of scope")
                .code(),
            Code::NotFound
        );
        assert_eq!(
            find_task(&f.a, "task_none").expect_err("unknown").code(),
            Code::NotFound
        );
    }

    #[test]
    fn the_owner_views_a_change_whichever_of_its_agents_asks() {
        let f = fixture();
        let ch = change(&f.a, fixture::CHANGE).expect("change");
        let as_actor = |owner: &str, agent: &str| Actor {
            owner_id: owner.into(),
            agent_id: agent.into(),
        };
        assert!(may_view(&ch, &as_actor(fixture::OWNER, fixture::AGENT)));
        assert!(may_view(&ch, &as_actor(fixture::OWNER, "a2")));
        assert!(!may_view(&ch, &as_actor("mallory", fixture::AGENT)));
    }

    #[test]
    fn an_unchanged_checkpoint_writes_nothing_and_a_prestore_checks_only_what_it_stored() {
        let f = fixture();
        let t = tempfile::tempdir().expect("tmp");
        let (dir, _lock) =
            crate::store::DataDir::create(&t.path().join("d"), std::time::Duration::from_secs(1))
                .expect("data dir");
        let ws = t.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        std::fs::write(ws.join("a.txt"), "a").expect("write");
        std::fs::write(ws.join("b.txt"), "b").expect("write");
        // Past the racy-clean margin, so the first scan's rows are trusted.
        std::thread::sleep(std::time::Duration::from_millis(250));
        let max = snapshot::DEFAULT_MAX_REVISION_BYTES;
        let first = store_snapshot(&f.a, &dir, &ws, "t", max).expect("first");
        assert_eq!(first.hashed, 2);
        let key = ws.to_str().expect("utf-8");
        let stamp = cache_stamp(&f.a, key).expect("stamp");
        // Every file matches a trusted row: the revision is the cache's,
        // and not a row is written, the root's scan time included.
        let writes = f.a.total_changes();
        let again = store_snapshot(&f.a, &dir, &ws, "t", max).expect("again");
        assert_eq!(
            (again.revision.clone(), again.hashed),
            (first.revision.clone(), 0)
        );
        assert_eq!(f.a.total_changes(), writes);
        assert_eq!(cache_stamp(&f.a, key).expect("stamp"), stamp);
        // No manifest built: the stored one is the revision's, which a new
        // version of the same revision reads back.
        assert_eq!((again.manifest.as_ref(), again.files), (None, 2));
        assert_eq!(
            Some(load_manifest(&f.a, &dir, &again.revision).expect("stored manifest")),
            first.manifest
        );
        // A new file: stored before the lock, and checked under it. Its
        // object gone meanwhile, the prestored scan does not hold and the
        // scan under the lock stores it again.
        std::fs::write(ws.join("c.txt"), "c").expect("write");
        let pre = prestore_snapshot(&f.a, &dir, &ws, max).expect("prestore");
        assert!(prestored_holds(&f.a, &dir, key, &pre).expect("holds"));
        let c = Sha256Hex::digest(b"c");
        let blobs = dir.blobs().expect("blobs");
        std::fs::remove_file(dir.cas().object_path(&c)).expect("remove the stored object");
        assert!(!prestored_holds(&f.a, &dir, key, &pre).expect("holds"));
        let third = store_snapshot_from(&f.a, &dir, &ws, "t", max, Some(pre)).expect("third");
        assert!(blobs.exists(&c, Some(1)).expect("exists"));
        assert_eq!(third.files, 3);
    }
}
