//! A count-down latch that remembers when it reached zero.

use super::*;

pub(super) struct Latch {
    pub(super) left: AtomicUsize,
    pub(super) wrong: AtomicBool,
    pub(super) done_at: Mutex<Option<Instant>>,
    pub(super) cv: Condvar,
}

impl Latch {
    pub(super) fn new(n: usize) -> Arc<Latch> {
        Arc::new(Latch {
            left: AtomicUsize::new(n),
            wrong: AtomicBool::new(false),
            done_at: Mutex::new(None),
            cv: Condvar::new(),
        })
    }

    /// One reader or callback is done; `right` says whether it saw [`VALUE`].
    pub(super) fn count_down(&self, right: bool) {
        if !right {
            self.wrong.store(true, Ordering::Relaxed);
        }
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let now = Instant::now();
            *self.done_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            self.cv.notify_all();
        }
    }

    /// Waits for zero: when it was reached, and whether everyone saw the right value.
    pub(super) fn wait(&self) -> (Instant, bool) {
        let mut g = self.done_at.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(at) = *g {
                return (at, !self.wrong.load(Ordering::Relaxed));
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What a run with a completer measured.
pub(super) struct Timed {
    pub(super) seconds: f64,
    pub(super) after_complete: Option<f64>,
    pub(super) ok: bool,
}
