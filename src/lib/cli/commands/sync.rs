//! `agent-task sync …`: agent-data-sync/v1 (identity, page authorities,
//! peers, pull, status, reset). Behaviour lives in `crate::sync`.

use crate::cli::commands::{Reply, to_value};
use crate::cli::ctx::Ctx;
use crate::clock::rfc3339_millis;
use crate::error::{Code, Error, Result};
use crate::store::DataDir;
use crate::sync::adds::encoding::{b64u_fixed, x25519_key_id};
use crate::sync::adds::grant::Recipient;
use crate::sync::adds::object::Principal;
use crate::sync::pull::{self, Progress, PullRequest};
use crate::sync::store::{
    Authority, Peer, SyncStore, normalize_origin, read_ca_file, read_secret_file,
};
use clap::Subcommand;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// `sync` subcommands.
#[derive(Debug, Subcommand)]
pub enum SyncCommand {
    /// Create this node's sync identity (Ed25519 publisher + X25519 recipient keys, owner-private).
    Keygen(KeygenArgs),
    /// Print the public identity another operator pins (ids, keys, key id).
    Identity,
    /// Source side: page authorities (who may page which collections, for which recipient).
    #[command(subcommand)]
    Authority(AuthorityCommand),
    /// Destination side: peers this node pulls from.
    #[command(subcommand)]
    Peer(PeerCommand),
    /// Pull pages of one collection from a configured peer.
    Pull(PullArgs),
    /// The checkpoint status of one (peer, collection) (never the raw cursor).
    Status(SelArgs),
    /// Delete the checkpoint of one (peer, collection); imported data stays.
    Reset(SelArgs),
}

/// `sync keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// The identity id (opaque, 1-2048 characters, e.g. did:example:node-a).
    #[arg(long)]
    pub id: String,
    /// Restore keys from a backup instead of generating them: an owner-only
    /// JSON file {"ed25519_seed": b64u(32), "x25519_secret": b64u(32)}.
    #[arg(long, value_name = "FILE")]
    pub import: Option<PathBuf>,
}

/// `sync authority …`.
#[derive(Debug, Subcommand)]
pub enum AuthorityCommand {
    /// Add a page authority.
    Add(AuthorityAddArgs),
    /// List page authorities (never their bearers).
    List,
    /// Remove a page authority (its bearer stops working at once).
    Remove(PeerSel),
}

/// `sync authority add`.
#[derive(Debug, clap::Args)]
pub struct AuthorityAddArgs {
    /// Local label of the destination (never on the wire).
    #[arg(long)]
    pub peer: String,
    /// File holding the page-only bearer (owner-only, not a symlink; only its SHA-256 is kept).
    #[arg(long, value_name = "F")]
    pub bearer_file: PathBuf,
    /// A collection this bearer may page (repeat for more).
    #[arg(long = "collection", required = true)]
    pub collections: Vec<String>,
    /// The destination's identity id (the grant audience).
    #[arg(long)]
    pub recipient_id: String,
    /// The destination's X25519 public key (43 characters of base64url).
    #[arg(long, allow_hyphen_values = true)]
    pub recipient_key: String,
    /// The destination's key id; checked against the key when given.
    #[arg(long, allow_hyphen_values = true)]
    pub recipient_key_id: Option<String>,
}

/// `--peer P`.
#[derive(Debug, clap::Args)]
pub struct PeerSel {
    /// The alias.
    #[arg(long)]
    pub peer: String,
}

/// `sync peer …`.
#[derive(Debug, Subcommand)]
pub enum PeerCommand {
    /// Configure a peer to pull from.
    Add(PeerAddArgs),
    /// List peers (never their bearers).
    List,
    /// Remove a peer; its checkpoints stay and refuse a re-added peer with
    /// another origin, node id or publisher until `sync reset`.
    Remove(PeerSel),
}

/// `sync peer add`.
#[derive(Debug, clap::Args)]
pub struct PeerAddArgs {
    /// Alias (the only selector a pull takes).
    #[arg(long)]
    pub peer: String,
    /// Exact origin: https://host[:port] (http only on loopback); no path, query or userinfo.
    #[arg(long)]
    pub origin: String,
    /// The node id every page must carry.
    #[arg(long)]
    pub node_id: String,
    /// Pinned publisher id.
    #[arg(long)]
    pub publisher_id: String,
    /// Pinned publisher Ed25519 public key (base64url).
    #[arg(long, allow_hyphen_values = true)]
    pub publisher_key: String,
    /// File holding the page bearer the peer's operator issued (owner-only, not a symlink).
    #[arg(long, value_name = "F")]
    pub page_token_file: PathBuf,
    /// PEM CA certificates to trust for this peer's HTTPS (instead of the web roots).
    #[arg(long, value_name = "F")]
    pub ca_file: Option<PathBuf>,
}

/// `sync pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// Peer alias.
    #[arg(long)]
    pub peer: String,
    /// Collection.
    #[arg(long)]
    pub collection: String,
    /// Changes per page (1-100, default 10).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Pages at most (1-100, default 10).
    #[arg(long)]
    pub max_pages: Option<u64>,
    /// Record-content bytes per page (default 1 MiB, at most 10 MiB).
    #[arg(long)]
    pub max_plaintext_bytes: Option<u64>,
}

/// `--peer P --collection C`.
#[derive(Debug, clap::Args)]
pub struct SelArgs {
    /// Peer alias.
    #[arg(long)]
    pub peer: String,
    /// Collection.
    #[arg(long)]
    pub collection: String,
}

pub(crate) fn store(ctx: &Ctx) -> Result<SyncStore> {
    Ok(SyncStore::new(
        &DataDir::open(ctx.data_dir()?)?,
        ctx.lock_timeout,
    ))
}

fn now(ctx: &Ctx) -> String {
    rfc3339_millis(ctx.clock.now())
}

/// Runs a `sync` subcommand.
pub fn dispatch(ctx: &Ctx, cmd: SyncCommand) -> Result<Reply> {
    match cmd {
        SyncCommand::Keygen(a) => {
            let st = store(ctx)?;
            let id = match &a.import {
                None => st.keygen(&a.id, &now(ctx))?,
                Some(f) => {
                    let (seed, x) = read_key_backup(f)?;
                    st.install_identity(&a.id, seed, x, &now(ctx))?
                }
            };
            let mut v = id.public_json();
            v["created"] = true.into();
            Ok(v.into())
        }
        SyncCommand::Identity => Ok(store(ctx)?.identity()?.public_json().into()),
        SyncCommand::Authority(AuthorityCommand::Add(a)) => {
            let bearer = read_secret_file(&a.bearer_file)?;
            let key = b64u_fixed::<32>(&a.recipient_key, "key").map_err(|_| {
                Error::new(
                    Code::InvalidServerOption,
                    "--recipient-key must be 32 bytes of canonical base64url",
                )
            })?;
            if let Some(k) = &a.recipient_key_id
                && *k != x25519_key_id(&key)
            {
                return Err(Error::new(
                    Code::InvalidServerOption,
                    "--recipient-key-id is not the key's fingerprint",
                ));
            }
            let auth = Authority {
                peer_id: a.peer.clone(),
                bearer_sha256: Sha256::digest(bearer.as_bytes()).into(),
                collection_ids: a.collections.clone(),
                recipient: Recipient::new(&a.recipient_id, &key),
            };
            store(ctx)?.add_authority(&auth, &now(ctx))?;
            to_value(&authority_json(&auth)).map(Reply::from)
        }
        SyncCommand::Authority(AuthorityCommand::List) => {
            let list = store(ctx)?.authorities()?;
            to_value(&Authorities {
                authorities: list.iter().map(authority_json).collect(),
            })
            .map(Reply::from)
        }
        SyncCommand::Authority(AuthorityCommand::Remove(a)) => {
            let removed = store(ctx)?.remove_authority(&a.peer, &now(ctx))?;
            if !removed {
                return Err(Error::new(
                    Code::NotFound,
                    format!("no page authority {:?}", a.peer),
                ));
            }
            to_value(&Removed {
                peer_id: &a.peer,
                removed: true,
            })
            .map(Reply::from)
        }
        SyncCommand::Peer(PeerCommand::Add(a)) => {
            let peer = Peer {
                peer_id: a.peer.clone(),
                base_url: normalize_origin(&a.origin)?,
                expected_node_id: a.node_id.clone(),
                publisher: Principal {
                    id: a.publisher_id.clone(),
                    ed25519_public_key: a.publisher_key.clone(),
                },
                bearer: read_secret_file(&a.page_token_file)?,
                ca_pem: a.ca_file.as_deref().map(read_ca_file).transpose()?,
            };
            store(ctx)?.add_peer(&peer, &now(ctx))?;
            to_value(&peer_json(&peer)).map(Reply::from)
        }
        SyncCommand::Peer(PeerCommand::Remove(a)) => {
            if !store(ctx)?.remove_peer(&a.peer, &now(ctx))? {
                return Err(Error::new(
                    Code::PeerNotConfigured,
                    format!("peer {:?} is not configured", a.peer),
                ));
            }
            to_value(&Removed {
                peer_id: &a.peer,
                removed: true,
            })
            .map(Reply::from)
        }
        SyncCommand::Peer(PeerCommand::List) => {
            let list = store(ctx)?.peers()?;
            to_value(&Peers {
                peers: list.iter().map(peer_json).collect(),
            })
            .map(Reply::from)
        }
        SyncCommand::Pull(a) => {
            let node = super::data::open_node(ctx)?;
            let tty = std::io::stderr().is_terminal();
            let mut show = |p: &Progress| {
                if tty {
                    let mut e = std::io::stderr().lock();
                    let _ = write!(
                        e,
                        "\rsync pull: {} pages, {} changes, {} new records, {} bytes",
                        p.pages, p.changes, p.records, p.bytes
                    );
                    let _ = e.flush();
                }
            };
            let res = pull::pull(
                &node,
                &PullRequest {
                    peer_id: a.peer,
                    collection_id: a.collection,
                    limit: a.limit,
                    max_pages: a.max_pages,
                    max_plaintext_bytes: a.max_plaintext_bytes,
                },
                &mut show,
            );
            if tty {
                let _ = writeln!(std::io::stderr().lock());
            }
            to_value(&res?).map(Reply::from)
        }
        SyncCommand::Status(a) => {
            let node = super::data::open_node(ctx)?;
            to_value(&pull::status(&node, &a.peer, &a.collection)?).map(Reply::from)
        }
        SyncCommand::Reset(a) => {
            let node = super::data::open_node(ctx)?;
            let existed = pull::reset(&node, &a.peer, &a.collection)?;
            to_value(&ResetOutput {
                collection_id: &a.collection,
                peer_id: &a.peer,
                reset: existed,
            })
            .map(Reply::from)
        }
    }
}

fn read_key_backup(path: &std::path::Path) -> Result<([u8; 32], [u8; 32])> {
    use crate::store::private_fs::{Kind, check_private, open_nofollow_read};
    use std::io::Read;
    if !check_private(path, Kind::File)? {
        return Err(Error::new(
            Code::NotFound,
            format!("{} does not exist", path.display()),
        ));
    }
    let mut buf = Vec::new();
    open_nofollow_read(path)?
        .take(4097)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("read", path, e))?;
    let bad = || {
        Error::new(
            Code::InvalidInput,
            "the key file must be {\"ed25519_seed\", \"x25519_secret\"} (base64url of 32 bytes each)",
        )
    };
    let v: Value = serde_json::from_slice(&buf).map_err(|_| bad())?;
    let m = v.as_object().filter(|m| m.len() == 2).ok_or_else(bad)?;
    let get = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .and_then(|s| b64u_fixed::<32>(s, k).ok())
            .ok_or_else(bad)
    };
    Ok((get("ed25519_seed")?, get("x25519_secret")?))
}

// The outputs below are JSON objects: their fields are in key order, the
// order the printed `Value` has.

/// A page authority as `sync authority add`/`list` print it.
#[derive(Serialize)]
struct AuthorityOutput<'a> {
    collection_ids: &'a [String],
    peer_id: &'a str,
    recipient: Value,
}

/// `sync authority list`.
#[derive(Serialize)]
struct Authorities<'a> {
    authorities: Vec<AuthorityOutput<'a>>,
}

/// A peer as `sync peer add`/`list` print it (never its bearer).
#[derive(Serialize)]
struct PeerOutput<'a> {
    base_url: &'a str,
    ca_file: bool,
    expected_node_id: &'a str,
    expected_publisher: Value,
    peer_id: &'a str,
}

/// `sync peer list`.
#[derive(Serialize)]
struct Peers<'a> {
    peers: Vec<PeerOutput<'a>>,
}

/// A removed peer or page authority.
#[derive(Serialize)]
struct Removed<'a> {
    peer_id: &'a str,
    removed: bool,
}

/// `sync reset`.
#[derive(Serialize)]
struct ResetOutput<'a> {
    collection_id: &'a str,
    peer_id: &'a str,
    reset: bool,
}

fn authority_json(a: &Authority) -> AuthorityOutput<'_> {
    AuthorityOutput {
        collection_ids: &a.collection_ids,
        peer_id: &a.peer_id,
        recipient: a.recipient.to_json(),
    }
}

fn peer_json(p: &Peer) -> PeerOutput<'_> {
    PeerOutput {
        base_url: &p.base_url,
        ca_file: p.ca_pem.is_some(),
        expected_node_id: &p.expected_node_id,
        expected_publisher: p.publisher.to_json(),
        peer_id: &p.peer_id,
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    /// One key in 64 starts with `-` in base64url: such a key is a value,
    /// never an unknown flag.
    #[test]
    fn keys_starting_with_a_hyphen_parse_as_values() {
        let key = "-iQ2F7s6k3vN0m9pL8xYtRz1cWbVaUe4dHgJo5qSfK0";
        let peer = Cli::try_parse_from([
            "agent-task",
            "sync",
            "peer",
            "add",
            "--peer",
            "a",
            "--origin",
            "http://127.0.0.1:1",
            "--node-id",
            "n",
            "--publisher-id",
            "did:example:a",
            "--publisher-key",
            key,
            "--page-token-file",
            "t",
        ]);
        assert!(peer.is_ok(), "{peer:?}");
        let auth = Cli::try_parse_from([
            "agent-task",
            "sync",
            "authority",
            "add",
            "--peer",
            "b",
            "--bearer-file",
            "t",
            "--collection",
            "default",
            "--recipient-id",
            "did:example:b",
            "--recipient-key",
            key,
            "--recipient-key-id",
            key,
        ]);
        assert!(auth.is_ok(), "{auth:?}");
    }
}
