//! `data collect`: one record, or bulk ingest from JSON lines.

use crate::cli::commands::{Reply, to_value};
use crate::cli::ctx::Ctx;
use crate::data::CollectRequest;
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value, json};
use std::io::{BufRead, IsTerminal, Write};
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
    /// object per line. Many records share each durable transaction.
    #[arg(long, value_name = "FILE|-")]
    pub jsonl: Option<PathBuf>,
    /// Lines per durable transaction in bulk mode.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
}

/// Longest accepted JSON line in bulk mode.
const MAX_LINE: u64 = 32 << 20;
/// Errors listed in the bulk summary.
const MAX_LISTED_ERRORS: usize = 100;

pub(super) fn run(ctx: &Ctx, a: &CollectArgs) -> Result<Reply> {
    let node = super::open_node(ctx)?;
    let base = |input: Option<Value>| CollectRequest {
        collection_id: Some(a.collection.clone().into()),
        collector_id: Some(a.collector.clone().into()),
        input,
        cursor: None,
    };
    let Some(path) = &a.jsonl else {
        let input = a
            .input
            .as_deref()
            .ok_or_else(|| Error::new(Code::Usage, "--input or --jsonl is required"))?;
        let input = Value::Object(super::json_object("--input", input)?);
        return to_value(&node.collect(&base(Some(input)))?).map(Reply::from);
    };
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, f))
    };
    bulk(&node, reader, a.batch as usize, &base)
}

struct Summary {
    lines: u64,
    inserted: u64,
    existing: u64,
    failed: u64,
    errors: Vec<Value>,
}

fn bulk(
    node: &crate::data::Node,
    mut reader: Box<dyn BufRead>,
    batch: usize,
    base: &dyn Fn(Option<Value>) -> CollectRequest,
) -> Result<Reply> {
    let start = std::time::Instant::now();
    let progress = std::io::stderr().is_terminal();
    let mut s = Summary {
        lines: 0,
        inserted: 0,
        existing: 0,
        failed: 0,
        errors: Vec::new(),
    };
    let mut pending: Vec<(u64, CollectRequest)> = Vec::with_capacity(batch);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = std::io::Read::take(&mut reader, MAX_LINE + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::new(Code::Io, format!("reading input: {e}")))?;
        if n == 0 {
            break;
        }
        if n as u64 > MAX_LINE && !buf.ends_with(b"\n") {
            return Err(Error::new(
                Code::TooLarge,
                format!("line {} is longer than {MAX_LINE} bytes", s.lines + 1),
            ));
        }
        s.lines += 1;
        let line_no = s.lines;
        let text = buf.trim_ascii();
        if text.is_empty() {
            s.lines -= 1;
            continue;
        }
        match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(m)) => pending.push((line_no, base(Some(Value::Object(m))))),
            Ok(_) => fail(
                &mut s,
                line_no,
                &Error::new(Code::InvalidJson, "line must be a JSON object"),
            ),
            Err(e) => fail(
                &mut s,
                line_no,
                &Error::new(Code::InvalidJson, format!("line is not valid JSON: {e}")),
            ),
        }
        if pending.len() >= batch {
            flush(node, &mut pending, &mut s);
            if progress {
                let secs = start.elapsed().as_secs_f64().max(1e-9);
                #[allow(clippy::print_stderr)]
                {
                    eprint!(
                        "\r{} lines, {:.0} records/s   ",
                        s.lines,
                        s.lines as f64 / secs
                    );
                }
            }
        }
    }
    flush(node, &mut pending, &mut s);
    if progress {
        let _ = writeln!(std::io::stderr());
    }
    let secs = start.elapsed().as_secs_f64();
    let value = json!({
        "lines": s.lines,
        "inserted": s.inserted,
        "existing": s.existing,
        "failed": s.failed,
        "errors": s.errors,
        "errors_truncated": s.failed as usize > s.errors.len(),
        "seconds": (secs * 1000.0).round() / 1000.0,
    });
    Ok(Reply {
        value,
        exit_code: if s.failed == 0 {
            0
        } else {
            Code::InvalidInput.exit_code()
        },
    })
}

fn fail(s: &mut Summary, line: u64, e: &Error) {
    s.failed += 1;
    if s.errors.len() < MAX_LISTED_ERRORS {
        let mut m = Map::new();
        m.insert("line".into(), line.into());
        if let Value::Object(o) = e.to_json() {
            m.extend(o);
        }
        s.errors.push(Value::Object(m));
    }
}

fn flush(node: &crate::data::Node, pending: &mut Vec<(u64, CollectRequest)>, s: &mut Summary) {
    if pending.is_empty() {
        return;
    }
    let (lines, reqs): (Vec<u64>, Vec<CollectRequest>) =
        std::mem::take(pending).into_iter().unzip();
    for (line, r) in lines.into_iter().zip(node.collect_batch(&reqs)) {
        match r {
            Ok(resp) => {
                s.inserted += resp.inserted;
                s.existing += resp.existing;
            }
            Err(e) => fail(s, line, &e),
        }
    }
}
