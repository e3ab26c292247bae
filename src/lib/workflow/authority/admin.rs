//! Operator acts: repositories, requirements, tokens, collector keys,
//! enrollment and revocation. Each checks its input, then returns the
//! staged write that `workflow::service::admin` runs in one immediate
//! authority transaction under the data-directory lock (the service opens
//! the `store::Session`; nothing here does).

use super::{bump_epoch, installed_requirement, policy_epoch, repository};
use crate::contract::workflow::Workflow;
use crate::contract::{ActionClass, ExecutorEnrollment, check_id, key_id};
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::store::{Connection, DataDir, OptionalExtension, params};
use crate::wire::digest::domain_digest;
use crate::wire::ed25519::{Keypair, parse_public_key_hex};
use serde::Serialize;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Authentication and the registration look-up are [`super::auth`]'s
/// (below every other authority file); named here too for the files that
/// reach them through `admin`.
pub use super::auth::{
    Authenticated, DOMAIN_TOKEN, MAX_TOKEN_FILE, authenticate, open_read, open_read_snapshot,
    read_token_file, registration,
};
/// Name of the signing key file in a collector directory.
pub use crate::contract::KEY_FILE;

/// `repo add`.
#[derive(Debug, Clone)]
pub struct RepoAddRequest {
    /// Repository id.
    pub repo_id: String,
    /// Source directory.
    pub source: PathBuf,
    /// Target name.
    pub target: String,
}

/// `repo add` output.
#[derive(Debug, Serialize)]
pub struct RepoAddOutput {
    /// The repository.
    pub repository: super::Repository,
    /// Files in the head snapshot.
    pub files: usize,
    /// Policy epoch after the act.
    pub policy_epoch: u64,
    /// Live subjects (current before the act) the act made stale.
    pub stale_subjects: u64,
}

/// Registers a repository: snapshots its source as the target head.
pub fn repo_add(
    req: &RepoAddRequest,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<RepoAddOutput>> {
    check_id("repository id", &req.repo_id)?;
    check_id("target", &req.target)?;
    let source =
        std::fs::canonicalize(&req.source).map_err(|e| Error::io("resolve", &req.source, e))?;
    let source_str = source
        .to_str()
        .ok_or_else(|| Error::new(Code::InvalidInput, "source path is not UTF-8"))?
        .to_owned();
    Ok(move |tx: &Connection, dir: &DataDir, now: &str| {
        let exists: Option<i64> = tx
            .prepare_cached("SELECT 1 FROM repositories WHERE repo_id = ?1")?
            .query_row(params![req.repo_id], |r| r.get(0))
            .optional()?;
        if exists.is_some() {
            return Err(Error::new(
                Code::Conflict,
                format!("repository {} already exists", req.repo_id),
            )
            .with("repository", req.repo_id.clone()));
        }
        let snap = super::change::store_snapshot(
            tx,
            dir,
            &source,
            now,
            super::snapshot::DEFAULT_MAX_REVISION_BYTES,
        )?;
        tx.prepare_cached("INSERT INTO repositories(repo_id, source, target, head_revision, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![req.repo_id, source_str, req.target, snap.revision.as_str(), now],
        )?;
        let (epoch, stale_subjects) = bump_epoch(tx, "repo_add", &req.repo_id, now)?;
        Ok(RepoAddOutput {
            repository: repository(tx, &req.repo_id)?,
            files: snap.files,
            policy_epoch: epoch,
            stale_subjects,
        })
    })
}

/// `repo list`.
pub fn repo_list(root: &Path) -> Result<Vec<super::Repository>> {
    let (_dir, conn) = open_read(root)?;
    let mut st = conn.prepare("SELECT repo_id FROM repositories ORDER BY repo_id")?;
    let ids: Vec<String> = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    ids.iter().map(|id| repository(&conn, id)).collect()
}

/// One installed requirement of a repository profile (what `serve`'s
/// workspace configuration pins).
#[derive(Debug, Clone, Serialize)]
pub struct InstalledProfile {
    /// The repository id.
    pub repo_id: String,
    /// The profile id.
    pub profile_id: String,
    /// The repository's protected target.
    pub target: String,
    /// The installed requirement's digest.
    pub requirement_digest: String,
}

/// Every installed requirement, by repository then profile (read-only).
pub fn installed_profiles(root: &Path) -> Result<Vec<InstalledProfile>> {
    let (_dir, conn) = open_read(root)?;
    let mut st = conn.prepare(
        "SELECT i.repo_id, i.profile_id, p.target, i.requirement_digest \
         FROM installed_requirements i JOIN repositories p USING (repo_id) \
         JOIN requirements r USING (requirement_digest) ORDER BY i.repo_id, i.profile_id",
    )?;
    let rows = st
        .query_map([], |r| {
            Ok(InstalledProfile {
                repo_id: r.get(0)?,
                profile_id: r.get(1)?,
                target: r.get(2)?,
                requirement_digest: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// `requirement install` output.
#[derive(Debug, Serialize)]
pub struct RequirementOutput {
    /// Repository.
    pub repository: String,
    /// Profile.
    pub profile: String,
    /// Requirement digest.
    pub requirement_digest: String,
    /// Policy epoch (after the act, for install).
    pub policy_epoch: u64,
    /// `install`: `true` when the requirement was canonically identical to
    /// the installed one and nothing changed (absent for `show`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchanged: Option<bool>,
    /// `install`: live subjects (current before the act) it made stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_subjects: Option<u64>,
    /// The installed workflow.
    pub workflow: Workflow,
    /// `requirement install` only: each command step whose argv names a
    /// file of the target head that no protected pattern covers (the agent
    /// could rewrite what judges it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<RequirementWarning>>,
}

/// A command step that runs a file of the tree no protected pattern covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementWarning {
    /// The command step.
    pub step_id: String,
    /// The file its argv names.
    pub path: String,
    /// What to do about it.
    pub message: String,
}

/// The warnings of a workflow against the files of the target head.
pub fn unprotected_recipe_files(
    wf: &Workflow,
    head: &super::snapshot::Manifest,
) -> Result<Vec<RequirementWarning>> {
    let protected = wf.protected_paths()?;
    let mut out: Vec<RequirementWarning> = Vec::new();
    for step in &wf.steps {
        let Some(recipe) = &step.recipe else { continue };
        for arg in &recipe.argv {
            let mut path = arg.as_str();
            while let Some(rest) = path.strip_prefix("./") {
                path = rest;
            }
            let named = head.get(path).is_some();
            if !named || protected.covers(path) {
                continue;
            }
            if out.iter().any(|w| w.step_id == step.id && w.path == path) {
                continue;
            }
            out.push(RequirementWarning {
                step_id: step.id.clone(),
                path: path.to_owned(),
                message: format!(
                    "step {} runs {path}, which no protected pattern covers: a candidate may rewrite it \
                     (protect it, and the directories of whatever it loads)",
                    step.id
                ),
            });
        }
    }
    Ok(out)
}

/// Installs a workflow requirement for a repository profile. A requirement
/// canonically identical to the installed one changes nothing (same epoch,
/// `unchanged: true`) unless `bump` (`--bump-epoch`) asks for a new epoch,
/// which makes every live subject stale.
pub fn requirement_install(
    repo_id: &str,
    profile: &str,
    file: &Path,
    bump: bool,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<RequirementOutput>> {
    check_id("profile", profile)?;
    let mut f = private_fs::open_nofollow_read(file)?;
    let mut bytes = Vec::new();
    Read::by_ref(&mut f)
        .take(crate::contract::workflow::MAX_WORKFLOW_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", file, e))?;
    let wf = Workflow::parse(&bytes)?;
    let canonical = wf.canonical_bytes()?;
    let digest = wf.digest()?;
    Ok(move |tx: &Connection, dir: &DataDir, now: &str| {
        let repo = repository(tx, repo_id)?;
        let head = super::change::load_manifest(
            tx,
            dir,
            &crate::wire::digest::Sha256Hex::parse(&repo.head_revision)?,
        )?;
        let warnings = unprotected_recipe_files(&wf, &head)?;
        let installed = super::installed_requirement_digest(tx, repo_id, profile)?;
        if !bump && installed.as_deref() == Some(digest.as_str()) {
            return Ok(RequirementOutput {
                repository: repo_id.into(),
                profile: profile.into(),
                requirement_digest: digest.to_string(),
                policy_epoch: policy_epoch(tx)?,
                unchanged: Some(true),
                stale_subjects: Some(0),
                workflow: wf.clone(),
                warnings: Some(warnings),
            });
        }
        tx.prepare_cached("INSERT OR IGNORE INTO requirements(requirement_digest, bytes, name) VALUES (?1, ?2, ?3)")?.execute(params![digest.as_str(), canonical, wf.name],
        )?;
        let (epoch, stale) = bump_epoch(
            tx,
            "requirement_install",
            &format!("{repo_id} {profile} {digest}"),
            now,
        )?;
        tx.prepare_cached("INSERT INTO installed_requirements(repo_id, profile_id, requirement_digest, policy_epoch, installed_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(repo_id, profile_id) DO UPDATE SET \
             requirement_digest = excluded.requirement_digest, policy_epoch = excluded.policy_epoch, \
             installed_at = excluded.installed_at")?.execute(params![repo_id, profile, digest.as_str(), epoch as i64, now],
        )?;
        Ok(RequirementOutput {
            repository: repo_id.into(),
            profile: profile.into(),
            requirement_digest: digest.to_string(),
            policy_epoch: epoch,
            unchanged: Some(false),
            stale_subjects: Some(stale),
            workflow: wf.clone(),
            warnings: Some(warnings),
        })
    })
}

/// `requirement show`.
pub fn requirement_show(root: &Path, repo_id: &str, profile: &str) -> Result<RequirementOutput> {
    let (_dir, conn) = open_read(root)?;
    repository(&conn, repo_id)?;
    let (digest, bytes) = installed_requirement(&conn, repo_id, profile)?.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            format!("no requirement installed for {repo_id} profile {profile}"),
        )
    })?;
    let wf = Workflow::parse(&bytes)?;
    if wf.digest()?.as_str() != digest {
        return Err(Error::new(
            Code::IntegrityError,
            "stored requirement bytes do not match their digest",
        ));
    }
    Ok(RequirementOutput {
        repository: repo_id.into(),
        profile: profile.into(),
        requirement_digest: digest,
        policy_epoch: policy_epoch(&conn)?,
        unchanged: None,
        stale_subjects: None,
        workflow: wf,
        warnings: None,
    })
}

/// `token issue` output.
#[derive(Debug, Serialize)]
pub struct TokenOutput {
    /// Owner.
    pub owner_id: String,
    /// Agent.
    pub agent_id: String,
    /// Grant generation after the act.
    pub grant_generation: u64,
    /// Token file written (issue only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
}

/// Issues a token into a new 0600 file; only its hash is stored. Issuing
/// again for the same actor replaces the old token (new generation).
pub fn token_issue<'a>(
    owner: &'a str,
    agent: &'a str,
    out: &'a Path,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<TokenOutput> + 'a> {
    check_id("owner", owner)?;
    check_id("agent", agent)?;
    let secret = crate::wire::random_bytes::<32>()?;
    let token = format!("att1_{}", data_encoding::HEXLOWER.encode(&secret));
    let hash = domain_digest(DOMAIN_TOKEN, token.as_bytes());
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        let g: Option<i64> = tx
            .prepare_cached(
                "SELECT grant_generation FROM actors WHERE owner_id = ?1 AND agent_id = ?2",
            )?
            .query_row(params![owner, agent], |r| r.get(0))
            .optional()?;
        let g = g.map_or(1, |g| g + 1);
        tx.prepare_cached("INSERT INTO actors(owner_id, agent_id, token_hash, grant_generation, issued_at, revoked_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, NULL) ON CONFLICT(owner_id, agent_id) DO UPDATE SET \
             token_hash = excluded.token_hash, grant_generation = excluded.grant_generation, \
             issued_at = excluded.issued_at, revoked_at = NULL")?.execute(params![owner, agent, hash.as_str(), g, now],
        )?;
        // Write the file before the row commits; a failure rolls the row back.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(out)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::new(Code::Conflict, format!("{} already exists", out.display()))
                } else {
                    Error::io("create", out, e)
                }
            })?;
        f.write_all(format!("{token}\n").as_bytes())
            .map_err(|e| Error::io("write", out, e))?;
        f.sync_all().map_err(|e| Error::io("fsync", out, e))?;
        Ok(TokenOutput {
            owner_id: owner.into(),
            agent_id: agent.into(),
            grant_generation: g as u64,
            token_file: Some(
                std::path::absolute(out)
                    .unwrap_or(out.to_path_buf())
                    .display()
                    .to_string(),
            ),
        })
    })
}

/// Revokes an actor's token and bumps its grant generation.
pub fn token_revoke(
    owner: &str,
    agent: &str,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<TokenOutput>> {
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        let n = tx.prepare_cached("UPDATE actors SET token_hash = NULL, revoked_at = ?3, grant_generation = grant_generation + 1 \
             WHERE owner_id = ?1 AND agent_id = ?2")?.execute(params![owner, agent, now],
        )?;
        if n == 0 {
            return Err(Error::new(
                Code::NotFound,
                format!("no token for {owner}/{agent}"),
            ));
        }
        let g: i64 = tx
            .prepare_cached(
                "SELECT grant_generation FROM actors WHERE owner_id = ?1 AND agent_id = ?2",
            )?
            .query_row(params![owner, agent], |r| r.get(0))?;
        Ok(TokenOutput {
            owner_id: owner.into(),
            agent_id: agent.into(),
            grant_generation: g as u64,
            token_file: None,
        })
    })
}

/// `keygen` output.
#[derive(Debug, Serialize)]
pub struct KeygenOutput {
    /// Public key (64 hex).
    pub public_key: String,
    /// Key id.
    pub key_id: String,
    /// Whether a new key was made (false: the directory already had one).
    pub created: bool,
    /// The collector directory.
    pub collector_dir: String,
}

/// Creates (or reports) the collector signing key in an owner-private
/// directory. The private part is never printed.
pub fn keygen(collector_dir: &Path) -> Result<KeygenOutput> {
    let dir =
        std::path::absolute(collector_dir).map_err(|e| Error::io("resolve", collector_dir, e))?;
    private_fs::ensure_private_dir(&dir)?;
    let path = dir.join(KEY_FILE);
    let (kp, created) = if private_fs::check_private(&path, private_fs::Kind::File)? {
        (load_signing_key(&dir)?, false)
    } else {
        let (kp, seed) = Keypair::generate()?;
        private_fs::write_atomic(
            &path,
            format!("{}\n", data_encoding::HEXLOWER.encode(&seed)).as_bytes(),
        )?;
        (kp, true)
    };
    let pk = kp.public_key();
    Ok(KeygenOutput {
        public_key: data_encoding::HEXLOWER.encode(&pk),
        key_id: key_id(&pk),
        created,
        collector_dir: dir.display().to_string(),
    })
}

/// Loads the signing key of a collector directory.
pub fn load_signing_key(collector_dir: &Path) -> Result<Keypair> {
    Ok(Keypair::from_seed(&load_signing_seed(collector_dir)?))
}

pub use crate::collector::load_signing_seed;

/// `enroll` request.
#[derive(Debug, Clone)]
pub struct EnrollRequest {
    /// Repository.
    pub repo_id: String,
    /// Profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// Executor name.
    pub executor_id: String,
    /// Public key hex.
    pub public_key: String,
}

/// `enroll` output.
#[derive(Debug, Serialize)]
pub struct EnrollOutput {
    /// The enrollment.
    #[serde(flatten)]
    pub enrollment: ExecutorEnrollment,
    /// Policy epoch after the act.
    pub policy_epoch: u64,
    /// Live subjects (current before the act) the act made stale.
    pub stale_subjects: u64,
}

/// Enrolls an operator-supplied key for one repository, profile and step,
/// with a new immutable epoch.
pub fn enroll(
    req: &EnrollRequest,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<EnrollOutput>> {
    check_id("executor", &req.executor_id)?;
    let pk = parse_public_key_hex(&req.public_key)?;
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        repository(tx, &req.repo_id)?;
        let (_, bytes) =
            installed_requirement(tx, &req.repo_id, &req.profile)?.ok_or_else(|| {
                Error::new(
                    Code::NotFound,
                    format!(
                        "no requirement installed for {} profile {}",
                        req.repo_id, req.profile
                    ),
                )
            })?;
        let wf = Workflow::parse(&bytes)?;
        let step = wf.step(&req.step_id).ok_or_else(|| {
            Error::new(
                Code::NotFound,
                format!("the installed requirement has no step {}", req.step_id),
            )
        })?;
        if step.action_class == ActionClass::Assertion {
            return Err(Error::new(
                Code::InvalidInput,
                "assertion steps take no executor",
            ));
        }
        let max: Option<i64> = tx.prepare_cached("SELECT max(epoch) FROM registrations WHERE repo_id = ?1 AND profile_id = ?2 AND step_id = ?3 AND executor_id = ?4")?.query_row(params![req.repo_id, req.profile, req.step_id, req.executor_id],
            |r| r.get(0),
        )?;
        let epoch = max.unwrap_or(0) as u64 + 1;
        let registration_id = crate::wire::random_id("reg")?;
        let e = ExecutorEnrollment {
            version: 1,
            registration_id: registration_id.clone(),
            repository: req.repo_id.clone(),
            profile: req.profile.clone(),
            step_id: req.step_id.clone(),
            executor_id: req.executor_id.clone(),
            public_key: data_encoding::HEXLOWER.encode(&pk),
            verification_key_id: key_id(&pk),
            epoch,
        };
        let (pe, stale_subjects) = bump_epoch(tx, "enroll", &registration_id, now)?;
        tx.prepare_cached("INSERT INTO registrations(registration_id, repo_id, profile_id, step_id, executor_id, public_key, key_id, epoch, policy_epoch, enrolled_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")?.execute(params![e.registration_id, e.repository, e.profile, e.step_id, e.executor_id, e.public_key, e.verification_key_id, epoch as i64, pe as i64, now],
        )?;
        Ok(EnrollOutput {
            enrollment: e,
            policy_epoch: pe,
            stale_subjects,
        })
    })
}

/// `enrollment revoke` output.
#[derive(Debug, Serialize)]
pub struct RevokeOutput {
    /// Registration.
    pub registration_id: String,
    /// Whether it was already revoked (nothing changed).
    pub already_revoked: bool,
    /// Policy epoch.
    pub policy_epoch: u64,
    /// Live subjects (current before the act) the act made stale.
    pub stale_subjects: u64,
}

/// Revokes a registration.
pub fn enrollment_revoke(
    registration_id: &str,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<RevokeOutput>> {
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        let (_, revoked) = registration(tx, registration_id)?.ok_or_else(|| {
            Error::new(Code::NotFound, format!("no registration {registration_id}"))
        })?;
        if revoked {
            return Ok(RevokeOutput {
                registration_id: registration_id.into(),
                already_revoked: true,
                policy_epoch: policy_epoch(tx)?,
                stale_subjects: 0,
            });
        }
        let (pe, stale_subjects) = bump_epoch(tx, "enrollment_revoke", registration_id, now)?;
        tx.prepare_cached("INSERT INTO revocations(registration_id, policy_epoch, revoked_at) VALUES (?1, ?2, ?3)")?.execute(params![registration_id, pe as i64, now],
        )?;
        Ok(RevokeOutput {
            registration_id: registration_id.into(),
            already_revoked: false,
            policy_epoch: pe,
            stale_subjects,
        })
    })
}
