//! [`SemaphorePermit`] and [`OwnedSemaphorePermit`]: permits held, returned on drop.

use std::fmt;
use std::sync::Arc;

use super::semaphore::Semaphore;

/// Permits borrowed from a [`Semaphore`]; returned when dropped.
///
/// ```
/// let sem = ito::sync::Semaphore::new(1);
/// {
///     let _permit = sem.try_acquire().unwrap();
///     assert_eq!(sem.available_permits(), 0);
/// }
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "the permits are returned as soon as this is dropped"]
pub struct SemaphorePermit<'a> {
    pub(super) sem: &'a Semaphore,
    pub(super) permits: usize,
}

impl SemaphorePermit<'_> {
    /// How many permits this holds.
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(2);
    /// assert_eq!(sem.try_acquire_many(2).unwrap().num_permits(), 2);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// Keeps the permits out of the semaphore for good (they are not returned).
    ///
    /// ```
    /// let sem = ito::sync::Semaphore::new(2);
    /// sem.try_acquire().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.sem.release(self.permits);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("permits", &self.permits)
            .finish()
    }
}

/// Permits of an `Arc<Semaphore>`, free to move into a task; returned when dropped.
///
/// ```
/// use std::sync::Arc;
/// let sem = Arc::new(ito::sync::Semaphore::new(1));
/// let permit = sem.try_acquire_owned().unwrap();
/// std::thread::spawn(move || drop(permit)).join().unwrap();
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "the permits are returned as soon as this is dropped"]
pub struct OwnedSemaphorePermit {
    pub(super) sem: Arc<Semaphore>,
    pub(super) permits: usize,
}

impl OwnedSemaphorePermit {
    /// How many permits this holds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// assert_eq!(sem.try_acquire_owned().unwrap().num_permits(), 1);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// The semaphore the permits belong to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// let p = sem.try_acquire_owned().unwrap();
    /// assert!(Arc::ptr_eq(p.semaphore(), &sem));
    /// ```
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Keeps the permits out of the semaphore for good (they are not returned).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(ito::sync::Semaphore::new(1));
    /// sem.try_acquire_owned().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for OwnedSemaphorePermit {
    #[inline]
    fn drop(&mut self) {
        self.sem.release(self.permits);
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("permits", &self.permits)
            .finish()
    }
}
