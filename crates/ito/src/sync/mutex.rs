//! [`Mutex`]: an async-aware mutual-exclusion lock, fair (FIFO), built on a one-permit
//! [`Semaphore`].
//!
//! The semaphore's permit is the lock: `lock` is an acquisition, the guard's drop a release.
//! Uncontended, locking and unlocking are one CAS each; waiters queue in arrival order and
//! the lock is handed to the oldest directly, so none is overtaken (no barging). The data is
//! only reached through a guard, and a guard exists only while its holder owns the permit.

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future as StdFuture;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::acquire::{Acquire, poll_guard};
use super::error::TryLockError;
use super::semaphore::Semaphore;
use super::{Cancelled, block, spin_briefly};

/// A mutual-exclusion lock whose [`lock`](Self::lock) can be `.await`ed, so a task may hold
/// it across suspension points; fair (first come, first served).
///
/// [`lock_blocking`](Self::lock_blocking) waits from plain code without pinning a worker;
/// [`try_lock`](Self::try_lock) never waits. There is no poisoning: a task that panics while
/// holding the guard releases the lock as the guard drops.
///
/// Prefer `std::sync::Mutex` (or `parking_lot`) for short critical sections that never wait
/// inside: it is cheaper. Use this one when the critical section awaits.
///
/// ```
/// use std::sync::Arc;
/// let log = Arc::new(ito::sync::Mutex::new(Vec::new()));
/// let tasks: Vec<_> = (0..4)
///     .map(|i| {
///         let log = log.clone();
///         ito::spawn(async move {
///             let mut g = log.lock().await;
///             ito::sleep(std::time::Duration::from_millis(1)).await.unwrap(); // held across an await
///             g.push(i);
///         })
///     })
///     .collect();
/// tasks.into_iter().for_each(|t| t.wait().unwrap());
/// assert_eq!(log.lock_blocking().unwrap().len(), 4);
/// ```
pub struct Mutex<T: ?Sized> {
    sem: Semaphore,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands out access to `T` to one thread at a time (a guard exists only while
// its holder owns the single permit), so it can be shared and sent whenever `T` can be sent.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = ito::sync::Mutex::new(5);
    /// assert_eq!(*m.try_lock().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            sem: Semaphore::new(1),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, consuming the mutex.
    ///
    /// ```
    /// assert_eq!(ito::sync::Mutex::new("x").into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Waits for the lock.
    ///
    /// Cancel-safe: dropping the future while it waits gives up its place in the queue (and
    /// the lock, if it had just been handed over).
    ///
    /// ```
    /// let m = ito::sync::Mutex::new(1);
    /// ito::block_on(async {
    ///     *m.lock().await += 1;
    /// });
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn lock(&self) -> Lock<'_, T> {
        Lock {
            mutex: self,
            acquire: self.sem.acquire(),
        }
    }

    /// Waits for the lock from plain code (handing a worker's place to another thread while
    /// it waits); fails only if the calling task is cancelled.
    ///
    /// ```
    /// let m = ito::sync::Mutex::new(vec![1]);
    /// m.lock_blocking().unwrap().push(2);
    /// assert_eq!(m.into_inner(), vec![1, 2]);
    /// ```
    pub fn lock_blocking(&self) -> Result<MutexGuard<'_, T>, Cancelled> {
        spin_briefly((), |()| self.try_lock().map_err(drop)).or_else(|()| block(self.lock()))
    }

    /// Takes the lock if it is free and nobody waits for it; never waits.
    ///
    /// ```
    /// let m = ito::sync::Mutex::new(0);
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_err());
    /// drop(g);
    /// assert!(m.try_lock().is_ok());
    /// ```
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        self.sem.try_take(1).map_err(|_| TryLockError)?;
        Ok(MutexGuard { mutex: self })
    }

    /// The value, through exclusive access to the mutex (no locking needed).
    ///
    /// ```
    /// let mut m = ito::sync::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.try_lock().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(g) => d.field("data", &&*g),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// The future of [`Mutex::lock`].
///
/// ```
/// let m = ito::sync::Mutex::new(1);
/// let guard = ito::block_on(m.lock());
/// assert_eq!(*guard, 1);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Lock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    acquire: Acquire<'a>,
}

impl<'a, T: ?Sized> StdFuture for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `acquire` is structurally pinned: never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let mutex = this.mutex;
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        poll_guard(acquire, cx, || MutexGuard { mutex })
    }
}

impl<T: ?Sized> fmt::Debug for Lock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").finish_non_exhaustive()
    }
}

/// Exclusive access to a [`Mutex`]'s value; unlocks (handing the lock to the oldest waiter)
/// when dropped.
///
/// ```
/// let m = ito::sync::Mutex::new(String::new());
/// {
///     let mut g = m.lock_blocking().unwrap();
///     g.push_str("held");
/// } // unlocked here
/// assert_eq!(*m.try_lock().unwrap(), "held");
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: a shared guard only gives `&T`, which may cross threads when `T: Sync`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard's holder owns the mutex's only permit: no other access exists.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this the only access through the guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.mutex.sem.release(1);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
