use super::*;

#[test]
fn a_snapshot_directory_is_created_exclusively_and_never_reused() {
    let t = tempfile::tempdir().expect("tmp");
    let p = t.path().join("s");
    let first = snapshot_dir(None, &p).expect("fresh");
    std::fs::write(p.join("test.sh"), b"exit 0\n").expect("write");
    // Another run naming the same directory is refused; the first
    // run's files stay.
    assert!(snapshot_dir(None, &p).is_err());
    assert_eq!(std::fs::read(p.join("test.sh")).expect("kept"), b"exit 0\n");
    assert!(first.remove());
    assert!(!p.exists());
}

#[test]
fn drain_caps_hashes_and_keeps_tail() {
    let data = b"0123456789".repeat(10);
    let d = drain(&data[..], 25, 4, Arc::new(AtomicBool::new(false)));
    let s = d.summary();
    assert_eq!(s.bytes, 25);
    assert!(s.capped);
    assert_eq!(s.tail, "1234");
    assert_eq!(s.sha256, Sha256Hex::digest(&data[..25]));
    let s = drain(&b"abc"[..], 25, 4, Arc::new(AtomicBool::new(false))).summary();
    assert!(!s.capped);
    assert_eq!(s.tail, "abc");
}

#[test]
fn identity_digest_binds_every_field() {
    let iso = IsolationFacts {
        network: "none".into(),
        snapshot: "read_only".into(),
        pid_namespace: true,
        private_tmp: true,
        user: "unprivileged".into(),
    };
    let exe = std::env::current_exe().expect("exe");
    let a = identity(
        RuntimeKind::Bwrap,
        exe.clone(),
        "v1".into(),
        vec!["--x".into()],
        iso.clone(),
        None,
        None,
    )
    .expect("id");
    let b = identity(
        RuntimeKind::Bwrap,
        exe.clone(),
        "v2".into(),
        vec!["--x".into()],
        iso.clone(),
        None,
        None,
    )
    .expect("id");
    let c = identity(
        RuntimeKind::Bwrap,
        exe.clone(),
        "v1".into(),
        vec!["--y".into()],
        iso.clone(),
        None,
        None,
    )
    .expect("id");
    let d = identity(
        RuntimeKind::Unshare,
        exe,
        "v1".into(),
        vec!["--x".into()],
        iso,
        None,
        None,
    )
    .expect("id");
    assert_ne!(a.digest, b.digest);
    assert_ne!(a.digest, c.digest);
    assert_ne!(a.digest, d.digest);
}

#[test]
fn unshare_and_unpinned_bwrap_identities_are_refused() {
    let facts = IsolationFacts {
        network: "none".into(),
        snapshot: "read_only".into(),
        pid_namespace: true,
        private_tmp: true,
        user: "unprivileged".into(),
    };
    let exe = std::env::current_exe().expect("exe");
    let limits = SandboxLimits {
        tmpfs_bytes: 1 << 20,
        address_space_bytes: 1 << 30,
        processes: 64,
        file_size_bytes: 1 << 20,
        cpu_seconds: 60,
        run_as_uid: None,
        process: Some(ProcessAttributes::pinned(1 << 30)),
    };
    let mk = |kind, iso: IsolationFacts, l: Option<SandboxLimits>| {
        identity(kind, exe.clone(), "v".into(), vec![], iso, l, None).expect("id")
    };
    assert!(
        mk(RuntimeKind::Bwrap, facts.clone(), Some(limits.clone()))
            .check_isolating()
            .is_ok()
    );
    let refused = |id: RuntimeIdentity| {
        assert_eq!(
            id.check_isolating().expect_err("refused").code(),
            Code::RuntimeNotIsolating
        )
    };
    refused(mk(RuntimeKind::Bwrap, facts.clone(), None));
    // An identity pinned before the process attributes existed.
    let old = SandboxLimits {
        process: None,
        ..limits.clone()
    };
    refused(mk(RuntimeKind::Bwrap, facts.clone(), Some(old.clone())));
    assert_eq!(
        old.check_applicable().expect_err("old").code(),
        Code::SandboxLimitUnavailable
    );
    refused(mk(
        RuntimeKind::Unshare,
        facts.clone(),
        Some(limits.clone()),
    ));
    let shared = IsolationFacts {
        snapshot: "shared_writable".into(),
        private_tmp: false,
        user: "invoking_user".into(),
        ..facts.clone()
    };
    refused(mk(RuntimeKind::Oci, shared, None));
    let plan = Plan {
        oci_image: None,
        limits: None,
        collector_dir: None,
    };
    assert_eq!(
        probe(RuntimeKind::Unshare, &plan)
            .expect_err("refused")
            .code(),
        Code::RuntimeNotIsolating
    );
    // The limits are part of the identity digest.
    let a = mk(RuntimeKind::Bwrap, facts.clone(), Some(limits.clone()));
    let b = mk(
        RuntimeKind::Bwrap,
        facts.clone(),
        Some(SandboxLimits {
            processes: 65,
            ..limits.clone()
        }),
    );
    assert_ne!(a.digest, b.digest);
    // So are the process attributes, every one of them.
    let base = ProcessAttributes::pinned(1 << 30);
    let mut variants = vec![];
    for f in 0..8 {
        let mut p = base.clone();
        match f {
            0 => p.rlimits.open_files += 1,
            1 => p.rlimits.stack_bytes += 1,
            2 => p.nice = 1,
            3 => p.io_priority.level = 7,
            4 => p.umask = 0o077,
            5 => p.timer_slack_ns = 1,
            6 => p.personality = 0x0040000,
            _ => p.rlimits.realtime_timeout_us = 1,
        }
        variants.push(p);
    }
    for p in variants {
        let c = mk(
            RuntimeKind::Bwrap,
            facts.clone(),
            Some(SandboxLimits {
                process: Some(p),
                ..limits.clone()
            }),
        );
        assert_ne!(a.digest, c.digest);
    }
    // An old identity (no `process`) keeps the digest it was pinned
    // with: the member is left out, not written as null.
    let json = serde_json::to_value(&old).expect("json");
    assert!(json.get("process").is_none(), "{json}");
}

#[test]
fn the_pinned_attributes_cover_every_rlimit_once() {
    let l = LimitRequest::default().resolve().expect("defaults apply");
    let r = l.rlimits().expect("pinned");
    assert_eq!(r.len(), 16, "every Linux rlimit");
    let mut names: Vec<_> = r.iter().map(|(res, _, _)| format!("{res:?}")).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 16);
    let p = l.process.clone().expect("pinned");
    assert_eq!(p.nice, 0);
    assert_eq!(p.umask, 0o022);
    assert_eq!(p.rlimits.data_bytes, l.address_space_bytes);
    // Out-of-range values are refused before any run.
    for bad in [
        ProcessAttributes {
            nice: 20,
            ..p.clone()
        },
        ProcessAttributes {
            umask: 0o1000,
            ..p.clone()
        },
        ProcessAttributes {
            io_priority: IoPriority {
                class: IoClass::BestEffort,
                level: 8,
            },
            ..p.clone()
        },
    ] {
        let l = SandboxLimits {
            process: Some(bad),
            ..l.clone()
        };
        assert_eq!(
            l.check_applicable().expect_err("bad").code(),
            Code::SandboxLimitUnavailable
        );
    }
}

#[test]
fn the_bwrap_plan_caps_every_writable_mount_and_nested_namespaces() {
    let l = SandboxLimits {
        tmpfs_bytes: 12345,
        address_space_bytes: 1,
        processes: 1,
        file_size_bytes: 1,
        cpu_seconds: 1,
        run_as_uid: None,
        process: None,
    };
    let args = bwrap_args(&l);
    let s = args.join(" ");
    for want in [
        "--unshare-all --unshare-user --disable-userns",
        "--size 12345 --tmpfs /dev/shm",
        "--size 12345 --tmpfs /tmp",
        "--size 12345 --tmpfs /scratch",
        "--ro-bind {snapshot} /work",
        "--remount-ro /dev --remount-ro /",
        "--cap-drop ALL",
    ] {
        assert!(s.contains(want), "{want} in {s}");
    }
    assert!(
        !s.contains("--bind "),
        "nothing of the host is writable: {s}"
    );
}

#[test]
fn limits_resolve_to_a_dedicated_uid_exactly_as_root() {
    let r = LimitRequest::default().resolve().expect("defaults apply");
    assert_eq!(r.run_as_uid.is_some(), is_root());
    if is_root() {
        assert_eq!(r.run_as_uid, Some(DEFAULT_SANDBOX_UID));
        let e = LimitRequest {
            sandbox_uid: Some(0),
            ..LimitRequest::default()
        }
        .resolve()
        .expect_err("uid 0");
        assert_eq!(e.code(), Code::SandboxLimitUnavailable);
        let pinned_none = SandboxLimits {
            run_as_uid: None,
            ..r
        };
        assert_eq!(
            pinned_none
                .check_applicable()
                .expect_err("root without a uid")
                .code(),
            Code::SandboxLimitUnavailable
        );
    } else {
        let e = LimitRequest {
            sandbox_uid: Some(4242),
            ..LimitRequest::default()
        }
        .resolve()
        .expect_err("only root switches uid");
        assert_eq!(e.code(), Code::SandboxLimitUnavailable);
    }
    let zero = LimitRequest {
        processes: 0,
        ..LimitRequest::default()
    };
    assert_eq!(
        zero.resolve().expect_err("zero").code(),
        Code::SandboxLimitUnavailable
    );
}

const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn oci_identity(program: &str, args: &[&str], reference: &str) -> RuntimeIdentity {
    RuntimeIdentity {
        runtime: RuntimeKind::Oci,
        program: program.into(),
        program_sha256: Sha256Hex::digest(b"engine"),
        version: "test".into(),
        pinned_args: args.iter().map(|s| s.to_string()).collect(),
        isolation: IsolationFacts {
            network: "none".into(),
            snapshot: "read_only".into(),
            pid_namespace: true,
            private_tmp: true,
            user: "unprivileged".into(),
        },
        limits: None,
        image: Some(OciImage {
            reference: reference.into(),
            id: format!("sha256:{HEX}"),
            digest: format!("sha256:{HEX}"),
        }),
        digest: Sha256Hex::digest(b"x"),
    }
}

#[test]
fn oci_references_must_be_pinned_by_digest() {
    let good = format!("localhost/agent-task-test@sha256:{HEX}");
    assert_eq!(
        parse_oci_reference(&good).expect("pinned"),
        format!("sha256:{HEX}")
    );
    let tagged = format!("registry.example:5000/team/img:1.2@sha256:{HEX}");
    assert!(parse_oci_reference(&tagged).is_ok());
    let upper = format!("img@sha256:{}", HEX.to_uppercase());
    let long = format!("{}@sha256:{HEX}", "a".repeat(MAX_OCI_REFERENCE));
    let refused = [
        "busybox".to_string(),
        "busybox:latest".to_string(),
        "docker.io/library/busybox:1.36".to_string(),
        format!("img@sha512:{HEX}"),
        format!("img@sha256:{}", &HEX[..63]),
        format!("img@sha256:{HEX}0"),
        upper,
        format!("@sha256:{HEX}"),
        format!("--privileged@sha256:{HEX}"),
        format!("img name@sha256:{HEX}"),
        format!("img\n@sha256:{HEX}"),
        long,
    ];
    for r in refused {
        let e = parse_oci_reference(&r).expect_err(&r);
        assert_eq!(e.code(), Code::OciImageReferenceInvalid, "{r}");
    }
}

#[test]
fn the_image_flag_goes_with_oci_only() {
    let good = format!("img@sha256:{HEX}");
    assert!(check_image_flag(RuntimeKind::Oci, Some(&good)).is_ok());
    assert!(check_image_flag(RuntimeKind::Bwrap, None).is_ok());
    for (kind, image, code) in [
        (RuntimeKind::Oci, None, Code::InvalidInput),
        (
            RuntimeKind::Oci,
            Some("busybox:latest"),
            Code::OciImageReferenceInvalid,
        ),
        (RuntimeKind::Bwrap, Some(good.as_str()), Code::InvalidInput),
        (
            RuntimeKind::Unshare,
            Some(good.as_str()),
            Code::InvalidInput,
        ),
    ] {
        assert_eq!(
            check_image_flag(kind, image).expect_err("refused").code(),
            code
        );
        // probe refuses before looking at the host.
        let plan = Plan {
            oci_image: image,
            limits: None,
            collector_dir: None,
        };
        assert_eq!(probe(kind, &plan).expect_err("refused").code(), code);
    }
}

#[test]
fn oci_argv_is_the_pinned_plan_then_name_env_image_and_recipe() {
    let reference = format!("localhost/img@sha256:{HEX}");
    let argv = vec!["sh".to_string(), "test.sh".to_string()];
    let env = [("GREETING".to_string(), "hi".to_string())];
    let spec = RunSpec {
        snapshot: Path::new("/c/snapshots/s1"),
        argv: &argv,
        env: &env,
        timeout: Duration::from_millis(600_000),
        max_output_bytes: 1024,
        tail_bytes: 16,
        oci_image: Some(&reference),
    };
    let podman = oci_identity("/usr/bin/podman", PODMAN_ARGS, &reference);
    let got = oci_argv(&podman, &spec, "agent-task_1").expect("argv");
    let want: Vec<String> = [
        "run",
        "--rm",
        "--pull=never",
        "--network",
        "none",
        "--read-only",
        "--user",
        "65534:65534",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--tmpfs",
        "/tmp:rw,nosuid,nodev,U",
        "--tmpfs",
        "/scratch:rw,nosuid,nodev,exec,U",
        "--volume",
        "/c/snapshots/s1:/work:ro",
        "--workdir",
        "/work",
        "--name",
        "agent-task_1",
        "--timeout",
        "605",
        "--env",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "--env",
        "HOME=/scratch",
        "--env",
        "TMPDIR=/tmp",
        "--env",
        "GREETING=hi",
        "--",
        &reference,
        "sh",
        "test.sh",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(got, want);
    let docker = oci_identity("/usr/bin/docker", DOCKER_ARGS, &reference);
    let got = oci_argv(&docker, &spec, "agent-task_1").expect("argv");
    assert!(!got.contains(&"--timeout".to_string()), "{got:?}");
    assert!(got.contains(&"/tmp:rw,nosuid,nodev,mode=1777".to_string()));
    assert!(got.contains(&"/c/snapshots/s1:/work:ro".to_string()));
    assert_eq!(
        &got[got.len() - 3..],
        &[reference.clone(), "sh".into(), "test.sh".into()]
    );

    // The run's image must be the one the identity resolved; a snapshot
    // path that would change the volume syntax is refused.
    let other = format!("localhost/other@sha256:{HEX}");
    let e = oci_argv(
        &podman,
        &RunSpec {
            oci_image: Some(&other),
            ..spec_clone(&spec)
        },
        "n",
    )
    .expect_err("other image");
    assert_eq!(e.code(), Code::InvalidInput);
    let e = oci_argv(
        &podman,
        &RunSpec {
            oci_image: None,
            ..spec_clone(&spec)
        },
        "n",
    )
    .expect_err("no image");
    assert_eq!(e.code(), Code::InvalidInput);
    let e = oci_argv(
        &podman,
        &RunSpec {
            snapshot: Path::new("/c/a:b"),
            ..spec_clone(&spec)
        },
        "n",
    )
    .expect_err("colon");
    assert_eq!(e.code(), Code::InvalidInput);
}

fn spec_clone<'a>(s: &RunSpec<'a>) -> RunSpec<'a> {
    RunSpec {
        snapshot: s.snapshot,
        argv: s.argv,
        env: s.env,
        timeout: s.timeout,
        max_output_bytes: s.max_output_bytes,
        tail_bytes: s.tail_bytes,
        oci_image: s.oci_image,
    }
}

#[test]
fn identity_digest_covers_the_image_and_omits_it_when_absent() {
    let iso = IsolationFacts {
        network: "none".into(),
        snapshot: "read_only".into(),
        pid_namespace: true,
        private_tmp: true,
        user: "unprivileged".into(),
    };
    let exe = std::env::current_exe().expect("exe");
    let image = |id: &str| OciImage {
        reference: format!("img@sha256:{HEX}"),
        id: format!("sha256:{id}"),
        digest: format!("sha256:{HEX}"),
    };
    let mk = |img: Option<OciImage>| {
        identity(
            RuntimeKind::Oci,
            exe.clone(),
            "v".into(),
            vec![],
            iso.clone(),
            None,
            img,
        )
        .expect("id")
    };
    let none = mk(None);
    let a = mk(Some(image(HEX)));
    let b = mk(Some(image(&HEX.replace('0', "1"))));
    assert_ne!(none.digest, a.digest);
    assert_ne!(a.digest, b.digest);
    assert_eq!(a.computed_digest().expect("digest"), a.digest);
    // Without an image the JSON (and so every bwrap/unshare digest) is unchanged.
    let v = serde_json::to_value(&none).expect("json");
    assert!(v.get("image").is_none(), "{v}");
    let back: RuntimeIdentity = serde_json::from_value(v).expect("decode");
    assert_eq!(back.computed_digest().expect("digest"), none.digest);
}
