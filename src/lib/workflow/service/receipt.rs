//! The receipt operations of the service: `finalize`, `qualification`
//! and `land`, each in one `store::Session` (landing: one batch per
//! phase), with the attestations of a landing passed down to the
//! authority's landing protocol.

use super::ops::AgentCtx;
use crate::clock::Clock;
use crate::error::Result;
use crate::store::{Connection, DataDir, DirLock, Session};
use crate::workflow::attest;
use crate::workflow::authority::change::ChangeSel;
use crate::workflow::authority::receipt::{self, Attestations, LandRequest, RECEIPT_PLAN};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `finalize`: creates (or returns) the v2 receipt of a Change's current
/// subject from retained validated transfers; never collects.
pub fn finalize(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Value> {
    let (token, sel, scope) = (cx.token.to_owned(), sel.clone(), cx.scope.clone());
    cx.session(RECEIPT_PLAN, move |w| {
        receipt::finalize_in(w, &token, &sel, scope.as_ref())
    })
}

/// `qualification`: whether the Change's current subject qualifies (read).
pub fn qualify(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Value> {
    cx.read(receipt::qualify(cx.root, sel, cx.scope.as_ref()))
}

/// `land` (see `workflow::authority::receipt::land`).
pub fn land(root: &Path, timeout: Duration, clock: &dyn Clock, req: &LandRequest) -> Result<Value> {
    // One session for every phase of the landing protocol.
    let mut session = Session::open(root, timeout, clock, RECEIPT_PLAN)?;
    receipt::land(&mut session, req, &Notes)
}

/// Landing attestations by `workflow::attest`.
struct Notes;

impl Attestations for Notes {
    fn ensure_key(&self, dir: &DataDir, lock: &DirLock, now: &str) -> Result<()> {
        attest::key::ensure(dir, lock, now).map(drop)
    }

    fn ensure_landing_note(
        &self,
        dir: &DataDir,
        a: &Connection,
        source: &Path,
        change_id: &str,
        version: u64,
    ) -> Result<Value> {
        attest::ensure_landing_note(dir, a, source, change_id, version)
    }

    fn note_missing(&self, source: &Path, commit: &str) -> Result<bool> {
        attest::note_missing(source, commit)
    }
}
