//! Timers: [`sleep`], [`timeout`], and the timer wheel behind them.
//!
//! One timer thread per process drives a hierarchical timing wheel (`wheel.rs`). It sleeps
//! exactly until the earliest deadline (not rounded up to a tick), fires what is due, and runs
//! each entry's callback, which completes a promise or wakes a waker. Callbacks registered by
//! users on those promises are handed to a task (on the global runtime), so the timer thread
//! never runs user code.

mod driver;
mod wheel;

use std::future::{Future as StdFuture, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

pub(crate) use driver::{TimerHandle, call_at};

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
    call_at(deadline, move || {
        let _ = p.success(());
    })
    .detach();
    f
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
        deadline: Instant::now() + duration,
        timer: None,
    }
}

/// The future of [`timeout`].
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    fut: F,
    deadline: Instant,
    timer: Option<(TimerHandle, Arc<Mutex<TimerSlot>>)>,
}

#[derive(Default)]
struct TimerSlot {
    fired: bool,
    waker: Option<Waker>,
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
        if Instant::now() >= this.deadline {
            return Poll::Ready(Err(Failure::Timeout));
        }
        match &this.timer {
            Some((_, slot)) => {
                let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
                if s.fired {
                    return Poll::Ready(Err(Failure::Timeout));
                }
                if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    s.waker = Some(cx.waker().clone());
                }
            }
            None => {
                let slot = Arc::new(Mutex::new(TimerSlot {
                    fired: false,
                    waker: Some(cx.waker().clone()),
                }));
                let s2 = slot.clone();
                let handle = call_at(this.deadline, move || {
                    let w = {
                        let mut s = s2.lock().unwrap_or_else(|e| e.into_inner());
                        s.fired = true;
                        s.waker.take()
                    };
                    if let Some(w) = w {
                        w.wake();
                    }
                });
                this.timer = Some((handle, slot));
            }
        }
        Poll::Pending
    }
}

impl<F> Drop for Timeout<F> {
    fn drop(&mut self) {
        if let Some((h, _)) = self.timer.take() {
            h.cancel();
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Future<T> {
    /// This future's result, or [`Failure::Timeout`] if it takes longer than `duration`.
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
