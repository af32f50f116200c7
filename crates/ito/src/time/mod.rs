//! Timers: [`sleep`], [`Sleep`], [`timeout`], [`interval`], and the timer wheel behind them.
//!
//! [`sleep`] returns an [`ito::Future`](crate::Future), which several readers can share and
//! compose; [`Sleep`] is the one-awaiter future a tokio user expects (`.await` yields `()`,
//! dropping it removes its timer entry, it can be reset). [`Interval`] ticks at a fixed
//! period.
//!
//! ```
//! use std::time::Duration;
//! use ito::time::{Sleep, interval};
//! ito::block_on(async {
//!     Sleep::new(Duration::from_millis(1)).await;
//!     let mut every = interval(Duration::from_millis(1));
//!     let first = every.tick().await;
//!     assert!(every.tick().await > first);
//! });
//! ```
//!
//! Each runtime owns a timer thread (`ito-timer`, started by the runtime's first timer) that
//! drives a hierarchical timing wheel (`wheel.rs`). It sleeps exactly until the earliest
//! deadline (not rounded up to a tick), fires what is due, and runs each entry's callback,
//! which completes a promise or wakes a waker. Callbacks registered by users on those
//! promises are handed to a task (on the global runtime), so the timer thread never runs
//! user code.
//!
//! A timer goes to the runtime it is registered from, as a process name does: the runtime of
//! the task (or blocking job) that registers it, or the one entered by
//! [`Runtime::block_on`](crate::Runtime::block_on). Code outside every runtime (a plain
//! thread calling `ito::sleep(d).wait()`) and the global runtime's tasks use the global
//! runtime's timer thread. [`Sleep`], [`Timeout`] and [`Interval`] register on their first
//! pending poll.
//!
//! Dropping a runtime joins its timer thread and drops its pending timers unrun. A task of
//! that runtime waiting on one of them is cancelled (its [`Task`](crate::Task) reads
//! [`Failure::Cancelled`]); an [`ito::sleep`](sleep) future registered there fails with
//! [`Failure::Cancelled`]; a [`Sleep`] moved out of the runtime and polled elsewhere registers
//! again where it is polled.
//!
//! ```
//! use std::time::Duration;
//! let rt = ito::Runtime::builder().workers(1).build().unwrap();
//! let nap = rt.install(|| ito::sleep(Duration::from_secs(3600))); // on rt's timer thread
//! drop(rt); // joins rt's timer thread; its timers are dropped
//! assert_eq!(nap.wait(), Err(ito::Failure::Cancelled));
//! ```

mod driver;
mod interval;
mod sleep;
mod wheel;

use std::fmt;
use std::future::{Future as StdFuture, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use driver::call_at_detached;
pub(crate) use driver::{Driver, call_at, trace_timers};
pub use interval::{Interval, MissedTickBehavior, Tick, interval, interval_at};
pub use sleep::Sleep;
use sleep::Timer;

use crate::{Failure, Future, Promise};

/// A future that completes with `()` after `duration`.
///
/// Use `.await` in async code and `.wait()` in plain code; on a worker, `.wait()` hands the
/// worker's place to another thread while it sleeps.
///
/// ```
/// use std::time::{Duration, Instant};
/// let t = Instant::now();
/// ito::sleep(Duration::from_millis(5)).wait().unwrap();
/// assert!(t.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Future<()> {
    sleep_until(Instant::now() + duration)
}

/// A future that completes with `()` at `deadline`.
///
/// ```
/// use std::time::{Duration, Instant};
/// let at = Instant::now() + Duration::from_millis(2);
/// ito::block_on(ito::sleep_until(at)).unwrap();
/// assert!(Instant::now() >= at);
/// ```
pub fn sleep_until(deadline: Instant) -> Future<()> {
    let p = Promise::new();
    let f = p.future();
    if deadline <= Instant::now() {
        let _ = p.success(());
        return f;
    }
    let entry = CancelOnDrop(Some(p));
    call_at_detached(deadline, move || {
        let mut entry = entry;
        if let Some(p) = entry.0.take() {
            let _ = p.success(());
        }
    });
    f
}

/// A wheel entry's promise: completed by the entry, or failed with [`Failure::Cancelled`]
/// if the entry is dropped unfired (its runtime shut down).
struct CancelOnDrop(Option<Promise<()>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = p.try_failure(Failure::Cancelled);
        }
    }
}

/// Runs `fut` with a time limit: its output, or [`Failure::Timeout`] if `duration` passes
/// first (and `fut` is dropped).
///
/// ```
/// use std::time::Duration;
/// let r = ito::block_on(ito::timeout(Duration::from_millis(1), ito::Future::<u8>::never()));
/// assert_eq!(r, Err(ito::Failure::Timeout));
/// let r = ito::block_on(ito::timeout(Duration::from_secs(5), async { 3 }));
/// assert_eq!(r, Ok(3));
/// ```
pub fn timeout<F: IntoFuture>(duration: Duration, fut: F) -> Timeout<F::IntoFuture> {
    Timeout {
        fut: fut.into_future(),
        timer: Timer::new(Instant::now() + duration),
    }
}

/// The future of [`timeout`]: `fut`'s output, or [`Failure::Timeout`] once the deadline
/// passes. Dropping it drops `fut` and removes its timer entry.
///
/// ```
/// use std::time::Duration;
/// let t: ito::Timeout<_> = ito::timeout(Duration::from_secs(1), async { "in time" });
/// assert_eq!(ito::block_on(t), Ok("in time"));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    fut: F,
    timer: Timer,
}

impl<F: StdFuture> StdFuture for Timeout<F> {
    type Output = Result<F::Output, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` is structurally pinned; the other fields are never pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above; `fut` is not moved while `self` is pinned.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        if let Poll::Ready(v) = fut.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        this.timer.poll_elapsed(cx).map(|()| Err(Failure::Timeout))
    }
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("deadline", &self.timer.deadline())
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + Sync + 'static> Future<T> {
    /// This future's result, or [`Failure::Timeout`] if it takes longer than `duration`.
    ///
    /// The timer goes to the runtime here ([module docs](self)); if that runtime is dropped
    /// first, the timer goes with it and the result is this future's, whenever it comes.
    ///
    /// ```
    /// use std::time::Duration;
    /// let slow = ito::Future::<u8>::never().with_timeout(Duration::from_millis(1));
    /// assert_eq!(slow.wait(), Err(ito::Failure::Timeout));
    /// let fast = ito::Future::successful(1).with_timeout(Duration::from_secs(1));
    /// assert_eq!(fast.wait(), Ok(1));
    /// ```
    pub fn with_timeout(&self, duration: Duration) -> Future<T> {
        if self.is_completed() {
            return self.clone();
        }
        let p = Promise::new();
        let out = p.future();
        let p2 = p.clone();
        let handle = call_at(Instant::now() + duration, move || {
            p2.try_failure(Failure::Timeout);
        });
        self.inner().on_complete_raw(move |r| {
            p.try_complete(r.clone());
            handle.cancel();
        });
        out
    }
}
