//! Where and as whom an agent operation runs ([`AgentCtx`]) and the one
//! entry point of its units of work ([`AgentCtx::session`], `mutate`,
//! `read`): below every operation file of the service ([`super::ops`],
//! [`super::facade`], [`super::collect`], [`super::receipt`],
//! [`super::remote`]), which all import it.

use crate::clock::{Clock, unix_millis};
use crate::error::Result;
use crate::store::{Access, CommitOrder, Connection, Deferred, Plan, Session, Work, Writer};
use crate::workflow::authority::Rechecks;
use crate::workflow::authority::admin::{self, Authenticated};
use crate::workflow::authority::change::Scope;
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::journal::JournalWork;
use crate::workflow::journal::{self, Now};
use std::path::Path;
use std::time::Duration;

/// The session of an agent mutation: the journal written, the authority
/// read under the lock (actor, subject, enrollment rechecks).
const AGENT_PLAN: Plan = Plan {
    dbs: &[
        (&journal::SPEC, Access::Write),
        (
            &crate::workflow::authority::schema::SPEC,
            Access::ReadLocked,
        ),
    ],
    order: CommitOrder::Listed,
};

/// Where and as whom an agent operation runs.
#[derive(Clone)]
pub struct AgentCtx<'a> {
    /// Data directory.
    pub root: &'a Path,
    /// Lock wait.
    pub timeout: Duration,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Token text (from the token file).
    pub token: &'a str,
    /// The group-commit writer of `root` (under `serve`): mutations are
    /// queued to it and batched. `None`: each mutation opens its own
    /// session, a batch of one (the CLI).
    pub writer: Option<&'a Writer>,
    /// The workspace profile the request arrives through (HTTP, MCP):
    /// each operation checks what it names against it where it looks it
    /// up, so the task or Change is looked up once. `None`: the CLI.
    pub scope: Option<Scope>,
}

impl AgentCtx<'_> {
    /// The journal's rechecks over `a`, under this request's scope.
    pub fn rechecks<'b>(&'b self, a: &'b Connection) -> Rechecks<'b> {
        Rechecks::scoped(a, self.scope.as_ref())
    }

    fn now(&self) -> Now {
        Now {
            ms: unix_millis(self.clock.now()),
        }
    }

    /// Runs one mutation `f` in a [`Session`] of `plan`: through the
    /// writer (one savepoint of a batch, answered once the batch is
    /// durable) when there is one for this data directory, else in a
    /// session of its own (lock → journal → authority, one commit each).
    /// Either way `f` sees the same [`Work`] and fails alone.
    pub fn session<T: Send + 'static>(
        &self,
        plan: Plan,
        f: impl FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        if let Some(w) = self.writer.filter(|w| w.root() == self.root) {
            return w.submit(plan, f);
        }
        // A refused mutation (bad token, task not claimable, …) leaves no
        // new journal behind (the session removes one it created).
        let mut session = Session::open(self.root, self.timeout, self.clock, plan)?;
        let out = session.apply(f)?;
        session.commit()?;
        Ok(out)
    }

    /// [`AgentCtx::session`] without waiting: through the writer, the
    /// mutation is queued (`busy` at once when the queue is full) and the
    /// [`Deferred`] is answered once its batch is durable, so the caller
    /// (the HTTP server) need not hold a thread meanwhile; without one, it
    /// runs in a session of its own now and the outcome is known already.
    pub fn session_deferred<T: Send + 'static>(
        &self,
        plan: Plan,
        f: impl FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    ) -> Result<Deferred<T>> {
        if let Some(w) = self.writer.filter(|w| w.root() == self.root) {
            return w.submit_deferred(plan, f);
        }
        self.session(plan, f).map(|v| Deferred::done(Ok(v)))
    }

    /// Runs an agent mutation `f` (journal written, authority read under
    /// the lock, the token authenticated inside the same unit of work)
    /// through [`AgentCtx::session`].
    pub fn mutate<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, &Connection, &Authenticated, Now) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.session(AGENT_PLAN, agent_work(self.token, f))
    }

    /// [`AgentCtx::mutate`] through [`AgentCtx::session_deferred`].
    pub fn mutate_deferred<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, &Connection, &Authenticated, Now) -> Result<T> + Send + 'static,
    ) -> Result<Deferred<T>> {
        self.session_deferred(AGENT_PLAN, agent_work(self.token, f))
    }

    /// Runs a read: authority and (when present) journal read-only.
    pub fn read<T>(
        &self,
        f: impl FnOnce(Option<&Connection>, &Connection, &Authenticated, Now) -> Result<T>,
    ) -> Result<T> {
        // One snapshot of each database for the whole read (ended when
        // the connection is dropped or goes back to the cache).
        let (dir, ac) = admin::open_read_snapshot(self.root)?;
        let who = admin::authenticate(&ac, self.token)?;
        let jc = dir.open_read_snapshot(&journal::SPEC)?;
        f(jc.as_deref(), &ac, &who, self.now())
    }
}

/// The operator's read of the data directory at `root` (no token: the
/// directory is the operator's): one snapshot of the authority and, when
/// there is one, the journal, without the lock, at one instant of `clock`.
/// What `ls`, the operator's `explain`, id prefixes and the dashboard read.
pub fn operator_read<T>(
    root: &Path,
    clock: &dyn Clock,
    f: impl FnOnce(Option<&Connection>, &Connection, Now) -> Result<T>,
) -> Result<T> {
    let (dir, ac) = admin::open_read_snapshot(root)?;
    let jc = dir.open_read_snapshot(&journal::SPEC)?;
    let now = Now {
        ms: unix_millis(clock.now()),
    };
    f(jc.as_deref(), &ac, now)
}

/// The unit of work of an agent mutation: the token authenticated against
/// the authority read under the lock, then `f` on the journal.
fn agent_work<T>(
    token: &str,
    f: impl FnOnce(&Connection, &Connection, &Authenticated, Now) -> Result<T> + Send + 'static,
) -> impl FnOnce(&Work<'_>) -> Result<T> + Send + 'static {
    let token = token.to_owned();
    move |w| {
        let (j, a) = (w.journal_write()?, w.authority()?);
        let who = admin::authenticate(a, &token)?;
        f(j, a, &who, Now { ms: w.now_ms() })
    }
}
