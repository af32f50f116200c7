//! # ito — lightweight concurrency on one work-stealing scheduler
//!
//! ito runs tasks on a pool of worker threads (one per core by default) that steal work from
//! each other. Everything a task produces is a [`Future`]: a cheap, cloneable handle on one
//! result, `Result<T, Failure>`. You can `.await` it, compose it, or simply
//! [`wait`](Future::wait) for it, even from inside another task: waiting never pins a worker,
//! and a wait for a task nobody has started runs that task inline, so fork-join graphs of
//! blocking waits never deadlock. A wait on anything else (a promise, a channel, a timer)
//! still holds a thread while it blocks, up to a bound the [design notes](design::scheduler)
//! state; synchronous tasks that suspend instead are the next step ([`design::coroutines`]).
//!
//! ## A tour
//!
//! **Spawn work.** [`spawn_fn`] runs a closure as a task (Scala's `Future { ... }`);
//! [`spawn`] runs an async block; [`spawn_blocking`] runs something that blocks for long
//! (file I/O) on a separate pool.
//!
//! ```
//! let answer = ito::spawn_fn(|| 6 * 7);
//! let greeting = ito::spawn(async { "hello" });
//! assert_eq!(answer.wait(), Ok(42));
//! assert_eq!(greeting.wait(), Ok("hello"));
//! ```
//!
//! **Wait however you like.** The classic deadlock of thread-pool futures (every worker
//! blocked in `Await.result` on a task that has no worker left to run it) cannot happen: a
//! waiting worker runs the awaited task itself if nobody started it, and otherwise hands its
//! place to a compensation thread while it sleeps. Those threads are bounded
//! (`workers + max_compensation + 256`): a graph with more blocked waits than that in progress
//! at once stalls, and the runtime reports it on standard error.
//!
//! ```
//! fn fib(n: u64) -> ito::Future<u64> {
//!     ito::spawn_fn(move || {
//!         if n < 2 { return n; }
//!         let (a, b) = (fib(n - 1), fib(n - 2));
//!         a.wait().unwrap() + b.wait().unwrap()
//!     })
//! }
//! let rt = ito::Runtime::builder().workers(1).build().unwrap();
//! assert_eq!(rt.spawn_fn(|| fib(20).wait()).wait(), Ok(Ok(6765)));
//! ```
//!
//! **Compose.** Combinators register a continuation in the future's cell; no thread waits.
//!
//! ```
//! let a = ito::spawn_fn(|| 20);
//! let b = ito::spawn_fn(|| 22);
//! let sum = a.zip(&b).map(|(x, y)| x + y);
//! assert_eq!(sum.wait(), Ok(42));
//! let safe = ito::Future::<u32>::failed(ito::Failure::msg("down")).recover(|_| 0);
//! assert_eq!(safe.wait(), Ok(0));
//! ```
//!
//! **Promise.** A [`Promise`] is the writing end; the first completion wins, and dropping
//! every promise handle breaks the future instead of leaving it hanging.
//!
//! ```
//! let p = ito::Promise::new();
//! let f = p.future();
//! assert!(p.try_success(1));
//! assert!(!p.try_success(2));
//! assert_eq!(f.wait(), Ok(1));
//! ```
//!
//! **Fork-join.** [`join`] runs two closures, in parallel when a worker is free to take the
//! second. A fork nobody takes costs about as much as a function call, so you can fork at
//! every level of a recursion instead of tuning a cutoff. [`Runtime::install`] runs a closure
//! on a chosen runtime.
//!
//! ```
//! fn sum(v: &[u64]) -> u64 {
//!     if v.len() <= 1 {
//!         return v.iter().sum();
//!     }
//!     let (l, r) = v.split_at(v.len() / 2);
//!     let (a, b) = ito::join(|| sum(l), || sum(r));
//!     a + b
//! }
//! let v: Vec<u64> = (1..=1000).collect();
//! assert_eq!(sum(&v), 500_500);
//! ```
//!
//! **Transactions.** [`stm`] is software transactional memory: [`stm::TVar`]s read and
//! written in [`stm::atomically`] blocks that commit all at once, [`stm::retry`] to wait for a
//! condition, and promises that complete inside transactions, several at once.
//!
//! ```
//! use ito::stm::{atomically, check, TVar};
//! let stock = TVar::new(2);
//! let sold = ito::Promise::new();
//! atomically(|tx| {
//!     let n = stock.read(tx)?;
//!     check(n > 0)?; // out of stock: wait until restocked
//!     stock.write(tx, n - 1)?;
//!     sold.try_success_tx(tx, "widget")
//! });
//! assert_eq!((stock.read_atomic(), sold.future().wait()), (1, Ok("widget")));
//! ```
//!
//! **Structured concurrency.** [`scope_fn`] runs children that may borrow from the caller
//! and does not return before all of them ended; the first failure cancels the rest. [`race`],
//! [`first_ok`], [`TaskSet`] and [`CancellationToken`] cover the other shapes. Cancelling a
//! task ([`Future::cancel`]) drops an async task at its next `.await`; a synchronous one sees
//! it in ito's blocking calls, which return [`Failure::Cancelled`].
//!
//! ```
//! let words = ["tasks", "that", "borrow"];
//! let lengths = ito::scope_fn(|s| {
//!     let handles: Vec<_> = words.iter().map(|w| s.spawn_fn(move || w.len())).collect();
//!     handles.iter().map(|h| h.wait().unwrap()).sum::<usize>()
//! });
//! assert_eq!(lengths.unwrap(), 15);
//!
//! let slow = ito::spawn(async { ito::Future::<u8>::never().await.unwrap() });
//! let fast = ito::spawn(async { 1u8 });
//! assert_eq!(ito::race(slow, fast).wait(), Ok(1)); // `slow` is cancelled
//! ```
//!
//! **Processes.** [`process`] is Erlang's process model: [`process::spawn`] a body that
//! receives from its own mailbox, address it with a [`process::Pid`], link, monitor and
//! supervise processes. A waiting process costs about 120 bytes.
//!
//! ```
//! use ito::process::{self, Mailbox};
//! let (tx, rx) = std::sync::mpsc::channel();
//! let doubler = process::spawn(move |mut mb: Mailbox<u32>| async move {
//!     let n = mb.recv().await;
//!     tx.send(2 * n).unwrap();
//! });
//! doubler.send(21).unwrap();
//! assert_eq!(rx.recv().unwrap(), 42);
//! ```
//!
//! **Sockets.** [`net`] has TCP, UDP and Unix-domain sockets on the runtime's I/O driver: an
//! idle worker waits for readiness in the OS poller, and a task waiting on a socket wakes on
//! the worker that saw it ready. Streams implement `futures-io`'s `AsyncRead`/`AsyncWrite`, and
//! `std::io::Read`/`Write` for synchronous code (a [`spawn_fn`] task, a process, a thread).
//!
//! ```
//! use std::io::{Read, Write};
//! let listener = ito::block_on(ito::net::TcpListener::bind("127.0.0.1:0")).unwrap();
//! let addr = listener.local_addr().unwrap();
//! let server = ito::spawn_fn(move || {
//!     let (mut conn, _) = ito::block_on(listener.accept()).unwrap();
//!     let mut buf = [0; 4];
//!     conn.read_exact(&mut buf).unwrap();
//!     conn.write_all(&buf).unwrap();
//! });
//! let mut conn = ito::block_on(ito::net::TcpStream::connect(addr)).unwrap();
//! conn.write_all(b"ping").unwrap();
//! let mut pong = [0; 4];
//! conn.read_exact(&mut pong).unwrap();
//! assert_eq!((&pong, server.wait()), (b"ping", Ok(())));
//! ```
//!
//! **Failures** are values: a panic in a task or combinator becomes [`Failure::Panic`] with
//! its message and its payload (which [`Failure::into_panic`] hands back, to resume it); a
//! user error keeps its type ([`Failure::downcast_ref`]); timeouts are [`Failure::Timeout`].
//!
//! ```
//! use std::time::Duration;
//! let f = ito::spawn_fn(|| -> u8 { panic!("bad input") });
//! assert_eq!(f.wait(), Err(ito::Failure::Panic("bad input".into())));
//! let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(42u32) }).wait().unwrap_err();
//! assert_eq!(err.into_panic().unwrap().downcast::<u32>().ok().map(|b| *b), Some(42));
//! let slow = ito::Future::<u8>::never().with_timeout(Duration::from_millis(1));
//! assert_eq!(slow.wait(), Err(ito::Failure::Timeout));
//! ```
//!
//! **Runtimes.** The free functions use the current worker's runtime, or a global one started
//! on first use. [`Runtime::builder`] makes one of a chosen size, with [`Metrics`].
//!
//! ## Where to read more
//!
//! The design notes are part of these docs, under [`design`]:
//! [the scheduler](design::scheduler) (the sleep protocol, and why `wait()` cannot deadlock),
//! [fork-join](design::join), [the STM](design::stm), [cancellation and
//! scopes](design::structured), [`sync` and `channel`](design::sync),
//! [processes](design::process), [`ito-find`](design::find), [coroutine
//! stacks](design::coroutines), [tracing](design::trace) and [I/O](design::io). [`future`] lists every
//! combinator and the collection functions.
//!
//! ## Internals
//!
//! Where each concept lives, for a reader of the source:
//!
//! | concept | where |
//! |---|---|
//! | a task: one allocation of header, completion cell and body; its state word | `task/mod.rs`, `task/state.rs` |
//! | task memory (size classes, per-thread magazines) | `task/slab.rs` |
//! | what a task needs from a scheduler | `task::Schedule`, implemented in `runtime/inject.rs` |
//! | the completion cell behind every [`Future`]: one result, a lock-free waiter list | `future/cell.rs` (`CompletionCell`, `CellWaiter`) |
//! | combinators, promises, collections | `future/` |
//! | the runtime: builder, handle, queues, workers, threads, shutdown, metrics | `runtime/` (its module docs have a table) |
//! | parking: searching, sleeping, waking, outside threads, the spin policy | `runtime/park/` (`README.md` there has the protocol) |
//! | a blocking wait: help with the awaited task, else block and compensate | `runtime/block_until.rs` |
//! | fork-join: the join stack, the shelf, the latch | `runtime/join/` (part of the runtime: workers steal its jobs) |
//! | cancellation of tasks | `task/cancel.rs` |
//! | scopes, `race`, `TaskSet`, `CancellationToken` | `scope/` |
//! | semaphores, locks, latches, pools; one wait list | `sync/` (`sync/wait_list.rs`) |
//! | channels | `channel/` |
//! | processes: the block, the mailbox, links, monitors, supervisors | `process/` |
//! | STM: variables, the transaction log, commit, `retry` sleepers | `stm/` |
//! | small values freed on another thread (STM values, mailbox nodes) | `magazine.rs` |
//! | timers | `time/` |
//! | the I/O driver: readiness of one source (the state machine), the table of sources, `mio::Poll` and its waker | `io/` (`scheduled.rs`, `registry.rs`, `driver.rs`); an idle thread polls it in `runtime/park/parker.rs`, a running worker every 61 tasks in `runtime/worker.rs` |
//! | sockets: TCP, UDP, Unix; async, `futures-io` and `std::io` on one registration | `net/` |
//! | stackful coroutines: pooled guarded stacks, suspend and resume, overflow reports | `coro/` |
//! | loom's or std's atomics, for every state machine | `loom.rs`; models in `tests/` |
//! | tracing: per-thread event buffers, the recorder, the runtime's recording calls, the Chrome JSON export | `trace/` (`buffer.rs`, `recorder.rs`, `hooks.rs`, `chrome.rs`); the calls sit in `runtime/` behind `Shared::trace` |
//!
//! **A spawned task's path.** `ito::spawn_fn(f)` (`lib.rs`) enters the runtime once, the task
//! module once and the future module once, in that order; everything else goes through a
//! declared hook.
//!
//! 1. *spawn*: `runtime/inject.rs` `spawn_fn_on` asks `task/mod.rs` `new_fn` for the
//!    allocation (header, cell, body; a call that returns), then `Shared::push_new` queues the
//!    `TaskRef` on this worker's deque (`worker.rs` `push_spawned`) or the injector, and
//!    `park/` `Sleep::notify` wakes a sleeper if needed.
//! 2. *queue*: `runtime/worker.rs` `run_loop` takes it (`next_local`, or `steal_anywhere`),
//!    and calls `TaskRef::run` (`task/mod.rs`).
//! 3. *poll*: `task/mod.rs` wins `SCHEDULED → RUNNING` (`task/state.rs`), runs the body
//!    (`FnTask::poll`), and completes the outcome (`complete`), which is the cell's only
//!    completer.
//! 4. *cell*: `future/cell.rs` `CompletionCell::complete_claimed` publishes the result with one
//!    release CAS and takes the waiter list.
//! 5. *waiter*: each waiter's notify function runs. These are the hooks: a thread parked in
//!    `runtime/block_until.rs` (`notify_thread` unparks it), an async waiter's `Waker` (for a
//!    task: `task/waker.rs` wakes it, which calls `Schedule::schedule` on its runtime,
//!    `runtime/inject.rs`), or a combinator's callback (`future/`).

#![warn(missing_docs)]
#![warn(missing_debug_implementations)]

pub mod channel;
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) mod coro;
mod failure;
pub mod future;
mod io;
mod loom;
mod magazine;
#[cfg(all(unix, not(loom)))]
pub mod net;
pub mod process;
mod runtime;
pub mod scope;
pub mod stm;
pub mod sync;
mod task;
pub mod time;
pub mod trace;

#[cfg(all(test, loom))]
mod tests;

/// ito's design notes, the files in the repository's `docs/`, rendered with the API docs so
/// that `cargo doc` checks their links.
pub mod design {
    #[doc = include_str!("../../../docs/scheduler.md")]
    pub mod scheduler {}
    #[doc = include_str!("../../../docs/join.md")]
    pub mod join {}
    #[doc = include_str!("../../../docs/stm.md")]
    pub mod stm {}
    #[doc = include_str!("../../../docs/structured.md")]
    pub mod structured {}
    #[doc = include_str!("../../../docs/sync.md")]
    pub mod sync {}
    #[doc = include_str!("../../../docs/process.md")]
    pub mod process {}
    #[doc = include_str!("../../../docs/find.md")]
    pub mod find {}
    #[doc = include_str!("../../../docs/coroutines.md")]
    pub mod coroutines {}
    #[doc = include_str!("../../../docs/trace.md")]
    pub mod trace {}
    #[doc = include_str!("../../../docs/io.md")]
    pub mod io {}
}

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub use failure::{Failure, PanicPayload};
pub use future::{Future, Promise};
pub use runtime::join::{block_in_place, join, join3};
pub use runtime::{Builder, Metrics, Runtime, block_on};
pub use scope::{
    CancellationToken, Scope, ScopeError, TaskSet, first_ok, race, scope, scope_fn,
    scope_fn_supervised, scope_supervised,
};
pub use time::{Timeout, sleep, sleep_until, timeout};

#[doc(hidden)]
pub use task::task_size;

use std::future::Future as StdFuture;

/// Spawns an async task on the current runtime; its output completes the returned future.
///
/// ```
/// let f = ito::spawn(async { 1 + 1 });
/// assert_eq!(ito::block_on(f), Ok(2));
/// ```
#[inline]
pub fn spawn<F>(fut: F) -> Future<F::Output>
where
    F: StdFuture + Send + 'static,
    F::Output: Send + 'static,
{
    runtime::spawn_on(runtime::current(), fut)
}

/// Runs a closure as a task on the current runtime (Scala's `Future { ... }`).
///
/// ```
/// let f = ito::spawn_fn(|| "done");
/// assert_eq!(f.wait(), Ok("done"));
/// ```
#[inline]
pub fn spawn_fn<F, T>(f: F) -> Future<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    runtime::spawn_fn_on(runtime::current(), f)
}

/// Whether the synchronous task running on this thread (a [`spawn_fn`] closure) has been
/// cancelled, for long computations that want to stop early between blocking calls.
/// Always `false` outside a synchronous task.
///
/// ```
/// use std::sync::mpsc::channel;
/// let (started, is_started) = channel();
/// let (report, reported) = channel();
/// let gate = ito::Promise::<()>::new();
/// let g = gate.future();
/// let task = ito::spawn_fn(move || {
///     started.send(()).unwrap();
///     let r = g.wait(); // returns once the task is cancelled
///     report.send((r, ito::is_cancelled())).unwrap();
/// });
/// is_started.recv().unwrap();
/// assert!(task.cancel());
/// assert_eq!(reported.recv().unwrap(), (Err(ito::Failure::Cancelled), true));
/// ```
#[inline]
pub fn is_cancelled() -> bool {
    task::cancel::current_cancelled()
}

/// Runs a closure that may block for long on the current runtime's blocking pool.
///
/// ```
/// let f = ito::spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(1)));
/// assert_eq!(f.wait(), Ok(()));
/// ```
pub fn spawn_blocking<F, T>(f: F) -> Future<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + Sync + 'static,
{
    let shared = runtime::current();
    shared.blocking.spawn(shared, f)
}
