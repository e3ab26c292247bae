//! Bulk `--jsonl` input as `data collect --jsonl` ingests it
//! (`data::Node::ingest_lines` with the `text` collector, the CLI's
//! request), on a node that is replaced every few thousand runs so that it
//! stays small. Checked: the summary covers every physical line; every
//! non-blank line is counted once, as one record inserted, one that
//! already existed, or one typed failure (never `internal`); ingesting the
//! same input again (when the first ingest stored or found anything)
//! inserts nothing and fails the same lines (record ids do not depend on
//! time: a rerun stores each line exactly once).
#![no_main]
use agent_task::data::{BulkRequest, Node};
use agent_task::error::Code;
use agent_task_fuzz::fresh_node;
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use std::sync::Mutex;
use std::time::Duration;

struct Fresh {
    node: Node,
    runs: u32,
    _dir: tempfile::TempDir,
}

static NODE: Mutex<Option<Fresh>> = Mutex::new(None);

fn request() -> BulkRequest {
    BulkRequest {
        collection_id: "default".into(),
        collector_id: "text".into(),
        batch_lines: 1000,
        flush: Duration::from_millis(1000),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut guard = NODE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|f| f.runs >= 4000) {
        *guard = None;
        let (dir, node) = fresh_node();
        *guard = Some(Fresh {
            node,
            runs: 0,
            _dir: dir,
        });
    }
    let Some(f) = guard.as_mut() else { return };
    f.runs += 1;
    let physical = data.split(|b| *b == b'\n').count()
        - usize::from(data.ends_with(b"\n"))
        - usize::from(data.is_empty());
    let non_blank = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .count();
    let run = || {
        let s = f
            .node
            .ingest_lines(&request(), Cursor::new(data.to_vec()), &|_| {})
            .unwrap_or_else(|e| panic!("a store failure on input: {e}"));
        for e in &s.errors {
            assert_ne!(e.error.code(), Code::Internal, "untyped: {}", e.error);
            assert!(e.line >= 1 && e.line <= physical as u64);
        }
        s.progress
    };
    let first = run();
    assert_eq!(first.committed_through_line, physical as u64);
    assert_eq!(first.lines, non_blank as u64);
    assert_eq!(
        first.inserted + first.existing + first.failed,
        first.lines,
        "{first:?}"
    );
    if first.inserted == 0 && first.existing == 0 {
        // Nothing stored: a rerun would only repeat the refusals (an
        // ingest costs threads and a transaction; skipping it here is what
        // lets the target run millions of times).
        return;
    }
    let second = run();
    assert_eq!(second.inserted, 0, "a rerun inserted: {second:?}");
    assert_eq!(second.failed, first.failed);
    assert_eq!(second.existing, first.inserted + first.existing);
});
