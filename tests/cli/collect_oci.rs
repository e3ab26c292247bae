//! The `oci` collector runtime through the real binary: a profile pins a
//! digest-pinned image, `collect` runs the recipe in a podman (or docker)
//! container from the engine's local store and the record says what ran.
//!
//! The engine is real: each test builds a tiny image from the host's static
//! busybox (`busybox-static`), imports it into a private podman store (no
//! registry), and refers to it by digest. A test skips with a printed
//! `SKIP:` reason only when that real probe finds no usable engine.

use crate::common::TestEnv;
use crate::common::collect_flow::{Loop, workflow_with};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A usable OCI engine holding the busybox test image.
pub struct Oci {
    /// Private engine configuration and storage (kept alive with the test).
    _dir: tempfile::TempDir,
    /// The engine client.
    pub program: PathBuf,
    /// Variables pointing the engine at the private configuration.
    pub env: Vec<(String, OsString)>,
    /// `localhost/agent-task-test@sha256:<64 hex>`.
    pub image: String,
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn sh(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{cmd:?} exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Oci {
    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Runs the engine client; `Err` with its stderr when it fails.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        sh(self.cmd().args(args))
    }

    /// Names of every container in the private store (running or not).
    pub fn containers(&self) -> String {
        self.run(&["ps", "--all", "--format", "{{.Names}}"])
            .expect("ps")
    }

    /// Builds the image and proves a container really runs, or says why not.
    pub fn get() -> Result<Oci, String> {
        let program = which("podman")
            .or_else(|| which("docker"))
            .ok_or("neither podman nor docker is installed")?;
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or("no busybox binary (Debian package busybox-static) to build a test image")?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let tar = build_rootfs_tar(dir.path(), &busybox)?;
        let podman = program.file_name().is_some_and(|n| n == "podman");
        let variants: Vec<Option<&str>> = if podman {
            // The host's default OCI runtime first; runc where crun cannot
            // run (e.g. hybrid cgroup v1/v2 hosts).
            let mut v = vec![None];
            if which("runc").is_some() {
                v.push(Some("runc"));
            }
            v
        } else {
            vec![None]
        };
        let mut why = Vec::new();
        for (i, runtime) in variants.into_iter().enumerate() {
            let mut env = Vec::new();
            if podman {
                let base = dir.path().join(format!("engine{i}"));
                std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
                let storage = base.join("storage.conf");
                let conf = base.join("containers.conf");
                std::fs::write(
                    &storage,
                    format!(
                        "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                        base.join("graph").display(),
                        base.join("run").display()
                    ),
                )
                .map_err(|e| e.to_string())?;
                let mut c = String::from(
                    "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
                     [engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n",
                );
                if let Some(r) = runtime {
                    c.push_str(&format!("runtime = \"{r}\"\n"));
                }
                std::fs::write(&conf, c).map_err(|e| e.to_string())?;
                env.push(("CONTAINERS_STORAGE_CONF".to_owned(), storage.into()));
                env.push(("CONTAINERS_CONF".to_owned(), conf.into()));
            }
            match import_and_try(&program, &env, &tar) {
                Ok(image) => {
                    return Ok(Oci {
                        _dir: dir,
                        program,
                        env,
                        image,
                    });
                }
                Err(e) => why.push(format!("[runtime {}] {e}", runtime.unwrap_or("default"))),
            }
        }
        Err(why.join("; "))
    }
}

/// Imports the rootfs as an image, pins it by digest and proves that a
/// container of it really runs.
fn import_and_try(
    program: &Path,
    env: &[(String, OsString)],
    tar: &Path,
) -> Result<String, String> {
    let run = |args: &[&str]| {
        let mut c = Command::new(program);
        c.envs(env.iter().map(|(k, v)| (k, v))).args(args);
        sh(&mut c)
    };
    let tar = tar.display().to_string();
    run(&["import", &tar, "localhost/agent-task-test:oci"])?;
    let digests = run(&[
        "image",
        "inspect",
        "--format",
        "{{json .RepoDigests}}",
        "localhost/agent-task-test:oci",
    ])?;
    let digests: Vec<String> = serde_json::from_str::<Option<Vec<String>>>(&digests)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let image = digests
        .into_iter()
        .find(|d| d.contains("@sha256:"))
        .ok_or("the imported image has no digest to pin")?;
    run(&[
        "run",
        "--rm",
        "--pull=never",
        "--network",
        "none",
        "--user",
        "65534:65534",
        &image,
        "true",
    ])?;
    Ok(image)
}

/// A root file system of one static busybox and its applets, as a tarball.
fn build_rootfs_tar(dir: &Path, busybox: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.join("rootfs");
    for d in ["bin", "etc", "tmp", "work", "scratch"] {
        std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| e.to_string())?;
    std::fs::copy(busybox, root.join("bin/busybox")).map_err(|e| e.to_string())?;
    let list = sh(Command::new(busybox).arg("--list"))?;
    for applet in list.lines().filter(|a| !a.is_empty() && *a != "busybox") {
        if !applet.contains('/') {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))
                .map_err(|e| e.to_string())?;
        }
    }
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/scratch:/bin/sh\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n")
        .map_err(|e| e.to_string())?;
    let tar = dir.join("rootfs.tar");
    sh(Command::new("tar")
        .arg("-C")
        .arg(&root)
        .args(["--numeric-owner", "--owner=0", "--group=0", "-cf"])
        .arg(&tar)
        .arg("."))?;
    Ok(tar)
}

fn engine_or_skip(test: &str) -> Option<Oci> {
    match Oci::get() {
        Ok(o) => Some(o),
        Err(why) => {
            eprintln!("SKIP: {test}: no usable OCI engine: {why}");
            None
        }
    }
}

/// An initialised env whose commands reach the private engine.
fn oci_env(oci: &Oci) -> TestEnv {
    let mut env = TestEnv::new();
    env.extra_env = oci.env.clone();
    env.run(&["init"]).json();
    env
}

fn oci_loop(oci: &Oci, env: TestEnv, workflow: &Path) -> Loop {
    Loop::setup(env, workflow, "oci", &["--oci-image", &oci.image])
}

/// `runtime probe --runtime oci` of the test image in `env`.
fn probe_oci(env: &TestEnv, oci: &Oci) -> crate::common::Output {
    env.run(&[
        "runtime",
        "probe",
        "--runtime",
        "oci",
        "--oci-image",
        &oci.image,
    ])
}

fn record(l: &Loop, d: &Value) -> Value {
    serde_json::from_slice(&l.read_retained(d, "record").expect("record")).expect("json")
}

#[test]
fn oci_profile_collects_a_failing_then_a_passing_test() {
    let Some(oci) = engine_or_skip("oci_profile_collects_a_failing_then_a_passing_test") else {
        return;
    };
    let env = oci_env(&oci);
    let wf = crate::common::repo_root().join("fixtures/workflows/basic.json");
    let probe = probe_oci(&env, &oci).json();
    assert_eq!(probe["image"]["reference"], oci.image.as_str());
    let l = oci_loop(&oci, env, &wf);
    l.set_add("-");
    let t1 = l.checkpoint();
    let (d1, desc) = l.claim(&t1, "d1.json");
    assert_eq!(desc["runtime"], "oci");
    assert_eq!(desc["oci_image"], oci.image.as_str());
    assert_eq!(desc["runtime_identity_digest"], probe["digest"]);
    let c = l.collect(&d1).json();
    assert_eq!(c["status"], "completed", "{c}");
    assert_eq!(c["outcome"], "failed", "{c}");
    assert_eq!(c["exit_code"], 1, "{c}");
    assert!(
        c["stderr_tail"]
            .as_str()
            .expect("tail")
            .contains("FAIL: 2 + 3 gave -1"),
        "{c}"
    );
    let r = record(&l, &desc);
    let id = &r["runtime_identity"];
    assert_eq!(id["runtime"], "oci");
    assert_eq!(id["digest"], probe["digest"]);
    assert_eq!(id["image"], probe["image"]);
    assert_eq!(
        id["isolation"],
        json!({"network": "none", "snapshot": "read_only", "pid_namespace": true,
               "private_tmp": true, "user": "unprivileged"})
    );
    assert!(
        id["pinned_args"]
            .as_array()
            .expect("args")
            .contains(&json!("--pull=never"))
    );
    assert_eq!(r["run"]["cleanup_confirmed"], true, "{r}");
    assert_eq!(oci.containers(), "", "the container is removed");
    assert_eq!(
        l.qualify()["failures"],
        json!([{"task_id": t1, "code": "collector_not_passed"}])
    );
    // Fixed: a new subject, collected again in a container, passes.
    l.set_add("+");
    let t2 = l.checkpoint();
    let (d2, _) = l.claim(&t2, "d2.json");
    let c = l.collect(&d2).json();
    assert_eq!(c["outcome"], "passed", "{c}");
    assert_eq!(c["stdout_tail"], "ok: 2 + 3 = 5\n");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let q = l.qualify();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(oci.containers(), "");
}

/// The isolation facts the record claims, checked from inside the container.
#[test]
fn oci_sandbox_has_no_network_and_cannot_write_the_snapshot() {
    let Some(oci) = engine_or_skip("oci_sandbox_has_no_network_and_cannot_write_the_snapshot")
    else {
        return;
    };
    // A host listener that the host itself can reach on loopback and on its
    // outward address: the container must reach neither.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let outward = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|u| u.connect("192.0.2.1:80").map(|()| u))
        .and_then(|u| u.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    let outside = match outward {
        Some(ip) => {
            assert!(
                std::net::TcpStream::connect((ip, port)).is_ok(),
                "control: the host reaches {ip}:{port}"
            );
            format!("{ip} {port}")
        }
        None => "1.1.1.1 80".to_owned(),
    };
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let env = oci_env(&oci);
    let wf = workflow_with(&env, &["sh", "probe.sh"]);
    let l = oci_loop(&oci, env, &wf);
    std::fs::write(
        l.workspace.join("probe.sh"),
        format!(
            "if echo x > ./written 2>/dev/null; then echo SNAPSHOT_WRITABLE; exit 1; fi\n\
             if echo x >> ./add.sh 2>/dev/null; then echo SNAPSHOT_WRITABLE; exit 1; fi\n\
             if touch docs/new 2>/dev/null; then echo SNAPSHOT_WRITABLE; exit 1; fi\n\
             if touch /new 2>/dev/null; then echo ROOT_WRITABLE; exit 1; fi\n\
             if nc -w 3 127.0.0.1 {port} </dev/null 2>/dev/null; then echo LOOPBACK; exit 1; fi\n\
             if nc -w 3 {outside} </dev/null 2>/dev/null; then echo OUTSIDE; exit 1; fi\n\
             echo s > /scratch/s && echo t > /tmp/t || {{ echo NO_SCRATCH; exit 1; }}\n\
             echo \"isolated uid=$(id -u) home=$HOME\"\n"
        ),
    )
    .expect("probe");
    let t = l.checkpoint();
    let (d, desc) = l.claim(&t, "d.json");
    let c = l.collect(&d).json();
    assert_eq!(c["outcome"], "passed", "{c}");
    assert_eq!(c["stdout_tail"], "isolated uid=65534 home=/scratch\n");
    let r = record(&l, &desc);
    assert_eq!(r["runtime_identity"]["isolation"]["network"], "none");
    assert_eq!(r["runtime_identity"]["isolation"]["snapshot"], "read_only");
    assert_eq!(r["run"]["cleanup_confirmed"], true);
    assert_eq!(oci.containers(), "");
    drop(listener);
}

#[test]
fn oci_timeout_stops_and_removes_the_container() {
    let Some(oci) = engine_or_skip("oci_timeout_stops_and_removes_the_container") else {
        return;
    };
    let env = oci_env(&oci);
    let wf = workflow_with(&env, &["sleep", "120"]);
    let mut w: Value = serde_json::from_slice(&std::fs::read(&wf).expect("wf")).expect("json");
    w["steps"][0]["recipe"]["timeout_ms"] = json!(3000);
    std::fs::write(&wf, serde_json::to_vec(&w).expect("json")).expect("write");
    let l = oci_loop(&oci, env, &wf);
    let t = l.checkpoint();
    let (d, desc) = l.claim(&t, "d.json");
    let c = l.collect(&d).json();
    assert_eq!(c["status"], "completed", "{c}");
    assert_eq!(c["outcome"], "failed", "{c}");
    let r = record(&l, &desc);
    assert_eq!(r["run"]["timed_out"], true, "{r}");
    assert_eq!(r["run"]["cleanup_confirmed"], true, "{r}");
    assert_eq!(oci.containers(), "", "the stopped container is removed");
}

#[test]
fn oci_absent_image_is_a_typed_failed_record_never_a_pull() {
    let Some(oci) = engine_or_skip("oci_absent_image_is_a_typed_failed_record_never_a_pull") else {
        return;
    };
    let env = oci_env(&oci);
    let wf = crate::common::repo_root().join("fixtures/workflows/basic.json");
    let l = oci_loop(&oci, env, &wf);
    // The operator pinned the image; it is gone from the store by collect time.
    oci.run(&["rmi", "--force", &oci.image]).expect("rmi");
    let t = l.checkpoint();
    let (d, desc) = l.claim(&t, "d.json");
    let c = l.collect(&d).json();
    assert_eq!(c["status"], "image_unavailable", "{c}");
    assert_eq!(c["outcome"], "failed");
    assert_eq!(c["exit_code"], Value::Null);
    assert_eq!(c["upload"]["retained"], true, "{c}");
    assert!(
        c["detail"]
            .as_str()
            .expect("detail")
            .contains("never pulled"),
        "{c}"
    );
    let r = record(&l, &desc);
    assert_eq!(r["runtime_identity"], Value::Null);
    assert_eq!(r["run"], Value::Null);
    assert_eq!(
        l.qualify()["failures"],
        json!([{"task_id": t, "code": "collector_not_passed"}])
    );
    // Nothing was pulled: the image is still absent.
    assert!(oci.run(&["image", "inspect", &oci.image]).is_err());
    // And `runtime probe` says so with its own code.
    probe_oci(&l.env, &oci).error("oci_image_unavailable", 69);
}

#[test]
fn the_identity_names_the_runtime_podman_runs_with_the_collectors_path() {
    let test = "the_identity_names_the_runtime_podman_runs_with_the_collectors_path";
    let Some(oci) = engine_or_skip(test) else {
        return;
    };
    if oci.program.file_name().is_none_or(|n| n != "podman") {
        eprintln!("SKIP: {test}: the engine is not podman");
        return;
    }
    let probe = |env: &TestEnv| probe_oci(env, &oci);
    let runtime_of = |extra: &[(String, OsString)]| {
        let mut c = oci.cmd();
        c.envs(extra.iter().map(|(k, v)| (k, v))).args([
            "info",
            "--format",
            "{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}",
        ]);
        let out = sh(&mut c).expect("podman info");
        out.lines().next().unwrap_or_default().to_owned()
    };
    // The engine as configured: the identity names what podman itself
    // reports (collect asks it first without PATH; see oci::podman_runtime).
    let env = oci_env(&oci);
    let version = probe(&env).json()["version"]
        .as_str()
        .expect("version")
        .to_owned();
    assert!(
        version.ends_with(&format!("; {}", runtime_of(&[]))),
        "{version}"
    );
    // A default runtime podman finds only through PATH (its configured
    // path does not exist): the identity still names it, from the query
    // asked again with the collector's PATH; without it on PATH podman has
    // no runtime and the probe says so.
    let real = oci
        .run(&["info", "--format", "{{.Host.OCIRuntime.Path}}"])
        .expect("runtime path");
    let dir = tempfile::tempdir().expect("tmp");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    std::os::unix::fs::symlink(&real, bin.join("atrt")).expect("symlink");
    let conf_of = |env: &[(String, OsString)]| {
        env.iter()
            .find(|(k, _)| k == "CONTAINERS_CONF")
            .map(|(_, v)| std::fs::read_to_string(v).expect("containers.conf"))
            .expect("a podman test engine has its own containers.conf")
    };
    let conf = dir.path().join("containers.conf");
    let base: String = conf_of(&oci.env)
        .lines()
        .filter(|l| !l.starts_with("runtime ="))
        .map(|l| format!("{l}\n"))
        .collect();
    let base = base.replace("[engine]\n", "[engine]\nruntime = \"atrt\"\n");
    std::fs::write(
        &conf,
        format!("{base}[engine.runtimes]\natrt = [\"/nonexistent/agent-task-test/atrt\"]\n"),
    )
    .expect("write");
    let mut path = OsString::from(&bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut extra: Vec<(String, OsString)> = oci
        .env
        .iter()
        .filter(|(k, _)| k != "CONTAINERS_CONF")
        .cloned()
        .collect();
    extra.push(("CONTAINERS_CONF".to_owned(), conf.clone().into()));
    let mut on_path = TestEnv::new();
    on_path.extra_env = extra.clone();
    on_path.extra_env.push(("PATH".to_owned(), path.clone()));
    on_path.run(&["init"]).json();
    let mut with_path = extra.clone();
    with_path.push(("PATH".to_owned(), path));
    let expected = runtime_of(&with_path);
    assert!(expected.starts_with("atrt "), "{expected}");
    let got = probe(&on_path).json()["version"]
        .as_str()
        .expect("version")
        .to_owned();
    assert!(got.ends_with(&format!("; {expected}")), "{got}");
    let mut off_path = TestEnv::new();
    off_path.extra_env = extra;
    off_path.run(&["init"]).json();
    probe(&off_path).error("runtime_unavailable", 69);
}

#[test]
fn profile_install_refuses_unpinned_or_misplaced_images() {
    let l = Loop::basic("bwrap");
    let reg = l.registration.clone();
    let pinned = format!("localhost/img@sha256:{}", "ab".repeat(32));
    let install = |extra: &[&str]| {
        let mut args = vec![
            "profile",
            "install",
            "--registration",
            &reg,
            "--step",
            "tests",
        ];
        args.extend(extra);
        l.env.run(&args)
    };
    install(&["--runtime", "oci", "--oci-image", "busybox:latest"])
        .error("oci_image_reference_invalid", 65);
    install(&["--runtime", "oci", "--oci-image", "busybox"])
        .error("oci_image_reference_invalid", 65);
    install(&["--runtime", "oci"]).error("invalid_input", 65);
    install(&["--runtime", "bwrap", "--oci-image", &pinned]).error("invalid_input", 65);
    // The installed bwrap profile is untouched: reinstalling it is a no-op.
    assert_eq!(install(&["--runtime", "bwrap"]).json()["created"], false);
}
