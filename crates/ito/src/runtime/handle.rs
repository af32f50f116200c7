//! [`Runtime`]: the handle that owns a runtime, and the global runtime.

use std::future::{Future as StdFuture, IntoFuture};
use std::io;
use std::sync::OnceLock;

use super::{Builder, Metrics, Shared, block_on, inject, worker};
use crate::future::Task;

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
/// Then it joins its timer thread and drops its pending timers: a task waiting on one is
/// cancelled ([`ito::time`](crate::time) says what else sees it).
/// Its memory is freed once nothing refers to it any more: at once if no task of it is left,
/// else when the last of its tasks is freed (its last handle or waker dropped). A waker of
/// one of its tasks that is woken after the drop cancels the task instead of queuing it;
/// a handle of a task reads the task's result, or [`Failure::Cancelled`](crate::Failure).
/// A runtime dropped from one of its own threads, or shut down by a
/// [`shutdown_timeout`](Runtime::shutdown_timeout) that timed out, keeps its memory.
///
/// ```
/// let rt = ito::Runtime::builder().workers(1).build().unwrap();
/// let t = rt.spawn_fn(|| 7);
/// drop(rt); // queued tasks are cancelled; the handle keeps the task's memory alive
/// assert!(matches!(t.wait(), Ok(7) | Err(ito::Failure::Cancelled)));
/// ```
pub struct Runtime {
    pub(super) shared: &'static Shared,
    pub(super) owned: bool,
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

    /// Spawns an async task; its output goes to the returned [`Task`].
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.spawn(async { 7 }).wait(), Ok(7));
    /// ```
    pub fn spawn<F>(&self, fut: F) -> Task<F::Output>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        inject::spawn_on(self.shared, fut)
    }

    /// Runs a closure as a task (Scala's `Future { ... }`).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.spawn_fn(|| "done").wait(), Ok("done"));
    /// ```
    pub fn spawn_fn<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        inject::spawn_fn_on(self.shared, f)
    }

    /// Runs a closure that may block for long (file I/O, a C library) on the runtime's
    /// blocking pool, away from the workers.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let f = rt.spawn_blocking(|| std::fs::metadata(".").is_ok());
    /// assert_eq!(f.wait(), Ok(true));
    /// ```
    pub fn spawn_blocking<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
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
        crate::runtime::join::install_on(self.shared, f)
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
        self.shared.sleep.workers()
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

    /// Writes what this runtime has recorded so far to its trace file (see
    /// [`Builder::trace`]); events recorded while it writes may be left out. Dropping the
    /// runtime writes the whole trace. Fails with [`io::ErrorKind::InvalidInput`] if the
    /// runtime is not traced.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let err = rt.write_trace().unwrap_err(); // not traced
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn write_trace(&self) -> io::Result<()> {
        match self.shared.trace {
            Some(r) => r.write(),
            None => Err(crate::trace::not_traced()),
        }
    }
}

impl Runtime {
    /// Shuts the runtime down, waiting at most `timeout` for its threads to finish the tasks
    /// they are running (tokio's `shutdown_timeout`). Queued tasks are cancelled, as when a
    /// runtime is dropped. Returns whether every thread finished in time; a thread still
    /// running a task (one blocked outside ito, say) finishes it on its own and exits.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = ito::Runtime::builder().workers(2).build().unwrap();
    /// assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
    /// assert!(rt.shutdown_timeout(Duration::from_secs(10)));
    /// ```
    pub fn shutdown_timeout(mut self, timeout: std::time::Duration) -> bool {
        // Dropping `self` below must not shut down again without the bound.
        self.owned = false;
        let done = self
            .shared
            .shutdown_until(std::time::Instant::now().checked_add(timeout));
        self.write_final_trace();
        if done {
            self.shared.release_runtime();
        }
        done
    }

    /// After shutdown: writes the trace, if the runtime is traced.
    fn write_final_trace(&self) {
        if let Some(r) = self.shared.trace {
            if let Err(e) = r.write() {
                eprintln!("ito: cannot write the trace to {}: {e}", r.path().display());
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.owned {
            self.shared.shutdown();
            self.write_final_trace();
            self.shared.release_runtime();
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.shared.sleep.workers())
            .finish()
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
            let mut builder = Builder::default()
                .thread_name("ito-global")
                .process_timers();
            let trace = std::env::var_os("ITO_TRACE").filter(|p| !p.is_empty());
            if let Some(path) = trace {
                builder = builder.trace(path);
            }
            let mut rt = builder
                .build()
                .expect("ito: cannot start the global runtime's threads");
            rt.owned = false;
            if rt.shared.trace.is_some() {
                write_global_trace_at_exit();
            }
            rt
        })
        .shared
}

/// The runtime tasks spawned here go to, if it is already running: [`current`] without
/// starting the global runtime.
pub(crate) fn current_if_started() -> Option<&'static Shared> {
    worker::current_shared().or_else(|| GLOBAL.get().map(|rt| rt.shared))
}

/// Writes the global runtime's trace when the process exits normally (`exit`, or a return
/// from `main`), since the global runtime is never dropped.
fn write_global_trace_at_exit() {
    #[cfg(target_os = "linux")]
    {
        extern "C" fn write_at_exit() {
            if let Some(rt) = GLOBAL.get() {
                rt.write_final_trace();
            }
        }
        // SAFETY: registers a function that takes no arguments and touches only the global
        // runtime's recorder, which is never freed. A failed registration (`atexit` returns
        // non-zero) leaves `ito::trace::write` as the way to write the file.
        unsafe {
            libc::atexit(write_at_exit);
        }
    }
}
