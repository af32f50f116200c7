//! Waiting for permits: [`Acquire`] and [`AcquireOwned`], and `RawAcquire`, their shared
//! part (also the start of every queued [`Pool`](super::Pool) task's body).
//!
//! A waiter's life: `Start` (try the lock-free fast path; if that fails, lock and queue the
//! node, taking whatever permits are free), `Queued` (each poll looks at the node under the
//! lock: still queued, granted, or dequeued by `close`), `Done`. Dropping it while `Queued`
//! is the cancel path (`RawAcquire::cancel`): see the semaphore's module docs.

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::error::{AcquireError, TryAcquireError};
use super::permit::{OwnedSemaphorePermit, SemaphorePermit};
use super::semaphore::{Semaphore, Wanted};
use super::wait_list::{Phase, Waiter, WakeList};

/// The waiting part of an acquisition, without the reference to the semaphore: shared by
/// [`Acquire`], [`AcquireOwned`] and the body of a queued [`Pool`](super::Pool) task.
pub(crate) struct RawAcquire {
    node: Waiter<Wanted>,
    n: usize,
    phase: Phase,
}

impl RawAcquire {
    pub(crate) fn new(n: usize) -> Self {
        assert!(
            n <= Semaphore::MAX_PERMITS,
            "Semaphore: acquiring {n} permits, more than Semaphore::MAX_PERMITS"
        );
        RawAcquire {
            node: Waiter::new(Wanted::idle()),
            n,
            phase: Phase::Start,
        }
    }

    /// An acquisition that already holds its permits (a pool task that found a free slot).
    pub(crate) fn done(n: usize) -> Self {
        RawAcquire {
            phase: Phase::Done,
            ..RawAcquire::new(n)
        }
    }

    /// Polls for the permits: `Ready(Ok)` once this acquisition holds them (the caller then
    /// owns them and must release them).
    ///
    /// Must be called with the same semaphore every time, and the node must not move while
    /// queued (the callers are pinned futures).
    pub(crate) fn poll(
        &mut self,
        sem: &Semaphore,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AcquireError>> {
        match self.phase {
            Phase::Start => match sem.try_take(self.n) {
                Ok(()) => {
                    self.phase = Phase::Done;
                    Poll::Ready(Ok(()))
                }
                Err(TryAcquireError::Closed) => {
                    self.phase = Phase::Done;
                    Poll::Ready(Err(AcquireError::Closed))
                }
                Err(TryAcquireError::NoPermits) => {
                    let mut list = sem.lock();
                    match sem.enqueue(&mut list, &self.node, self.n, cx) {
                        Poll::Pending => {
                            self.phase = Phase::Queued;
                            Poll::Pending
                        }
                        Poll::Ready(got) => {
                            self.phase = Phase::Done;
                            Poll::Ready(if got {
                                Ok(())
                            } else {
                                Err(AcquireError::Closed)
                            })
                        }
                    }
                }
            },
            Phase::Queued => {
                let mut list = sem.lock();
                // SAFETY: our node, registered with `sem`; we hold its lock.
                let r = unsafe {
                    list.with(self.node.ptr(), |f| {
                        if f.is_queued() {
                            f.set_waker(cx.waker());
                            Poll::Pending
                        } else if f.payload.closed {
                            Poll::Ready(Err(AcquireError::Closed))
                        } else {
                            Poll::Ready(Ok(()))
                        }
                    })
                };
                if r.is_ready() {
                    self.phase = Phase::Done;
                }
                r
            }
            Phase::Done => panic!("Semaphore: an acquisition polled after it completed"),
        }
    }

    /// Gives up: leaves the queue and hands on whatever this waiter was given. Called by the
    /// owners' `Drop`; a no-op unless queued.
    pub(crate) fn cancel(&mut self, sem: &Semaphore) {
        if self.phase != Phase::Queued {
            return;
        }
        self.phase = Phase::Done;
        let mut wakes = WakeList::new();
        {
            let mut list = sem.lock();
            let node = self.node.ptr();
            // SAFETY: our node, registered with `sem`; we hold its lock.
            let give_back = unsafe {
                if list.remove(node) {
                    list.with(node, |f| f.payload.wanted - f.payload.missing)
                } else {
                    list.with(node, |f| {
                        if f.payload.closed {
                            0 // close() took back what it had
                        } else {
                            f.payload.wanted // granted, but never seen
                        }
                    })
                }
            };
            // Also clears QUEUED if we were the last waiter.
            sem.hand_out(&mut list, give_back, &mut wakes);
        }
        wakes.wake_all();
    }
}

/// The future of [`Semaphore::acquire`] and [`Semaphore::acquire_many`].
///
/// ```
/// let sem = ito::sync::Semaphore::new(1);
/// let acquire = sem.acquire_many(1);
/// let permit = ito::block_on(acquire).unwrap();
/// assert_eq!(permit.num_permits(), 1);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a> {
    pub(super) sem: &'a Semaphore,
    pub(super) raw: RawAcquire,
}

impl<'a> StdFuture for Acquire<'a> {
    type Output = Result<SemaphorePermit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `raw` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        this.raw.poll(this.sem, cx).map(|r| {
            r.map(|()| SemaphorePermit {
                sem: this.sem,
                permits: this.raw.n,
            })
        })
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        self.raw.cancel(self.sem);
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.raw.n)
            .finish_non_exhaustive()
    }
}

/// The future of [`Semaphore::acquire_owned`] and [`Semaphore::acquire_many_owned`].
///
/// ```
/// use std::sync::Arc;
/// let sem = Arc::new(ito::sync::Semaphore::new(1));
/// let acquire = sem.acquire_owned(); // owns its semaphore: it can move into a task
/// let task = ito::spawn(async move { acquire.await.map(|p| p.num_permits()) });
/// assert_eq!(task.wait(), Ok(Ok(1)));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct AcquireOwned {
    pub(super) sem: Arc<Semaphore>,
    pub(super) raw: RawAcquire,
}

impl StdFuture for AcquireOwned {
    type Output = Result<OwnedSemaphorePermit, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `raw` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        this.raw.poll(&this.sem, cx).map(|r| {
            r.map(|()| OwnedSemaphorePermit {
                sem: Arc::clone(&this.sem),
                permits: this.raw.n,
            })
        })
    }
}

impl Drop for AcquireOwned {
    fn drop(&mut self) {
        self.raw.cancel(&self.sem);
    }
}

impl fmt::Debug for AcquireOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwned")
            .field("permits", &self.raw.n)
            .finish_non_exhaustive()
    }
}

/// Polls a lock's acquisition ([`Mutex`](super::Mutex), [`RwLock`](super::RwLock)) and turns
/// its permits into the lock's guard, which releases them on drop.
pub(super) fn poll_guard<G>(
    acquire: Pin<&mut Acquire<'_>>,
    cx: &mut Context<'_>,
    guard: impl FnOnce() -> G,
) -> Poll<G> {
    match acquire.poll(cx) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(Ok(permit)) => {
            permit.forget();
            Poll::Ready(guard())
        }
        Poll::Ready(Err(e)) => unreachable!("a lock's semaphore is never closed: {e}"),
    }
}
