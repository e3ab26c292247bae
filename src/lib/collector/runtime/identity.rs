//! The runtime identity: what a probe observed, and the digest a
//! collector profile pins over it.

use super::*;

/// A digest-pinned OCI image, as present in the engine's local store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciImage {
    /// The reference the profile pins: `NAME@sha256:<64 hex>`.
    pub reference: String,
    /// The engine's image id (`sha256:<64 hex>`, the digest of the image config).
    pub id: String,
    /// The manifest digest of the reference (`sha256:<64 hex>`), found among
    /// the image's own digests.
    pub digest: String,
}

#[derive(Serialize)]
pub(super) struct IdentityCore<'a> {
    runtime: RuntimeKind,
    program: &'a str,
    program_sha256: &'a Sha256Hex,
    version: &'a str,
    pinned_args: &'a [String],
    isolation: &'a IsolationFacts,
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<&'a SandboxLimits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<&'a OciImage>,
}

/// [`identity_of`] with the program hashed now (the unit tests' shorthand).
#[cfg(test)]
pub(super) fn identity(
    runtime: RuntimeKind,
    program: PathBuf,
    version: String,
    pinned_args: Vec<String>,
    isolation: IsolationFacts,
    limits: Option<SandboxLimits>,
    image: Option<OciImage>,
) -> Result<RuntimeIdentity> {
    let program_sha256 = program_digest(&program)?;
    identity_of(
        runtime,
        program,
        program_sha256,
        version,
        pinned_args,
        isolation,
        limits,
        image,
    )
}

/// The SHA-256 of the runtime's program file, read now.
///
/// Streamed through one 256 KiB buffer: podman is a 33 MB file, and reading
/// it whole into a fresh allocation cost as much again as hashing it (the
/// kernel faulting in and zeroing 8,000 new pages), about 20 ms of CPU on a
/// two-core machine where the engine's own queries run at the same time.
pub(super) fn program_digest(program: &Path) -> Result<Sha256Hex> {
    let mut f = std::fs::File::open(program).map_err(|e| Error::io("open", program, e))?;
    super::digests::digest_reader(&mut f, program)
}

/// [`identity`] with the program's digest already taken
/// ([`program_digest`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn identity_of(
    runtime: RuntimeKind,
    program: PathBuf,
    program_sha256: Sha256Hex,
    version: String,
    pinned_args: Vec<String>,
    isolation: IsolationFacts,
    limits: Option<SandboxLimits>,
    image: Option<OciImage>,
) -> Result<RuntimeIdentity> {
    let program = program.display().to_string();
    let core = IdentityCore {
        runtime,
        program: &program,
        program_sha256: &program_sha256,
        version: &version,
        pinned_args: &pinned_args,
        isolation: &isolation,
        limits: limits.as_ref(),
        image: image.as_ref(),
    };
    let digest = domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?);
    Ok(RuntimeIdentity {
        runtime,
        program,
        program_sha256,
        version,
        pinned_args,
        isolation,
        limits,
        image,
        digest,
    })
}

impl RuntimeIdentity {
    /// Recomputes the digest from the other fields (a pinned identity read
    /// from a file or a transfer must be self-consistent).
    pub fn computed_digest(&self) -> Result<Sha256Hex> {
        let core = IdentityCore {
            runtime: self.runtime,
            program: &self.program,
            program_sha256: &self.program_sha256,
            version: &self.version,
            pinned_args: &self.pinned_args,
            isolation: &self.isolation,
            limits: self.limits.as_ref(),
            image: self.image.as_ref(),
        };
        Ok(domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?))
    }

    /// Refuses (`runtime_not_isolating`) an identity under which candidate
    /// code could reach the collector's key or state or write outside its
    /// scratch: its facts must be no network, a read-only snapshot, a pid
    /// namespace, a private /tmp and an unprivileged user, and a `bwrap`
    /// identity must pin its limits and process attributes.
    pub fn check_isolating(&self) -> Result<()> {
        let i = &self.isolation;
        let facts = i.network == "none"
            && i.snapshot == "read_only"
            && i.pid_namespace
            && i.private_tmp
            && i.user == "unprivileged";
        let ok = match self.runtime {
            RuntimeKind::Unshare => false,
            RuntimeKind::Bwrap => {
                facts && self.limits.as_ref().is_some_and(|l| l.process.is_some())
            }
            RuntimeKind::Oci => facts,
        };
        if ok {
            Ok(())
        } else {
            Err(not_isolating(self.runtime))
        }
    }
}

/// The refusal of a runtime that does not keep candidate code in.
pub fn not_isolating(kind: RuntimeKind) -> Error {
    let why = match kind {
        RuntimeKind::Unshare => {
            "unshare cuts the network only: candidate code shares the host file system, so it \
             could read the collector's key and state and write into the data directory; use bwrap"
        }
        _ => {
            "its isolation facts do not keep candidate code away from the collector's key, state and files"
        }
    };
    Error::new(
        Code::RuntimeNotIsolating,
        format!("the {} runtime is refused: {why}", kind.as_str()),
    )
    .with("runtime", kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_program_digest_is_the_sha256_of_the_whole_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Three buffers and a bit: the reads' seams fall inside the file.
        for len in [0usize, 1, 256 * 1024, 3 * 256 * 1024 + 17] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let p = dir.path().join(format!("prog{len}"));
            std::fs::write(&p, &bytes).expect("write");
            assert_eq!(
                program_digest(&p).expect("digest"),
                Sha256Hex::digest(&bytes),
                "{len} bytes"
            );
        }
        let e = program_digest(&dir.path().join("absent")).expect_err("absent");
        assert_eq!(e.code(), Code::Io);
    }
}
