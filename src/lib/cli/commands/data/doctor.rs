//! `data doctor ORIGIN`: parse options, read the bearer from stdin or a
//! named environment variable, call [`crate::doctor::run`], print the report
//! and exit 0 (pass), 1 (fail) or 3 (inconclusive). Usage, option and
//! credential errors exit 64.

use super::Reply;
use crate::cli::ctx::Ctx;
use crate::doctor::{self, DoctorOptions, Profile};
use crate::error::{Code, Error, Result};
use std::io::IsTerminal;

/// Profile choice.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ProfileArg {
    /// Discovery and the unauthenticated auth boundary.
    Public,
    /// `public` plus authenticated read-only probes (needs a bearer).
    Read,
    /// `read` plus the mutating fixture lifecycle (needs all slice1 gates).
    Slice1,
}

/// Report format.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    /// One `agent-data-conformance-report/v1` JSON document on stdout.
    Json,
}

/// Arguments of `data doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Target origin, e.g. http://127.0.0.1:7742 (plain http only for loopback).
    #[arg(value_name = "ORIGIN")]
    pub origin: String,
    /// Conformance profile.
    #[arg(long, value_enum, default_value = "public")]
    pub profile: ProfileArg,
    /// Report format (JSON only: every agent-task command prints JSON).
    #[arg(long, value_enum, default_value = "json")]
    pub format: FormatArg,
    /// Read the node bearer from stdin (not a terminal; one line, at most 16,384 bytes).
    #[arg(long)]
    pub token_stdin: bool,
    /// Read the node bearer from this environment variable.
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// slice1: collection provisioned for conformance fixtures.
    #[arg(long, value_name = "ID")]
    pub scratch_collection: Option<String>,
    /// slice1: the node id the operator expects (from public discovery).
    #[arg(long, value_name = "ID")]
    pub expected_node_id: Option<String>,
    /// slice1: acknowledge that fixtures leave persistent records and tombstones.
    #[arg(long)]
    pub allow_mutations: bool,
    /// Per-request timeout in milliseconds (1..=120000).
    #[arg(long, value_name = "N", default_value_t = doctor::DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// Per-response byte cap (1..=33554432).
    #[arg(long, value_name = "N", default_value_t = doctor::DEFAULT_MAX_RESPONSE_BYTES)]
    pub max_response_bytes: u64,
    /// Page cap of the slice1 baseline drain (1..=1000).
    #[arg(long, value_name = "N", default_value_t = doctor::DEFAULT_MAX_CHANGE_PAGES)]
    pub max_change_pages: u32,
    /// Refused: a bearer never goes in argv (use --token-stdin or --token-env).
    #[arg(long, hide = true, num_args = 0..=1, value_name = "REFUSED")]
    pub token: Option<Option<String>>,
    /// Refused: a bearer never goes in argv (use --token-stdin or --token-env).
    #[arg(long, hide = true, num_args = 0..=1, value_name = "REFUSED")]
    pub bearer: Option<Option<String>>,
}

pub(super) fn doctor(_ctx: &Ctx, a: &DoctorArgs) -> Result<Reply> {
    if a.token.is_some() || a.bearer.is_some() {
        return Err(Error::new(
            Code::CredentialInArgv,
            "a bearer is never accepted on the command line; use --token-stdin or --token-env NAME",
        ));
    }
    if a.token_stdin && a.token_env.is_some() {
        return Err(Error::new(
            Code::CredentialSourceConflict,
            "--token-stdin and --token-env are mutually exclusive",
        ));
    }
    let profile = match a.profile {
        ProfileArg::Public => Profile::Public,
        ProfileArg::Read => Profile::Read,
        ProfileArg::Slice1 => Profile::Slice1,
    };
    let token = if a.token_stdin {
        let stdin = std::io::stdin();
        let tty = stdin.is_terminal();
        Some(doctor::token_from_reader(&mut stdin.lock(), tty)?)
    } else if let Some(name) = &a.token_env {
        Some(doctor::token_from_env(name)?)
    } else {
        None
    };
    let opts = DoctorOptions {
        target: a.origin.clone(),
        profile,
        token,
        scratch_collection: a.scratch_collection.clone(),
        expected_node_id: a.expected_node_id.clone(),
        allow_mutations: a.allow_mutations,
        timeout_ms: a.timeout_ms,
        max_response_bytes: a.max_response_bytes,
        max_change_pages: a.max_change_pages,
        run_id: None,
    };
    let report = doctor::run(&opts)?;
    Ok(Reply {
        value: serde_json::Value::Object(report.document.clone()),
        exit_code: report.exit_code(),
        text: None,
    })
}
