//! `authority.sqlite` migrations.

use crate::store::{DbSpec, Migration};

/// The authority database.
pub static SPEC: DbSpec = DbSpec {
    name: "authority",
    file: "authority.sqlite",
    migrations: MIGRATIONS,
};

static MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "data-directory identity",
    sql: "CREATE TABLE meta (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    ) STRICT;",
}];
