//! Who is asking, the lowest layer of the authority: the read-only
//! authority, token files and token authentication, and the registration
//! look-up every transfer check makes. Nothing here names another file of
//! the authority but the schema, so every other file may name it.

use crate::contract::ExecutorEnrollment;
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::store::{Connection, DataDir, OptionalExtension, ReadConn, params};
use crate::wire::digest::domain_digest;
use std::io::Read;
use std::path::Path;

/// Domain of a stored token hash.
pub const DOMAIN_TOKEN: &str = "agent-task.token.v1";
/// Largest token file.
pub const MAX_TOKEN_FILE: u64 = 512;

/// Opens the authority read-only (`not_initialized` when absent), through
/// the thread's read cache under `serve` (`store::ReadConn`: a kept
/// connection, checked to still name the file; a fresh one elsewhere).
pub fn open_read(root: &Path) -> Result<(DataDir, ReadConn)> {
    let dir = DataDir::open(root)?;
    let conn = dir.open_read_cached(&super::schema::SPEC)?;
    Ok((dir, conn.ok_or_else(no_authority)?))
}

/// [`open_read`], the connection in a read transaction (one snapshot for
/// every read through it: `DataDir::open_read_snapshot`).
pub fn open_read_snapshot(root: &Path) -> Result<(DataDir, ReadConn)> {
    let dir = DataDir::open(root)?;
    let conn = dir.open_read_snapshot(&super::schema::SPEC)?;
    Ok((dir, conn.ok_or_else(no_authority)?))
}

fn no_authority() -> Error {
    Error::new(
        Code::NotInitialized,
        "the data directory has no authority; run `agent-task init`",
    )
}

/// An authenticated actor and its grant generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The actor.
    pub actor: crate::contract::Actor,
    /// Grant generation.
    pub grant_generation: u64,
}

/// Reads a token file (owner-private, no symlink, bounded).
pub fn read_token_file(path: &Path) -> Result<String> {
    let unauth = |m: &str| Error::new(Code::Unauthorized, m.to_owned());
    if !private_fs::check_private(path, private_fs::Kind::File)? {
        return Err(unauth("token file does not exist"));
    }
    let mut f = private_fs::open_nofollow_read(path)?;
    let mut s = String::new();
    Read::by_ref(&mut f)
        .take(MAX_TOKEN_FILE + 1)
        .read_to_string(&mut s)
        .map_err(|_| unauth("token file is not UTF-8"))?;
    if s.len() as u64 > MAX_TOKEN_FILE {
        return Err(unauth("token file is too large"));
    }
    Ok(s.trim_end_matches('\n').to_owned())
}

/// Looks up the actor of a token.
pub fn authenticate(conn: &Connection, token: &str) -> Result<Authenticated> {
    let hash = domain_digest(DOMAIN_TOKEN, token.as_bytes());
    conn.prepare_cached("SELECT owner_id, agent_id, grant_generation FROM actors WHERE token_hash = ?1 AND revoked_at IS NULL")?.query_row(params![hash.as_str()],
        |r| {
            Ok(Authenticated {
                actor: crate::contract::Actor { owner_id: r.get(0)?, agent_id: r.get(1)? },
                grant_generation: r.get::<_, i64>(2)? as u64,
            })
        },
    )
    .optional()?
    .ok_or_else(|| Error::new(Code::Unauthorized, "the token is unknown or revoked"))
}

/// The authoritative registration and whether it is revoked.
pub fn registration(
    conn: &Connection,
    registration_id: &str,
) -> Result<Option<(ExecutorEnrollment, bool)>> {
    Ok(conn
        .prepare_cached("SELECT g.registration_id, g.repo_id, g.profile_id, g.step_id, g.executor_id, g.public_key, g.key_id, g.epoch, \
             v.registration_id IS NOT NULL FROM registrations g LEFT JOIN revocations v USING (registration_id) \
             WHERE g.registration_id = ?1")?.query_row(params![registration_id],
            |r| {
                Ok((
                    ExecutorEnrollment {
                        version: 1,
                        registration_id: r.get(0)?,
                        repository: r.get(1)?,
                        profile: r.get(2)?,
                        step_id: r.get(3)?,
                        executor_id: r.get(4)?,
                        public_key: r.get(5)?,
                        verification_key_id: r.get(6)?,
                        epoch: r.get::<_, i64>(7)? as u64,
                    },
                    r.get(8)?,
                ))
            },
        )
        .optional()?)
}
