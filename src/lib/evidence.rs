//! The evidence writer: a face-level job that copies the workflow's
//! collector evidence into a data node the operator names, as records an
//! agent (or the operator) finds with `data query` (docs/data-node.md,
//! "Evidence as data").
//!
//! The workflow half writes what is to be published into its outbox in
//! the same transaction as the import (or the receipt) it reports; this
//! job reads the pending rows through `workflow::service::evidence`,
//! writes each through the data half's public API (`data::Node::collect`,
//! the `text` collector) and marks it done. The record ids are the data
//! protocol's content-addressed ids of fixed content, so a row written
//! twice (a crash between the write and the mark) stores nothing new.
//!
//! A run becomes one record (key: its transfer digest, version
//! `imported`); once a receipt names the run, a second version (version
//! `finalized`, the same content plus `receipt_digest`) supersedes it, as
//! the protocol's `supersedes_id` says a new version of the same source
//! does.

use crate::clock::Clock;
use crate::data::{CollectRequest, InitRequest, Node};
use crate::error::{Code, Error, Result};
use crate::workflow::service::evidence::{self as outbox, OutboxRow, Target};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The default collection evidence goes into.
pub const DEFAULT_COLLECTION: &str = "evidence";
/// Rows read per batch.
const BATCH: u32 = 64;
/// Most errors a drain report lists.
const MAX_ERRORS: usize = 16;

/// What `evidence configure` did.
#[derive(Debug, Serialize)]
pub struct ConfigureOutput {
    /// The target now configured.
    pub target: Target,
    /// Whether the evidence node was created now.
    pub node_created: bool,
    /// Whether the collection was created now.
    pub collection_created: bool,
    /// The evidence node's id.
    pub node_id: String,
}

/// One row the drain could not write (it stays pending).
#[derive(Debug, Serialize)]
pub struct DrainError {
    /// The outbox row.
    pub seq: i64,
    /// The error code.
    pub error: String,
    /// The message.
    pub message: String,
}

/// What one drain did.
#[derive(Debug, Default, Serialize)]
pub struct DrainReport {
    /// Rows written and marked done.
    pub done: u64,
    /// Records newly stored (a receipt row may store two: the run's and
    /// its superseding version).
    pub inserted: u64,
    /// Records that already existed (a repeated write).
    pub existing: u64,
    /// Rows that failed (still pending).
    pub failed: u64,
    /// The first few failures.
    pub errors: Vec<DrainError>,
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `evidence configure`: checks the repository, creates (or re-checks)
/// the evidence data node at `evidence_dir` (0700) and its collection,
/// then records the target. Refuses a symbolic link and the workflow's
/// own data directory; an unknown repository creates nothing.
pub fn configure(
    root: &Path,
    timeout: Duration,
    clock: Arc<dyn Clock>,
    repo_id: &str,
    evidence_dir: &Path,
    collection_id: &str,
) -> Result<ConfigureOutput> {
    outbox::check_repository(root, repo_id)?;
    crate::data::syntax::check_collection_id(collection_id)?;
    let dir =
        std::path::absolute(evidence_dir).map_err(|e| Error::io("resolve", evidence_dir, e))?;
    if is_symlink(&dir) {
        return Err(Error::new(
            Code::SymlinkRefused,
            format!(
                "the evidence directory {} is a symbolic link",
                dir.display()
            ),
        )
        .with("path", dir.display().to_string()));
    }
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(&dir, root) {
        return Err(Error::new(
            Code::InvalidInput,
            "the evidence directory must be a data directory of its own, not the workflow's",
        )
        .with("path", dir.display().to_string()));
    }
    let init = crate::data::node::init(&dir, &InitRequest::default(), clock.as_ref(), timeout)?;
    let node = Node::open(&dir, clock.clone(), timeout)?;
    let created = node.create_collection(&collection_definition(collection_id))?;
    let target = outbox::configure(root, timeout, clock.as_ref(), repo_id, &dir, collection_id)?;
    Ok(ConfigureOutput {
        target,
        node_created: init.created,
        collection_created: created["created"] == true,
        node_id: node.node_id().to_owned(),
    })
}

fn collection_definition(id: &str) -> Value {
    json!({
        "id": id,
        "name": "agent-task evidence",
        "description": "Collector runs imported by the workflow authority, one record per run; a finalized run's record is superseded by one carrying its receipt digest.",
        "policy": {"visibility": "private", "allowed_media_types": ["application/json"]},
    })
}

/// `evidence status`: the targets and the outbox counts.
pub fn status(root: &Path) -> Result<Value> {
    outbox::status(root)
}

/// The nodes a drain writes to, opened once each.
struct Nodes {
    clock: Arc<dyn Clock>,
    timeout: Duration,
    open: HashMap<PathBuf, Node>,
}

impl Nodes {
    fn get(&mut self, dir: &Path) -> Result<&Node> {
        if !self.open.contains_key(dir) {
            let n = Node::open(dir, self.clock.clone(), self.timeout)?;
            self.open.insert(dir.to_owned(), n);
        }
        self.open
            .get(dir)
            .ok_or_else(|| Error::internal("the node just opened is gone"))
    }
}

/// Writes every pending outbox row of the workflow data directory `root`
/// into its target and marks it done. A row that fails stays pending for
/// the next drain; the others go on.
pub fn drain(root: &Path, clock: Arc<dyn Clock>, timeout: Duration) -> Result<DrainReport> {
    let mut report = DrainReport::default();
    let mut nodes = Nodes {
        clock: clock.clone(),
        timeout,
        open: HashMap::new(),
    };
    let mut after = 0;
    loop {
        let rows = outbox::pending(root, after, BATCH)?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        let mut done = Vec::with_capacity(rows.len());
        for row in &rows {
            match write_row(&mut nodes, row, &mut report) {
                Ok(record_id) => done.push((row.seq, record_id)),
                Err(e) => {
                    report.failed += 1;
                    if report.errors.len() < MAX_ERRORS {
                        report.errors.push(DrainError {
                            seq: row.seq,
                            error: e.code().as_str().to_owned(),
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
        // The records are durable; a crash here leaves the rows pending
        // and the next drain writes them again, storing nothing new.
        crate::testhooks::crash_point("evidence_after_write");
        report.done += outbox::mark_done(root, timeout, clock.as_ref(), done)?;
    }
    Ok(report)
}

/// The collect input of one version of a run's record.
fn input(row: &OutboxRow, payload: &str, version: &str, supersedes: Option<&str>) -> Value {
    let content: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let mut meta = Map::new();
    for k in [
        "repository",
        "change_id",
        "change_version",
        "step_id",
        "collector_kind",
        "outcome",
        "exit_code",
        "receipt_digest",
    ] {
        if let Some(v) = content.get(k).filter(|v| !v.is_null()) {
            meta.insert(k.into(), v.clone());
        }
    }
    let mut m = Map::new();
    m.insert("text".into(), payload.into());
    m.insert("media_type".into(), "application/json".into());
    m.insert(
        "source_uri".into(),
        format!("agent-task:evidence:{}", row.transfer_digest).into(),
    );
    m.insert("key".into(), row.transfer_digest.clone().into());
    m.insert("version".into(), version.into());
    m.insert("metadata".into(), Value::Object(meta));
    if let Some(s) = supersedes {
        m.insert("supersedes_id".into(), s.into());
    }
    Value::Object(m)
}

/// Collects one version into `collection`; returns its record id.
fn collect_one(
    node: &Node,
    collection: &str,
    input: Value,
    report: &mut DrainReport,
) -> Result<String> {
    let req = CollectRequest {
        collection_id: Some(collection.into()),
        collector_id: Some("text".into()),
        input: Some(input),
        cursor: None,
    };
    let out = match node.collect(&req) {
        Err(e) if e.code() == Code::CollectionNotFound => {
            node.create_collection(&collection_definition(collection))?;
            node.collect(&req)?
        }
        r => r?,
    };
    report.inserted += out.inserted;
    report.existing += out.existing;
    out.records
        .first()
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::internal("the collect returned no record"))
}

/// Writes one row; returns the record id it became.
fn write_row(nodes: &mut Nodes, row: &OutboxRow, report: &mut DrainReport) -> Result<String> {
    let (dir, collection) = row.target.as_ref().ok_or_else(|| {
        Error::new(
            Code::Config,
            format!("repository {} has no evidence target", row.repo_id),
        )
    })?;
    let node = nodes.get(dir)?;
    match (row.kind.as_str(), &row.prior_payload) {
        ("run", _) => collect_one(
            node,
            collection,
            input(row, &row.payload, "imported", None),
            report,
        ),
        ("receipt", Some(prior)) => {
            // The run's own version first (it exists unless it was never
            // drained: writing it again stores nothing new).
            let run = collect_one(
                node,
                collection,
                input(row, prior, "imported", None),
                report,
            )?;
            collect_one(
                node,
                collection,
                input(row, &row.payload, "finalized", Some(&run)),
                report,
            )
        }
        _ => Err(Error::internal("an outbox row of an unknown kind")),
    }
}
