//! The collector operations of the service: `collector-claim`, the
//! transfer import, and the local authority a collection runs for (the
//! service's side of `collector::collect::{Authority, Uploader}`).

use super::ops::AgentCtx;
use crate::clock::Clock;
use crate::collector::collect::{Authority, Uploader};
use crate::collector::transfer::{self, CollectorDescriptor};
use crate::error::Result;
use crate::store::{Access, CommitOrder, Plan, Session};
use crate::workflow::authority::{collector, schema};
use crate::workflow::journal;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `collector-claim`: claims a command task for the current collector
/// profile's registration and returns the authority-derived descriptor.
pub fn collector_claim(cx: &AgentCtx<'_>, task_id: &str, request_id: &str) -> Result<Value> {
    cx.mutate(collector::collector_claim(task_id, request_id))
}

/// The session of a transfer import: the retained transfer (authority)
/// commits first, so a retry finds it and repairs the journal's attempt.
const IMPORT_PLAN: Plan = Plan {
    journal: (&journal::SPEC, Access::Write),
    authority: (&schema::SPEC, Access::Write),
    order: CommitOrder::AuthorityFirst,
};

/// Imports a signed transfer (see `workflow::authority::collector::
/// import_in`). The envelope is opened before the lock is taken; a refused
/// import leaves no new journal behind.
pub fn import(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    token: &str,
    bytes: &[u8],
) -> Result<Value> {
    let env = transfer::open(bytes)?;
    let digest = transfer::transfer_digest(bytes);
    let mut session = Session::open(root, timeout, clock, IMPORT_PLAN)?;
    let out = session.apply(|w| collector::import_in(w, token, bytes, &env, digest))?;
    session.commit()?;
    Ok(out)
}

/// Rechecks and uploads against the authority of a local data directory.
pub struct LocalUpload<'a> {
    /// Data directory.
    pub root: &'a Path,
    /// Lock wait.
    pub timeout: Duration,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Token text.
    pub token: &'a str,
}

impl Uploader for LocalUpload<'_> {
    fn upload(&self, bytes: &[u8]) -> Result<Value> {
        import(self.root, self.timeout, self.clock, self.token, bytes)
    }
}

impl Authority for LocalUpload<'_> {
    fn recheck_descriptor(&self, d: &CollectorDescriptor) -> Result<()> {
        collector::recheck_descriptor(self.root, self.clock, self.token, d)
    }
}
