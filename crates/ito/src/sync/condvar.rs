//! A condition-variable waiter on a [wait list](super::wait_list): the waiting part of
//! [`broadcast`](super::broadcast)'s receive and [`watch`](super::watch)'s `changed`.
//!
//! The owner's future checks its condition under the primitive's lock; if it does not hold,
//! it [`park`](CondWait::park)s (queues its node, or refreshes its waker if still queued).
//! A change dequeues every node ([`wake_all`]); a woken future checks again and parks again if
//! the change was not for it. Nothing is handed to a node, so a future dropped at any point
//! only has to leave the list ([`leave`](CondWait::leave)): there is nothing to pass on.

use std::task::Context;

use super::wait_list::{WaitList, Waiter, WakeList};

/// One waiter's node, inside its (pinned) future.
pub(crate) struct CondWait {
    node: Waiter<()>,
    /// Whether the node was ever queued (only then must `leave` take the lock).
    parked: bool,
}

impl CondWait {
    pub(crate) fn new() -> Self {
        CondWait {
            node: Waiter::new(()),
            parked: false,
        }
    }

    /// Whether the node was ever queued: the owner's `Drop` then calls
    /// [`leave`](Self::leave) under the lock.
    #[inline]
    pub(crate) fn was_parked(&self) -> bool {
        self.parked
    }

    /// Queues the node with `cx`'s waker, or refreshes the waker if it is still queued.
    ///
    /// # Safety
    /// `list` is the one list this node is ever used with, its lock is held, and the node does
    /// not move until [`leave`](Self::leave) has run under that lock (the owner is pinned and
    /// calls it on drop).
    pub(crate) unsafe fn park(&mut self, list: &mut WaitList<()>, cx: &Context<'_>) {
        let node = self.node.ptr();
        // SAFETY: per the contract.
        unsafe {
            if !list.with(node, |f| f.is_queued()) {
                list.push_back(node);
            }
            list.with(node, |f| f.set_waker(cx.waker()));
        }
        self.parked = true;
    }

    /// Leaves the list if still queued.
    ///
    /// # Safety
    /// As [`park`](Self::park).
    pub(crate) unsafe fn leave(&mut self, list: &mut WaitList<()>) {
        // SAFETY: per the contract.
        unsafe { list.remove(self.node.ptr()) };
    }
}

/// Dequeues every waiter of `list`, collecting their wakers (woken by the caller once the
/// lock is released).
pub(crate) fn wake_all(list: &mut WaitList<()>, wakes: &mut WakeList) {
    while let Some(node) = list.pop_front() {
        // SAFETY: a node of this list, dequeued under the lock we hold; its future frees it
        // only after taking the lock (`CondWait::leave`).
        unsafe { list.with(node, |f| wakes.push(f.take_waker())) };
    }
}
