//! The task state word.
//!
//! ```text
//! bit 0  SCHEDULED  a queue entry will run the task (or a waiter may claim it)
//! bit 1  RUNNING    one thread is running the body; nobody else may touch it
//! bit 2  NOTIFIED   woken while RUNNING: reschedule after this poll
//! bit 3  COMPLETE   the body finished (or was cancelled) and is dropped; terminal
//! bit 4  CANCELLED  cancellation was requested: whoever next wins the body drops it instead
//!                   of polling it (a running synchronous body sees it in ito's blocking calls)
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
//! | `0`                     | `SCHEDULED\|CANCELLED` | a canceller; it must then enqueue the task ([`State::request_cancel`]) |
//! | `SCHEDULED` or `RUNNING` | `… \|CANCELLED`    | a canceller                          |
//!
//! `CANCELLED` is never cleared before `COMPLETE`: `SCHEDULED|CANCELLED → RUNNING|CANCELLED`
//! tells the winner to cancel instead of poll ([`Claim::Cancel`]), and a runner whose poll
//! returned `Pending` finds it in [`State::transition_to_idle`] and cancels right away
//! ([`AfterPoll::Cancel`]). A poll that returns `Ready` completes normally: the result stands.
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
pub(crate) const CANCELLED: usize = 0b1_0000;

/// What the winner of `SCHEDULED → RUNNING` must do.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum Claim {
    /// Poll (or run) the body.
    Run,
    /// Cancellation was requested: drop the body and complete with `Cancelled`.
    Cancel,
    /// Someone else runs it, ran it, or it is idle: this entry is stale.
    Lost,
}

/// What [`State::request_cancel`] left the caller to do.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum CancelRequest {
    /// The task was idle: the caller moved it to `SCHEDULED` and must enqueue it.
    Schedule,
    /// The task is queued: whoever dequeues it cancels it.
    Queued,
    /// The task is running: it cancels itself after this poll, or (a synchronous body) sees
    /// cancellation in ito's blocking calls, which the caller should wake.
    Running,
    /// Already complete or already cancelled: nothing to do.
    Nothing,
}

/// What the runner must do after a `Pending` poll.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum AfterPoll {
    /// Nothing: a waker will enqueue the task.
    Idle,
    /// It was woken during the poll: enqueue it again.
    Reschedule,
    /// Cancellation was requested: the state stays `RUNNING`; drop the body and complete.
    Cancel,
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

    /// `SCHEDULED → RUNNING` (keeping `CANCELLED`). [`Claim::Lost`] if the task is running,
    /// done, or idle (a stale entry).
    #[inline]
    pub(crate) fn transition_to_running(&self) -> Claim {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & (SCHEDULED | RUNNING | COMPLETE) != SCHEDULED {
                return Claim::Lost;
            }
            match self.0.compare_exchange_weak(
                s,
                RUNNING | (s & CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if s & CANCELLED != 0 => return Claim::Cancel,
                Ok(_) => return Claim::Run,
                Err(actual) => s = actual,
            }
        }
    }

    /// After a `Pending` poll: `RUNNING → 0`, or `RUNNING|NOTIFIED → SCHEDULED`; or, if
    /// cancellation was requested, no change and [`AfterPoll::Cancel`].
    #[inline]
    pub(crate) fn transition_to_idle(&self) -> AfterPoll {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            debug_assert!(s & RUNNING != 0);
            if s & CANCELLED != 0 {
                return AfterPoll::Cancel;
            }
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
        // A store suffices: wakers and cancellers CAS concurrently, and an RMW always reads
        // the latest value, so they either precede this store or see COMPLETE. Loom does not
        // apply that rule to plain stores (tokio-rs/loom#254: a store can squeeze between an
        // RMW's read and write), so the models use the equivalent swap.
        #[cfg(not(loom))]
        self.0.store(COMPLETE, Ordering::Release);
        #[cfg(loom)]
        self.0.swap(COMPLETE, Ordering::Release);
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

    /// Requests cancellation (sets `CANCELLED`); see [`CancelRequest`] for the caller's part.
    pub(crate) fn request_cancel(&self) -> CancelRequest {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & (COMPLETE | CANCELLED) != 0 {
                return CancelRequest::Nothing;
            }
            let (next, then) = if s & RUNNING != 0 {
                (s | CANCELLED, CancelRequest::Running)
            } else if s & SCHEDULED != 0 {
                (s | CANCELLED, CancelRequest::Queued)
            } else {
                (SCHEDULED | CANCELLED, CancelRequest::Schedule)
            };
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return then,
                Err(actual) => s = actual,
            }
        }
    }

    /// Whether cancellation was requested (and the body not yet finished).
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire) & (CANCELLED | COMPLETE) == CANCELLED
    }

    /// Whether the body finished.
    pub(crate) fn is_complete(&self) -> bool {
        self.0.load(Ordering::Acquire) & COMPLETE != 0
    }
}
