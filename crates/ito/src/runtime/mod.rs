//! The runtime: worker threads with work-stealing deques, and the entry points that put work
//! on them. The design (and why waiting cannot deadlock) is in `docs/scheduler.md`.
//!
//! - [`Shared`] is the part every thread and every task can reach: the injector, the slots
//!   (one per worker or compensation thread: its deque's stealer and its unparker), the
//!   idle-worker list and the counters. It is allocated once per runtime and never freed (a
//!   few KiB), so a task's `&'static Shared` can never dangle, and spawning a task costs no
//!   reference-count traffic on a shared counter.
//! - `worker` is a worker thread's loop and its thread-local context.
//! - `idle` is the sleep/wake protocol.
//! - `wait` is how a blocking wait helps and hands its place to a compensation thread.

mod block_on;
pub(crate) mod blocking;
pub(crate) mod idle;
mod metrics;
pub(crate) mod wait;
pub(crate) mod worker;

use std::future::{Future as StdFuture, IntoFuture};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use crossbeam_deque::Injector;

pub use block_on::block_on;
pub(crate) use block_on::block_on_cancellable;
pub use metrics::Metrics;

use crate::future::Future;
use crate::task::{self, TaskRef};
use idle::Idle;
use worker::Slot;

/// Extra slots, beyond the configured compensation bound, that may be used only when every
/// worker of the runtime is blocked (the no-deadlock guarantee; see `docs/scheduler.md`).
const EMERGENCY_SLOTS: usize = 256;
/// `Builder::idle_spin`'s default.
const DEFAULT_IDLE_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// What every thread of a runtime, and every task on it, shares.
pub(crate) struct Shared {
    injector: Injector<TaskRef>,
    slots: Box<[OnceLock<Slot>]>,
    /// Slots in use (initialised), monotonic.
    num_slots: AtomicUsize,
    /// The target parallelism: permanent workers.
    workers: usize,
    /// Compensation threads allowed beyond `workers` in normal operation.
    max_comp: usize,
    /// Threads currently acting as workers: not blocked in a wait, not retired.
    active: AtomicUsize,
    idle: Idle,
    /// Compensation slots whose threads are parked, ready to be reactivated.
    spares: Mutex<Vec<usize>>,
    /// Compensation slots whose threads exited, ready for new threads.
    free_slots: Mutex<Vec<worker::FreeSlot>>,
    shutdown: AtomicBool,
    /// Set while an outside push starts a thread for a runtime whose threads are all blocked.
    emergency: AtomicBool,
    stack_size: usize,
    /// How long a retired compensation thread stays parked before it exits.
    keep_alive: std::time::Duration,
    /// How long a worker that found no work keeps looking before it sleeps.
    idle_spin: std::time::Duration,
    name: String,
    handles: Mutex<Vec<JoinHandle<()>>>,
    counters: Counters,
    pub(crate) blocking: blocking::Pool,
}

#[derive(Default)]
struct Counters {
    spawned_outside: AtomicU64,
    compensations: AtomicU64,
    live_threads: AtomicU64,
    peak_threads: AtomicU64,
}

impl Counters {
    fn thread_started(&self) {
        let live = self.live_threads.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_threads.fetch_max(live, Ordering::Relaxed);
    }
    fn thread_stopped(&self) {
        self.live_threads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Configures and builds a [`Runtime`].
///
/// ```
/// let rt = ito::Runtime::builder().workers(2).build().unwrap();
/// assert_eq!(rt.spawn_fn(|| 1 + 1).wait(), Ok(2));
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    workers: Option<usize>,
    max_compensation: Option<usize>,
    stack_size: usize,
    thread_name: String,
    max_blocking: usize,
    keep_alive: std::time::Duration,
    idle_spin: std::time::Duration,
}

impl Builder {
    /// The number of worker threads (default: the number of CPUs). At least 1.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.workers(), 1);
    /// ```
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n.max(1));
        self
    }

    /// How many compensation threads may run beside the workers while workers are blocked in
    /// [`Future::wait`] (default: `max(4, workers)`). If every worker is blocked and work is
    /// queued, a compensation thread is started even past this bound, since the alternative is
    /// a deadlock.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).max_compensation(2).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn max_compensation(mut self, n: usize) -> Self {
        self.max_compensation = Some(n);
        self
    }

    /// Stack size of worker threads (default 8 MiB; only touched pages use memory).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().stack_size(4 << 20).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes.max(256 * 1024);
        self
    }

    /// The name prefix of the runtime's threads (default `"ito"`).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().thread_name("app").build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// How long a compensation thread with nothing to do stays parked before it exits
    /// (default 10 s).
    ///
    /// ```
    /// let rt = ito::Runtime::builder()
    ///     .thread_keep_alive(std::time::Duration::from_secs(1))
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// ```
    pub fn thread_keep_alive(mut self, d: std::time::Duration) -> Self {
        self.keep_alive = d;
        self
    }

    /// How long a worker that has run out of work keeps looking for more (spinning, then
    /// yielding its CPU between looks) before it goes to sleep (default 50 µs; zero: sleep at
    /// once).
    ///
    /// A sleeping worker costs nothing but must be woken with a system call when work
    /// appears, by the thread that has the work; a worker still looking needs no wake-up
    /// and starts at once. Programs that hand out work in bursts a few microseconds apart
    /// (a task spawning a batch and waiting for it, a message passed back and forth) gain
    /// the most. An idle runtime uses no CPU once the window has passed.
    ///
    /// ```
    /// let rt = ito::Runtime::builder()
    ///     .idle_spin(std::time::Duration::from_micros(20))
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// ```
    pub fn idle_spin(mut self, d: std::time::Duration) -> Self {
        self.idle_spin = d;
        self
    }

    /// The most threads [`spawn_blocking`](crate::spawn_blocking) may run at once (default
    /// 64); more calls queue.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().max_blocking_threads(4).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn max_blocking_threads(mut self, n: usize) -> Self {
        self.max_blocking = n.max(1);
        self
    }

    /// Starts the worker threads.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(3).build()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(self) -> io::Result<Runtime> {
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let max_comp = self.max_compensation.unwrap_or(workers.max(4));
        let capacity = workers + max_comp + EMERGENCY_SLOTS;
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            injector: Injector::new(),
            slots: (0..capacity).map(|_| OnceLock::new()).collect(),
            num_slots: AtomicUsize::new(0),
            workers,
            max_comp,
            active: AtomicUsize::new(workers),
            idle: Idle::new(capacity),
            spares: Mutex::new(Vec::new()),
            free_slots: Mutex::new(Vec::new()),
            shutdown: AtomicBool::new(false),
            emergency: AtomicBool::new(false),
            stack_size: self.stack_size,
            keep_alive: self.keep_alive,
            idle_spin: self.idle_spin,
            name: self.thread_name,
            handles: Mutex::new(Vec::new()),
            counters: Counters::default(),
            blocking: blocking::Pool::new(self.max_blocking),
        }));
        for _ in 0..workers {
            if let Err(e) = worker::start_thread(shared, false) {
                shared.shutdown();
                return Err(e);
            }
        }
        Ok(Runtime {
            shared,
            owned: true,
        })
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            max_compensation: None,
            stack_size: 8 << 20,
            thread_name: "ito".to_string(),
            max_blocking: 64,
            keep_alive: std::time::Duration::from_secs(10),
            idle_spin: DEFAULT_IDLE_SPIN,
        }
    }
}

/// A pool of worker threads running tasks, futures, and blocking jobs.
///
/// The free functions ([`spawn`](crate::spawn), [`spawn_fn`](crate::spawn_fn), ...) use the
/// runtime of the current worker thread, or else a global runtime started on first use with
/// one worker per CPU. Build one explicitly to choose its size:
///
/// ```
/// let rt = ito::Runtime::builder().workers(2).build().unwrap();
/// let f = rt.spawn(async { 40 + 2 });
/// assert_eq!(rt.block_on(f), Ok(42));
/// ```
///
/// Dropping a runtime stops its threads after the tasks they are running return; tasks still
/// queued are cancelled (their futures fail with [`Failure::Cancelled`](crate::Failure)).
pub struct Runtime {
    shared: &'static Shared,
    owned: bool,
}

impl Runtime {
    /// A builder with default settings.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A runtime with default settings (one worker per CPU).
    ///
    /// ```
    /// let rt = ito::Runtime::new().unwrap();
    /// assert!(rt.workers() >= 1);
    /// ```
    pub fn new() -> io::Result<Runtime> {
        Builder::default().build()
    }

    /// Spawns an async task; its output completes the returned future.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.spawn(async { 7 }).wait(), Ok(7));
    /// ```
    pub fn spawn<F>(&self, fut: F) -> Future<F::Output>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on(self.shared, fut)
    }

    /// Runs a closure as a task (Scala's `Future { ... }`).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.spawn_fn(|| "done").wait(), Ok("done"));
    /// ```
    pub fn spawn_fn<F, T>(&self, f: F) -> Future<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        spawn_fn_on(self.shared, f)
    }

    /// Runs a closure that may block for long (file I/O, a C library) on the runtime's
    /// blocking pool, away from the workers.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let f = rt.spawn_blocking(|| std::fs::metadata(".").is_ok());
    /// assert_eq!(f.wait(), Ok(true));
    /// ```
    pub fn spawn_blocking<F, T>(&self, f: F) -> Future<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + Sync + 'static,
    {
        self.shared.blocking.spawn(self.shared, f)
    }

    /// Runs `f` on one of this runtime's workers and returns its result, blocking the caller
    /// until it is done (rayon's `ThreadPool::install`). Inside `f`, [`join`](crate::join)
    /// and the free spawning functions use this runtime. Called on one of this runtime's
    /// workers, it just calls `f`. A panic in `f` is resumed in the caller.
    ///
    /// If the runtime is shut down before a worker picks `f` up, `f` runs on the caller.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(2).build().unwrap();
    /// let v = vec![1, 2, 3, 4];
    /// let sum = rt.install(|| {
    ///     let (a, b) = ito::join(|| v[..2].iter().sum::<i32>(), || v[2..].iter().sum::<i32>());
    ///     a + b
    /// });
    /// assert_eq!(sum, 10);
    /// ```
    pub fn install<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        crate::join::install_on(self.shared, f)
    }

    /// [`join`](crate::join) on this runtime: runs `a` and `b`, potentially in parallel, on
    /// its workers, and returns both results.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(2).build().unwrap();
    /// assert_eq!(rt.join(|| 1, || 2), (1, 2));
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(move || crate::join(a, b))
    }

    /// Runs a future to completion on the current thread; tasks it spawns go to this runtime.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let v = rt.block_on(async { ito::spawn_fn(|| 5).await });
    /// assert_eq!(v, Ok(5));
    /// ```
    pub fn block_on<F: IntoFuture>(&self, fut: F) -> F::Output {
        let _enter = worker::enter(self.shared);
        block_on::block_on(fut)
    }

    /// The number of worker threads.
    ///
    /// ```
    /// assert_eq!(ito::Runtime::builder().workers(2).build().unwrap().workers(), 2);
    /// ```
    pub fn workers(&self) -> usize {
        self.shared.workers
    }

    /// A snapshot of the runtime's counters.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// rt.spawn_fn(|| ()).wait().unwrap();
    /// assert!(rt.metrics().spawned >= 1);
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.owned {
            self.shared.shutdown();
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.shared.workers)
            .finish()
    }
}

impl Shared {
    fn metrics(&self) -> Metrics {
        let mut m = Metrics {
            workers: self.workers,
            spawned: self.counters.spawned_outside.load(Ordering::Relaxed),
            compensations: self.counters.compensations.load(Ordering::Relaxed),
            threads: self.counters.live_threads.load(Ordering::Relaxed),
            peak_threads: self.counters.peak_threads.load(Ordering::Relaxed),
            sleeping: self.idle.num_sleeping(),
            ..Metrics::default()
        };
        for slot in self.slots.iter().filter_map(OnceLock::get) {
            slot.metrics.add_to(&mut m);
        }
        m
    }

    fn shutdown(&'static self) {
        if self.shutdown.swap(true, Ordering::SeqCst) {
            return;
        }
        self.blocking.shutdown();
        let me = std::thread::current().id();
        if let Some(ctx) = worker::current_for(self) {
            // Called from inside a join side: what this thread has pending must stay
            // reachable for the threads that finish the joins.
            crate::join::expose(ctx, usize::MAX);
        }
        // Threads blocked in a wait may be waiting for a queued task: keep cancelling what is
        // queued (which completes or breaks the futures they wait for) until all have left.
        // Join jobs cannot be cancelled: the runtime's threads run every exposed one before
        // they exit, and a thread blocking meanwhile brings in another (`enter_blocking`).
        let mut stalled = 0u32;
        loop {
            self.cancel_queued();
            if self.has_join_work() {
                stalled += 1;
                // Nobody took the jobs for a while (every thread blocked): one more thread.
                if stalled % 16 == 0 {
                    self.start_shutdown_helper();
                }
            } else {
                stalled = 0;
            }
            if let Some(ctx) = worker::current_for(self) {
                ctx.cancel_lifo();
            }
            for slot in self.slots.iter().filter_map(OnceLock::get) {
                slot.unpark();
            }
            let all_done = self
                .handles
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .all(|h| h.is_finished() || h.thread().id() == me);
            if all_done {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
        self.cancel_queued();
    }

    /// Cancels every queued task: the injector's and every deque's. (Join jobs are not
    /// tasks: they cannot be cancelled, and the runtime's own threads run them; see
    /// `shutdown`.)
    fn cancel_queued(&self) {
        task::run_pending_cancels();
        while let Some(t) = worker::steal_retrying(&self.injector) {
            t.cancel();
        }
        for slot in self.slots.iter().filter_map(OnceLock::get) {
            while let Some(t) = slot.steal_one() {
                t.cancel();
            }
        }
    }

    /// New work was pushed: wake an idle worker if needed (see `idle.rs`).
    #[inline]
    pub(crate) fn notify_work(&'static self, fenced: bool) {
        self.idle
            .notify_with(fenced, || self.may_defer_wake(), |i| self.unpark_slot(i));
    }

    /// Whether a wake-up may be deferred (see `idle.rs`, "Deferred wake-ups").
    fn may_defer_wake(&self) -> bool {
        self.idle
            .may_defer(self.active.load(Ordering::SeqCst), self.workers)
    }

    /// A thread that is not a worker starts running in `block_on` on this runtime.
    pub(super) fn enter_outside(&self) {
        self.idle.enter_outside();
    }

    /// A thread counted by [`Shared::enter_outside`] stops running: it notifies for any queued
    /// work, whose wake-up may have been deferred because it was running.
    pub(super) fn leave_outside(&'static self) {
        self.idle.leave_outside();
        if self.has_queued_work() {
            self.notify_work(false);
        }
    }

    fn unpark_slot(&self, i: usize) {
        if let Some(slot) = self.slots[i].get() {
            slot.unpark();
        }
    }

    /// Whether any shelf holds an exposed join job.
    pub(crate) fn has_join_work(&self) -> bool {
        let n = self.num_slots.load(Ordering::Acquire);
        self.slots[..n]
            .iter()
            .filter_map(OnceLock::get)
            .any(|s| !s.shelf.is_empty_hint())
    }

    /// During shutdown: starts a thread that runs exposed join jobs and exits.
    pub(crate) fn start_shutdown_helper(&'static self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        if worker::start_thread(self, true).is_err() {
            self.active.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether any queue (the injector, any deque, any shelf) has work.
    fn has_queued_work(&self) -> bool {
        if !self.injector.is_empty() {
            return true;
        }
        let n = self.num_slots.load(Ordering::Acquire);
        self.slots[..n]
            .iter()
            .filter_map(OnceLock::get)
            .any(worker::Slot::has_work)
    }

    #[inline]
    fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    /// Queues a new task: on this worker's deque if we are one of ours, else the injector.
    #[inline]
    fn push_new(&'static self, task: TaskRef) {
        match worker::current_for(self) {
            Some(ctx) => ctx.push_spawned(task),
            None => {
                self.counters
                    .spawned_outside
                    .fetch_add(1, Ordering::Relaxed);
                self.push_remote(task);
            }
        }
    }

    /// Queues tasks woken together from a thread that is not one of ours, with one
    /// notification.
    fn push_remote_batch(&'static self, tasks: Vec<TaskRef>) {
        if self.is_shutdown() {
            for t in tasks {
                t.cancel();
            }
            return;
        }
        for t in tasks {
            self.injector.push(t);
        }
        self.after_remote_push();
    }

    /// Queues a task from a thread that is not one of ours.
    pub(super) fn push_remote(&'static self, task: TaskRef) {
        if self.is_shutdown() {
            task.cancel();
            return;
        }
        self.injector.push(task);
        self.after_remote_push();
    }

    /// Wakes a worker for what was just pushed to the injector, and handles the races with
    /// shutdown and with every thread being blocked.
    fn after_remote_push(&'static self) {
        self.notify_work(true);
        if self.is_shutdown() {
            // Raced with shutdown's last sweep: nobody will run it.
            self.cancel_queued();
        } else {
            // Every thread blocked (having seen no work when it blocked)? Start one. The flag
            // keeps concurrent pushers from each starting a thread; a pusher that finds it
            // set relies on the holder re-checking after clearing it.
            while self.active.load(Ordering::SeqCst) == 0
                && !self.emergency.swap(true, Ordering::SeqCst)
            {
                self.compensate(true);
                self.emergency.store(false, Ordering::SeqCst);
                if !self.has_queued_work() {
                    break;
                }
            }
        }
    }
}

/// The runtime tasks spawned here go to: this worker's, or the entered one, or the global.
#[inline]
pub(crate) fn current() -> &'static Shared {
    worker::current_shared().unwrap_or_else(global)
}

static GLOBAL: OnceLock<Runtime> = OnceLock::new();

/// The global runtime, started on first use.
pub(crate) fn global() -> &'static Shared {
    GLOBAL
        .get_or_init(|| {
            let mut rt = Builder::default()
                .thread_name("ito-global")
                .build()
                .expect("ito: cannot start the global runtime's threads");
            rt.owned = false;
            rt
        })
        .shared
}

/// The runtime tasks spawned here go to, if it is already running: [`current`] without
/// starting the global runtime.
pub(crate) fn current_if_started() -> Option<&'static Shared> {
    worker::current_shared().or_else(|| GLOBAL.get().map(|rt| rt.shared))
}

/// Spawns an async task on `shared`.
#[inline]
pub(crate) fn spawn_on<F>(shared: &'static Shared, fut: F) -> Future<F::Output>
where
    F: StdFuture + Send + 'static,
    F::Output: Send + 'static,
{
    let (task, f) = task::new_future(fut, shared);
    shared.push_new(task);
    f
}

/// Spawns an async task on `shared` that nobody can await: no [`Future`], no result kept
/// (a process; see `task::new_detached`).
#[inline]
pub(crate) fn spawn_detached_future_on<F>(shared: &'static Shared, fut: F)
where
    F: StdFuture<Output = ()> + Send + 'static,
{
    shared.push_new(task::new_detached(fut, shared));
}

/// Spawns a closure task on `shared`.
#[inline]
pub(crate) fn spawn_fn_on<F, T>(shared: &'static Shared, f: F) -> Future<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (task, fut) = task::new_fn(f, shared);
    shared.push_new(task);
    fut
}

/// Enqueues a woken task (from a waker).
#[inline]
pub(crate) fn schedule(task: TaskRef) {
    let shared = task.sched();
    match worker::current_for(shared) {
        Some(ctx) => ctx.push_woken(task),
        None => {
            if let Err(task) = wake_batch::add(task) {
                shared.push_remote(task);
            }
        }
    }
}

/// Wakes from a thread that is not a worker, batched: completing a future that many tasks
/// await (from a plain thread) would otherwise push and notify once per task, and each
/// notification can wake a worker that runs its one task and sleeps again before the next,
/// one futex wake and context switch per waiter (measured: 60 waiters, 0.3-0.5 ms). Inside a
/// batch, woken tasks are collected and pushed together with one notification.
pub(crate) mod wake_batch {
    use std::cell::RefCell;

    use crate::task::TaskRef;

    thread_local! {
        static BATCH: RefCell<Option<Vec<TaskRef>>> = const { RefCell::new(None) };
    }

    /// Adds `task` to this thread's open batch, or gives it back if there is none.
    pub(crate) fn add(task: TaskRef) -> Result<(), TaskRef> {
        let mut task = Some(task);
        let _ = BATCH.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                if let Some(v) = b.as_mut() {
                    v.extend(task.take());
                }
            }
        });
        match task {
            Some(t) => Err(t),
            None => Ok(()),
        }
    }

    /// Opens a batch on this thread (unless one is open), closed and flushed when the guard
    /// drops.
    pub(crate) fn open() -> Option<Guard> {
        BATCH
            .try_with(|b| {
                let mut b = b.try_borrow_mut().ok()?;
                if b.is_some() {
                    return None;
                }
                *b = Some(Vec::new());
                Some(Guard(()))
            })
            .ok()
            .flatten()
    }

    /// Flushes the batch on drop.
    pub(crate) struct Guard(());

    impl Drop for Guard {
        fn drop(&mut self) {
            let tasks = BATCH
                .try_with(|b| b.borrow_mut().take())
                .ok()
                .flatten()
                .unwrap_or_default();
            let mut tasks = tasks.into_iter().peekable();
            while let Some(first) = tasks.next() {
                let shared = first.sched();
                let mut same = vec![first];
                while let Some(t) = tasks.next_if(|t| std::ptr::eq(t.sched(), shared)) {
                    same.push(t);
                }
                shared.push_remote_batch(same);
            }
        }
    }
}

/// Runs `job` as a task on the current runtime, dropping its result.
pub(crate) fn spawn_detached(job: Box<dyn FnOnce() + Send>) {
    drop(spawn_fn_on(current(), job));
}
