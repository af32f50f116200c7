//! [`Semaphore`]: a fair (FIFO) counting semaphore for tasks and threads.
//!
//! # The state word
//!
//! ```text
//!  63 ........................... 2      1        0
//! [ available permits             ][QUEUED][CLOSED]
//! ```
//!
//! - `CLOSED`: set once by [`Semaphore::close`] (under the lock); acquisitions fail from then
//!   on. Permits are still returned to the count.
//! - `QUEUED`: the wait list is not empty. Set and cleared only under the lock, together with
//!   the list change. **While it is set the available count is 0**: a release that finds it set
//!   takes the lock and hands its permits to the waiters (the oldest first, partially if it
//!   needs more), and only what is left once the list is empty goes back to the count, in the
//!   same CAS that clears `QUEUED`. This is what makes the semaphore fair: nobody, not even
//!   [`try_acquire`](Semaphore::try_acquire), can take a permit ahead of a waiter. (tokio's
//!   semaphore behaves the same way; there a release always takes the lock.)
//! - permits: taken with one CAS by an uncontended acquire, returned with one CAS by an
//!   uncontended release: neither touches the lock while nobody waits.
//!
//! # Who touches what
//!
//! - `state`: anyone, by CAS. Without the lock only two transitions are allowed: take permits
//!   (when `QUEUED` and `CLOSED` are clear) and add permits (when `QUEUED` is clear).
//! - `waiters` (the list and every queued node's payload: permits wanted, permits still
//!   missing, closed): only under the lock (`wait_list.rs`).
//!
//! # Cancel safety
//!
//! Dropping an [`Acquire`] while it waits removes its node and gives back the permits it had
//! already been handed (a waiter at the head can hold some while it waits for the rest); if it
//! had been handed all of them but was dropped before it saw them, it releases them. Either
//! way they go to the next waiters. No permit is ever lost (`tests/sync_semaphore.rs` counts,
//! the loom model `loom_sync::semaphore_dropped_waiter` checks the races).

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::acquire::{Acquire, AcquireOwned, RawAcquire};
use super::error::{AcquireError, TryAcquireError};
use super::permit::{OwnedSemaphorePermit, SemaphorePermit};
use super::wait_list::{WaitList, Waiter, WakeList};
use crate::loom::{AtomicUsize, Mutex, MutexGuard, Ordering};

const CLOSED: usize = 0b01;
const QUEUED: usize = 0b10;
const SHIFT: usize = 2;

/// A counting semaphore: at most `permits` holders at a time, served in arrival order.
///
/// - [`acquire`](Self::acquire) / [`acquire_many`](Self::acquire_many) wait in async code;
/// - [`acquire_blocking`](Self::acquire_blocking) waits in plain code (on a worker it hands
///   the worker's place to another thread meanwhile, and it returns
///   [`AcquireError::Cancelled`] if the task calling it is cancelled);
/// - [`try_acquire`](Self::try_acquire) never waits: document 002's non-blocking semaphore,
///   where a recursive search that finds no permit does the work inline instead of spawning.
///
/// Permits are returned when the [`SemaphorePermit`] drops. Put the semaphore in an [`Arc`] and
/// use [`acquire_owned`](Self::acquire_owned) for a permit that moves into a task.
///
/// **Fairness**: strictly first come, first served. A waiter that needs more permits than are
/// free holds back everyone behind it (it collects permits as they are released), and
/// `try_acquire` fails while anyone waits.
///
/// ```
/// use std::sync::Arc;
/// let sem = Arc::new(ito::sync::Semaphore::new(2));
/// let tasks: Vec<_> = (0..8)
///     .map(|i| {
///         let sem = sem.clone();
///         ito::spawn(async move {
///             let _permit = sem.acquire().await.unwrap(); // at most 2 at a time in here
///             i * 2
///         })
///     })
///     .collect();
/// let sum: i32 = tasks.into_iter().map(|t| t.wait().unwrap()).sum();
/// assert_eq!(sum, 56);
/// ```
pub struct Semaphore {
    state: AtomicUsize,
    waiters: Mutex<WaitList<Wanted>>,
}

/// What a queued acquirer wants and has been given. Touched under the lock only.
pub(crate) struct Wanted {
    /// Permits asked for.
    pub(super) wanted: usize,
    /// Permits not handed over yet; 0 once it was dequeued with all of them.
    pub(super) missing: usize,
    /// Dequeued by `close`: its handed permits went back to the count.
    pub(super) closed: bool,
}

impl Wanted {
    pub(super) fn idle() -> Self {
        Wanted {
            wanted: 0,
            missing: 0,
            closed: false,
        }
    }
}

impl Semaphore {
    /// The most permits a semaphore can hold.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(ito::sync::Semaphore::MAX_PERMITS);
    /// assert_eq!(sem.available_permits(), ito::sync::Semaphore::MAX_PERMITS);
    /// ```
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// A semaphore with `permits` free permits.
    ///
    /// # Panics
    /// If `permits` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn new(permits: usize) -> Semaphore {
        assert!(
            permits <= Self::MAX_PERMITS,
            "Semaphore::new: {permits} permits exceed Semaphore::MAX_PERMITS"
        );
        Semaphore {
            state: AtomicUsize::new(permits << SHIFT),
            waiters: Mutex::new(WaitList::new()),
        }
    }

    /// The permits free right now (0 while anyone waits).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(2);
    /// let _p = sem.try_acquire().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.state.load(Ordering::Acquire) >> SHIFT
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(1);
    /// sem.close();
    /// assert!(sem.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED != 0
    }

    /// Adds `n` permits, handing them to waiters first (oldest first).
    ///
    /// # Panics
    /// If the count would exceed [`MAX_PERMITS`](Self::MAX_PERMITS).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(0);
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn add_permits(&self, n: usize) {
        self.release(n);
    }

    /// Closes the semaphore: every waiter, and every later acquisition, fails with
    /// [`AcquireError::Closed`] / [`TryAcquireError::Closed`]. Permits already held stay valid
    /// and are still returned to the count when dropped.
    ///
    /// ```
    /// use ito::sync::{AcquireError, Semaphore};
    /// let sem = Semaphore::new(0);
    /// sem.close();
    /// assert_eq!(ito::block_on(sem.acquire()).err(), Some(AcquireError::Closed));
    /// ```
    pub fn close(&self) {
        let mut wakes = WakeList::new();
        {
            let mut list = self.lock();
            self.state.fetch_or(CLOSED, Ordering::AcqRel);
            let mut returned = 0;
            while let Some(node) = list.pop_front() {
                // SAFETY: a node of this list, live until its future removes it or sees it
                // dequeued, which needs the lock we hold.
                unsafe {
                    list.with(node, |f| {
                        returned += f.payload.wanted - f.payload.missing;
                        f.payload.closed = true;
                        wakes.push(f.take_waker());
                    })
                };
            }
            self.hand_out(&mut list, returned, &mut wakes);
        }
        wakes.wake_all();
    }

    /// Takes a permit if one is free and nobody waits; never waits.
    ///
    /// This is document 002's non-blocking semaphore: a recursive search that finds no permit
    /// does the work itself instead of spawning a task for it, so the number of tasks stays
    /// bounded and nothing ever waits for a permit.
    ///
    /// ```
    /// use ito::sync::{Semaphore, TryAcquireError};
    /// let sem = Semaphore::new(1);
    /// let p = sem.try_acquire().unwrap();
    /// assert_eq!(sem.try_acquire().err(), Some(TryAcquireError::NoPermits));
    /// drop(p);
    /// assert!(sem.try_acquire().is_ok());
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_many(1)
    }

    /// Takes `n` permits if they are free and nobody waits; never waits.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(3);
    /// let p = sem.try_acquire_many(2).unwrap();
    /// assert_eq!(p.num_permits(), 2);
    /// assert!(sem.try_acquire_many(2).is_err());
    /// ```
    #[inline]
    pub fn try_acquire_many(&self, n: usize) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_take(n)?;
        Ok(SemaphorePermit {
            sem: self,
            permits: n,
        })
    }

    /// Waits for a permit.
    ///
    /// Cancel-safe: dropping the future while it waits loses no permit and gives up its place
    /// in the queue.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(1);
    /// let v = ito::block_on(async {
    ///     let _permit = sem.acquire().await.unwrap();
    ///     7
    /// });
    /// assert_eq!(v, 7);
    /// ```
    pub fn acquire(&self) -> Acquire<'_> {
        self.acquire_many(1)
    }

    /// Waits for `n` permits (taken all at once: the caller is queued as one waiter).
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(4);
    /// let p = ito::block_on(sem.acquire_many(3)).unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// drop(p);
    /// assert_eq!(sem.available_permits(), 4);
    /// ```
    pub fn acquire_many(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            raw: RawAcquire::new(n),
        }
    }

    /// Waits for a permit from plain (synchronous) code.
    ///
    /// On a worker thread this hands the worker's place to another thread while it waits, so
    /// tasks that will release permits keep running. Fails with [`AcquireError::Cancelled`] if
    /// the task calling it is cancelled while it waits.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(1);
    /// let permit = sem.acquire_blocking().unwrap();
    /// assert_eq!(permit.num_permits(), 1);
    /// ```
    pub fn acquire_blocking(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.acquire_many_blocking(1)
    }

    /// Waits for `n` permits from plain code (see
    /// [`acquire_blocking`](Self::acquire_blocking)).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(2);
    /// assert_eq!(sem.acquire_many_blocking(2).unwrap().num_permits(), 2);
    /// ```
    pub fn acquire_many_blocking(&self, n: usize) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.take_blocking(n)?;
        Ok(SemaphorePermit {
            sem: self,
            permits: n,
        })
    }

    /// [`try_acquire`](Self::try_acquire) for a permit that owns a reference to the semaphore,
    /// so it can move into a task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// let permit = sem.try_acquire_owned().unwrap();
    /// let t = ito::spawn_fn(move || {
    ///     let _permit = permit; // released when the task ends
    /// });
    /// t.wait().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    #[inline]
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_acquire_many_owned(1)
    }

    /// [`try_acquire_many`](Self::try_acquire_many) for an owned permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(2));
    /// assert_eq!(sem.try_acquire_many_owned(2).unwrap().num_permits(), 2);
    /// ```
    #[inline]
    pub fn try_acquire_many_owned(
        self: &Arc<Self>,
        n: usize,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_take(n)?;
        Ok(OwnedSemaphorePermit {
            sem: Arc::clone(self),
            permits: n,
        })
    }

    /// [`acquire`](Self::acquire) for an owned permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// let permit = ito::block_on(sem.acquire_owned()).unwrap();
    /// ito::spawn(async move { drop(permit) }).wait().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn acquire_owned(self: &Arc<Self>) -> AcquireOwned {
        self.acquire_many_owned(1)
    }

    /// [`acquire_many`](Self::acquire_many) for an owned permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(3));
    /// let p = ito::block_on(sem.acquire_many_owned(3)).unwrap();
    /// assert_eq!(p.num_permits(), 3);
    /// ```
    pub fn acquire_many_owned(self: &Arc<Self>, n: usize) -> AcquireOwned {
        AcquireOwned {
            sem: Arc::clone(self),
            raw: RawAcquire::new(n),
        }
    }

    /// [`acquire_blocking`](Self::acquire_blocking) for an owned permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// let permit = sem.acquire_owned_blocking().unwrap();
    /// std::thread::spawn(move || drop(permit)).join().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn acquire_owned_blocking(self: &Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        self.take_blocking(1)?;
        Ok(OwnedSemaphorePermit {
            sem: Arc::clone(self),
            permits: 1,
        })
    }

    /// Takes `n` permits for a blocking caller: the fast path, a brief spin, then a wait in
    /// the queue. The caller owns the permits on `Ok`.
    fn take_blocking(&self, n: usize) -> Result<(), AcquireError> {
        let tried = super::spin_briefly((), |()| match self.try_take(n) {
            Ok(()) => Ok(Ok(())),
            Err(TryAcquireError::Closed) => Ok(Err(AcquireError::Closed)),
            Err(TryAcquireError::NoPermits) => Err(()),
        });
        match tried {
            Ok(r) => r,
            Err(()) => super::block(self.acquire_many(n))?.map(SemaphorePermit::forget),
        }
    }

    /// How many acquisitions are queued (takes the lock).
    pub(crate) fn waiting(&self) -> usize {
        self.lock().len()
    }

    // ----- the protocol -----

    #[inline]
    pub(super) fn lock(&self) -> MutexGuard<'_, WaitList<Wanted>> {
        // The list is consistent whenever the lock is free: nothing in here panics while
        // holding it except an allocation failure, which aborts.
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock-free fast path: takes `n` permits if they are free and nobody waits.
    #[inline]
    pub(super) fn try_take(&self, n: usize) -> Result<(), TryAcquireError> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & CLOSED != 0 {
                return Err(TryAcquireError::Closed);
            }
            if n == 0 {
                return Ok(());
            }
            if s & QUEUED != 0 || (s >> SHIFT) < n {
                return Err(TryAcquireError::NoPermits);
            }
            match self.state.compare_exchange_weak(
                s,
                s - (n << SHIFT),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => s = actual,
            }
        }
    }

    /// Returns `n` permits: one CAS if nobody waits, else the waiters get them.
    #[inline]
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut s = self.state.load(Ordering::Relaxed);
        while s & QUEUED == 0 {
            let new = add_permits(s, n);
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => s = actual,
            }
        }
        self.release_slow(n);
    }

    #[cold]
    fn release_slow(&self, n: usize) {
        let mut wakes = WakeList::new();
        {
            let mut list = self.lock();
            self.hand_out(&mut list, n, &mut wakes);
        }
        wakes.wake_all();
    }

    /// Under the lock: gives `n` permits to the waiters, oldest first (a waiter leaves the
    /// list once it has all it wants); what is left goes back to the count once the list is
    /// empty, in the CAS that clears `QUEUED`.
    pub(super) fn hand_out(&self, list: &mut WaitList<Wanted>, mut n: usize, wakes: &mut WakeList) {
        while n > 0 {
            let Some(head) = list.front() else { break };
            // SAFETY: a queued node of this list; we hold its lock.
            let satisfied = unsafe {
                list.with(head, |f| {
                    let give = n.min(f.payload.missing);
                    f.payload.missing -= give;
                    n -= give;
                    if f.payload.missing == 0 {
                        wakes.push(f.take_waker());
                        true
                    } else {
                        false
                    }
                })
            };
            if !satisfied {
                break;
            }
            list.pop_front();
        }
        if list.is_empty() {
            let mut s = self.state.load(Ordering::Relaxed);
            loop {
                let new = add_permits(s & !QUEUED, n);
                if new == s {
                    return;
                }
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => return,
                    Err(actual) => s = actual,
                }
            }
        }
        debug_assert_eq!(n, 0, "permits left over while waiters are queued");
    }

    /// Under the lock: takes what is free for a new waiter wanting `n` and queues it for the
    /// rest. `Ready(true)` if it got everything, `Ready(false)` if closed.
    pub(super) fn enqueue(
        &self,
        list: &mut WaitList<Wanted>,
        node: &Waiter<Wanted>,
        n: usize,
        cx: &mut Context<'_>,
    ) -> Poll<bool> {
        let mut s = self.state.load(Ordering::Acquire);
        let took = loop {
            if s & CLOSED != 0 {
                return Poll::Ready(false);
            }
            // While QUEUED is set the count is 0 (module docs), so a newcomer takes nothing.
            let take = (s >> SHIFT).min(n);
            let new = if take == n {
                s - (take << SHIFT)
            } else {
                (s - (take << SHIFT)) | QUEUED
            };
            if new == s {
                break take;
            }
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break take,
                Err(actual) => s = actual,
            }
        };
        if took == n {
            return Poll::Ready(true);
        }
        // SAFETY: the node is pinned inside its future, which removes it (under this lock)
        // before it is dropped; it is registered with this semaphore only.
        unsafe {
            list.with(node.ptr(), |f| {
                f.payload = Wanted {
                    wanted: n,
                    missing: n - took,
                    closed: false,
                };
                f.set_waker(cx.waker());
            });
            list.push_back(node.ptr());
        }
        Poll::Pending
    }
}

/// `s` with `n` more permits.
#[inline]
fn add_permits(s: usize, n: usize) -> usize {
    let avail = s >> SHIFT;
    assert!(
        n <= Semaphore::MAX_PERMITS - avail,
        "Semaphore: adding {n} permits to {avail} exceeds Semaphore::MAX_PERMITS"
    );
    s + (n << SHIFT)
}

impl Default for Semaphore {
    /// A semaphore with no permits.
    fn default() -> Self {
        Semaphore::new(0)
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Ordering::Relaxed);
        f.debug_struct("Semaphore")
            .field("available_permits", &(s >> SHIFT))
            .field("waiting", &(s & QUEUED != 0))
            .field("closed", &(s & CLOSED != 0))
            .finish()
    }
}
