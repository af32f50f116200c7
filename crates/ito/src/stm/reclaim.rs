//! Deferred freeing of TVar values and TVars, so that lock-free readers never touch freed
//! memory: an epoch-based scheme (crossbeam-epoch). A transaction pins the epoch for each
//! attempt; a value replaced by a commit, and a TVar whose last handle is dropped, are freed
//! only once every attempt pinned at that time has ended.
//!
//! Under loom, pinning is a no-op and deferred frees are leaked (loom models are small; they
//! check the lock-word protocol, not the allocator).

/// An epoch pin: what was reachable when it was taken stays allocated while it lives.
pub(crate) struct Guard {
    #[cfg(not(loom))]
    inner: crossbeam_epoch::Guard,
}

/// Pins the current thread.
#[inline]
pub(crate) fn pin() -> Guard {
    Guard {
        #[cfg(not(loom))]
        inner: crossbeam_epoch::pin(),
    }
}

impl Guard {
    /// Moves this thread's pending deferred functions to the global queue, where any thread
    /// can run them.
    pub(crate) fn flush(&self) {
        #[cfg(not(loom))]
        self.inner.flush();
    }

    /// Runs `f` once no thread that is pinned now can still reach what `f` frees.
    ///
    /// # Safety
    ///
    /// `f` may run on any thread, later: everything it touches must allow that (`Send`
    /// data, not borrowed), and nothing may reach what it frees from a pin taken after the
    /// caller made it unreachable.
    #[inline]
    pub(crate) unsafe fn defer(&self, f: impl FnOnce() + 'static) {
        #[cfg(not(loom))]
        // SAFETY: the caller's contract is `defer_unchecked`'s.
        unsafe {
            self.inner.defer_unchecked(f)
        };
        #[cfg(loom)]
        std::mem::forget(f);
    }
}
