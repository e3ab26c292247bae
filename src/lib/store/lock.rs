//! The data-directory advisory lock.
//!
//! Every mutating command holds it for its whole critical section. The wait
//! is bounded: after the timeout the command fails with `busy` and does
//! nothing — it never hangs and never replays. The lock is a separate file
//! (`DATA_DIR/lock`), never a database file: SQLite's POSIX locks are lost
//! when a process closes any descriptor of the database.
//!
//! The wait never polls. An uncontended lock is taken with two non-blocking
//! attempts; a contended one is waited for by a helper thread in a
//! *blocking* `flock`, while the caller waits on a channel under its
//! deadline. Waiters queue on a second lock file (`DATA_DIR/lock.queue`):
//! a taker holds the queue lock while it waits for the data-dir lock and
//! drops it once it holds that, so a holder that releases the lock and at
//! once asks for it again (the `serve` writer between two batches) waits
//! behind the process already waiting instead of overtaking it: neither
//! starves.
//!
//! A helper whose caller gave up keeps waiting; when it gets the lock it
//! finds nobody to hand it to and releases it at once. A [`Waiter`] (the
//! `serve` writer's) hands such an outstanding wait to its next
//! acquisition instead of starting another, so a lock held for a long time
//! by someone else never accumulates helpers.

use super::private_fs;
use crate::error::{Code, Error, Result};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Proof that the data-directory lock is held. Dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// A lock file opened for this acquisition: closing it releases.
    Own { _file: File },
    /// A [`KeptLock`]'s file: dropping unlocks it and leaves it open.
    Kept(Arc<KeptFiles>),
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if let Held::Kept(k) = &self.held {
            // An unlock that fails (it does not, on Linux) must not leave
            // the lock held: the keeper drops these files, and closing
            // the last descriptor releases it.
            #[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
            if k.file.unlock().is_err() {
                k.broken.store(true, Ordering::SeqCst);
            }
            k.held.store(false, Ordering::SeqCst);
        }
    }
}

/// Default bounded wait for the lock.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// Suffix of the queue lock file, next to the lock file.
pub const QUEUE_SUFFIX: &str = ".queue";

type Handoff = mpsc::Receiver<Result<File>>;

/// Takes locks on one lock file, keeping a wait that ran out for the next
/// call (see the module documentation).
#[derive(Debug, Default)]
pub struct Waiter {
    outstanding: Option<Handoff>,
}

impl Waiter {
    /// Takes the exclusive lock on `path`, waiting at most `timeout`
    /// (continuing a wait an earlier call left outstanding).
    pub(crate) fn acquire(&mut self, path: &Path, timeout: Duration) -> Result<DirLock> {
        let rx = match self.outstanding.take() {
            Some(rx) => rx,
            None => match start(path)? {
                Started::Held(file) => return Ok(own(file)),
                Started::Waiting(rx) => rx,
            },
        };
        match rx.recv_timeout(timeout) {
            Ok(Ok(file)) => Ok(own(file)),
            Ok(Err(e)) => Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.outstanding = Some(rx);
                Err(busy(path, timeout))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(Error::internal("the lock wait ended without an answer"))
            }
        }
    }
}

fn own(file: File) -> DirLock {
    DirLock {
        held: Held::Own { _file: file },
    }
}

/// The lock and queue files a [`KeptLock`] keeps open, and the identity
/// of the lock file they were opened as.
#[derive(Debug)]
struct KeptFiles {
    file: File,
    queue: File,
    dev_ino: (u64, u64),
    /// A [`DirLock`] of these files is alive.
    held: AtomicBool,
    /// An unlock failed: open the files again.
    broken: AtomicBool,
}

/// The data-directory lock of a long-lived writer (the `serve` data
/// writer, a bulk ingest) that takes and releases it once per batch: the
/// lock and queue files stay open between batches, so an acquisition is
/// two `flock` calls and one `lstat` (which checks that the path still
/// names the open file: a lock file replaced meanwhile is opened again)
/// instead of two checked opens and two closes. Waiting, the queue and a
/// wait that ran out behave as with [`Waiter`].
#[derive(Debug)]
pub struct KeptLock {
    path: PathBuf,
    files: Option<Arc<KeptFiles>>,
    outstanding: Option<mpsc::Receiver<Result<()>>>,
}

impl KeptLock {
    /// A keeper for the lock file at `path` (nothing is opened yet).
    pub(crate) fn new(path: &Path) -> KeptLock {
        KeptLock {
            path: path.to_owned(),
            files: None,
            outstanding: None,
        }
    }

    /// Takes the exclusive lock, waiting at most `timeout` (continuing a
    /// wait an earlier call left outstanding). The lock is released when
    /// the returned [`DirLock`] is dropped; asking again while it is alive
    /// is an internal error.
    #[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
    pub(crate) fn acquire(&mut self, timeout: Duration) -> Result<DirLock> {
        let rx = match self.outstanding.take() {
            Some(rx) => rx,
            None => {
                let k = self.files()?;
                if k.held.load(Ordering::SeqCst) {
                    return Err(Error::internal("the data-directory lock is already held"));
                }
                let have_queue = match k.queue.try_lock() {
                    Ok(()) => true,
                    Err(TryLockError::WouldBlock) => false,
                    Err(TryLockError::Error(e)) => {
                        return Err(Error::io("lock", &queue_path(&self.path), e));
                    }
                };
                if have_queue {
                    match k.file.try_lock() {
                        Ok(()) => {
                            release_queue(&k);
                            return Ok(kept(k));
                        }
                        Err(TryLockError::WouldBlock) => {}
                        Err(TryLockError::Error(e)) => {
                            release_queue(&k);
                            return Err(Error::io("lock", &self.path, e));
                        }
                    }
                }
                let (tx, rx) = mpsc::sync_channel(1);
                let (path, qpath) = (self.path.clone(), queue_path(&self.path));
                let helper = k.clone();
                std::thread::Builder::new()
                    .name("agent-task-lock-wait".into())
                    .spawn(move || {
                        let got = (|| {
                            if !have_queue {
                                helper
                                    .queue
                                    .lock()
                                    .map_err(|e| Error::io("lock", &qpath, e))?;
                            }
                            let r = helper.file.lock().map_err(|e| Error::io("lock", &path, e));
                            release_queue(&helper);
                            r
                        })();
                        // The keeper is gone: release what was taken (its
                        // files close with the last reference, too).
                        if let Err(mpsc::SendError(Ok(()))) = tx.send(got) {
                            let _ = helper.file.unlock();
                        }
                    })
                    .map_err(|e| Error::internal(format!("cannot start the lock wait: {e}")))?;
                rx
            }
        };
        match rx.recv_timeout(timeout) {
            Ok(Ok(())) => match &self.files {
                Some(k) => Ok(kept(k.clone())),
                None => Err(Error::internal("the kept lock lost its files")),
            },
            Ok(Err(e)) => Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.outstanding = Some(rx);
                Err(busy(&self.path, timeout))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(Error::internal("the lock wait ended without an answer"))
            }
        }
    }

    /// The open files, (re)opened when there are none, an unlock failed
    /// or the path no longer names the open lock file.
    fn files(&mut self) -> Result<Arc<KeptFiles>> {
        use std::os::unix::fs::MetadataExt;
        if let Some(k) = &self.files {
            let same = std::fs::symlink_metadata(&self.path)
                .is_ok_and(|m| m.file_type().is_file() && (m.dev(), m.ino()) == k.dev_ino);
            if same && !k.broken.load(Ordering::SeqCst) {
                return Ok(k.clone());
            }
            if k.held.load(Ordering::SeqCst) {
                return Err(Error::internal("the data-directory lock is already held"));
            }
            self.files = None;
        }
        let file = private_fs::open_private_rw(&self.path)?;
        let queue = private_fs::open_private_rw(&queue_path(&self.path))?;
        let md = file
            .metadata()
            .map_err(|e| Error::io("stat", &self.path, e))?;
        let k = Arc::new(KeptFiles {
            file,
            queue,
            dev_ino: (md.dev(), md.ino()),
            held: AtomicBool::new(false),
            broken: AtomicBool::new(false),
        });
        self.files = Some(k.clone());
        Ok(k)
    }
}

fn kept(k: Arc<KeptFiles>) -> DirLock {
    k.held.store(true, Ordering::SeqCst);
    DirLock {
        held: Held::Kept(k),
    }
}

/// Drops the queue lock (a kept file is not closed, so it is unlocked).
#[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
fn release_queue(k: &KeptFiles) {
    if k.queue.unlock().is_err() {
        k.broken.store(true, Ordering::SeqCst);
    }
}

/// Takes the exclusive lock on the owner-private directory `path` itself
/// (its open descriptor; no lock file), without waiting: `Ok(None)` when
/// another process holds it. The lock is released when the returned
/// [`DirLock`] is dropped, or when its process dies (it is `flock(2)` on
/// a close-on-exec descriptor, so no child inherits it). A directory
/// replaced under `path` after the open is not the one locked: `Ok(None)`.
#[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
pub(crate) fn try_lock_dir(path: &Path) -> Result<Option<DirLock>> {
    use std::os::unix::fs::MetadataExt;
    let file = private_fs::open_private_dir(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
    }
    let held = file.metadata().map_err(|e| Error::io("stat", path, e))?;
    let now = std::fs::symlink_metadata(path).map_err(|e| Error::io("stat", path, e))?;
    if (held.dev(), held.ino()) != (now.dev(), now.ino()) {
        return Ok(None);
    }
    Ok(Some(own(file)))
}

/// An exclusive lock on the private file `path` (created 0600 when
/// missing), taken without waiting: `Ok(None)` when another holder has it.
/// For named locks beside the data-dir lock (a sync pull's per-(peer,
/// collection) lock).
#[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
pub(crate) fn try_lock_file(path: &Path) -> Result<Option<DirLock>> {
    let file = private_fs::open_private_rw(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(own(file))),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

/// Takes the exclusive lock on `path`, waiting at most `timeout`.
pub(crate) fn acquire(path: &Path, timeout: Duration) -> Result<DirLock> {
    Waiter::default().acquire(path, timeout)
}

fn busy(path: &Path, timeout: Duration) -> Error {
    Error::new(
        Code::Busy,
        format!(
            "another agent-task process holds the data-directory lock; gave up after {} ms",
            timeout.as_millis()
        ),
    )
    .with("lock", path.display().to_string())
    .with("timeout_ms", timeout.as_millis() as u64)
}

enum Started {
    Held(File),
    Waiting(Handoff),
}

fn queue_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(QUEUE_SUFFIX);
    PathBuf::from(p)
}

/// Non-blocking attempts first (queue, then lock); when either is held by
/// someone else, a helper thread takes what is missing with blocking calls.
#[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
fn start(path: &Path) -> Result<Started> {
    let file = private_fs::open_private_rw(path)?;
    let qpath = queue_path(path);
    let queue = private_fs::open_private_rw(&qpath)?;
    let have_queue = match queue.try_lock() {
        Ok(()) => true,
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(e)) => return Err(Error::io("lock", &qpath, e)),
    };
    if have_queue {
        match file.try_lock() {
            // Dropping the queue file releases the queue lock.
            Ok(()) => return Ok(Started::Held(file)),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let (path, qpath) = (path.to_owned(), qpath);
    std::thread::Builder::new()
        .name("agent-task-lock-wait".into())
        .spawn(move || {
            let got = (|| {
                if !have_queue {
                    queue.lock().map_err(|e| Error::io("lock", &qpath, e))?;
                }
                file.lock().map_err(|e| Error::io("lock", &path, e))?;
                drop(queue);
                Ok(file)
            })();
            // Nobody waiting any more: the lock (if taken) is released
            // when the undelivered file is dropped.
            let _ = tx.send(got);
        })
        .map_err(|e| Error::internal(format!("cannot start the lock wait: {e}")))?;
    Ok(Started::Waiting(rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn lock_path() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("lock");
        (t, p)
    }

    #[test]
    fn a_directory_lock_is_exclusive_and_never_waits() {
        let t = tempfile::tempdir().expect("tempdir");
        let d = t.path().join("exec");
        private_fs::ensure_private_dir(&d).expect("dir");
        let held = try_lock_dir(&d).expect("try").expect("free");
        assert!(try_lock_dir(&d).expect("try").is_none(), "held elsewhere");
        drop(held);
        let again = try_lock_dir(&d).expect("try").expect("free again");
        // The directory replaced under its name: the lock taken on the new
        // one is not the old one's, and the old holder keeps its own.
        std::fs::rename(&d, t.path().join("old")).expect("mv");
        private_fs::ensure_private_dir(&d).expect("new dir");
        assert!(try_lock_dir(&d).expect("try").is_some());
        drop(again);
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&d, &link).expect("symlink");
        assert_eq!(
            try_lock_dir(&link).expect_err("a link").code(),
            Code::SymlinkRefused
        );
    }

    #[test]
    fn a_held_lock_is_busy_after_the_wait_and_free_after_release() {
        let (_t, p) = lock_path();
        let held = acquire(&p, Duration::from_secs(1)).expect("first");
        let e = acquire(&p, Duration::from_millis(20)).expect_err("held elsewhere");
        assert_eq!(e.code(), Code::Busy);
        assert_eq!(
            e.details().and_then(|d| d.get("timeout_ms")),
            Some(&serde_json::json!(20))
        );
        drop(held);
        // The abandoned helper took the lock and released it again.
        let again = acquire(&p, Duration::from_secs(10)).expect("free again");
        drop(again);
    }

    #[test]
    fn a_blocked_wait_is_handed_the_lock_when_it_is_released() {
        let (_t, p) = lock_path();
        let held = acquire(&p, Duration::from_secs(1)).expect("first");
        let barrier = Arc::new(Barrier::new(2));
        let (b, p2) = (barrier.clone(), p.clone());
        let waiter = std::thread::spawn(move || {
            b.wait();
            acquire(&p2, Duration::from_secs(60)).map(drop)
        });
        barrier.wait();
        drop(held);
        waiter
            .join()
            .expect("join")
            .expect("the waiter gets the lock");
    }

    #[test]
    fn a_waiter_continues_its_outstanding_wait() {
        let (_t, p) = lock_path();
        let held = acquire(&p, Duration::from_secs(1)).expect("first");
        let mut w = Waiter::default();
        for _ in 0..3 {
            let e = w.acquire(&p, Duration::from_millis(5)).expect_err("held");
            assert_eq!(e.code(), Code::Busy);
            assert!(w.outstanding.is_some(), "one wait kept, not one per call");
        }
        drop(held);
        let got = w.acquire(&p, Duration::from_secs(60)).expect("handed over");
        assert!(w.outstanding.is_none());
        drop(got);
    }

    #[test]
    fn a_queued_waiter_goes_before_a_holder_that_asks_again() {
        // The holder releases and asks again while another waits in the
        // queue: the waiter gets the lock first.
        let (_t, p) = lock_path();
        let held = acquire(&p, Duration::from_secs(1)).expect("first");
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (o, p2) = (order.clone(), p.clone());
        let (ready_tx, ready_rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            // Hold the queue the way a blocked taker does, then signal.
            let mut w = Waiter::default();
            let e = w.acquire(&p2, Duration::from_millis(1));
            assert!(e.is_err(), "held");
            ready_tx.send(()).expect("send");
            let l = w.acquire(&p2, Duration::from_secs(60)).expect("waiter");
            o.lock().expect("order").push("waiter");
            drop(l);
        });
        ready_rx.recv().expect("ready");
        // The waiter's helper holds the queue lock for as long as it waits.
        let queue = private_fs::open_private_rw(&queue_path(&p)).expect("queue");
        #[allow(clippy::disallowed_methods)]
        let queued = matches!(queue.try_lock(), Err(TryLockError::WouldBlock));
        assert!(queued, "a blocked taker holds the queue");
        drop(queue);
        drop(held);
        let again = acquire(&p, Duration::from_secs(60)).expect("holder again");
        order.lock().expect("order").push("holder");
        drop(again);
        waiter.join().expect("join");
        assert_eq!(*order.lock().expect("order"), vec!["waiter", "holder"]);
    }

    #[test]
    fn a_kept_lock_excludes_others_and_keeps_its_files_open() {
        let (_t, p) = lock_path();
        let mut kept = KeptLock::new(&p);
        let first = kept.acquire(Duration::from_secs(1)).expect("kept");
        let e = acquire(&p, Duration::from_millis(20)).expect_err("held by the keeper");
        assert_eq!(e.code(), Code::Busy);
        let again = kept
            .acquire(Duration::from_secs(1))
            .expect_err("held already");
        assert_eq!(again.code(), Code::Internal);
        let files = kept.files.clone().expect("open");
        drop(first);
        // Released without closing: another taker gets it, and while that
        // one holds it the keeper is busy.
        let other = acquire(&p, Duration::from_secs(10)).expect("released");
        let e = kept
            .acquire(Duration::from_millis(20))
            .expect_err("held elsewhere");
        assert_eq!(e.code(), Code::Busy);
        assert!(kept.outstanding.is_some(), "the wait is kept");
        drop(other);
        let second = kept.acquire(Duration::from_secs(60)).expect("handed over");
        assert!(kept.outstanding.is_none());
        assert!(
            kept.files.as_ref().is_some_and(|k| Arc::ptr_eq(k, &files)),
            "the same open files"
        );
        drop(second);
        let third = kept.acquire(Duration::from_secs(1)).expect("again");
        assert!(kept.files.as_ref().is_some_and(|k| Arc::ptr_eq(k, &files)));
        drop(third);
    }

    #[test]
    fn a_kept_lock_opens_a_replaced_lock_file() {
        let (t, p) = lock_path();
        let mut kept = KeptLock::new(&p);
        drop(kept.acquire(Duration::from_secs(1)).expect("kept"));
        std::fs::rename(&p, t.path().join("old-lock")).expect("move away");
        drop(private_fs::open_private_rw(&p).expect("a new lock file"));
        let held = kept.acquire(Duration::from_secs(1)).expect("kept");
        // It locks the file the path names now, not the one it had open.
        let e = acquire(&p, Duration::from_millis(20)).expect_err("held");
        assert_eq!(e.code(), Code::Busy);
        drop(held);
        drop(acquire(&p, Duration::from_secs(10)).expect("free"));
    }

    #[test]
    fn a_queued_waiter_goes_before_a_kept_holder_that_asks_again() {
        let (_t, p) = lock_path();
        let mut kept = KeptLock::new(&p);
        let held = kept.acquire(Duration::from_secs(1)).expect("kept");
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (o, p2) = (order.clone(), p.clone());
        let (ready_tx, ready_rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let mut w = Waiter::default();
            assert!(w.acquire(&p2, Duration::from_millis(1)).is_err(), "held");
            ready_tx.send(()).expect("send");
            let l = w.acquire(&p2, Duration::from_secs(60)).expect("waiter");
            o.lock().expect("order").push("waiter");
            drop(l);
        });
        ready_rx.recv().expect("ready");
        drop(held);
        let again = kept.acquire(Duration::from_secs(60)).expect("keeper again");
        order.lock().expect("order").push("keeper");
        drop(again);
        waiter.join().expect("join");
        assert_eq!(*order.lock().expect("order"), vec!["waiter", "keeper"]);
    }
}
