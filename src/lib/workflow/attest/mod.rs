//! Attestations: what the authority concluded about a Change, as in-toto
//! Statements v1 in DSSE envelopes signed by the authority's own Ed25519
//! key, attached to the landed commit as a git note
//! (`refs/notes/agent-task`, one envelope per line) and checkable by
//! anyone holding the repository and the public key (`agent-task verify`).
//!
//! - [`key`]: the authority signing identity (created by `init`, rotated by
//!   `authority key rotate`; old public keys stay listed);
//! - [`dsse`]: PAE, envelopes, signing and strict verification;
//! - [`statement`]: Statement v1, test-result v0.1, svr v0.2 and the
//!   agent-task receipt predicate, with strict decoding;
//! - [`build`]: the statements of a landed or a qualified Change version,
//!   from authority state;
//! - [`git`]: the note, and the revision digest recomputed from a tree;
//! - [`verify`]: the verifier that needs no data directory.
//!
//! A signature attributes the statements to the holder of the authority
//! key. It does not prove that a command ran or that its result is true:
//! see `docs/attestations.md`.

pub mod build;
pub mod dsse;
pub mod git;
pub mod key;
pub mod statement;
pub mod verify;

use crate::clock::{Clock, rfc3339_millis, unix_millis};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir};
use crate::workflow::authority::change;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `attest` request.
#[derive(Debug, Clone)]
pub struct AttestRequest {
    /// The Change.
    pub change_id: String,
    /// Also write the envelopes as files into this directory.
    pub out: Option<PathBuf>,
}

fn not_qualified(msg: &str) -> Error {
    Error::new(Code::NotQualified, msg.to_owned())
}

/// `attest --change C [--out DIR]`: the signed statements of a Change —
/// of its landing when its current version landed (the same envelopes the
/// note holds), else of its current subject when it qualifies now (every
/// admission recheck of `land`; revision subject only). Read-only: takes
/// no lock and creates nothing but the `--out` files.
pub fn attest(root: &Path, clock: &dyn Clock, req: &AttestRequest) -> Result<Value> {
    let dir = DataDir::open(root)?;
    let key = key::load_required(&dir)?;
    let a = dir
        .open_read(&crate::workflow::authority::schema::SPEC)?
        .ok_or_else(|| Error::new(Code::NotFound, "this data directory has no authority yet"))?;
    let ch = change::change(&a, &req.change_id)?;
    if ch.version == 0 {
        return Err(not_qualified("the change has no checkpoint yet")
            .with("next", crate::contract::Next::checkpoint()));
    }
    let bundle = match build::for_landing(&dir, &a, &ch.change_id, ch.version)? {
        Some(b) => b,
        None => {
            // Admission answers first (a protected change is refused as
            // such even when nothing was ever collected).
            let j = dir.open_read(&crate::workflow::journal::SPEC)?;
            let now = clock.now();
            build::for_qualified(
                &dir,
                j.as_ref(),
                &a,
                &ch.change_id,
                &rfc3339_millis(now),
                unix_millis(now),
            )?
        }
    };
    let envelopes = bundle.sign(&key);
    let files = match &req.out {
        Some(out) => Some(write_out(out, &bundle, &envelopes)?),
        None => None,
    };
    let statements = bundle
        .payloads
        .iter()
        .map(|p| Statement {
            kind: p.kind.as_str(),
            label: &p.label,
        })
        .collect();
    Ok(serde_json::to_value(Attested {
        allow_protected_change: bundle.allow_protected_change,
        change_id: &bundle.change_id,
        change_version: bundle.change_version,
        envelopes: &envelopes,
        files,
        git_commit: bundle.git_commit.as_deref(),
        key_id: key.key_id(),
        landed: bundle.landed,
        receipt_digest: bundle.receipt_digest.as_deref(),
        repository: &bundle.repository,
        revision: &bundle.revision,
        statements,
    })?)
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// `attest`'s output.
#[derive(serde::Serialize)]
struct Attested<'a> {
    allow_protected_change: bool,
    change_id: &'a str,
    change_version: u64,
    envelopes: &'a [dsse::Envelope],
    files: Option<Vec<String>>,
    git_commit: Option<&'a str>,
    key_id: &'a str,
    landed: bool,
    receipt_digest: Option<&'a str>,
    repository: &'a str,
    revision: &'a crate::wire::digest::Sha256Hex,
    statements: Vec<Statement<'a>>,
}

/// One signed statement of an attestation bundle.
#[derive(serde::Serialize)]
struct Statement<'a> {
    kind: &'static str,
    label: &'a str,
}

/// A landing note's output.
#[derive(serde::Serialize)]
struct NoteOutput<'a> {
    commit: &'a str,
    envelopes: usize,
    key_id: &'a str,
    notes_ref: &'static str,
    written: bool,
}

fn file_label(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes one file per envelope (`NN-KIND[-STEP].dsse.json`) and the whole
/// set as `attestations.jsonl` (the note's bytes).
fn write_out(
    out: &Path,
    bundle: &build::Bundle,
    envelopes: &[dsse::Envelope],
) -> Result<Vec<String>> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::new(
                Code::SymlinkRefused,
                format!("{} is a symbolic link", out.display()),
            )
            .with("path", out.display().to_string()));
        }
        Ok(m) if !m.is_dir() => {
            return Err(Error::new(
                Code::InvalidInput,
                format!("{} is not a directory", out.display()),
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::store::private_fs::ensure_private_dir(out)?;
        }
        Err(e) => return Err(Error::io("stat", out, e)),
    }
    let mut files = Vec::new();
    for (i, (p, e)) in bundle.payloads.iter().zip(envelopes).enumerate() {
        let label = if p.label.is_empty() {
            String::new()
        } else {
            format!("-{}", file_label(&p.label))
        };
        let name = format!("{:02}-{}{label}.dsse.json", i + 1, p.kind.as_str());
        let mut line = e.to_line()?;
        line.push('\n');
        crate::store::private_fs::write_atomic(&out.join(&name), line.as_bytes())?;
        files.push(out.join(name).display().to_string());
    }
    let all = out.join("attestations.jsonl");
    crate::store::private_fs::write_atomic(&all, &build::jsonl(envelopes)?)?;
    files.push(all.display().to_string());
    Ok(files)
}

/// After a git landing (the lock held): writes the signed statements of
/// the landed version as the note on its commit unless a note is already
/// there. Returns the `attestation` member of `land`'s output (null for a
/// landing without a git commit).
pub fn ensure_landing_note(
    dir: &DataDir,
    a: &Connection,
    source: &Path,
    change_id: &str,
    version: u64,
) -> Result<Value> {
    let bundle = build::for_landing(dir, a, change_id, version)?
        .ok_or_else(|| Error::internal("the change version has no landed landing"))?;
    let Some(commit) = bundle.git_commit.clone() else {
        return Ok(Value::Null);
    };
    let key = key::load_required(dir)?;
    let present = git::read_note(source, &commit)?;
    let envelopes = bundle.sign(&key);
    let bytes = build::jsonl(&envelopes)?;
    // The landed commit can be a proposal's candidate commit itself (the
    // same tree, parent, message and second): its proposal note gives way
    // to the landing's.
    let replace = match &present {
        Some(p) => {
            p != &bytes && crate::workflow::authority::forge::is_proposed_commit(a, &commit)?
        }
        None => false,
    };
    if present.is_none() {
        crate::collector::crash_point("land_before_note");
        git::write_note(source, &commit, &bytes)?;
    } else if replace {
        git::replace_note(source, &commit, &bytes)?;
    }
    Ok(serde_json::to_value(NoteOutput {
        commit: &commit,
        envelopes: envelopes.len(),
        key_id: key.key_id(),
        notes_ref: git::NOTES_REF,
        written: present.is_none() || replace,
    })?)
}

/// After `forge sync` recorded a landing of a commit the forge made:
/// writes the landing's signed statements as the note on that commit,
/// replacing any other note there (a proposal's, when the forge
/// fast-forwarded the target to the candidate commit itself). Returns
/// the `attestation` summary.
pub fn ensure_forge_landing_note(
    dir: &DataDir,
    a: &Connection,
    source: &Path,
    change_id: &str,
    version: u64,
) -> Result<Value> {
    let bundle = build::for_landing(dir, a, change_id, version)?
        .ok_or_else(|| Error::internal("the change version has no landed landing"))?;
    let commit = bundle
        .git_commit
        .clone()
        .ok_or_else(|| Error::internal("a forge landing without a commit"))?;
    let key = key::load_required(dir)?;
    let envelopes = bundle.sign(&key);
    let bytes = build::jsonl(&envelopes)?;
    let present = git::read_note(source, &commit)?;
    let written = present.as_deref() != Some(bytes.as_slice());
    if written {
        git::replace_note(source, &commit, &bytes)?;
    }
    Ok(serde_json::to_value(NoteOutput {
        commit: &commit,
        envelopes: envelopes.len(),
        key_id: key.key_id(),
        notes_ref: git::NOTES_REF,
        written,
    })?)
}

/// `propose`, for a qualified subject: the note on its candidate commit
/// (the qualification's signed statements naming that commit, with no
/// landing: `verify` answers that it has not landed), unless present.
/// Returns the `attestation` summary.
pub fn ensure_proposal_note(
    dir: &DataDir,
    j: Option<&Connection>,
    a: &Connection,
    source: &Path,
    p: &crate::workflow::authority::forge::Proposal,
    now_ms: i64,
) -> Result<Value> {
    let commit = p.git_commit.as_str();
    let bundle = build::for_proposal(dir, j, a, &p.change_id, commit, &p.created_at, now_ms)?;
    let key = key::load_required(dir)?;
    let envelopes = bundle.sign(&key);
    let present = git::read_note(source, commit)?.is_some();
    if !present {
        git::write_note(source, commit, &build::jsonl(&envelopes)?)?;
    }
    Ok(serde_json::to_value(NoteOutput {
        commit,
        envelopes: envelopes.len(),
        key_id: key.key_id(),
        notes_ref: git::NOTES_REF,
        written: !present,
    })?)
}

/// Whether the landed commit of a git landing lacks its note.
pub fn note_missing(source: &Path, commit: &str) -> Result<bool> {
    Ok(git::read_note(source, commit)?.is_none())
}

/// `authority key [--format hex|pem]` (read-only).
pub fn show_key(root: &Path, format: key::Format) -> Result<key::ShowOutput> {
    key::show(&DataDir::open(root)?, format)
}
