//! The task state word.
//!
//! ```text
//! bit 0  SCHEDULED  a queue entry will run the task (or a waiter may claim it)
//! bit 1  RUNNING    one thread is running the body; nobody else may touch it
//! bit 2  NOTIFIED   woken while RUNNING: reschedule after this poll
//! bit 3  COMPLETE   the body finished (or was cancelled) and is dropped; terminal
//! ```
//!
//! Transitions (each one CAS, or one store where only the runner can write):
//!
//! | from                    | to                  | by                                   |
//! |-------------------------|---------------------|--------------------------------------|
//! | `SCHEDULED`             | `RUNNING`           | a queue entry, or a waiter claiming it ([`State::transition_to_running`]) |
//! | `RUNNING[\|NOTIFIED]`   | `0` / `SCHEDULED`   | the runner after a `Pending` poll ([`State::transition_to_idle`]) |
//! | `RUNNING[\|NOTIFIED]`   | `COMPLETE`          | the runner when the body is done     |
//! | `0`                     | `SCHEDULED`         | a waker; it must then enqueue the task ([`State::transition_to_notified`]) |
//! | `RUNNING`               | `RUNNING\|NOTIFIED` | a waker                              |
//!
//! Because running requires winning `SCHEDULED → RUNNING`, a task may sit in more than one
//! queue (a waiter claimed it and ran it inline, then a waker enqueued it again): every entry
//! but the one that wins is stale and is dropped when popped. The body never runs twice at
//! once and never after `COMPLETE`.

use crate::loom::{AtomicUsize, Ordering};

pub(crate) const SCHEDULED: usize = 0b0001;
pub(crate) const RUNNING: usize = 0b0010;
pub(crate) const NOTIFIED: usize = 0b0100;
pub(crate) const COMPLETE: usize = 0b1000;

/// What the runner must do after a `Pending` poll.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum AfterPoll {
    /// Nothing: a waker will enqueue the task.
    Idle,
    /// It was woken during the poll: enqueue it again.
    Reschedule,
}

/// The task state word.
pub(crate) struct State(AtomicUsize);

impl State {
    /// A task that is about to be enqueued for the first time.
    pub(crate) fn new_scheduled() -> Self {
        State(AtomicUsize::new(SCHEDULED))
    }

    /// Raw load, for assertions and tests.
    pub(crate) fn load(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// `SCHEDULED → RUNNING`. `false` if the task is running, done, or idle (a stale entry).
    #[inline]
    pub(crate) fn transition_to_running(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & (SCHEDULED | RUNNING | COMPLETE) != SCHEDULED {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(s, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// After a `Pending` poll: `RUNNING → 0`, or `RUNNING|NOTIFIED → SCHEDULED`.
    #[inline]
    pub(crate) fn transition_to_idle(&self) -> AfterPoll {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            debug_assert!(s & RUNNING != 0);
            let (next, after) = if s & NOTIFIED != 0 {
                (SCHEDULED, AfterPoll::Reschedule)
            } else {
                (0, AfterPoll::Idle)
            };
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return after,
                Err(actual) => s = actual,
            }
        }
    }

    /// The body is done (and dropped). Only the runner calls this.
    #[inline]
    pub(crate) fn transition_to_complete(&self) {
        self.0.store(COMPLETE, Ordering::Release);
    }

    /// A wake-up. Returns `true` if the caller moved the task from idle to `SCHEDULED` and so
    /// must enqueue it.
    #[inline]
    pub(crate) fn transition_to_notified(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let next = if s & COMPLETE != 0 || s & SCHEDULED != 0 {
                return false;
            } else if s & RUNNING != 0 {
                if s & NOTIFIED != 0 {
                    return false;
                }
                s | NOTIFIED
            } else {
                SCHEDULED
            };
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next == SCHEDULED,
                Err(actual) => s = actual,
            }
        }
    }

    /// Whether the body finished.
    pub(crate) fn is_complete(&self) -> bool {
        self.0.load(Ordering::Acquire) & COMPLETE != 0
    }
}
