//! [`RwLock`]: an async-aware reader-writer lock, fair (FIFO), built on a [`Semaphore`] of
//! [`RwLock::MAX_READERS`] permits: a reader takes one, a writer takes them all (tokio's
//! design).
//!
//! Fairness comes from the semaphore: a writer that arrives while readers hold the lock queues
//! and collects the permits as the readers leave, and readers arriving after it queue behind
//! it, so writers are never starved; readers queued together behind a writer are all released
//! when it unlocks.

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

/// A reader-writer lock for tasks: many readers or one writer, served in arrival order.
///
/// `read().await` / `write().await` wait in async code; `read_blocking()` /
/// `write_blocking()` in plain code (without pinning a worker); `try_read()` / `try_write()`
/// never wait. No poisoning.
///
/// ```
/// let lock = ito::sync::RwLock::new(5);
/// {
///     let r1 = lock.try_read().unwrap();
///     let r2 = lock.try_read().unwrap();
///     assert_eq!(*r1 + *r2, 10);
///     assert!(lock.try_write().is_err());
/// }
/// *lock.write_blocking().unwrap() += 1;
/// assert_eq!(*lock.try_read().unwrap(), 6);
/// ```
pub struct RwLock<T: ?Sized> {
    sem: Semaphore,
    data: UnsafeCell<T>,
}

// SAFETY: a writer gets `&mut T` alone (it holds every permit), so `T: Send` is needed to send
// or share the lock; readers share `&T` across threads, so sharing also needs `T: Sync`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T> RwLock<T> {
    /// The most readers that can hold the lock at once.
    ///
    /// ```
    /// assert!(ito::sync::RwLock::<()>::MAX_READERS >= 1 << 20);
    /// ```
    pub const MAX_READERS: usize = Semaphore::MAX_PERMITS;

    /// An unlocked lock holding `value`.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(String::from("hi"));
    /// assert_eq!(lock.try_read().unwrap().len(), 2);
    /// ```
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            sem: Semaphore::new(Self::MAX_READERS),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, consuming the lock.
    ///
    /// ```
    /// assert_eq!(ito::sync::RwLock::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

/// The permits a writer takes: all of them.
const WRITER: usize = RwLock::<()>::MAX_READERS;

impl<T: ?Sized> RwLock<T> {
    /// Waits for shared (read) access.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(1);
    /// let v = ito::block_on(async { *lock.read().await });
    /// assert_eq!(v, 1);
    /// ```
    pub fn read(&self) -> Read<'_, T> {
        Read {
            lock: self,
            acquire: self.sem.acquire(),
        }
    }

    /// Waits for exclusive (write) access.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(1);
    /// ito::block_on(async { *lock.write().await = 2 });
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    pub fn write(&self) -> Write<'_, T> {
        Write {
            lock: self,
            acquire: self.sem.acquire_many(WRITER),
        }
    }

    /// Waits for read access from plain code; fails only if the calling task is cancelled.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(vec![1, 2]);
    /// assert_eq!(lock.read_blocking().unwrap().len(), 2);
    /// ```
    pub fn read_blocking(&self) -> Result<RwLockReadGuard<'_, T>, Cancelled> {
        spin_briefly((), |()| self.try_read().map_err(drop)).or_else(|()| block(self.read()))
    }

    /// Waits for write access from plain code; fails only if the calling task is cancelled.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(0);
    /// *lock.write_blocking().unwrap() = 9;
    /// assert_eq!(lock.into_inner(), 9);
    /// ```
    pub fn write_blocking(&self) -> Result<RwLockWriteGuard<'_, T>, Cancelled> {
        spin_briefly((), |()| self.try_write().map_err(drop)).or_else(|()| block(self.write()))
    }

    /// Takes read access if no writer holds or waits for the lock; never waits.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(0);
    /// let _w = lock.try_write().unwrap();
    /// assert!(lock.try_read().is_err());
    /// ```
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        self.sem.try_take(1).map_err(|_| TryLockError)?;
        Ok(RwLockReadGuard { lock: self })
    }

    /// Takes write access if nobody holds or waits for the lock; never waits.
    ///
    /// ```
    /// let lock = ito::sync::RwLock::new(0);
    /// let _r = lock.try_read().unwrap();
    /// assert!(lock.try_write().is_err());
    /// ```
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        self.sem.try_take(WRITER).map_err(|_| TryLockError)?;
        Ok(RwLockWriteGuard { lock: self })
    }

    /// The value, through exclusive access to the lock (no locking needed).
    ///
    /// ```
    /// let mut lock = ito::sync::RwLock::new(1);
    /// *lock.get_mut() += 1;
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(g) => d.field("data", &&*g),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// The future of [`RwLock::read`].
///
/// ```
/// let lock = ito::sync::RwLock::new(3);
/// assert_eq!(*ito::block_on(lock.read()), 3);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Read<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    acquire: Acquire<'a>,
}

impl<'a, T: ?Sized> StdFuture for Read<'a, T> {
    type Output = RwLockReadGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `acquire` is structurally pinned: never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        poll_guard(acquire, cx, || RwLockReadGuard { lock })
    }
}

/// The future of [`RwLock::write`].
///
/// ```
/// let lock = ito::sync::RwLock::new(3);
/// *ito::block_on(lock.write()) += 1;
/// assert_eq!(lock.into_inner(), 4);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Write<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    acquire: Acquire<'a>,
}

impl<'a, T: ?Sized> StdFuture for Write<'a, T> {
    type Output = RwLockWriteGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `acquire` is structurally pinned: never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        poll_guard(acquire, cx, || RwLockWriteGuard { lock })
    }
}

impl<T: ?Sized> fmt::Debug for Read<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Read").finish_non_exhaustive()
    }
}

impl<T: ?Sized> fmt::Debug for Write<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Write").finish_non_exhaustive()
    }
}

/// Shared access to an [`RwLock`]'s value; released when dropped.
///
/// ```
/// let lock = ito::sync::RwLock::new(vec![1, 2]);
/// let (a, b) = (lock.try_read().unwrap(), lock.try_read().unwrap()); // shared
/// assert_eq!(a.len() + b.len(), 4);
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to an [`RwLock`]'s value; released when dropped.
///
/// ```
/// let lock = ito::sync::RwLock::new(0);
/// let mut w = lock.try_write().unwrap();
/// *w = 5;
/// assert!(lock.try_read().is_err()); // exclusive
/// drop(w);
/// assert_eq!(*lock.try_read().unwrap(), 5);
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: a shared write guard only gives `&T`, which may cross threads when `T: Sync`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a reader holds a permit, so no writer (which needs all of them) exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the writer holds every permit: no other access exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this the only access through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.sem.release(1);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.sem.release(WRITER);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
