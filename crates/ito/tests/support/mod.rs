//! Helpers shared by the integration tests: waits that fail a test instead of hanging it,
//! quiet expected panics, wakers that record, a manual poll, runtimes, and a high-water mark.
#![allow(dead_code)] // each test file uses its own subset

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use ito::{Failure, Future, Task};

pub(crate) mod derive;
#[cfg(unix)]
pub(crate) mod net;

/// An error type of a program's own, for tests of errors that keep their type.
#[derive(Debug, PartialEq)]
pub(crate) struct Overheated(pub(crate) u32);

impl std::fmt::Display for Overheated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "overheated at {} degrees", self.0)
    }
}

impl std::error::Error for Overheated {}

/// Upper bound for waits that are expected to end (reached only if something hangs).
pub(crate) const LONG: Duration = Duration::from_secs(10);

/// A handle [`get`] can wait on: a shared [`Future`] (by reference) or a [`Task`].
pub(crate) trait Waitable<T> {
    /// Waits at most `d` for the result.
    fn wait_for(self, d: Duration) -> Option<Result<T, Failure>>;
}

impl<T: Clone> Waitable<T> for &Future<T> {
    fn wait_for(self, d: Duration) -> Option<Result<T, Failure>> {
        self.wait_timeout(d)
    }
}

impl<T> Waitable<T> for &mut Task<T> {
    fn wait_for(self, d: Duration) -> Option<Result<T, Failure>> {
        self.wait_timeout(d)
    }
}

impl<T> Waitable<T> for Task<T> {
    fn wait_for(mut self, d: Duration) -> Option<Result<T, Failure>> {
        self.wait_timeout(d)
    }
}

/// Waits for `f`'s result, failing the test instead of hanging.
pub(crate) fn get<T>(f: impl Waitable<T>) -> Result<T, Failure> {
    f.wait_for(LONG).expect("future did not complete in time")
}

/// Waits for `f`'s value, failing the test if the task failed or if it hangs.
pub(crate) fn get_ok<T>(f: impl Waitable<T>) -> T {
    get(f).expect("the task failed")
}

/// A runtime with `workers` workers.
pub(crate) fn rt(workers: usize) -> ito::Runtime {
    ito::Runtime::builder().workers(workers).build().unwrap()
}

/// Keeps the panics these tests provoke on purpose (messages starting with `expected:`) out of
/// the test output.
pub(crate) fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned());
            if msg.is_some_and(|m| m.starts_with("expected:")) {
                return;
            }
            prev(info);
        }));
    });
}

/// The message of a panic payload (`panic!` with a literal or with arguments), or "".
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Returns `Pending` once (waking itself), then `Ready`: one suspension point.
pub(crate) struct YieldOnce(pub(crate) bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A waker that counts its wake-ups.
#[derive(Default)]
pub(crate) struct CountWaker(AtomicUsize);

impl CountWaker {
    pub(crate) fn new() -> (Arc<CountWaker>, Waker) {
        let c = Arc::new(CountWaker::default());
        let w = Waker::from(c.clone());
        (c, w)
    }
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker that panics when woken (as a foreign executor's might), with a message
/// [`quiet_expected_panics`] keeps quiet.
pub(crate) struct PanicWaker;

impl PanicWaker {
    pub(crate) fn waker() -> Waker {
        Waker::from(Arc::new(PanicWaker))
    }
}

impl Wake for PanicWaker {
    fn wake(self: Arc<Self>) {
        panic!("expected: this waker panics");
    }
}

/// A waker that appends its index to a shared log when woken (wake order).
pub(crate) struct LogWaker {
    index: usize,
    log: Arc<Mutex<Vec<usize>>>,
}

impl LogWaker {
    pub(crate) fn waker(index: usize, log: &Arc<Mutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(LogWaker {
            index,
            log: log.clone(),
        }))
    }
}

impl Wake for LogWaker {
    fn wake(self: Arc<Self>) {
        self.log.lock().unwrap().push(self.index);
    }
}

/// Polls `f` once with `w`.
pub(crate) fn poll_once<F: std::future::Future + ?Sized>(
    f: Pin<&mut F>,
    w: &Waker,
) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(w))
}

/// Tracks how many are inside a section at once and the most there ever were.
#[derive(Default)]
pub(crate) struct HighWater {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl HighWater {
    pub(crate) fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
    }
    pub(crate) fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    pub(crate) fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
    pub(crate) fn now(&self) -> usize {
        self.now.load(Ordering::SeqCst)
    }
}

/// The names of this process's threads (`/proc/self/task/*/comm`), one per thread.
#[cfg(target_os = "linux")]
pub(crate) fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("read /proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim_end().to_string())
        .collect()
}

/// How many of this process's threads are named `name`.
#[cfg(target_os = "linux")]
pub(crate) fn threads_named(name: &str) -> usize {
    thread_names().iter().filter(|n| *n == name).count()
}
