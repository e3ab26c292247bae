//! The command tree and the single dispatch `match`.

mod attest;
mod cas;
mod change;
mod collect;
pub mod data;
mod deploy;
pub(crate) mod docs;
mod enroll;
mod evidence;
mod explain;
mod hooks;
mod overview;
mod repo;
mod requirement;
pub(crate) mod runtime;
mod serve;
mod setup;
mod sync;
mod task;
mod token;

use super::ctx::Ctx;
use crate::contract::MutationAction;
use crate::error::Result;
use clap::Subcommand;
use serde_json::Value;

/// What adds a subcommand's arguments to it (`clap::Args::augment_args`).
pub(crate) type AugmentArgs = fn(clap::Command) -> clap::Command;

/// The subcommands `cli::run` parses without building the whole command
/// tree, with the function that adds their arguments: what the derived
/// [`Command`] adds for them (a test compares the two; their help and
/// every refusal still come from the whole tree). Building every
/// subcommand and argument cost a `qualify` 1.8M instructions and about
/// 200 page faults of heap (callgrind, perf stat) for one subcommand of
/// about fifty.
pub(crate) const HOT: &[(&str, AugmentArgs)] = &[
    (
        "qualify",
        <change::AgentChangeArgs as clap::Args>::augment_args,
    ),
    (
        "next",
        <change::AgentChangeArgs as clap::Args>::augment_args,
    ),
    (
        "finalize",
        <change::AgentChangeArgs as clap::Args>::augment_args,
    ),
    (
        "checkpoint",
        <change::CheckpointArgs as clap::Args>::augment_args,
    ),
    ("status", <task::StatusArgs as clap::Args>::augment_args),
    (
        "collect",
        <collect::CollectArgs as clap::Args>::augment_args,
    ),
    // The Stop hooks run on every turn the agent tries to end.
    ("task-stop", <hooks::StopArgs as clap::Args>::augment_args),
    (
        "task-codex-stop",
        <hooks::StopArgs as clap::Args>::augment_args,
    ),
];

/// Every top-level command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create (or re-check and migrate) the owner-private data directory.
    Init(setup::InitArgs),
    /// Show the data directory, schema versions and counts (changes nothing).
    Info(setup::InfoArgs),
    /// Store, read and verify content-addressed objects.
    #[command(subcommand)]
    Cas(cas::CasCommand),
    /// Sandbox runtimes for command collectors.
    #[command(subcommand)]
    Runtime(runtime::RuntimeCommand),
    /// Print a shell completion script.
    Completions(docs::CompletionsArgs),
    /// Write a man page per subcommand into a directory.
    Man(docs::ManArgs),
    /// The agent-data/v1 local node.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// agent-data-sync/v1: explicit encrypted pulls between data nodes.
    #[command(subcommand)]
    Sync(sync::SyncCommand),
    /// Serve the data node over HTTP (hyper, loopback by default; limits in docs/http.md).
    Serve(serve::ServeArgs),
    /// Operator: register and list repositories.
    #[command(subcommand)]
    Repo(repo::RepoCmd),
    /// Operator: install and show workflow requirements.
    #[command(subcommand)]
    Requirement(requirement::RequirementCmd),
    /// Operator: issue and revoke agent tokens.
    #[command(subcommand)]
    Token(token::TokenCmd),
    /// Operator: create a collector signing key (the private part is never printed).
    Keygen(enroll::KeygenArgs),
    /// Operator: enroll an executor public key for one repository, profile and step.
    Enroll(enroll::EnrollArgs),
    /// Operator: revoke an enrollment.
    #[command(subcommand)]
    Enrollment(enroll::EnrollmentCmd),
    /// Agent: open a Change on a workspace.
    #[command(subcommand)]
    Change(change::ChangeCmd),
    /// Agent: snapshot the workspace into a new Change version (a new subject).
    Checkpoint(change::CheckpointArgs),
    /// Agent: capability, schema versions and operation names.
    Capabilities(change::EndpointArgs),
    /// Agent: the installed requirement of a Change's profile.
    Requirements(change::AgentChangeArgs),
    /// Agent: the typed next operation for a Change (data, never a command).
    Next(change::AgentChangeArgs),
    /// Agent: a task's instruction entrypoint (or a schema mismatch).
    Instructions(task::InstructionsArgs),
    /// Agent: read one named reference of a task.
    Reference(task::ReferenceArgs),
    /// Agent: claim a pending task (fresh attempt, bounded lease, new fence).
    Claim(task::ClaimArgs),
    /// Agent: renew an attempt's lease.
    Heartbeat(task::MutateArgs),
    /// Agent: exact-attempt status (side-effect free).
    Status(task::StatusArgs),
    /// Agent: cancel an attempt (execution may still run; reconcile next).
    Cancel(task::MutateArgs),
    /// Agent: explicitly supersede an attempt's fence.
    Reconcile(task::MutateArgs),
    /// Agent: submit an assertion or a signed registered observation.
    Result(task::ResultArgs),
    /// Agent: recovery envelope for a task, attempt or request (side-effect free).
    Recovery(task::RecoveryArgs),
    /// Agent setup: register the read-only Stop hook for Claude Code or Codex.
    InstallStop(hooks::InstallStopArgs),
    /// Agent setup: write the managed "Workflow tasks" block into AGENTS.md and friends.
    InitRepo(hooks::InitRepoArgs),
    /// Stop hook for Claude Code (read-only): blocks until the Change is qualified.
    TaskStop(hooks::StopArgs),
    /// Stop hook for Codex CLI (read-only): blocks until the Change is qualified.
    TaskCodexStop(hooks::StopArgs),
    /// Operator: install an immutable collector profile.
    #[command(subcommand)]
    Profile(collect::ProfileCmd),
    /// Operator: set up collection for a privilege-separated agent (the sudo wrapper).
    #[command(subcommand)]
    Collector(collect::CollectorCmd),
    /// Agent: claim a command task for the installed collector profile; prints the descriptor.
    CollectorClaim(collect::CollectorClaimArgs),
    /// Agent/collector: run a claimed descriptor once, sign, retain and upload (exit 0 whatever the test said).
    Collect(collect::CollectArgs),
    /// Agent/collector: resend the identical retained transfer of an execution.
    RetryUpload(collect::RetryUploadArgs),
    /// Agent: create the v2 receipt of the current subject from retained transfers.
    Finalize(change::AgentChangeArgs),
    /// Agent: read-only exact-subject qualification.
    Qualify(change::AgentChangeArgs),
    /// Operator (or agent through --endpoint): the overview of Changes, their
    /// tasks, live attempts, receipts, landings and qualification (docs/overview.md).
    Ls(overview::LsArgs),
    /// Agent/operator: why the Change's current subject does not qualify, from the signed evidence (exit status, output tails, runtime; review findings).
    Explain(explain::ExplainArgs),
    /// Operator: admission rechecks, then move the target head (and commit, for git).
    Land(collect::LandArgs),
    /// Operator: push the Change's candidate commit to its forge and open (or update) its pull or
    /// merge request; the target does not move (docs/forge.md).
    Propose(repo::ProposeArgs),
    /// Operator: the authority's attestation signing key.
    #[command(subcommand)]
    Authority(attest::AuthorityCmd),
    /// Operator: signed in-toto attestations (DSSE) of a landed or qualified Change.
    Attest(attest::AttestArgs),
    /// Check a landed commit's attestations with only the repository and a public key.
    Verify(attest::VerifyArgs),
    /// Operator: check the privilege-separated deployment; write serve's workspace config.
    #[command(subcommand)]
    Deploy(deploy::DeployCmd),
    /// Operator: copy collector evidence into a separate data node as records (`data query` finds them).
    #[command(subcommand)]
    Evidence(evidence::EvidenceCmd),
    /// Operator: the forge jobs: publish the pending commit statuses, sync forge-side merges (docs/forge.md).
    #[command(subcommand)]
    Forge(repo::ForgeJobCmd),
}

impl Command {
    /// Whether this is a Stop hook (`task-stop`, `task-codex-stop`): it
    /// reads no `AGENT_TASK_*` variable and no default path.
    pub fn is_stop_hook(&self) -> bool {
        matches!(self, Command::TaskStop(_) | Command::TaskCodexStop(_))
    }
}

/// What a successful command prints on stdout, and its exit code (0 for
/// almost every command; a few, such as a conformance run that found
/// failures, print their report and exit non-zero).
#[derive(Debug)]
pub struct Reply {
    /// The JSON value printed on stdout.
    pub value: Value,
    /// The process exit code.
    pub exit_code: u8,
    /// Text printed as it is instead of the JSON value (a table for a
    /// person at a terminal: `ls`; a completion script, which a shell
    /// sources).
    pub text: Option<String>,
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply {
            value,
            exit_code: 0,
            text: None,
        }
    }
}

impl Reply {
    /// A reply printed as `text` (exit 0).
    pub fn text(text: String) -> Self {
        Reply {
            value: Value::Null,
            exit_code: 0,
            text: Some(text),
        }
    }
}

/// Runs one command.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<Reply> {
    match command {
        Command::Init(a) => setup::init(ctx, &a).map(Reply::from),
        Command::Info(a) => setup::info(ctx, &a).map(Reply::from),
        Command::Cas(c) => cas::run(ctx, &c).map(Reply::from),
        Command::Runtime(c) => runtime::run(&c).map(Reply::from),
        Command::Completions(a) => docs::completions(&a),
        Command::Man(a) => docs::man(&a).map(Reply::from),
        Command::Data(c) => data::dispatch(ctx, c),
        Command::Sync(c) => sync::dispatch(ctx, c),
        Command::Serve(a) => serve::run(ctx, &a),
        Command::Repo(c) => repo::run(ctx, c).map(Reply::from),
        Command::Requirement(c) => requirement::run(ctx, c).map(Reply::from),
        Command::Token(c) => token::run(ctx, c).map(Reply::from),
        Command::Keygen(a) => enroll::keygen(ctx, a).map(Reply::from),
        Command::Enroll(a) => enroll::enroll(ctx, a).map(Reply::from),
        Command::Enrollment(c) => enroll::enrollment(ctx, c).map(Reply::from),
        Command::Change(c) => change::change(ctx, c).map(Reply::from),
        Command::Checkpoint(a) => change::checkpoint(ctx, a).map(Reply::from),
        Command::Capabilities(a) => task::capabilities(ctx, a).map(Reply::from),
        Command::Requirements(a) => task::requirements(ctx, a).map(Reply::from),
        Command::Next(a) => task::next(ctx, a).map(Reply::from),
        Command::Instructions(a) => task::instructions(ctx, a).map(Reply::from),
        Command::Reference(a) => task::reference(ctx, a).map(Reply::from),
        Command::Claim(a) => task::claim(ctx, a).map(Reply::from),
        Command::Heartbeat(a) => task::mutate(ctx, MutationAction::Heartbeat, a).map(Reply::from),
        Command::Status(a) => task::status(ctx, a).map(Reply::from),
        Command::Cancel(a) => task::mutate(ctx, MutationAction::Cancel, a).map(Reply::from),
        Command::Reconcile(a) => task::mutate(ctx, MutationAction::Reconcile, a).map(Reply::from),
        Command::Result(a) => task::result(ctx, a).map(Reply::from),
        Command::Recovery(a) => task::recovery(ctx, a).map(Reply::from),
        Command::InstallStop(a) => hooks::install_stop(ctx, a).map(Reply::from),
        Command::InitRepo(a) => hooks::init_repo(a).map(Reply::from),
        Command::TaskStop(a) => hooks::stop(ctx, crate::hooks::stop::Flavor::Claude, a),
        Command::TaskCodexStop(a) => hooks::stop(ctx, crate::hooks::stop::Flavor::Codex, a),
        Command::Profile(c) => collect::profile(ctx, c).map(Reply::from),
        Command::Collector(c) => collect::collector(ctx, c).map(Reply::from),
        Command::CollectorClaim(a) => collect::collector_claim(ctx, a).map(Reply::from),
        Command::Collect(a) => collect::collect(ctx, a).map(Reply::from),
        Command::RetryUpload(a) => collect::retry_upload(ctx, a).map(Reply::from),
        Command::Finalize(a) => collect::finalize(ctx, a).map(Reply::from),
        Command::Qualify(a) => collect::qualify(ctx, a).map(Reply::from),
        Command::Ls(a) => overview::ls(ctx, a),
        Command::Explain(a) => explain::run(ctx, a),
        Command::Land(a) => collect::land(ctx, a).map(Reply::from),
        Command::Propose(a) => repo::propose(ctx, a).map(Reply::from),
        Command::Authority(c) => attest::authority(ctx, c).map(Reply::from),
        Command::Attest(a) => attest::attest_cmd(ctx, a).map(Reply::from),
        Command::Verify(a) => attest::verify(a).map(Reply::from),
        Command::Deploy(c) => deploy::run(ctx, c),
        Command::Evidence(c) => evidence::run(ctx, c),
        Command::Forge(c) => repo::forge_job(ctx, c),
    }
}

pub(crate) fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v)
        .map_err(|e| crate::error::Error::internal(format!("cannot render output: {e}")))
}
