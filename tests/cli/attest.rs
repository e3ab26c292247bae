//! Attestations through the real binary: the authority key (`init`,
//! `authority key`, rotation, a data directory without one), `land`
//! writing the DSSE envelopes as the `refs/notes/agent-task` note, `attest`
//! before and after landing, `verify` from a fresh clone with only the
//! public key, every tampering the verifier must refuse with its typed
//! error, and a SIGKILL between the landed mark and the note.

use crate::common::attest::*;
use crate::common::collect_flow::Loop;
use crate::common::{TestEnv, run_cmd};
use serde_json::Value;
use std::path::Path;

fn note(repo: &Path, commit: &str) -> String {
    git(
        repo,
        &["notes", "--ref=refs/notes/agent-task", "show", commit],
    ) + "\n"
}

/// Replaces the note on `commit` with `text` (the exact bytes).
fn set_note(repo: &Path, commit: &str, text: &str) {
    let f = repo.join("../note.tmp");
    std::fs::write(&f, text).expect("note file");
    let blob = git(repo, &["hash-object", "-w", s(&f)]);
    git(
        repo,
        &[
            "notes",
            "--ref=refs/notes/agent-task",
            "add",
            "-f",
            "-C",
            &blob,
            commit,
        ],
    );
}

/// Applies `f` to the envelope JSON of line `n` (0-based) of the note.
fn tamper_line(text: &str, n: usize, f: impl Fn(&mut Value)) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i == n {
                let mut v: Value = serde_json::from_str(l).expect("envelope");
                f(&mut v);
                serde_json::to_string(&v).expect("json") + "\n"
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// Flips one base64 character of a string member to another valid one.
fn flip_b64(v: &mut Value, at: usize) {
    let t = v.as_str().expect("b64").to_owned();
    let mut b = t.into_bytes();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    *v = Value::String(String::from_utf8(b).expect("ascii"));
}

#[test]
fn init_creates_a_private_key_and_rotation_keeps_old_public_keys() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let init = env.run(&["init"]).json();
    let kid = init["authority_key_id"]
        .as_str()
        .expect("key id")
        .to_owned();
    let dir = env.data_dir.join("attest");
    let seed_path = dir.join("signing-key.ed25519");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&seed_path), 0o600);
    assert_eq!(mode(&dir.join("public-keys.json")), 0o600);
    let seed = std::fs::read_to_string(&seed_path).expect("seed");
    let seed = seed.trim();
    assert_eq!(seed.len(), 64);
    // A second init keeps the key.
    assert_eq!(env.run(&["init"]).json()["authority_key_id"], kid.as_str());
    let k = env.run(&["authority", "key"]).json();
    assert_eq!(k["key_id"], kid.as_str());
    assert_eq!(k["format"], "hex");
    assert_eq!(k["algorithm"], "ed25519");
    let pk = k["public_key"].as_str().expect("pk").to_owned();
    let raw = data_encoding::HEXLOWER.decode(pk.as_bytes()).expect("hex");
    {
        use sha2::Digest;
        assert_eq!(
            data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&raw)),
            kid,
            "key id = SHA-256 of the raw public key"
        );
    }
    let pem = env.run(&["authority", "key", "--format", "pem"]).json();
    let pem_text = pem["public_key"].as_str().expect("pem");
    assert!(
        pem_text.starts_with("-----BEGIN PUBLIC KEY-----\n"),
        "{pem}"
    );
    // The private part is never printed.
    for out in [&k, &pem, &init] {
        assert!(!out.to_string().contains(seed), "seed leaked: {out}");
    }
    let r = env.run(&["authority", "key", "rotate"]).json();
    assert_eq!(r["previous_key_id"], kid.as_str());
    let new_kid = r["key_id"].as_str().expect("new").to_owned();
    assert_ne!(new_kid, kid);
    assert!(!r.to_string().contains(seed));
    let k2 = env.run(&["authority", "key"]).json();
    assert_eq!(k2["key_id"], new_kid.as_str());
    let keys = k2["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 2, "{k2}");
    let old = keys
        .iter()
        .find(|x| x["key_id"] == kid.as_str())
        .expect("old listed");
    assert_eq!(old["public_key"], pk.as_str());
    assert!(old["retired_at"].is_string(), "{k2}");
    let cur = keys
        .iter()
        .find(|x| x["key_id"] == new_kid.as_str())
        .expect("new listed");
    assert!(cur["retired_at"].is_null(), "{k2}");
    assert_ne!(
        std::fs::read_to_string(&seed_path).expect("seed").trim(),
        seed,
        "the seed was replaced"
    );
    // `authority key` is read-only and needs an initialised directory.
    TestEnv::new()
        .run(&["authority", "key"])
        .error("not_initialized", 66);
}

#[test]
fn a_data_directory_without_a_key_gets_one_from_init_or_rotate_never_from_reads() {
    let env = TestEnv::init();
    let dir = env.data_dir.join("attest");
    std::fs::remove_dir_all(&dir).expect("remove key dir");
    let e = env.run(&["authority", "key"]).error("not_found", 66);
    assert!(
        e["details"]["fix"]
            .as_str()
            .expect("fix")
            .contains("rotate"),
        "{e}"
    );
    env.run(&["attest", "--change", "chg_x"])
        .error("not_found", 66);
    assert!(!dir.exists(), "reads create nothing");
    let r = env.run(&["authority", "key", "rotate"]).json();
    assert!(r["previous_key_id"].is_null(), "{r}");
    assert_eq!(env.run(&["authority", "key"]).json()["key_id"], r["key_id"]);
    std::fs::remove_dir_all(&dir).expect("remove key dir");
    let i = env.run(&["init"]).json();
    assert_eq!(
        env.run(&["authority", "key"]).json()["key_id"],
        i["authority_key_id"]
    );
}

#[test]
fn land_attaches_the_note_and_verify_passes_from_a_fresh_clone() {
    let l = qualified();
    // Before landing: `attest` signs the qualified subject (revision only).
    let pre = l.env.run(&["attest", "--change", &l.change_id]).json();
    assert_eq!(pre["landed"], false, "{pre}");
    assert!(pre["git_commit"].is_null());
    assert_eq!(pre["envelopes"].as_array().expect("envelopes").len(), 3);
    let v = land(&l, None).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let att = &v["attestation"];
    assert_eq!(att["written"], true, "{v}");
    assert_eq!(att["notes_ref"], "refs/notes/agent-task");
    assert_eq!(att["envelopes"], 3);
    let text = note(&l.source, &commit);
    assert_eq!(text.lines().count(), 3, "{text}");
    // `attest` after landing prints and writes exactly the note's envelopes.
    let out = l.env.path("att");
    let a = l
        .env
        .run(&["attest", "--change", &l.change_id, "--out", s(&out)])
        .json();
    assert_eq!(a["landed"], true);
    assert_eq!(a["git_commit"], commit.as_str());
    assert_eq!(a["key_id"], att["key_id"]);
    assert_eq!(
        std::fs::read_to_string(out.join("attestations.jsonl")).expect("jsonl"),
        text
    );
    let files = a["files"].as_array().expect("files");
    assert_eq!(files.len(), 4, "{a}");
    assert!(out.join("01-test-result-tests.dsse.json").exists(), "{a}");
    assert!(out.join("02-svr.dsse.json").exists());
    assert!(out.join("03-receipt.dsse.json").exists());
    for (i, line) in text.lines().enumerate() {
        assert_eq!(
            a["envelopes"][i],
            serde_json::from_str::<Value>(line).expect("json")
        );
    }
    // The verdict's predicate against the svr v0.2 schema.
    let schema: Value = serde_json::from_slice(
        &std::fs::read(crate::common::repo_root().join("fixtures/in-toto/svr-v0.2.schema.json"))
            .expect("schema"),
    )
    .expect("json");
    let svr = jsonschema::validator_for(&schema).expect("valid schema");
    let line: Value = serde_json::from_str(text.lines().nth(1).expect("svr line")).expect("json");
    let payload = data_encoding::BASE64
        .decode(line["payload"].as_str().expect("payload").as_bytes())
        .expect("base64");
    let stmt: Value = serde_json::from_slice(&payload).expect("statement");
    assert_eq!(
        stmt["predicateType"],
        "https://in-toto.io/attestation/svr/v0.2"
    );
    assert!(svr.is_valid(&stmt["predicate"]), "{stmt}");
    let mut bad = stmt["predicate"].clone();
    bad["verifier"]
        .as_object_mut()
        .expect("verifier")
        .remove("policies");
    assert!(!svr.is_valid(&bad), "the schema requires verifier.policies");
    // A reviewer's machine: a fresh clone with the notes, the public key,
    // and no data directory.
    let clone = clone_with_notes(&l, "clone");
    for format in ["pem", "hex"] {
        let key = public_key_file(&l.env, format);
        let r = verify(&l.env, &clone, &commit, &key).json();
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["commit"], commit.as_str());
        assert_eq!(r["revision"], v["revision"]);
        assert_eq!(r["receipt_digest"], v["receipt_digest"]);
        assert_eq!(r["change_id"], l.change_id.as_str());
        assert_eq!(r["envelopes"], 3);
        assert_eq!(r["allow_protected_change"], false);
        assert_eq!(r["qualified"], true);
        assert_eq!(
            r["protected_changes"],
            serde_json::json!({"total": 0, "paths": []})
        );
        assert_eq!(
            r["properties"],
            serde_json::json!([
                "AGENT_TASK_QUALIFIED",
                "AGENT_TASK_PROTECTED_PATHS_UNCHANGED",
                "AGENT_TASK_LANDED"
            ])
        );
        assert_eq!(r["test_results"][0]["result"], "PASSED");
        assert_eq!(r["test_results"][0]["tests"], serde_json::json!(["tests"]));
    }
    // Accepting operator overrides changes nothing for a qualified landing.
    let key = public_key_file(&l.env, "hex");
    let r = run_cmd(l.env.bare_cmd().args([
        "verify",
        "--repo",
        s(&clone),
        "--commit",
        &commit,
        "--key",
        s(&key),
        "--allow-override",
    ]))
    .json();
    assert_eq!(
        (&r["verified"], &r["qualified"]),
        (&true.into(), &true.into()),
        "{r}"
    );
    // `verify` resolves any commit name and defaults --repo to the cwd.
    let key = public_key_file(&l.env, "pem");
    let r = run_cmd(l.env.bare_cmd().current_dir(&clone).args([
        "verify",
        "--commit",
        "main",
        "--key",
        s(&key),
    ]))
    .json();
    assert_eq!(r["commit"], commit.as_str());
    // Landing again lands nothing and leaves the note alone.
    assert_eq!(land(&l, None).json()["already_landed"], true);
    assert_eq!(note(&l.source, &commit), text);
}

#[test]
fn verify_refuses_every_tampering_with_a_typed_error() {
    let l = qualified();
    let v = land(&l, None).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let clone = clone_with_notes(&l, "clone");
    let key = public_key_file(&l.env, "pem");
    let good = note(&clone, &commit);
    let check = |text: &str, code: &str| {
        set_note(&clone, &commit, text);
        let e = verify(&l.env, &clone, &commit, &key).error(code, 65);
        set_note(&clone, &commit, &good);
        e
    };
    // A flipped byte in the payload and in the signature.
    let e = check(
        &tamper_line(&good, 1, |e| flip_b64(&mut e["payload"], 40)),
        "signature_invalid",
    );
    assert_eq!(e["details"]["line"], 2, "{e}");
    check(
        &tamper_line(&good, 0, |e| flip_b64(&mut e["signatures"][0]["sig"], 10)),
        "signature_invalid",
    );
    // An unsupported payload type.
    check(
        &tamper_line(&good, 2, |e| e["payloadType"] = "application/json".into()),
        "attestation_payload_type_unsupported",
    );
    // A line removed, a line duplicated, garbage.
    let mut lines: Vec<&str> = good.lines().collect();
    lines.remove(0);
    check(&(lines.join("\n") + "\n"), "attestation_invalid");
    check(
        &format!("{good}{}", good.lines().next().expect("line")),
        "attestation_invalid",
    );
    check("not json\n", "attestation_invalid");
    // The wrong key: RFC 8032 §7.1 test 2's public key.
    let other = l.env.path("other.hex");
    std::fs::write(
        &other,
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    )
    .expect("key");
    let e = verify(&l.env, &clone, &commit, &other).error("attestation_key_mismatch", 65);
    assert_eq!(e["details"]["line"], 1, "{e}");
    // The envelopes moved to another commit with the same tree.
    let tree = git(&clone, &["rev-parse", &format!("{commit}^{{tree}}")]);
    let twin = git(
        &clone,
        &["commit-tree", &tree, "-p", &commit, "-m", "same tree"],
    );
    git(
        &clone,
        &[
            "notes",
            "--ref=refs/notes/agent-task",
            "copy",
            &commit,
            &twin,
        ],
    );
    verify(&l.env, &clone, &twin, &key).error("attestation_commit_mismatch", 65);
    // A note on a commit whose tree differs from the attested revision.
    std::fs::write(clone.join("add.sh"), "#!/bin/sh\necho 4\n").expect("edit");
    git(&clone, &["commit", "-q", "-am", "other tree"]);
    let other_tree = git(&clone, &["rev-parse", "HEAD"]);
    git(
        &clone,
        &[
            "notes",
            "--ref=refs/notes/agent-task",
            "copy",
            &commit,
            &other_tree,
        ],
    );
    verify(&l.env, &clone, &other_tree, &key).error("attestation_revision_mismatch", 65);
    // No note at all; a commit that does not exist; not a repository; a bad key file.
    let bare = git(&clone, &["commit-tree", &tree, "-m", "no note"]);
    let e = verify(&l.env, &clone, &bare, &key).error("not_found", 66);
    assert!(
        e["details"]["fix"]
            .as_str()
            .expect("fix")
            .contains("refs/notes/agent-task")
    );
    verify(&l.env, &clone, &"0".repeat(40), &key).error("not_found", 66);
    verify(&l.env, &l.env.path("nowhere"), &commit, &key).error("not_found", 66);
    let junk = l.env.path("junk.key");
    std::fs::write(&junk, "not a key").expect("junk");
    verify(&l.env, &clone, &commit, &junk).error("invalid_input", 65);
    // After all that, the untouched note still verifies.
    assert_eq!(
        verify(&l.env, &clone, &commit, &key).json()["verified"],
        true
    );
}

#[test]
fn sigkill_before_the_note_then_land_finishes_the_note() {
    for step in ["land_after_ref", "land_before_note"] {
        let l = qualified();
        let out = land(&l, Some(step));
        assert_eq!(out.code, -1, "{step}: killed: {out}");
        let commit = git(&l.source, &["rev-parse", "main"]);
        let missing = std::process::Command::new("git")
            .arg("-C")
            .arg(&l.source)
            .args(["notes", "--ref=refs/notes/agent-task", "list", &commit])
            .output()
            .expect("git");
        assert!(!missing.status.success(), "{step}: no note yet");
        let v = land(&l, None).json();
        assert_eq!(v["landed"], true, "{step}: {v}");
        assert_eq!(v["resumed"], true, "{step}: {v}");
        assert_eq!(v["git_commit"], commit.as_str(), "{step}");
        assert_eq!(v["attestation"]["written"], true, "{step}: {v}");
        let key = public_key_file(&l.env, "hex");
        let clone = clone_with_notes(&l, "clone");
        assert_eq!(
            verify(&l.env, &clone, &commit, &key).json()["verified"],
            true,
            "{step}"
        );
        // Once the note is there, landing again lands nothing more.
        let again = land(&l, None).json();
        assert_eq!(again["already_landed"], true, "{step}: {again}");
        assert_eq!(again["git_commit"], commit.as_str(), "{step}: {again}");
    }
}

#[test]
fn land_creates_a_missing_key_and_attest_refuses_an_unqualified_change() {
    let l = Loop::basic("bwrap");
    l.set_add("-");
    let t = l.checkpoint();
    l.env
        .run(&["attest", "--change", &l.change_id])
        .error("not_qualified", 65);
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    l.env
        .run(&["attest", "--change", &l.change_id])
        .error("not_qualified", 65);
    // Fix, qualify, drop the key, then land: land makes the key it signs with.
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d2.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    std::fs::remove_dir_all(l.env.data_dir.join("attest")).expect("drop key");
    let v = land(&l, None).json();
    let key = l.env.run(&["authority", "key"]).json();
    assert_eq!(v["attestation"]["key_id"], key["key_id"], "{v}");
    let commit = v["git_commit"].as_str().expect("commit");
    let clone = clone_with_notes(&l, "clone");
    let r = verify(&l.env, &clone, commit, &public_key_file(&l.env, "hex")).json();
    assert_eq!(r["verified"], true);
    // Rotating afterwards: the old public key still verifies the old note,
    // the new one does not.
    let old_key = l.env.path("old.pem");
    std::fs::rename(public_key_file(&l.env, "pem"), &old_key).expect("keep the old key");
    l.env.run(&["authority", "key", "rotate"]).json();
    assert_eq!(
        verify(&l.env, &clone, commit, &old_key).json()["verified"],
        true
    );
    verify(&l.env, &clone, commit, &public_key_file(&l.env, "pem"))
        .error("attestation_key_mismatch", 65);
}

#[test]
fn an_unsafe_key_file_stops_land_before_anything_moves() {
    use std::os::unix::fs::PermissionsExt;
    let l = qualified();
    let seed = l.env.data_dir.join("attest/signing-key.ed25519");
    let before = git(&l.source, &["rev-parse", "main"]);
    // Group-readable: refused, nothing lands.
    std::fs::set_permissions(&seed, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    land(&l, None).error("insecure_permissions", 77);
    l.env
        .run(&["authority", "key"])
        .error("insecure_permissions", 77);
    assert_eq!(git(&l.source, &["rev-parse", "main"]), before);
    // A symlink in its place (to a key the agent could have written): refused.
    let elsewhere = l.env.path("planted.key");
    std::fs::write(&elsewhere, format!("{}\n", "11".repeat(32))).expect("plant");
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::remove_file(&seed).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, &seed).expect("symlink");
    land(&l, None).error("symlink_refused", 77);
    assert_eq!(git(&l.source, &["rev-parse", "main"]), before);
    // Repaired by the operator: the change lands and its note verifies.
    std::fs::remove_file(&seed).expect("rm link");
    l.env.run(&["authority", "key", "rotate"]).json();
    let v = land(&l, None).json();
    assert_eq!(v["attestation"]["written"], true, "{v}");
}

#[test]
fn verify_bounds_the_note() {
    let l = qualified();
    let v = land(&l, None).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let clone = clone_with_notes(&l, "clone");
    let key = public_key_file(&l.env, "hex");
    let line = note(&clone, &commit)
        .lines()
        .next()
        .expect("line")
        .to_owned()
        + "\n";
    set_note(&clone, &commit, &line.repeat(257));
    verify(&l.env, &clone, &commit, &key).error("too_large", 65);
    set_note(&clone, &commit, &format!("{line}\n{line}"));
    let e = verify(&l.env, &clone, &commit, &key).error("attestation_invalid", 65);
    assert_eq!(e["details"]["line"], 2, "an empty line: {e}");
}

/// An operator's `land --allow-protected-change` (no receipt, no tests):
/// the note is still written and says so plainly (no test result; an svr
/// with the override property and without qualification; a receipt
/// statement whose receipt is null and whose landing lists the protected
/// path). `verify` fails closed with `attestation_unqualified` and reports
/// the override; `--allow-override` accepts it as `qualified: false`.
#[test]
fn an_override_landing_is_attested_as_such_and_verify_fails_closed_unless_allowed() {
    let l = protected_change();
    l.env
        .run(&["attest", "--change", &l.change_id])
        .error("protected_path_changed", 65);
    let v = land_with(&l, None, &["--allow-protected-change"]).json();
    assert_eq!(v["allow_protected_change"], true, "{v}");
    assert!(v["receipt_digest"].is_null(), "{v}");
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    assert_eq!(v["attestation"]["written"], true, "{v}");
    assert_eq!(v["attestation"]["envelopes"], 2, "{v}");
    let text = note(&l.source, &commit);
    let stmts: Vec<Value> = text.lines().map(statement_of).collect();
    assert_eq!(stmts.len(), 2, "no test result: {text}");
    assert_eq!(
        stmts[0]["predicateType"],
        "https://in-toto.io/attestation/svr/v0.2"
    );
    assert_eq!(
        stmts[0]["predicate"]["properties"],
        serde_json::json!([
            "AGENT_TASK_LANDED",
            "AGENT_TASK_OPERATOR_OVERRIDE_WITHOUT_RECEIPT"
        ])
    );
    let rp = &stmts[1]["predicate"];
    assert_eq!(
        stmts[1]["predicateType"],
        "urn:agent-task:attestation:receipt:v1"
    );
    assert!(
        rp["receipt"].is_null() && rp["receiptDigest"].is_null(),
        "{rp}"
    );
    assert_eq!(rp["registrationKeys"], serde_json::json!([]));
    assert_eq!(rp["landing"]["allowProtectedChange"], true);
    assert_eq!(rp["landing"]["changeId"], l.change_id.as_str());
    assert_eq!(rp["landing"]["gitCommit"], commit.as_str());
    assert_eq!(
        rp["landing"]["protectedChanges"],
        serde_json::json!({"total": 1, "paths": [{"path": "tests/cases.txt", "change": "content"}]})
    );
    // `attest` afterwards prints the same envelopes.
    let a = l.env.run(&["attest", "--change", &l.change_id]).json();
    assert_eq!(a["landed"], true);
    assert_eq!(a["allow_protected_change"], true);
    assert!(a["receipt_digest"].is_null());
    let lines: Vec<Value> = text
        .lines()
        .map(|x| serde_json::from_str(x).expect("json"))
        .collect();
    assert_eq!(a["envelopes"], Value::Array(lines));
    // The reviewer: fails closed by default, reporting the override.
    let clone = clone_with_notes(&l, "clone");
    let key = public_key_file(&l.env, "pem");
    let e = verify(&l.env, &clone, &commit, &key).error("attestation_unqualified", 65);
    let d = &e["details"];
    assert_eq!(d["allow_protected_change"], true, "{e}");
    assert_eq!(d["protected_changes_total"], 1, "{e}");
    assert_eq!(
        d["protected_changes"],
        serde_json::json!([{"path": "tests/cases.txt", "change": "content"}])
    );
    assert!(
        d["fix"].as_str().expect("fix").contains("--allow-override"),
        "{e}"
    );
    // Explicitly accepting operator overrides.
    let r = run_cmd(l.env.bare_cmd().args([
        "verify",
        "--repo",
        s(&clone),
        "--commit",
        &commit,
        "--key",
        s(&key),
        "--allow-override",
    ]))
    .json();
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["qualified"], false, "{r}");
    assert_eq!(r["allow_protected_change"], true);
    assert!(r["receipt_digest"].is_null());
    assert_eq!(r["envelopes"], 2);
    assert_eq!(r["change_id"], l.change_id.as_str());
    assert_eq!(r["test_results"], serde_json::json!([]));
    assert_eq!(r["protected_changes"]["total"], 1);
    // The override does not weaken the envelope checks: a flipped payload
    // byte, or the note moved to a twin commit, still fails.
    set_note(
        &clone,
        &commit,
        &tamper_line(&text, 0, |e| flip_b64(&mut e["payload"], 40)),
    );
    run_cmd(l.env.bare_cmd().args([
        "verify",
        "--repo",
        s(&clone),
        "--commit",
        &commit,
        "--key",
        s(&key),
        "--allow-override",
    ]))
    .error("signature_invalid", 65);
    set_note(&clone, &commit, &text);
    // A line removed: the verdict alone, or the receipt statement alone.
    for keep in 0..2 {
        let one = text.lines().nth(keep).expect("line").to_owned() + "\n";
        set_note(&clone, &commit, &one);
        verify(&l.env, &clone, &commit, &key).error("attestation_invalid", 65);
    }
    set_note(&clone, &commit, &text);
    verify(&l.env, &clone, &commit, &key).error("attestation_unqualified", 65);
}

/// A SIGKILL between an override landing's branch move and its note: the
/// next `land` (the flag is not needed again: the landing happened) finishes
/// the same note.
#[test]
fn sigkill_before_an_override_note_then_land_finishes_it() {
    let l = protected_change();
    let out = land_with(&l, Some("land_before_note"), &["--allow-protected-change"]);
    assert_eq!(out.code, -1, "killed: {out}");
    let commit = git(&l.source, &["rev-parse", "main"]);
    let v = land(&l, None).json();
    assert_eq!(v["resumed"], true, "{v}");
    assert_eq!(v["allow_protected_change"], true, "{v}");
    assert_eq!(v["protected_changes"], 1, "{v}");
    assert_eq!(v["attestation"]["written"], true, "{v}");
    assert_eq!(v["git_commit"], commit.as_str());
    let clone = clone_with_notes(&l, "clone");
    let key = public_key_file(&l.env, "hex");
    verify(&l.env, &clone, &commit, &key).error("attestation_unqualified", 65);
}
