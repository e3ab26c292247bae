//! Shared fixtures of the fuzz targets: a fixed signing key, a valid sealed
//! transfer and assertion to mutate, a small data node to query, and the
//! byte-patching used by the "structured" modes of the targets.

#![allow(missing_docs)]

use agent_task::data::{InitRequest, Node};
use agent_task::wire::ed25519::Keypair;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The fixed signing key of every target (RFC 8032 test 1 seed, the same
/// key as `fixtures/observation-signing-vectors.json`).
pub fn key() -> &'static Keypair {
    static K: OnceLock<Keypair> = OnceLock::new();
    K.get_or_init(|| {
        let mut seed = [0u8; 32];
        let hex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
        for (i, b) in seed.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
        }
        Keypair::from_seed(&seed)
    })
}

fn d(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

/// A structurally valid header (records are filled in by `seal`).
pub fn header() -> agent_task::collector::transfer::TransferHeader {
    serde_json::from_value(json!({
        "version": 1, "kind": "command", "audience": "dd_1", "repository": "demo/basic",
        "profile": "default", "step_id": "tests", "collector_profile_id": "cp_1",
        "collector_profile_digest": d('a'), "task_id": "task_1", "task_digest": d('b'),
        "attempt_id": "att_1", "attempt_digest": d('c'), "execution_operation_id": "exec_1",
        "fence": 1, "origin": {"owner_id": "alice", "agent_id": "a", "grant_generation": 1},
        "registration": {"registration_id": "reg_1", "executor_id": "ci", "epoch": 1, "key_id": "kid_1"},
        "request_digest": d('d'),
        "collector_identity": {"runtime": "bwrap", "runtime_identity_digest": null, "agent_task_version": "0"},
        "upload_request_id": "up_1", "records": []
    }))
    .expect("header")
}

/// A valid sealed transfer signed by [`key`].
pub fn valid_transfer() -> &'static [u8] {
    static T: OnceLock<Vec<u8>> = OnceLock::new();
    T.get_or_init(|| {
        let recs = vec![
            br#"{"version":1,"argv":["sh","test.sh"]}"#.to_vec(),
            br#"{"version":1,"status":"completed"}"#.to_vec(),
        ];
        agent_task::collector::transfer::seal(header(), &recs, key()).expect("seal")
    })
}

/// The first assertion of the observation signing vectors, signed by [`key`].
pub fn signed_assertion() -> &'static agent_task::contract::TaskResultAssertion {
    static A: OnceLock<agent_task::contract::TaskResultAssertion> = OnceLock::new();
    A.get_or_init(|| {
        let doc: Value = serde_json::from_str(include_str!(
            "../../fixtures/observation-signing-vectors.json"
        ))
        .expect("vectors");
        let mut a: agent_task::contract::TaskResultAssertion =
            serde_json::from_value(doc["cases"][0]["assertion"].clone()).expect("assertion");
        agent_task::contract::observation::sign(&mut a, key()).expect("sign");
        a
    })
}

/// Applies one edit encoded in `data` to `base`: `[op, off_hi, off_lo,
/// payload…]`; op 0 overwrites at the offset, 1 inserts, 2 truncates there
/// and appends the payload, 3 flips the bits of the payload's length of
/// bytes at the offset.
pub fn patch(base: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    let [op, hi, lo, payload @ ..] = data else {
        return out;
    };
    let off = if out.is_empty() {
        0
    } else {
        usize::from(u16::from_be_bytes([*hi, *lo])) % (out.len() + 1)
    };
    match op % 4 {
        0 => {
            for (i, b) in payload.iter().enumerate() {
                match out.get_mut(off + i) {
                    Some(x) => *x = *b,
                    None => out.push(*b),
                }
            }
        }
        1 => {
            out.splice(off..off, payload.iter().copied());
        }
        2 => {
            out.truncate(off);
            out.extend_from_slice(payload);
        }
        _ => {
            for i in 0..payload.len() {
                if let Some(x) = out.get_mut(off + i) {
                    *x ^= payload[i];
                }
            }
        }
    }
    out
}

/// A data node in a temp directory with a few records and collections,
/// shared by every run of a target process.
pub fn node() -> &'static Arc<Node> {
    &node_and_dir().1
}

fn node_and_dir() -> &'static (tempfile::TempDir, Arc<Node>) {
    static N: OnceLock<(tempfile::TempDir, Arc<Node>)> = OnceLock::new();
    N.get_or_init(|| {
        let (t, node) = fresh_node();
        (t, Arc::new(node))
    })
}

/// A new data node in a new temp directory with a few records and
/// collections (the directory goes with the returned guard). On tmpfs
/// (`/dev/shm`) when there is one: the writes' fsyncs are then free, which
/// is what lets a writing target (`bulk_jsonl`) run millions of times.
pub fn fresh_node() -> (tempfile::TempDir, Node) {
    agent_task::store::private_fs::set_private_umask();
    // Reads keep their connection, as under `serve` (a fresh connection
    // per read re-reads the whole WAL: the targets ran at a few hundred
    // executions per second).
    agent_task::store::enable_read_cache();
    let shm = std::path::Path::new("/dev/shm");
    let t = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("tempdir");
    let root = t.path().join("data");
    let clock = Arc::new(agent_task::clock::SystemClock);
    let files = t.path().join("files");
    std::fs::create_dir_all(&files).expect("mkdir");
    std::fs::write(files.join("note.md"), "# a note\nwith words").expect("write");
    agent_task::data::node::init(
        &root,
        &InitRequest {
            node_id: None,
            file_roots: vec![files],
        },
        clock.as_ref(),
        Duration::from_secs(5),
    )
    .expect("data init");
    let node = Node::open(&root, clock, Duration::from_secs(5)).expect("open node");
    for (i, text) in [
        "alpha beta gamma",
        "beta delta",
        "gamma epsilon zeta alpha",
        "ＨＥＬＬＯ wörld",
    ]
    .iter()
    .enumerate()
    {
        let body = json!({"collection_id": "default", "collector_id": "text",
            "input": {"text": text, "metadata": {"i": i, "tag": ["x", "y"]}, "key": format!("k{i}")}});
        let req = agent_task::data::CollectRequest::from_json(body.as_object().expect("o"));
        node.collect(&req).expect("seed collect");
    }
    (t, node)
}

/// The node bearer of [`router`].
pub const TOKEN: &str = "fuzz-node-bearer-0123456789";

/// The server's router as `serve --workspace-config` mounts it: the data
/// routes on [`node`] with [`TOKEN`], and the workspace task routes, collector
/// upload and MCP for one profile of the node's data directory (which has
/// no agent tokens, so every workspace bearer is refused).
pub fn router() -> &'static agent_task::http::router::Router {
    use agent_task::http::{hosts::HostAllowList, router::Router, workspace};
    use agent_task::workflow::service::facade::WorkspaceConfig;
    static R: OnceLock<Router> = OnceLock::new();
    R.get_or_init(|| {
        let (dir, node) = node_and_dir();
        let mut r = Router::new();
        agent_task::http::data_routes::mount(&mut r, node.clone(), Some(TOKEN.to_owned()));
        let cfg = json!({"version": 1, "agent_task_profiles": [{
            "repository_id": "demo-basic", "profile_id": "default",
            "native_repository": "demo/basic", "data_dir": dir.path().join("data"),
            "target": "main", "requirement_digest": d('e')}]});
        let config = WorkspaceConfig::parse(cfg.to_string().as_bytes()).expect("config");
        let hosts = HostAllowList::new(
            "127.0.0.1",
            "127.0.0.1:7742".parse().expect("addr"),
            &[],
            false,
        )
        .expect("hosts");
        agent_task::http::mount_workspace(
            &mut r,
            Arc::new(workspace::Workspace {
                config,
                writers: workspace::Writers::default(),
                clock: Arc::new(agent_task::clock::SystemClock),
                lock_timeout: Duration::from_secs(5),
                hosts: Arc::new(hosts),
                limits: agent_task::workflow::service::remote::RemoteLimits::default(),
                gate: Default::default(),
            }),
        );
        r
    })
}

/// The body as the data routes decode it: UTF-8, then serde_json's lenient
/// `Value` (last duplicate wins), an object.
pub fn data_body(data: &[u8]) -> Option<serde_json::Map<String, Value>> {
    let text = std::str::from_utf8(data).ok()?;
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The reference-produced sync pages (`fixtures/sync/`, a copy of the
/// spec's page vectors) and what the destination of the vectors knows.
pub mod sync_vectors {
    use agent_task::sync::adds::object::Principal;
    use serde_json::Value;
    use std::sync::OnceLock;

    /// The vector document.
    pub fn doc() -> &'static Value {
        static D: OnceLock<Value> = OnceLock::new();
        D.get_or_init(|| {
            serde_json::from_str(include_str!(
                "../../fixtures/sync/agent-data-sync-page-vectors.json"
            ))
            .expect("page vectors")
        })
    }

    /// The destination of the vectors: pinned publisher, its recipient
    /// secret and id, the source node id, the clock the grants are valid at.
    pub struct Dest {
        pub publisher: Principal,
        pub secret: [u8; 32],
        pub id: String,
        pub node_id: String,
        pub now: i64,
    }

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
        }
        out
    }

    /// The vectors' destination.
    pub fn dest() -> &'static Dest {
        static D: OnceLock<Dest> = OnceLock::new();
        D.get_or_init(|| {
            let d = doc();
            let s = |v: &Value| v.as_str().expect("string").to_owned();
            Dest {
                publisher: Principal {
                    id: s(&d["pinned_publisher"]["id"]),
                    ed25519_public_key: s(&d["pinned_publisher"]["ed25519_public_key_base64url"]),
                },
                secret: hex32(&s(&d["destination"]["x25519_private_key_hex"])),
                id: s(&d["destination"]["id"]),
                node_id: s(&d["source_node_id"]),
                now: d["grant_validity"]["issued_at"]
                    .as_i64()
                    .expect("issued_at"),
            }
        })
    }

    /// The pages' response bodies, as a source sends them.
    pub fn pages() -> &'static [Vec<u8>] {
        static P: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
        P.get_or_init(|| {
            doc()["pages"]
                .as_array()
                .expect("pages")
                .iter()
                .map(|p| serde_json::to_vec(&p["response_page"]).expect("page"))
                .collect()
        })
    }
}

/// A real landed note (`fuzz/fixtures/landed-note.jsonl`, written by `land`
/// in `scripts/soak-land.sh`), its envelopes' payloads, and the same
/// payloads signed by [`key`] so that a target can mutate an envelope that
/// verifies.
pub mod note {
    use agent_task::workflow::attest::dsse::{self, Envelope};
    use std::sync::OnceLock;

    /// The note as `land` wrote it.
    pub const LANDED: &str = include_str!("../fixtures/landed-note.jsonl");

    /// The key id [`super::key`] signs under.
    pub fn keyid() -> &'static str {
        static K: OnceLock<String> = OnceLock::new();
        K.get_or_init(|| agent_task::workflow::attest::key::key_id(&super::key().public_key()))
    }

    /// The in-toto statements of the landed note.
    pub fn payloads() -> &'static [Vec<u8>] {
        static P: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
        P.get_or_init(|| {
            LANDED
                .lines()
                .map(|l| {
                    let e = Envelope::parse(l.as_bytes()).expect("landed envelope");
                    dsse::decode_b64(&e.payload).expect("payload")
                })
                .collect()
        })
    }

    /// Each statement signed by [`super::key`], one JSON line each.
    pub fn signed_lines() -> &'static [String] {
        static L: OnceLock<Vec<String>> = OnceLock::new();
        L.get_or_init(|| {
            payloads()
                .iter()
                .map(|p| {
                    Envelope::sign(dsse::PAYLOAD_TYPE_IN_TOTO, p, super::key(), keyid())
                        .to_line()
                        .expect("line")
                })
                .collect()
        })
    }
}
