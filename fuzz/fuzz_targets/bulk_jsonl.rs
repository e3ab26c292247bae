//! Bulk `--jsonl` input as `data collect --jsonl` ingests it, in two
//! depths on a node that is replaced every few thousand runs so that it
//! stays small.
//!
//! Every input: each physical line goes through `data::BulkLines::prepare`,
//! the per-line body `Node::ingest_lines` runs on what its reader thread
//! reads (trim, blank lines skipped, the JSON object through the `text`
//! collector). Checked: a refusal is typed (never `internal`); a prepared
//! line yields records whose canonical envelope is a JSON object naming
//! the record's id, whose digest is the SHA-256 of its bytes; preparing
//! the same line again yields the same ids (record ids do not depend on
//! time).
//!
//! One input in 256 (chosen by a hash of its bytes, so a crash
//! reproduces): the whole `Node::ingest_lines`, twice. Checked: the
//! summary covers every physical line; every non-blank line is counted
//! once, as one record inserted, one that already existed, or one typed
//! failure; every line the preparer refused is among the failures; a
//! rerun inserts nothing and fails the same lines.
#![no_main]
use agent_task::data::{BulkRequest, Node};
use agent_task::error::Code;
use agent_task::wire::digest::Sha256Hex;
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

/// The physical lines as the bulk reader cuts them (each with its `\n`).
fn physical_lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|b| *b == b'\n').collect()
}

/// FNV-1a: which inputs also take the whole ingest.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fuzz_target!(|data: &[u8]| {
    let mut guard = NODE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|f| f.runs >= 20_000) {
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
    let lines = physical_lines(data);
    let preparer = f
        .node
        .bulk_lines(&request())
        .expect("the text collector exists");
    let mut refused = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let first = match preparer.prepare(line) {
            Ok(p) => p,
            Err(e) => {
                assert_ne!(e.code(), Code::Internal, "untyped: {e}");
                refused.push(i as u64 + 1);
                continue;
            }
        };
        let Some(items) = first else {
            assert!(line.trim_ascii().is_empty(), "a non-blank line was skipped");
            continue;
        };
        assert!(!line.trim_ascii().is_empty(), "a blank line was prepared");
        assert!(!items.is_empty(), "a prepared line without records");
        for p in &items {
            let env: serde_json::Value =
                serde_json::from_str(&p.canonical).expect("canonical envelope is JSON");
            assert_eq!(env.get("id").and_then(|v| v.as_str()), Some(p.id.as_str()));
            assert_eq!(Sha256Hex::digest(&p.bytes), p.sha256, "digest of the bytes");
        }
        let again = preparer
            .prepare(line)
            .expect("a prepared line prepares again")
            .expect("not blank");
        let ids = |v: &[agent_task::data::node::Prepared]| {
            v.iter().map(|p| p.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&items), ids(&again), "record ids depend on time");
    }
    drop(preparer);
    if fnv(data) % 256 != 0 {
        return;
    }
    let physical = lines.len();
    let non_blank = lines.iter().filter(|l| !l.trim_ascii().is_empty()).count();
    let run = || {
        let s = f
            .node
            .ingest_lines(&request(), Cursor::new(data.to_vec()), &|_| {})
            .unwrap_or_else(|e| panic!("a store failure on input: {e}"));
        for e in &s.errors {
            assert_ne!(e.error.code(), Code::Internal, "untyped: {}", e.error);
            assert!(e.line >= 1 && e.line <= physical as u64);
        }
        s
    };
    let first = run();
    let p = &first.progress;
    assert_eq!(p.committed_through_line, physical as u64);
    assert_eq!(p.lines, non_blank as u64);
    assert_eq!(p.inserted + p.existing + p.failed, p.lines, "{p:?}");
    assert!(p.failed >= refused.len() as u64, "{p:?} {refused:?}");
    let listed: Vec<u64> = first.errors.iter().map(|e| e.line).collect();
    for line in refused
        .iter()
        .filter(|l| listed.len() < 100 || **l <= listed[99])
    {
        assert!(
            listed.contains(line),
            "line {line} refused by the preparer only"
        );
    }
    if p.inserted == 0 && p.existing == 0 {
        return;
    }
    let second = run().progress;
    assert_eq!(second.inserted, 0, "a rerun inserted: {second:?}");
    assert_eq!(second.failed, p.failed);
    assert_eq!(second.existing, p.inserted + p.existing);
});
