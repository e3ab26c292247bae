//! `runtime probe` through the binary.

use crate::common::TestEnv;

#[test]
fn probe_bwrap_reports_its_identity_and_unshare_is_refused() {
    let env = TestEnv::new();
    let v = env.run(&["runtime", "probe", "--runtime", "bwrap"]).json();
    assert_eq!(v["runtime"], "bwrap");
    assert_eq!(v["isolation"]["network"], "none");
    assert_eq!(v["isolation"]["snapshot"], "read_only");
    assert_eq!(v["digest"].as_str().expect("digest").len(), 64);
    assert_eq!(v["limits"]["processes"], 1024, "{v}");
    assert!(
        v["pinned_args"]
            .as_array()
            .expect("args")
            .iter()
            .any(|a| a == "--disable-userns"),
        "{v}"
    );
    // The identity is stable between probes on one host, and the limits
    // are part of it.
    assert_eq!(
        env.run(&["runtime", "probe", "--runtime", "bwrap"]).json()["digest"],
        v["digest"]
    );
    let other = env
        .run(&[
            "runtime",
            "probe",
            "--runtime",
            "bwrap",
            "--sandbox-processes",
            "512",
        ])
        .json();
    assert_ne!(other["digest"], v["digest"]);
    assert_eq!(other["limits"]["processes"], 512);
    // unshare shares the host file system with candidate code: refused.
    let e = env
        .run(&["runtime", "probe", "--runtime", "unshare"])
        .error("runtime_not_isolating", 78);
    assert!(
        e["message"].as_str().expect("msg").contains("file system"),
        "{e}"
    );
    // A limit this collector cannot apply is typed.
    env.run(&[
        "runtime",
        "probe",
        "--runtime",
        "bwrap",
        "--sandbox-processes",
        "0",
    ])
    .error("sandbox_limit_unavailable", 69);
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
