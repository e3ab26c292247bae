//! `init` and `info`.

use crate::clock::{Clock, rfc3339_millis};
use crate::error::Result;
use crate::store::{CasStats, DataDir, DbSpec, OptionalExtension, Session, params};
use crate::workflow::authority::schema::AuthorityWork;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The authority database's spec (its file name under the data
/// directory), for the faces that check a data directory's files.
pub use crate::workflow::authority::schema::SPEC as AUTHORITY_SPEC;

/// The workflow's databases of a data directory, in lock order after the
/// lock itself.
static WORKFLOW_DATABASES: [&DbSpec; 2] = [
    &crate::workflow::authority::schema::SPEC,
    &crate::workflow::journal::SPEC,
];

/// Every database of a data directory: the workflow's, in lock order after
/// the lock itself, then `extra`, the data half's, which the face passes
/// in (the workflow half never names the data half).
pub fn databases<'e>(extra: &'e [&'static DbSpec]) -> impl Iterator<Item = &'static DbSpec> + 'e {
    WORKFLOW_DATABASES.iter().chain(extra).copied()
}

/// What `init` reports.
#[derive(Debug, Serialize)]
pub struct InitOutput {
    /// Absolute path of the data directory.
    pub data_dir: String,
    /// Stable identity of this data directory (random, set once).
    pub data_dir_id: String,
    /// Whether this call created the directory's identity (false: it existed).
    pub created: bool,
    /// Schema versions after init.
    pub schema_versions: BTreeMap<&'static str, u32>,
    /// Key id of the authority's attestation signing key (created by the
    /// first `init`, or by a later one on a directory that has none).
    pub authority_key_id: String,
}

/// Creates (or re-checks and migrates) a data directory. Idempotent.
/// `extra`: the data half's databases (see [`databases`]), migrated when
/// they exist, like the journal.
pub fn init(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    extra: &[&'static DbSpec],
) -> Result<InitOutput> {
    let (dir, lock) = DataDir::create(root, timeout)?;
    let spec = &crate::workflow::authority::schema::SPEC;
    let mut s = Session::with_lock(
        dir,
        lock,
        clock,
        crate::workflow::service::admin::WRITE_PLAN,
    )?;
    let now = rfc3339_millis(s.now());
    let (id, created) = s.apply(|w| {
        let conn = w.authority()?;
        let existing: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='data_dir_id'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(match existing {
            Some(id) => (id, false),
            None => {
                let id = crate::wire::random_id("dd")?;
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('data_dir_id', ?1), ('created_at', ?2)",
                    params![id, now],
                )?;
                (id, true)
            }
        })
    })?;
    s.commit()?;
    let (dir, lock) = (s.dir(), s.lock());
    // Migrate every other database that already exists; never create one.
    let mut versions = BTreeMap::new();
    for db in databases(extra) {
        if std::ptr::eq(db, spec) || dir.schema_version(db)?.is_some() {
            dir.open_write(db, &now, lock)?;
            versions.insert(db.name, db.latest());
        }
    }
    let (key, _) = crate::workflow::attest::key::ensure(dir, lock, &now)?;
    Ok(InitOutput {
        data_dir: dir.root().display().to_string(),
        data_dir_id: id,
        created,
        schema_versions: versions,
        authority_key_id: key.key_id().to_owned(),
    })
}

/// One database in `info`.
#[derive(Debug, Serialize)]
pub struct DbInfo {
    /// File name relative to the data directory.
    pub file: &'static str,
    /// Whether the file exists.
    pub present: bool,
    /// Applied schema version (absent when the file is absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// The version this binary writes.
    pub supported_schema_version: u32,
    /// `absent`, `current`, `outdated` (run `init` to migrate) or `too_new`
    /// (written by a newer agent-task; refused by every other command).
    pub status: &'static str,
    /// Row count of each table.
    pub rows: BTreeMap<String, u64>,
}

/// What `info` reports.
#[derive(Debug, Serialize)]
pub struct InfoOutput {
    /// Absolute path of the data directory.
    pub data_dir: String,
    /// Identity set by `init`.
    pub data_dir_id: Option<String>,
    /// When `init` first created the directory's identity.
    pub created_at: Option<String>,
    /// Version of this binary.
    pub agent_task_version: &'static str,
    /// Each database.
    pub databases: BTreeMap<&'static str, DbInfo>,
    /// Which blob store holds the directory's objects (`"local"`: its
    /// `cas/`).
    pub blob_store: &'static str,
    /// CAS object counts.
    pub cas: CasStats,
}

/// Reports on a data directory without changing anything: no lock, no file
/// created, databases opened read-only. `extra`: the data half's databases
/// (see [`databases`]), reported beside the workflow's.
pub fn info(root: &Path, extra: &[&'static DbSpec]) -> Result<InfoOutput> {
    let dir = DataDir::open(root)?;
    let blobs = dir.blobs()?;
    let mut out = InfoOutput {
        data_dir: dir.root().display().to_string(),
        data_dir_id: None,
        created_at: None,
        agent_task_version: env!("CARGO_PKG_VERSION"),
        databases: BTreeMap::new(),
        blob_store: blobs.kind(),
        cas: blobs.stats()?,
    };
    for db in databases(extra) {
        let version = dir.schema_version(db)?;
        let mut info = DbInfo {
            file: db.file,
            present: version.is_some(),
            schema_version: version,
            supported_schema_version: db.latest(),
            status: match version {
                None => "absent",
                Some(v) if v == db.latest() => "current",
                Some(v) if v < db.latest() => "outdated",
                Some(_) => "too_new",
            },
            rows: BTreeMap::new(),
        };
        if version == Some(db.latest())
            && let Some(conn) = dir.open_read(db)?
        {
            info.rows = crate::store::row_counts(&conn)?;
            if std::ptr::eq(db, &crate::workflow::authority::schema::SPEC) {
                let meta = |key: &str| -> Result<Option<String>> {
                    Ok(conn
                        .query_row("SELECT value FROM meta WHERE key=?1", [key], |r| r.get(0))
                        .optional()?)
                };
                out.data_dir_id = meta("data_dir_id")?;
                out.created_at = meta("created_at")?;
            }
        }
        out.databases.insert(db.name, info);
    }
    Ok(out)
}
