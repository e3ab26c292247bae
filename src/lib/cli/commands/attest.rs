//! `authority key`, `attest` and `verify`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::service::attest;
use serde_json::Value;
use std::path::PathBuf;

/// `authority` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuthorityCmd {
    /// Print the authority's attestation public key and key id (`rotate`: make a new one).
    Key(KeyArgs),
}

/// Arguments of `authority key`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct KeyArgs {
    /// Public key format: 64 lowercase hex characters, or a PEM `PUBLIC KEY`.
    #[arg(long, value_enum, default_value_t = KeyFormat::Hex)]
    pub format: KeyFormat,
    /// `rotate`: a new current key (old public keys stay listed).
    #[command(subcommand)]
    pub action: Option<KeyAction>,
}

/// Public key formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyFormat {
    /// 64 lowercase hex characters.
    Hex,
    /// PEM SubjectPublicKeyInfo (RFC 8410).
    Pem,
}

/// `authority key` actions.
#[derive(Debug, clap::Subcommand)]
pub enum KeyAction {
    /// Make a new current signing key; old public keys stay listed for verification.
    Rotate,
}

/// Arguments of `attest`.
#[derive(Debug, clap::Args)]
pub struct AttestArgs {
    /// The Change (its landing when its current version landed, else its qualified subject).
    #[arg(long)]
    pub change: String,
    /// Also write each envelope and the whole set (`attestations.jsonl`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The git repository holding the commit and its `refs/notes/agent-task` note.
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub repo: PathBuf,
    /// The landed commit.
    #[arg(long, value_name = "SHA")]
    pub commit: String,
    /// The authority's public key (PEM or 64 hex characters), e.g. from `authority key`.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Also accept a commit the operator landed with `--allow-protected-change` (no receipt, no
    /// tests): reported `qualified: false` instead of failing with `attestation_unqualified`.
    #[arg(long)]
    pub allow_override: bool,
}

pub(super) fn authority(ctx: &Ctx, c: AuthorityCmd) -> Result<Value> {
    match c {
        AuthorityCmd::Key(KeyArgs {
            action: Some(KeyAction::Rotate),
            ..
        }) => to_value(&crate::workflow::service::admin::rotate_key(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
        )?),
        AuthorityCmd::Key(KeyArgs {
            action: None,
            format,
        }) => to_value(&attest::show_key(
            ctx.data_dir()?,
            match format {
                KeyFormat::Hex => attest::KeyFormat::Hex,
                KeyFormat::Pem => attest::KeyFormat::Pem,
            },
        )?),
    }
}

pub(super) fn attest_cmd(ctx: &Ctx, a: AttestArgs) -> Result<Value> {
    attest::attest(
        ctx.data_dir()?,
        ctx.clock.as_ref(),
        &attest::AttestRequest {
            change_id: a.change,
            out: a.out,
        },
    )
}

pub(super) fn verify(a: VerifyArgs) -> Result<Value> {
    let public_key = attest::read_public_key_file(&a.key)?;
    attest::verify(&attest::VerifyRequest {
        repo: &a.repo,
        commit: &a.commit,
        public_key,
        allow_override: a.allow_override,
    })
}
