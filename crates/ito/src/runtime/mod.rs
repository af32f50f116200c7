//! The runtime: worker threads with work-stealing deques, and the entry points that put work
//! on them. The design, and why waiting cannot deadlock, is in `docs/scheduler.md`.
//!
//! One concept per file:
//!
//! | file | concept | writes |
//! |---|---|---|
//! | `builder.rs` | [`Builder`]: configuration, and building a [`Shared`] | everything, once |
//! | `handle.rs` | [`Runtime`] (the owning handle) and the global runtime | nothing |
//! | `inject.rs` | putting tasks on queues: spawns, wake-ups, batches from outside | `injector` |
//! | `named.rs` | [`named`]: spawning a task with a name that traces show | nothing shared |
//! | `worker.rs` | a worker's slot and context, and its loop | its own slot |
//! | `steal.rs` | a worker looking for work elsewhere: the injector, other shelves and deques | its own deque (batches) |
//! | `loops.rs` | worker loops on task stacks: suspending a blocked task, resuming it at home | its own slot's resume queue (others push) |
//! | `join/` | fork-join: [`join`](crate::join), the join stack, the shelf of exposed jobs, their latches | its thread's shelf and stack |
//! | `threads.rs` | starting, retiring and compensating threads | `threads` |
//! | `park/` | sleeping and waking threads, counting outside threads | `sleep` |
//! | `block_until.rs` | a blocking wait on a completion cell | nothing shared |
//! | `block_on.rs` | [`block_on`] | nothing shared |
//! | `blocking.rs` | the blocking pool (`spawn_blocking`) | `blocking` |
//! | `shutdown.rs` | stopping threads and cancelling what is queued | `shutdown` |
//! | `metrics.rs` | [`Metrics`] and the counters behind them | `counters` |
//! | `owners.rs` | who owns [`Shared`], and freeing it when the last owner lets go | `refs` |
//! | `../time/driver.rs` | the runtime's timer wheel and thread | `timers` |
//!
//! [`Shared`] is the part every thread and every task reaches. It is allocated once per
//! runtime and freed when its last owner lets go (`owners.rs`): the `Runtime`, after it
//! joined the threads, its blocking-pool threads, its tasks, and its registered timers' handles. Its users hold it as
//! `&'static Shared`: a plain pointer, valid for as long as the holder is, or is held by, an
//! owner. So spawning, waking, stealing and parking cost no reference-count traffic.

mod block_on;
pub(crate) mod block_until;
pub(crate) mod blocking;
mod builder;
mod handle;
mod inject;
pub(crate) mod join;
pub(crate) mod loops;
mod metrics;
mod named;
pub(crate) mod owners;
pub(crate) mod park;
mod shutdown;
mod steal;
mod threads;
pub(crate) mod worker;

use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_deque::Injector;

pub use block_on::block_on;
pub(crate) use block_on::block_on_cancellable;
pub use builder::Builder;
pub use handle::Runtime;
pub(crate) use handle::{current, current_if_started};
pub(crate) use inject::{
    spawn_detached, spawn_detached_future_on, spawn_fn_on, spawn_on, wake_batch,
};
pub use metrics::Metrics;
pub use named::{Named, named};

use crate::task::TaskRef;
use blocking::BlockingPool;
use metrics::Counters;
use park::Sleep;
use threads::Threads;

/// What every thread of a runtime, and every task on it, shares. Each part is written by
/// one file (see the table above).
pub(crate) struct Shared {
    /// Tasks pushed by threads that are not this runtime's workers.
    injector: Injector<TaskRef>,
    /// Who searches, sleeps and runs, and how to wake them.
    pub(crate) sleep: Sleep,
    /// The runtime's threads and their slots.
    threads: Threads,
    /// Set once, when shutdown begins.
    shutdown: AtomicBool,
    /// Counters kept outside the slots. Written by threads outside the runtime on every
    /// spawn: on a cache line of their own, away from the fields workers read per task.
    counters: crossbeam_utils::CachePadded<Counters>,
    /// Threads for closures that block for long.
    pub(crate) blocking: BlockingPool,
    /// The trace recorder, if tracing is on. Every recording call sits behind one check of
    /// this field (`docs/trace.md`).
    pub(crate) trace: Option<&'static crate::trace::Recorder>,
    /// The stacks workers run their loops, and so tasks, on (`loops.rs`); `None`: on their
    /// threads' own stacks.
    pub(crate) task_stacks: Option<crate::coro::StackPool>,
    /// The block's owners outside its threads (`owners.rs`); on a cache line of its own, as
    /// `counters`.
    refs: crossbeam_utils::CachePadded<owners::BlockRefs>,
    /// This runtime's timer driver (`time/driver.rs`); `None` for the global runtime, which
    /// uses the process's.
    timers: Option<crate::time::Driver>,
    /// Tasks a busy worker runs between two looks at the I/O driver (`Builder::event_interval`).
    pub(crate) event_interval: u32,
    /// This runtime's number, unique in the process (a freed block's address may be reused):
    /// what the process registry files names under.
    pub(crate) id: u64,
}

impl Shared {
    #[inline]
    fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    /// Whether any queue (the injector, any deque, any shelf) has work.
    fn has_queued_work(&self) -> bool {
        !self.injector.is_empty() || self.threads.slots().any(worker::Slot::has_work)
    }

    /// This runtime's timer driver; `None`: it uses the process's (the global runtime).
    #[inline]
    pub(crate) fn timers(&'static self) -> Option<&'static crate::time::Driver> {
        self.timers.as_ref()
    }

    /// Whether any shelf holds an exposed join job.
    pub(crate) fn has_join_work(&self) -> bool {
        self.threads.slots().any(|s| !s.shelf.is_empty_hint())
    }

    /// A thread counted as running outside stops running: it notifies for queued work whose
    /// wake-up may have been deferred because it ran.
    fn leave_outside(&self) {
        self.sleep.leave_outside(|| self.has_queued_work());
    }
}
