//! [`Metrics`]: a snapshot of a runtime's counters.

/// A snapshot of a runtime's counters, from [`Runtime::metrics`](crate::Runtime::metrics).
///
/// ```
/// let rt = ito::Runtime::builder().workers(2).build().unwrap();
/// let m = rt.metrics();
/// assert_eq!(m.workers, 2);
/// assert!(m.peak_threads >= 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Worker threads (the target parallelism).
    pub workers: usize,
    /// Tasks spawned (`spawn`, `spawn_fn`, and internal deferred callbacks).
    pub spawned: u64,
    /// Tasks taken from a queue and run (or polled, for async tasks).
    pub polled: u64,
    /// Steals from another worker's deque.
    pub stolen: u64,
    /// Times a thread parked for lack of work (or while retired).
    pub parks: u64,
    /// Threads asleep for lack of work right now (past their
    /// [`idle_spin`](crate::Builder::idle_spin) window; retired compensation threads are not
    /// counted).
    pub sleeping: usize,
    /// Tasks a blocked `wait()` ran inline because it was waiting for them.
    pub helped: u64,
    /// Second closures of [`join`](crate::join) run by another thread than their caller's.
    pub join_steals: u64,
    /// Times a task blocked in one of ito's waits suspended with its stack while its worker
    /// went on with other tasks (`docs/coroutines.md`).
    pub suspends: u64,
    /// Compensation threads started or reactivated for blocked workers.
    pub compensations: u64,
    /// Threads of this runtime alive now (workers, compensation, blocking pool).
    pub threads: u64,
    /// The most threads this runtime ever had alive at once.
    pub peak_threads: u64,
}

use std::sync::atomic::{AtomicU64, Ordering};

use super::Shared;

/// Counters kept outside the slots: each written through one method here.
#[derive(Default)]
pub(super) struct Counters {
    spawned_outside: AtomicU64,
    compensations: AtomicU64,
    live_threads: AtomicU64,
    peak_threads: AtomicU64,
}

impl Counters {
    pub(super) fn count_spawned_outside(&self) {
        self.spawned_outside.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn count_compensation(&self) {
        self.compensations.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn thread_started(&self) {
        let live = self.live_threads.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_threads.fetch_max(live, Ordering::Relaxed);
    }
    pub(super) fn thread_stopped(&self) {
        self.live_threads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counters written only by the slot's own thread (plain load and store, no read-modify-write).
#[derive(Default)]
pub(super) struct SlotMetrics {
    /// Tasks spawned from this thread; also the births that `owners.rs` counts.
    pub(super) spawned: AtomicU64,
    pub(super) polled: AtomicU64,
    pub(super) stolen: AtomicU64,
    pub(super) parks: AtomicU64,
    pub(super) helped: AtomicU64,
    pub(super) join_steals: AtomicU64,
    pub(super) suspends: AtomicU64,
    /// Tasks of this runtime allocated on this thread without a spawn (`owners.rs`; not a
    /// metric).
    pub(super) tasks_created: AtomicU64,
    /// Tasks of this runtime freed on this thread (`owners.rs`; not a metric).
    pub(super) tasks_freed: AtomicU64,
    /// Timer handles on this runtime's driver made on this thread (`owners.rs`; not a
    /// metric).
    pub(super) timers_held: AtomicU64,
    /// Timer handles on this runtime's driver dropped on this thread (`owners.rs`; not a
    /// metric).
    pub(super) timers_released: AtomicU64,
}

/// Adds one to a counter that only the calling thread writes.
#[inline]
pub(super) fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl SlotMetrics {
    fn add_to(&self, m: &mut Metrics) {
        m.spawned += self.spawned.load(Ordering::Relaxed);
        m.polled += self.polled.load(Ordering::Relaxed);
        m.stolen += self.stolen.load(Ordering::Relaxed);
        m.parks += self.parks.load(Ordering::Relaxed);
        m.helped += self.helped.load(Ordering::Relaxed);
        m.join_steals += self.join_steals.load(Ordering::Relaxed);
        m.suspends += self.suspends.load(Ordering::Relaxed);
    }
}

impl Shared {
    /// A snapshot of the counters.
    pub(super) fn metrics(&self) -> Metrics {
        let c = &self.counters;
        let mut m = Metrics {
            workers: self.sleep.workers(),
            spawned: c.spawned_outside.load(Ordering::Relaxed),
            compensations: c.compensations.load(Ordering::Relaxed),
            threads: c.live_threads.load(Ordering::Relaxed),
            peak_threads: c.peak_threads.load(Ordering::Relaxed),
            sleeping: self.sleep.num_sleeping(),
            ..Metrics::default()
        };
        for slot in self.threads.slots() {
            slot.metrics.add_to(&mut m);
        }
        m
    }
}
