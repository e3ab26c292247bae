//! The argument vectors a run is launched with: the bwrap mount and
//! namespace plan, the OCI engine argv, and the command that starts either.

use super::*;

/// Mount and namespace plan of the bwrap runtime, with the pinned tmpfs
/// size. `{snapshot}` is replaced per run; everything else is fixed. The root, `/dev` and the snapshot are
/// read-only; the only writable places are three sized tmpfs mounts.
pub(super) fn bwrap_args(limits: &SandboxLimits) -> Vec<String> {
    let size = limits.tmpfs_bytes.to_string();
    let mut v: Vec<&str> = vec![
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/sbin",
        "/sbin",
        "--ro-bind-try",
        "/etc/passwd",
        "/etc/passwd",
        "--ro-bind-try",
        "/etc/group",
        "/etc/group",
        "--ro-bind-try",
        "/etc/ld.so.cache",
        "/etc/ld.so.cache",
        "--ro-bind-try",
        "/etc/alternatives",
        "/etc/alternatives",
        "--ro-bind-try",
        "/etc/hosts",
        "/etc/hosts",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ];
    for dir in ["/dev/shm", "/tmp", "/scratch"] {
        v.extend(["--size", size.as_str(), "--tmpfs", dir]);
    }
    v.extend([
        "--ro-bind",
        "{snapshot}",
        "/work",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        "/work",
        "--clearenv",
    ]);
    v.into_iter().map(str::to_owned).collect()
}

pub(super) fn substitute(args: &[String], snapshot: &Path) -> Vec<String> {
    let s = snapshot.display().to_string();
    args.iter().map(|a| a.replace("{snapshot}", &s)).collect()
}

pub(super) const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The exact client arguments of one `oci` run: the pinned plan, the
/// per-run container name and environment, then the image and the recipe.
pub(super) fn oci_argv(
    id: &RuntimeIdentity,
    spec: &RunSpec<'_>,
    name: &str,
) -> Result<Vec<String>> {
    let image = spec
        .oci_image
        .ok_or_else(|| Error::new(Code::InvalidInput, "the oci runtime needs a pinned image"))?;
    if id.image.as_ref().map(|i| i.reference.as_str()) != Some(image) {
        return Err(Error::new(
            Code::InvalidInput,
            "the run's image is not the one the runtime identity resolved",
        ));
    }
    let snap = spec.snapshot.display().to_string();
    if snap.contains([':', ',']) || !spec.snapshot.is_absolute() {
        return Err(Error::new(
            Code::InvalidInput,
            "the snapshot path must be absolute and free of ':' and ','",
        ));
    }
    let mut argv = substitute(&id.pinned_args, spec.snapshot);
    argv.extend(["--name".to_owned(), name.to_owned()]);
    if engine_of(&id.program) == Engine::Podman {
        // Should the collector itself die, conmon still stops the container.
        let secs = spec.timeout.as_secs().saturating_add(5).to_string();
        argv.extend(["--timeout".to_owned(), secs]);
    }
    for (k, v) in [
        ("PATH", SANDBOX_PATH),
        ("HOME", "/scratch"),
        ("TMPDIR", "/tmp"),
    ] {
        argv.extend(["--env".to_owned(), format!("{k}={v}")]);
    }
    for (k, v) in spec.env {
        argv.extend(["--env".to_owned(), format!("{k}={v}")]);
    }
    argv.push("--".to_owned());
    argv.push(image.to_owned());
    argv.extend(spec.argv.iter().cloned());
    Ok(argv)
}

/// How a run starts.
pub(super) enum Launcher {
    /// `bwrap`: the launch its process applies (`sandbox::spawn`).
    Sandbox(crate::collector::sandbox::Launch),
    /// `oci`: the engine's client.
    Command(Command),
}

/// How the run of `spec` starts under `id`.
pub(super) fn build_launcher(
    id: &RuntimeIdentity,
    spec: &RunSpec<'_>,
    container: Option<&str>,
) -> Result<Launcher> {
    if spec.argv.is_empty() {
        return Err(Error::new(
            Code::InvalidInput,
            "the command recipe has an empty argv",
        ));
    }
    let mut cmd = match id.runtime {
        RuntimeKind::Bwrap => {
            // The run's process applies the limits between its clone and exec,
            // then executes bwrap with the pinned plan and the recipe
            // (`collector::sandbox`). It sets its own parent-death signal
            // after any uid change (a uid change clears it).
            let limits = id
                .limits
                .as_ref()
                .ok_or_else(|| not_isolating(id.runtime))?;
            let mut args = substitute(&id.pinned_args, spec.snapshot);
            args.extend(
                [
                    "--setenv",
                    "PATH",
                    SANDBOX_PATH,
                    "--setenv",
                    "HOME",
                    "/scratch",
                    "--setenv",
                    "TMPDIR",
                    "/tmp",
                ]
                .map(str::to_owned),
            );
            for (k, v) in spec.env {
                args.extend(["--setenv".to_owned(), k.clone(), v.clone()]);
            }
            args.push("--".to_owned());
            args.extend(spec.argv.iter().cloned());
            if limits.process.is_none() {
                return Err(not_isolating(id.runtime));
            }
            let launch = crate::collector::sandbox::Launch {
                limits: limits.clone(),
                program: PathBuf::from(&id.program),
                args,
            };
            return Ok(Launcher::Sandbox(launch));
        }
        RuntimeKind::Unshare => return Err(not_isolating(id.runtime)),
        RuntimeKind::Oci => {
            let name = container.ok_or_else(|| Error::internal("an oci run needs a name"))?;
            let argv = oci_argv(id, spec, name)?;
            let mut cmd = engine_command(Path::new(&id.program));
            cmd.args(argv);
            cmd
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // If the collector itself dies (SIGKILL), the OCI client dies too. An
    // OCI container is not the client's child: podman's --timeout bounds it
    // (docker has no such flag), and the rerun records `interrupted`
    // without running anything. (A bwrap run's process sets the same
    // signal itself; bwrap --die-with-parent takes the command with it.)
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and only
    // calls prctl(2), which is async-signal-safe; no memory is shared.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(Launcher::Command(cmd))
}
