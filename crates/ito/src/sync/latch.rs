//! [`Latch`]: a count-down latch (Java's `CountDownLatch`).
//!
//! One atomic count and one [`Promise<()>`](crate::Promise). `count_down` is one `fetch_sub`
//! (`AcqRel`: everything the counters did happens-before the release); the call that takes the
//! count to zero completes the promise, whose completion cell releases every waiter at once
//! (async waiters, parked threads and blocked workers alike, with the cell's loom-checked
//! protocol). The count never goes below zero: counting down an open latch does nothing.

use std::fmt;
use std::future::{Future as StdFuture, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Cancelled, block};
use crate::future::WaitRef;
use crate::loom::{AtomicUsize, Ordering};
use crate::{Future, Promise};

/// A count-down latch: waiters are released when the count reaches zero, and stay released.
///
/// ```
/// use std::sync::Arc;
/// let latch = Arc::new(ito::sync::Latch::new(3));
/// for _ in 0..3 {
///     let latch = latch.clone();
///     ito::spawn_fn(move || latch.count_down());
/// }
/// latch.wait_blocking().unwrap();
/// assert_eq!(latch.count(), 0);
/// ```
pub struct Latch {
    count: AtomicUsize,
    open: Promise<()>,
    opened: Future<()>,
}

impl Latch {
    /// A latch that opens after `count` calls to [`count_down`](Self::count_down) (at once if
    /// `count` is 0).
    ///
    /// ```
    /// assert!(ito::sync::Latch::new(0).is_open());
    /// assert!(!ito::sync::Latch::new(1).is_open());
    /// ```
    pub fn new(count: usize) -> Latch {
        let open = Promise::new();
        let opened = open.future();
        if count == 0 {
            let _ = open.try_success(());
        }
        Latch {
            count: AtomicUsize::new(count),
            open,
            opened,
        }
    }

    /// Decrements the count, opening the latch when it reaches zero; does nothing if it is
    /// already open.
    ///
    /// ```
    /// let latch = ito::sync::Latch::new(2);
    /// latch.count_down();
    /// assert_eq!(latch.count(), 1);
    /// latch.count_down();
    /// latch.count_down(); // no effect
    /// assert!(latch.is_open());
    /// ```
    #[inline]
    pub fn count_down(&self) {
        let mut c = self.count.load(Ordering::Acquire);
        loop {
            if c == 0 {
                return;
            }
            match self
                .count
                .compare_exchange_weak(c, c - 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => c = actual,
            }
        }
        if c == 1 {
            let _ = self.open.try_success(());
        }
    }

    /// Increments a count that has not reached zero (a [`WaitGroup`](super::WaitGroup)
    /// handle being cloned). `false`, and no change, if the latch is open.
    pub(crate) fn count_up(&self) -> bool {
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c == 0 {
                return false;
            }
            let next = c.checked_add(1).expect("Latch: count overflow");
            match self
                .count
                .compare_exchange_weak(c, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => c = actual,
            }
        }
    }

    /// The current count.
    ///
    /// ```
    /// assert_eq!(ito::sync::Latch::new(4).count(), 4);
    /// ```
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Whether the count reached zero and waiters are released.
    ///
    /// ```
    /// let latch = ito::sync::Latch::new(1);
    /// latch.count_down();
    /// assert!(latch.is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        self.opened.is_completed()
    }

    /// Waits until the latch opens.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let latch = Arc::new(ito::sync::Latch::new(1));
    /// let l2 = latch.clone();
    /// let waiter = ito::spawn(async move { l2.wait().await; "released" });
    /// latch.count_down();
    /// assert_eq!(waiter.wait(), Ok("released"));
    /// ```
    pub fn wait(&self) -> LatchWait<'_> {
        LatchWait {
            inner: (&self.opened).into_future(),
        }
    }

    /// Waits from plain code until the latch opens (handing a worker's place to another
    /// thread meanwhile); fails only if the calling task is cancelled.
    ///
    /// ```
    /// let latch = ito::sync::Latch::new(1);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| latch.count_down());
    ///     latch.wait_blocking().unwrap();
    /// });
    /// ```
    pub fn wait_blocking(&self) -> Result<(), Cancelled> {
        if self.is_open() {
            return Ok(());
        }
        block(self.wait())
    }

    /// The latch's opening as an [`ito::Future`](crate::Future), to compose with other
    /// futures.
    ///
    /// ```
    /// let latch = ito::sync::Latch::new(1);
    /// let then = latch.future().map(|()| "open");
    /// latch.count_down();
    /// assert_eq!(then.wait(), Ok("open"));
    /// ```
    pub fn future(&self) -> Future<()> {
        self.opened.clone()
    }
}

impl fmt::Debug for Latch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latch")
            .field("count", &self.count())
            .finish()
    }
}

/// The future of [`Latch::wait`].
///
/// ```
/// let latch = ito::sync::Latch::new(0);
/// ito::block_on(latch.wait()); // open from the start: ready at once
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct LatchWait<'a> {
    inner: WaitRef<'a, ()>,
}

impl StdFuture for LatchWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `inner` is structurally pinned: never moved out of the pinned future.
        let inner = unsafe { self.map_unchecked_mut(|s| &mut s.inner) };
        // The latch holds its promise while it is borrowed, so the cell can only complete
        // with `Ok(())`.
        inner.poll(cx).map(|_| ())
    }
}

impl fmt::Debug for LatchWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatchWait").finish_non_exhaustive()
    }
}
