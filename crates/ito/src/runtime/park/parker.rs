//! The seam through which every runtime thread parks when it has nothing to do.
//!
//! A [`Parker`] belongs to one runtime thread; its [`Unparker`] is what other threads hold to
//! wake it. Only the park module parks a runtime thread, so an I/O driver can later sit behind
//! [`Parker::park`] (the thread that holds the driver polls the OS instead of sleeping on a
//! futex) without any change to the worker loop.
//!
//! Under `--cfg loom` both are built from loom's `Mutex` and `Condvar`, so the sleep protocol's
//! models run the same code that ships. A loom park with a timeout returns at once: the model
//! explores the timeout firing at any point.

use std::time::Duration;

/// Parks one runtime thread. A wake-up given before the park is not lost: the next park
/// returns at once.
pub(crate) struct Parker {
    #[cfg(not(loom))]
    inner: crossbeam_utils::sync::Parker,
    #[cfg(loom)]
    inner: loom::sync::Arc<model::Token>,
}

/// Wakes the thread that owns the matching [`Parker`].
#[derive(Clone)]
pub(crate) struct Unparker {
    #[cfg(not(loom))]
    inner: crossbeam_utils::sync::Unparker,
    #[cfg(loom)]
    inner: loom::sync::Arc<model::Token>,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            #[cfg(not(loom))]
            inner: crossbeam_utils::sync::Parker::new(),
            #[cfg(loom)]
            inner: loom::sync::Arc::new(model::Token::default()),
        }
    }

    /// The handle that wakes this parker's thread.
    pub(crate) fn unparker(&self) -> Unparker {
        Unparker {
            #[cfg(not(loom))]
            inner: self.inner.unparker().clone(),
            #[cfg(loom)]
            inner: self.inner.clone(),
        }
    }

    /// Blocks until woken. May return spuriously: callers re-check their condition.
    #[inline]
    pub(crate) fn park(&self) {
        #[cfg(not(loom))]
        self.inner.park();
        #[cfg(loom)]
        self.inner.wait();
    }

    /// Blocks until woken or until `timeout` has passed.
    #[inline]
    pub(crate) fn park_timeout(&self, timeout: Duration) {
        #[cfg(not(loom))]
        self.inner.park_timeout(timeout);
        #[cfg(loom)]
        {
            let _ = timeout;
            self.inner.take_or_yield();
        }
    }
}

impl Unparker {
    /// Wakes the parked thread, or makes its next park return at once.
    #[inline]
    pub(crate) fn unpark(&self) {
        #[cfg(not(loom))]
        self.inner.unpark();
        #[cfg(loom)]
        self.inner.give();
    }
}

#[cfg(loom)]
mod model {
    use loom::sync::{Condvar, Mutex};

    /// A wake-up token under a lock: the model of a futex-based parker.
    #[derive(Default)]
    pub(super) struct Token {
        given: Mutex<bool>,
        cv: Condvar,
    }

    impl Token {
        pub(super) fn wait(&self) {
            let mut given = self.given.lock().unwrap();
            while !*given {
                given = self.cv.wait(given).unwrap();
            }
            *given = false;
        }

        pub(super) fn take_or_yield(&self) {
            let mut given = self.given.lock().unwrap();
            if !*given {
                drop(given);
                loom::thread::yield_now();
                given = self.given.lock().unwrap();
            }
            *given = false;
        }

        pub(super) fn give(&self) {
            *self.given.lock().unwrap() = true;
            self.cv.notify_one();
        }
    }
}
