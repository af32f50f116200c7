//! Looking for work outside this worker's own queues: the injector, other workers' shelves
//! (exposed join jobs) and deques. Part of the worker (`worker.rs`), kept apart as one concept.

use crossbeam_deque::{Injector, Steal};

use super::metrics::bump;
use super::worker::{Found, WorkerCtx};
use crate::runtime::join::shelf::{JobRef, Shelf};
use crate::task::TaskRef;
use crate::trace::{FROM_INJECTOR, Kind};

/// A victim's deque at least this long gives a batch to a thief, not one task.
const BATCH_STEAL_MIN: usize = 32;
/// The most tasks one batch steal takes (crossbeam takes at most half the deque).
const BATCH_STEAL_LIMIT: usize = 16;
/// Steals one task from the injector, retrying on contention.
pub(super) fn steal_retrying(inj: &Injector<TaskRef>) -> Option<TaskRef> {
    loop {
        match inj.steal() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

impl WorkerCtx {
    /// Looks for work elsewhere: the injector, then other slots' shelves and deques.
    pub(super) fn search(&self) -> Option<Found> {
        self.shared.sleep.start_looking(&self.idler);
        let found = self.steal_anywhere();
        if found.is_some() {
            self.stop_searching();
        }
        found
    }

    pub(super) fn steal_anywhere(&self) -> Option<Found> {
        if let Some(t) = self.steal_injector() {
            return Some(Found::Task(t));
        }
        let me: *const Shelf = self.shelf();
        let n = self.shared.threads.num_slots();
        if n > 1 {
            let start = self.next_rand() as usize % n;
            for k in 0..n {
                let i = (start + k) % n;
                if i == self.index {
                    continue;
                }
                let Some(slot) = self.shared.threads.slot(i) else {
                    continue;
                };
                // A join job first: the oldest one a worker exposed is its largest piece.
                if let Some(j) = slot.shelf.steal(me, self.join.len()) {
                    return Some(Found::Job(j));
                }
                // One task (the oldest: in a fork-join, the largest piece) unless the victim
                // holds a long run of tasks, as a loop spawning many small ones leaves: then a
                // batch, so that the two workers do not bounce the deque's (and the tasks'
                // shared data's) cache lines once per task.
                let batch = slot.stealer.len() >= BATCH_STEAL_MIN;
                loop {
                    let stolen = if batch {
                        slot.stealer
                            .steal_batch_with_limit_and_pop(&self.local, BATCH_STEAL_LIMIT)
                    } else {
                        slot.stealer.steal()
                    };
                    match stolen {
                        Steal::Success(t) => {
                            bump(&self.slot().metrics.stolen);
                            if let Some(r) = self.shared.trace {
                                // The thief's deque was empty: it now holds the rest of a batch.
                                let n = 1 + self.local.len() as u64;
                                r.record(Kind::Steal { from: i as u64, n });
                            }
                            return Some(Found::Task(t));
                        }
                        Steal::Empty => break,
                        Steal::Retry => std::hint::spin_loop(),
                    }
                }
            }
        }
        self.steal_injector().map(Found::Task)
    }

    /// Takes an exposed join job from any slot (shutdown).
    pub(super) fn steal_join_job(&self) -> Option<JobRef> {
        let me: *const Shelf = self.shelf();
        self.shared
            .threads
            .slots()
            .find_map(|s| s.shelf.steal(me, self.join.len()))
    }

    fn steal_injector(&self) -> Option<TaskRef> {
        loop {
            match self.shared.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(t) => {
                    if let Some(r) = self.shared.trace {
                        let n = 1 + self.local.len() as u64;
                        r.record(Kind::Steal {
                            from: FROM_INJECTOR,
                            n,
                        });
                    }
                    return Some(t);
                }
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    fn next_rand(&self) -> u64 {
        // xorshift64*
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
