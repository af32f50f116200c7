//! The one spin-before-park policy.
//!
//! Parking and being woken costs a futex wait, a futex wake and two context switches, a few
//! microseconds in all. A thread that expects its condition within about that time looks again
//! for a while before it parks: it then pays at most twice what the better choice would have.
//! The budgets, and the runs that chose them, are in `docs/scheduler.md`.
//!
//! Two kinds of thread spin, with one loop:
//! - [`Spin::outside`]: a thread that is not a worker, waiting for a result (`block_on`,
//!   `Future::wait`), looks for 5 µs. It never yields: the result comes from a worker on
//!   another CPU.
//! - [`Spin::idle`]: a worker out of work keeps looking for `Builder::idle_spin`. After a few
//!   rounds it yields its CPU between looks, so a machine with more runnable threads than CPUs
//!   runs the others.
//!
//! - [`Backoff`]: a thread that retries an operation before it parks (a lock, a semaphore or
//!   a channel operation in [`spin_briefly`]; a join's owner waiting for its stolen half, between
//!   attempts to take part of that half's work) uses crossbeam's exponential backoff: spin
//!   hints doubling up to 64, then a few yields, about as long as a park and a wake-up.
//!
//! A worker that waits for a result never spins: it gives its place away instead, because its
//! spinning would hold the CPU that the awaited task needs.

use std::time::{Duration, Instant};

pub(crate) use crossbeam_utils::Backoff;

/// How long a thread outside the runtime spins for a result before it parks.
const OUTSIDE_WINDOW: Duration = Duration::from_micros(5);
/// Rounds an idle worker spins before it starts yielding between looks.
const IDLE_SPIN_ROUNDS: u32 = 16;
/// Spin-loop hints an idle worker makes between two looks.
const IDLE_HINTS_PER_LOOK: u32 = 32;
/// Looks a thread outside the runtime makes between two reads of the clock.
const OUTSIDE_LOOKS_PER_CLOCK: u32 = 32;

/// A spin policy: how long to look, how often, and whether to yield the CPU.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Spin {
    window: Duration,
    hints_per_look: u32,
    looks_per_clock: u32,
    /// Rounds after which each look is preceded by a yield instead of hints.
    yield_after: Option<u32>,
}

impl Spin {
    /// A thread outside the runtime, waiting for a result.
    pub(crate) const fn outside() -> Spin {
        Spin {
            window: OUTSIDE_WINDOW,
            hints_per_look: 1,
            looks_per_clock: OUTSIDE_LOOKS_PER_CLOCK,
            yield_after: None,
        }
    }

    /// A worker that found no work, for `window`.
    pub(crate) const fn idle(window: Duration) -> Spin {
        Spin {
            window,
            hints_per_look: IDLE_HINTS_PER_LOOK,
            looks_per_clock: 1,
            yield_after: Some(IDLE_SPIN_ROUNDS),
        }
    }

    /// Whether this policy spins at all.
    pub(crate) fn is_off(&self) -> bool {
        self.window.is_zero()
    }

    /// Calls `look` until it returns `Some`, for at most the window and never past `deadline`.
    /// A deadline that has passed means no spin at all: a zero timeout is a poll.
    #[inline]
    pub(crate) fn run<R>(
        &self,
        deadline: Option<Instant>,
        mut look: impl FnMut() -> Option<R>,
    ) -> Option<R> {
        #[cfg(loom)]
        {
            // A model explores every interleaving: two looks stand for any number.
            let _ = deadline;
            if self.is_off() {
                return None;
            }
            for _ in 0..2 {
                if let Some(r) = look() {
                    return Some(r);
                }
                loom::thread::yield_now();
            }
            None
        }
        #[cfg(not(loom))]
        {
            let start = Instant::now();
            let end = match deadline {
                Some(d) if d <= start => return None,
                Some(d) => d.min(start + self.window),
                None => start + self.window,
            };
            let mut round = 0u32;
            loop {
                for _ in 0..self.looks_per_clock {
                    if let Some(r) = look() {
                        return Some(r);
                    }
                    if self.yield_after.is_some_and(|n| round >= n) {
                        std::thread::yield_now();
                    } else {
                        for _ in 0..self.hints_per_look {
                            std::hint::spin_loop();
                        }
                    }
                }
                round = round.saturating_add(1);
                if Instant::now() >= end {
                    return look();
                }
            }
        }
    }
}

/// Retries `attempt` with [`Backoff`] before a blocking call of `sync` or `channel` parks: a wait shorter than a park and a wake-up (two
/// context switches) ends here. `attempt` returns `Ok` when it is done (a success or a final
/// error) and `Err` with its input to be tried again; the last `Err` is returned.
pub(crate) fn spin_briefly<S, R>(
    mut state: S,
    mut attempt: impl FnMut(S) -> Result<R, S>,
) -> Result<R, S> {
    let backoff = Backoff::new();
    loop {
        state = match attempt(state) {
            Ok(done) => return Ok(done),
            Err(again) => again,
        };
        if backoff.is_completed() {
            return Err(state);
        }
        backoff.snooze();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// The outside spin checks its condition repeatedly, stops as soon as it holds, and does
    /// not spin at all once the caller's deadline has passed (a zero `wait_timeout`).
    #[test]
    fn the_outside_spin_stops_when_ready_and_at_the_deadline() {
        let calls = Cell::new(0u32);
        let never = || {
            calls.set(calls.get() + 1);
            None::<()>
        };
        assert!(Spin::outside().run(None, never).is_none());
        assert!(
            calls.get() >= 32,
            "no deadline: it spins ({} checks)",
            calls.get()
        );

        calls.set(0);
        let third = || {
            calls.set(calls.get() + 1);
            (calls.get() == 3).then_some(())
        };
        assert!(Spin::outside().run(None, third).is_some());
        assert_eq!(calls.get(), 3);

        calls.set(0);
        assert!(Spin::outside().run(Some(Instant::now()), never).is_none());
        assert!(
            calls.get() <= 1,
            "a passed deadline still spun ({} checks)",
            calls.get()
        );
    }

    /// A zero idle window does not spin; a short one ends by itself.
    #[test]
    fn the_idle_spin_ends_with_its_window() {
        assert!(Spin::idle(Duration::ZERO).is_off());
        let calls = Cell::new(0u32);
        let start = Instant::now();
        let r = Spin::idle(Duration::from_micros(200)).run(None, || {
            calls.set(calls.get() + 1);
            None::<()>
        });
        assert!(r.is_none());
        assert!(calls.get() >= 2);
        assert!(start.elapsed() >= Duration::from_micros(200));
    }
}
