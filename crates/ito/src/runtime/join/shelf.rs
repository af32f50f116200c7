//! A thread's shelf: the join jobs it has *exposed* to thieves, oldest first.
//!
//! Only exposed jobs are ever seen by another thread, and exposing is rare (one job at a time,
//! when the shelf is empty: see `mod.rs`), so the shelf is a plain lock around a short queue.
//! Every access that moves a job on or off a shelf holds its lock, which is what makes the
//! three racy operations simple:
//!
//! - the **owner reclaims** its newest job when the job's first closure returns: under the
//!   lock, the job is either still the back of the queue (taken back: the owner runs it
//!   inline) or gone, and then the thief's identity is in the job;
//! - a **thief steals** the front (oldest, so largest) job and records itself in it;
//! - a waiting owner **leapfrogs**: it takes, from its thief's shelf, only a job that descends
//!   from the one it waits for, which the lock lets it check (see [`Shelf::steal_descendant`]).
//!
//! `len` mirrors the queue's length so that the owner's fast path and thieves' scans can skip
//! the lock: it is a hint, written under the lock and read without it.

use std::collections::VecDeque;
use std::ptr::NonNull;

use super::job::{Exposed, JobHeader, JoinLatch, Stolen};
use crate::loom::thread::Thread;
use crate::loom::{AtomicUsize, Mutex, Ordering};

/// A pointer to an exposed job, as kept on a shelf.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct JobRef(pub(crate) NonNull<JobHeader>);

// SAFETY: a `JobRef` is only dereferenced under the protocol above: the job stays alive while
// it is on a shelf, and after a steal until its latch is set.
unsafe impl Send for JobRef {}

/// What the owner found when it came back for its job.
#[must_use]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reclaim {
    /// Still on the shelf: taken back; the owner runs it.
    Reclaimed,
    /// A thief has it: wait for its latch. Who took it, for leapfrogging.
    Stolen { thief: *const Shelf, depth: usize },
}

/// The jobs one thread offers to others.
pub(crate) struct Shelf {
    len: AtomicUsize,
    jobs: Mutex<VecDeque<JobRef>>,
}

impl Shelf {
    pub(crate) fn new() -> Shelf {
        Shelf {
            len: AtomicUsize::new(0),
            jobs: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether the shelf looks empty (a hint; exact for the owner's own additions).
    #[inline]
    pub(crate) fn is_empty_hint(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    fn lock(&self) -> crate::loom::MutexGuard<'_, VecDeque<JobRef>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Owner: exposes `jobs` (in order, oldest first, all newer than any job on the shelf),
    /// which sit at depths `first_depth..`.
    ///
    /// # Safety
    ///
    /// The caller owns the shelf and the jobs, keeps each job alive until it reclaims it or
    /// its latch is set, and `owner` (its thread handle) outlives that too.
    pub(crate) unsafe fn expose(
        &self,
        jobs: impl IntoIterator<Item = NonNull<JobHeader>>,
        first_depth: usize,
        owner: *const Thread,
    ) {
        let mut q = self.lock();
        for (i, job) in jobs.into_iter().enumerate() {
            // SAFETY: our job, not yet on the shelf; we hold the lock.
            unsafe {
                job.as_ref().set_exposed(Exposed {
                    depth: first_depth + i,
                    owner,
                })
            };
            q.push_back(JobRef(job));
        }
        self.len.store(q.len(), Ordering::Relaxed);
    }

    /// Owner: takes `job` back if no thief has it. `job` must be the newest job the owner
    /// has exposed and not yet reclaimed.
    pub(crate) fn reclaim(&self, job: NonNull<JobHeader>) -> Reclaim {
        let mut q = self.lock();
        if q.back() == Some(&JobRef(job)) {
            q.pop_back();
            self.len.store(q.len(), Ordering::Relaxed);
            return Reclaim::Reclaimed;
        }
        debug_assert!(
            !q.contains(&JobRef(job)),
            "only the newest job is reclaimed"
        );
        // SAFETY: not on the shelf, so a thief took it and wrote `stolen` under this lock.
        let s = unsafe { job.as_ref().stolen() };
        Reclaim::Stolen {
            thief: s.thief,
            depth: s.thief_depth,
        }
    }

    /// Thief: takes the oldest job. `me`/`my_depth` are recorded for the owner's leapfrogging.
    pub(crate) fn steal(&self, me: *const Shelf, my_depth: usize) -> Option<JobRef> {
        if self.is_empty_hint() {
            return None;
        }
        let mut q = self.lock();
        let job = q.pop_front()?;
        self.take(&q, job, me, my_depth);
        Some(job)
    }

    /// A waiting owner: takes the oldest job on this (its thief's) shelf that descends from
    /// the job it waits for, whose latch is `waited` and which the thief took at depth
    /// `min_depth`.
    ///
    /// Sound because, under this lock, a `waited` latch still unset means the thief is still
    /// inside the waited job: jobs it exposed at depth `>= min_depth` were pushed during that
    /// job (everything below was already on its stack when it took the job). The thief sets
    /// the latch only after popping all of them, and exposes later jobs only under this lock,
    /// so after the latch is set we either do not see them or see the latch set.
    pub(crate) fn steal_descendant(
        &self,
        waited: &JoinLatch,
        min_depth: usize,
        me: *const Shelf,
        my_depth: usize,
    ) -> Option<JobRef> {
        if self.is_empty_hint() {
            return None;
        }
        let mut q = self.lock();
        if waited.is_set() {
            return None;
        }
        let pos = q.iter().position(|j| {
            // SAFETY: jobs on the shelf were exposed, under the lock we hold.
            unsafe { j.0.as_ref().exposed() }.depth >= min_depth
        })?;
        let job = q.remove(pos)?;
        self.take(&q, job, me, my_depth);
        Some(job)
    }

    fn take(&self, q: &VecDeque<JobRef>, job: JobRef, me: *const Shelf, my_depth: usize) {
        self.len.store(q.len(), Ordering::Relaxed);
        // SAFETY: just taken off the shelf under its lock; the owner reads this under it.
        unsafe {
            job.0.as_ref().set_stolen(Stolen {
                thief: me,
                thief_depth: my_depth,
            })
        };
    }
}
