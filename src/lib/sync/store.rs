//! The sync state of a data directory, `DATA_DIR/sync/sync.sqlite` (0600):
//! the node's sync identity (Ed25519 publisher seed and X25519 recipient
//! secret, never printed), the page authorities it serves as a source,
//! the peers it pulls from as a destination, and one checkpoint per
//! (peer, collection) (facts §14). Per-(peer, collection) lock files under
//! `DATA_DIR/sync/locks/` keep two pulls (CLI or `serve`) apart across
//! processes.

use super::adds::encoding::{b64u, b64u_fixed, is_key_b64u, x25519_key_id};
use super::adds::grant::{Recipient, x25519_public};
use super::adds::object::Principal;
use super::wire::{is_cursor, is_feed_id, is_node_id};
use crate::data::syntax::is_collection_id;
use crate::error::{Code, Error, Result};
use crate::store::private_fs::{self, Kind};
use crate::store::{
    Access, CommitOrder, Connection, DataDir, DbSpec, Kept, KeptDirLock, Migration,
    OptionalExtension, Plan, Session, params,
};
use crate::wire::ed25519::Keypair;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

/// The sync database.
pub static SPEC: DbSpec = DbSpec {
    name: "sync",
    file: "sync/sync.sqlite",
    migrations: MIGRATIONS,
    on_open: None,
};

/// Every write of the sync state: one unit of work on the sync database.
const PLAN: Plan = Plan {
    dbs: &[(&SPEC, Access::Write)],
    order: CommitOrder::Listed,
};

static MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "agent-data-sync/v1: identity, page authorities, peers, checkpoints",
    sql: "
CREATE TABLE identity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    id TEXT NOT NULL,
    ed25519_seed BLOB NOT NULL CHECK (length(ed25519_seed) = 32),
    x25519_secret BLOB NOT NULL CHECK (length(x25519_secret) = 32),
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE page_authorities (
    peer_id TEXT PRIMARY KEY,
    bearer_sha256 BLOB NOT NULL UNIQUE,
    collection_ids TEXT NOT NULL,
    recipient_id TEXT NOT NULL,
    recipient_x25519_public_key TEXT NOT NULL,
    recipient_x25519_key_id TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE peers (
    peer_id TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    expected_node_id TEXT NOT NULL,
    publisher_id TEXT NOT NULL,
    publisher_ed25519_public_key TEXT NOT NULL,
    bearer TEXT NOT NULL,
    ca_pem BLOB,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE sync_checkpoints_v1 (
    peer_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    peer_base_url TEXT NOT NULL,
    origin_node_id TEXT NOT NULL,
    feed_id TEXT NOT NULL,
    publisher_id TEXT NOT NULL,
    publisher_ed25519_public_key TEXT NOT NULL,
    cursor TEXT NOT NULL,
    last_applied_at TEXT NOT NULL,
    records_inserted INTEGER NOT NULL,
    records_existing INTEGER NOT NULL,
    tombstones_applied INTEGER NOT NULL,
    PRIMARY KEY (peer_id, collection_id)
) STRICT;
",
}];

/// Largest secret file (bearer) accepted.
pub const MAX_SECRET: u64 = 16_384;
/// Largest CA file accepted.
pub const MAX_CA_FILE: u64 = 1 << 20;

/// The node's sync identity.
pub struct Identity {
    /// The id (grant issuer and audience).
    pub id: String,
    /// Publisher signing key.
    pub signing: Keypair,
    /// Recipient X25519 secret.
    pub x25519_secret: [u8; 32],
}

impl Identity {
    /// `{id, ed25519_public_key}`.
    pub fn publisher(&self) -> Principal {
        Principal {
            id: self.id.clone(),
            ed25519_public_key: b64u(&self.signing.public_key()),
        }
    }

    /// `{id, x25519_public_key, x25519_key_id}`.
    pub fn recipient(&self) -> Recipient {
        Recipient::new(&self.id, &x25519_public(&self.x25519_secret))
    }

    /// The public material another operator needs.
    pub fn public_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "publisher": self.publisher().to_json(),
            "recipient": self.recipient().to_json(),
        })
    }
}

/// A page authority (source side, facts §12.2).
#[derive(Debug, Clone)]
pub struct Authority {
    /// Local label.
    pub peer_id: String,
    /// SHA-256 of the page bearer.
    pub bearer_sha256: [u8; 32],
    /// Collections it may page.
    pub collection_ids: Vec<String>,
    /// The one recipient grants are issued to.
    pub recipient: Recipient,
}

/// A configured peer (destination side, facts §12.8).
#[derive(Debug, Clone)]
pub struct Peer {
    /// Alias.
    pub peer_id: String,
    /// Normalised origin.
    pub base_url: String,
    /// The node id every page must carry.
    pub expected_node_id: String,
    /// The publisher pin.
    pub publisher: Principal,
    /// The page bearer sent to that origin only.
    pub bearer: String,
    /// Operator CA certificates for HTTPS.
    pub ca_pem: Option<Vec<u8>>,
}

/// One checkpoint row (facts §14).
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Origin it was made against.
    pub peer_base_url: String,
    /// Node id.
    pub origin_node_id: String,
    /// Feed incarnation.
    pub feed_id: String,
    /// Publisher pin.
    pub publisher_id: String,
    /// Publisher key.
    pub publisher_ed25519_public_key: String,
    /// Opaque cursor.
    pub cursor: String,
    /// Last page applied.
    pub last_applied_at: String,
    /// Cumulative counters.
    pub records_inserted: u64,
    /// Cumulative counters.
    pub records_existing: u64,
    /// Cumulative counters.
    pub tombstones_applied: u64,
}

/// The checkpoint row of (peer, collection), inserted or replaced.
fn upsert_checkpoint(
    c: &Connection,
    peer_id: &str,
    collection_id: &str,
    cp: &Checkpoint,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO sync_checkpoints_v1 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT(peer_id, collection_id) DO UPDATE SET peer_base_url = excluded.peer_base_url, \
         origin_node_id = excluded.origin_node_id, feed_id = excluded.feed_id, \
         publisher_id = excluded.publisher_id, \
         publisher_ed25519_public_key = excluded.publisher_ed25519_public_key, \
         cursor = excluded.cursor, last_applied_at = excluded.last_applied_at, \
         records_inserted = excluded.records_inserted, records_existing = excluded.records_existing, \
         tombstones_applied = excluded.tombstones_applied",
    )?
    .execute(params![
        peer_id,
        collection_id,
        cp.peer_base_url,
        cp.origin_node_id,
        cp.feed_id,
        cp.publisher_id,
        cp.publisher_ed25519_public_key,
        cp.cursor,
        cp.last_applied_at,
        cp.records_inserted as i64,
        cp.records_existing as i64,
        cp.tombstones_applied as i64
    ])?;
    Ok(())
}

/// The checkpoint writes of one pull, one a page: each takes the data
/// directory's lock and commits on its own, as
/// [`SyncStore::save_checkpoint`] does, but the lock's files and the sync
/// database's writer connection are kept from one page to the next (the
/// CAS temp sweep of a lock acquisition runs at the first page, and then
/// at most every [`crate::store::TEMP_SWEEP_EVERY`]). Opening both for
/// every page was about 2 % of the destination's CPU in a pull.
pub struct CheckpointWriter<'a> {
    store: &'a SyncStore,
    lock: KeptDirLock,
    kept: Kept,
}

impl CheckpointWriter<'_> {
    /// Saves the checkpoint of (peer, collection), durably.
    pub fn save(
        &mut self,
        peer_id: &str,
        collection_id: &str,
        cp: &Checkpoint,
        now: &str,
    ) -> Result<()> {
        let clock = crate::clock::FixedClock(crate::clock::parse_rfc3339(now)?);
        let lock = self.lock.acquire(self.store.timeout)?;
        let mut s = Session::with_kept(self.store.dir.clone(), lock, &clock, PLAN, &mut self.kept)?;
        s.apply(|w| upsert_checkpoint(w.write(&SPEC)?, peer_id, collection_id, cp))?;
        s.commit()?;
        s.close_into(&mut self.kept);
        Ok(())
    }
}

/// `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$` (peer aliases).
pub fn check_peer_id(s: &str) -> Result<()> {
    if is_collection_id(s) {
        Ok(())
    } else {
        Err(Error::new(
            Code::InvalidPeerId,
            "peer id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        ))
    }
}

/// Normalises a peer base URL to its exact origin: `https`, or `http` on
/// a loopback host only; no userinfo, path, query or fragment.
pub fn normalize_origin(raw: &str) -> Result<String> {
    let bad = |m: &str| Error::new(Code::InvalidPeer, format!("peer origin {raw:?}: {m}"));
    let u = url::Url::parse(raw).map_err(|_| bad("not an absolute URL"))?;
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad("must not carry userinfo"));
    }
    if u.path() != "/" && !u.path().is_empty() {
        return Err(bad("must not have a path"));
    }
    if u.query().is_some() || u.fragment().is_some() || raw.contains('?') || raw.contains('#') {
        return Err(bad("must not have a query or fragment"));
    }
    let host = u.host_str().ok_or_else(|| bad("has no host"))?;
    match u.scheme() {
        "https" => {}
        "http" if crate::net::is_loopback_host(host) => {}
        "http" => return Err(bad("plain http is allowed only on loopback; use https")),
        _ => return Err(bad("scheme must be https (or http on loopback)")),
    }
    Ok(u.origin().ascii_serialization())
}

/// Reads a one-line secret from a file that must be owner-only and not a
/// symlink (one trailing newline stripped; 1–16,384 printable ASCII).
pub fn read_secret_file(path: &Path) -> Result<String> {
    use std::io::Read;
    if !private_fs::check_private(path, Kind::File)? {
        return Err(Error::new(
            Code::NotFound,
            format!("{} does not exist", path.display()),
        ));
    }
    let mut buf = Vec::new();
    private_fs::open_nofollow_read(path)?
        .take(MAX_SECRET + 3)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("read", path, e))?;
    let mut s = String::from_utf8(buf)
        .map_err(|_| Error::new(Code::InvalidCredential, "the bearer file is not UTF-8"))?;
    if s.ends_with('\n') {
        s.pop();
        if s.ends_with('\r') {
            s.pop();
        }
    }
    if s.is_empty() || s.len() as u64 > MAX_SECRET || !s.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(Error::new(
            Code::InvalidCredential,
            "a bearer must be 1-16384 printable ASCII characters without spaces",
        ));
    }
    Ok(s)
}

/// Reads an operator CA file (PEM, at most 1 MiB).
pub fn read_ca_file(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    private_fs::open_nofollow_read(path)?
        .take(MAX_CA_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("read", path, e))?;
    if buf.len() as u64 > MAX_CA_FILE
        || !buf.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(Error::new(
            Code::InvalidPeer,
            "the CA file must be PEM certificates of at most 1 MiB",
        ));
    }
    Ok(buf)
}

/// The sync store of a data directory.
pub struct SyncStore {
    dir: DataDir,
    timeout: Duration,
}

impl SyncStore {
    /// For an existing data directory.
    pub fn new(dir: &DataDir, timeout: Duration) -> SyncStore {
        SyncStore {
            dir: dir.clone(),
            timeout,
        }
    }

    /// One unit of work on the store's engine ([`PLAN`]), committed with
    /// `synchronous=FULL` like every store's.
    fn write<T>(&self, now: &str, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let clock = crate::clock::FixedClock(crate::clock::parse_rfc3339(now)?);
        let lock = self.dir.lock(self.timeout)?;
        let mut s = Session::with_lock(self.dir.clone(), lock, &clock, PLAN)?;
        let out = s.apply(|w| f(w.write(&SPEC)?))?;
        s.commit()?;
        s.close();
        Ok(out)
    }

    /// Through the thread's read cache (`store::readcache`): under `serve`
    /// the page route reads the authorities and the identity on every
    /// request, and opening the database cost about 1.3 ms a page; a kept
    /// connection holds no snapshot between requests, so a removed
    /// authority is still refused at once.
    fn read<T>(&self, f: impl FnOnce(Option<&Connection>) -> Result<T>) -> Result<T> {
        let conn = self.dir.open_read_cached(&SPEC)?;
        f(conn.as_deref())
    }

    /// Creates the identity from fresh keys (refused when one exists).
    pub fn keygen(&self, id: &str, now: &str) -> Result<Identity> {
        let seed = super::adds::random::<32>()?;
        let mut x = super::adds::random::<32>()?;
        while x == seed {
            x = super::adds::random::<32>()?;
        }
        self.install_identity(id, seed, x, now)
    }

    /// Installs an identity from given keys (a restored backup; refused
    /// when one exists or when the two secrets are the same bytes).
    pub fn install_identity(
        &self,
        id: &str,
        seed: [u8; 32],
        x: [u8; 32],
        now: &str,
    ) -> Result<Identity> {
        if !(1..=2048).contains(&super::adds::jcs::utf16_len(id)) {
            return Err(Error::new(
                Code::InvalidInput,
                "identity id must be 1-2048 characters",
            ));
        }
        if seed == x {
            return Err(Error::new(
                Code::InvalidInput,
                "the Ed25519 seed and the X25519 secret must differ",
            ));
        }
        self.write(now, |c| {
            let have: Option<String> = c
                .query_row("SELECT id FROM identity", [], |r| r.get(0))
                .optional()?;
            if let Some(have) = have {
                return Err(Error::new(
                    Code::Conflict,
                    format!("this node already has the sync identity {have:?}; peers pin its keys"),
                ));
            }
            c.execute(
                "INSERT INTO identity(singleton, id, ed25519_seed, x25519_secret, created_at) VALUES (1, ?1, ?2, ?3, ?4)",
                params![id, &seed[..], &x[..], now],
            )?;
            Ok(())
        })?;
        Ok(Identity {
            id: id.to_owned(),
            signing: Keypair::from_seed(&seed),
            x25519_secret: x,
        })
    }

    /// The identity, or `sync_identity_missing`.
    pub fn identity(&self) -> Result<Identity> {
        self.read(|c| {
            let row: Option<(String, Vec<u8>, Vec<u8>)> = match c {
                Some(c) => c
                    .prepare_cached("SELECT id, ed25519_seed, x25519_secret FROM identity")?
                    .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()?,
                None => None,
            };
            let (id, seed, x) = row.ok_or_else(|| {
                Error::new(Code::SyncIdentityMissing, "this node has no sync identity")
                    .with("fix", "run `agent-task sync keygen --id ID` first")
            })?;
            let seed: [u8; 32] = seed.try_into().map_err(|_| {
                Error::new(Code::IntegrityError, "stored identity seed is malformed")
            })?;
            let x: [u8; 32] = x.try_into().map_err(|_| {
                Error::new(Code::IntegrityError, "stored X25519 secret is malformed")
            })?;
            Ok(Identity {
                id,
                signing: Keypair::from_seed(&seed),
                x25519_secret: x,
            })
        })
    }

    /// Adds a page authority.
    pub fn add_authority(&self, a: &Authority, now: &str) -> Result<()> {
        check_peer_id(&a.peer_id)
            .map_err(|e| Error::new(Code::InvalidServerOption, e.message()))?;
        if a.collection_ids.is_empty() {
            return Err(Error::new(
                Code::InvalidServerOption,
                "a page authority needs at least one collection",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for c in &a.collection_ids {
            if !is_collection_id(c) || !seen.insert(c) {
                return Err(Error::new(
                    Code::InvalidServerOption,
                    format!("collection {c:?} is invalid or repeated"),
                ));
            }
        }
        let r = &a.recipient;
        if !(1..=2048).contains(&super::adds::jcs::utf16_len(&r.id))
            || !is_key_b64u(&r.x25519_public_key)
            || b64u_fixed::<32>(&r.x25519_public_key, "k")
                .map(|k| x25519_key_id(&k))
                .ok()
                .as_deref()
                != Some(r.x25519_key_id.as_str())
        {
            return Err(Error::new(
                Code::InvalidServerOption,
                "the recipient is invalid",
            ));
        }
        let ids = serde_json::to_string(&a.collection_ids)
            .map_err(|e| Error::internal(format!("cannot render: {e}")))?;
        self.write(now, |c| {
            let dup: Option<String> = c
                .query_row(
                    "SELECT peer_id FROM page_authorities WHERE peer_id = ?1 OR bearer_sha256 = ?2",
                    params![a.peer_id, &a.bearer_sha256[..]],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(d) = dup {
                return Err(Error::new(
                    Code::InvalidServerOption,
                    format!("page authority {d:?} already uses this peer id or bearer"),
                ));
            }
            c.execute(
                "INSERT INTO page_authorities VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    a.peer_id,
                    &a.bearer_sha256[..],
                    ids,
                    r.id,
                    r.x25519_public_key,
                    r.x25519_key_id,
                    now
                ],
            )?;
            Ok(())
        })
    }

    /// Every page authority.
    pub fn authorities(&self) -> Result<Vec<Authority>> {
        self.read(|c| {
            let Some(c) = c else { return Ok(Vec::new()) };
            let mut st = c.prepare_cached(
                "SELECT peer_id, bearer_sha256, collection_ids, recipient_id, recipient_x25519_public_key, \
                 recipient_x25519_key_id FROM page_authorities ORDER BY peer_id",
            )?;
            let rows = st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (peer_id, digest, ids, rid, key, kid) = row?;
                out.push(Authority {
                    peer_id,
                    bearer_sha256: digest
                        .try_into()
                        .map_err(|_| Error::new(Code::IntegrityError, "stored bearer digest is malformed"))?,
                    collection_ids: serde_json::from_str(&ids)
                        .map_err(|_| Error::new(Code::IntegrityError, "stored collection list is malformed"))?,
                    recipient: Recipient {
                        id: rid,
                        x25519_public_key: key,
                        x25519_key_id: kid,
                    },
                });
            }
            Ok(out)
        })
    }

    /// Removes a page authority; whether it existed.
    pub fn remove_authority(&self, peer_id: &str, now: &str) -> Result<bool> {
        self.write(now, |c| {
            Ok(c.execute("DELETE FROM page_authorities WHERE peer_id = ?1", [peer_id])? > 0)
        })
    }

    /// Adds a peer.
    pub fn add_peer(&self, p: &Peer, now: &str) -> Result<()> {
        check_peer_id(&p.peer_id)?;
        if !is_node_id(&p.expected_node_id) {
            return Err(Error::new(
                Code::InvalidPeer,
                "expected node id must be 1-512 characters without controls",
            ));
        }
        if !(1..=2048).contains(&super::adds::jcs::utf16_len(&p.publisher.id))
            || b64u_fixed::<32>(&p.publisher.ed25519_public_key, "k").is_err()
        {
            return Err(Error::new(
                Code::InvalidPeer,
                "the publisher pin is invalid",
            ));
        }
        let pk = b64u_fixed::<32>(&p.publisher.ed25519_public_key, "k")
            .map_err(|_| Error::new(Code::InvalidPeer, "the publisher key is invalid"))?;
        crate::wire::ed25519::check_point(&pk).map_err(|e| {
            Error::new(
                Code::InvalidPeer,
                format!("the publisher key is refused: {}", e.message()),
            )
        })?;
        self.write(now, |c| {
            let dup: Option<String> = c
                .query_row(
                    "SELECT peer_id FROM peers WHERE peer_id = ?1",
                    [&p.peer_id],
                    |r| r.get(0),
                )
                .optional()?;
            if dup.is_some() {
                return Err(Error::new(
                    Code::DuplicatePeer,
                    format!("peer {:?} is already configured", p.peer_id),
                ));
            }
            c.execute(
                "INSERT INTO peers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    p.peer_id,
                    p.base_url,
                    p.expected_node_id,
                    p.publisher.id,
                    p.publisher.ed25519_public_key,
                    p.bearer,
                    p.ca_pem,
                    now
                ],
            )?;
            Ok(())
        })
    }

    /// Removes a peer (its checkpoints stay, bound to the old
    /// configuration); whether it existed.
    pub fn remove_peer(&self, peer_id: &str, now: &str) -> Result<bool> {
        self.write(now, |c| {
            Ok(c.execute("DELETE FROM peers WHERE peer_id = ?1", [peer_id])? > 0)
        })
    }

    /// Every peer.
    pub fn peers(&self) -> Result<Vec<Peer>> {
        self.read(|c| {
            let Some(c) = c else { return Ok(Vec::new()) };
            let mut st = c.prepare_cached(
                "SELECT peer_id, base_url, expected_node_id, publisher_id, publisher_ed25519_public_key, \
                 bearer, ca_pem FROM peers ORDER BY peer_id",
            )?;
            let rows = st.query_map([], |r| {
                Ok(Peer {
                    peer_id: r.get(0)?,
                    base_url: r.get(1)?,
                    expected_node_id: r.get(2)?,
                    publisher: Principal {
                        id: r.get(3)?,
                        ed25519_public_key: r.get(4)?,
                    },
                    bearer: r.get(5)?,
                    ca_pem: r.get(6)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// One peer, or `peer_not_configured`.
    pub fn peer(&self, peer_id: &str) -> Result<Peer> {
        self.peers()?
            .into_iter()
            .find(|p| p.peer_id == peer_id)
            .ok_or_else(|| {
                Error::new(
                    Code::PeerNotConfigured,
                    format!("peer {peer_id:?} is not configured"),
                )
            })
    }

    /// The checkpoint of (peer, collection), re-validated.
    pub fn checkpoint(&self, peer_id: &str, collection_id: &str) -> Result<Option<Checkpoint>> {
        self.read(|c| {
            let Some(c) = c else { return Ok(None) };
            let row = c
                .prepare_cached(
                    "SELECT peer_base_url, origin_node_id, feed_id, publisher_id, publisher_ed25519_public_key, \
                     cursor, last_applied_at, records_inserted, records_existing, tombstones_applied \
                     FROM sync_checkpoints_v1 WHERE peer_id = ?1 AND collection_id = ?2",
                )?
                .query_row([peer_id, collection_id], |r| {
                    Ok((
                        (r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?),
                        (r.get::<_, String>(3)?, r.get::<_, String>(4)?, r.get::<_, String>(5)?),
                        r.get::<_, String>(6)?,
                        (r.get::<_, i64>(7)?, r.get::<_, i64>(8)?, r.get::<_, i64>(9)?),
                    ))
                })
                .optional()?;
            let Some(((url, node, feed), (pid, pkey, cursor), at, (ins, ex, tomb))) = row else {
                return Ok(None);
            };
            let bad = || Error::new(Code::InvalidCheckpoint, "the stored checkpoint is invalid");
            if url.is_empty()
                || !is_node_id(&node)
                || !is_feed_id(&feed)
                || pid.is_empty()
                || pkey.is_empty()
                || !is_cursor(&cursor)
                || super::wire::parse_instant(&at).is_none()
                || ins < 0
                || ex < 0
                || tomb < 0
            {
                return Err(bad());
            }
            Ok(Some(Checkpoint {
                peer_base_url: url,
                origin_node_id: node,
                feed_id: feed,
                publisher_id: pid,
                publisher_ed25519_public_key: pkey,
                cursor,
                last_applied_at: at,
                records_inserted: ins as u64,
                records_existing: ex as u64,
                tombstones_applied: tomb as u64,
            }))
        })
    }

    /// Writes a checkpoint (after a whole page was applied).
    pub fn save_checkpoint(
        &self,
        peer_id: &str,
        collection_id: &str,
        cp: &Checkpoint,
        now: &str,
    ) -> Result<()> {
        self.write(now, |c| upsert_checkpoint(c, peer_id, collection_id, cp))
    }

    /// The checkpoint writes of one pull (see [`CheckpointWriter`]).
    pub fn checkpoint_writer(&self) -> CheckpointWriter<'_> {
        CheckpointWriter {
            store: self,
            lock: self.dir.keep_lock(),
            kept: Kept::default(),
        }
    }

    /// Deletes a checkpoint; whether one existed.
    pub fn delete_checkpoint(&self, peer_id: &str, collection_id: &str, now: &str) -> Result<bool> {
        self.write(now, |c| {
            Ok(c.execute(
                "DELETE FROM sync_checkpoints_v1 WHERE peer_id = ?1 AND collection_id = ?2",
                [peer_id, collection_id],
            )? > 0)
        })
    }

    /// Takes the cross-process pull lock of (peer, collection) without
    /// waiting: `sync_in_progress` when another pull or reset holds it.
    pub fn pull_lock(&self, peer_id: &str, collection_id: &str) -> Result<PullLock> {
        let locks = {
            let lock = self.dir.lock(self.timeout)?;
            self.dir.ensure_subdir("sync", &lock)?;
            self.dir.ensure_subdir("sync/locks", &lock)?
        };
        let key = format!("{}:{peer_id}{collection_id}", peer_id.len());
        let name = format!(
            "{}.lock",
            data_encoding::HEXLOWER.encode(&Sha256::digest(key.as_bytes()))
        );
        match crate::store::try_lock_file(&locks.join(name))? {
            Some(held) => Ok(PullLock { _held: held }),
            None => Err(Error::new(
                Code::SyncInProgress,
                format!(
                    "a pull of peer {peer_id:?} collection {collection_id:?} is already running"
                ),
            )),
        }
    }
}

/// Held while a pull or reset of one (peer, collection) runs.
#[derive(Debug)]
pub struct PullLock {
    _held: crate::store::DirLock,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            normalize_origin("http://127.0.0.1:7742").expect("ok"),
            "http://127.0.0.1:7742"
        );
        assert_eq!(
            normalize_origin("http://localhost:1/").expect("ok"),
            "http://localhost:1"
        );
        assert_eq!(
            normalize_origin("https://Example.COM:443/").expect("ok"),
            "https://example.com"
        );
        assert_eq!(
            normalize_origin("http://[::1]:9").expect("ok"),
            "http://[::1]:9"
        );
        for bad in [
            "http://example.com",
            "https://u:p@example.com",
            "https://example.com/v1",
            "https://example.com/?q",
            "https://example.com/#f",
            "ftp://example.com",
            "example.com",
            "http://127.0.0.1.example.com",
        ] {
            assert_eq!(
                normalize_origin(bad).map_err(|e| e.code()).err(),
                Some(Code::InvalidPeer),
                "{bad}"
            );
        }
    }
}
