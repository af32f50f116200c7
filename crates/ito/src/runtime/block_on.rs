//! [`block_on`]: run a future to completion on the current thread.

use std::future::{Future as StdFuture, IntoFuture};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use crate::task::cancel::Watch;

struct ThreadWaker {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }
}

/// Runs `fut` (anything `.await`able, an [`ito::Future`](crate::Future) too) to completion
/// on the current thread, parking it between polls.
///
/// Tasks the future spawns go to the current runtime (the global one, unless called from a
/// worker or inside [`Runtime::block_on`](crate::Runtime::block_on)). Called on a worker
/// thread, it hands the worker's place to a compensation thread while it parks, like
/// [`Future::wait`](crate::Future::wait).
///
/// ```
/// let v = ito::block_on(async {
///     let a = ito::spawn(async { 1 });
///     let b = ito::spawn_fn(|| 2);
///     a.await.unwrap() + b.await.unwrap()
/// });
/// assert_eq!(v, 3);
/// ```
pub fn block_on<F: IntoFuture>(fut: F) -> F::Output {
    match drive(fut.into_future(), false) {
        Some(v) => v,
        None => unreachable!("block_on is not cancellable"),
    }
}

/// [`block_on`] for ito's own blocking calls (`acquire_blocking`, `recv_blocking`, ...):
/// `Err(Failure::Cancelled)` instead of the output when the synchronous task running on this
/// thread is cancelled before `fut` completes (`fut` is then dropped).
pub(crate) fn block_on_cancellable<F: IntoFuture>(fut: F) -> Result<F::Output, crate::Failure> {
    drive(fut.into_future(), true).ok_or(crate::Failure::Cancelled)
}

/// Counts a thread that is not a worker as running in `block_on` on its runtime while it is
/// not parked (`Idle::enter_outside`): it holds a CPU, so the runtime may defer waking a
/// worker for what it spawns (see `idle.rs`, "Deferred wake-ups").
struct Running {
    /// The runtime its spawns go to; `None` until the global one is started.
    shared: Option<&'static super::Shared>,
    counted: bool,
}

impl Running {
    /// Counts the thread in, if its runtime is running.
    fn start(&mut self) {
        if self.shared.is_none() {
            self.shared = super::current_if_started();
        }
        if let Some(s) = self.shared {
            s.enter_outside();
            self.counted = true;
        }
    }

    /// Counts the thread out, and notifies for queued work whose wake-up it deferred.
    fn stop(&mut self) {
        if let Some(s) = self.shared.filter(|_| self.counted) {
            self.counted = false;
            s.leave_outside();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `fut` to completion on this thread; `None` if `cancellable` and the synchronous
/// task running on this thread is cancelled first.
fn drive<F: StdFuture>(fut: F, cancellable: bool) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let tw = Arc::new(ThreadWaker {
        thread: thread::current(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(tw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut watch = None;
    // Consumes a wake-up, if there is one.
    let woken =
        || tw.notified.load(Ordering::Relaxed) && tw.notified.swap(false, Ordering::Acquire);
    // Off the runtime's workers, spin a little before parking (`wait::spin_outside`).
    let outside = super::worker::current_ctx().is_none();
    let mut running = Running {
        shared: None,
        counted: false,
    };
    if outside {
        running.start();
    }
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        if cancellable {
            // Register before checking, so a cancellation after the check unparks us.
            if watch.is_none() {
                watch = Watch::new();
            }
            if watch.as_ref().is_some_and(Watch::cancelled) {
                return None;
            }
        }
        let spun = || outside && super::wait::spin_outside(woken, None);
        if !(woken() || spun()) {
            running.stop();
            super::wait::blocking_park(|| {
                while !woken() {
                    if watch.as_ref().is_some_and(Watch::cancelled) {
                        return;
                    }
                    thread::park();
                }
            });
            if outside {
                running.start();
            }
        }
    }
}
