//! `data init`: creating (or re-checking) a node's identity, config and
//! collections.

use super::super::collection;
use super::super::config::{self, NodeConfig};
use super::super::writer;
use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::store::{DataDir, OptionalExtension};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `data init` asks for.
#[derive(Debug, Clone, Default)]
pub struct InitRequest {
    /// A node id to assert (a different persisted one is `node_id_conflict`).
    pub node_id: Option<String>,
    /// File-collector roots to add to the node config.
    pub file_roots: Vec<PathBuf>,
}

/// What `data init` reports.
#[derive(Debug, Serialize)]
pub struct InitOutput {
    /// The data directory.
    pub data_dir: String,
    /// The persisted node id.
    pub node_id: String,
    /// The persisted change-feed id.
    pub feed_id: String,
    /// Whether this call created the node identity.
    pub created: bool,
    /// The config file.
    pub config_file: String,
    /// Configured file roots (canonical).
    pub file_roots: Vec<String>,
    /// Collection ids on the node.
    pub collections: Vec<String>,
}

pub(super) fn new_uuid() -> Result<String> {
    let b = crate::wire::random_bytes::<16>()?;
    Ok(uuid::Builder::from_random_bytes(b)
        .into_uuid()
        .hyphenated()
        .to_string())
}

/// `^feed_<uuid v1-5, RFC 4122 variant>$`: a node's feed id (also what
/// a sync peer's pages must carry).
pub fn is_feed_id(s: &str) -> bool {
    let Some(u) = s.strip_prefix("feed_") else {
        return false;
    };
    let b = u.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    b.len() == 36
        && b[8] == b'-'
        && b[13] == b'-'
        && b[18] == b'-'
        && b[23] == b'-'
        && hex(0..8)
        && hex(9..13)
        && (b'1'..=b'5').contains(&b[14])
        && hex(15..18)
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
        && hex(20..23)
        && hex(24..36)
}

fn valid_node_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 512 && !s.chars().any(char::is_control)
}

/// Creates (or re-checks) the data node in `root`: the data directory if
/// needed, `data/data.sqlite`, the node and feed ids, the config file and
/// the collections it declares plus `default`. Idempotent.
pub fn init(
    root: &Path,
    req: &InitRequest,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<InitOutput> {
    if let Some(id) = &req.node_id
        && !valid_node_id(id)
    {
        return Err(Error::new(
            Code::InvalidInput,
            "node id must be 1-512 characters without control characters",
        ));
    }
    let mut roots = Vec::new();
    for r in &req.file_roots {
        roots.push(config::canonical_root(r)?);
    }
    let (dir, lock) = DataDir::create(root, timeout)?;
    let sub = dir.ensure_subdir("data", &lock)?;
    let mut cfg = NodeConfig::load(&sub)?;
    let mut defs = vec![collection::default_definition()];
    defs.extend(cfg.collections.iter().cloned());
    let normalized = defs
        .iter()
        .map(collection::normalize)
        .collect::<Result<Vec<_>>>()?;
    let now = rfc3339_millis(clock.now());
    let mut conn = writer::open(&dir, &now, &lock)?;
    let tx = conn.transaction_with_behavior(crate::store::TransactionBehavior::Immediate)?;
    let meta = |k: &str| -> Result<Option<String>> {
        Ok(tx
            .query_row("SELECT value FROM node_meta WHERE key=?1", [k], |r| {
                r.get(0)
            })
            .optional()?)
    };
    let (node_id, created) = match (meta("node_id")?, &req.node_id) {
        (Some(have), Some(want)) if &have != want => {
            return Err(Error::new(
                Code::NodeIdConflict,
                format!("this node's id is {have:?}, not {want:?}"),
            ));
        }
        (Some(have), _) => (have, false),
        (None, want) => {
            let id = match want {
                Some(w) => w.clone(),
                None => format!("node_{}", new_uuid()?),
            };
            tx.execute(
                "INSERT INTO node_meta(key, value) VALUES ('node_id', ?1)",
                [&id],
            )?;
            (id, true)
        }
    };
    let feed_id = match meta("change_feed_id")? {
        Some(f) => f,
        None => {
            let f = format!("feed_{}", new_uuid()?);
            tx.execute(
                "INSERT INTO node_meta(key, value) VALUES ('change_feed_id', ?1)",
                [&f],
            )?;
            f
        }
    };
    if !is_feed_id(&feed_id) {
        return Err(Error::new(
            Code::InvalidFeedId,
            "the persisted change feed id is malformed",
        ));
    }
    for def in normalized {
        writer::put_collection(&tx, def, &now)?;
    }
    tx.commit()?;
    for r in roots {
        if !cfg.file_roots.contains(&r) {
            cfg.file_roots.push(r);
        }
    }
    cfg.version = 1;
    cfg.save(&sub)?;
    let collections: Vec<String> = conn
        .prepare("SELECT id FROM collections ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    drop(lock);
    Ok(InitOutput {
        data_dir: dir.root().display().to_string(),
        node_id,
        feed_id,
        created,
        config_file: sub.join(config::FILE).display().to_string(),
        file_roots: cfg
            .file_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        collections,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_ids() {
        assert!(is_feed_id("feed_123e4567-e89b-42d3-a456-426614174000"));
        assert!(!is_feed_id("feed_123e4567-e89b-62d3-a456-426614174000"));
        let f = format!("feed_{}", new_uuid().expect("uuid"));
        assert!(is_feed_id(&f), "{f}");
    }
}
