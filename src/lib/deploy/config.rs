//! `deploy config`: the workspace configuration of `serve`
//! (`docs/workspace-http.md`) derived from what the authority has
//! registered, so that no repository id, target or requirement digest is
//! copied by hand. Each installed requirement becomes one profile; its
//! `repository_id` (the endpoint's path segment) is the native repository
//! id with `/` mapped to `-`, and `native_repository` keeps the native id.

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::workflow::service::admin;
use crate::workflow::service::facade::WorkspaceConfig;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// `deploy config` request.
#[derive(Debug, Clone)]
pub struct ConfigRequest {
    /// The operator's data directory (absolute: it is written into the file).
    pub data_dir: PathBuf,
    /// Where the configuration goes.
    pub out: PathBuf,
    /// Replace a file that holds another configuration.
    pub force: bool,
}

/// One profile of the configuration: the endpoint's id beside the native one.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Mapping {
    /// The id in the endpoint's URL (`--repository` / `AGENT_TASK_REPOSITORY`).
    pub repository_id: String,
    /// The authority's repository id.
    pub native_repository: String,
    /// The profile id.
    pub profile_id: String,
    /// The pinned target.
    pub target: String,
    /// The pinned installed requirement.
    pub requirement_digest: String,
    /// Whether the repository's forge publishes commit statuses (`repo
    /// forge set --forge-status`); written into the profile only when it
    /// does.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub publish_forge_status: bool,
}

/// `deploy config` output.
#[derive(Debug, Serialize)]
pub struct ConfigOutput {
    /// The file.
    pub config: String,
    /// `written` (new or replaced with --force) or `unchanged` (the file
    /// already held exactly these bytes).
    pub status: &'static str,
    /// The profiles, native id to endpoint id.
    pub profiles: Vec<Mapping>,
}

/// The endpoint's repository id of a native repository id: `/` becomes `-`
/// (a path segment may hold no `/`); every other character is kept.
pub fn endpoint_repository_id(native: &str) -> String {
    native.replace('/', "-")
}

/// The mappings of `rows`; two native ids that map to one endpoint id are
/// refused (`conflict`), since a request could not name one of them.
pub fn mappings(rows: &[admin::InstalledProfile]) -> Result<Vec<Mapping>> {
    let mut seen: std::collections::BTreeMap<(String, String), String> = Default::default();
    let mut out = Vec::new();
    for r in rows {
        let id = endpoint_repository_id(&r.repo_id);
        if let Some(other) = seen.insert((id.clone(), r.profile_id.clone()), r.repo_id.clone()) {
            return Err(Error::new(
                Code::Conflict,
                format!(
                    "repositories {other} and {} both map to the endpoint id {id}; rename one \
                     (repo add) so that their ids differ other than by / and -",
                    r.repo_id
                ),
            ));
        }
        out.push(Mapping {
            repository_id: id,
            native_repository: r.repo_id.clone(),
            profile_id: r.profile_id.clone(),
            target: r.target.clone(),
            requirement_digest: r.requirement_digest.clone(),
            publish_forge_status: false,
        });
    }
    Ok(out)
}

/// The configuration's bytes (pretty JSON, one trailing newline), checked
/// by the same parser `serve` uses.
pub fn render(data_dir: &Path, profiles: &[Mapping]) -> Result<Vec<u8>> {
    let v = Config {
        agent_task_profiles: profiles
            .iter()
            .map(|m| ProfileEntry {
                data_dir,
                native_repository: &m.native_repository,
                profile_id: &m.profile_id,
                publish_forge_status: m.publish_forge_status,
                repository_id: &m.repository_id,
                requirement_digest: &m.requirement_digest,
                target: &m.target,
            })
            .collect(),
        version: 1,
    };
    let mut bytes = serde_json::to_vec_pretty(&v)
        .map_err(|e| Error::internal(format!("cannot render the workspace config: {e}")))?;
    bytes.push(b'\n');
    WorkspaceConfig::parse(&bytes)?;
    Ok(bytes)
}

/// The workspace configuration file `render` writes (fields in key
/// order, as the file has always listed them).
#[derive(Serialize)]
struct Config<'a> {
    agent_task_profiles: Vec<ProfileEntry<'a>>,
    version: u32,
}

/// One profile of the workspace configuration.
#[derive(Serialize)]
struct ProfileEntry<'a> {
    data_dir: &'a Path,
    native_repository: &'a str,
    profile_id: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    publish_forge_status: bool,
    repository_id: &'a str,
    requirement_digest: &'a str,
    target: &'a str,
}

/// The mappings the authority in `data_dir` derives now.
pub fn derive(data_dir: &Path) -> Result<Vec<Mapping>> {
    let mut m = mappings(&admin::installed_profiles(data_dir)?)?;
    for p in &mut m {
        p.publish_forge_status =
            crate::workflow::service::forge::forge_of(data_dir, &p.native_repository)?
                .is_some_and(|f| f.publish_status);
    }
    Ok(m)
}

/// Writes the configuration: 0600, atomically (temp file, fsync, rename).
/// A file already holding the same bytes is left alone (`unchanged`);
/// another file is replaced only with `force` (else `conflict`, nothing
/// written). A symlink is never followed or replaced.
pub fn write(r: &ConfigRequest) -> Result<ConfigOutput> {
    if !r.data_dir.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            "deploy config needs an absolute --data-dir (serve reads it from the file)",
        ));
    }
    let profiles = derive(&r.data_dir)?;
    if profiles.is_empty() {
        return Err(Error::new(
            Code::NotFound,
            "no requirement is installed: repo add and requirement install first",
        ));
    }
    let bytes = render(&r.data_dir, &profiles)?;
    let shown = r.out.display().to_string();
    let status = match std::fs::symlink_metadata(&r.out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "written",
        Err(e) => return Err(Error::io("stat", &r.out, e)),
        Ok(md) if md.file_type().is_symlink() => {
            return Err(Error::new(
                Code::SymlinkRefused,
                format!("{shown} is a symbolic link; name the real path"),
            )
            .with("path", shown));
        }
        Ok(md) if !md.is_file() => {
            return Err(Error::new(
                Code::Conflict,
                format!("{shown} exists and is not a regular file"),
            ));
        }
        Ok(_) => {
            use std::io::Read;
            let mut old = Vec::new();
            private_fs::open_nofollow_read(&r.out)?
                .take(bytes.len() as u64 + 1)
                .read_to_end(&mut old)
                .map_err(|e| Error::io("read", &r.out, e))?;
            let private = private_fs::check_private(&r.out, private_fs::Kind::File).is_ok();
            if old == bytes {
                // The same bytes: nothing to replace; a loose mode or owner is repaired.
                if private { "unchanged" } else { "written" }
            } else if r.force {
                "written"
            } else {
                return Err(Error::new(
                    Code::Conflict,
                    format!(
                        "{shown} already holds another workspace config; pass --force to replace it"
                    ),
                )
                .with("path", shown));
            }
        }
    };
    if status == "written" {
        private_fs::write_atomic(&r.out, &bytes)?;
    }
    Ok(ConfigOutput {
        config: shown,
        status,
        profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(repo: &str, profile: &str) -> admin::InstalledProfile {
        admin::InstalledProfile {
            repo_id: repo.into(),
            profile_id: profile.into(),
            target: "main".into(),
            requirement_digest: "a".repeat(64),
        }
    }

    #[test]
    fn slash_maps_to_dash_and_collisions_are_refused() {
        assert_eq!(endpoint_repository_id("acme/api/v2"), "acme-api-v2");
        let m = mappings(&[row("demo/basic", "default"), row("demo/basic", "ci")]).expect("ok");
        assert_eq!(m[0].repository_id, "demo-basic");
        assert_eq!(m[0].native_repository, "demo/basic");
        let e = mappings(&[row("demo/basic", "default"), row("demo-basic", "default")])
            .map_err(|e| e.code())
            .err();
        assert_eq!(e, Some(Code::Conflict));
        // Same endpoint id, other profile: no collision.
        assert!(mappings(&[row("demo/basic", "a"), row("demo-basic", "b")]).is_ok());
    }

    #[test]
    fn rendered_config_is_what_serve_parses() {
        let m = mappings(&[row("demo/basic", "default")]).expect("ok");
        let bytes = render(Path::new("/srv/data"), &m).expect("render");
        let c = WorkspaceConfig::parse(&bytes).expect("parse");
        let p = c.profile("demo-basic", "default").expect("profile");
        assert_eq!(p.native_repository, "demo/basic");
        assert_eq!(p.data_dir, Path::new("/srv/data"));
        assert_eq!(p.requirement_digest.as_str(), "a".repeat(64));
    }
}
