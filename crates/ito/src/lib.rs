//! # ito — lightweight concurrency on one work-stealing scheduler
//!
//! ito runs tasks on a pool of worker threads (one per core by default) that steal work from
//! each other. A spawned task hands back a [`Task`]: the one reader of its result,
//! `Result<T, Failure>`, which *moves* to it (no `Clone`). You can `.await` it (it is a
//! `std::future::Future`), or simply [`wait`](Task::wait) for it, even from inside another
//! task: waiting never pins a worker, and a wait for a task nobody has started runs that task
//! inline. Turned into a [`Future`] ([`Task::shared`]), a result has many readers and Scala's
//! combinators. A wait on anything else (a promise, a channel, a timer) suspends the waiting
//! code on its stack while the worker goes on with other tasks ([`design::coroutines`]), so
//! acyclic graphs of blocking waits never deadlock and 100,000 blocked tasks cost stacks, not
//! threads ([`design::scheduler`]).
//!
//! ## A tour
//!
//! **Spawn work.** [`spawn_fn`] runs a closure as a task (Scala's `Future { ... }`);
//! [`spawn`] runs an async block; [`spawn_blocking`] runs something that blocks for long
//! on a separate pool ([`fs`] runs file I/O there for you). Each returns a [`Task`].
//! [`named`]`("conn").spawn(..)` gives a task a name that a [`trace`] shows on its runs.
//!
//! ```
//! let answer = ito::spawn_fn(|| 6 * 7);
//! let greeting = ito::spawn(async { "hello" });
//! assert_eq!(answer.wait(), Ok(42));
//! assert_eq!(greeting.wait(), Ok("hello"));
//! ```
//!
//! **Results move.** A task's result goes to its [`Task`] as it is: no `Clone`, no `Arc`. A
//! panic keeps its payload, to resume it. And a `Task` is a `std::future::Future`, so the
//! ecosystem's combinators take it as it is.
//!
//! ```
//! // a task's result moves to its awaiter: no Clone, no Arc
//! let f: Result<std::io::Result<std::fs::File>, ito::Failure> =
//!     ito::block_on(ito::spawn(async { std::fs::File::open("Cargo.toml") }));
//! let v: Result<Vec<String>, ito::Failure> = ito::spawn_fn(|| vec![String::from("moved")]).wait();
//! # assert!(f.unwrap().is_ok());
//! # assert_eq!(v, Ok(vec![String::from("moved")]));
//! // a panic's payload survives, and can be resumed
//! let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(42u32) }).wait().unwrap_err();
//! assert_eq!(err.into_panic().unwrap().downcast::<u32>().ok().map(|b| *b), Some(42));
//! // ito's task handles are std futures: the ecosystem's combinators take them as they are
//! let all = ito::block_on(futures::future::join_all((0..4).map(|i| ito::spawn(async move { i }))));
//! # assert_eq!(all, [Ok(0), Ok(1), Ok(2), Ok(3)]);
//! ```
//!
//! **`select!`.** Use `futures::select_biased!` (or `futures::select!`) on ito's handles: it
//! wants `Unpin + FusedFuture` futures, and a [`Task`] is both, so it takes them as they are
//! (by `&mut`: the loser keeps its result for later). Which ito futures may be dropped in a
//! losing branch without losing anything is in the [design notes](design::results), a table
//! per future.
//!
//! ```
//! let mut fast = ito::spawn(async { "fast" });
//! let mut slow = ito::spawn(async { ito::Future::<()>::never().await.map(|()| "slow") });
//! let winner = ito::block_on(async {
//!     futures::select_biased! {
//!         r = fast => r.unwrap(),
//!         r = slow => r.unwrap().unwrap(),
//!     }
//! });
//! assert_eq!(winner, "fast");
//! assert!(slow.abort()); // the loser runs on unless cancelled
//! ```
//!
//! **Wait however you like.** The classic deadlock of thread-pool futures (every worker
//! blocked in `Await.result` on a task that has no worker left to run it) cannot happen: a
//! waiting worker runs the awaited task itself if nobody started it, and otherwise suspends the
//! waiting code and goes on with other tasks; it resumes, on the same thread, when the result
//! is there. Only blocking outside ito ([`block_in_place`], a std lock) holds a thread; those
//! threads are bounded (`workers + max_compensation + 256`), and a graph with more such blocks
//! than that in progress at once stalls, which the runtime reports on standard error. Do not
//! hold a `std::sync::MutexGuard` across a wait; hold an [`ito::sync::Mutex`](sync::Mutex)
//! guard instead.
//!
//! ```
//! fn fib(n: u64) -> ito::Task<u64> {
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
//! **Compose.** A [`Future`] is a result many readers share (Scala's semantics);
//! [`Task::shared`] makes one of a task's handle. Combinators register a continuation in the
//! future's cell; no thread waits.
//!
//! ```
//! let a = ito::spawn_fn(|| 20).shared();
//! let b = ito::spawn_fn(|| 22).shared();
//! let sum = a.zip(&b).map(|(x, y)| x + y);
//! assert_eq!(sum.wait(), Ok(42));
//! let safe = ito::Future::<u32>::failed(ito::Failure::msg("down")).recover(|_| 0);
//! assert_eq!(safe.wait(), Ok(0));
//! ```
//!
//! **Promise.** A [`Promise`] is the writing end; the first completion wins, and dropping
//! every promise handle breaks the future instead of leaving it hanging. A promise made by
//! [`Promise::with_task`] has one reader, a [`Task`], to which the value moves.
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
//! task ([`Task::abort`]) drops an async task at its next `.await`; a synchronous one sees
//! it in ito's blocking calls, which return [`Failure::Cancelled`]. Dropping a `Task` does
//! not cancel its task.
//!
//! ```
//! let words = ["tasks", "that", "borrow"];
//! let lengths = ito::scope_fn(|s| {
//!     let handles: Vec<_> = words.iter().map(|w| s.spawn_fn(move || w.len())).collect();
//!     handles.into_iter().map(|h| h.wait().unwrap()).sum::<usize>()
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
//! **Files and signals.** [`fs`] is `std::fs` as async functions and an async [`fs::File`],
//! run on the blocking pool; [`signal`] turns Ctrl-C and `SIGTERM` into futures, for a
//! graceful shutdown.
//!
//! ```
//! let path = std::env::temp_dir().join(format!("ito-doc-tour-{}", std::process::id()));
//! ito::block_on(async {
//!     ito::fs::write(&path, "saved").await?;
//!     assert_eq!(ito::fs::read_to_string(&path).await?, "saved");
//!     ito::fs::remove_file(&path).await
//! })
//! .unwrap();
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
//! stacks](design::coroutines), [tracing](design::trace), [files and
//! signals](design::fs_and_signals), [results that move, `Task` and
//! `select!`](design::results) and [I/O](design::io). [`future`] lists every
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
//! | the completion cell behind every [`Task`] and [`Future`]: one result, a lock-free waiter list | `future/cell/` (`CompletionCell`, `CellWaiter`) |
//! | the unique handle that moves a result out; the async waiter node | `future/task.rs` (`Task`), `future/wait.rs` (`Registration`) |
//! | combinators, promises, collections | `future/` |
//! | the runtime: builder, handle, queues, workers, threads, shutdown, metrics | `runtime/` (its module docs have a table) |
//! | parking: searching, sleeping, waking, outside threads, the spin policy | `runtime/park/` (`README.md` there has the protocol) |
//! | a blocking wait: help with the awaited task, else suspend (or block and compensate) | `runtime/block_until.rs` |
//! | how a wait blocks: suspend the worker loop, or park the thread | `runtime/park/blocker.rs` (`Blocker`, `Unblocker`, `LoopPark`) |
//! | worker loops on task stacks: the trampoline, spare loops, the resume queue | `runtime/loops.rs` |
//! | fork-join: the join stack, the shelf, the latch | `runtime/join/` (part of the runtime: workers steal its jobs) |
//! | cancellation of tasks | `task/cancel.rs` |
//! | scopes, `race`, `TaskSet`, `CancellationToken` | `scope/` |
//! | semaphores, locks, latches, pools; one wait list | `sync/` (`sync/wait_list.rs`) |
//! | channels | `channel/` |
//! | processes: the block, the mailbox, links, monitors, supervisors | `process/` |
//! | STM: variables, the transaction log, commit, `retry` sleepers | `stm/` |
//! | small values freed on another thread (STM values, mailbox nodes) | `magazine.rs` |
//! | timers | `time/` |
//! | the I/O driver: readiness of one source (the state machine), the table of sources, `mio::Poll` and its waker | `io/` (`scheduled.rs`, `registry.rs`, `driver.rs`); an idle thread polls it in `runtime/park/parker.rs`, a running worker every `Builder::event_interval` tasks in `runtime/worker.rs` |
//! | sockets: TCP, UDP, Unix; async, `futures-io` and `std::io` on one registration | `net/` |
//! | stackful coroutines: pooled guarded stacks, suspend and resume, overflow reports | `coro/` |
//! | loom's or std's atomics, for every state machine | `loom.rs`; models in `tests/` |
//! | files: free functions and `read_dir` as blocking-pool jobs; `File`'s one-operation state machine and its buffer; its I/O traits | `fs/` (`blocking.rs`, `file_state.rs`, `buf.rs`, `file_io.rs`) |
//! | signals: the lazily started forwarding thread and one `watch` channel per signal; `Signal`, `SignalKind`, `ctrl_c` | `signal/` (`registry.rs`, `unix.rs`) |
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
//! 4. *cell*: `future/cell/` `CompletionCell::complete_claimed` publishes the result with one
//!    release CAS and takes the waiter list.
//! 5. *waiter*: each waiter's notify function runs. These are the hooks: a waiter parked in
//!    `runtime/block_until.rs` (`notify_thread` unblocks it: unparks its thread, or queues its
//!    suspended loop at home, `runtime/loops.rs`), an async waiter's `Waker` (for a
//!    task: `task/waker.rs` wakes it, which calls `Schedule::schedule` on its runtime,
//!    `runtime/inject.rs`), or a combinator's callback (`future/`).

#![warn(missing_docs)]
#![warn(missing_debug_implementations)]

pub mod channel;
#[cfg(target_os = "linux")]
pub(crate) mod coro;
mod failure;
pub mod fs;
pub mod future;
mod io;
mod loom;
mod magazine;
#[cfg(all(unix, not(loom)))]
pub mod net;
pub mod process;
mod runtime;
pub mod scope;
#[cfg(unix)]
pub mod signal;
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
    #[doc = include_str!("../../../docs/fs-and-signals.md")]
    pub mod fs_and_signals {}
    #[doc = include_str!("../../../docs/results.md")]
    pub mod results {}
    #[doc = include_str!("../../../docs/io.md")]
    pub mod io {}
}

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub use failure::{Failure, PanicPayload};
pub use future::{Future, Promise, Task};
pub use runtime::join::{block_in_place, join, join3};
pub use runtime::{Builder, Metrics, Named, Runtime, block_on, named};
pub use scope::{
    CancellationToken, Scope, ScopeError, TaskSet, first_ok, race, scope, scope_fn,
    scope_fn_supervised, scope_supervised,
};
pub use time::{Timeout, sleep, sleep_until, timeout};

#[doc(hidden)]
pub use task::task_size;

use std::future::Future as StdFuture;

/// Spawns an async task on the current runtime; its output moves to the returned [`Task`].
///
/// ```
/// let f = ito::spawn(async { 1 + 1 });
/// assert_eq!(ito::block_on(f), Ok(2));
/// ```
#[inline]
pub fn spawn<F>(fut: F) -> Task<F::Output>
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
pub fn spawn_fn<F, T>(f: F) -> Task<T>
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
/// assert!(task.abort());
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
pub fn spawn_blocking<F, T>(f: F) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let shared = runtime::current();
    shared.blocking.spawn(shared, f)
}
