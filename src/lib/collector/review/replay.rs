//! Replay validation: what the authority runs on import. Given the
//! immutable snapshot, the installed profile, the request it regenerated and
//! the record that travelled in the transfer, it runs the same controller
//! against a validation-only journal (in memory) and a [`ReplayTransport`]
//! fed the record's retained trace, and requires every reservation (request
//! bytes, ticket, exposed source), every retained observation and envelope,
//! and the whole derived record (coverage, findings, outcome) to be
//! identical. Any difference is a typed refusal (`review_replay_mismatch`);
//! nothing is ever taken from the record's own summary.

use super::controller::{self, Review};
use super::journal::MemoryJournal;
use super::plan::Snapshot;
use super::transport::{ReplayTransport, mismatch};
use super::types::{ReviewProfile, ReviewRecord, ReviewRequest};
use crate::error::Result;
use serde_json::Value;

/// Validates `record` by replay (see the module docs). `Ok` means the
/// record is exactly what the controller derives from its own trace; it
/// says nothing about whether the review passed (read `record.outcome`).
pub fn validate_replay(
    snapshot: &dyn Snapshot,
    profile: &ReviewProfile,
    request: &ReviewRequest,
    record: &ReviewRecord,
) -> Result<()> {
    if record.version != 1 {
        return Err(mismatch("unsupported review record version"));
    }
    if record.request_digest != request.digest()? {
        return Err(mismatch("the record answers another review request"));
    }
    let mut journal = MemoryJournal::default();
    let mut transport = ReplayTransport::new(profile.basis, record.trace.clone());
    let review = Review {
        snapshot,
        profile,
        request,
    };
    let derived = controller::run(&review, &mut journal, &mut transport)?;
    if transport.consumed() != transport.retained() {
        return Err(mismatch(format!(
            "the record retains {} calls; the controller makes {} (an added or reordered call)",
            transport.retained(),
            transport.consumed()
        )));
    }
    let (have, want) = (record.bytes()?, derived.bytes()?);
    if have != want {
        let a: Value = serde_json::from_slice(&have)?;
        let b: Value = serde_json::from_slice(&want)?;
        let field = match (a.as_object(), b.as_object()) {
            (Some(a), Some(b)) => a
                .iter()
                .find(|(k, v)| b.get(k.as_str()) != Some(v))
                .map(|(k, _)| k.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        return Err(mismatch(format!(
            "the record is not what the controller derives from its trace (first differing member: {field})"
        ))
        .with("member", field));
    }
    Ok(())
}
