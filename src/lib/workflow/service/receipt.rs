//! The receipt operations of the service: `finalize` and `qualification`,
//! each in one `store::Session` (`land` is [`super::land`]).

use super::ctx::AgentCtx;
use crate::error::Result;
use crate::store::Deferred;
use crate::workflow::authority::change::ChangeSel;
use crate::workflow::authority::receipt::{self, RECEIPT_PLAN};
use serde_json::Value;

/// `finalize`: creates (or returns) the v2 receipt of a Change's current
/// subject from retained validated transfers; never collects.
pub fn finalize(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Deferred<Value>> {
    let (token, sel, scope) = (cx.token.to_owned(), sel.clone(), cx.scope.clone());
    cx.session_deferred(RECEIPT_PLAN, move |w| {
        receipt::finalize_in(w, &token, &sel, scope.as_ref())
    })
}

/// `qualification`: whether the Change's current subject qualifies (read).
pub fn qualify(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Value> {
    cx.read(receipt::qualify(cx.root, sel, cx.scope.as_ref()))
}
