//! `authority.sqlite` migrations.

use crate::store::{DbSpec, Migration};

/// The authority database.
pub static SPEC: DbSpec = DbSpec {
    name: "authority",
    file: "authority.sqlite",
    migrations: MIGRATIONS,
};

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
        description: "stat cache state: the revision its rows describe and when the scan began",
        sql: "
CREATE TABLE stat_cache_roots (
    root TEXT PRIMARY KEY NOT NULL,
    revision TEXT NOT NULL,
    scanned_at_ns INTEGER NOT NULL
) STRICT;
",
    },
];
