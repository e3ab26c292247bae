//! `serve`: the HTTP shim over the data node.

use crate::cli::commands::Reply;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::http::{self, Server, router::Router};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback host needs a node bearer, and
    /// TLS (--tls-cert/--tls-key) unless --insecure-http.
    #[arg(long, default_value = "127.0.0.1:7742", value_name = "HOST:PORT")]
    pub bind: String,
    /// PEM certificate chain (leaf first): serve HTTPS with rustls.
    #[arg(long, value_name = "F", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert (owner-private 0600, not a symlink).
    #[arg(long, value_name = "F", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP on a non-loopback address: bearers and agent tokens
    /// then cross the network in clear. Without it such a bind is refused.
    #[arg(long, conflicts_with = "tls_cert")]
    pub insecure_http: bool,
    /// A host name (NAME or NAME:PORT; the bound port by default) clients
    /// use for this server, added to the allow-list checked against every
    /// request's Host (else 421 misdirected_request) and MCP's Origin. The
    /// bound address is always on it, and a loopback bind adds localhost,
    /// 127.0.0.1 and [::1]. Repeatable; required for a wildcard bind.
    #[arg(long, value_name = "NAME[:PORT]")]
    pub public_name: Vec<String>,
    /// File holding the dedicated node bearer (one line; owner-private 0600,
    /// not a symlink). Without it (and without AGENT_TASK_NODE_TOKEN) every
    /// /v1/data/* route answers 503.
    #[arg(long, value_name = "F")]
    pub data_token_file: Option<PathBuf>,
    /// Handler threads: the bounded pool that runs request handlers. Socket
    /// work (heads, bodies, writes) for every connection runs on two other
    /// threads, never one per connection.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Compute threads: the small pool that runs, in arrival order, the
    /// handlers that never wait (workspace reads, and mutations that only
    /// queue to the writer; `docs/http.md`, "Two pools"). 0: one per core.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=64))]
    pub compute_threads: u16,
    /// Requests in progress at once: a connection holds a slot from its
    /// complete request head until the answer is written. Past it,
    /// --accept-backlog more wait for a slot; every other gets 503
    /// server_busy.
    #[arg(long, default_value_t = 256, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Requests over --max-connections that may wait for a slot (each at
    /// most --accept-backlog-ms, then 503 server_busy).
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=65536))]
    pub accept_backlog: u32,
    /// How long a request over --max-connections waits for a slot.
    #[arg(long, default_value_t = 250, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub accept_backlog_ms: u64,
    /// Largest request head (request line and headers) in bytes; a larger
    /// one gets 431 header_too_large.
    #[arg(long, default_value_t = 65536, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1024..=1_048_576))]
    pub max_header_bytes: u32,
    /// Most header lines in one request; more get 431 header_too_large.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_headers: u32,
    /// Connections still reading a request head (a new connection, a TLS
    /// handshake, a kept-alive connection between requests) at once, apart
    /// from --max-connections. When full, the one that has waited longest
    /// is closed for a newcomer; new connections are never refused.
    #[arg(long, default_value_t = 256, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub head_budget: u32,
    /// Deadline for the first byte of a connection's first request head,
    /// from the accept (a TLS handshake included); then closed without an
    /// answer. Also the grace before --min-head-rate applies.
    #[arg(long, default_value_t = 5_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub first_byte_timeout_ms: u64,
    /// Bytes per second a request head must arrive at on average, after
    /// its first byte and --first-byte-timeout-ms of grace; a slower head
    /// gets 408 request_timeout. 0: no minimum rate.
    #[arg(long, default_value_t = 512, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub min_head_rate: u64,
    /// Deadline for a whole request head, from its first byte (for a
    /// connection's first request, from the accept); then 408
    /// request_timeout.
    #[arg(long, default_value_t = 10_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub head_timeout_ms: u64,
    /// Deadline for a request body, from the moment the request is
    /// admitted (authenticated and within its route's cap); then 408
    /// request_timeout.
    #[arg(long, default_value_t = 60_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub body_timeout_ms: u64,
    /// How long a kept-alive connection may wait for the first byte of its
    /// next request before it is closed (without an answer). Meanwhile it
    /// holds a place in --head-budget, not a --max-connections slot.
    #[arg(long, default_value_t = 15_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub idle_timeout_ms: u64,
    /// How long writing a response may make no progress (a client that
    /// does not read) before the connection is dropped.
    #[arg(long, default_value_t = 30_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub send_timeout_ms: u64,
    /// Operator file of workspace task profiles (`agent_task_profiles`,
    /// version 1): mounts the workspace task endpoint, the collector upload
    /// route and MCP under /v1/hub/workspace/ (bearer: an agent token).
    /// The data routes are then mounted only when the data node is initialised.
    #[arg(long, value_name = "FILE")]
    pub workspace_config: Option<PathBuf>,
    /// Remote checkpoints: refuse (`revision_too_large`) a manifest whose
    /// files add up to more than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::workflow::service::snapshot::DEFAULT_MAX_REVISION_BYTES)]
    pub max_revision_bytes: u64,
    /// Remote checkpoints: the largest manifest body (64 MiB holds about
    /// 500,000 entries).
    #[arg(long, value_name = "BYTES", default_value_t = crate::workflow::service::remote::DEFAULT_MAX_MANIFEST_BYTES,
          value_parser = clap::value_parser!(u64).range(1024..=268_435_456))]
    pub max_manifest_bytes: u64,
    /// Remote checkpoints: the largest blob pack body, and so the largest
    /// single file a remote checkpoint can carry.
    #[arg(long, value_name = "BYTES", default_value_t = crate::workflow::service::remote::DEFAULT_MAX_PACK_BYTES,
          value_parser = clap::value_parser!(u64).range(1024..))]
    pub max_pack_bytes: u64,
    /// Remote checkpoints: the most bytes of uploaded blobs not yet
    /// referenced by a revision that one agent may have staged.
    #[arg(long, value_name = "BYTES", default_value_t = crate::workflow::service::remote::DEFAULT_QUOTA_BYTES)]
    pub staging_quota_bytes: u64,
    /// Remote checkpoints: how long a checkpoint session, and a staged blob
    /// no revision references, live before they are removed.
    #[arg(long, value_name = "MS", default_value_t = crate::workflow::service::remote::DEFAULT_TTL_MS,
          value_parser = clap::value_parser!(u64).range(1000..))]
    pub staging_ttl_ms: u64,
    /// Workspace mutations queued for the group-commit writer of a data
    /// directory at most; past it a mutation is answered 503 busy at once.
    #[arg(long, default_value_t = 1024, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub write_queue: u32,
    /// Workspace mutations one batch of the writer applies and commits
    /// together at most (one commit per database a batch).
    #[arg(long, default_value_t = 256, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub write_batch: u32,
    /// Every MS milliseconds, one JSON line per group-commit writer on
    /// stderr when its counters moved: `{"writer_stats": {"data_dir",
    /// "batches", "mutations", "mean_batch", "largest_batch", "queued"}}`.
    /// 0: never.
    #[arg(long, default_value_t = 0, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub writer_stats_ms: u64,
    /// Every MS milliseconds, write the pending collector evidence of
    /// each workflow data directory served (`--data-dir` and the
    /// workspace profiles') into its evidence target, when one is
    /// configured (`agent-task evidence configure`). 0: never.
    #[arg(long, default_value_t = 2_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub evidence_sync_ms: u64,
    /// Every MS milliseconds, publish the pending commit statuses of each
    /// workflow data directory served whose repositories' forges publish
    /// them (`repo forge set --forge-status`; `agent-task forge publish`
    /// makes one such pass). 0: never.
    #[arg(long, default_value_t = 5_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub forge_publish_ms: u64,
    /// Mount the operator's read-only dashboard under /ui/ on this
    /// listener (docs/dashboard.md): the overview of `ls` and the
    /// explanations of `explain` of --data-dir, as HTML pages refreshed
    /// every 2 s. Needs --ui-token-file.
    #[arg(long, requires = "ui_token_file")]
    pub ui: bool,
    /// The dashboard's credential (one line of 16-512 printable ASCII
    /// characters; owner-private 0600, not a symlink), distinct from the
    /// node bearer and every agent token. Typed once into the login form
    /// and exchanged for a session cookie; never in a URL.
    #[arg(long, value_name = "F", requires = "ui")]
    pub ui_token_file: Option<PathBuf>,
}

const MAX_TOKEN: u64 = 16_384;

fn token(a: &ServeArgs) -> Result<Option<String>> {
    let raw = match &a.data_token_file {
        Some(p) => {
            // The same rule as agent token files: owner-private (0600),
            // not a symbolic link, checked on the open descriptor.
            let f = crate::store::private_fs::open_private_read(p)?.ok_or_else(|| {
                Error::new(
                    Code::Config,
                    format!("the node bearer file {} does not exist", p.display()),
                )
                .with("path", p.display().to_string())
            })?;
            let mut s = Vec::new();
            f.take(MAX_TOKEN + 3)
                .read_to_end(&mut s)
                .map_err(|e| Error::io("read", p, e))?;
            let mut s = String::from_utf8(s)
                .map_err(|_| Error::new(Code::Config, "the token file is not UTF-8"))?;
            if s.ends_with('\n') {
                s.pop();
                if s.ends_with('\r') {
                    s.pop();
                }
            }
            Some(s)
        }
        None => crate::env::var("AGENT_TASK_NODE_TOKEN").filter(|t| !t.is_empty()),
    };
    if let Some(t) = &raw
        && (t.is_empty()
            || t.len() as u64 > MAX_TOKEN
            || !t.bytes().all(|b| (0x21..=0x7e).contains(&b)))
    {
        return Err(Error::new(
            Code::Config,
            "the node bearer must be 1-16384 printable ASCII characters without spaces",
        ));
    }
    Ok(raw)
}

/// The server limits the flags name.
fn limits(a: &ServeArgs) -> http::server::Limits {
    use std::time::Duration;
    http::server::Limits {
        head: http::gate::HeadLimits {
            max_header_bytes: a.max_header_bytes as usize,
            max_headers: a.max_headers as usize,
            head_timeout: Duration::from_millis(a.head_timeout_ms),
            first_byte_timeout: Duration::from_millis(a.first_byte_timeout_ms),
            min_head_rate: a.min_head_rate,
            idle_timeout: Duration::from_millis(a.idle_timeout_ms),
            send_timeout: Duration::from_millis(a.send_timeout_ms),
        },
        body_timeout: Duration::from_millis(a.body_timeout_ms),
        head_budget: a.head_budget as usize,
        max_connections: a.max_connections as usize,
        accept_backlog: a.accept_backlog as usize,
        accept_backlog_wait: Duration::from_millis(a.accept_backlog_ms),
        workers: usize::from(a.workers),
        compute_threads: match a.compute_threads {
            0 => http::server::default_compute_threads(),
            n => usize::from(n),
        },
    }
}

pub(super) fn run(ctx: &Ctx, a: &ServeArgs) -> Result<Reply> {
    let token = token(a)?;
    let (host, _port) = http::split_bind(&a.bind)?;
    if a.tls_cert.is_none() && !a.insecure_http && !crate::net::is_loopback_host(&host) {
        return Err(Error::new(
            Code::UnsafeServerBind,
            format!(
                "refusing to serve plain HTTP on non-loopback {host}: bearers and agent tokens would cross the network in clear"
            ),
        )
        .with("fix", "pass --tls-cert F --tls-key F, or --insecure-http to accept clear text"));
    }
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(http::tls::server_config(c, k)?),
        _ => None,
    };
    let workspace = a
        .workspace_config
        .as_deref()
        .map(crate::workflow::service::facade::WorkspaceConfig::load)
        .transpose()?;
    let ui = match (&a.ui_token_file, a.ui) {
        (Some(p), true) => Some(ui_credential(ctx, p, token.as_deref(), workspace.as_ref())?),
        _ => None,
    };
    let node = match super::data::open_node(ctx) {
        Ok(mut node) => {
            node.start_group_commit()?;
            node.assert_config_collections()?;
            Some(Arc::new(node))
        }
        Err(e) if (workspace.is_some() || ui.is_some()) && e.code() == Code::NotInitialized => None,
        Err(e) => return Err(e),
    };
    // A non-loopback bind needs a node bearer or at least one sync page
    // authority (facts §12.2); the node bearer differs from every sync bearer.
    if token.is_none()
        && !crate::net::is_loopback_host(&host)
        && !node
            .as_deref()
            .is_some_and(crate::sync::service::has_page_authority)
    {
        return Err(Error::new(
            Code::UnsafeServerBind,
            format!("refusing to bind non-loopback {host} without a node bearer"),
        ));
    }
    if let Some(n) = &node {
        crate::sync::service::check_server_options(n, token.as_deref())?;
    }
    let server = Server::bind(&a.bind)?;
    let hosts = Arc::new(http::hosts::HostAllowList::new(
        &host,
        server.local_addr,
        &a.public_name,
        tls.is_some(),
    )?);
    let url = format!("{}://{}", hosts.scheme(), server.local_addr);
    // Reads keep their read-only connections per handler thread (the data
    // node's and the workspace's alike; each checked by file identity and
    // schema cookie before it serves again).
    crate::store::enable_read_cache();
    let mut router = Router::new();
    if let Some(node) = &node {
        http::data_routes::mount(&mut router, node.clone(), token.clone());
        http::sync_routes::mount(&mut router, node.clone(), token.as_deref());
        http::mcp_data::mount(&mut router, node.clone(), token.clone(), hosts.clone());
    }
    let profiles = workspace
        .as_ref()
        .map(|w| w.agent_task_profiles.len())
        .unwrap_or(0);
    // A profile that asks for commit statuses names a repository whose
    // forge publishes them.
    for p in workspace
        .iter()
        .flat_map(|w| &w.agent_task_profiles)
        .filter(|p| p.publish_forge_status)
    {
        let on = crate::workflow::service::forge::forge_of(&p.data_dir, &p.native_repository)?
            .is_some_and(|f| f.publish_status);
        if !on {
            return Err(Error::new(
                Code::Config,
                format!(
                    "workspace profile {}/{} has publish_forge_status, but repository {}'s forge \
                     does not publish commit statuses",
                    p.repository_id, p.profile_id, p.native_repository
                ),
            )
            .with(
                "fix",
                format!(
                    "agent-task repo forge set --repo {} ... --forge-status",
                    p.native_repository
                ),
            ));
        }
    }
    let mut authorities: Vec<std::path::PathBuf> =
        ctx.data_dir().ok().map(Into::into).into_iter().collect();
    for p in workspace.iter().flat_map(|w| &w.agent_task_profiles) {
        if !authorities.contains(&p.data_dir) {
            authorities.push(p.data_dir.clone());
        }
    }
    let evidence_roots: Vec<String> = authorities
        .iter()
        .filter(|r| {
            a.evidence_sync_ms > 0
                && crate::workflow::service::evidence::has_targets(r).unwrap_or(false)
        })
        .map(|r| r.display().to_string())
        .collect();
    if a.forge_publish_ms > 0 {
        publish_statuses(
            authorities.clone(),
            std::time::Duration::from_millis(a.forge_publish_ms),
            ctx.lock_timeout,
        )?;
    }
    if a.evidence_sync_ms > 0 {
        drain_evidence(
            authorities,
            std::time::Duration::from_millis(a.evidence_sync_ms),
            ctx.lock_timeout,
        )?;
    }
    if let Some(config) = workspace {
        let clock: Arc<dyn crate::clock::Clock> = Arc::from(crate::clock::process_clock()?);
        let writers = http::workspace::Writers::start(
            &config,
            clock.clone(),
            crate::store::WriterConfig {
                queue: a.write_queue as usize,
                max_batch: a.write_batch as usize,
                lock_timeout: ctx.lock_timeout,
                gather_first: crate::testhooks::writer_gather(),
            },
        )?;
        if a.writer_stats_ms > 0 {
            report_writer_stats(
                writers.stats(),
                std::time::Duration::from_millis(a.writer_stats_ms.max(10)),
            )?;
        }
        http::mount_workspace(
            &mut router,
            Arc::new(http::workspace::Workspace {
                config,
                writers,
                clock,
                lock_timeout: ctx.lock_timeout,
                hosts: hosts.clone(),
                limits: crate::workflow::service::remote::RemoteLimits {
                    max_revision_bytes: a.max_revision_bytes,
                    max_manifest_bytes: a.max_manifest_bytes,
                    max_pack_bytes: a.max_pack_bytes,
                    quota_bytes: a.staging_quota_bytes,
                    ttl_ms: a.staging_ttl_ms,
                    ..crate::workflow::service::remote::RemoteLimits::default()
                },
                gate: Default::default(),
            }),
        );
    }
    if let Some((cred, root)) = &ui {
        let clock: Arc<dyn crate::clock::Clock> = Arc::from(crate::clock::process_clock()?);
        http::dashboard::mount(
            &mut router,
            Arc::new(http::dashboard::Dashboard::new(
                cred,
                root.clone(),
                clock,
                hosts.clone(),
            )),
        );
    }
    let line = serde_json::to_value(Listening {
        data_auth: token.is_some(),
        evidence_sync_ms: a.evidence_sync_ms,
        listening: &url,
        node_id: node.as_ref().map(|n| n.node_id()),
        ui: ui.is_some(),
        workspace_profiles: profiles,
    })?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .map_err(|e| Error::new(Code::Io, format!("stdout: {e}")))?;
    }
    {
        let mut err = std::io::stderr().lock();
        if let Some(node) = &node {
            let _ = writeln!(
                err,
                "agent-data/v1 node \"{}\" listening at {url}",
                node.node_id()
            );
        }
        if profiles > 0 {
            let _ = writeln!(
                err,
                "workspace task endpoint: {profiles} profile(s) at {url}/v1/hub/workspace/"
            );
        }
        for root in &evidence_roots {
            let _ = writeln!(
                err,
                "evidence writer: draining {root}'s evidence outbox every {} ms",
                a.evidence_sync_ms
            );
        }
        if ui.is_some() {
            let _ = writeln!(err, "operator dashboard (read-only): {url}/ui/");
        }
        if token.is_none() && node.is_some() {
            let _ = writeln!(
                err,
                "HTTP data access is disabled until a node bearer is configured (--data-token-file or AGENT_TASK_NODE_TOKEN)"
            );
        }
    }
    server.run(
        Arc::new(router),
        limits(a),
        http::server::Front { tls, hosts },
    )?;
    Err(Error::internal("the server stopped"))
}

/// The line `serve` prints once it listens (a JSON object: fields in key
/// order).
#[derive(serde::Serialize)]
struct Listening<'a> {
    data_auth: bool,
    evidence_sync_ms: u64,
    listening: &'a str,
    node_id: Option<&'a str>,
    ui: bool,
    workspace_profiles: usize,
}

/// `--ui-token-file`: the dashboard's credential and the data directory
/// it shows. Refused when it is the node bearer or a live agent token of
/// that directory or of a workspace profile's (one credential, one use).
fn ui_credential(
    ctx: &Ctx,
    path: &std::path::Path,
    node_bearer: Option<&str>,
    workspace: Option<&crate::workflow::service::facade::WorkspaceConfig>,
) -> Result<(String, PathBuf)> {
    let cred = http::dashboard::read_credential(path)?;
    let root = ctx.data_dir()?.to_path_buf();
    let reused = |what: &str| {
        Error::new(
            Code::Config,
            format!(
                "the dashboard token is also {what}: give the dashboard a credential of its own"
            ),
        )
        .with("path", path.display().to_string())
    };
    if node_bearer == Some(cred.as_str()) {
        return Err(reused("the node bearer"));
    }
    let mut roots = vec![root.clone()];
    for p in workspace.iter().flat_map(|w| &w.agent_task_profiles) {
        if !roots.contains(&p.data_dir) {
            roots.push(p.data_dir.clone());
        }
    }
    for r in &roots {
        if crate::workflow::service::admin::is_agent_token(r, &cred)? {
            return Err(reused("an agent token"));
        }
    }
    Ok((cred, root))
}

/// `--writer-stats-ms`: a thread that prints each writer's counters on
/// stderr every `every`, when they moved since its last line.
fn report_writer_stats(
    writers: Vec<(std::path::PathBuf, Arc<crate::store::WriterStats>)>,
    every: std::time::Duration,
) -> Result<()> {
    std::thread::Builder::new()
        .name("agent-task-writer-stats".into())
        .spawn(move || {
            let mut last: Vec<Option<serde_json::Value>> = vec![None; writers.len()];
            loop {
                std::thread::sleep(every);
                for ((root, stats), last) in writers.iter().zip(last.iter_mut()) {
                    let now = stats.json();
                    if last.as_ref() == Some(&now) {
                        continue;
                    }
                    let mut line = now.clone();
                    line["data_dir"] = serde_json::json!(root.display().to_string());
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "{}",
                        serde_json::json!({ "writer_stats": line })
                    );
                    *last = Some(now);
                }
            }
        })
        .map_err(|e| Error::internal(format!("cannot start the writer stats thread: {e}")))?;
    Ok(())
}

/// `--evidence-sync-ms`: a thread that drains the evidence outbox of each
/// workflow data directory every `every` (when it has an evidence
/// target). A failure is one JSON line on stderr, never fatal; a drain
/// that wrote something says so the same way.
fn drain_evidence(
    roots: Vec<std::path::PathBuf>,
    every: std::time::Duration,
    lock_timeout: std::time::Duration,
) -> Result<()> {
    let clock: Arc<dyn crate::clock::Clock> = Arc::from(crate::clock::process_clock()?);
    std::thread::Builder::new()
        .name("agent-task-evidence".into())
        .spawn(move || {
            let mut last_error: Vec<Option<String>> = vec![None; roots.len()];
            loop {
                std::thread::sleep(every);
                for (root, last) in roots.iter().zip(last_error.iter_mut()) {
                    // No authority, or no target: nothing to drain.
                    if !crate::workflow::service::evidence::has_targets(root).unwrap_or(false) {
                        continue;
                    }
                    let line = match crate::evidence::drain(root, clock.clone(), lock_timeout) {
                        Ok(r) if r.done == 0 && r.failed == 0 => {
                            *last = None;
                            continue;
                        }
                        Ok(r) => {
                            let msg = r.errors.first().map(|e| e.message.clone());
                            if r.done == 0 && msg == *last {
                                continue;
                            }
                            *last = msg;
                            serde_json::json!({"evidence_sync": {
                                "data_dir": root.display().to_string(),
                                "done": r.done, "inserted": r.inserted,
                                "existing": r.existing, "failed": r.failed, "errors": r.errors}})
                        }
                        Err(e) => {
                            let msg = Some(e.to_string());
                            if msg == *last {
                                continue;
                            }
                            *last = msg;
                            serde_json::json!({"evidence_sync": {
                                "data_dir": root.display().to_string(),
                                "error": e.code().as_str(), "message": e.to_string()}})
                        }
                    };
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        })
        .map_err(|e| Error::internal(format!("cannot start the evidence thread: {e}")))?;
    Ok(())
}

/// `--forge-publish-ms`: a thread that makes one commit-status publishing
/// pass (`crate::forge::publish`) over each workflow data directory every
/// `every`, when one of its forges publishes statuses. A pass that
/// published or failed says so in one JSON line on stderr (a failure
/// repeated unchanged is not repeated); nothing is fatal.
fn publish_statuses(
    roots: Vec<std::path::PathBuf>,
    every: std::time::Duration,
    lock_timeout: std::time::Duration,
) -> Result<()> {
    let clock: Arc<dyn crate::clock::Clock> = Arc::from(crate::clock::process_clock()?);
    std::thread::Builder::new()
        .name("agent-task-forge".into())
        .spawn(move || {
            let mut last: Vec<Option<String>> = vec![None; roots.len()];
            loop {
                std::thread::sleep(every);
                for (root, last) in roots.iter().zip(last.iter_mut()) {
                    if !crate::workflow::service::forge::publishes_statuses(root).unwrap_or(false) {
                        continue;
                    }
                    let line = match crate::forge::publish(root, lock_timeout, clock.as_ref()) {
                        Ok(r) if r.published == 0 && r.failed == 0 => {
                            *last = None;
                            continue;
                        }
                        Ok(r) => {
                            let msg = r.errors.first().map(|e| e.to_string());
                            if r.published == 0 && msg == *last {
                                continue;
                            }
                            *last = msg;
                            serde_json::json!({"forge_publish": {
                                "data_dir": root.display().to_string(), "report": r}})
                        }
                        Err(e) => {
                            let msg = Some(e.to_string());
                            if msg == *last {
                                continue;
                            }
                            *last = msg;
                            serde_json::json!({"forge_publish": {
                                "data_dir": root.display().to_string(),
                                "error": e.code().as_str(), "message": e.to_string()}})
                        }
                    };
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        })
        .map_err(|e| Error::internal(format!("cannot start the forge publisher thread: {e}")))?;
    Ok(())
}
