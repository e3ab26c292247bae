//! Probing a runtime: finding its program, its version and isolation
//! facts, and a trial run before its identity is reported.

use super::*;

pub(super) fn find_program(name: &str) -> Option<PathBuf> {
    let path = crate::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

pub(super) fn unavailable(kind: RuntimeKind, why: impl Into<String>) -> Error {
    Error::new(
        Code::RuntimeUnavailable,
        format!("runtime {} cannot run here: {}", kind.as_str(), why.into()),
    )
    .with("runtime", kind.as_str())
}

pub(super) fn version_of(kind: RuntimeKind, program: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unavailable(kind, format!("{}: {e}", program.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(unavailable(
            kind,
            format!(
                "{} {} failed: {}",
                program.display(),
                args.join(" "),
                err.trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .chars()
        .take(200)
        .collect())
}

/// Checks that an image is named exactly when the runtime is `oci`.
pub fn check_image_flag(kind: RuntimeKind, oci_image: Option<&str>) -> Result<()> {
    match (kind, oci_image) {
        (RuntimeKind::Oci, Some(r)) => parse_oci_reference(r).map(|_| ()),
        (RuntimeKind::Oci, None) => Err(Error::new(
            Code::InvalidInput,
            "the oci runtime needs a pinned image: --oci-image NAME@sha256:<64 hex>",
        )),
        (_, Some(_)) => Err(Error::new(
            Code::InvalidInput,
            format!(
                "--oci-image applies to the oci runtime only, not {}",
                kind.as_str()
            ),
        )),
        (_, None) => Ok(()),
    }
}

/// What a probe or a run needs besides the runtime kind: for `oci` the
/// digest-pinned image, for `bwrap` the pinned limits (applied in the
/// run's own process before bubblewrap: `collector::sandbox`).
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The pinned image (`oci` only; refused for the other runtimes).
    pub oci_image: Option<&'a str>,
    /// The sandbox limits (`bwrap` only).
    pub limits: Option<&'a SandboxLimits>,
    /// The collector directory whose `runtime-digests.json` may answer
    /// for the program's digest while the file is unchanged
    /// ([`program_digest_in`]); `None` hashes the program every time.
    pub collector_dir: Option<&'a Path>,
}

/// Observes the identity of `kind` on this host, and checks that it can
/// actually isolate (a trial run with the pinned
/// limits), so that a later run does not discover too late that it cannot.
/// For `oci`, the plan's image is required (and refused for the other
/// runtimes); the engine must answer and the image must be in its local
/// store. An image may hold no `true`, so `oci` has no trial run; its
/// first run is the collection. `unshare` is refused.
pub fn probe(kind: RuntimeKind, plan: &Plan<'_>) -> Result<RuntimeIdentity> {
    let id = observe(kind, plan)?;
    if kind != RuntimeKind::Oci {
        trial(&id)?;
    }
    Ok(id)
}

/// [`probe`] without the trial run: the identity observed on this host
/// (program, its bytes' digest, version, pinned arguments, limits, for
/// `oci` the engine and the image in its store) and the isolation check.
/// `collect` uses it: the collection's own run goes through the same
/// limits as a trial would, so a runtime that cannot start
/// fails that run (its exit code and stderr tail are recorded), and a
/// second sandbox start per collection would only repeat it.
pub fn observe(kind: RuntimeKind, plan: &Plan<'_>) -> Result<RuntimeIdentity> {
    check_image_flag(kind, plan.oci_image)?;
    let id = match kind {
        RuntimeKind::Bwrap => {
            let limits = plan.limits.ok_or_else(|| {
                Error::new(
                    Code::InvalidInput,
                    "the bwrap runtime needs its sandbox limits",
                )
            })?;
            limits.check_applicable()?;
            let program =
                find_program("bwrap").ok_or_else(|| unavailable(kind, "bwrap is not installed"))?;
            let version = version_of(kind, &program, &["--version"])?;
            let sha = program_digest_in(&program, plan.collector_dir)?;
            identity_of(
                kind,
                program,
                sha,
                version,
                bwrap_args(limits),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
                Some(limits.clone()),
                None,
            )?
        }
        RuntimeKind::Unshare => return Err(not_isolating(kind)),
        RuntimeKind::Oci => {
            let reference = plan
                .oci_image
                .ok_or_else(|| Error::internal("checked above"))?;
            let program = find_program("podman")
                .or_else(|| find_program("docker"))
                .ok_or_else(|| unavailable(kind, "neither podman nor docker is installed"))?;
            // The engine (not just the client) must answer. Its version
            // and the image are asked for at once (each engine call is a
            // client start of its own), and the client's file (tens of
            // megabytes) is hashed meanwhile; a version error still comes
            // first.
            let (version, image, sha) = std::thread::scope(|s| {
                let image = s.spawn(|| inspect_image(&program, reference));
                let sha = s.spawn(|| program_digest_in(&program, plan.collector_dir));
                let version = engine_version(&program);
                (version, image.join(), sha.join())
            });
            let version = version?;
            let image = image.map_err(|_| Error::internal("the image inspection panicked"))??;
            let sha = sha.map_err(|_| Error::internal("the program digest panicked"))??;
            let args = match engine_of(&program.display().to_string()) {
                Engine::Podman => PODMAN_ARGS,
                Engine::Docker => DOCKER_ARGS,
            };
            identity_of(
                kind,
                program,
                sha,
                version,
                args.iter().map(|s| s.to_string()).collect(),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
                None,
                Some(image),
            )?
        }
    };
    id.check_isolating()?;
    Ok(id)
}

pub(super) fn trial(id: &RuntimeIdentity) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let private =
        tempfile::tempdir().map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
    let dir = snapshot_dir(
        id.limits.as_ref(),
        &private.path().join(crate::wire::random_id("trial")?),
    )?;
    let snap = dir.path().to_path_buf();
    // A dedicated uid must be able to enter it.
    std::fs::set_permissions(&snap, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("chmod", &snap, e))?;
    let spec = RunSpec {
        snapshot: &snap,
        argv: &["true".to_string()],
        env: &[],
        timeout: Duration::from_secs(20),
        max_output_bytes: 4096,
        tail_bytes: 512,
        oci_image: None,
    };
    let out = run(id, &spec, &crate::clock::SystemClock);
    dir.remove();
    // A limit the run's process cannot apply is its own typed error
    // (`sandbox_limit_unavailable`, the step named), from the spawn.
    let out = out?;
    if out.exit_code != Some(0) {
        return Err(Error::new(
            Code::RuntimeUnavailable,
            format!(
                "runtime {} cannot run here: a trial run of `true` failed (exit {:?}): {}",
                id.runtime.as_str(),
                out.exit_code,
                out.stderr.tail
            ),
        )
        .with("runtime", id.runtime.as_str()));
    }
    Ok(())
}
