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
fn probe_oci_or_explain_why_not() {
    let env = TestEnv::new();
    let out = env.run(&["runtime", "probe", "--runtime", "oci"]);
    if out.code == 0 {
        assert_eq!(out.json()["runtime"], "oci");
    } else {
        let v = out.error("runtime_unavailable", 69);
        eprintln!("skipping OCI checks: {}", v["message"]);
    }
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
