//! `runtime probe` through the binary.

use crate::common::TestEnv;

#[test]
fn probe_bwrap_and_unshare_report_identity() {
    let env = TestEnv::new();
    for (rt, snapshot) in [("bwrap", "read_only"), ("unshare", "shared_writable")] {
        let v = env.run(&["runtime", "probe", "--runtime", rt]).json();
        assert_eq!(v["runtime"], rt);
        assert_eq!(v["isolation"]["network"], "none");
        assert_eq!(v["isolation"]["snapshot"], snapshot);
        assert_eq!(v["digest"].as_str().expect("digest").len(), 64);
        // The identity is stable between probes on one host.
        assert_eq!(
            env.run(&["runtime", "probe", "--runtime", rt]).json()["digest"],
            v["digest"]
        );
    }
}

#[test]
fn probe_oci_needs_a_digest_pinned_image() {
    let env = TestEnv::new();
    env.run(&["runtime", "probe", "--runtime", "oci"])
        .error("invalid_input", 65);
    env.run(&[
        "runtime",
        "probe",
        "--runtime",
        "oci",
        "--oci-image",
        "busybox:latest",
    ])
    .error("oci_image_reference_invalid", 65);
    let pinned = format!("localhost/img@sha256:{}", "ab".repeat(32));
    env.run(&[
        "runtime",
        "probe",
        "--runtime",
        "bwrap",
        "--oci-image",
        &pinned,
    ])
    .error("invalid_input", 65);
    // Without an engine or without the image: a typed refusal, never a pull.
    let out = env.run(&[
        "runtime",
        "probe",
        "--runtime",
        "oci",
        "--oci-image",
        &pinned,
    ]);
    assert_ne!(out.code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.stderr.trim()).expect("json");
    assert!(
        v["error"] == "runtime_unavailable" || v["error"] == "oci_image_unavailable",
        "{out}"
    );
}

#[test]
fn probe_without_the_program_is_unavailable() {
    let env = TestEnv::new();
    let out = crate::common::run_cmd(env.cmd().env("PATH", env.path("empty")).args([
        "runtime",
        "probe",
        "--runtime",
        "bwrap",
    ]));
    out.error("runtime_unavailable", 69);
}
