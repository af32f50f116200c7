//! The FIFO wait list behind every queueing primitive: [`Semaphore`](super::Semaphore) (and so
//! [`Mutex`](super::Mutex), [`RwLock`](super::RwLock) and [`Pool`](super::Pool)) and the
//! channels' waiting senders and receivers.
//!
//! # Design
//!
//! An intrusive doubly linked list of [`Waiter`] nodes. A node lives inside the waiting future
//! (`Acquire`, `SendFuture`, a pool task's body, ...), which is pinned while the node is
//! queued, so queueing allocates nothing. The list itself lives inside the primitive's mutex:
//! **every access to a node's fields happens with that mutex held**, which is what a
//! `&mut WaitList` witnesses. There are no atomics in here, so there is no lock-free protocol
//! to get wrong; the primitives keep their lock-free fast paths (a permit CAS) in front of the
//! lock, and take the lock only to wait or to hand something to a waiter.
//!
//! # Who touches what
//!
//! | field | written by | when |
//! |---|---|---|
//! | `prev`, `next`, `queued` | the list operations | under the lock |
//! | `waker` | the waiting future (set on every poll that stays queued); taken by whoever dequeues the node to hand it something | under the lock |
//! | `payload` | the primitive: what the waiter wants and what it was given (permits, a value, "closed") | under the lock |
//!
//! A node leaves the list exactly once: **dequeued** by a releaser/sender/receiver/closer,
//! which fills in the payload and takes the waker (woken after the lock is released, see
//! [`WakeList`]), or **removed** by its own future when it is dropped (or gives up) while still
//! queued. A future that was dequeued but dropped before it saw the result hands what it was
//! given on (permits are released, a received value goes to the next receiver): see the
//! primitives' `cancel` functions. Because both paths run under the lock, the future can only
//! free its node after the dequeuer is done with it: the dequeuer never touches the node after
//! it releases the lock.
//!
//! A node is `!Unpin` (`PhantomPinned`), and so is every future that contains one: a
//! `&mut` to such a future (its `poll` gets one) does not claim exclusive access to the node's
//! `UnsafeCell` fields, which other threads reach through the list under the lock. This is
//! the convention tokio's intrusive lists rely on too.

use std::marker::PhantomPinned;
use std::ptr::NonNull;
use std::task::Waker;

use crate::loom::UnsafeCell;

/// Where a waiting future is in its life (owned by the future, not shared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not polled yet: the fast path has not been tried.
    Start,
    /// Its node was queued (it may have been dequeued since: look under the lock).
    Queued,
    /// It returned `Ready`, or gave up: nothing more to do on drop.
    Done,
}

/// One waiter: its links, its waker, and the primitive's payload.
///
/// Lives inside the waiting future, pinned while it is queued.
pub(crate) struct Waiter<P> {
    fields: UnsafeCell<Fields<P>>,
    _pin: PhantomPinned,
}

// SAFETY: every access to the fields goes through `WaitList::with`, under the lock of the list
// the node is registered with; the node's payload moves between threads only as far as `P`
// allows.
unsafe impl<P: Send> Send for Waiter<P> {}
// SAFETY: as above: shared references to a node only reach its fields under the lock.
unsafe impl<P: Send> Sync for Waiter<P> {}

/// The fields of a [`Waiter`], reachable only under the lock.
pub(crate) struct Fields<P> {
    prev: Option<NonNull<Waiter<P>>>,
    next: Option<NonNull<Waiter<P>>>,
    queued: bool,
    waker: Option<Waker>,
    /// What the waiter wants and what it was given; the primitive's business.
    pub(crate) payload: P,
}

impl<P> Fields<P> {
    /// Whether the node is in the list.
    #[inline]
    pub(crate) fn is_queued(&self) -> bool {
        self.queued
    }

    /// Remembers `waker` (unless it would wake the same task as the one stored).
    #[inline]
    pub(crate) fn set_waker(&mut self, waker: &Waker) {
        match &mut self.waker {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    /// Takes the waker, to wake it once the lock is released.
    #[inline]
    pub(crate) fn take_waker(&mut self) -> Option<Waker> {
        self.waker.take()
    }
}

impl<P> Waiter<P> {
    /// A node that is not queued, with `payload`.
    pub(crate) fn new(payload: P) -> Self {
        Waiter {
            fields: UnsafeCell::new(Fields {
                prev: None,
                next: None,
                queued: false,
                waker: None,
                payload,
            }),
            _pin: PhantomPinned,
        }
    }

    /// The node's address, for the list operations.
    #[inline]
    pub(crate) fn ptr(&self) -> NonNull<Waiter<P>> {
        NonNull::from(self)
    }
}

/// An intrusive FIFO list of [`Waiter`]s, kept inside its primitive's mutex.
pub(crate) struct WaitList<P> {
    head: Option<NonNull<Waiter<P>>>,
    tail: Option<NonNull<Waiter<P>>>,
    len: usize,
}

// SAFETY: the list is only reached through its primitive's mutex; the nodes it points to are
// `Send` when `P` is (they hold a `Waker`, which is `Send`, and the payload).
unsafe impl<P: Send> Send for WaitList<P> {}

impl<P> WaitList<P> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        WaitList {
            head: None,
            tail: None,
            len: 0,
        }
    }

    /// Whether nobody waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// How many wait.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The oldest waiter.
    #[inline]
    pub(crate) fn front(&self) -> Option<NonNull<Waiter<P>>> {
        self.head
    }

    /// Runs `f` on the fields of `node`.
    ///
    /// # Safety
    /// `node` is live, and is registered (or was, or will be) only with this list: the lock
    /// that guards this list (witnessed by `&mut self`) guards the node's fields.
    #[inline]
    pub(crate) unsafe fn with<R>(
        &mut self,
        node: NonNull<Waiter<P>>,
        f: impl FnOnce(&mut Fields<P>) -> R,
    ) -> R {
        // SAFETY: live (caller).
        let node = unsafe { node.as_ref() };
        node.fields.with_mut(|p| {
            // SAFETY: we hold the lock that guards every access to the node's fields, so this
            // `&mut` is unique for the duration of `f`.
            f(unsafe { &mut *p })
        })
    }

    /// Appends `node`.
    ///
    /// # Safety
    /// As [`with`](Self::with); in addition `node` is not queued, and stays live and in place
    /// until it is dequeued or removed (its future is pinned and removes it on drop).
    pub(crate) unsafe fn push_back(&mut self, node: NonNull<Waiter<P>>) {
        let tail = self.tail;
        // SAFETY: per the contract.
        unsafe {
            self.with(node, |f| {
                debug_assert!(!f.queued, "a waiter queued twice");
                f.prev = tail;
                f.next = None;
                f.queued = true;
            })
        };
        match tail {
            // SAFETY: the tail is a queued node of this list, hence live.
            Some(t) => unsafe { self.with(t, |f| f.next = Some(node)) },
            None => self.head = Some(node),
        }
        self.tail = Some(node);
        self.len += 1;
    }

    /// Removes `node` if it is queued; returns whether it was.
    ///
    /// # Safety
    /// As [`with`](Self::with).
    pub(crate) unsafe fn remove(&mut self, node: NonNull<Waiter<P>>) -> bool {
        // SAFETY: per the contract.
        let links = unsafe {
            self.with(node, |f| {
                if !f.queued {
                    return None;
                }
                f.queued = false;
                Some((f.prev.take(), f.next.take()))
            })
        };
        let Some((prev, next)) = links else {
            return false;
        };
        match prev {
            // SAFETY: a queued neighbour, hence live.
            Some(p) => unsafe { self.with(p, |f| f.next = next) },
            None => self.head = next,
        }
        match next {
            // SAFETY: a queued neighbour, hence live.
            Some(n) => unsafe { self.with(n, |f| f.prev = prev) },
            None => self.tail = prev,
        }
        self.len -= 1;
        true
    }

    /// Dequeues the oldest waiter. The caller fills in its payload and takes its waker before
    /// releasing the lock, and does not touch it afterwards.
    pub(crate) fn pop_front(&mut self) -> Option<NonNull<Waiter<P>>> {
        let head = self.head?;
        // SAFETY: the head is queued, hence live, and registered with this list.
        let removed = unsafe { self.remove(head) };
        debug_assert!(removed);
        Some(head)
    }
}

/// Wakers collected under a lock, woken after it is released (a waker may run arbitrary
/// code; none of it should run while we hold a primitive's lock). Most operations wake one
/// waiter or none, which costs no allocation; a `close` with many waiters spills to a `Vec`.
pub(crate) struct WakeList {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WakeList {
    /// An empty list.
    #[inline]
    pub(crate) fn new() -> Self {
        WakeList {
            first: None,
            rest: Vec::new(),
        }
    }

    /// Adds a waker (nothing for `None`).
    #[inline]
    pub(crate) fn push(&mut self, waker: Option<Waker>) {
        let Some(w) = waker else { return };
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }

    /// Wakes everyone, in the order they were added. A panicking waker (a foreign executor's)
    /// is contained: the others are still woken.
    #[inline]
    pub(crate) fn wake_all(mut self) {
        if let Some(w) = self.first.take() {
            wake(w);
        }
        if !self.rest.is_empty() {
            self.rest.drain(..).for_each(wake);
        }
    }
}

/// Wakes one waker taken under a lock (nothing for `None`), once the lock is released; a
/// panic is contained as in [`WakeList::wake_all`].
#[inline]
pub(crate) fn wake_one(waker: Option<Waker>) {
    if let Some(w) = waker {
        wake(w);
    }
}

#[inline]
fn wake(w: Waker) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake())) {
        crate::failure::drop_payload(payload);
    }
}
