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
    /// Compensation threads started or reactivated for blocked workers.
    pub compensations: u64,
    /// Threads of this runtime alive now (workers, compensation, blocking pool).
    pub threads: u64,
    /// The most threads this runtime ever had alive at once.
    pub peak_threads: u64,
}
