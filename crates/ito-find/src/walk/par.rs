//! The parallel skeleton of the walk, behind a narrow interface: [`run`] starts one task per
//! root, the body [`offer`](Spawner::offer)s each subdirectory to a new task, the first match
//! [`cancel`](Spawner::cancel)s the rest, and [`run`] returns when the last task has ended.
//!
//! This is document 002's program on ito: `withAsync` per directory becomes one ito task per
//! directory; the `NBSem` bounding them becomes [`Tally::try_acquire`] (no permit: the caller
//! walks the directory itself); the async's cancellation of its children becomes the stop
//! flag every task reads before each directory and between entries.
//!
//! Today it is built from what ito has: `spawn_fn` on the runtime, an in-flight count and a
//! [`Promise`] completed by the last task out, and a permit counter. The two places marked
//! `SWAP:` are where `ito::scope` (the count and the promise) and
//! `ito::sync::Semaphore::try_acquire` (the permits) go once they land; nothing outside this
//! module changes then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ito::{Promise, Runtime};

use super::tally::{Leave, Tally};

/// What the body does with one job.
type Body<J> = dyn Fn(J, &Spawner<'_, J>) + Send + Sync;

/// Shared by every task of one walk.
struct Shared<J: Send + 'static> {
    tally: Tally,
    /// Completed by the last task out.
    done: Promise<()>,
    /// A task body panicked (the walk was cancelled).
    panicked: AtomicBool,
    body: Box<Body<J>>,
}

/// The handle a task body uses to fork work and to stop the walk.
pub(crate) struct Spawner<'a, J: Send + 'static> {
    shared: &'a Arc<Shared<J>>,
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) struct Finished {
    /// Whether a task body panicked (the panic was contained and the walk cancelled).
    pub(crate) panicked: bool,
}

/// Runs `body` on every root, each in its own task on `rt`, and on everything the bodies
/// [`offer`](Spawner::offer); at most `permits` offered jobs get tasks of their own at once.
/// Returns when every task has ended.
pub(crate) fn run<J, F>(rt: &Runtime, permits: usize, roots: Vec<J>, body: F) -> Finished
where
    J: Send + 'static,
    F: Fn(J, &Spawner<'_, J>) + Send + Sync + 'static,
{
    if roots.is_empty() {
        return Finished { panicked: false };
    }
    // SWAP: `ito::scope(|s| ...)` replaces `in_flight` and `done`: the roots become
    // `s.spawn(..)`, `Spawner::offer` spawns into the same scope, `Spawner::cancel` becomes
    // `s.cancel()`, and leaving the scope is the wait below.
    let shared = Arc::new(Shared {
        tally: Tally::new(permits, roots.len()),
        done: Promise::new(),
        panicked: AtomicBool::new(false),
        body: Box::new(body),
    });
    let done = shared.done.future();
    for job in roots {
        let task = Task::new(Arc::clone(&shared), job, false);
        drop(rt.spawn_fn(move || task.run()));
    }
    // The last task out completes `done`, and a task dropped unrun leaves too (see `Task`),
    // so this cannot hang; nor can it fail, since every `Task` holds the promise until it
    // has left.
    let _ = done.wait();
    // A panicking task sets the flag before it leaves; the last task's Acquire fence and the
    // promise's completion order that store before this load.
    Finished {
        panicked: shared.panicked.load(Ordering::Relaxed),
    }
}

impl<J: Send + 'static> Spawner<'_, J> {
    /// Gives `job` a task of its own if a permit is free; otherwise hands it back, for the
    /// caller to do it itself (document 002: no permit, recurse inline).
    #[inline]
    pub(crate) fn offer(&self, job: J) -> Result<(), J> {
        // SWAP: `ito::sync::Semaphore::try_acquire` (its permit travels with the task and
        // is given back when the task ends) replaces `Tally::try_acquire` / `release`.
        if !self.shared.tally.try_acquire() {
            return Err(job);
        }
        self.shared.tally.enter();
        let task = Task::new(Arc::clone(self.shared), job, true);
        drop(ito::spawn_fn(move || task.run()));
        Ok(())
    }

    /// Stops the walk: every task ends at its next check.
    #[cold]
    pub(crate) fn cancel(&self) {
        self.shared.tally.cancel();
    }

    /// Whether the walk was stopped.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.shared.tally.is_cancelled()
    }
}

/// One task: its job and its place in the count. Dropping it, run or not, ends the task: it
/// gives its permit back and leaves, and the last one out completes the walk. So a task the
/// runtime drops unrun (at shutdown) cannot leave [`run`] waiting forever.
struct Task<J: Send + 'static> {
    shared: Arc<Shared<J>>,
    job: Option<J>,
    permit: bool,
}

impl<J: Send + 'static> Task<J> {
    fn new(shared: Arc<Shared<J>>, job: J, permit: bool) -> Self {
        Task {
            shared,
            job: Some(job),
            permit,
        }
    }

    fn run(mut self) {
        if let Some(job) = self.job.take() {
            if !self.shared.tally.is_cancelled() {
                let spawner = Spawner {
                    shared: &self.shared,
                };
                (self.shared.body)(job, &spawner);
            }
        }
    }
}

impl<J: Send + 'static> Drop for Task<J> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.panicked.store(true, Ordering::Relaxed);
            self.shared.tally.cancel();
        }
        if self.permit {
            self.shared.tally.release();
        }
        if self.shared.tally.leave() == Leave::Last {
            self.shared.done.try_success(());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn runtime() -> Runtime {
        Runtime::builder().workers(2).build().unwrap()
    }

    /// A binary tree of jobs of depth `d`: every job's body runs exactly once, whether it got
    /// a task of its own or was run inline.
    fn tree(depth: u32, permits: usize) -> usize {
        fn visit(d: u32, sp: &Spawner<'_, u32>, runs: &AtomicUsize) {
            runs.fetch_add(1, Ordering::Relaxed);
            if d == 0 {
                return;
            }
            for _ in 0..2 {
                if let Err(d) = sp.offer(d - 1) {
                    visit(d, sp, runs);
                }
            }
        }
        let runs = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&runs);
        let f = run(&runtime(), permits, vec![depth], move |d, sp| {
            visit(d, sp, &r)
        });
        assert!(!f.panicked);
        runs.load(Ordering::Relaxed)
    }

    #[test]
    fn every_job_runs_exactly_once() {
        for permits in [0, 1, 3, 64] {
            assert_eq!(tree(12, permits), (1 << 13) - 1, "permits {permits}");
        }
    }

    #[test]
    fn a_panicking_task_still_leaves_and_is_reported() {
        let f = run(&runtime(), 4, vec![0u32, 1, 2], |j, _| {
            assert_ne!(j, 1, "task 1 fails");
        });
        assert!(f.panicked);
    }

    #[test]
    fn cancel_stops_tasks_before_their_body() {
        // One worker: the offered tasks cannot start before the first one returns, by
        // which time the walk is cancelled, so none of their bodies runs.
        let bodies = Arc::new(AtomicUsize::new(0));
        let b = Arc::clone(&bodies);
        let rt = Runtime::builder().workers(1).build().unwrap();
        let f = run(&rt, 1000, vec![true], move |first, sp| {
            b.fetch_add(1, Ordering::Relaxed);
            if first {
                for _ in 0..100 {
                    assert!(sp.offer(false).is_ok());
                }
                sp.cancel();
                assert!(sp.is_cancelled());
            }
        });
        assert!(!f.panicked);
        assert_eq!(bodies.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn no_roots_is_an_empty_walk() {
        let f = run(&runtime(), 1, Vec::<u8>::new(), |_, _| unreachable!());
        assert!(!f.panicked);
    }
}
