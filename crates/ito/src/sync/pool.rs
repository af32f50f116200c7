//! [`Pool`]: run at most `limit` tasks at a time; queue the rest.
//!
//! # How it works
//!
//! A pool is a [`Semaphore`] of `limit` permits whose waiters are tasks that have not started.
//! [`Pool::spawn`] takes a permit with one CAS if one is free and spawns the task as usual,
//! holding it. Otherwise it allocates the task **idle** (not in any run queue, never polled)
//! and queues the wait-list node inside the task's body, in spawn order. When a running pool
//! task ends, its permit goes straight to the oldest queued node (the semaphore's hand-off)
//! and wakes that task, which lands in the releasing worker's LIFO slot and runs next. So:
//!
//! - **A queued task costs its allocation and nothing else**: one task (header, completion
//!   cell, the future or closure, and a 40-byte wait-list node), no run-queue entry, no poll,
//!   no thread, no stack. `Pool::spawn` allocates exactly what `ito::spawn` allocates.
//! - **Start order is spawn order** (FIFO), and a task never starts while `limit` are
//!   running: the high-water mark is exact (`tests/sync_pool.rs` checks it with an atomic
//!   maximum).
//! - The slot is released when the task's body is dropped: when it completes, panics or is
//!   cancelled. A queued task that is cancelled leaves the queue (the semaphore's cancel
//!   safety).
//! - [`Pool::reserve`] / [`Pool::reserve_blocking`] / [`Pool::spawn_blocking_wait`] apply
//!   back-pressure instead: the caller waits until a slot is free, then spawns into it, so
//!   nothing queues at all.
//!
//! # Not Coro's `$Coro::POOL_SIZE`
//!
//! Perl Coro's `async_pool` (document 003) reuses idle coroutines, and `$Coro::POOL_SIZE`
//! caps how many *idle* coroutines are kept for reuse, not how many run: a burst of 10,000
//! `async_pool` calls still creates 10,000 coroutines, each with its own stack, which is why
//! the document measured no gain in speed or memory until it added a semaphore by hand. An
//! ito `Pool` caps the *running* tasks, and there is nothing to reuse: an ito task is
//! stackless, one allocation of about a hundred bytes plus its future, so a queued task costs
//! no more than a spawned one, and the pool is for bounding concurrency (connections, file
//! descriptors, memory in flight), not for saving coroutine creation. The document's limited
//! pool (`down` before `async_pool`, `up` at the end) is [`Pool::spawn_blocking_wait`]; its
//! channel pool (workers reading closures from a bounded channel) is easy to write with
//! [`channel::bounded`](crate::channel::bounded), and `ito-bench pool` measures all of them.
//! Pools are independent of each other (Coro's pool is one per program); a task in a pool
//! that waits for a slot of the same pool can deadlock it, as with any semaphore.

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::acquire::{AcquireOwned, RawAcquire};
use super::permit::OwnedSemaphorePermit;
use super::semaphore::Semaphore;
use super::{Cancelled, block, spin_briefly};
use crate::{Task, runtime, task};

/// Runs at most `limit` of its tasks at a time; the others wait, in spawn order, without
/// costing more than their allocation. Cloning a pool gives another handle on the same slots.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let pool = ito::sync::Pool::new(2);
/// let (now, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
/// let tasks: Vec<_> = (0..10)
///     .map(|i| {
///         let (now, max) = (now.clone(), max.clone());
///         pool.spawn(async move {
///             max.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
///             ito::sleep(std::time::Duration::from_millis(1)).await.unwrap();
///             now.fetch_sub(1, Ordering::SeqCst);
///             i
///         })
///     })
///     .collect();
/// let sum: i32 = tasks.into_iter().map(|t| t.wait().unwrap()).sum();
/// assert_eq!(sum, 45);
/// assert!(max.load(Ordering::SeqCst) <= 2);
/// ```
#[derive(Clone)]
pub struct Pool {
    sem: Arc<Semaphore>,
    limit: usize,
}

impl Pool {
    /// A pool running at most `limit` tasks at a time.
    ///
    /// # Panics
    /// If `limit` is 0 (nothing could ever run) or above
    /// [`Semaphore::MAX_PERMITS`](super::Semaphore::MAX_PERMITS).
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(8);
    /// assert_eq!(pool.limit(), 8);
    /// ```
    pub fn new(limit: usize) -> Pool {
        assert!(limit > 0, "Pool::new: the limit must be at least 1");
        Pool {
            sem: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// The most tasks that run at a time.
    ///
    /// ```
    /// assert_eq!(ito::sync::Pool::new(3).limit(), 3);
    /// ```
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Slots taken right now: tasks running, or handed a slot and about to run, and
    /// [`Reservation`]s not yet used.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(2);
    /// let r = pool.reserve_blocking().unwrap();
    /// assert_eq!(pool.running(), 1);
    /// drop(r);
    /// assert_eq!(pool.running(), 0);
    /// ```
    pub fn running(&self) -> usize {
        self.limit - self.sem.available_permits()
    }

    /// Tasks waiting for a slot.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(1);
    /// let gate = ito::Promise::<()>::new();
    /// let g = gate.future();
    /// let first = pool.spawn(async move { g.await.unwrap() });
    /// let second = pool.spawn(async {});
    /// assert_eq!(pool.queued(), 1);
    /// gate.success(()).unwrap();
    /// second.wait().unwrap();
    /// first.wait().unwrap();
    /// assert_eq!(pool.queued(), 0);
    /// ```
    pub fn queued(&self) -> usize {
        self.sem.waiting()
    }

    /// Spawns `fut` as a task of the pool on the current runtime: it starts now if fewer than
    /// `limit` pool tasks run, else when a slot frees (oldest first). Never blocks.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(4);
    /// let f = pool.spawn(async { 6 * 7 });
    /// assert_eq!(f.wait(), Ok(42));
    /// ```
    pub fn spawn<F>(&self, fut: F) -> Task<F::Output>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        let shared = runtime::current();
        match self.sem.try_acquire_owned() {
            Ok(permit) => runtime::spawn_on(shared, PoolTask::holding(permit, fut)),
            Err(_) => {
                let body = PoolTask {
                    sem: Arc::clone(&self.sem),
                    acquire: RawAcquire::new(1),
                    holds: false,
                    fut: std::mem::ManuallyDrop::new(fut),
                };
                task::new_future_idle(body, shared, PoolTask::queue)
            }
        }
    }

    /// Runs the closure `f` as a task of the pool (see [`spawn`](Self::spawn)).
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(1);
    /// let fs: Vec<_> = (0..5).map(|i| pool.spawn_fn(move || i * i)).collect();
    /// let squares: Vec<i32> = fs.into_iter().map(|f| f.wait().unwrap()).collect();
    /// assert_eq!(squares, [0, 1, 4, 9, 16]);
    /// ```
    pub fn spawn_fn<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(CallOnce(Some(f)))
    }

    /// Waits until a slot is free and takes it: back-pressure for a producer that should not
    /// run ahead of the pool. Spawn into the slot with [`Reservation::spawn`].
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(2);
    /// let f = ito::block_on(async {
    ///     let slot = pool.reserve().await;
    ///     slot.spawn(async { "ran" })
    /// });
    /// assert_eq!(f.wait(), Ok("ran"));
    /// ```
    pub fn reserve(&self) -> Reserve {
        Reserve {
            acquire: self.sem.acquire_owned(),
        }
    }

    /// [`reserve`](Self::reserve) from plain code: blocks the caller (handing a worker's place
    /// to another thread meanwhile) until a slot is free; fails only if the calling task is
    /// cancelled.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(1);
    /// let slot = pool.reserve_blocking().unwrap();
    /// assert_eq!(slot.spawn_fn(|| 1).wait(), Ok(1));
    /// ```
    pub fn reserve_blocking(&self) -> Result<Reservation, Cancelled> {
        let tried = spin_briefly((), |()| self.sem.try_acquire_owned().map_err(drop));
        match tried {
            Ok(permit) => Ok(Reservation { permit }),
            Err(()) => block(self.reserve()),
        }
    }

    /// Blocks the caller until a slot is free, then spawns `fut` into it (document 003's
    /// limited pool: `down` before each `async_pool`). Fails only if the calling task is
    /// cancelled while it waits (`fut` is then dropped).
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(2);
    /// let fs: Vec<_> = (0..6)
    ///     .map(|i| pool.spawn_blocking_wait(async move { i + 1 }).unwrap())
    ///     .collect();
    /// assert_eq!(fs.into_iter().map(|f| f.wait().unwrap()).sum::<i32>(), 21);
    /// ```
    pub fn spawn_blocking_wait<F>(&self, fut: F) -> Result<Task<F::Output>, Cancelled>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        Ok(self.reserve_blocking()?.spawn(fut))
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("limit", &self.limit)
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

/// A slot of a [`Pool`], taken by [`Pool::reserve`]: spawn one task into it. Dropping it
/// unused frees the slot.
///
/// ```
/// let pool = ito::sync::Pool::new(1);
/// let slot = pool.reserve_blocking().unwrap();
/// assert_eq!(pool.running(), 1); // taken before the task exists
/// drop(slot);
/// assert_eq!(pool.running(), 0);
/// ```
#[must_use = "the slot is freed as soon as this is dropped"]
pub struct Reservation {
    permit: OwnedSemaphorePermit,
}

impl Reservation {
    /// Spawns `fut` into the reserved slot on the current runtime; it starts at once.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(1);
    /// let f = pool.reserve_blocking().unwrap().spawn(async { 5 });
    /// assert_eq!(f.wait(), Ok(5));
    /// ```
    pub fn spawn<F>(self, fut: F) -> Task<F::Output>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        runtime::spawn_on(runtime::current(), PoolTask::holding(self.permit, fut))
    }

    /// Runs the closure `f` in the reserved slot.
    ///
    /// ```
    /// let pool = ito::sync::Pool::new(1);
    /// let f = pool.reserve_blocking().unwrap().spawn_fn(|| "x");
    /// assert_eq!(f.wait(), Ok("x"));
    /// ```
    pub fn spawn_fn<F, T>(self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(CallOnce(Some(f)))
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation").finish_non_exhaustive()
    }
}

/// The future of [`Pool::reserve`].
///
/// ```
/// let pool = ito::sync::Pool::new(1);
/// let slot = ito::block_on(pool.reserve());
/// assert_eq!(slot.spawn(async { 1 }).wait(), Ok(1));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Reserve {
    acquire: AcquireOwned,
}

impl StdFuture for Reserve {
    type Output = Reservation;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reservation> {
        // SAFETY: `acquire` is structurally pinned: never moved out of the pinned future.
        let acquire = unsafe { self.map_unchecked_mut(|s| &mut s.acquire) };
        acquire.poll(cx).map(|r| match r {
            Ok(permit) => Reservation { permit },
            Err(e) => unreachable!("a pool's semaphore is never closed: {e}"),
        })
    }
}

impl fmt::Debug for Reserve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reserve").finish_non_exhaustive()
    }
}

/// The body of every pool task: the wait for a slot, then the user's future. The slot is
/// released when the body is dropped (completed, panicked or cancelled), after the user's
/// future is.
struct PoolTask<F> {
    sem: Arc<Semaphore>,
    acquire: RawAcquire,
    /// Whether this body owns a permit (set once; released on drop).
    holds: bool,
    /// Dropped by hand in `drop`, before the permit is released.
    fut: std::mem::ManuallyDrop<F>,
}

impl<F> PoolTask<F> {
    /// A body that already holds its slot.
    fn holding(permit: OwnedSemaphorePermit, fut: F) -> Self {
        let sem = Arc::clone(permit.semaphore());
        permit.forget(); // the body releases it on drop
        PoolTask {
            sem,
            acquire: RawAcquire::done(1),
            holds: true,
            fut: std::mem::ManuallyDrop::new(fut),
        }
    }

    /// `new_future_idle`'s `init`: queues the body's node for a slot, with the task's waker.
    /// If a slot was freed meanwhile it is taken at once and the task woken (it is counted as
    /// running during `init`, so the wake schedules it when `init` returns).
    fn queue(self: Pin<&mut Self>, waker: &Waker) {
        // SAFETY: the node in `acquire` is never moved out of the pinned body.
        let this = unsafe { self.get_unchecked_mut() };
        let mut cx = Context::from_waker(waker);
        if let Poll::Ready(r) = this.acquire.poll(&this.sem, &mut cx) {
            debug_assert!(r.is_ok(), "a pool's semaphore is never closed");
            this.holds = true;
            waker.wake_by_ref();
        }
    }
}

impl<F: StdFuture> StdFuture for PoolTask<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `acquire`'s node and `fut` are structurally pinned: never moved out of the
        // pinned body (`fut` is dropped in place in `drop`).
        let this = unsafe { self.get_unchecked_mut() };
        if !this.holds {
            match this.acquire.poll(&this.sem, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => {
                    debug_assert!(r.is_ok(), "a pool's semaphore is never closed");
                    this.holds = true;
                }
            }
        }
        // SAFETY: as above.
        unsafe { Pin::new_unchecked(&mut *this.fut) }.poll(cx)
    }
}

impl<F> Drop for PoolTask<F> {
    fn drop(&mut self) {
        /// Releases the slot (or leaves the queue) even if the user's future panics in drop.
        struct Release<'a, F>(&'a mut PoolTask<F>);
        impl<F> Drop for Release<'_, F> {
            fn drop(&mut self) {
                let t = &mut *self.0;
                if t.holds {
                    t.sem.release(1);
                } else {
                    t.acquire.cancel(&t.sem);
                }
            }
        }
        let guard = Release(self);
        // SAFETY: dropped once, here, in place (it is pinned); never used again.
        unsafe { std::mem::ManuallyDrop::drop(&mut guard.0.fut) };
        drop(guard);
    }
}

/// A closure as a future that calls it on its first poll (a pool task's body must be a
/// future: a queued task is woken, like an async task).
struct CallOnce<F>(Option<F>);

// The closure is never pinned: it is moved out and called.
impl<F> Unpin for CallOnce<F> {}

impl<F: FnOnce() -> T, T> StdFuture for CallOnce<F> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        let f = self
            .get_mut()
            .0
            .take()
            .expect("a pool task's closure runs once");
        Poll::Ready(f())
    }
}
