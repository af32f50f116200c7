//! The counters the parallel walk shares: the stop flag, the in-flight count and the free
//! permits. This is the whole of the walk's atomic state machine; its loom models are in
//! `src/tests/loom_tally.rs`.
//!
//! # Fields and who touches them
//!
//! - `stop` (`false` → `true`, never back): set by [`Tally::cancel`] from any task (the match
//!   that reaches `--max-results`, a closed stdout, a panic); read by every task before each
//!   directory and between entries. It publishes nothing (each task only stops early), so
//!   both sides are `Relaxed`: a task that misses the store reads one more directory.
//! - `in_flight`: tasks spawned and not yet finished. The spawner adds one *before* it spawns
//!   (while it is itself in flight, so the count cannot pass through zero meanwhile); a task
//!   subtracts one when it ends, and the one that takes it to zero is the last: it completes
//!   the walk. As with `Arc`'s count, the increment is `Relaxed` and the decrement `Release`
//!   followed by an `Acquire` fence in the last task, so everything every task did happens
//!   before the walk is reported complete.
//! - `permits`: how many more tasks may exist at once (document 002's non-blocking
//!   semaphore). [`Tally::try_acquire`] takes one if any is left and never waits; the caller
//!   that gets none does the work itself. A task gives its permit back when it ends.

use crate::sync::{AtomicBool, AtomicUsize, Ordering, fence};

/// Whether [`Tally::leave`] was the last task out.
#[must_use = "the last task out must complete the walk"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leave {
    /// Other tasks are still in flight.
    Others,
    /// This was the last task: the walk is over.
    Last,
}

/// Stop flag, in-flight count and permits of one walk.
#[derive(Debug)]
pub(crate) struct Tally {
    stop: AtomicBool,
    in_flight: AtomicUsize,
    permits: AtomicUsize,
}

impl Tally {
    /// `permits` tasks may exist beyond the initial ones; `in_flight` tasks are already
    /// counted (the roots, spawned by the caller).
    pub(crate) fn new(permits: usize, in_flight: usize) -> Tally {
        Tally {
            stop: AtomicBool::new(false),
            in_flight: AtomicUsize::new(in_flight),
            permits: AtomicUsize::new(permits),
        }
    }

    /// Takes a permit if one is free; never waits.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        let mut n = self.permits.load(Ordering::Relaxed);
        while n > 0 {
            match self
                .permits
                .compare_exchange_weak(n, n - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Gives a permit back.
    #[inline]
    pub(crate) fn release(&self) {
        self.permits.fetch_add(1, Ordering::Release);
    }

    /// Counts one more task in flight; call it from a task that is itself in flight (or
    /// before the walk starts), before spawning the new one.
    #[inline]
    pub(crate) fn enter(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one task out.
    #[inline]
    pub(crate) fn leave(&self) -> Leave {
        if self.in_flight.fetch_sub(1, Ordering::Release) != 1 {
            return Leave::Others;
        }
        // Pairs with every other task's `Release` decrement: their work happens before ours.
        fence(Ordering::Acquire);
        Leave::Last
    }

    /// Asks every task to stop at its next check.
    #[cold]
    pub(crate) fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn permits_run_out_and_come_back() {
        let t = Tally::new(2, 1);
        assert!(t.try_acquire() && t.try_acquire());
        assert!(!t.try_acquire());
        t.release();
        assert!(t.try_acquire());
    }

    #[test]
    fn last_leave_is_reported_once() {
        let t = Tally::new(0, 1);
        t.enter();
        assert_eq!(t.leave(), Leave::Others);
        assert_eq!(t.leave(), Leave::Last);
    }

    #[test]
    fn cancel_is_seen() {
        let t = Tally::new(0, 1);
        assert!(!t.is_cancelled());
        t.cancel();
        assert!(t.is_cancelled());
    }
}
