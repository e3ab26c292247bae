//! `data collect`: one record, or bulk ingest from JSON lines.

use crate::cli::commands::{Reply, to_value};
use crate::cli::ctx::Ctx;
use crate::data::{BulkProgress, BulkRequest, CollectRequest};
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `data collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// Collection id.
    #[arg(long)]
    pub collection: String,
    /// Collector id (`text`, `file`, …).
    #[arg(long)]
    pub collector: String,
    /// The collector input as a JSON object.
    #[arg(
        long,
        value_name = "JSON",
        required_unless_present = "jsonl",
        conflicts_with = "jsonl"
    )]
    pub input: Option<String>,
    /// Bulk ingest: a file (or `-` for stdin) with one collector input
    /// object per line. Many records share each durable transaction; after
    /// each commit one JSON line on stderr acknowledges every line up to
    /// `committed_through_line`.
    #[arg(long, value_name = "FILE|-")]
    pub jsonl: Option<PathBuf>,
    /// Lines per durable transaction in bulk mode, at most (the first
    /// batch has at most 1,024, each next one four times the last; a batch is
    /// also cut at 16 MiB of prepared records).
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
    /// Bulk mode: a batch also commits once its first line has waited this
    /// many milliseconds, however few lines it has, so a slow producer's
    /// lines are acknowledged within about this long.
    #[arg(long, value_name = "MS", default_value_t = crate::data::node::DEFAULT_FLUSH_MS, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub flush_ms: u64,
}

pub(super) fn run(ctx: &Ctx, a: &CollectArgs) -> Result<Reply> {
    let node = super::open_node(ctx)?;
    let Some(path) = &a.jsonl else {
        let input = a
            .input
            .as_deref()
            .ok_or_else(|| Error::new(Code::Usage, "--input or --jsonl is required"))?;
        let input = Value::Object(super::json_object("--input", input)?);
        let req = CollectRequest {
            collection_id: Some(a.collection.clone().into()),
            collector_id: Some(a.collector.clone().into()),
            input: Some(input),
            cursor: None,
        };
        return to_value(&node.collect(&req)?).map(Reply::from);
    };
    let req = BulkRequest {
        collection_id: a.collection.clone(),
        collector_id: a.collector.clone(),
        batch_lines: usize::try_from(a.batch).unwrap_or(usize::MAX),
        flush: std::time::Duration::from_millis(a.flush_ms),
    };
    let start = std::time::Instant::now();
    crate::progress::enable_at_terminal();
    let _bar = crate::progress::Bar::start("data collect");
    crate::progress::phase("ingesting", None);
    let at_terminal = crate::progress::is_shown();
    // The acknowledgement: one JSON line on stderr per committed batch, for
    // the program that reads it; a person at a terminal sees the counts
    // redrawn in place instead.
    let ack = |p: &BulkProgress| {
        if at_terminal {
            crate::progress::message(format!(
                "line {}: {} new, {} existing, {} failed",
                p.committed_through_line, p.inserted, p.existing, p.failed
            ));
            return;
        }
        if let Ok(line) = serde_json::to_string(p) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
            let _ = err.flush();
        }
    };
    let summary = if path.as_os_str() == "-" {
        node.ingest_lines(&req, std::io::stdin(), &ack)?
    } else {
        let f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        node.ingest_lines(&req, f, &ack)?
    };
    let secs = start.elapsed().as_secs_f64();
    let p = &summary.progress;
    let errors: Vec<Value> = summary
        .errors
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("line".into(), e.line.into());
            if let Value::Object(o) = e.error.to_json() {
                m.extend(o);
            }
            Value::Object(m)
        })
        .collect();
    let value = serde_json::to_value(BulkOutput {
        errors_truncated: p.failed as usize > errors.len(),
        errors,
        existing: p.existing,
        failed: p.failed,
        inserted: p.inserted,
        last_line: p.committed_through_line,
        lines: p.lines,
        seconds: (secs * 1000.0).round() / 1000.0,
    })?;
    Ok(Reply {
        text: None,
        value,
        exit_code: if p.failed == 0 {
            0
        } else {
            Code::InvalidInput.exit_code()
        },
    })
}

/// `data collect --bulk`'s summary (a JSON object: fields in key order).
#[derive(serde::Serialize)]
struct BulkOutput {
    errors: Vec<Value>,
    errors_truncated: bool,
    existing: u64,
    failed: u64,
    inserted: u64,
    last_line: u64,
    lines: u64,
    seconds: f64,
}
