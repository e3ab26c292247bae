//! The collector operations of the service: `collector-claim`, the
//! transfer import, and the local authority a collection runs for (the
//! service's side of `collector::collect::{Authority, Uploader}`).

use super::ctx::AgentCtx;
use crate::clock::Clock;
use crate::collector::collect::{Authority, Uploader};
use crate::collector::review::ReviewProfile;
use crate::collector::review::wire::ReviewDescriptor;
use crate::collector::transfer::{self, CollectorDescriptor};
use crate::error::Result;
use crate::store::{Access, CommitOrder, Deferred, Plan};
use crate::workflow::authority::{collector, review, schema};
use crate::workflow::journal;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `collector-claim`: claims a command task for the current collector
/// profile's registration and returns the authority-derived descriptor.
pub fn collector_claim(
    cx: &AgentCtx<'_>,
    req: &super::requests::CollectorClaimRequest,
) -> Result<Deferred<Value>> {
    let (task_id, request_id) = (req.task_id.clone(), req.request_id.clone());
    let scope = cx.scope.clone();
    cx.mutate_deferred(move |j, a, who, now| {
        collector::collector_claim(&task_id, &request_id, scope.as_ref())(j, a, who, now)
    })
}

/// The session of a transfer import: the retained transfer (authority)
/// commits first, so a retry finds it and repairs the journal's attempt.
const IMPORT_PLAN: Plan = Plan {
    dbs: &[
        (&journal::SPEC, Access::Write),
        (&schema::SPEC, Access::Write),
    ],
    order: CommitOrder::Reversed,
};

/// Imports a signed transfer (see `workflow::authority::collector::
/// import_in`). The slow part runs before the unit of work (under
/// `serve`, before the writer sees it): the envelope is opened, the
/// transfer validated against a read snapshot (signature, bindings,
/// record; `collector::prevalidate`) and its bytes stored and fsynced in
/// the CAS, so a refused transfer never reaches the writer, and an
/// accepted one is not validated again: the unit of work rechecks only
/// what can change in between (`collector::import_in`: the derived
/// descriptor's bindings, the attempt's fence and lease, the
/// registration, profile, grant and subject). A refused import leaves no
/// new journal behind.
pub fn import(cx: &AgentCtx<'_>, bytes: &[u8]) -> Result<Deferred<Value>> {
    let env = transfer::open(bytes)?;
    let digest = transfer::transfer_digest(bytes);
    let now_ms = crate::clock::unix_millis(cx.clock.now());
    let pre = collector::prevalidate(cx.root, cx.token, now_ms, bytes, &env, &digest)?;
    crate::testhooks::import_pause_after_prevalidate();
    let (token, bytes) = (cx.token.to_owned(), bytes.to_vec());
    cx.session_deferred(IMPORT_PLAN, move |w| {
        collector::import_in(w, &token, &bytes, &env, digest, pre)
    })
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
        let cx = AgentCtx {
            root: self.root,
            timeout: self.timeout,
            clock: self.clock,
            token: self.token,
            writer: None,
            scope: None,
        };
        import(&cx, bytes)?.wait()
    }
}

impl Authority for LocalUpload<'_> {
    fn recheck_descriptor(&self, d: &CollectorDescriptor) -> Result<()> {
        collector::recheck_descriptor(self.root, self.clock, self.token, d)
    }

    fn recheck_review(&self, d: &ReviewDescriptor) -> Result<ReviewProfile> {
        review::recheck_descriptor(self.root, self.clock, self.token, d)
    }

    fn review_profile(&self, d: &ReviewDescriptor) -> Result<ReviewProfile> {
        review::descriptor_profile(self.root, d)
    }
}
