//! Sandbox runtimes for command collectors: `bwrap`, `unshare` and `oci`.
//!
//! A runtime has an observed identity — its program's path, SHA-256 and
//! version, the fixed arguments it is run with and the isolation facts they
//! give — and a digest over those, which a collector profile pins. There is
//! no fallback: a runtime that is missing, or whose identity no longer
//! matches the pin, refuses to run (`runtime_unavailable`,
//! `runtime_identity_mismatch`).
//!
//! | runtime | network | snapshot | pid namespace | /tmp | user |
//! |---|---|---|---|---|---|
//! | `bwrap` | none (own netns) | read-only bind | yes | private sized tmpfs | uid 65534 in a user namespace, no capabilities, no nested user namespaces; a dedicated host uid when the collector is root |
//! | `oci` | none (`--network none`) | read-only volume | yes | private tmpfs | 65534, no capabilities |
//!
//! `unshare` (network namespace only, the host file system shared and
//! writable) let candidate code read the collector's key and write into
//! the data directory; it is refused (`runtime_not_isolating`) at probe,
//! profile install and collect, and kept only so that old profiles decode.
//!
//! A `bwrap` run goes through [`super::sandbox`] (the collector's own
//! binary, re-executed), which applies the pinned [`SandboxLimits`] that
//! bubblewrap cannot: every rlimit, the nice value, scheduling policy, I/O
//! priority, CPU affinity, umask, signal mask and dispositions, and, when
//! the collector is root, a dedicated unprivileged uid. The limits and
//! attributes are part of the runtime identity.
//!
//! The `oci` runtime runs one digest-pinned image (`NAME@sha256:<64 hex>`)
//! that must already be in the engine's local store: it is never pulled
//! (`--pull=never`). Its identity adds the image as the engine resolved it
//! (reference, image id, manifest digest), so the identity digest a profile
//! pins covers the image too. Scratch (`/scratch`, HOME) and `/tmp` are
//! tmpfs mounts private to the container; the container is named per run
//! and its removal is confirmed after the run (`cleanup_confirmed`).
//!
//! Every run has a wall-clock limit and a per-stream output cap; both stop
//! the whole process tree. Outputs are hashed in full (up to the cap) and a
//! bounded tail is kept.

use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use super::limits::*;
mod capture;
mod digests;
mod identity;
mod launch;
mod oci;
mod probe;
mod run;
mod snapshot;
#[cfg(test)]
mod tests;

use self::capture::*;
pub use self::digests::{DIGESTS_FILE, program_digest_in};
pub use self::identity::*;
use self::launch::*;
pub use self::oci::*;
pub use self::probe::*;
pub use self::run::*;
pub use self::snapshot::*;

/// Domain string of the runtime identity digest.
pub const IDENTITY_DOMAIN: &str = "agent-task/runtime-identity/v1";

/// The runtimes a collector profile can pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeKind {
    /// bubblewrap: read-only snapshot, no network, pid namespace, private /tmp.
    Bwrap,
    /// `unshare --net --pid`: network cut only; the file system is shared.
    /// Refused everywhere (`runtime_not_isolating`); decodes for old profiles.
    Unshare,
    /// podman or docker with `--network none` and a read-only snapshot volume.
    Oci,
}

impl RuntimeKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Bwrap => "bwrap",
            RuntimeKind::Unshare => "unshare",
            RuntimeKind::Oci => "oci",
        }
    }
}

/// What the runtime's fixed arguments guarantee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationFacts {
    /// `none`: the command has its own network namespace with no route out.
    pub network: String,
    /// `read_only` (the snapshot cannot be written) or `shared_writable`.
    pub snapshot: String,
    /// Whether the command runs in its own pid namespace.
    pub pid_namespace: bool,
    /// Whether /tmp is private to the run.
    pub private_tmp: bool,
    /// `unprivileged` (uid 65534, no capabilities) or `invoking_user`.
    pub user: String,
}

/// The observed identity of a runtime on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    /// Which runtime.
    pub runtime: RuntimeKind,
    /// Absolute path of the program that is executed.
    pub program: String,
    /// SHA-256 of the program's bytes.
    pub program_sha256: Sha256Hex,
    /// The program's own version line (for OCI: client and server versions).
    pub version: String,
    /// The fixed arguments (mount plan and namespace flags) every run uses.
    pub pinned_args: Vec<String>,
    /// What those arguments guarantee.
    pub isolation: IsolationFacts,
    /// For `bwrap`: the limits every run is held to (left out otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<SandboxLimits>,
    /// For `oci` only: the pinned image as the engine resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<OciImage>,
    /// `domain_digest(IDENTITY_DOMAIN, JSON of the fields above in this order)`
    /// (`limits` and `image` are left out of that JSON when absent).
    pub digest: Sha256Hex,
}
