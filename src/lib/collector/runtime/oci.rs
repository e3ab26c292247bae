//! The OCI engine (podman or docker): its fixed run arguments, the pinned
//! image reference, inspection and container removal.

use super::*;

/// Run plan of the `oci` runtime under podman. `/tmp` and `/scratch` are
/// tmpfs mounts owned by the container user (`U`), so a rootful engine
/// never needs a host directory writable by uid 65534.
pub(super) const PODMAN_ARGS: &[&str] = &[
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
    "{snapshot}:/work:ro",
    "--workdir",
    "/work",
];

/// Run plan of the `oci` runtime under docker (same guarantees; docker's
/// tmpfs takes a mode instead of podman's `U`).
pub(super) const DOCKER_ARGS: &[&str] = &[
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
    "/tmp:rw,nosuid,nodev,mode=1777",
    "--tmpfs",
    "/scratch:rw,nosuid,nodev,exec,mode=1777",
    "--volume",
    "{snapshot}:/work:ro",
    "--workdir",
    "/work",
];

/// Environment variables that tell an OCI client where its engine and
/// configuration are; nothing else from the collector's environment
/// reaches the engine (and none of it reaches the container).
pub(super) const ENGINE_ENV: &[&str] = &[
    "PATH",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "CONTAINER_HOST",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "XDG_RUNTIME_DIR",
];

/// Longest OCI image reference accepted.
pub const MAX_OCI_REFERENCE: usize = 512;

/// Checks that `r` is a digest-pinned image reference
/// `NAME[:TAG]@sha256:<64 lowercase hex>` and returns the digest part
/// (`sha256:<hex>`). A tag alone, another algorithm, or anything that could
/// be read as an option is refused with `oci_image_reference_invalid`.
pub fn parse_oci_reference(r: &str) -> Result<&str> {
    let bad = |why: &str| {
        Error::new(
            Code::OciImageReferenceInvalid,
            format!("OCI image reference {r:?}: {why}; pin it as NAME@sha256:<64 hex>"),
        )
    };
    if r.len() > MAX_OCI_REFERENCE {
        return Err(bad("too long"));
    }
    let Some((name, digest)) = r.rsplit_once('@') else {
        return Err(bad("not pinned by digest (a tag alone can move)"));
    };
    let hex = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| bad("the digest is not sha256"))?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad("the digest is not 64 lowercase hex digits"));
    }
    let first_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let chars_ok = name.bytes().all(|b| {
        b.is_ascii_lowercase()
            || b.is_ascii_uppercase()
            || b.is_ascii_digit()
            || matches!(b, b'.' | b'_' | b'-' | b'/' | b':')
    });
    if !first_ok || !chars_ok {
        return Err(bad(
            "the name is empty or has characters outside [A-Za-z0-9._/:-]",
        ));
    }
    Ok(digest)
}

/// Which OCI client a program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Engine {
    Podman,
    Docker,
}

pub(super) fn engine_of(program: &str) -> Engine {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.starts_with("podman") {
        Engine::Podman
    } else {
        Engine::Docker
    }
}

/// A command for the OCI client with a scrubbed environment.
pub(super) fn engine_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    for k in ENGINE_ENV {
        if let Some(v) = crate::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs the OCI client to completion; `Err(stderr)` when it fails.
pub(super) fn engine_output(program: &Path, args: &[&str]) -> std::result::Result<String, String> {
    output_of(engine_command(program), program, args)
}

/// Runs `cmd` (the client `program`) with `args` to completion; its
/// trimmed stdout, or `Err(stderr)` when it fails.
fn output_of(
    mut cmd: Command,
    program: &Path,
    args: &[&str],
) -> std::result::Result<String, String> {
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        let err: String = String::from_utf8_lossy(&out.stderr)
            .trim()
            .chars()
            .take(400)
            .collect();
        Err(format!("{} {}: {err}", program.display(), args.join(" ")))
    }
}

/// The engine's version line: proves the engine (not just the client)
/// answers, and names the OCI runtime underneath for podman.
pub(super) fn engine_version(program: &Path) -> Result<String> {
    let kind = RuntimeKind::Oci;
    let line = |s: String| -> String {
        s.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(120)
            .collect()
    };
    let v = match engine_of(&program.display().to_string()) {
        Engine::Podman => {
            // Two client starts, run at once; the client's error comes first.
            let (client, rt) = std::thread::scope(|s| {
                let rt = s.spawn(|| podman_runtime(program));
                (engine_output(program, &["--version"]), rt.join())
            });
            let client = client.map_err(|e| unavailable(kind, e))?;
            let rt = rt
                .map_err(|_| Error::internal("the engine query panicked"))?
                .map_err(|e| unavailable(kind, e))?;
            format!("{}; {}", line(client), line(rt))
        }
        Engine::Docker => line(
            engine_output(
                program,
                &[
                    "version",
                    "--format",
                    "{{.Client.Version}}/{{.Server.Version}}",
                ],
            )
            .map_err(|e| unavailable(kind, e))?,
        ),
    };
    Ok(v)
}

/// What `PATH` is for the first `podman info` (see [`podman_runtime`]):
/// not a directory, so nothing is ever found through it.
pub(super) const NO_PATH: &str = "/dev/null";

/// The OCI runtime podman runs containers with, as `podman info` names it:
/// `"<name> <version>"`.
///
/// Besides the runtime, `podman info` looks up the package of conmon, the
/// runtime and slirp4netns with the system's package manager (on Debian
/// `dpkg -S`, about 70 ms each: most of the query's 250 ms), which nothing
/// here reads. So it is asked first with `PATH` set to [`NO_PATH`]: `dpkg`
/// then cannot start the `dpkg-query` it hands the search to and each
/// lookup fails at once, while podman still finds its runtime and conmon
/// at the absolute paths its configuration lists, which it tries before
/// `PATH`, and runs the runtime's `--version` by that path. A runtime or a
/// conmon podman would find only through `PATH` fails that first query
/// (podman refuses a default runtime it cannot find rather than choose
/// another): the query is then asked again with the collector's `PATH`,
/// and that answer (or its error) is the one given. Either way the answer
/// names the runtime a `podman run` with the collector's `PATH` uses.
fn podman_runtime(program: &Path) -> std::result::Result<String, String> {
    let args = [
        "info",
        "--format",
        "{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}",
    ];
    let mut quick = engine_command(program);
    quick.env("PATH", NO_PATH);
    match output_of(quick, program, &args) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => engine_output(program, &args),
    }
}

pub(super) fn sha256_id(s: &str) -> Option<String> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| format!("sha256:{hex}"))
}

/// Resolves the pinned reference in the engine's local store (never
/// pulling) and checks that the image really carries the pinned digest.
pub(super) fn inspect_image(program: &Path, reference: &str) -> Result<OciImage> {
    let digest = parse_oci_reference(reference)?;
    let absent = |why: String| {
        Error::new(
            Code::OciImageUnavailable,
            format!("the pinned image {reference} is not in the engine's local store (it is never pulled): {why}"),
        )
        .with("image", reference)
    };
    let out = engine_output(
        program,
        &[
            "image",
            "inspect",
            "--format",
            "{{.Id}} {{json .RepoDigests}}",
            "--",
            reference,
        ],
    )
    .map_err(absent)?;
    let (id, digests) = out
        .split_once(' ')
        .ok_or_else(|| absent(format!("unexpected inspect output {out:?}")))?;
    let id = sha256_id(id).ok_or_else(|| absent(format!("unexpected image id {id:?}")))?;
    let digests: Vec<String> = serde_json::from_str::<Option<Vec<String>>>(digests)
        .map_err(|e| absent(format!("unexpected repo digests: {e}")))?
        .unwrap_or_default();
    if !digests
        .iter()
        .any(|d| d.rsplit_once('@').is_some_and(|(_, h)| h == digest))
    {
        return Err(absent(format!(
            "the local image {id} does not carry the pinned digest {digest}"
        )));
    }
    Ok(OciImage {
        reference: reference.to_owned(),
        id,
        digest: digest.to_owned(),
    })
}

/// Whether the named container no longer exists (`Err` when the engine
/// cannot tell).
pub(super) fn container_gone(program: &Path, name: &str) -> std::result::Result<bool, String> {
    match engine_output(
        program,
        &["container", "inspect", "--format", "{{.Id}}", "--", name],
    ) {
        Ok(_) => Ok(false),
        Err(e) if e.to_ascii_lowercase().contains("no such") => Ok(true),
        Err(e) => Err(e),
    }
}

/// Confirms the run's container is gone, force-removing it first when the
/// client was stopped (timeout, output cap) before `--rm` could act.
pub(super) fn remove_container(program: &Path, name: &str) -> bool {
    match container_gone(program, name) {
        Ok(true) => true,
        Ok(false) | Err(_) => {
            let _ = engine_output(program, &["rm", "--force", "--", name]);
            container_gone(program, name).unwrap_or(false)
        }
    }
}

/// uid 65534 must read the snapshot through the bind mount: its directories
/// become 0755 (its files already are 0644/0755). The snapshot's parent
/// stays owner-private, so nobody outside the container can reach it.
pub(super) fn open_snapshot_for_container(snapshot: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = vec![snapshot.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let meta = std::fs::symlink_metadata(&d).map_err(|e| Error::io("stat", &d, e))?;
        if !meta.is_dir() {
            continue;
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("chmod", &d, e))?;
        for e in std::fs::read_dir(&d).map_err(|e| Error::io("read", &d, e))? {
            let e = e.map_err(|x| Error::io("read", &d, x))?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `podman` in a fresh directory: its `info` prints `quick`
    /// when run with `PATH` set to [`NO_PATH`] (or fails, when `quick` is
    /// `None`) and `full` otherwise (or fails, when `full` is `None`);
    /// every `info` appends its `PATH` to `calls`.
    fn fake(quick: Option<&str>, full: Option<&str>) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let calls = dir.path().join("calls");
        let answer = |a: Option<&str>| match a {
            Some(v) => format!("echo '{v}'"),
            None => "echo 'no runtime' >&2; exit 125".to_owned(),
        };
        let script = format!(
            "#!/bin/sh\n\
             [ \"$1\" = info ] || {{ echo 'podman version 9.9'; exit 0; }}\n\
             echo \"$PATH\" >> '{calls}'\n\
             if [ \"$PATH\" = '{NO_PATH}' ]; then {quick}; else {full}; fi\n",
            calls = calls.display(),
            quick = answer(quick),
            full = answer(full),
        );
        let program = dir.path().join("podman");
        // Written by a child process: a file this process held open for
        // writing while another test's thread forks would be inherited
        // until that child's exec, and running it then fails with
        // ETXTBSY.
        let st = Command::new("/bin/sh")
            .args([
                "-c",
                "printf '%s' \"$1\" > \"$2\" && chmod 755 \"$2\"",
                "sh",
            ])
            .arg(&script)
            .arg(&program)
            .status()
            .expect("sh");
        assert!(st.success());
        (dir, program, calls)
    }

    fn calls(p: &Path) -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_runtime_is_asked_for_without_path_first() {
        let (_d, program, log) = fake(Some("runc runc version 1.1"), Some("never"));
        assert_eq!(
            podman_runtime(&program).as_deref(),
            Ok("runc runc version 1.1")
        );
        assert_eq!(calls(&log), [NO_PATH], "one query, without PATH");
        assert_eq!(
            engine_version(&program).expect("version"),
            "podman version 9.9; runc runc version 1.1"
        );
    }

    #[test]
    fn a_runtime_found_only_through_path_is_asked_for_again_with_it() {
        let (_d, program, log) = fake(None, Some("crun crun version 1.8"));
        assert_eq!(
            podman_runtime(&program).as_deref(),
            Ok("crun crun version 1.8")
        );
        let got = calls(&log);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], NO_PATH);
        assert_eq!(
            Some(std::ffi::OsStr::new(&got[1])),
            crate::env::var_os("PATH").as_deref(),
            "the second query has the collector's PATH"
        );
        // An empty first answer is no answer either.
        let (_d, program, log) = fake(Some(""), Some("crun crun version 1.8"));
        assert_eq!(
            podman_runtime(&program).as_deref(),
            Ok("crun crun version 1.8")
        );
        assert_eq!(calls(&log).len(), 2);
    }

    #[test]
    fn when_both_queries_fail_the_error_is_the_second_ones() {
        let (_d, program, log) = fake(None, None);
        let e = podman_runtime(&program).expect_err("no runtime");
        assert!(e.contains("no runtime") && e.contains("info"), "{e}");
        assert_eq!(calls(&log).len(), 2);
        let e = engine_version(&program).expect_err("unavailable");
        assert_eq!(e.code(), Code::RuntimeUnavailable, "{e:?}");
    }
}
