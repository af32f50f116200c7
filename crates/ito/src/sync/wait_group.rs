//! [`WaitGroup`]: wait until a group of tasks is done, counted by handles (crossbeam's
//! `WaitGroup`), not by `add`/`done` calls (Go's `sync.WaitGroup`).
//!
//! Every handle is one count in a shared [`Latch`]: cloning a handle counts up, dropping one
//! counts down, and [`WaitGroup::wait`] drops its own handle and waits for the count to reach
//! zero. We chose handles over Go's `add`/`done` because a handle cannot be forgotten: a task
//! that panics or is cancelled drops its handle on the way out, so the group is never left
//! waiting for a `done` that will not come, and no `add` can race with a `wait` that already
//! saw zero (a new count can only be made from a live handle). The count reaches zero exactly
//! once, so a group is used once; make a new one for the next round.

use std::fmt;
use std::future::{Future as StdFuture, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{Cancelled, Latch, block};
use crate::future::Wait;

/// A group of handles; waiting ends when every handle is gone.
///
/// ```
/// let wg = ito::sync::WaitGroup::new();
/// for _ in 0..4 {
///     let wg = wg.clone();
///     ito::spawn_fn(move || {
///         // ... work ...
///         drop(wg);
///     });
/// }
/// wg.wait_blocking().unwrap(); // returns once all four handles are dropped
/// ```
pub struct WaitGroup {
    latch: Arc<Latch>,
}

impl WaitGroup {
    /// A group with one handle (this one).
    ///
    /// ```
    /// let wg = ito::sync::WaitGroup::new();
    /// assert_eq!(wg.count(), 1);
    /// ```
    pub fn new() -> WaitGroup {
        WaitGroup {
            latch: Arc::new(Latch::new(1)),
        }
    }

    /// How many handles exist.
    ///
    /// ```
    /// let wg = ito::sync::WaitGroup::new();
    /// let wg2 = wg.clone();
    /// assert_eq!(wg.count(), 2);
    /// drop(wg2);
    /// assert_eq!(wg.count(), 1);
    /// ```
    pub fn count(&self) -> usize {
        self.latch.count()
    }

    /// Drops this handle and waits until every other handle is dropped too.
    ///
    /// ```
    /// let wg = ito::sync::WaitGroup::new();
    /// let worker = wg.clone();
    /// let t = ito::spawn(async move {
    ///     drop(worker);
    /// });
    /// ito::block_on(wg.wait());
    /// t.wait().unwrap();
    /// ```
    pub fn wait(self) -> WaitGroupWait {
        let opened = self.latch.future();
        drop(self);
        WaitGroupWait {
            inner: opened.into_future(),
        }
    }

    /// [`wait`](Self::wait) from plain code (handing a worker's place to another thread
    /// meanwhile); fails only if the calling task is cancelled.
    ///
    /// ```
    /// let wg = ito::sync::WaitGroup::new();
    /// let w = wg.clone();
    /// std::thread::spawn(move || drop(w));
    /// wg.wait_blocking().unwrap();
    /// ```
    pub fn wait_blocking(self) -> Result<(), Cancelled> {
        block(self.wait())
    }
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl Clone for WaitGroup {
    /// Another handle: the group waits for it too.
    fn clone(&self) -> Self {
        let counted = self.latch.count_up();
        debug_assert!(counted, "a live WaitGroup handle always holds a count");
        WaitGroup {
            latch: Arc::clone(&self.latch),
        }
    }
}

impl Drop for WaitGroup {
    fn drop(&mut self) {
        self.latch.count_down();
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroup")
            .field("count", &self.count())
            .finish()
    }
}

/// The future of [`WaitGroup::wait`].
///
/// ```
/// let wg = ito::sync::WaitGroup::new();
/// let waiting = wg.wait(); // the only handle is gone: ready at once
/// ito::block_on(waiting);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct WaitGroupWait {
    inner: Wait<()>,
}

impl StdFuture for WaitGroupWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `inner` is structurally pinned: never moved out of the pinned future.
        let inner = unsafe { self.map_unchecked_mut(|s| &mut s.inner) };
        // The latch's promise is completed by the last handle's drop before the latch (and
        // its promise) can be freed, so the cell only ever completes with `Ok(())`.
        inner.poll(cx).map(|_| ())
    }
}

impl fmt::Debug for WaitGroupWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroupWait").finish_non_exhaustive()
    }
}
