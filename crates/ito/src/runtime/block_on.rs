//! [`block_on`]: run a future to completion on the current thread.

use super::park::{Blocker, CountedOutside, Spin, Unblocker, park_blocked};
use crate::task::cancel::Watch;
use crate::trace::Why;
use std::future::{Future as StdFuture, IntoFuture};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

struct ThreadWaker {
    who: Unblocker,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.notified.swap(true, Ordering::Release) {
            self.who.unblock();
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

/// Polls `fut` to completion on this thread; `None` if `cancellable` and the synchronous
/// task running on this thread is cancelled first.
fn drive<F: StdFuture>(fut: F, cancellable: bool) -> Option<F::Output> {
    let mut fut = pin!(fut);
    // On a worker loop that may suspend, parking suspends the loop; elsewhere, the thread.
    let blocker = Blocker::current();
    let tw = Arc::new(ThreadWaker {
        who: blocker.unblocker(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(tw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut watch = None;
    // Consumes a wake-up, if there is one.
    let woken =
        || tw.notified.load(Ordering::Relaxed) && tw.notified.swap(false, Ordering::Acquire);
    // Off the runtime's workers, spin a little before parking (`park/spin.rs`).
    let outside = super::worker::current_ctx().is_none();
    let running = outside.then(CountedOutside::enter);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        if cancellable {
            // Register before checking, so a cancellation after the check unparks us.
            if watch.is_none() {
                watch = Watch::new(&blocker);
            }
            if watch.as_ref().is_some_and(Watch::cancelled) {
                return None;
            }
        }
        let spun = || {
            outside
                && Spin::outside()
                    .run(None, || woken().then_some(()))
                    .is_some()
        };
        if !(woken() || spun()) {
            // Parking counts this thread out of `block_on`'s running threads meanwhile.
            park_blocked(Why::BlockOn, &blocker, || {
                while !woken() {
                    if watch.as_ref().is_some_and(Watch::cancelled) {
                        return;
                    }
                    blocker.park();
                }
            });
            if let Some(r) = &running {
                r.resume();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Mutex;
    use std::thread;
    use std::time::{Duration, Instant};

    use super::*;

    /// A future another thread completes.
    #[derive(Default)]
    struct Gate {
        open: AtomicBool,
        waker: Mutex<Option<Waker>>,
    }

    impl Gate {
        fn open(&self) {
            self.open.store(true, Ordering::Release);
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }

        async fn wait(&self) {
            std::future::poll_fn(|cx| {
                *self.waker.lock().unwrap() = Some(cx.waker().clone());
                if self.open.load(Ordering::Acquire) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await
        }
    }

    /// A thread parked in a nested `block_on` (as ito's own blocking calls are), or in
    /// `Future::wait`, inside a `block_on`, is not counted as running: else wake-ups would be
    /// deferred for it, and its runtime's watcher kept polling, while it sleeps.
    #[test]
    fn a_thread_parked_inside_block_on_is_not_counted_as_running() {
        let rt = crate::Runtime::builder().workers(1).build().unwrap();
        let idle = &rt.shared.sleep;
        // Waits until the thread is counted as `running` or not, then opens `gate`; after
        // 10 s (a hang guard), opens it anyway. Returns whether it saw the count.
        let open_when = |running: bool, gate: Arc<Gate>| {
            thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                let mut seen = idle.has_outside() == running;
                while !seen && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(1));
                    seen = idle.has_outside() == running;
                }
                gate.open();
                seen
            })
        };
        rt.block_on(async {
            assert!(idle.has_outside(), "polling counts");
            let gate = Arc::new(Gate::default());
            let opener = open_when(false, gate.clone());
            crate::block_on(gate.wait());
            assert!(idle.has_outside(), "counted again after the nested park");
            assert!(
                opener.join().unwrap(),
                "counted while parked in a nested block_on"
            );

            let gate = Arc::new(Gate::default());
            let opener = open_when(false, gate.clone());
            let g = gate.clone();
            // Runs on the worker until the opener opens the gate.
            let task = crate::spawn_fn(move || {
                while !g.open.load(Ordering::Acquire) {
                    thread::sleep(Duration::from_millis(1));
                }
            });
            assert_eq!(task.wait(), Ok(()));
            assert!(idle.has_outside(), "counted again after the wait");
            assert!(
                opener.join().unwrap(),
                "counted while parked in Future::wait"
            );
        });
        assert!(!idle.has_outside(), "counted out on return");
    }

    /// A `block_on` that blocks outside ito (an idle server's `accept`) while every worker
    /// sleeps does not keep a watcher waking every `WATCH_PERIOD`: with no worker awake nothing
    /// is deferred, so the watcher stops at its first timeout.
    #[test]
    fn the_watcher_stops_when_every_worker_sleeps() {
        let rt = crate::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(10);
            while rt.metrics().sleeping < 2 && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(rt.metrics().sleeping, 2, "both workers fall asleep");
            // Past the first watch period: the watcher has looked once and stopped.
            thread::sleep(Duration::from_millis(20));
            let before = rt.metrics().parks;
            thread::sleep(Duration::from_millis(200));
            let parks = rt.metrics().parks - before;
            // Watching, it would park about 200 times; stopped, it does not wake at all.
            assert!(
                parks < 20,
                "{parks} parks in 200 ms with every worker asleep"
            );
        });
    }
}
