//! [`Notify`]: wake one task, or every task, waiting for an event (tokio's `Notify`).
//!
//! One mutex around a stored permit and a FIFO wait list (`wait_list.rs`) of
//! [`Notified`] futures, plus a generation count of [`Notify::notify_waiters`] calls.
//!
//! - `notify_one` dequeues the oldest waiter and marks it notified, or, with nobody queued,
//!   stores the permit (at most one), which the next waiter takes at once.
//! - `notify_waiters` bumps the generation and dequeues every queued waiter. A `Notified`
//!   remembers the generation it was created in, so one that was created before the call but
//!   not polled yet completes too, and one created after waits for the next call: the call
//!   releases exactly the waiters that exist when it is made.
//! - A `Notified` dropped after `notify_one` chose it, before it returned `Ready`, hands the
//!   notification on (to the next waiter, or back into the permit): a `notify_one` is never
//!   lost to a cancelled waiter.
//!
//! The generation is an atomic (read without the lock when a `Notified` is created) that is
//! only written under the lock; everything else is guarded by the lock.

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::wait_list::{Phase, WaitList, Waiter, WakeList, wake_one};
use super::{Cancelled, block};
use crate::loom::{AtomicUsize, Mutex, MutexGuard, Ordering};

/// Wakes tasks waiting for an event: [`notify_one`](Self::notify_one) wakes one waiter (or
/// lets the next one through at once), [`notify_waiters`](Self::notify_waiters) wakes all
/// current waiters.
///
/// Like tokio's `Notify`: it carries no data, and a `notify_one` with nobody waiting is
/// stored as a permit, so a waiter that arrives just after it does not miss it.
///
/// ```
/// use std::sync::Arc;
/// let notify = Arc::new(ito::sync::Notify::new());
/// let n = notify.clone();
/// let waiter = ito::spawn(async move {
///     n.notified().await;
///     "woken"
/// });
/// notify.notify_one();
/// assert_eq!(waiter.wait(), Ok("woken"));
/// ```
pub struct Notify {
    state: Mutex<State>,
    /// How many times `notify_waiters` was called; written only under the lock.
    generation: AtomicUsize,
}

struct State {
    permit: bool,
    waiters: WaitList<Slot>,
}

/// What a waiter was told (its node's payload).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Slot {
    Waiting,
    /// Chosen by `notify_one`: must be handed on if the waiter gives up.
    One,
    /// Released by `notify_waiters`.
    All,
}

impl Notify {
    /// A `Notify` with no permit stored.
    ///
    /// ```
    /// let notify = ito::sync::Notify::new();
    /// # drop(notify);
    /// ```
    pub fn new() -> Notify {
        Notify {
            state: Mutex::new(State {
                permit: false,
                waiters: WaitList::new(),
            }),
            generation: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under the lock, so a poisoned lock still guards a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the oldest waiter; with nobody waiting, stores a permit (at most one) that the
    /// next [`notified`](Self::notified) takes at once.
    ///
    /// ```
    /// let notify = ito::sync::Notify::new();
    /// notify.notify_one(); // nobody waits: stored
    /// ito::block_on(notify.notified()); // takes the permit, does not wait
    /// ```
    pub fn notify_one(&self) {
        let waker = Notify::pass_on(&mut self.lock());
        wake_one(waker);
    }

    /// Wakes every waiter that exists now: every [`Notified`] created before this call, queued
    /// or not polled yet. It stores no permit: a waiter created afterwards waits for the next
    /// notification.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let notify = Arc::new(ito::sync::Notify::new());
    /// let waiters: Vec<_> = (0..3)
    ///     .map(|_| {
    ///         let n = notify.clone();
    ///         ito::spawn(async move { n.notified().await })
    ///     })
    ///     .collect();
    /// // Wait until all three are queued, then release them together.
    /// while notify.waiting() < 3 {
    ///     std::thread::yield_now();
    /// }
    /// notify.notify_waiters();
    /// for w in waiters {
    ///     w.wait().unwrap();
    /// }
    /// ```
    pub fn notify_waiters(&self) {
        let mut wakes = WakeList::new();
        {
            let mut st = self.lock();
            self.generation.fetch_add(1, Ordering::SeqCst);
            while let Some(node) = st.waiters.pop_front() {
                // SAFETY: as in `pass_on`.
                unsafe {
                    st.waiters.with(node, |f| {
                        f.payload = Slot::All;
                        wakes.push(f.take_waker());
                    })
                };
            }
        }
        wakes.wake_all();
    }

    /// Waits for a notification: a stored permit, a [`notify_one`](Self::notify_one) that
    /// chooses this waiter, or a [`notify_waiters`](Self::notify_waiters) made after this call.
    ///
    /// Cancel-safe: dropping the future loses nothing. If a `notify_one` had chosen it, the
    /// notification goes to the next waiter (or back into the permit).
    ///
    /// ```
    /// let notify = ito::sync::Notify::new();
    /// let notified = notify.notified(); // counts from here for notify_waiters
    /// notify.notify_waiters();
    /// ito::block_on(notified);
    /// ```
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            generation: self.generation.load(Ordering::SeqCst),
            node: Waiter::new(Slot::Waiting),
            phase: Phase::Start,
        }
    }

    /// Waits from plain code for a notification, as [`notified`](Self::notified) (handing a
    /// worker's place to another thread meanwhile). Fails only if the calling task is
    /// cancelled.
    ///
    /// ```
    /// let notify = ito::sync::Notify::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| notify.notify_one());
    ///     notify.notified_blocking().unwrap();
    /// });
    /// ```
    pub fn notified_blocking(&self) -> Result<(), Cancelled> {
        block(self.notified())
    }

    /// How many [`Notified`] futures are queued now (a snapshot; for tests and metrics).
    ///
    /// ```
    /// assert_eq!(ito::sync::Notify::new().waiting(), 0);
    /// ```
    pub fn waiting(&self) -> usize {
        self.lock().waiters.len()
    }

    /// Gives a `notify_one` (a new one, or one a cancelled waiter did not consume) to the
    /// oldest waiter, or stores it as the permit. Returns the waker to wake once the lock is
    /// released.
    fn pass_on(st: &mut State) -> Option<std::task::Waker> {
        match st.waiters.pop_front() {
            // SAFETY: a node of this list, dequeued under the lock we hold; its future frees
            // it only after taking the lock.
            Some(node) => unsafe {
                st.waiters.with(node, |f| {
                    f.payload = Slot::One;
                    f.take_waker()
                })
            },
            None => {
                st.permit = true;
                None
            }
        }
    }
}

impl Default for Notify {
    fn default() -> Notify {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiting", &st.waiters.len())
            .finish()
    }
}

/// The future of [`Notify::notified`].
///
/// ```
/// let notify = ito::sync::Notify::new();
/// let notified = notify.notified();
/// notify.notify_one();
/// ito::block_on(notified);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Notified<'a> {
    notify: &'a Notify,
    /// `notify_waiters` calls made before this future was created.
    generation: usize,
    node: Waiter<Slot>,
    phase: Phase,
}

impl StdFuture for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the node is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let mut st = this.notify.lock();
        match this.phase {
            Phase::Start => {
                // A `notify_waiters` made since this future was created releases it. That is
                // checked before the permit, so a released waiter leaves the permit (a later
                // `notify_one`) to the next waiter instead of using it up.
                let released = this.notify.generation.load(Ordering::SeqCst) != this.generation;
                if !released && st.permit {
                    st.permit = false;
                } else if !released {
                    let node = this.node.ptr();
                    // SAFETY: our node, not queued, pinned until `Drop` removes it; we hold
                    // the lock of the one list it is ever registered with.
                    unsafe {
                        st.waiters.push_back(node);
                        st.waiters.with(node, |f| f.set_waker(cx.waker()));
                    }
                    this.phase = Phase::Queued;
                    return Poll::Pending;
                }
            }
            Phase::Queued => {
                // SAFETY: our node, registered with this list; we hold its lock.
                let queued = unsafe {
                    st.waiters.with(this.node.ptr(), |f| {
                        if f.is_queued() {
                            f.set_waker(cx.waker());
                        }
                        f.is_queued()
                    })
                };
                if queued {
                    return Poll::Pending;
                }
            }
            Phase::Done => panic!("Notified polled after it completed"),
        }
        this.phase = Phase::Done;
        Poll::Ready(())
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        if self.phase != Phase::Queued {
            return;
        }
        let waker = {
            let mut st = self.notify.lock();
            let node = self.node.ptr();
            // SAFETY: our node, registered with this list; we hold its lock.
            let chosen = unsafe {
                !st.waiters.remove(node) && st.waiters.with(node, |f| f.payload == Slot::One)
            };
            if chosen {
                Notify::pass_on(&mut st)
            } else {
                None
            }
        };
        wake_one(waker);
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}
