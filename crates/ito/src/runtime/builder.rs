//! [`Builder`]: a runtime's configuration, and building it.

use crate::coro::StackPool;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_deque::Injector;

use super::blocking::BlockingPool;
use super::metrics::Counters;
use super::park::Sleep;
use super::threads::{self, Threads};
use super::{Runtime, Shared};

/// Extra slots, beyond the configured compensation bound, that may be used only when every
/// worker of the runtime is blocked (the no-deadlock guarantee; see `docs/scheduler.md`).
const EMERGENCY_SLOTS: usize = 256;
/// The next runtime's number (`Shared::id`).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// `Builder::idle_spin`'s default.
const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(50);

/// `Builder::event_interval`'s default, tokio's (`docs/io.md` has the measurement).
const DEFAULT_EVENT_INTERVAL: u32 = 61;

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
    task_stack_size: usize,
    thread_name: String,
    max_blocking: usize,
    keep_alive: Duration,
    idle_spin: Duration,
    event_interval: u32,
    trace: Option<PathBuf>,
    /// Whether the runtime's timers go to the process's driver (the global runtime's) rather
    /// than one of its own.
    process_timers: bool,
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
    /// [`Future::wait`](crate::Future::wait) (default: `max(4, workers)`). If every worker is blocked and work is
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

    /// Stack size of the stacks tasks run on (default 8 MiB; only touched pages use memory).
    ///
    /// A worker runs its tasks on pooled stacks of this size, not on its thread's stack, so
    /// that a task that blocks in one of ito's waits suspends with its stack and the worker
    /// goes on (`docs/coroutines.md`). A task that overflows it hits a guard page and the
    /// process aborts with a report naming the worker, as a thread's overflow does. Sizes
    /// from 16 KiB to 1 GiB are accepted; [`build`](Self::build) refuses others.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().task_stack_size(8 << 20).build().unwrap();
    /// assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
    /// # drop(rt);
    /// assert!(ito::Runtime::builder().task_stack_size(1).build().is_err());
    /// ```
    pub fn task_stack_size(mut self, bytes: usize) -> Self {
        self.task_stack_size = bytes;
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
    pub fn thread_keep_alive(mut self, d: Duration) -> Self {
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
    pub fn idle_spin(mut self, d: Duration) -> Self {
        self.idle_spin = d;
        self
    }

    /// How many tasks a busy worker runs between two looks at the I/O driver, made without
    /// blocking so that sockets are served while the run queues stay full (default 61, as
    /// tokio's `event_interval`; at least 1). An idle worker waits in the driver and needs no
    /// look. A smaller interval serves sockets sooner under load, at the price of one system
    /// call per look.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().event_interval(31).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn event_interval(mut self, tasks: u32) -> Self {
        self.event_interval = tasks.max(1);
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

    /// Records the runtime's scheduler timeline (every run of a task, spawn, wake-up, steal,
    /// park, ...; see [`trace`](crate::trace)) and writes it to `path`, in Chrome's
    /// trace-event JSON format, when the runtime is dropped or shut down, or on
    /// [`Runtime::write_trace`]. Off by default. A write that fails when the runtime is
    /// dropped is reported on standard error.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("ito-builder-doc-{}.json", std::process::id()));
    /// let rt = ito::Runtime::builder().workers(1).trace(&path).build().unwrap();
    /// rt.spawn_fn(|| 1).wait().unwrap();
    /// rt.write_trace().unwrap();
    /// assert!(std::fs::read_to_string(&path).unwrap().contains("\"poll\""));
    /// # drop(rt);
    /// # std::fs::remove_file(&path).ok();
    /// ```
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// The global runtime: its timers go to the process's driver, which code outside every
    /// runtime uses too.
    pub(super) fn process_timers(mut self) -> Self {
        self.process_timers = true;
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
        let task_stacks = StackPool::new(self.task_stack_size)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            injector: Injector::new(),
            sleep: Sleep::new(capacity, workers, self.idle_spin),
            threads: Threads::new(
                capacity,
                max_comp,
                self.stack_size,
                self.keep_alive,
                self.thread_name,
            ),
            shutdown: AtomicBool::new(false),
            counters: crossbeam_utils::CachePadded::new(Counters::default()),
            blocking: BlockingPool::new(self.max_blocking),
            trace: self.trace.map(crate::trace::Recorder::new),
            task_stacks: Some(task_stacks),
            refs: crossbeam_utils::CachePadded::new(super::owners::BlockRefs::new()),
            timers: (!self.process_timers).then(crate::time::Driver::new),
            event_interval: self.event_interval,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }));
        crate::time::trace_timers(shared);
        // The block is freed by its last owner (`owners.rs`), starting with this `Runtime`.
        let rt = Runtime {
            shared,
            owned: true,
        };
        for _ in 0..workers {
            // Dropping `rt` on failure shuts down the threads started so far and lets go.
            threads::start_thread(shared, false)?;
        }
        Ok(rt)
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            max_compensation: None,
            stack_size: 8 << 20,
            task_stack_size: StackPool::DEFAULT_SIZE,
            thread_name: "ito".to_string(),
            max_blocking: 64,
            keep_alive: Duration::from_secs(10),
            idle_spin: DEFAULT_IDLE_SPIN,
            event_interval: DEFAULT_EVENT_INTERVAL,
            trace: None,
            process_timers: false,
        }
    }
}
