//! Integration tests: every test drives the real `agent-task` binary against
//! a temp data directory. One test binary (`autotests = false`).

#![allow(clippy::print_stdout, clippy::print_stderr)] // tests may explain a skip
#![allow(clippy::disallowed_methods)] // the suite reads its environment and inspects stores directly

mod attest;
mod attest_interop;
mod authority_faults;
mod blob_clock;
mod blob_lock;
mod blob_migrate;
mod blob_s3;
mod blob_s3_faults;
mod cas;
mod checkout_attrs;
mod collect_faults;
mod collect_flow;
mod collect_oci;
mod collect_race;
mod common;
mod compute_pool;
mod dashboard;
mod data_bulk;
mod data_core;
mod data_file_collector;
mod data_hostile;
mod data_http;
mod data_http_collector;
mod data_ingest;
mod data_write_panic;
mod deploy;
mod docs;
mod doctor;
mod evidence;
mod evidence_data;
mod explain;
mod forge;
mod forge_propose;
mod forge_push;
mod forge_status;
mod foundation;
mod hook_authority;
mod hook_install;
mod hook_scan;
mod hook_stop;
mod http_hostile;
mod land_crash;
mod land_repo;
mod mcp_client;
mod mcp_conformance;
mod mcp_data;
mod mcp_eras;
mod mcp_interop;
mod net_ssrf;
mod overview;
mod privsep;
mod privsep_freeze;
mod privsep_review;
mod profile_basis;
mod reads_create_nothing;
mod remote_checkpoint;
mod review_core;
mod review_flow;
mod runtime;
mod sandbox_attributes;
mod serve_tls;
mod small_things;
mod strict_json;
mod sync_nodes;
mod sync_pull;
mod task_fences;
mod task_flow;
mod task_race;
mod workspace_collect;
mod workspace_http;

/// Every `.rs` file under `tests/cli/` is a module of this binary: one that
/// no `mod` line reaches would never be compiled, and its tests would pass
/// by not running. Walks the `mod name;` lines from `main.rs` down
/// (`name.rs` or `name/mod.rs` next to a `main.rs`/`mod.rs`, under
/// `parent/` otherwise) and names every file left over.
#[test]
fn no_forgotten_test_files() {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};
    fn all_rs(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                all_rs(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.insert(p);
            }
        }
    }
    fn reach(file: &Path, out: &mut BTreeSet<PathBuf>) {
        out.insert(file.to_path_buf());
        let text = std::fs::read_to_string(file).expect("read");
        let stem = file.file_stem().and_then(|s| s.to_str()).expect("stem");
        let parent = file.parent().expect("parent");
        let dir = if stem == "main" || stem == "mod" {
            parent.to_path_buf()
        } else {
            parent.join(stem)
        };
        for line in text.lines() {
            let l = line.trim_start();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let Some(name) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) else {
                continue;
            };
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(name).join("mod.rs");
            match (flat.exists(), nested.exists()) {
                (true, false) => reach(&flat, out),
                (false, true) => reach(&nested, out),
                _ => panic!("`mod {name};` in {} names no single file", file.display()),
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    let mut files = BTreeSet::new();
    all_rs(&root, &mut files);
    let mut declared = BTreeSet::new();
    reach(&root.join("main.rs"), &mut declared);
    let forgotten: Vec<_> = files.difference(&declared).collect();
    assert!(
        forgotten.is_empty(),
        "test files no `mod` line declares (add them to tests/cli/main.rs or common/mod.rs): {forgotten:?}"
    );
    assert!(declared.len() > 50, "{declared:?}");
}
