//! Integration tests: every test drives the real `agent-task` binary against
//! a temp data directory. One test binary (`autotests = false`).

#![allow(clippy::print_stdout, clippy::print_stderr)] // tests may explain a skip
#![allow(clippy::disallowed_methods)] // the suite reads its environment and inspects stores directly

mod attest;
mod attest_interop;
mod authority_faults;
mod cas;
mod checkout_attrs;
mod collect_faults;
mod collect_flow;
mod collect_oci;
mod collect_race;
mod common;
mod compute_pool;
mod data_bulk;
mod data_core;
mod data_file_collector;
mod data_hostile;
mod data_http;
mod data_http_collector;
mod data_ingest;
mod data_support;
mod data_write_panic;
mod deploy;
mod docs;
mod doctor;
mod doctor_fake;
mod evidence;
mod foundation;
mod hook_authority;
mod hook_install;
mod hook_scan;
mod hook_stop;
mod http_hostile;
mod land_crash;
mod land_repo;
mod mcp_client;
mod mcp_interop;
mod net_ssrf;
mod origin;
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
mod strict_json;
mod sync_nodes;
mod sync_pull;
mod sync_support;
mod task_fences;
mod task_flow;
mod task_race;
mod task_support;
mod workspace_collect;
mod workspace_http;
