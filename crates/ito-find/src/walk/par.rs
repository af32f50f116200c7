//! The parallel skeleton of the walk: [`run`] opens an [`ito::scope_fn`] with one child task
//! per root, the body [`offer`](Spawner::offer)s each subdirectory to a new child of the same
//! scope, the first match (or a closed stdout, or `--max-results`) [`cancel`](Spawner::cancel)s
//! the scope, and [`run`] returns when the scope has ended, that is when every child has.
//!
//! This is document 002's program on ito, piece by piece:
//!
//! | document 002 (Haskell)          | here                                                   |
//! |---------------------------------|--------------------------------------------------------|
//! | `withAsync` per directory       | [`Scope::spawn_fn`] per offered directory               |
//! | `NBSem` (`tryWaitNBSem`)        | [`Semaphore::try_acquire`]: no permit, walk it yourself |
//! | the permit given back on exit   | the [`SemaphorePermit`] moves into the child and drops with it |
//! | cancelling the children (`cancel`) | [`Scope::cancel`]: queued children never start, running ones stop at their next check |
//! | waiting for the children        | leaving [`ito::scope_fn`]                              |
//!
//! A cancelled child that has not started is dropped unrun (its permit goes back); a running
//! one is a synchronous task that never blocks, so it polls [`Spawner::is_cancelled`] (the
//! scope's token) before each directory and between entries. A child that panics fails the
//! scope, which cancels its siblings; [`run`] reports the panic's message.

use ito::sync::{Semaphore, SemaphorePermit};
use ito::{Failure, Runtime, Scope};

/// What the body does with one job: the walk of one directory and of whatever it keeps.
type Body<'a, J> = dyn for<'scope, 'env> Fn(J, &Spawner<'scope, 'env, J>) + Sync + 'a;

/// The handle a task body uses to fork work and to stop the walk. `Copy`: each child gets
/// its own.
pub(crate) struct Spawner<'scope, 'env: 'scope, J> {
    scope: &'scope Scope<'scope, 'env>,
    permits: &'env Semaphore,
    body: &'env Body<'env, J>,
}

impl<J> Clone for Spawner<'_, '_, J> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<J> Copy for Spawner<'_, '_, J> {}

/// How a walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) struct Finished {
    /// The message of a task body's panic, if one panicked (the panic was contained and the
    /// walk cancelled).
    pub(crate) panic: Option<String>,
}

/// Runs `body` on every root, each in a child task of one scope on `rt`, and on everything
/// the bodies [`offer`](Spawner::offer); at most `permits` offered jobs have tasks of their
/// own at once. Returns when every task has ended.
pub(crate) fn run<J, F>(rt: &Runtime, permits: usize, roots: Vec<J>, body: F) -> Finished
where
    J: Send,
    F: for<'scope, 'env> Fn(J, &Spawner<'scope, 'env, J>) + Sync,
{
    if roots.is_empty() {
        return Finished { panic: None };
    }
    let permits = Semaphore::new(permits);
    let body: &Body<'_, J> = &body;
    let permits = &permits;
    // On a worker of `rt`, so that the scope's children are `rt`'s tasks; the scope's wait
    // helps run them.
    let ended = rt.install(move || {
        ito::scope_fn(|scope| {
            let sp = Spawner {
                scope,
                permits,
                body,
            };
            for job in roots {
                scope.spawn_fn(move || sp.run(job, None));
            }
        })
    });
    Finished {
        panic: ended.err().map(|e| match e.first() {
            Failure::Panic(msg) => msg.to_string(),
            other => other.to_string(),
        }),
    }
}

impl<'scope, 'env, J: Send> Spawner<'scope, 'env, J> {
    /// Gives `job` a task of its own if a permit is free; otherwise hands it back, for the
    /// caller to do it itself (document 002: no permit, recurse inline).
    #[inline]
    pub(crate) fn offer(&self, job: J) -> Result<(), J> {
        let Ok(permit) = self.permits.try_acquire() else {
            return Err(job);
        };
        let sp = *self;
        self.scope.spawn_fn(move || sp.run(job, Some(permit)));
        Ok(())
    }

    /// One child task. `_permit` is held until the body returns (or the task is dropped
    /// unrun, cancelled).
    fn run(self, job: J, _permit: Option<SemaphorePermit<'env>>) {
        if !self.is_cancelled() {
            (self.body)(job, &self);
        }
    }

    /// Stops the walk: children not started never start, running ones end at their next
    /// check.
    #[cold]
    pub(crate) fn cancel(&self) {
        self.scope.cancel();
    }

    /// Whether the walk was stopped.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.scope.token().is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn runtime() -> Runtime {
        Runtime::builder().workers(2).build().unwrap()
    }

    /// A binary tree of jobs of depth `d`: every job's body runs exactly once, whether it got
    /// a task of its own or was run inline; and no more than `permits` offered jobs ran at
    /// once (a high-water mark).
    fn tree(depth: u32, permits: usize) -> usize {
        struct Count {
            runs: AtomicUsize,
            live: AtomicUsize,
            high: AtomicUsize,
        }
        fn visit(d: u32, sp: &Spawner<'_, '_, (u32, bool)>, c: &Count) {
            c.runs.fetch_add(1, Ordering::Relaxed);
            if d == 0 {
                return;
            }
            for _ in 0..2 {
                if let Err((d, _)) = sp.offer((d - 1, true)) {
                    visit(d, sp, c);
                }
            }
        }
        let c = Count {
            runs: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            high: AtomicUsize::new(0),
        };
        let f = run(&runtime(), permits, vec![(depth, false)], |(d, own), sp| {
            if own {
                let now = c.live.fetch_add(1, Ordering::SeqCst) + 1;
                c.high.fetch_max(now, Ordering::SeqCst);
            }
            visit(d, sp, &c);
            if own {
                c.live.fetch_sub(1, Ordering::SeqCst);
            }
        });
        assert_eq!(f.panic, None);
        assert!(
            c.high.load(Ordering::SeqCst) <= permits,
            "permits {permits}"
        );
        c.runs.load(Ordering::Relaxed)
    }

    #[test]
    fn every_job_runs_exactly_once() {
        for permits in [0, 1, 3, 64] {
            assert_eq!(tree(12, permits), (1 << 13) - 1, "permits {permits}");
        }
    }

    #[test]
    fn a_panicking_task_is_reported_with_its_message() {
        let f = run(&runtime(), 4, vec![0u32, 1, 2], |j, _| {
            assert_ne!(j, 1, "task 1 fails");
        });
        let msg = f.panic.expect("the panic is reported");
        assert!(msg.contains("task 1 fails"), "{msg}");
    }

    #[test]
    fn cancel_stops_tasks_before_their_body() {
        // One worker: the offered tasks cannot start before the first one returns, by
        // which time the walk is cancelled, so none of their bodies runs; and every permit
        // comes back with the tasks dropped unrun.
        let bodies = AtomicUsize::new(0);
        let rt = Runtime::builder().workers(1).build().unwrap();
        let sem_seen = AtomicUsize::new(usize::MAX);
        let f = run(&rt, 1000, vec![true], |first, sp| {
            bodies.fetch_add(1, Ordering::Relaxed);
            if first {
                for _ in 0..100 {
                    assert!(sp.offer(false).is_ok());
                }
                sem_seen.store(sp.permits.available_permits(), Ordering::Relaxed);
                sp.cancel();
                assert!(sp.is_cancelled());
            }
        });
        assert_eq!(f.panic, None);
        assert_eq!(bodies.load(Ordering::Relaxed), 1);
        assert_eq!(sem_seen.load(Ordering::Relaxed), 900);
    }

    #[test]
    fn borrowed_state_is_shared_by_every_task() {
        // The body borrows from the caller's frame (the scope makes that sound).
        fn step(n: u32, sp: &Spawner<'_, '_, u32>, seen: &std::sync::Mutex<Vec<u32>>) {
            seen.lock().unwrap().push(n);
            if n < 20 {
                if let Err(n) = sp.offer(n + 1) {
                    step(n, sp, seen);
                }
            }
        }
        let seen = std::sync::Mutex::new(Vec::new());
        let f = run(&runtime(), 2, vec![0u32], |n, sp| step(n, sp, &seen));
        assert_eq!(f.panic, None);
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..=20).collect::<Vec<_>>());
    }

    #[test]
    fn no_roots_is_an_empty_walk() {
        let f = run(&runtime(), 1, Vec::<u8>::new(), |_, _| unreachable!());
        assert_eq!(f.panic, None);
    }
}
