//! The errors of `ito::sync`. Each converts into a [`Failure`], so `?` passes it on from a
//! task.

use std::fmt;

use crate::Failure;

/// Why an acquisition that waits failed.
///
/// ```
/// use ito::sync::{AcquireError, Semaphore};
/// let sem = Semaphore::new(0);
/// sem.close();
/// assert_eq!(sem.acquire_blocking().unwrap_err(), AcquireError::Closed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireError {
    /// The semaphore was [closed](super::Semaphore::close).
    Closed,
    /// The task waiting in a blocking acquisition was cancelled.
    Cancelled,
}

/// Why [`Semaphore::try_acquire`](super::Semaphore::try_acquire) failed.
///
/// ```
/// use ito::sync::{Semaphore, TryAcquireError};
/// assert_eq!(Semaphore::new(0).try_acquire().unwrap_err(), TryAcquireError::NoPermits);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryAcquireError {
    /// Not enough permits free right now (or others are waiting for them).
    NoPermits,
    /// The semaphore was [closed](super::Semaphore::close).
    Closed,
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AcquireError::Closed => "semaphore closed",
            AcquireError::Cancelled => "cancelled while waiting for a permit",
        })
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryAcquireError::NoPermits => "no permits available",
            TryAcquireError::Closed => "semaphore closed",
        })
    }
}

impl std::error::Error for AcquireError {}
impl std::error::Error for TryAcquireError {}

impl From<AcquireError> for Failure {
    /// `Cancelled` becomes [`Failure::Cancelled`]; `Closed` a [`Failure::Error`] holding it.
    ///
    /// ```
    /// use ito::sync::AcquireError;
    /// assert_eq!(ito::Failure::from(AcquireError::Cancelled), ito::Failure::Cancelled);
    /// let f = ito::Failure::from(AcquireError::Closed);
    /// assert_eq!(f.downcast_ref::<AcquireError>(), Some(&AcquireError::Closed));
    /// ```
    fn from(e: AcquireError) -> Failure {
        match e {
            AcquireError::Cancelled => Failure::Cancelled,
            AcquireError::Closed => Failure::from_error(e),
        }
    }
}

impl From<TryAcquireError> for Failure {
    /// A [`Failure::Error`] holding the error.
    ///
    /// ```
    /// use ito::sync::{Semaphore, TryAcquireError};
    /// fn task(sem: &Semaphore) -> Result<(), ito::Failure> {
    ///     let _permit = sem.try_acquire()?;
    ///     Ok(())
    /// }
    /// let f = task(&Semaphore::new(0)).unwrap_err();
    /// assert_eq!(f.downcast_ref::<TryAcquireError>(), Some(&TryAcquireError::NoPermits));
    /// ```
    fn from(e: TryAcquireError) -> Failure {
        Failure::from_error(e)
    }
}

impl From<Cancelled> for AcquireError {
    fn from(_: Cancelled) -> AcquireError {
        AcquireError::Cancelled
    }
}

/// A blocking wait ended because the task calling it was cancelled.
///
/// Returned by the blocking calls that can fail no other way (`lock_blocking`,
/// `wait_blocking`, ...); it converts into [`Failure::Cancelled`], so `?` passes it on from a
/// task.
///
/// ```
/// let c = ito::sync::Cancelled;
/// assert_eq!(ito::Failure::from(c), ito::Failure::Cancelled);
/// assert_eq!(c.to_string(), "cancelled");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

impl From<Cancelled> for Failure {
    fn from(_: Cancelled) -> Failure {
        Failure::Cancelled
    }
}

/// [`Mutex::try_lock`](super::Mutex::try_lock) failed: the lock is held, or others are waiting for it.
///
/// ```
/// let m = ito::sync::Mutex::new(());
/// let _held = m.try_lock().unwrap();
/// assert_eq!(m.try_lock().unwrap_err(), ito::sync::TryLockError);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TryLockError;

impl fmt::Display for TryLockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the lock is held")
    }
}

impl std::error::Error for TryLockError {}

impl From<TryLockError> for Failure {
    /// A [`Failure::Error`] holding it.
    ///
    /// ```
    /// let f = ito::Failure::from(ito::sync::TryLockError);
    /// assert!(f.downcast_ref::<ito::sync::TryLockError>().is_some());
    /// ```
    fn from(e: TryLockError) -> Failure {
        Failure::from_error(e)
    }
}
