//! Durable reservation and outcome of every review call.
//!
//! Each call is reserved (its canonical request and ticket) and the
//! reservation made durable **before** the executable runs; its outcome
//! (the observation and the response envelope exactly as received) is
//! written after. A reservation without an outcome is a call whose result
//! is unknown: it is never dispatched again, and the review fails with
//! `review_call_uncertain` (`docs/review.md`, "The crash rule").
//!
//! [`FileJournal`] keeps them as sealed files (the command collector's MAC,
//! [`crate::collector::state`]) in an owner-private directory:
//!
//! ```text
//! DIR/                                 0700
//!   call-0000.reservation.sealed       0600, fsynced before the call
//!   call-0000.outcome.sealed           0600, after it
//! ```
//!
//! The MAC binds each file's role (`review-reservation`, `review-outcome`)
//! and the journal's tag (the execution it belongs to), so a genuine file
//! moved to another call's or execution's place does not verify.

use super::policy::CallRequest;
use crate::collector::state::StateKey;
use crate::contract::canonical_bytes;
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::wire::digest::Sha256Hex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest sealed reservation body.
pub const MAX_RESERVATION_BYTES: u64 = 1024 * 1024;
/// Largest sealed outcome body (a 1 MiB envelope, base64url, and the observation).
pub const MAX_OUTCOME_BYTES: u64 = 2 * 1024 * 1024;
/// Longest stderr tail kept.
pub const MAX_STDERR_TAIL: usize = 1024;

/// The durable reservation of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    /// Always 1.
    pub version: u32,
    /// `CallRequest::digest` of `request`.
    pub request_digest: Sha256Hex,
    /// The canonical call request (ticket included).
    pub request: CallRequest,
}

impl Reservation {
    /// The reservation of `request`.
    pub fn new(request: CallRequest) -> Result<Reservation> {
        Ok(Reservation {
            version: 1,
            request_digest: request.digest()?,
            request,
        })
    }
}

/// What was observed of one call, raw (the status is derived from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// Whether the executable was started.
    pub dispatched: bool,
    /// Why it could not be started.
    pub spawn_error: Option<String>,
    /// Exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Signal, if one ended it.
    pub signal: Option<i32>,
    /// Killed at its time limit.
    pub timed_out: bool,
    /// Killed for writing more than the output budget.
    pub stdout_capped: bool,
    /// Wall time from start to exit.
    pub duration_ms: u64,
    /// Bytes of the envelope (stdout).
    pub envelope_bytes: u64,
    /// SHA-256 of the envelope.
    pub envelope_sha256: Sha256Hex,
    /// The end of stderr (lossy UTF-8, at most 1024 bytes).
    pub stderr_tail: String,
    /// SHA-256 of each pinned file before the call (`null`: unreadable).
    pub executable_before: Vec<Option<Sha256Hex>>,
    /// The same after it (empty when not dispatched).
    pub executable_after: Vec<Option<Sha256Hex>>,
}

/// The retained outcome of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallOutcome {
    /// Always 1.
    pub version: u32,
    /// Call index.
    pub index: u32,
    /// The reservation's ticket.
    pub ticket: String,
    /// The observation.
    pub observation: Observation,
    /// The envelope exactly as received, base64url without padding.
    pub envelope: String,
}

impl CallOutcome {
    /// An outcome with `envelope` encoded.
    pub fn new(
        index: u32,
        ticket: String,
        observation: Observation,
        envelope: &[u8],
    ) -> CallOutcome {
        CallOutcome {
            version: 1,
            index,
            ticket,
            observation,
            envelope: data_encoding::BASE64URL_NOPAD.encode(envelope),
        }
    }

    /// The envelope bytes (canonical base64url only).
    pub fn envelope_bytes(&self) -> std::result::Result<Vec<u8>, String> {
        data_encoding::BASE64URL_NOPAD
            .decode(self.envelope.as_bytes())
            .map_err(|e| format!("the retained envelope is not canonical base64url: {e}"))
    }
}

/// One reserved call and, when known, its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEntry {
    /// The reservation.
    pub reservation: Reservation,
    /// The outcome (`null`: unknown).
    pub outcome: Option<CallOutcome>,
}

/// Where reservations and outcomes persist.
pub trait ReviewJournal {
    /// The reservation of call `index`, if any.
    fn reservation(&self, index: u32) -> Result<Option<Reservation>>;
    /// Durably reserves a call (before its effect). Refuses a second,
    /// different reservation of the same index.
    fn reserve(&mut self, r: &Reservation) -> Result<()>;
    /// The outcome of call `index`, if any.
    fn outcome(&self, index: u32) -> Result<Option<CallOutcome>>;
    /// Durably records an outcome; the call must be reserved, with no outcome yet.
    fn record(&mut self, o: &CallOutcome) -> Result<()>;
}

fn conflict(what: &str) -> Error {
    Error::new(
        Code::CollectorStateTampered,
        format!("the review journal already holds another {what} for this call"),
    )
}

/// A journal in memory (the authority's validation-only replay journal).
#[derive(Debug, Default)]
pub struct MemoryJournal {
    reservations: BTreeMap<u32, Reservation>,
    outcomes: BTreeMap<u32, CallOutcome>,
}

impl ReviewJournal for MemoryJournal {
    fn reservation(&self, index: u32) -> Result<Option<Reservation>> {
        Ok(self.reservations.get(&index).cloned())
    }

    fn reserve(&mut self, r: &Reservation) -> Result<()> {
        match self.reservations.get(&r.request.index) {
            Some(have) if have != r => Err(conflict("reservation")),
            _ => {
                self.reservations.insert(r.request.index, r.clone());
                Ok(())
            }
        }
    }

    fn outcome(&self, index: u32) -> Result<Option<CallOutcome>> {
        Ok(self.outcomes.get(&index).cloned())
    }

    fn record(&mut self, o: &CallOutcome) -> Result<()> {
        if !self.reservations.contains_key(&o.index) {
            return Err(Error::internal(
                "an outcome for a call that was not reserved",
            ));
        }
        match self.outcomes.get(&o.index) {
            Some(have) if have != o => Err(conflict("outcome")),
            _ => {
                self.outcomes.insert(o.index, o.clone());
                Ok(())
            }
        }
    }
}

/// A journal of sealed files in an owner-private directory.
pub struct FileJournal {
    dir: PathBuf,
    tag: String,
    key: StateKey,
}

const KIND_RESERVATION: &str = "review-reservation";
const KIND_OUTCOME: &str = "review-outcome";

impl FileJournal {
    /// Opens (creating if missing, 0700) the journal directory `dir`, whose
    /// parent must exist. `tag` names the execution (it is bound into every
    /// MAC); `key` seals the files (derived from the collector's signing key).
    pub fn open(dir: &Path, tag: &str, key: StateKey) -> Result<FileJournal> {
        private_fs::check_trusted_ancestors(dir)?;
        private_fs::ensure_private_dir(dir)?;
        Ok(FileJournal {
            dir: dir.to_path_buf(),
            tag: tag.to_owned(),
            key,
        })
    }

    fn path(&self, index: u32, kind: &str) -> PathBuf {
        let role = if kind == KIND_RESERVATION {
            "reservation"
        } else {
            "outcome"
        };
        self.dir.join(format!("call-{index:04}.{role}.sealed"))
    }

    fn read<T: for<'de> Deserialize<'de>>(
        &self,
        index: u32,
        kind: &str,
        max: u64,
    ) -> Result<Option<T>> {
        // The call index is part of the MAC's execution string: a file moved
        // to another call's name does not verify.
        let exec = format!("{}/{index}", self.tag);
        match self.key.read(&self.path(index, kind), kind, &exec, max)? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
                Error::new(
                    Code::CollectorStateTampered,
                    format!("a sealed {kind} does not decode: {e}"),
                )
            }),
        }
    }

    fn write<T: Serialize>(&self, index: u32, kind: &str, v: &T) -> Result<()> {
        let exec = format!("{}/{index}", self.tag);
        self.key
            .write(&self.path(index, kind), kind, &exec, &canonical_bytes(v)?)
    }
}

impl ReviewJournal for FileJournal {
    fn reservation(&self, index: u32) -> Result<Option<Reservation>> {
        let r: Option<Reservation> = self.read(index, KIND_RESERVATION, MAX_RESERVATION_BYTES)?;
        if let Some(r) = &r
            && (r.request.index != index || r.request_digest != r.request.digest()?)
        {
            return Err(Error::new(
                Code::CollectorStateTampered,
                "a sealed reservation does not match its call",
            ));
        }
        Ok(r)
    }

    fn reserve(&mut self, r: &Reservation) -> Result<()> {
        match self.reservation(r.request.index)? {
            Some(have) if &have != r => Err(conflict("reservation")),
            Some(_) => Ok(()),
            None => {
                // Created exclusively: of two writers (the collect's lock
                // on the execution keeps a second one out), one reserves
                // and the other dispatches nothing.
                let index = r.request.index;
                let exec = format!("{}/{index}", self.tag);
                let path = self.path(index, KIND_RESERVATION);
                if self
                    .key
                    .create(&path, KIND_RESERVATION, &exec, &canonical_bytes(r)?)?
                {
                    Ok(())
                } else {
                    Err(Error::new(
                        Code::ExecutionInProgress,
                        "another collect reserved this review call meanwhile; it is not dispatched here",
                    )
                    .with("call", index))
                }
            }
        }
    }

    fn outcome(&self, index: u32) -> Result<Option<CallOutcome>> {
        let o: Option<CallOutcome> = self.read(index, KIND_OUTCOME, MAX_OUTCOME_BYTES)?;
        if let Some(o) = &o
            && o.index != index
        {
            return Err(Error::new(
                Code::CollectorStateTampered,
                "a sealed outcome does not match its call",
            ));
        }
        Ok(o)
    }

    fn record(&mut self, o: &CallOutcome) -> Result<()> {
        if self.reservation(o.index)?.is_none() {
            return Err(Error::internal(
                "an outcome for a call that was not reserved",
            ));
        }
        match self.outcome(o.index)? {
            Some(have) if &have != o => Err(conflict("outcome")),
            Some(_) => Ok(()),
            None => self.write(o.index, KIND_OUTCOME, o),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::review::policy::CallRequest;
    use std::os::unix::fs::PermissionsExt;

    fn request(index: u32) -> CallRequest {
        CallRequest {
            version: 1,
            review_request_digest: Sha256Hex::digest(b"r"),
            index,
            calls: 2,
            ticket: format!("rt_{index}"),
            session_id: "s".into(),
            executable: vec![Sha256Hex::digest(b"exe")],
            flags: vec!["-p".into()],
            env: vec![],
            timeout_ms: 1000,
            max_output_bytes: 4096,
            prompt_sha256: Sha256Hex::digest(b"prompt"),
            prompt_bytes: 6,
            source_bytes: 1,
            parts: vec![],
        }
    }

    fn outcome(index: u32) -> CallOutcome {
        CallOutcome::new(
            index,
            format!("rt_{index}"),
            Observation {
                dispatched: true,
                spawn_error: None,
                exit_code: Some(0),
                signal: None,
                timed_out: false,
                stdout_capped: false,
                duration_ms: 5,
                envelope_bytes: 2,
                envelope_sha256: Sha256Hex::digest(b"{}"),
                stderr_tail: String::new(),
                executable_before: vec![Some(Sha256Hex::digest(b"exe"))],
                executable_after: vec![Some(Sha256Hex::digest(b"exe"))],
            },
            b"{}",
        )
    }

    #[test]
    fn file_journal_is_durable_sealed_and_refuses_moves() {
        let t = tempfile::tempdir().expect("tmp");
        let dir = t.path().join("j");
        let key = || StateKey::derive(&[3u8; 32]).expect("key");
        let mut j = FileJournal::open(&dir, "exec-a", key()).expect("open");
        let r0 = Reservation::new(request(0)).expect("r");
        assert!(
            j.record(&outcome(0)).is_err(),
            "no outcome before a reservation"
        );
        j.reserve(&r0).expect("reserve");
        j.reserve(&r0).expect("same again");
        let mut other = r0.clone();
        other.request.prompt_bytes = 7;
        let other = Reservation::new(other.request).expect("r");
        assert_eq!(
            j.reserve(&other).expect_err("conflict").code(),
            Code::CollectorStateTampered
        );
        j.record(&outcome(0)).expect("record");
        let md = std::fs::metadata(dir.join("call-0000.outcome.sealed")).expect("md");
        assert_eq!(md.permissions().mode() & 0o777, 0o600);
        let j2 = FileJournal::open(&dir, "exec-a", key()).expect("reopen");
        assert_eq!(j2.reservation(0).expect("read"), Some(r0.clone()));
        assert_eq!(j2.outcome(0).expect("read"), Some(outcome(0)));
        assert_eq!(j2.outcome(1).expect("read"), None);
        // Another execution's key binding: the same files do not verify.
        let j3 = FileJournal::open(&dir, "exec-b", key()).expect("open");
        assert_eq!(
            j3.reservation(0).expect_err("moved").code(),
            Code::CollectorStateTampered
        );
        // A file moved to another call's name does not verify.
        std::fs::copy(
            dir.join("call-0000.reservation.sealed"),
            dir.join("call-0001.reservation.sealed"),
        )
        .expect("copy");
        assert_eq!(
            j2.reservation(1).expect_err("moved").code(),
            Code::CollectorStateTampered
        );
        // A planted plain file does not verify.
        std::fs::write(dir.join("call-0001.outcome.sealed"), b"{}").expect("plant");
        std::fs::set_permissions(
            dir.join("call-0001.outcome.sealed"),
            std::fs::Permissions::from_mode(0o600),
        )
        .expect("chmod");
        assert_eq!(
            j2.outcome(1).expect_err("planted").code(),
            Code::CollectorStateTampered
        );
    }

    #[test]
    fn memory_journal_refuses_conflicts() {
        let mut j = MemoryJournal::default();
        let r0 = Reservation::new(request(0)).expect("r");
        j.reserve(&r0).expect("reserve");
        j.record(&outcome(0)).expect("record");
        let mut o = outcome(0);
        o.observation.duration_ms = 6;
        assert!(j.record(&o).is_err());
        assert!(j.record(&outcome(1)).is_err());
    }

    #[test]
    fn envelopes_round_trip_exactly() {
        let raw = b"{\"type\":\"result\"}\n\xff";
        let o = CallOutcome::new(0, "t".into(), outcome(0).observation, raw);
        assert_eq!(o.envelope_bytes().expect("decode"), raw.to_vec());
        let mut bad = o.clone();
        bad.envelope.push('=');
        assert!(bad.envelope_bytes().is_err());
    }
}
