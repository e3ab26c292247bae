//! A forge per repository (`repo forge set|show|remove`): where a landed
//! Change is pushed and its status published (docs/forge.md). The row
//! keeps the forge's kind, API base URL, project, git remote URL and the
//! operator's credential *by path* (a token file, or a GitHub App's id,
//! private key file and installation id): the secret itself never enters
//! the database, and the face-level `forge` job reads and checks the file
//! on every use.

use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, params};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The longest URL kept (bytes).
pub const MAX_URL: usize = 2048;
/// The longest project (`OWNER/NAME` or a GitLab path or id, bytes).
pub const MAX_PROJECT: usize = 255;
/// The longest credential file path (bytes).
pub const MAX_PATH: usize = 4096;

/// The forge's API family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    /// GitHub (github.com or GitHub Enterprise Server).
    Github,
    /// GitLab.
    Gitlab,
}

impl ForgeKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::Github => "github",
            ForgeKind::Gitlab => "gitlab",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "github" => Ok(ForgeKind::Github),
            "gitlab" => Ok(ForgeKind::Gitlab),
            other => Err(Error::new(
                Code::IntegrityError,
                format!("stored forge kind {other:?} is unknown"),
            )),
        }
    }
}

/// How the authority authenticates to the forge: always a file the
/// operator owns, named by its absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ForgeCredential {
    /// A personal, project or fine-grained access token in a file.
    TokenFile {
        /// The file (absolute).
        path: PathBuf,
    },
    /// A GitHub App: installation tokens are minted per use from a JWT
    /// signed with the app's private key.
    GithubApp {
        /// The app's id (what branch protection pins).
        app_id: u64,
        /// The app's private key file (PEM, absolute).
        key_file: PathBuf,
        /// The installation on the repository's owner.
        installation_id: u64,
    },
}

impl ForgeCredential {
    /// The credential file(s) it names.
    pub fn file(&self) -> &Path {
        match self {
            ForgeCredential::TokenFile { path } => path,
            ForgeCredential::GithubApp { key_file, .. } => key_file,
        }
    }
}

/// `repo forge set`.
#[derive(Debug, Clone)]
pub struct ForgeSetRequest {
    /// The repository.
    pub repo_id: String,
    /// The forge's kind.
    pub kind: ForgeKind,
    /// The API base URL (`https://api.github.com`,
    /// `https://gitlab.example/api/v4`).
    pub api_url: String,
    /// `OWNER/NAME` (GitHub) or the project's id or full path (GitLab).
    pub project: String,
    /// The git remote the landed commits are pushed to.
    pub remote_url: String,
    /// The credential.
    pub credential: ForgeCredential,
    /// Publish commit statuses (`--forge-status`).
    pub publish_status: bool,
    /// The statuses' optional target URL (checked by the face).
    pub status_target_url: Option<String>,
}

/// A repository's forge (what `repo forge show` and `repo list` print:
/// paths and ids, never a secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forge {
    /// The repository.
    pub repo_id: String,
    /// The forge's kind.
    pub kind: ForgeKind,
    /// The API base URL.
    pub api_url: String,
    /// The project.
    pub project: String,
    /// The git remote URL.
    pub remote_url: String,
    /// The credential, by path.
    pub credential: ForgeCredential,
    /// Whether commit statuses are published (`--forge-status`).
    pub publish_status: bool,
    /// The statuses' target URL, if the operator set one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_target_url: Option<String>,
    /// When the operator set it.
    pub configured_at: String,
}

/// Checks a project: GitHub `OWNER/NAME` (letters, digits, `-`, `_`,
/// `.`; at most 100 bytes each); GitLab a numeric id or a full path
/// (`group/sub/name`, the same characters per segment).
pub fn check_project(kind: ForgeKind, p: &str) -> Result<()> {
    let seg_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    let ok = p.len() <= MAX_PROJECT
        && match kind {
            ForgeKind::Github => {
                let parts: Vec<&str> = p.split('/').collect();
                parts.len() == 2 && parts.iter().all(|s| seg_ok(s))
            }
            ForgeKind::Gitlab => {
                (!p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit()))
                    || (p.contains('/') && p.split('/').all(seg_ok))
            }
        };
    if ok {
        return Ok(());
    }
    let want = match kind {
        ForgeKind::Github => "OWNER/NAME",
        ForgeKind::Gitlab => "a numeric project id or its full path (group/name)",
    };
    Err(
        Error::new(Code::InvalidInput, format!("--project must be {want}"))
            .with("project", p.chars().take(MAX_PROJECT).collect::<String>()),
    )
}

/// Checks the credential's shape (absolute, bounded, UTF-8 paths; app ids
/// positive; an app only for GitHub). The file itself is the face's to
/// read and check (`crate::forge`), at set and at every use.
pub fn check_credential(kind: ForgeKind, c: &ForgeCredential) -> Result<()> {
    let p = c.file();
    if !p.is_absolute() || p.to_str().is_none_or(|s| s.len() > MAX_PATH) {
        return Err(Error::new(
            Code::InvalidInput,
            "the credential file must be an absolute UTF-8 path of at most 4096 bytes",
        )
        .with("path", p.display().to_string()));
    }
    if let ForgeCredential::GithubApp {
        app_id,
        installation_id,
        ..
    } = c
    {
        if kind != ForgeKind::Github {
            return Err(Error::new(
                Code::InvalidInput,
                "a GitHub App credential (--app-id) needs --kind github",
            ));
        }
        if *app_id == 0 || *installation_id == 0 || *app_id > i64::MAX as u64 {
            return Err(Error::new(
                Code::InvalidInput,
                "--app-id and --installation-id must be positive",
            ));
        }
        if *installation_id > i64::MAX as u64 {
            return Err(Error::new(
                Code::InvalidInput,
                "--installation-id is too large",
            ));
        }
    }
    Ok(())
}

/// `repo forge set`'s write (staged: every check that needs no database
/// first): sets the repository's forge, replacing any earlier one. The
/// URLs come checked by the face (`crate::forge::check_url`: the loopback
/// rule is the network's, which the workflow half does not import).
pub fn set(
    req: &ForgeSetRequest,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<Forge> + use<>> {
    check_project(req.kind, &req.project)?;
    check_credential(req.kind, &req.credential)?;
    for u in [&req.api_url, &req.remote_url]
        .into_iter()
        .chain(req.status_target_url.as_ref())
    {
        if u.len() > MAX_URL || !(u.starts_with("https://") || u.starts_with("http://")) {
            return Err(Error::new(
                Code::InvalidInput,
                "the forge URLs must be checked http(s) URLs of at most 2048 bytes",
            ));
        }
    }
    let req = req.clone();
    Ok(move |at: &Connection, _dir: &DataDir, now: &str| {
        super::repository(at, &req.repo_id)?;
        let (token_file, app_id, key_file, installation_id) = match &req.credential {
            ForgeCredential::TokenFile { path } => (Some(path_text(path)?), None, None, None),
            ForgeCredential::GithubApp {
                app_id,
                key_file,
                installation_id,
            } => (
                None,
                Some(*app_id as i64),
                Some(path_text(key_file)?),
                Some(*installation_id as i64),
            ),
        };
        at.prepare_cached(
            "INSERT INTO forges(repo_id, kind, api_url, project, remote_url, token_file, app_id, \
             app_key_file, installation_id, publish_status, status_target_url, configured_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT(repo_id) DO UPDATE SET kind = excluded.kind, api_url = excluded.api_url, \
             project = excluded.project, remote_url = excluded.remote_url, token_file = excluded.token_file, \
             app_id = excluded.app_id, app_key_file = excluded.app_key_file, \
             installation_id = excluded.installation_id, publish_status = excluded.publish_status, \
             status_target_url = excluded.status_target_url, configured_at = excluded.configured_at",
        )?
        .execute(params![
            req.repo_id,
            req.kind.as_str(),
            req.api_url,
            req.project,
            req.remote_url,
            token_file,
            app_id,
            key_file,
            installation_id,
            req.publish_status,
            req.status_target_url,
            now
        ])?;
        forge(at, &req.repo_id)?.ok_or_else(|| Error::internal("the forge just written is gone"))
    })
}

fn path_text(p: &Path) -> Result<String> {
    p.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Error::new(Code::InvalidInput, "the credential path is not UTF-8"))
}

/// `repo forge remove`'s write: `not_found` when the repository has none.
pub fn remove(repo_id: &str) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<Forge> + use<> {
    let repo_id = repo_id.to_owned();
    move |at: &Connection, _dir: &DataDir, _now: &str| {
        super::repository(at, &repo_id)?;
        let f = forge(at, &repo_id)?.ok_or_else(|| no_forge(&repo_id))?;
        at.prepare_cached("DELETE FROM forges WHERE repo_id = ?1")?
            .execute(params![repo_id])?;
        Ok(f)
    }
}

/// `not_found` for a repository without a forge.
pub fn no_forge(repo_id: &str) -> Error {
    Error::new(Code::NotFound, format!("repository {repo_id} has no forge"))
        .with("repository", repo_id)
        .with(
            "fix",
            format!("agent-task repo forge set --repo {repo_id} ..."),
        )
}

const SELECT: &str = "SELECT repo_id, kind, api_url, project, remote_url, token_file, app_id, \
     app_key_file, installation_id, configured_at, publish_status, status_target_url FROM forges";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Forge, String)> {
    let token_file: Option<String> = r.get(5)?;
    let app_id: Option<i64> = r.get(6)?;
    let key_file: Option<String> = r.get(7)?;
    let installation_id: Option<i64> = r.get(8)?;
    let credential = match (token_file, app_id, key_file, installation_id) {
        (_, Some(app_id), Some(key_file), Some(installation_id)) => ForgeCredential::GithubApp {
            app_id: app_id as u64,
            key_file: PathBuf::from(key_file),
            installation_id: installation_id as u64,
        },
        (path, ..) => ForgeCredential::TokenFile {
            path: PathBuf::from(path.unwrap_or_default()),
        },
    };
    Ok((
        Forge {
            repo_id: r.get(0)?,
            kind: ForgeKind::Github,
            api_url: r.get(2)?,
            project: r.get(3)?,
            remote_url: r.get(4)?,
            credential,
            publish_status: r.get(10)?,
            status_target_url: r.get(11)?,
            configured_at: r.get(9)?,
        },
        r.get(1)?,
    ))
}

fn with_kind((mut f, kind): (Forge, String)) -> Result<Forge> {
    f.kind = ForgeKind::parse(&kind)?;
    Ok(f)
}

/// The forge of `repo_id`, if one is set.
pub fn forge(at: &Connection, repo_id: &str) -> Result<Option<Forge>> {
    at.prepare_cached(&format!("{SELECT} WHERE repo_id = ?1"))?
        .query_row(params![repo_id], row)
        .optional()?
        .map(with_kind)
        .transpose()
}

/// Every forge, by repository.
pub fn forges(at: &Connection) -> Result<Vec<Forge>> {
    let mut st = at.prepare_cached(&format!("{SELECT} ORDER BY repo_id"))?;
    let rows = st
        .query_map([], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter().map(with_kind).collect()
}

/// What `land --push` pushes: a landed landing of a git source and the
/// repository's forge.
#[derive(Debug, Clone)]
pub struct PushPlan {
    /// The landing.
    pub landing_id: String,
    /// The Change.
    pub change_id: String,
    /// The landed version.
    pub change_version: u64,
    /// The qualified revision the commit's tree is.
    pub revision: String,
    /// The Change's profile (the status context is `agent-task/<profile>`).
    pub profile: String,
    /// The landed commit.
    pub commit: String,
    /// The branch it landed on (`refs/heads/<target>`).
    pub ref_name: String,
    /// The repository's git work tree.
    pub source: PathBuf,
    /// The forge.
    pub forge: Forge,
    /// The push state recorded so far (`pending` or `pushed`) and its
    /// attempts.
    pub state: Option<(String, u64)>,
}

/// The push plan of `change_id`'s landing in `repo_id`: `not_found`
/// without a forge; `invalid_input` when the Change has not landed (or
/// landed without a git commit: a source that is not a git work tree).
pub fn push_plan(at: &Connection, repo_id: &str, change_id: &str) -> Result<PushPlan> {
    let repo = super::repository(at, repo_id)?;
    let forge = forge(at, repo_id)?.ok_or_else(|| no_forge(repo_id))?;
    let l = super::landing::landed_landing(at, change_id)?
        .filter(|l| l.repo_id == repo_id)
        .ok_or_else(|| {
            Error::new(
                Code::InvalidInput,
                format!("Change {change_id} has not landed in {repo_id}; nothing to push"),
            )
            .with("change_id", change_id)
        })?;
    let g = l.git.ok_or_else(|| {
        Error::new(
            Code::InvalidInput,
            "the landing has no git commit (the source is not a git work tree); nothing to push",
        )
    })?;
    let state = at
        .prepare_cached("SELECT state, attempts FROM forge_pushes WHERE landing_id = ?1")?
        .query_row(params![l.landing_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .optional()?;
    let profile: String = at
        .prepare_cached("SELECT profile_id FROM changes WHERE change_id = ?1")?
        .query_row(params![change_id], |r| r.get(0))?;
    Ok(PushPlan {
        profile,
        landing_id: l.landing_id,
        change_id: change_id.to_owned(),
        change_version: l.change_version,
        revision: l.revision,
        commit: g.commit,
        ref_name: g.ref_name,
        source: PathBuf::from(repo.source),
        forge,
        state,
    })
}

/// Records a push attempt's start (`pending`, one more attempt) or its
/// end (`pushed`); a landing already `pushed` stays so. Returns the state
/// and attempts now.
pub fn record_push(
    plan: &PushPlan,
    pushed: bool,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<(String, u64)> + use<> {
    let plan = plan.clone();
    move |at: &Connection, _dir: &DataDir, now: &str| {
        if pushed {
            at.prepare_cached(
                "UPDATE forge_pushes SET state = 'pushed', pushed_at = ?2                  WHERE landing_id = ?1 AND state = 'pending'",
            )?
            .execute(params![plan.landing_id, now])?;
        } else {
            at.prepare_cached(
                "INSERT INTO forge_pushes(landing_id, repo_id, git_commit, remote_url, state, attempts, started_at)                  VALUES (?1, ?2, ?3, ?4, 'pending', 1, ?5)                  ON CONFLICT(landing_id) DO UPDATE SET attempts = attempts + 1, remote_url = excluded.remote_url                  WHERE state = 'pending'",
            )?
            .execute(params![
                plan.landing_id,
                plan.forge.repo_id,
                plan.commit,
                plan.forge.remote_url,
                now
            ])?;
        }
        Ok(at
            .prepare_cached("SELECT state, attempts FROM forge_pushes WHERE landing_id = ?1")?
            .query_row(params![plan.landing_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })?)
    }
}

/// Marks a push's candidate branch as pushed (its commit now exists on
/// the forge: statuses about it can be published).
pub fn mark_candidate(
    landing_id: &str,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<()> + use<> {
    let landing_id = landing_id.to_owned();
    move |at: &Connection, _dir: &DataDir, _now: &str| {
        at.prepare_cached("UPDATE forge_pushes SET candidate_pushed = 1 WHERE landing_id = ?1")?
            .execute(params![landing_id])?;
        Ok(())
    }
}

/// The longest status description kept in the outbox (the publisher
/// cuts to the forge's limit).
const MAX_OUTBOX_DESCRIPTION: usize = 1024;

/// In the transaction that makes the change: one commit-status row for
/// `change_id`'s `version`, when its repository's forge publishes
/// statuses. `state` is `pending` (checkpoint), `success` (receipt),
/// `failure` (an imported failing record) or `error` (made stale by a
/// policy act). Returns whether a row was written.
pub fn on_status(
    at: &Connection,
    change_id: &str,
    version: u64,
    state: &str,
    description: &str,
    ts: &str,
) -> Result<bool> {
    let row: Option<(String, String, String)> = at
        .prepare_cached(
            "SELECT c.repo_id, c.profile_id, v.revision FROM changes c \
             JOIN change_versions v ON v.change_id = c.change_id AND v.version = ?2 \
             JOIN forges f ON f.repo_id = c.repo_id AND f.publish_status = 1 \
             WHERE c.change_id = ?1",
        )?
        .query_row(params![change_id, version as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((repo_id, profile, revision)) = row else {
        return Ok(false);
    };
    let d: String = description.chars().take(MAX_OUTBOX_DESCRIPTION).collect();
    at.prepare_cached(
        "INSERT INTO forge_status_outbox(repo_id, change_id, change_version, profile_id, revision, \
         state, description, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        repo_id,
        change_id,
        version as i64,
        profile,
        revision,
        state,
        d,
        ts
    ])?;
    Ok(true)
}

/// Before a policy act bumps the epoch: an `error` row for every live
/// subject it makes stale, in repositories whose forge publishes
/// statuses (nothing is read when none does).
pub(crate) fn on_policy_act(at: &Connection, act: &str, ts: &str) -> Result<u64> {
    let any: Option<i64> = at
        .prepare_cached("SELECT 1 FROM forges WHERE publish_status = 1 LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if any.is_none() {
        return Ok(0);
    }
    let ids: Vec<String> = at
        .prepare_cached(
            "SELECT c.change_id FROM changes c JOIN forges f ON f.repo_id = c.repo_id \
             AND f.publish_status = 1 WHERE c.current_version > 0",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    let mut n = 0;
    for id in ids {
        let ch = super::change::change(at, &id)?;
        let Ok(s) = super::change::current_subject(at, &ch) else {
            continue;
        };
        if super::change::subject_staleness(at, &s)?.is_none()
            && on_status(
                at,
                &id,
                s.version,
                "error",
                &format!("stale: the operator's {act} changed the policy; checkpoint again"),
                ts,
            )?
        {
            n += 1;
        }
    }
    Ok(n)
}

/// One pending commit status with the commit it is about, if that
/// commit has been pushed to the forge.
#[derive(Debug, Clone)]
pub struct StatusRow {
    /// Its order.
    pub seq: i64,
    /// The repository.
    pub repo_id: String,
    /// The Change.
    pub change_id: String,
    /// Its version.
    pub change_version: u64,
    /// The profile (the context is `agent-task/<profile>`).
    pub profile: String,
    /// The subject's revision.
    pub revision: String,
    /// `pending`, `success`, `failure` or `error`.
    pub state: String,
    /// Why.
    pub description: String,
    /// The candidate commit pushed for this version by `land --push` or
    /// `propose` (`None`: none yet).
    pub git_commit: Option<String>,
    /// The repository's source (where the commit's tree is read).
    pub source: PathBuf,
}

/// Every pending status row, oldest first.
pub fn pending_statuses(at: &Connection) -> Result<Vec<StatusRow>> {
    let mut st = at.prepare_cached(
        "SELECT o.seq, o.repo_id, o.change_id, o.change_version, o.profile_id, o.revision, o.state, \
         o.description, r.source, \
         COALESCE((SELECT p.git_commit FROM forge_pushes p JOIN landings l USING (landing_id) \
          WHERE l.change_id = o.change_id AND l.change_version = o.change_version \
          AND p.candidate_pushed = 1 LIMIT 1), \
          (SELECT q.git_commit FROM forge_proposals q WHERE q.change_id = o.change_id \
          AND q.change_version = o.change_version AND q.state = 'pushed')) \
         FROM forge_status_outbox o JOIN repositories r ON r.repo_id = o.repo_id \
         WHERE o.done_at IS NULL ORDER BY o.seq",
    )?;
    let rows = st
        .query_map([], |r| {
            Ok(StatusRow {
                seq: r.get(0)?,
                repo_id: r.get(1)?,
                change_id: r.get(2)?,
                change_version: r.get::<_, i64>(3)? as u64,
                profile: r.get(4)?,
                revision: r.get(5)?,
                state: r.get(6)?,
                description: r.get(7)?,
                source: PathBuf::from(r.get::<_, String>(8)?),
                git_commit: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Marks status rows done: `(seq, outcome, commit)`; a row already done
/// stays as it was.
pub fn finish_statuses(
    done: Vec<(i64, &'static str, Option<String>)>,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<u64> {
    move |at: &Connection, _dir: &DataDir, now: &str| {
        let mut n = 0;
        for (seq, outcome, commit) in &done {
            n += at
                .prepare_cached(
                    "UPDATE forge_status_outbox SET done_at = ?2, outcome = ?3, git_commit = ?4 \
                     WHERE seq = ?1 AND done_at IS NULL",
                )?
                .execute(params![seq, now, outcome, commit])? as u64;
        }
        Ok(n)
    }
}

/// After `land --push` published success on `commit` itself: every
/// pending row of that Change version up to now is done (the success is
/// the latest state; an earlier one must never follow it).
pub fn finish_version(
    change_id: &str,
    version: u64,
    commit: &str,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<u64> + use<> {
    let (change_id, commit) = (change_id.to_owned(), commit.to_owned());
    move |at: &Connection, _dir: &DataDir, now: &str| {
        Ok(at
            .prepare_cached(
                "UPDATE forge_status_outbox SET done_at = ?3, git_commit = ?4, \
                 outcome = CASE WHEN state = 'success' THEN 'published' ELSE 'superseded' END \
                 WHERE change_id = ?1 AND change_version = ?2 AND done_at IS NULL",
            )?
            .execute(params![change_id, version as i64, now, commit])? as u64)
    }
}

/// A proposed Change version's candidate commit (`propose`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposal {
    /// The Change.
    pub change_id: String,
    /// The proposed version.
    pub change_version: u64,
    /// The repository.
    pub repo_id: String,
    /// The subject's revision (the commit's tree).
    pub revision: String,
    /// The candidate commit.
    pub git_commit: String,
    /// Whether the subject qualified when it was proposed (then the
    /// commit carries the attestation note).
    pub qualified: bool,
    /// Its receipt, when qualified.
    pub receipt_digest: Option<String>,
    /// `committed` (written, not yet on the forge) or `pushed`.
    pub state: String,
    /// When the commit was written (the note's `timeCreated`).
    pub created_at: String,
}

/// The proposal of `change_id`'s `version`, if one was written.
pub fn proposal(at: &Connection, change_id: &str, version: u64) -> Result<Option<Proposal>> {
    Ok(at
        .prepare_cached(
            "SELECT repo_id, revision, git_commit, qualified, receipt_digest, state, created_at \
             FROM forge_proposals WHERE change_id = ?1 AND change_version = ?2",
        )?
        .query_row(params![change_id, version as i64], |r| {
            Ok(Proposal {
                change_id: change_id.to_owned(),
                change_version: version,
                repo_id: r.get(0)?,
                revision: r.get(1)?,
                git_commit: r.get(2)?,
                qualified: r.get::<_, i64>(3)? == 1,
                receipt_digest: r.get(4)?,
                state: r.get(5)?,
                created_at: r.get(6)?,
            })
        })
        .optional()?)
}

/// Whether `commit` is a proposal's candidate commit (its note, if any,
/// is a proposal's: a landing of the same commit replaces it).
pub fn is_proposed_commit(at: &Connection, commit: &str) -> Result<bool> {
    Ok(at
        .prepare_cached("SELECT 1 FROM forge_proposals WHERE git_commit = ?1 LIMIT 1")?
        .query_row(params![commit], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Records a proposal's commit (`committed`), replacing an earlier
/// commit of the same version that is gone from the repository.
pub fn insert_proposal(at: &Connection, p: &Proposal) -> Result<()> {
    at.prepare_cached(
        "INSERT INTO forge_proposals(change_id, change_version, repo_id, revision, git_commit, \
         qualified, receipt_digest, state, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'committed', ?8) \
         ON CONFLICT(change_id, change_version) DO UPDATE SET git_commit = excluded.git_commit, \
         qualified = excluded.qualified, receipt_digest = excluded.receipt_digest, \
         state = 'committed', pushed_at = NULL, created_at = excluded.created_at",
    )?
    .execute(params![
        p.change_id,
        p.change_version as i64,
        p.repo_id,
        p.revision,
        p.git_commit,
        i64::from(p.qualified),
        p.receipt_digest,
        p.created_at
    ])?;
    Ok(())
}

/// Marks a proposal's commit as on the forge (its branch and notes
/// pushed): the outbox's rows of that version now have a commit.
pub fn mark_proposal_pushed(
    change_id: &str,
    version: u64,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<()> + use<> {
    let change_id = change_id.to_owned();
    move |at: &Connection, _dir: &DataDir, now: &str| {
        at.prepare_cached(
            "UPDATE forge_proposals SET state = 'pushed', pushed_at = ?3 \
             WHERE change_id = ?1 AND change_version = ?2 AND state = 'committed'",
        )?
        .execute(params![change_id, version as i64, now])?;
        Ok(())
    }
}

/// The longest request URL kept.
const MAX_REQUEST_URL: usize = 2048;

/// A Change's pull request (GitHub) or merge request (GitLab).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForgeRequest {
    /// The Change.
    pub change_id: String,
    /// The repository.
    pub repo_id: String,
    /// `github` (a pull request) or `gitlab` (a merge request).
    pub kind: String,
    /// The head branch (`agent-task/<change>`).
    pub head_branch: String,
    /// The base branch (the target).
    pub base_branch: String,
    /// The request's number (GitHub) or iid (GitLab); `None` while
    /// `opening` (the intent is recorded, the forge has not answered).
    pub number: Option<u64>,
    /// Its web URL.
    pub url: Option<String>,
    /// The head commit it was last opened or updated with.
    pub head_sha: Option<String>,
    /// The Change version it was last opened or updated with.
    pub change_version: Option<u64>,
    /// `opening`, `open` or `closed`.
    pub state: String,
    /// Why it was closed: `landed` (agent-task closed it after a local
    /// landing) or `merged` (the forge merged it; `forge sync`).
    pub close_reason: Option<String>,
}

fn request_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ForgeRequest> {
    Ok(ForgeRequest {
        change_id: r.get(0)?,
        repo_id: r.get(1)?,
        kind: r.get(2)?,
        head_branch: r.get(3)?,
        base_branch: r.get(4)?,
        number: r.get::<_, Option<i64>>(5)?.map(|n| n as u64),
        url: r.get(6)?,
        head_sha: r.get(7)?,
        change_version: r.get::<_, Option<i64>>(8)?.map(|n| n as u64),
        state: r.get(9)?,
        close_reason: r.get(10)?,
    })
}

const REQUEST_SELECT: &str = "SELECT change_id, repo_id, kind, head_branch, base_branch, number, url, \
     head_sha, change_version, state, close_reason FROM forge_requests";

/// The request of `change_id`, if one was opened (or its opening began).
pub fn request(at: &Connection, change_id: &str) -> Result<Option<ForgeRequest>> {
    Ok(at
        .prepare_cached(&format!("{REQUEST_SELECT} WHERE change_id = ?1"))?
        .query_row(params![change_id], request_row)
        .optional()?)
}

/// The open (or opening) requests of `repo_id` whose Change has landed,
/// with how it landed (`land` or `forge_sync`).
pub fn requests_of_landed(at: &Connection, repo_id: &str) -> Result<Vec<(ForgeRequest, String)>> {
    let mut st = at.prepare_cached(&format!(
        "SELECT q.*, (SELECT l.landed_by FROM landings l WHERE l.change_id = q.change_id \
         AND l.state = 'landed' ORDER BY l.change_version DESC LIMIT 1) AS how \
         FROM ({REQUEST_SELECT} WHERE repo_id = ?1 AND state <> 'closed') q WHERE how IS NOT NULL \
         ORDER BY q.change_id"
    ))?;
    let rows = st
        .query_map(params![repo_id], |r| Ok((request_row(r)?, r.get(11)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Before the API call that opens a request: its intent (`opening`), so
/// a rerun looks the request up by its head branch instead of opening a
/// second one. An existing row is kept as it is.
pub fn request_intent(
    req: &ForgeRequest,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<ForgeRequest> + use<> {
    let req = req.clone();
    move |at: &Connection, _dir: &DataDir, now: &str| {
        at.prepare_cached(
            "INSERT INTO forge_requests(change_id, repo_id, kind, head_branch, base_branch, state, \
             opened_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'opening', ?6, ?6) \
             ON CONFLICT(change_id) DO NOTHING",
        )?
        .execute(params![
            req.change_id,
            req.repo_id,
            req.kind,
            req.head_branch,
            req.base_branch,
            now
        ])?;
        request(at, &req.change_id)?
            .ok_or_else(|| Error::internal("the request intent just written is gone"))
    }
}

/// After the forge answered: the request is `open` with its number, URL,
/// head commit and Change version.
pub fn request_open(
    change_id: &str,
    number: u64,
    url: &str,
    head_sha: &str,
    version: u64,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<ForgeRequest> + use<> {
    let (change_id, head_sha) = (change_id.to_owned(), head_sha.to_owned());
    let url: String = url.chars().take(MAX_REQUEST_URL).collect();
    move |at: &Connection, _dir: &DataDir, now: &str| {
        at.prepare_cached(
            "UPDATE forge_requests SET state = 'open', number = ?2, url = ?3, head_sha = ?4, \
             change_version = ?5, updated_at = ?6, closed_at = NULL, close_reason = NULL \
             WHERE change_id = ?1",
        )?
        .execute(params![
            change_id,
            number as i64,
            url,
            head_sha,
            version as i64,
            now
        ])?;
        request(at, &change_id)?.ok_or_else(|| Error::internal("the request row is gone"))
    }
}

/// The request is closed (`landed`: agent-task closed it; `merged`: the
/// forge merged it).
pub fn request_closed(
    change_id: &str,
    reason: &'static str,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<()> + use<> {
    let change_id = change_id.to_owned();
    move |at: &Connection, _dir: &DataDir, now: &str| {
        at.prepare_cached(
            "UPDATE forge_requests SET state = 'closed', close_reason = ?2, closed_at = ?3, \
             updated_at = ?3 WHERE change_id = ?1 AND state <> 'closed'",
        )?
        .execute(params![change_id, reason, now])?;
        Ok(())
    }
}

/// The last commit of the forge's target `forge sync` walked to.
pub fn last_synced(at: &Connection, repo_id: &str) -> Result<Option<String>> {
    Ok(at
        .prepare_cached("SELECT last_commit FROM forge_syncs WHERE repo_id = ?1")?
        .query_row(params![repo_id], |r| r.get(0))
        .optional()?)
}

/// Records how far `forge sync` walked.
pub fn set_synced(
    repo_id: &str,
    commit: &str,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<()> + use<> {
    let (repo_id, commit) = (repo_id.to_owned(), commit.to_owned());
    move |at: &Connection, _dir: &DataDir, now: &str| {
        at.prepare_cached(
            "INSERT INTO forge_syncs(repo_id, last_commit, synced_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT(repo_id) DO UPDATE SET last_commit = excluded.last_commit, \
             synced_at = excluded.synced_at",
        )?
        .execute(params![repo_id, commit, now])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_follow_the_forge() {
        check_project(ForgeKind::Github, "acme/api.rs").expect("owner/name");
        for bad in [
            "acme",
            "acme/api/x",
            "acme/",
            "/api",
            "acme/..",
            "a b/c",
            "",
        ] {
            assert!(check_project(ForgeKind::Github, bad).is_err(), "{bad}");
        }
        check_project(ForgeKind::Gitlab, "12345").expect("id");
        check_project(ForgeKind::Gitlab, "group/sub/name").expect("path");
        for bad in ["", "name", "group//name", "g/../n", "g/n?x"] {
            assert!(check_project(ForgeKind::Gitlab, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_are_absolute_and_apps_are_github_only() {
        let tok = |p: &str| ForgeCredential::TokenFile { path: p.into() };
        check_credential(ForgeKind::Gitlab, &tok("/etc/t")).expect("absolute");
        assert!(check_credential(ForgeKind::Github, &tok("t")).is_err());
        let app = |id: u64, inst: u64| ForgeCredential::GithubApp {
            app_id: id,
            key_file: "/k.pem".into(),
            installation_id: inst,
        };
        check_credential(ForgeKind::Github, &app(1, 2)).expect("app");
        assert!(check_credential(ForgeKind::Gitlab, &app(1, 2)).is_err());
        assert!(check_credential(ForgeKind::Github, &app(0, 2)).is_err());
        assert!(check_credential(ForgeKind::Github, &app(1, 0)).is_err());
        assert!(check_credential(ForgeKind::Github, &app(u64::MAX, 1)).is_err());
    }

    fn states(a: &Connection) -> Vec<(String, Option<String>)> {
        a.prepare("SELECT state, outcome FROM forge_status_outbox ORDER BY seq")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    #[test]
    fn status_rows_only_with_statuses_on_and_a_policy_act_marks_live_subjects_in_error() {
        use super::super::fixture::{CHANGE, REPO, fixture};
        let f = fixture();
        // No forge, then a forge without statuses: nothing.
        assert!(!on_status(&f.a, CHANGE, 1, "pending", "p", "t").expect("no forge"));
        f.a.execute(
            "INSERT INTO forges(repo_id, kind, api_url, project, remote_url, token_file, configured_at) \
             VALUES (?1, 'github', 'https://api.github.com', 'demo/basic', 'https://github.com/demo/basic.git', '/t', 't')",
            params![REPO],
        )
        .expect("forge");
        assert!(!on_status(&f.a, CHANGE, 1, "pending", "p", "t").expect("off"));
        assert_eq!(on_policy_act(&f.a, "repo_add", "t").expect("off"), 0);
        f.a.execute("UPDATE forges SET publish_status = 1", [])
            .expect("on");
        assert!(on_status(&f.a, CHANGE, 1, "pending", &"d".repeat(5000), "t").expect("on"));
        assert!(!on_status(&f.a, CHANGE, 9, "pending", "no such version", "t").expect("none"));
        // The fixture's Change has a live subject: the act makes it stale.
        assert_eq!(
            on_policy_act(&f.a, "requirement_install", "t").expect("act"),
            1
        );
        assert_eq!(
            states(&f.a),
            vec![("pending".into(), None), ("error".into(), None)]
        );
        let rows = pending_statuses(&f.a).expect("pending");
        assert_eq!(rows.len(), 2);
        assert!(rows[0].description.chars().count() <= MAX_OUTBOX_DESCRIPTION);
        assert!(rows[1].description.contains("requirement_install"));
        assert!(
            rows.iter().all(|r| r.git_commit.is_none()),
            "nothing pushed"
        );
    }
}
