//! Helpers shared by the `sync_*.rs` and `channel.rs` tests: wakers that record, a manual
//! poll, runtimes, and waits that fail a test instead of hanging it.
#![allow(dead_code)] // each test file uses its own subset

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Upper bound for waits that are expected to end (reached only if something hangs).
pub(crate) const LONG: Duration = Duration::from_secs(10);

/// Waits for `f`, failing the test instead of hanging.
pub(crate) fn get<T: Clone>(f: &ito::Future<T>) -> T {
    f.wait_timeout(LONG)
        .expect("the future did not complete in time")
        .expect("the task failed")
}

/// A runtime with `workers` workers.
pub(crate) fn rt(workers: usize) -> ito::Runtime {
    ito::Runtime::builder().workers(workers).build().unwrap()
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
pub(crate) fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
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
