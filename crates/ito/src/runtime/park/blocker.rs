//! How the code that waits in ito blocks: by suspending the worker loop it runs on, or by
//! parking its thread.
//!
//! Every blocking wait in ito (`Future::wait`, `block_on`, an STM `retry`, and the blocking
//! calls built on them) takes a [`Blocker`] for the current context, registers the
//! blocker's [`Unblocker`] wherever the awaited event will come from, and parks through the
//! blocker until the event has come. A `Blocker` behaves like a thread's park token (an
//! unblock before the park makes the park return at once; a park may return spuriously, so
//! callers re-check their condition), and it has two forms:
//!
//! - **Loop**: on a worker thread, running on one of its loop stacks (`runtime/loops.rs`), with
//!   no join of its own in progress. Parking suspends that loop, with the waiting code on its
//!   stack; the worker thread goes on with another loop. An unblock queues the loop on its
//!   home thread, which resumes it there.
//! - **Thread**: anywhere else (a thread that is not a worker, a worker inside a `join`, a
//!   worker that could not get a stack). Parking parks the thread; a worker hands its place to
//!   another thread meanwhile (`park_blocked`, `WorkerCtx::enter_blocking`).

use std::sync::Arc;
use std::time::Instant;

use crate::loom::thread::{self, Thread};
use crate::loom::{AtomicUsize, Ordering};
use crate::runtime::worker::{self, WorkerCtx};

/// Nothing pending.
const EMPTY: usize = 0;
/// An unblock came and has not been consumed by a park yet.
const NOTIFIED: usize = 1;
/// The loop is suspended (or about to be) and waits to be queued by an unblock.
const PARKED: usize = 2;

/// The park token of one worker loop: the state word alone, so that its loom model
/// (`tests/loom_park.rs`) runs this code.
///
/// The owner moves `EMPTY → PARKED` before it suspends and `→ EMPTY` once resumed; an unblock
/// moves any state to `NOTIFIED`, and the one that finds `PARKED` queues the loop. So a
/// suspended loop is queued exactly once per suspension, and an unblock that comes before the
/// suspension is consumed by it instead of being lost.
#[derive(Debug, Default)]
pub(crate) struct LoopPark(AtomicUsize);

impl LoopPark {
    pub(crate) fn new() -> LoopPark {
        LoopPark(AtomicUsize::new(EMPTY))
    }

    /// Owner, before suspending: `true` if it must suspend (it is now `PARKED`); `false` if an
    /// unblock was pending (consumed now).
    pub(crate) fn try_park(&self) -> bool {
        if self
            .0
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return false;
        }
        match self
            .0
            .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            // An unblock came in between.
            Err(_) => {
                self.0.swap(EMPTY, Ordering::Acquire);
                false
            }
        }
    }

    /// Owner, once resumed: consumes the unblock that queued it (and any that came since).
    pub(crate) fn resumed(&self) {
        let was = self.0.swap(EMPTY, Ordering::Acquire);
        debug_assert_eq!(was, NOTIFIED, "a loop resumed without an unblock");
    }

    /// Any thread: records an unblock. Returns whether the owner is suspended and must be
    /// queued (by this caller, and by no other).
    pub(crate) fn unblock(&self) -> bool {
        self.0.swap(NOTIFIED, Ordering::AcqRel) == PARKED
    }
}

/// The handle that ends a [`Blocker`]'s park: cloned into whatever will signal the event.
#[derive(Clone, Debug)]
pub(crate) enum Unblocker {
    /// Unparks a thread.
    Thread(Thread),
    /// Queues a suspended worker loop on its home thread.
    Loop(Arc<crate::runtime::loops::LoopToken>),
}

impl Unblocker {
    /// Ends the matching park (or makes the next one return at once).
    pub(crate) fn unblock(&self) {
        match self {
            Unblocker::Thread(t) => t.unpark(),
            Unblocker::Loop(l) => l.unblock(),
        }
    }
}

/// How the current context blocks (see the module docs).
pub(crate) struct Blocker {
    unblocker: Unblocker,
    ctx: Option<&'static WorkerCtx>,
}

impl Blocker {
    /// The blocker of the current context: its worker loop when it may suspend, else its
    /// thread.
    pub(crate) fn current() -> Blocker {
        if let Some(ctx) = worker::current_ctx() {
            if let Some(token) = ctx.loops().suspendable(ctx) {
                return Blocker {
                    unblocker: Unblocker::Loop(token),
                    ctx: Some(ctx),
                };
            }
        }
        Blocker::thread()
    }

    /// A blocker that parks the thread, wherever it runs.
    pub(crate) fn thread() -> Blocker {
        Blocker {
            unblocker: Unblocker::Thread(thread::current()),
            ctx: None,
        }
    }

    /// Whether parking suspends a worker loop (the thread goes on running tasks) rather
    /// than parking the thread.
    #[inline]
    pub(crate) fn suspends(&self) -> bool {
        self.ctx.is_some()
    }

    /// The handle that ends this blocker's parks.
    pub(crate) fn unblocker(&self) -> Unblocker {
        self.unblocker.clone()
    }

    /// Blocks until unblocked. May return spuriously.
    pub(crate) fn park(&self) {
        match &self.unblocker {
            Unblocker::Thread(_) => crate::runtime::loops::park_thread(None),
            Unblocker::Loop(token) => {
                let ctx = self.ctx.expect("a loop blocker has its worker");
                ctx.loops().suspend(ctx, token);
            }
        }
    }

    /// Blocks until unblocked or `deadline`. May return spuriously.
    pub(crate) fn park_until(&self, deadline: Instant) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        match &self.unblocker {
            Unblocker::Thread(_) => crate::runtime::loops::park_thread(Some(deadline)),
            Unblocker::Loop(token) => {
                let ctx = self.ctx.expect("a loop blocker has its worker");
                let t = token.clone();
                let timer = crate::time::call_at(deadline, move || t.unblock());
                ctx.loops().suspend(ctx, token);
                timer.cancel();
            }
        }
    }
}
