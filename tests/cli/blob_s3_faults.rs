//! The S3 blob store's wire under stress, through the real binary:
//! multipart uploads against `s3s-fs` (a lowered threshold), a given CA
//! (a TLS-terminating forwarder in front of `s3s-fs`), an object replaced
//! by same-length bytes and repaired by a re-put, the server dying in the
//! middle of an upload and of a read (a forwarding proxy that stops after
//! N bytes), and a hand-rolled server on loopback that plays S3 badly (a
//! wrong body, a redirect, a 10 MiB error body, a slow drip, endless or
//! foreign listings, a refused part). Each failure is typed, bounded and
//! commits nothing.
//!
//! The hostile-server tests need no S3 server; the others are skipped
//! without `AGENT_TASK_INTEROP_S3S` (and fail without it under
//! `AGENT_TASK_REQUIRE_INTEROP=1`).

use crate::common::TestEnv;
use crate::common::data_core::{all_changes, collect, collect_run};
use crate::common::pki::pki;
use crate::common::s3::{
    ACCESS_KEY, BUCKET, PREFIX, SECRET_KEY, Server, big, configure_at, digest_of, server_bin,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Bytes that are not a repetition (so a swapped part would show).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

// ---------------------------------------------------------------------------
// A server that plays S3 badly.

/// One request as the hostile server read it.
struct Req {
    method: String,
    /// The path and query.
    target: String,
}

type Handler = dyn Fn(&Req, &mut TcpStream) + Send + Sync;

/// A loopback HTTP server answering every request with `handler` (one
/// request per connection), counting the requests.
struct Hostile {
    port: u16,
    hits: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(handler: impl Fn(&Req, &mut TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (h, l, s) = (hits.clone(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let (handler, h, l) = (handler.clone(), h.clone(), l.clone());
                std::thread::spawn(move || {
                    let Some(req) = read_request(&mut conn) else {
                        return;
                    };
                    h.fetch_add(1, Ordering::SeqCst);
                    l.lock()
                        .expect("log")
                        .push(format!("{} {}", req.method, req.target));
                    handler(&req, &mut conn);
                    let _ = conn.flush();
                    let _ = conn.shutdown(Shutdown::Both);
                });
            }
        });
        Hostile {
            port,
            hits,
            log,
            stop,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads a request's head and discards its body (by `content-length`).
fn read_request(conn: &mut TcpStream) -> Option<Req> {
    conn.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut first = text.lines().next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let len: u64 = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    std::io::copy(&mut conn.take(len), &mut std::io::sink()).ok()?;
    Some(Req { method, target })
}

fn answer(conn: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
}

fn list_xml(keys: &[(&str, usize)], next: Option<&str>) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Name>agent-blobs</Name><Prefix>at/sha256/</Prefix><MaxKeys>1000</MaxKeys>",
    );
    xml.push_str(&format!(
        "<KeyCount>{}</KeyCount><IsTruncated>{}</IsTruncated>",
        keys.len(),
        next.is_some()
    ));
    for (k, size) in keys {
        xml.push_str(&format!(
            "<Contents><Key>{k}</Key><LastModified>2026-12-04T16:33:44.000Z</LastModified>\
             <ETag>&quot;e&quot;</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass>\
             </Contents>"
        ));
    }
    if let Some(t) = next {
        xml.push_str(&format!(
            "<NextContinuationToken>{t}</NextContinuationToken>"
        ));
    }
    xml.push_str("</ListBucketResult>");
    xml
}

/// A data directory holding, in its local CAS, a record with big text
/// content and a `cas put` blob; then pointed at `endpoint` (a bucket
/// whose answers the test controls). Returns the record id, its content
/// digest and text, and the blob's digest and bytes.
struct Hosted {
    env: TestEnv,
    id: String,
    text: String,
    text_digest: String,
    blob: Vec<u8>,
    blob_digest: String,
    changes: usize,
}

fn hosted() -> Hosted {
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let text = big("hosted");
    let rec = collect(&env, "default", &json!({"text": text}))["records"][0].clone();
    let blob = b"a blob the hostile server holds".to_vec();
    let src = env.path("blob.bin");
    std::fs::write(&src, &blob).expect("write");
    let put = env.run(&["cas", "put", p(&src)]).json();
    let changes = all_changes(&env).len();
    Hosted {
        id: rec["id"].as_str().expect("id").to_owned(),
        text_digest: digest_of(&rec),
        text,
        blob_digest: put["digest"].as_str().expect("digest").to_owned(),
        blob,
        env,
        changes,
    }
}

impl Hosted {
    fn point_at(&self, server: &Hostile, timeout_ms: u64) {
        configure_at(
            &self.env,
            &server.endpoint(),
            BUCKET,
            SECRET_KEY,
            &json!({"timeout_ms": timeout_ms}),
        );
    }

    /// `cas cat` of the blob into a file that must not appear.
    fn cat_fails(&self, code: &str, exit: i32) -> Value {
        let out = self.env.path("cat.out");
        let e = self
            .env
            .run(&["cas", "cat", &self.blob_digest, "--out", p(&out)])
            .error(code, exit);
        assert!(
            std::fs::read(&out).map(|b| b.is_empty()).unwrap_or(true),
            "nothing written"
        );
        e
    }

    fn nothing_committed(&self) {
        assert_eq!(
            all_changes(&self.env).len(),
            self.changes,
            "nothing committed"
        );
    }
}

fn key_path(digest: &str) -> String {
    format!("/{BUCKET}/{PREFIX}sha256/{digest}")
}

#[test]
fn a_wrong_body_behind_a_200_is_an_integrity_error() {
    let h = hosted();
    let (blob_key, text_key) = (key_path(&h.blob_digest), key_path(&h.text_digest));
    let (blob_len, text_len) = (h.blob.len(), h.text.len());
    let server = Hostile::start(move |r, c| {
        let len = if r.target.starts_with(&blob_key) {
            blob_len
        } else if r.target.starts_with(&text_key) {
            text_len
        } else {
            return answer(c, "404 Not Found", &[], b"");
        };
        // The right length, other bytes.
        answer(c, "200 OK", &[], &vec![b'x'; len]);
    });
    h.point_at(&server, 5000);
    h.cat_fails("integrity_error", 65);
    h.env
        .run(&["data", "get", &h.id])
        .error("blob_integrity_error", 65);
    let out = h.env.path("content.out");
    h.env
        .run(&["data", "get", &h.id, "--content-out", p(&out)])
        .error("blob_integrity_error", 65);
    assert!(std::fs::read(&out).map(|b| b.is_empty()).unwrap_or(true));
    h.nothing_committed();
}

#[test]
fn a_redirect_is_never_followed() {
    let h = hosted();
    let server = Hostile::start(|r, c| {
        answer(
            c,
            "307 Temporary Redirect",
            &[("location", format!("http://example.com{}", r.target))],
            b"",
        );
    });
    h.point_at(&server, 5000);
    let e = h.cat_fails("blob_store_unavailable", 69);
    assert_eq!(e["details"]["status"], 307, "{e}");
    assert_eq!(server.hits(), 1, "one request: not retried, not followed");
    h.env
        .run(&["data", "get", &h.id])
        .error("blob_store_unavailable", 69);
    collect_run(&h.env, "default", &json!({"text": big("redirected")}))
        .error("blob_store_unavailable", 69);
    h.env
        .run(&["cas", "fsck"])
        .error("blob_store_unavailable", 69);
    h.nothing_committed();
}

/// The HEAD answer an object of `len` bytes gets.
fn head_ok(c: &mut TcpStream, len: usize) {
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n");
    let _ = c.write_all(head.as_bytes());
}

fn gets(server: &Hostile) -> usize {
    server.log().iter().filter(|l| l.starts_with("GET")).count()
}

#[test]
fn a_ten_mib_error_body_is_read_only_as_far_as_its_bounded_head() {
    let h = hosted();
    let status = Arc::new(Mutex::new(("400 Bad Request", "InvalidArgument")));
    let s = status.clone();
    let (blob_key, blob_len, text_len) = (key_path(&h.blob_digest), h.blob.len(), h.text.len());
    let server = Hostile::start(move |r, c| {
        if r.method == "HEAD" {
            // The objects are there; reading them fails.
            return head_ok(
                c,
                if r.target.starts_with(&blob_key) {
                    blob_len
                } else {
                    text_len
                },
            );
        }
        let (st, code) = *s.lock().expect("status");
        let mut body =
            format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>").into_bytes();
        body.resize(10 << 20, b'z');
        body.extend_from_slice(b"</Message></Error>");
        answer(c, st, &[("content-type", "application/xml".into())], &body);
    });
    h.point_at(&server, 5000);
    let t = Instant::now();
    let e = h.cat_fails("blob_store_unavailable", 69);
    assert_eq!(
        (
            e["details"]["status"].clone(),
            e["details"]["s3_code"].clone()
        ),
        (json!(400), json!("InvalidArgument")),
        "{e}"
    );
    assert_eq!(gets(&server), 1, "a 400 is not retried");
    let e = h
        .env
        .run(&["data", "get", &h.id])
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["s3_code"], "InvalidArgument", "{e}");
    h.env
        .run(&["cas", "fsck"])
        .error("blob_store_unavailable", 69);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());

    // S3's retryable codes are retried, a bounded number of times.
    for (st, code) in [
        ("503 Service Unavailable", "SlowDown"),
        ("500 Internal Server Error", "InternalError"),
        ("400 Bad Request", "RequestTimeout"),
    ] {
        *status.lock().expect("status") = (st, code);
        let before = gets(&server);
        let e = h
            .env
            .run(&["data", "get", &h.id])
            .error("blob_store_unavailable", 69);
        assert_eq!(e["details"]["s3_code"], code, "{e}");
        assert_eq!(gets(&server) - before, 4, "{code}: four attempts");
    }
    h.nothing_committed();
}

#[test]
fn a_slow_drip_is_ended_by_the_deadline() {
    let h = hosted();
    let text_len = h.text.len();
    let blob_len = h.blob.len();
    let blob_key = key_path(&h.blob_digest);
    let server = Hostile::start(move |r, c| {
        let len = if r.target.starts_with(&blob_key) {
            blob_len
        } else {
            text_len
        };
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n");
        let _ = c.write_all(head.as_bytes());
        // One byte a second, never the whole body.
        for _ in 0..60 {
            if c.write_all(b"d").and_then(|()| c.flush()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    h.point_at(&server, 1000);
    let t = Instant::now();
    h.cat_fails("blob_store_unavailable", 69);
    h.env
        .run(&["data", "get", &h.id])
        .error("blob_store_unavailable", 69);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "the deadline ends it: {:?}",
        t.elapsed()
    );
    h.nothing_committed();
}

#[test]
fn an_endless_listing_is_bounded() {
    let h = hosted();
    let digest = h.blob_digest.clone();
    let blob_len = h.blob.len();
    // Every page claims more, with a fresh token: the same key again...
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let server = Hostile::start(move |r, c| {
        let i = m.fetch_add(1, Ordering::SeqCst);
        if r.target.contains("list-type=2") {
            let key = format!("{PREFIX}sha256/{digest}");
            let xml = list_xml(&[(&key, blob_len)], Some(&format!("token-{i}")));
            answer(c, "200 OK", &[], xml.as_bytes());
        } else {
            answer(c, "404 Not Found", &[], b"");
        }
    });
    h.point_at(&server, 5000);
    let e = h
        .env
        .run(&["cas", "fsck"])
        .error("blob_store_unavailable", 69);
    assert!(
        e["message"].as_str().expect("m").contains("goes back"),
        "{e}"
    );
    assert_eq!(server.hits(), 2);

    // ...or no key at all.
    let empty = Hostile::start(move |r, c| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        assert!(r.target.contains("list-type=2"), "{}", r.target);
        let xml = list_xml(&[], Some(&format!("token-{i}")));
        answer(c, "200 OK", &[], xml.as_bytes());
    });
    h.point_at(&empty, 5000);
    let e = h
        .env
        .run(&["cas", "fsck"])
        .error("blob_store_unavailable", 69);
    assert!(e["message"].as_str().expect("m").contains("empty"), "{e}");
    assert_eq!(empty.hits(), 16);
    h.nothing_committed();
}

#[test]
fn a_listing_with_keys_outside_the_prefix_checks_only_its_own() {
    let h = hosted();
    let digest = h.blob_digest.clone();
    let blob = h.blob.clone();
    let blob_key = key_path(&h.blob_digest);
    let server = Hostile::start(move |r, c| {
        if r.target.contains("list-type=2") {
            let own = format!("{PREFIX}sha256/{digest}");
            let foreign = format!("elsewhere/sha256/{digest}");
            let xml = list_xml(
                &[
                    ("at/", 0),
                    (&own, blob.len()),
                    ("other-team/x", 3),
                    (&foreign, blob.len()),
                ],
                None,
            );
            answer(c, "200 OK", &[], xml.as_bytes());
        } else if r.target.starts_with(&blob_key) && r.method == "HEAD" {
            head_ok(c, blob.len());
        } else if r.target.starts_with(&blob_key) && r.method == "GET" {
            answer(c, "200 OK", &[], &blob);
        } else {
            answer(c, "404 Not Found", &[], b"");
        }
    });
    h.point_at(&server, 5000);
    let fsck = h.env.run(&["cas", "fsck"]).json();
    assert_eq!(
        (fsck["checked"].clone(), fsck["corrupt"].clone()),
        (json!(1), json!([])),
        "{fsck}"
    );
    let gets: Vec<String> = server
        .log()
        .into_iter()
        .filter(|l| l.starts_with("GET") && !l.contains("list-type"))
        .collect();
    assert_eq!(gets.len(), 1, "only the own key is read: {gets:?}");
    assert!(gets[0].contains(&key_path(&h.blob_digest)));
    h.nothing_committed();
}

#[test]
fn a_refused_part_aborts_the_multipart_upload() {
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Hostile::start(|r, c| match r.method.as_str() {
        "HEAD" if r.target.starts_with(&format!("/{BUCKET}/{PREFIX}")) => {
            answer(c, "404 Not Found", &[], b"");
        }
        "HEAD" => answer(c, "200 OK", &[], b""),
        "POST" if r.target.contains("uploads") => {
            let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                <InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                <Bucket>agent-blobs</Bucket><Key>k</Key><UploadId>up-1</UploadId>\
                </InitiateMultipartUploadResult>";
            answer(c, "200 OK", &[], xml.as_bytes());
        }
        "PUT" => answer(
            c,
            "403 Forbidden",
            &[],
            b"<Error><Code>AccessDenied</Code></Error>",
        ),
        "DELETE" => answer(c, "204 No Content", &[], b""),
        _ => answer(c, "400 Bad Request", &[], b""),
    });
    configure_at(
        &env,
        &server.endpoint(),
        BUCKET,
        SECRET_KEY,
        &json!({"multipart_threshold_mib": 5}),
    );
    let src = env.path("big.bin");
    std::fs::write(&src, noise(6 << 20, 1)).expect("write");
    let e = env
        .run(&["cas", "put", p(&src)])
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["s3_code"], "AccessDenied", "{e}");
    let log = server.log();
    let puts = log.iter().filter(|l| l.starts_with("PUT")).count();
    assert_eq!(puts, 1, "a 403 is not retried: {log:?}");
    assert!(
        log.iter()
            .any(|l| l.starts_with("DELETE") && l.contains("uploadId=up-1")),
        "the upload is aborted: {log:?}"
    );
}

// ---------------------------------------------------------------------------
// Against the real s3s-fs.

/// A data directory with a file root, its blobs in a fresh `s3s-fs`
/// reached at `endpoint(server)` with `extra` configuration.
fn s3_env(extra: &Value) -> Option<(TestEnv, Server)> {
    let bin = server_bin()?;
    let env = TestEnv::new();
    let root = env.path("files");
    std::fs::create_dir_all(&root).expect("mkdir");
    env.run(&["data", "init", "--file-root", p(&root)]).json();
    let server = Server::start(bin, env.path("s3root"));
    configure_at(&env, &server.endpoint(), BUCKET, SECRET_KEY, extra);
    Some((env, server))
}

fn cas_put(env: &TestEnv, bytes: &[u8], name: &str) -> crate::common::Output {
    let src = env.path(name);
    std::fs::write(&src, bytes).expect("write");
    env.run(&["cas", "put", p(&src)])
}

fn cas_cat(env: &TestEnv, digest: &str) -> Vec<u8> {
    let out = env.path("cat.out");
    let _ = std::fs::remove_file(&out);
    env.run(&["cas", "cat", digest, "--out", p(&out)]).json();
    std::fs::read(&out).expect("read")
}

#[test]
fn a_blob_over_the_threshold_goes_up_in_checksummed_parts() {
    let Some((env, server)) = s3_env(&json!({"multipart_threshold_mib": 5})) else {
        return;
    };
    let bytes = noise(12 << 20, 2);
    let digest = hex_digest(&bytes);
    let put = cas_put(&env, &bytes, "twelve.bin").json();
    assert_eq!(put["digest"], digest.as_str());
    assert_eq!(put["created"], true);
    assert_eq!(
        std::fs::read(server.object(&digest)).expect("object"),
        bytes,
        "three parts joined in order"
    );
    assert!(server.side_files(".upload_id-").is_empty(), "no part left");
    assert_eq!(cas_cat(&env, &digest), bytes);

    // A data file over the threshold, collected and read back.
    let file = noise(8 << 20, 3);
    std::fs::write(env.path("files/eight.bin"), &file).expect("write");
    let out = env
        .run(&[
            "data",
            "collect",
            "--collection",
            "default",
            "--collector",
            "file",
            "--input",
            &json!({"path": p(&env.path("files/eight.bin"))}).to_string(),
        ])
        .json();
    let rec = &out["records"][0];
    assert_eq!(digest_of(rec), hex_digest(&file));
    assert!(server.object(&hex_digest(&file)).is_file());
    let got = env.path("eight.out");
    env.run(&[
        "data",
        "get",
        rec["id"].as_str().expect("id"),
        "--content-out",
        p(&got),
    ])
    .json();
    assert_eq!(std::fs::read(&got).expect("read"), file);
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(
        (fsck["checked"].clone(), fsck["corrupt"].clone()),
        (json!(2), json!([]))
    );

    // s3s-fs keeps no checksum for a multipart object, so a second put
    // cannot trust what is there: it uploads again (harmless).
    let again = cas_put(&env, &bytes, "twelve.bin").json();
    assert_eq!(
        (again["created"].clone(), again["digest"].clone()),
        (json!(false), json!(digest))
    );
    assert_eq!(cas_cat(&env, &digest), bytes);
    // Below the threshold: one PUT, whose checksum the server keeps, so a
    // second put is a no-op.
    let small = noise(1 << 20, 4);
    cas_put(&env, &small, "small.bin").json();
    let again = cas_put(&env, &small, "small.bin").json();
    assert_eq!(
        (again["created"].clone(), again["repaired"].clone()),
        (json!(false), json!(false))
    );
}

/// Writes `bytes` at `key` with a plain S3 PUT carrying no checksum, as
/// another client of the bucket would.
fn plain_put(server: &Server, key: &str, bytes: &[u8]) {
    let bucket = rusty_s3::Bucket::new(
        url::Url::parse(&server.endpoint()).expect("url"),
        rusty_s3::UrlStyle::Path,
        BUCKET,
        "us-east-1",
    )
    .expect("bucket");
    let creds = rusty_s3::Credentials::new(ACCESS_KEY, SECRET_KEY);
    let url = rusty_s3::S3Action::sign(
        &bucket.put_object(Some(&creds), key),
        Duration::from_secs(600),
    );
    let r = ureq::put(url.as_str()).send(bytes).expect("plain put");
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn an_object_replaced_by_same_length_bytes_is_uploaded_again() {
    let Some((env, server)) = s3_env(&json!({})) else {
        return;
    };
    let bytes = b"the bytes agent-task acknowledged".to_vec();
    let digest = hex_digest(&bytes);
    assert_eq!(cas_put(&env, &bytes, "a.bin").json()["created"], true);
    let mut wrong = bytes.clone();
    wrong[0] ^= 0x20;
    let key = format!("{PREFIX}sha256/{digest}");

    // Replaced through the S3 API by a client that sends no checksum.
    plain_put(&server, &key, &wrong);
    env.run(&["cas", "cat", &digest, "--out", p(&env.path("bad.out"))])
        .error("integrity_error", 65);
    let again = cas_put(&env, &bytes, "a.bin").json();
    assert_eq!(
        (again["created"].clone(), again["repaired"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(cas_cat(&env, &digest), bytes);

    // Replaced in the server's directory, its checksum record gone with it.
    std::fs::write(server.object(&digest), &wrong).expect("replace");
    for f in server.side_files(".internal.json") {
        std::fs::remove_file(f).expect("rm");
    }
    env.run(&["cas", "cat", &digest, "--out", p(&env.path("bad.out"))])
        .error("integrity_error", 65);
    assert_eq!(cas_put(&env, &bytes, "a.bin").json()["repaired"], true);
    assert_eq!(cas_cat(&env, &digest), bytes);
    // Intact and vouched for by its checksum: a put is a no-op.
    assert_eq!(cas_put(&env, &bytes, "a.bin").json()["repaired"], false);
}

// ---------------------------------------------------------------------------
// A forwarding proxy that dies after N bytes.

/// A TCP proxy in front of `upstream` that, once `up` bytes went to the
/// server (or `down` bytes came back) across all its connections, dies:
/// drops every connection and closes each new one at once, until
/// `restore`.
struct Proxy {
    port: u16,
    up: Arc<AtomicI64>,
    down: Arc<AtomicI64>,
    dead: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    budget: Arc<AtomicI64>,
    dead: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if dead.load(Ordering::SeqCst) {
                break;
            }
            let left = budget.fetch_sub(n as i64, Ordering::SeqCst) - n as i64;
            if left < 0 {
                // Part of the chunk goes through, then the server is gone.
                let part = (n as i64 + left).max(0) as usize;
                let _ = to.write_all(&buf[..part]);
                dead.store(true, Ordering::SeqCst);
                break;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    })
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let up = Arc::new(AtomicI64::new(i64::MAX));
        let down = Arc::new(AtomicI64::new(i64::MAX));
        let dead = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (u, d, x, s) = (up.clone(), down.clone(), dead.clone(), stop.clone());
        std::thread::spawn(move || {
            let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = conn else { continue };
                if x.load(Ordering::SeqCst) {
                    // A dead server: every connection in flight is cut too.
                    for c in live.lock().expect("live").drain(..) {
                        let _ = c.shutdown(Shutdown::Both);
                    }
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                if let (Ok(a), Ok(b)) = (client.try_clone(), server.try_clone()) {
                    live.lock().expect("live").extend([a, b]);
                }
                let (c2, s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                pump(client, server, u.clone(), x.clone());
                pump(s2, c2, d.clone(), x.clone());
            }
        });
        Proxy {
            port,
            up,
            down,
            dead,
            stop,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Dies after `up` more bytes to the server or `down` more from it.
    fn die_after(&self, up: i64, down: i64) {
        self.up.store(up, Ordering::SeqCst);
        self.down.store(down, Ordering::SeqCst);
    }

    /// The server is back.
    fn restore(&self) {
        self.die_after(i64::MAX, i64::MAX);
        self.dead.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

#[test]
fn a_server_dying_mid_upload_or_mid_read_loses_nothing_acknowledged() {
    let Some(bin) = server_bin() else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start(bin, env.path("s3root"));
    let proxy = Proxy::start(server.port);
    configure_at(
        &env,
        &proxy.endpoint(),
        BUCKET,
        SECRET_KEY,
        &json!({"multipart_threshold_mib": 5}),
    );
    // Acknowledged before the outages.
    let kept = noise(3 << 20, 5);
    let kept_digest = hex_digest(&kept);
    cas_put(&env, &kept, "kept.bin").json();
    let rec = collect(&env, "default", &json!({"text": big("kept")}))["records"][0].clone();
    let rec_id = rec["id"].as_str().expect("id").to_owned();
    let changes = all_changes(&env).len();

    // Dies one MiB into a single-PUT upload.
    let single = noise(3 << 20, 6);
    proxy.die_after(1 << 20, i64::MAX);
    cas_put(&env, &single, "single.bin").error("blob_store_unavailable", 69);
    assert!(!server.object(&hex_digest(&single)).exists(), "no object");
    proxy.restore();
    // Dies seven MiB into a multipart upload (in its second part).
    let parts = noise(12 << 20, 7);
    proxy.die_after(7 << 20, i64::MAX);
    cas_put(&env, &parts, "parts.bin").error("blob_store_unavailable", 69);
    assert!(!server.object(&hex_digest(&parts)).exists(), "no object");
    proxy.restore();
    // Dies during a data write: nothing committed.
    proxy.die_after(8 * 1024, i64::MAX);
    collect_run(&env, "default", &json!({"text": big("lost")})).error("blob_store_unavailable", 69);
    assert_eq!(all_changes(&env).len(), changes, "nothing committed");
    proxy.restore();

    // Dies one MiB into a read.
    proxy.die_after(i64::MAX, 1 << 20);
    let out = env.path("read.out");
    env.run(&["cas", "cat", &kept_digest, "--out", p(&out)])
        .error("blob_store_unavailable", 69);
    assert!(std::fs::read(&out).map(|b| b.is_empty()).unwrap_or(true));
    proxy.restore();
    proxy.die_after(i64::MAX, 8 * 1024);
    env.run(&["data", "get", &rec_id])
        .error("blob_store_unavailable", 69);
    proxy.restore();

    // Back: every acknowledged blob reads, every failed put succeeds.
    assert_eq!(cas_cat(&env, &kept_digest), kept);
    assert_eq!(
        env.run(&["data", "get", &rec_id]).json()["content"]["data"],
        big("kept").as_str()
    );
    for (bytes, name) in [(&single, "single.bin"), (&parts, "parts.bin")] {
        assert_eq!(cas_put(&env, bytes, name).json()["created"], true);
        assert_eq!(&cas_cat(&env, &hex_digest(bytes)), bytes);
    }
    collect(&env, "default", &json!({"text": big("lost")}));
    assert_eq!(all_changes(&env).len(), changes + 1);
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(fsck["corrupt"], json!([]));
}

// ---------------------------------------------------------------------------
// TLS with a given CA.

/// A TLS-terminating forwarder on loopback in front of `upstream`, with the
/// leaf of `cert`/`key`; stops when the returned sender is dropped.
fn tls_forwarder(
    cert: &Path,
    key: &Path,
    upstream: u16,
) -> (u16, tokio::sync::oneshot::Sender<()>) {
    let config = agent_task::http::tls::server_config(cert, key).expect("tls config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            loop {
                tokio::select! {
                    _ = &mut rx => return,
                    conn = listener.accept() => {
                        let Ok((sock, _)) = conn else { continue };
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            let Ok(mut tls) = acceptor.accept(sock).await else { return };
                            let Ok(mut up) =
                                tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                            else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                        });
                    }
                }
            }
        });
    });
    (port, tx)
}

#[test]
fn an_https_endpoint_is_trusted_through_the_given_ca_only() {
    let Some(bin) = server_bin() else {
        return;
    };
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let server = Server::start(bin, env.path("s3root"));
    let pki = pki(&env);
    let ca = env.path("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).expect("write ca");
    let (port, _stop) = tls_forwarder(&pki.cert, &pki.key, server.port);
    let endpoint = format!("https://localhost:{port}");

    // Without the CA, the test's leaf is not trusted (the default roots
    // do not know it): typed, with a TLS reason, nothing committed.
    configure_at(&env, &endpoint, BUCKET, SECRET_KEY, &json!({}));
    let t = Instant::now();
    let e = collect_run(&env, "default", &json!({"text": big("tls")}))
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["reason"], "tls", "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "not retried");
    assert!(all_changes(&env).is_empty(), "nothing committed");
    assert_eq!(server.objects(), 0);

    // Another CA's file is no better.
    let other = TestEnv::new();
    let other_ca = env.path("other-ca.pem");
    std::fs::write(&other_ca, pki_ca(&other)).expect("write");
    configure_at(
        &env,
        &endpoint,
        BUCKET,
        SECRET_KEY,
        &json!({"ca_file": p(&other_ca)}),
    );
    let e = collect_run(&env, "default", &json!({"text": big("tls")}))
        .error("blob_store_unavailable", 69);
    assert_eq!(e["details"]["reason"], "tls", "{e}");

    // With it, the store works through TLS.
    configure_at(
        &env,
        &endpoint,
        BUCKET,
        SECRET_KEY,
        &json!({"ca_file": p(&ca)}),
    );
    let rec = collect(&env, "default", &json!({"text": big("tls")}))["records"][0].clone();
    assert!(server.object(&digest_of(&rec)).is_file());
    let got = env
        .run(&["data", "get", rec["id"].as_str().expect("id")])
        .json();
    assert_eq!(got["content"]["data"], big("tls").as_str());
    let fsck = env.run(&["cas", "fsck"]).json();
    assert_eq!(
        (fsck["checked"].clone(), fsck["corrupt"].clone()),
        (json!(1), json!([]))
    );

    // A CA file others may write is refused before any request.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ca, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    }
    env.run(&["info"]).error("config", 78);
}

fn pki_ca(env: &TestEnv) -> String {
    pki(env).ca_pem
}
