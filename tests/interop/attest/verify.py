#!/usr/bin/env python3
"""Independent verifier of agent-task attestations.

Nothing here is agent-task code: the DSSE signature is checked by
securesystemslib, the Statement and the test-result predicate by the
in-toto-attestation protobuf bindings (strict JSON parsing: an unknown field
fails), the svr v0.2 predicate by jsonschema against
fixtures/in-toto/svr-v0.2.schema.json (the binding predates v0.2), and the
revision digest and receipt digest are recomputed here from their
documented definitions (docs/attestations.md) with git and hashlib.

  verify.py vectors FILE
      Every case of fixtures/dsse/vectors.json: accepted cases verify (and
      their PAE equals pae_hex), rejected cases do not.
  verify.py note --repo PATH --commit SHA --key-hex HEX [--allow-override]
      The refs/notes/agent-task note of a commit. A landing the operator let
      in with `land --allow-protected-change` (no receipt, no tests) is
      rejected at stage "unqualified" unless --allow-override.
  verify.py files --file ATTESTATIONS.jsonl --key-hex HEX --revision REV
      What `attest --out DIR` wrote before landing (revision subject only).

Prints one JSON object. Exit 0: everything verified as expected; exit 1:
a rejection, with {"verified": false, "stage": ..., "error": ...}.
"""

import argparse
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys

from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
import jsonschema
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

IN_TOTO = "application/vnd.in-toto+json"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
SVR = "https://in-toto.io/attestation/svr/v0.2"
RECEIPT = "urn:agent-task:attestation:receipt:v1"
QUALIFIED = "AGENT_TASK_QUALIFIED"
UNCHANGED = "AGENT_TASK_PROTECTED_PATHS_UNCHANGED"
LANDED = "AGENT_TASK_LANDED"
OVERRIDE = "AGENT_TASK_OPERATOR_OVERRIDE_WITHOUT_RECEIPT"
HERE = os.path.dirname(os.path.abspath(__file__))
SVR_SCHEMA = os.path.join(HERE, "..", "..", "..", "fixtures", "in-toto", "svr-v0.2.schema.json")


class Reject(Exception):
    def __init__(self, stage, error):
        super().__init__(error)
        self.stage = stage


def key_for(public_hex):
    """An SSlibKey whose key id is the hex SHA-256 of the raw public key."""
    keyid = hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()
    return SSlibKey(keyid, "ed25519", "ed25519", {"public": public_hex})


def open_envelope(obj, key, payload_type=None):
    """securesystemslib: decode, check the payload type, verify under `key`."""
    try:
        env = Envelope.from_dict(json.loads(json.dumps(obj)))
    except Exception as e:  # malformed base64 or members
        raise Reject("envelope", f"not a DSSE envelope: {e!r}")
    if payload_type is not None and env.payload_type != payload_type:
        raise Reject("payload_type", f"payload type {env.payload_type!r}")
    try:
        env.verify([key], 1)
    except Exception as e:
        raise Reject("signature", f"{type(e).__name__}: {e}")
    return env


def run_vectors(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    keys = {name: key_for(k["public_key"]) for name, k in doc["keys"].items()}
    # The key id the vectors name is the one computed here.
    for name, k in doc["keys"].items():
        if keys[name].keyid != k["key_id"]:
            raise Reject("key", f"{name}: key id {k['key_id']} is not SHA-256(public key)")
    results = []
    for c in doc["cases"]:
        key = keys[c.get("verify_with", "test1")]
        want_type = c["payload_type"]
        try:
            env = open_envelope(c["envelope"], key, want_type)
            outcome = "accept"
            if env.payload.hex() != c["payload_hex"]:
                raise Reject("payload", f"{c['name']}: payload differs")
            if env.pae().hex() != c["pae_hex"]:
                raise Reject("pae", f"{c['name']}: PAE differs from pae_hex")
        except Reject as r:
            if c["expect"] == "accept":
                raise
            outcome = "reject:" + r.stage
        if outcome.split(":")[0] != c["expect"]:
            raise Reject("vector", f"{c['name']}: expected {c['expect']}, got {outcome}")
        if c["expect"] == "reject":
            # The signature alone refuses every rejected case, the changed
            # payload type included (the PAE authenticates it).
            try:
                open_envelope(c["envelope"], key, None)
                raise Reject("vector", f"{c['name']}: the signature alone accepted it")
            except Reject as r:
                if r.stage not in ("signature", "envelope"):
                    raise
        results.append({"name": c["name"], "outcome": outcome})
    return {"verified": True, "cases": len(results), "results": results}


def git(repo, *args, text=True):
    out = subprocess.run(["git", "-C", repo, *args], capture_output=True, check=False)
    if out.returncode != 0:
        raise Reject("git", f"git {args[0]}: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout.decode() if text else out.stdout


def domain_digest(domain, data):
    """SHA-256(domain || 0x00 || u64be(len) || bytes)."""
    h = hashlib.sha256()
    h.update(domain.encode())
    h.update(b"\x00")
    h.update(struct.pack(">Q", len(data)))
    h.update(data)
    return h.hexdigest()


def canonical(obj):
    """agent-task's canonical JSON: compact, members in their given order."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def tree_revision(repo, commit):
    """The revision digest of a commit's tree, from git ls-tree and the blobs."""
    listing = git(repo, "ls-tree", "-r", "-z", commit, text=False)
    modes = {"100644": 0o100644, "100755": 0o100755, "120000": 0o120000}
    entries = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, oid = meta.decode().split(" ")
        if kind != "blob" or mode not in modes:
            raise Reject("subject", f"tree entry {path!r} ({mode} {kind}) cannot be in a revision")
        blob = git(repo, "cat-file", "blob", oid, text=False)
        entries.append({
            "path": path.decode("utf-8"),
            "mode": modes[mode],
            "size": len(blob),
            "sha256": hashlib.sha256(blob).hexdigest(),
        })
    entries.sort(key=lambda e: e["path"].encode("utf-8"))
    manifest = canonical({"version": 1, "entries": entries})
    return domain_digest("agent-task.revision.v1", manifest), hashlib.sha256(manifest).hexdigest()


def check_subject(subject, revision, manifest_sha, commit):
    """commit None: attested before landing, so no gitCommit subject."""
    revs = [s for s in subject if "agentTaskRevisionV1" in s.get("digest", {})]
    commits = [s for s in subject if "gitCommit" in s.get("digest", {})]
    if len(revs) != 1 or revs[0]["digest"]["agentTaskRevisionV1"] != revision:
        raise Reject("subject", "the revision subject is not the commit tree's revision")
    if manifest_sha is not None and revs[0]["digest"].get("sha256", manifest_sha) != manifest_sha:
        raise Reject("subject", "the revision subject's sha256 is not the canonical manifest's")
    if commit is None:
        if commits:
            raise Reject("subject", "a gitCommit subject before landing")
    elif len(commits) != 1 or commits[0]["digest"]["gitCommit"] != commit:
        raise Reject("subject", "the gitCommit subject is not the commit")


def check_statement(payload, revision, manifest_sha, commit, svr_schema):
    try:
        obj = json.loads(payload)
        pb = json_format.ParseDict(obj, statement_pb2.Statement())  # unknown fields fail
        st = Statement.copy_from_pb(pb)
        st.validate()
    except Exception as e:
        raise Reject("statement", f"{type(e).__name__}: {e}")
    check_subject(obj["subject"], revision, manifest_sha, commit)
    pt, pred = obj["predicateType"], obj["predicate"]
    if pt == TEST_RESULT:
        try:
            tr = json_format.ParseDict(pred, test_result_pb2.TestResult())
        except Exception as e:
            raise Reject("predicate", f"test-result: {type(e).__name__}: {e}")
        if tr.result not in ("PASSED", "WARNED", "FAILED") or not tr.configuration:
            raise Reject("predicate", "test-result: result or configuration")
        for rd in tr.configuration:
            ResourceDescriptor.copy_from_pb(rd).validate()
        return {"predicateType": pt, "result": tr.result, "passedTests": list(tr.passed_tests)}
    if pt == SVR:
        try:
            jsonschema.validate(pred, svr_schema, format_checker=jsonschema.FormatChecker())
        except jsonschema.ValidationError as e:
            raise Reject("predicate", f"svr v0.2: {e.message}")
        return {"predicateType": pt, "properties": pred["properties"]}
    if pt == RECEIPT:
        landing = pred["landing"]
        if (landing or {}).get("gitCommit") != commit:
            raise Reject("predicate", "receipt: the landing is of another commit")
        if commit is None and landing is not None:
            raise Reject("predicate", "receipt: a landing before landing")
        receipt = pred["receipt"]
        overridden = landing is not None and landing["allowProtectedChange"] is True
        changes = (landing or {}).get("protectedChanges") or {"total": 0, "paths": []}
        if overridden:
            # The operator's override: no receipt exists, protected paths changed.
            if receipt is not None or pred["receiptDigest"] is not None or pred["registrationKeys"]:
                raise Reject("predicate", "receipt: an override landing names a receipt")
            if changes["total"] < 1 or len(changes["paths"]) != min(changes["total"], 100):
                raise Reject("predicate", "receipt: an override landing lists no protected change")
        else:
            if receipt is None:
                raise Reject("predicate", "receipt: no receipt and no override")
            if changes["total"] != 0 or changes["paths"]:
                raise Reject("predicate", "receipt: protected changes without the override")
            if domain_digest("agent-task.receipt.v2", canonical(receipt)) != pred["receiptDigest"]:
                raise Reject("predicate", "receipt: its digest does not recompute")
            if receipt["revision"] != revision:
                raise Reject("predicate", "receipt: another revision")
        return {"predicateType": pt, "receiptDigest": pred["receiptDigest"],
                "allowProtectedChange": overridden, "protectedChanges": changes}
    raise Reject("predicate", f"unknown predicate type {pt!r}")


def run_note(repo, commit, key_hex, allow_override):
    commit = git(repo, "rev-parse", "--verify", commit + "^{commit}").strip()
    text = git(repo, "notes", "--ref=refs/notes/agent-task", "show", commit)
    revision, manifest_sha = tree_revision(repo, commit)
    out = run_lines(text, key_hex, revision, manifest_sha, commit, allow_override)
    out["commit"] = commit
    return out


def run_lines(text, key_hex, revision, manifest_sha, commit, allow_override=False):
    with open(SVR_SCHEMA, encoding="utf-8") as f:
        svr_schema = json.load(f)
    key = key_for(key_hex)
    statements = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise Reject("envelope", f"line {n}: {e}")
        env = open_envelope(obj, key, IN_TOTO)
        try:
            statements.append(
                check_statement(env.payload, revision, manifest_sha, commit, svr_schema))
        except (KeyError, TypeError, AttributeError) as e:  # a member missing or of another type
            raise Reject("predicate", f"line {n}: {type(e).__name__}: {e}")
    kinds = [s["predicateType"] for s in statements]
    if kinds.count(SVR) != 1 or kinds.count(RECEIPT) != 1:
        raise Reject("set", f"expected one svr and one receipt statement: {kinds}")
    props = set(next(s["properties"] for s in statements if s["predicateType"] == SVR))
    landed = {LANDED} if commit is not None else set()
    rs = next(s for s in statements if s["predicateType"] == RECEIPT)
    if rs["allowProtectedChange"]:
        if TEST_RESULT in kinds or props != {LANDED, OVERRIDE}:
            raise Reject("set", f"an override landing: no test result, svr {LANDED} and {OVERRIDE}")
        if not allow_override:
            raise Reject("unqualified", "the operator landed it with --allow-protected-change: "
                         "no receipt, no tests, protected paths changed "
                         f"({rs['protectedChanges']['total']})")
    elif TEST_RESULT not in kinds or props != {QUALIFIED, UNCHANGED} | landed:
        raise Reject("set", f"expected test results and a qualified svr: {kinds}, {sorted(props)}")
    return {"verified": True, "qualified": not rs["allowProtectedChange"], "revision": revision,
            "envelopes": len(statements), "statements": statements}


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    v = sub.add_parser("vectors")
    v.add_argument("file")
    n = sub.add_parser("note")
    n.add_argument("--repo", required=True)
    n.add_argument("--commit", required=True)
    n.add_argument("--key-hex", required=True)
    n.add_argument("--allow-override", action="store_true")
    f = sub.add_parser("files")
    f.add_argument("--file", required=True)
    f.add_argument("--key-hex", required=True)
    f.add_argument("--revision", required=True)
    a = p.parse_args()
    try:
        if a.mode == "vectors":
            out = run_vectors(a.file)
        elif a.mode == "note":
            out = run_note(a.repo, a.commit, a.key_hex, a.allow_override)
        else:
            with open(a.file, encoding="utf-8") as fh:
                out = run_lines(fh.read(), a.key_hex, a.revision, None, None)
    except Reject as r:
        print(json.dumps({"verified": False, "stage": r.stage, "error": str(r)}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
