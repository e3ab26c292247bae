//! The operator writes of the service: each checks its input in the
//! authority (`workflow::authority::{admin, change, collector}`), then runs
//! the staged write here in one [`Session`] — the data-directory lock and
//! one immediate authority transaction, a batch of one — so the lock
//! order is decided in one place. `authority key rotate` runs here too.

use crate::clock::{Clock, rfc3339_millis};
use crate::error::Result;
use crate::store::{Access, CommitOrder, Connection, DataDir, Plan, Session};
use crate::workflow::attest::key;
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::authority::{admin, collector, review};
use std::path::Path;
use std::time::Duration;

/// The operator's requests and outputs, and the authority reads the
/// faces make around them (token files, the read-only authority,
/// repositories, installed profiles, collector keys): the authority's
/// own types, named here so that no face names `workflow::authority`.
pub use crate::workflow::authority::admin::{
    EnrollOutput, EnrollRequest, InstalledProfile, KeygenOutput, MAX_TOKEN_FILE, RepoAddOutput,
    RepoAddRequest, RequirementOutput, RevokeOutput, TokenOutput, installed_profiles, keygen,
    load_signing_key, open_read, read_token_file, repo_list, requirement_show,
};
pub use crate::workflow::authority::collector::{
    MAX_PIN_FILE, PinnedRuntime, ProfileInstallOutput, ProfileInstallRequest,
};
pub use crate::workflow::authority::review::{ReviewInstallOutput, ReviewInstallRequest};

/// The session of an operator write: the authority alone.
pub const WRITE_PLAN: Plan = Plan {
    dbs: &[(&crate::workflow::authority::schema::SPEC, Access::Write)],
    order: CommitOrder::Listed,
};

/// Runs `f` in one immediate authority transaction under the lock: a
/// [`Session`] without the journal, a batch of one.
pub fn with_write<T>(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    f: impl FnOnce(&Connection, &DataDir, &str) -> Result<T>,
) -> Result<T> {
    let mut session = Session::open(root, timeout, clock, WRITE_PLAN)?;
    let out = session.apply(|w| f(w.authority()?, w.dir(), &w.now_text()))?;
    session.commit()?;
    session.close();
    Ok(out)
}

/// `repo add`: registers a repository (its source snapshotted as head).
pub fn repo_add(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &RepoAddRequest,
) -> Result<RepoAddOutput> {
    with_write(root, timeout, clock, admin::repo_add(req)?)
}

/// `requirement install`.
pub fn requirement_install(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    profile: &str,
    file: &Path,
    bump: bool,
) -> Result<RequirementOutput> {
    let staged = admin::requirement_install(repo_id, profile, file, bump)?;
    with_write(root, timeout, clock, staged)
}

/// `token issue`: a new 0600 token file; only its hash is stored.
pub fn token_issue(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    owner: &str,
    agent: &str,
    out: &Path,
) -> Result<TokenOutput> {
    with_write(root, timeout, clock, admin::token_issue(owner, agent, out)?)
}

/// `token revoke`.
pub fn token_revoke(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    owner: &str,
    agent: &str,
) -> Result<TokenOutput> {
    with_write(root, timeout, clock, admin::token_revoke(owner, agent)?)
}

/// `enroll`.
pub fn enroll(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &EnrollRequest,
) -> Result<EnrollOutput> {
    with_write(root, timeout, clock, admin::enroll(req)?)
}

/// `enrollment revoke`.
pub fn enrollment_revoke(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    registration_id: &str,
) -> Result<RevokeOutput> {
    with_write(
        root,
        timeout,
        clock,
        admin::enrollment_revoke(registration_id)?,
    )
}

/// `collector profile install`.
pub fn profile_install(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ProfileInstallRequest,
) -> Result<ProfileInstallOutput> {
    with_write(root, timeout, clock, collector::profile_install(req)?)
}

/// `collector profile install --runtime review`.
pub fn review_profile_install(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ReviewInstallRequest,
) -> Result<ReviewInstallOutput> {
    with_write(root, timeout, clock, review::profile_install(req)?)
}

/// `authority key rotate` (under the lock): a new current key; creates the
/// first one in a data directory that has none.
pub fn rotate_key(root: &Path, timeout: Duration, clock: &dyn Clock) -> Result<key::RotateOutput> {
    // A session without databases: the lock and one clock reading.
    let plan = Plan {
        dbs: &[],
        order: CommitOrder::Listed,
    };
    let s = Session::open(root, timeout, clock, plan)?;
    key::rotate(s.dir(), s.lock(), &rfc3339_millis(s.now()))
}

/// Whether `token` is a live agent token of the data directory at `root`
/// (`serve --ui` refuses a dashboard credential that is one). A data
/// directory without an authority has no agent token.
pub fn is_agent_token(root: &Path, token: &str) -> Result<bool> {
    let (_dir, ac) = match admin::open_read(root) {
        Ok(x) => x,
        Err(e) if e.code() == crate::error::Code::NotInitialized => return Ok(false),
        Err(e) => return Err(e),
    };
    match admin::authenticate(&ac, token) {
        Ok(_) => Ok(true),
        Err(e) if e.code() == crate::error::Code::Unauthorized => Ok(false),
        Err(e) => Err(e),
    }
}
