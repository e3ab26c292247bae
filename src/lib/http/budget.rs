//! The head budget (`serve --head-budget`): a fair share of connection
//! slots when every client, a hostile one included, connects from the same
//! address.
//!
//! A connection that is still reading a request head (its first one, from
//! the accept and through a TLS handshake, or the next one on a kept-alive
//! connection) holds a [`Place`] here, apart from the connections with a
//! request in progress (`--max-connections`, counted by the server). When
//! every place is taken, a newcomer takes the place of the connection that
//! has waited longest, and that connection is dropped. So a client that
//! holds many half-sent heads only ever pushes out its own oldest ones,
//! and a client that sends its head at once (as every HTTP client does) is
//! served: to push it out, `--head-budget` other connections would have to
//! arrive in the moment between its accept and its head. The accept loop
//! never stops accepting for want of a place, so the listen backlog drains.
//!
//! A place is given up when its head is complete ([`Place::leave`]), or
//! when the connection ends (the place is dropped).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// The places of connections still reading a head (see the module docs).
pub struct HeadBudget {
    cap: usize,
    inner: Mutex<Inner>,
}

struct Inner {
    next: u64,
    /// Waiting connections by the order they took their place: the first
    /// entry is the oldest.
    waiting: BTreeMap<u64, Arc<Eviction>>,
}

/// The signal that drops a waiting connection.
#[derive(Default)]
struct Eviction {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Eviction {
    fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        let w = self.waker.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = w {
            w.wake();
        }
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if let Ok(mut w) = self.waker.lock() {
            match &*w {
                Some(old) if old.will_wake(cx.waker()) => {}
                _ => *w = Some(cx.waker().clone()),
            }
        }
        // Checked again after the waker is in place: a fire in between
        // either saw the waker or is seen here.
        if self.fired.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl HeadBudget {
    /// A budget of `cap` places (at least one).
    pub fn new(cap: usize) -> Arc<HeadBudget> {
        Arc::new(HeadBudget {
            cap: cap.max(1),
            inner: Mutex::new(Inner {
                next: 0,
                waiting: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock guards plain bookkeeping that no panic leaves half done.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a connection that starts waiting for a head now. When
    /// the budget is full, the oldest waiting connection loses its place
    /// and is told to drop ([`Place::poll_dropped`]); never the new one.
    pub fn enter(self: &Arc<Self>) -> Place {
        let eviction = Arc::new(Eviction::default());
        let mut dropped = Vec::new();
        let id = {
            let mut inner = self.lock();
            while inner.waiting.len() >= self.cap {
                match inner.waiting.pop_first() {
                    Some((_, e)) => dropped.push(e),
                    None => break,
                }
            }
            let id = inner.next;
            inner.next += 1;
            inner.waiting.insert(id, eviction.clone());
            id
        };
        for e in dropped {
            e.fire();
        }
        Place {
            budget: self.clone(),
            id,
            eviction,
        }
    }

    /// Drops the connection that has waited longest, if any (the accept
    /// loop, out of file descriptors, frees one this way). Whether there
    /// was one.
    pub fn drop_oldest(&self) -> bool {
        let e = self.lock().waiting.pop_first();
        match e {
            Some((_, e)) => {
                e.fire();
                true
            }
            None => false,
        }
    }

    /// Connections holding a place now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    fn remove(&self, id: u64) -> bool {
        self.lock().waiting.remove(&id).is_some()
    }
}

/// One connection's place in the [`HeadBudget`]; given up when dropped.
pub struct Place {
    budget: Arc<HeadBudget>,
    id: u64,
    eviction: Arc<Eviction>,
}

impl Place {
    /// The head is complete: gives the place up. `false` if the place was
    /// already taken by a newer connection, which means this connection
    /// must be dropped (the decision was made first, under the lock).
    pub fn leave(self) -> bool {
        self.budget.remove(self.id)
    }

    /// Ready once a newer connection took this place: the connection is
    /// then to be dropped. Registers `cx`'s waker until then.
    pub fn poll_dropped(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.eviction.poll(cx)
    }

    /// The budget this place belongs to.
    pub fn budget(&self) -> &Arc<HeadBudget> {
        &self.budget
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.budget.remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn dropped(p: &Place) -> bool {
        let w = Waker::noop();
        p.poll_dropped(&mut Context::from_waker(w)).is_ready()
    }

    #[test]
    fn a_full_budget_drops_the_oldest_never_the_newcomer() {
        let b = HeadBudget::new(3);
        let places: Vec<Place> = (0..3).map(|_| b.enter()).collect();
        assert_eq!(b.waiting(), 3);
        assert!(places.iter().all(|p| !dropped(p)));
        let counter = Arc::new(Count(0.into()));
        let waker = Waker::from(counter.clone());
        assert!(
            places[0]
                .poll_dropped(&mut Context::from_waker(&waker))
                .is_pending()
        );
        let newest = b.enter();
        assert_eq!(b.waiting(), 3);
        assert!(dropped(&places[0]), "the oldest is dropped");
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "and woken");
        assert!(!dropped(&places[1]) && !dropped(&places[2]) && !dropped(&newest));
        let mut places = places.into_iter();
        let oldest = places.next().expect("oldest");
        assert!(
            !oldest.leave(),
            "a dropped connection cannot complete its head"
        );
        // A completed head gives its place up: the next newcomer drops no one.
        let second = places.next().expect("second");
        assert!(second.leave());
        assert_eq!(b.waiting(), 2);
        let another = b.enter();
        assert_eq!(b.waiting(), 3);
        let third = places.next().expect("third");
        assert!(!dropped(&third) && !dropped(&newest) && !dropped(&another));
        // A connection that ends gives its place up too.
        drop(third);
        assert_eq!(b.waiting(), 2);
        assert!(b.drop_oldest());
        assert!(dropped(&newest) && !dropped(&another));
        assert_eq!(b.waiting(), 1);
    }

    #[test]
    fn a_budget_of_zero_still_holds_one() {
        let b = HeadBudget::new(0);
        let a = b.enter();
        let c = b.enter();
        assert!(dropped(&a) && !dropped(&c));
        assert!(c.leave());
        assert!(!b.drop_oldest());
    }
}
