//! Synchronization for tasks and threads: [`Semaphore`], [`Mutex`], [`RwLock`], [`Latch`],
//! [`WaitGroup`], [`Barrier`], [`Notify`], the bounded task [`Pool`], and the channels that
//! are not a queue: [`broadcast`] (every receiver gets every value), [`watch`] (the latest
//! value) and [`oneshot`] (one value). The multi-producer, multi-consumer queue is
//! [`channel`](crate::channel).
//!
//! Every primitive can be used three ways:
//!
//! - **async**: `sem.acquire().await`, `mutex.lock().await`, `latch.wait().await`: the task
//!   suspends; it costs no thread.
//! - **blocking**, from plain code: `acquire_blocking()`, `lock_blocking()`,
//!   `wait_blocking()`. On a worker thread these never pin the worker: they hand its place to
//!   another thread while they wait (as [`Future::wait`](crate::Future::wait) does), so a
//!   blocking call inside a task cannot starve the tasks it waits for, even on a one-worker
//!   runtime. They fail with a `Cancelled` error when the task calling them is cancelled.
//! - **non-blocking**: `try_acquire()`, `try_lock()`, `try_recv()` never wait.
//!
//! # One wait list
//!
//! The queueing primitives share one design (`wait_list.rs`): a FIFO, intrusive list of nodes
//! that live inside the waiting futures, guarded by the primitive's mutex, in front of which
//! each primitive keeps a lock-free fast path. [`Mutex`] and [`RwLock`] are a [`Semaphore`]
//! with one permit and with `MAX_READERS` permits (a writer takes them all), as in tokio, so
//! they inherit its fairness: strict arrival order, no writer starvation. [`Pool`] is a
//! semaphore whose queued waiters are tasks that have not started. [`Latch`], [`WaitGroup`] and
//! [`Barrier`] release everyone at once, which is what a [`Promise`](crate::Promise)'s
//! completion cell does; they are built on it. `docs/sync.md` has the design, the fairness and
//! cancel-safety arguments and the loom coverage.
//!
//! ```
//! use std::sync::Arc;
//! use ito::sync::{Latch, Mutex};
//!
//! let total = Arc::new(Mutex::new(0));
//! let done = Arc::new(Latch::new(10));
//! for i in 0..10 {
//!     let (total, done) = (total.clone(), done.clone());
//!     ito::spawn(async move {
//!         *total.lock().await += i;
//!         done.count_down();
//!     });
//! }
//! done.wait_blocking().unwrap();
//! assert_eq!(*total.lock_blocking().unwrap(), 45);
//! ```

mod acquire;
mod barrier;
pub mod broadcast;
mod condvar;
mod error;
mod latch;
mod mutex;
mod notify;
pub mod oneshot;
mod permit;
mod pool;
mod rwlock;
mod semaphore;
mod wait_group;
pub(crate) mod wait_list;
pub mod watch;

use std::future::Future as StdFuture;
use std::pin::pin;

pub use acquire::{Acquire, AcquireOwned};
pub use barrier::{Barrier, BarrierWait, BarrierWaitResult};
pub use error::{AcquireError, Cancelled, TryAcquireError, TryLockError};
pub use latch::{Latch, LatchWait};
pub use mutex::{Lock, Mutex, MutexGuard};
pub use notify::{Notified, Notify};
pub use permit::{OwnedSemaphorePermit, SemaphorePermit};
pub use pool::{Pool, Reservation, Reserve};
pub use rwlock::{Read, RwLock, RwLockReadGuard, RwLockWriteGuard, Write};
pub use semaphore::Semaphore;
pub use wait_group::{WaitGroup, WaitGroupWait};

pub(crate) use crate::runtime::park::spin_briefly;

/// Runs `fut` to completion on this thread, the way every blocking call of this module waits:
/// through `block_on_cancellable`, which parks the thread (handing a worker's place to another
/// thread meanwhile) and gives up with `Cancelled` when the synchronous task running here is
/// cancelled. `fut` is dropped before this returns, so a cancelled wait leaves its queue.
pub(crate) fn block<F: StdFuture>(fut: F) -> Result<F::Output, Cancelled> {
    block_pinned(pin!(fut))
}

/// [`block`] on a future the caller keeps (to take a value back out of it after a
/// cancellation).
pub(crate) fn block_pinned<F: StdFuture>(
    fut: std::pin::Pin<&mut F>,
) -> Result<F::Output, Cancelled> {
    crate::runtime::block_on_cancellable(fut).map_err(|_| Cancelled)
}
