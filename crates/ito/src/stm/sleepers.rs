//! Sleeping in `retry` until a variable the transaction read is written.
//!
//! A retrying transaction registers one [`Sleeper`] on the wait list of every variable it
//! read, then sets the variable's `WAITERS` bit with a CAS that expects the lock word it read
//! (`Header::mark_waiters`), then sleeps. A committer's locking CAS reads the bit; after
//! publishing (the unlock store clears it), it wakes the list if the bit was set. The CAS
//! fails if a commit changed the variable since the read (the sleeper runs again at once),
//! and a commit that comes after it sees the bit and finds the sleeper on the list: a commit
//! can never slip between a retrier's last look and its sleep (the loom model
//! `loom_stm_retry_is_woken` checks it). Empty futures read by the transaction get a node on
//! their own waiter lists (`cells.rs`), which the completer calls.

use std::sync::Arc;
use std::task::Waker;

use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::runtime::park::{Blocker, Unblocker};

/// Who to wake.
pub(crate) enum Wake {
    /// A synchronous `atomically` (its thread, or its suspended worker loop).
    Unblock(Unblocker),
    /// An `atomically_async` future.
    Waker(Waker),
}

/// One sleeping transaction, registered on every variable it read.
pub(crate) struct Sleeper {
    notified: AtomicBool,
    wake: Wake,
}

impl Sleeper {
    pub(crate) fn new(wake: Wake) -> Arc<Sleeper> {
        Arc::new(Sleeper {
            notified: AtomicBool::new(false),
            wake,
        })
    }

    pub(crate) fn is_notified(&self) -> bool {
        self.notified.load(Ordering::Acquire)
    }

    /// Marks it notified and wakes it (once). A waker that panics is contained here: the
    /// committer waking it has published already, and other sleepers still need waking.
    pub(crate) fn notify(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            match &self.wake {
                Wake::Unblock(u) => u.unblock(),
                Wake::Waker(w) => {
                    let r =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake_by_ref()));
                    if let Err(payload) = r {
                        crate::failure::drop_payload(payload);
                    }
                }
            }
        }
    }

    /// A synchronous sleeper parks (through the blocker whose unblocker it holds) until
    /// notified.
    pub(crate) fn park_until_notified(&self, blocker: &Blocker) {
        while !self.is_notified() {
            blocker.park();
        }
    }
}

/// The sleepers of one variable.
pub(crate) struct SleeperList {
    /// `sleepers.len()`, readable without the lock (committers skip empty lists).
    len: AtomicUsize,
    sleepers: Mutex<Vec<Arc<Sleeper>>>,
}

impl SleeperList {
    pub(crate) fn new() -> SleeperList {
        SleeperList {
            len: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn register(&self, s: &Arc<Sleeper>) {
        let mut v = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        v.push(s.clone());
        self.len.store(v.len(), Ordering::SeqCst);
    }

    pub(crate) fn unregister(&self, s: &Arc<Sleeper>) {
        let mut v = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = v.iter().position(|x| Arc::ptr_eq(x, s)) {
            v.swap_remove(i);
        }
        self.len.store(v.len(), Ordering::SeqCst);
    }

    /// Committer, after its publication, if `WAITERS` was set: wakes everyone registered.
    pub(crate) fn wake_all(&self) {
        if self.len.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken = {
            let mut v = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            self.len.store(0, Ordering::SeqCst);
            std::mem::take(&mut *v)
        };
        for s in woken {
            s.notify();
        }
    }
}
