//! `authority.sqlite` migrations.

use crate::store::{DbSpec, Migration};

/// The authority database.
pub static SPEC: DbSpec = DbSpec {
    name: "authority",
    file: "authority.sqlite",
    migrations: MIGRATIONS,
    on_open: None,
};

/// The authority's connection in a unit of work (`store` names no
/// database; this is the workflow's name for it).
pub trait AuthorityWork<'s> {
    /// The authority.
    fn authority(&self) -> crate::error::Result<&'s crate::store::Connection>;
}

impl<'s> AuthorityWork<'s> for crate::store::Work<'s> {
    fn authority(&self) -> crate::error::Result<&'s crate::store::Connection> {
        self.db(&SPEC)
            .ok_or_else(|| crate::error::Error::internal("the session did not open the authority"))
    }
}

static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "data-directory identity",
        sql: "CREATE TABLE meta (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    ) STRICT;",
    },
    Migration {
        version: 2,
        description: "repositories, requirements, policy epoch, actors, enrollments, changes, stat cache",
        sql: "
CREATE TABLE policy (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    epoch INTEGER NOT NULL CHECK (epoch >= 0)
) STRICT;
INSERT INTO policy(singleton, epoch) VALUES (1, 0);
CREATE TABLE policy_acts (
    epoch INTEGER PRIMARY KEY,
    act TEXT NOT NULL,
    detail TEXT NOT NULL,
    at TEXT NOT NULL
) STRICT;
CREATE TABLE repositories (
    repo_id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    head_revision TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE revisions (
    revision TEXT PRIMARY KEY NOT NULL,
    manifest_sha256 TEXT NOT NULL,
    manifest_size INTEGER NOT NULL,
    file_count INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE requirements (
    requirement_digest TEXT PRIMARY KEY NOT NULL,
    bytes BLOB NOT NULL,
    name TEXT NOT NULL
) STRICT;
CREATE TABLE installed_requirements (
    repo_id TEXT NOT NULL REFERENCES repositories(repo_id),
    profile_id TEXT NOT NULL,
    requirement_digest TEXT NOT NULL REFERENCES requirements(requirement_digest),
    policy_epoch INTEGER NOT NULL,
    installed_at TEXT NOT NULL,
    PRIMARY KEY (repo_id, profile_id)
) STRICT;
CREATE TABLE actors (
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    token_hash TEXT UNIQUE,
    grant_generation INTEGER NOT NULL,
    issued_at TEXT NOT NULL,
    revoked_at TEXT,
    PRIMARY KEY (owner_id, agent_id)
) STRICT;
CREATE TABLE registrations (
    registration_id TEXT PRIMARY KEY NOT NULL,
    repo_id TEXT NOT NULL REFERENCES repositories(repo_id),
    profile_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    executor_id TEXT NOT NULL,
    public_key TEXT NOT NULL,
    key_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    policy_epoch INTEGER NOT NULL,
    enrolled_at TEXT NOT NULL,
    UNIQUE (repo_id, profile_id, step_id, executor_id, epoch)
) STRICT;
CREATE TABLE revocations (
    registration_id TEXT PRIMARY KEY NOT NULL REFERENCES registrations(registration_id),
    policy_epoch INTEGER NOT NULL,
    revoked_at TEXT NOT NULL
) STRICT;
CREATE TABLE changes (
    change_id TEXT PRIMARY KEY NOT NULL,
    repo_id TEXT NOT NULL REFERENCES repositories(repo_id),
    profile_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    base_revision TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX changes_by_workspace ON changes(workspace);
CREATE TABLE change_versions (
    change_id TEXT NOT NULL REFERENCES changes(change_id),
    version INTEGER NOT NULL,
    revision TEXT NOT NULL REFERENCES revisions(revision),
    context_digest TEXT NOT NULL,
    context_bytes BLOB NOT NULL,
    tasks_json BLOB NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (change_id, version)
) STRICT;
CREATE TABLE subject_tasks (
    task_id TEXT PRIMARY KEY NOT NULL,
    change_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    FOREIGN KEY (change_id, version) REFERENCES change_versions(change_id, version)
) STRICT;
CREATE TABLE stat_cache (
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (root, path)
) STRICT, WITHOUT ROWID;
",
    },
    Migration {
        version: 3,
        description: "collector profiles, imported transfers, receipts, landings",
        sql: "
CREATE TABLE collector_profiles (
    profile_id TEXT PRIMARY KEY NOT NULL,
    profile_digest TEXT NOT NULL,
    registration_id TEXT NOT NULL REFERENCES registrations(registration_id),
    repo_id TEXT NOT NULL,
    profile_name TEXT NOT NULL,
    step_id TEXT NOT NULL,
    profile_json BLOB NOT NULL,
    policy_epoch INTEGER NOT NULL,
    installed_at TEXT NOT NULL,
    UNIQUE (registration_id, step_id)
) STRICT;
CREATE TABLE imported_transfers (
    execution_operation_id TEXT PRIMARY KEY NOT NULL,
    transfer_digest TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    upload_request_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL UNIQUE,
    fence INTEGER NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    registration_id TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    grant_generation INTEGER NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed')),
    status TEXT NOT NULL,
    header_json BLOB NOT NULL,
    imported_at TEXT NOT NULL
) STRICT;
CREATE INDEX imported_by_task ON imported_transfers(task_id);
CREATE TABLE receipts (
    receipt_digest TEXT PRIMARY KEY NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    context_digest TEXT NOT NULL,
    receipt_json BLOB NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (change_id, change_version)
) STRICT;
CREATE TABLE landings (
    repo_id TEXT NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    revision TEXT NOT NULL,
    receipt_digest TEXT NOT NULL,
    old_head TEXT NOT NULL,
    git_commit TEXT,
    landed_at TEXT NOT NULL,
    PRIMARY KEY (change_id, change_version)
) STRICT;
",
    },
    Migration {
        version: 4,
        description: "landings carry a durable intent: state, ref name, expected old ref value",
        sql: "
CREATE TABLE landings_v4 (
    landing_id TEXT PRIMARY KEY NOT NULL,
    repo_id TEXT NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    revision TEXT NOT NULL,
    receipt_digest TEXT NOT NULL,
    old_head TEXT NOT NULL,
    git_commit TEXT,
    ref_name TEXT,
    expected_old TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'abandoned')),
    reason TEXT,
    intent_at TEXT NOT NULL,
    landed_at TEXT,
    CHECK ((ref_name IS NULL) = (expected_old IS NULL) AND (ref_name IS NULL OR git_commit IS NOT NULL)),
    CHECK ((state = 'landed') = (landed_at IS NOT NULL))
) STRICT;
INSERT INTO landings_v4(landing_id, repo_id, change_id, change_version, revision, receipt_digest,
    old_head, git_commit, ref_name, expected_old, state, reason, intent_at, landed_at)
SELECT 'pre4-' || change_id || '-' || change_version, repo_id, change_id, change_version, revision,
    receipt_digest, old_head, git_commit, NULL, NULL, 'landed', NULL, landed_at, landed_at
FROM landings;
DROP TABLE landings;
ALTER TABLE landings_v4 RENAME TO landings;
CREATE UNIQUE INDEX landings_one_pending ON landings(repo_id) WHERE state = 'pending';
CREATE UNIQUE INDEX landings_once ON landings(change_id, change_version) WHERE state <> 'abandoned';
",
    },
    Migration {
        version: 5,
        description: "stat cache state: the revision its rows describe and when the scan began",
        sql: "
CREATE TABLE stat_cache_roots (
    root TEXT PRIMARY KEY NOT NULL,
    revision TEXT NOT NULL,
    scanned_at_ns INTEGER NOT NULL
) STRICT;
",
    },
    Migration {
        version: 6,
        description: "protected paths: each checkpoint's protected changes; landings record an operator's --allow-protected-change",
        sql: "
ALTER TABLE change_versions ADD COLUMN protected_changes BLOB;
CREATE TABLE landings_v6 (
    landing_id TEXT PRIMARY KEY NOT NULL,
    repo_id TEXT NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    revision TEXT NOT NULL,
    receipt_digest TEXT,
    old_head TEXT NOT NULL,
    git_commit TEXT,
    ref_name TEXT,
    expected_old TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'abandoned')),
    reason TEXT,
    intent_at TEXT NOT NULL,
    landed_at TEXT,
    allow_protected_change INTEGER NOT NULL DEFAULT 0 CHECK (allow_protected_change IN (0, 1)),
    protected_changes INTEGER NOT NULL DEFAULT 0 CHECK (protected_changes >= 0),
    CHECK ((ref_name IS NULL) = (expected_old IS NULL) AND (ref_name IS NULL OR git_commit IS NOT NULL)),
    CHECK ((state = 'landed') = (landed_at IS NOT NULL)),
    CHECK (receipt_digest IS NOT NULL OR (allow_protected_change = 1 AND protected_changes > 0))
) STRICT;
INSERT INTO landings_v6(landing_id, repo_id, change_id, change_version, revision, receipt_digest,
    old_head, git_commit, ref_name, expected_old, state, reason, intent_at, landed_at)
SELECT landing_id, repo_id, change_id, change_version, revision, receipt_digest,
    old_head, git_commit, ref_name, expected_old, state, reason, intent_at, landed_at
FROM landings;
DROP TABLE landings;
ALTER TABLE landings_v6 RENAME TO landings;
CREATE UNIQUE INDEX landings_one_pending ON landings(repo_id) WHERE state = 'pending';
CREATE UNIQUE INDEX landings_once ON landings(change_id, change_version) WHERE state <> 'abandoned';
",
    },
    Migration {
        version: 7,
        description: "endpoint changes: idempotent change_open, checkpoint sessions, staged blobs not yet referenced by a revision",
        sql: "
ALTER TABLE changes ADD COLUMN open_request_id TEXT;
CREATE UNIQUE INDEX changes_open_request ON changes(owner_id, agent_id, open_request_id)
    WHERE open_request_id IS NOT NULL;
CREATE TABLE checkpoint_sessions (
    change_id TEXT PRIMARY KEY NOT NULL REFERENCES changes(change_id),
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    manifest_sha256 TEXT NOT NULL,
    manifest_size INTEGER NOT NULL CHECK (manifest_size >= 0),
    files INTEGER NOT NULL CHECK (files >= 0),
    total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX checkpoint_sessions_by_actor ON checkpoint_sessions(owner_id, agent_id);
CREATE TABLE checkpoint_session_blobs (
    change_id TEXT NOT NULL REFERENCES checkpoint_sessions(change_id) ON DELETE CASCADE,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    PRIMARY KEY (change_id, sha256)
) STRICT, WITHOUT ROWID;
CREATE TABLE staged_blobs (
    sha256 TEXT PRIMARY KEY NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    staged_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX staged_blobs_by_actor ON staged_blobs(owner_id, agent_id);
CREATE INDEX staged_blobs_by_age ON staged_blobs(staged_at_ms);
",
    },
    Migration {
        version: 8,
        description: "a Change's title and body (change open --title/--body, checkpoint --message): the landed commit's message",
        sql: "
ALTER TABLE changes ADD COLUMN title TEXT;
ALTER TABLE changes ADD COLUMN body TEXT;
",
    },
    Migration {
        version: 9,
        description: "evidence as data: the operator's evidence targets and the outbox the evidence writer drains",
        sql: "
CREATE TABLE evidence_targets (
    repo_id TEXT PRIMARY KEY NOT NULL REFERENCES repositories(repo_id),
    evidence_dir TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    configured_at TEXT NOT NULL
) STRICT;
CREATE TABLE evidence_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    record_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('run', 'receipt')),
    repo_id TEXT NOT NULL,
    transfer_digest TEXT NOT NULL,
    receipt_digest TEXT,
    payload TEXT NOT NULL,
    prior_payload TEXT,
    created_at TEXT NOT NULL,
    done_at TEXT,
    record_id TEXT,
    CHECK ((kind = 'receipt') = (receipt_digest IS NOT NULL AND prior_payload IS NOT NULL)),
    CHECK ((done_at IS NULL) = (record_id IS NULL))
) STRICT;
CREATE INDEX evidence_outbox_pending ON evidence_outbox(seq) WHERE done_at IS NULL;
",
    },
    Migration {
        version: 10,
        description: "a Change's group (change open --group): the Changes made for the same work, shown side by side by ls",
        sql: "
ALTER TABLE changes ADD COLUMN group_label TEXT;
CREATE INDEX changes_by_group ON changes(group_label) WHERE group_label IS NOT NULL;
",
    },
    Migration {
        version: 11,
        description: "a forge per repository (repo forge set): its kind, API, project, git remote and the operator's credential file by path, whether commit statuses are published; the push state of each landing pushed to it (land --push); the commit-status outbox the publisher drains",
        sql: "
CREATE TABLE forges (
    repo_id TEXT PRIMARY KEY NOT NULL REFERENCES repositories(repo_id),
    kind TEXT NOT NULL CHECK (kind IN ('github', 'gitlab')),
    api_url TEXT NOT NULL,
    project TEXT NOT NULL,
    remote_url TEXT NOT NULL,
    token_file TEXT,
    app_id INTEGER CHECK (app_id > 0),
    app_key_file TEXT,
    installation_id INTEGER CHECK (installation_id > 0),
    publish_status INTEGER NOT NULL DEFAULT 0 CHECK (publish_status IN (0, 1)),
    status_target_url TEXT,
    configured_at TEXT NOT NULL,
    CHECK ((app_id IS NULL) = (app_key_file IS NULL) AND (app_id IS NULL) = (installation_id IS NULL)),
    CHECK ((token_file IS NULL) <> (app_id IS NULL)),
    CHECK (app_id IS NULL OR kind = 'github')
) STRICT;
CREATE TABLE forge_pushes (
    landing_id TEXT PRIMARY KEY NOT NULL REFERENCES landings(landing_id),
    repo_id TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    remote_url TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'pushed')),
    attempts INTEGER NOT NULL CHECK (attempts >= 1),
    started_at TEXT NOT NULL,
    pushed_at TEXT,
    candidate_pushed INTEGER NOT NULL DEFAULT 0 CHECK (candidate_pushed IN (0, 1)),
    CHECK ((state = 'pushed') = (pushed_at IS NOT NULL))
) STRICT;
CREATE TABLE forge_status_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    repo_id TEXT NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    profile_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'success', 'failure', 'error')),
    description TEXT NOT NULL,
    created_at TEXT NOT NULL,
    done_at TEXT,
    outcome TEXT CHECK (outcome IN ('published', 'superseded', 'refused')),
    git_commit TEXT,
    CHECK ((done_at IS NULL) = (outcome IS NULL))
) STRICT;
CREATE INDEX forge_status_outbox_pending ON forge_status_outbox(seq) WHERE done_at IS NULL;
",
    },
    Migration {
        version: 12,
        description: "candidates as pull requests (propose): each proposed Change version's commit and its push state, the pull or merge request of each Change on its forge (recorded before the API call), forge sync's last synced commit per repository, and who landed a landing (land, or forge sync after a forge-side merge)",
        sql: "
ALTER TABLE landings ADD COLUMN landed_by TEXT NOT NULL DEFAULT 'land' CHECK (landed_by IN ('land', 'forge_sync'));
CREATE TABLE forge_proposals (
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL CHECK (change_version >= 1),
    repo_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    qualified INTEGER NOT NULL CHECK (qualified IN (0, 1)),
    receipt_digest TEXT,
    state TEXT NOT NULL CHECK (state IN ('committed', 'pushed')),
    created_at TEXT NOT NULL,
    pushed_at TEXT,
    PRIMARY KEY (change_id, change_version),
    CHECK ((state = 'pushed') = (pushed_at IS NOT NULL)),
    CHECK ((qualified = 1) = (receipt_digest IS NOT NULL))
) STRICT;
CREATE TABLE forge_requests (
    change_id TEXT PRIMARY KEY NOT NULL,
    repo_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('github', 'gitlab')),
    head_branch TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    number INTEGER CHECK (number > 0),
    url TEXT,
    head_sha TEXT,
    change_version INTEGER,
    state TEXT NOT NULL CHECK (state IN ('opening', 'open', 'closed')),
    close_reason TEXT CHECK (close_reason IN ('landed', 'merged')),
    opened_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    closed_at TEXT,
    CHECK ((state = 'opening') = (number IS NULL)),
    CHECK ((state = 'closed') = (closed_at IS NOT NULL AND close_reason IS NOT NULL))
) STRICT;
CREATE TABLE forge_syncs (
    repo_id TEXT PRIMARY KEY NOT NULL REFERENCES repositories(repo_id),
    last_commit TEXT NOT NULL,
    synced_at TEXT NOT NULL
) STRICT;
",
    },
    Migration {
        version: 13,
        description: "the stat cache of a scanned root as one packed value (one row per root, not per file): the Stop hook decodes it in one pass; the rows of every root whose digests are intact carried over",
        // The packed format is `snapshot::encode_cache`'s: `atsc`, format
        // 1, the row count, then per row (in path-byte order) the path's
        // byte length and bytes, inode, size, mtime, ctime (16 hex digits
        // each, two's complement), mode (8) and the digest, all hex here
        // and decoded once. A root with a damaged digest is dropped (the
        // next scan reads its files again, as it would have).
        sql: "
CREATE TABLE stat_caches (
    root TEXT PRIMARY KEY NOT NULL,
    revision TEXT NOT NULL,
    scanned_at_ns INTEGER NOT NULL,
    entries BLOB NOT NULL
) STRICT;
INSERT INTO stat_caches(root, revision, scanned_at_ns, entries)
SELECT root, revision, scanned_at_ns, entries FROM (
    SELECT r.root AS root, r.revision AS revision, r.scanned_at_ns AS scanned_at_ns,
        unhex('6174736301'
            || printf('%08x', (SELECT count(*) FROM stat_cache c WHERE c.root = r.root))
            || coalesce((SELECT group_concat(
                    printf('%08x', length(CAST(c.path AS BLOB))) || hex(c.path)
                    || printf('%016x%016x%016x%016x%08x', c.ino, c.size, c.mtime_ns, c.ctime_ns, c.mode)
                    || c.sha256, '' ORDER BY c.path)
                FROM stat_cache c WHERE c.root = r.root), '')) AS entries
    FROM stat_cache_roots r
    WHERE NOT EXISTS (SELECT 1 FROM stat_cache c WHERE c.root = r.root
        AND (length(c.sha256) <> 64 OR c.sha256 GLOB '*[^0-9a-f]*'))
) WHERE entries IS NOT NULL;
DROP TABLE stat_cache;
DROP TABLE stat_cache_roots;
",
    },
];

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;
    use crate::store::Connection;

    fn at(version: u32) -> Connection {
        let c = crate::store::in_memory();
        for m in MIGRATIONS.iter().filter(|m| m.version <= version) {
            c.execute_batch(m.sql).expect("migration");
        }
        c
    }

    #[test]
    fn migration_13_packs_each_roots_rows_as_encode_cache_would() {
        use crate::workflow::authority::snapshot::{CacheRow, decode_cache, encode_cache};
        let c = at(12);
        let rows = [
            (
                "a b/\u{e9}t\u{e9}.txt",
                7_u64,
                12_u64,
                1_700_000_000_123_456_789_i64,
                -5_i64,
                0o100644_u32,
                0xab_u8,
            ),
            (
                "src/main.rs",
                u64::MAX,
                0,
                i64::MIN,
                i64::MAX,
                0o100755,
                0x01,
            ),
            ("z", 1 << 63, 4096, 0, 1, 0o120000, 0xff),
        ];
        // Inserted out of order: the packed rows follow path-byte order.
        for (p, ino, size, m, ct, mode, b) in rows.iter().rev() {
            c.execute(
                "INSERT INTO stat_cache VALUES ('/w', ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    p,
                    *ino as i64,
                    *size as i64,
                    m,
                    ct,
                    mode,
                    data_encoding::HEXLOWER.encode(&[*b; 32])
                ],
            )
            .expect("v12 row");
        }
        c.execute("INSERT INTO stat_cache_roots VALUES ('/w', 'rev', 42)", [])
            .expect("root");
        // A root with a damaged digest is dropped; rows without a root
        // state were never trusted and are dropped too.
        c.execute(
            "INSERT INTO stat_cache VALUES ('/d', 'x', 1, 1, 1, 1, 33188, 'not hex')",
            [],
        )
        .expect("damaged row");
        c.execute("INSERT INTO stat_cache_roots VALUES ('/d', 'rev', 1)", [])
            .expect("damaged root");
        c.execute(
            "INSERT INTO stat_cache VALUES ('/n', 'x', 1, 1, 1, 1, 33188, ?1)",
            [data_encoding::HEXLOWER.encode(&[0u8; 32])],
        )
        .expect("stateless row");
        // A root state whose rows are all gone packs as an empty cache.
        c.execute("INSERT INTO stat_cache_roots VALUES ('/e', 'rev', 9)", [])
            .expect("empty root");
        let m13 = MIGRATIONS.iter().find(|m| m.version == 13).expect("m13");
        c.execute_batch(m13.sql).expect("migration 13");
        let packed: Vec<(String, String, i64, Vec<u8>)> = c
            .prepare("SELECT root, revision, scanned_at_ns, entries FROM stat_caches ORDER BY root")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        let want: Vec<(String, CacheRow)> = rows
            .iter()
            .map(|(p, ino, size, m, ct, mode, b)| {
                (
                    (*p).to_owned(),
                    CacheRow {
                        ino: *ino,
                        size: *size,
                        mtime_ns: *m,
                        ctime_ns: *ct,
                        mode: *mode,
                        sha256: [*b; 32],
                    },
                )
            })
            .collect();
        let roots: Vec<&str> = packed.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(roots, ["/e", "/w"]);
        assert_eq!(packed[1].1, "rev");
        assert_eq!(packed[1].2, 42);
        assert_eq!(
            packed[1].3,
            encode_cache(want.iter().map(|(p, r)| (p.as_str(), r))),
            "the SQL packing is encode_cache's"
        );
        assert_eq!(decode_cache(&packed[1].3).expect("decodes"), want);
        assert_eq!(decode_cache(&packed[0].3).expect("decodes"), Vec::new());
        for old in ["stat_cache", "stat_cache_roots"] {
            let n: i64 = c
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
                    [old],
                    |r| r.get(0),
                )
                .expect("schema");
            assert_eq!(n, 0, "{old} dropped");
        }
    }

    #[test]
    fn migration_4_keeps_existing_landings_as_landed() {
        let c = at(3);
        c.execute(
            "INSERT INTO landings VALUES ('r', 'chg_1', 2, 'rev', 'rcpt', 'old', 'abc', 't')",
            [],
        )
        .expect("v3 row");
        let m4 = MIGRATIONS.iter().find(|m| m.version == 4).expect("m4");
        c.execute_batch(m4.sql).expect("migration 4");
        let row: (String, String, Option<String>, Option<String>, String) = c
            .query_row(
                "SELECT state, change_id, git_commit, ref_name, landed_at FROM landings",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .expect("row");
        assert_eq!(
            row,
            (
                "landed".into(),
                "chg_1".into(),
                Some("abc".into()),
                None,
                "t".into()
            )
        );
    }

    #[test]
    fn migration_6_keeps_landings_and_requires_a_receipt_unless_allowed() {
        let c = at(5);
        c.execute(
            "INSERT INTO landings(landing_id, repo_id, change_id, change_version, revision, receipt_digest, \
             old_head, git_commit, ref_name, expected_old, state, intent_at, landed_at) \
             VALUES ('l1', 'r', 'a', 1, 'rev', 'rc', 'old', 'c', 'refs/heads/main', '0', 'landed', 't', 't')",
            [],
        )
        .expect("v5 row");
        let m6 = MIGRATIONS.iter().find(|m| m.version == 6).expect("m6");
        c.execute_batch(m6.sql).expect("migration 6");
        let row: (String, i64, i64) = c
            .query_row(
                "SELECT receipt_digest, allow_protected_change, protected_changes FROM landings",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("row");
        assert_eq!(row, ("rc".into(), 0, 0));
        let ins = |id: &str, change: &str, allow: i64, n: i64| {
            c.execute(
                "INSERT INTO landings(landing_id, repo_id, change_id, change_version, revision, receipt_digest, \
                 old_head, state, intent_at, landed_at, allow_protected_change, protected_changes) \
                 VALUES (?1, 'r', ?2, 1, 'rev', NULL, 'old', 'landed', 't', 't', ?3, ?4)",
                rusqlite::params![id, change, allow, n],
            )
        };
        assert!(ins("l2", "b", 0, 0).is_err(), "no receipt, not allowed");
        assert!(
            ins("l3", "c", 1, 0).is_err(),
            "no receipt and nothing protected changed"
        );
        ins("l4", "d", 1, 2).expect("allowed protected change");
        assert!(ins("l5", "a", 1, 2).is_err(), "same version twice");
    }

    #[test]
    fn one_pending_landing_per_repository_and_one_live_landing_per_version() {
        let c = at(4);
        let ins = |id: &str, change: &str, state: &str| {
            c.execute(
                "INSERT INTO landings(landing_id, repo_id, change_id, change_version, revision, receipt_digest, \
                 old_head, git_commit, ref_name, expected_old, state, intent_at, landed_at) \
                 VALUES (?1, 'r', ?2, 1, 'rev', 'rc', 'old', 'c', 'refs/heads/main', '0', ?3, 't', \
                 CASE WHEN ?3 = 'landed' THEN 't' END)",
                rusqlite::params![id, change, state],
            )
        };
        ins("l1", "a", "pending").expect("first pending");
        assert!(ins("l2", "b", "pending").is_err(), "a second pending");
        c.execute("UPDATE landings SET state = 'abandoned'", [])
            .expect("abandon");
        ins("l3", "a", "pending").expect("again after abandoning");
        assert!(ins("l4", "a", "landed").is_err(), "same version twice");
        assert!(ins("l5", "c", "bogus").is_err(), "unknown state");
    }
}
