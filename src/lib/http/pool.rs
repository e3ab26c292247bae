//! The compute pool of `serve`: a few threads (by default one per core)
//! that run, first come first served and each to its end, the handlers
//! that only compute and read a WAL snapshot ([`super::router::Lane::Compute`]).
//!
//! Why a second pool: the blocking pool has `--workers` threads so that a
//! handler waiting on a streamed body, a lock or a batch never stalls the
//! others, but handlers that never wait gain nothing from more threads than
//! cores. Sixteen of them on two cores are shared round-robin by the
//! kernel, so every request takes as long as the slowest sixteen together;
//! on a pool the size of the machine each runs to its end in arrival
//! order, and a request's latency is its own CPU plus the queue ahead of
//! it.
//!
//! The rule that keeps it free of deadlock: a job on this pool never waits
//! for anything that needs a thread of this pool. Its jobs read SQLite
//! snapshots (WAL readers do not wait for the writer), check files, queue
//! a mutation to a group-commit writer without waiting for it (a full
//! queue is `busy` at once) and render; anything else is handed on to the
//! blocking pool ([`super::router::Reply::Blocking`]). The queue is
//! unbounded in type but bounded in fact: HTTP/1 has at most one request
//! in flight per connection, and requests in progress are capped
//! (`--max-connections`).

use std::cell::Cell;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

thread_local! {
    static ON_COMPUTE: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is one of a compute pool's.
pub fn on_compute_thread() -> bool {
    ON_COMPUTE.with(Cell::get)
}

/// A fixed set of threads taking jobs from one FIFO queue.
#[derive(Debug)]
pub struct ComputePool {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    threads: usize,
}

impl ComputePool {
    /// Starts `threads` threads (at least one) named `name`.
    pub fn start(threads: usize, name: &str) -> std::io::Result<ComputePool> {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..threads {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || {
                    ON_COMPUTE.with(|c| c.set(true));
                    loop {
                        // The lock is held only to take the next job.
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        match job {
                            // A panicking job loses only its own answer
                            // (its sender is dropped); the thread stays.
                            Ok(job) => {
                                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                            }
                            Err(_) => return,
                        }
                    }
                })?;
        }
        Ok(ComputePool {
            tx: Mutex::new(Some(tx)),
            threads,
        })
    }

    /// How many threads it runs.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f` on the pool, in arrival order; `None` if it panicked or
    /// the pool has stopped.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (answer, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = answer.send(f());
        });
        {
            let tx = self.tx.lock().ok()?;
            tx.as_ref()?.send(job).ok()?;
        }
        rx.await.ok()
    }
}

impl Drop for ComputePool {
    fn drop(&mut self) {
        // Closing the queue ends every thread once it is drained.
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    }

    #[test]
    fn runs_jobs_on_its_threads_and_survives_a_panic() {
        let pool = ComputePool::start(2, "test-compute").expect("pool");
        assert_eq!(pool.threads(), 2);
        let rt = rt();
        assert!(!on_compute_thread());
        assert_eq!(rt.block_on(pool.run(on_compute_thread)), Some(true));
        let panicked: Option<()> = rt.block_on(pool.run(|| panic!("a job panics")));
        assert_eq!(panicked, None);
        // Both threads still answer after the panic.
        let sum: u64 = rt.block_on(async {
            let mut total = 0;
            for i in 0..100u64 {
                total += pool.run(move || i * 2).await.unwrap_or(0);
            }
            total
        });
        assert_eq!(sum, 9900);
    }

    #[test]
    fn one_thread_runs_jobs_in_arrival_order() {
        let pool = Arc::new(ComputePool::start(1, "test-compute").expect("pool"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        rt.block_on(async {
            // Queued one after another (each send happens before the next
            // future is created), answered in that order.
            let mut waits = Vec::new();
            for i in 0..50 {
                let (p, s) = (pool.clone(), seen.clone());
                let (queued_tx, queued_rx) = tokio::sync::oneshot::channel::<()>();
                waits.push(tokio::spawn(async move {
                    let fut = p.run(move || s.lock().map(|mut v| v.push(i)).is_ok());
                    tokio::pin!(fut);
                    // Poll once so the job is queued, then let the next go.
                    let first = futures_poll_once(fut.as_mut()).await;
                    let _ = queued_tx.send(());
                    match first {
                        Some(v) => v,
                        None => fut.await,
                    }
                }));
                let _ = queued_rx.await;
            }
            for w in waits {
                assert_eq!(w.await.expect("join"), Some(true));
            }
        });
        let seen = seen.lock().expect("seen").clone();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }

    /// Polls a future once: its output if it is ready.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }
}
