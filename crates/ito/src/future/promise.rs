//! [`Promise`]: the writing end of a future, and the standalone cell behind it.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::cell::{CellHeader, CellVTable, CompletionCell, HANDLE};
use super::{Future, Task};
use crate::Failure;
use crate::loom::{AtomicUsize, Ordering};

/// A cell in its own allocation: promises, combinators, constant futures.
#[repr(C)]
pub(crate) struct PromiseCell<T> {
    inner: CompletionCell<T>,
    /// Live `Promise` handles, plus [`UNIQUE`]. When the count drops to 0 uncompleted, the
    /// cell breaks.
    writers: AtomicUsize,
}

/// In `writers`: the cell's result has one reader, a [`Task`] ([`Promise::with_task`]), so
/// [`Promise::future`] must not hand out a shared one.
const UNIQUE: usize = 1 << (usize::BITS - 1);

struct VTable<T>(PhantomData<T>);

impl<T> VTable<T> {
    const VTABLE: CellVTable = CellVTable {
        destroy: destroy::<T>,
        task: None,
    };
}

unsafe fn destroy<T>(cell: NonNull<CellHeader>) {
    // SAFETY: cells with this vtable are `PromiseCell<T>` made by `Box::new` below; this is the
    // last reference.
    let mut b = unsafe { Box::from_raw(cell.cast::<PromiseCell<T>>().as_ptr()) };
    // SAFETY: exclusive access.
    unsafe { b.inner.drop_contents() };
}

fn alloc<T>(cell: PromiseCell<T>) -> NonNull<PromiseCell<T>> {
    NonNull::from(Box::leak(Box::new(cell)))
}

/// A future that is complete from the start.
pub(crate) fn completed<T>(v: Result<T, Failure>) -> Future<T> {
    let p = alloc(PromiseCell {
        inner: CompletionCell::new_complete(HANDLE, &VTable::<T>::VTABLE, v),
        writers: AtomicUsize::new(0),
    });
    // SAFETY: a fresh cell with one reference, given to the handle.
    unsafe { Future::from_raw(p.cast()) }
}

/// A future that nothing can complete.
pub(crate) fn never<T>() -> Future<T> {
    let p = alloc(PromiseCell {
        inner: CompletionCell::<T>::new(HANDLE, &VTable::<T>::VTABLE),
        writers: AtomicUsize::new(0),
    });
    // SAFETY: a fresh cell with one reference, given to the handle.
    unsafe { Future::from_raw(p.cast()) }
}

/// The writing end of a [`Future`]: complete it once, from anywhere.
///
/// Cloning a promise gives another writer of the same cell; the first completion wins. When
/// every promise handle is dropped without completing, the future completes with
/// [`Failure::BrokenPromise`], so nobody waits forever for a value that cannot come.
///
/// ```
/// let p = ito::Promise::new();
/// let f = p.future();
/// std::thread::spawn(move || p.success(7).unwrap());
/// assert_eq!(f.wait(), Ok(7));
///
/// let q = ito::Promise::<u8>::new();
/// let g = q.future();
/// drop(q);
/// assert_eq!(g.wait(), Err(ito::Failure::BrokenPromise));
/// ```
pub struct Promise<T> {
    ptr: NonNull<PromiseCell<T>>,
    _marker: PhantomData<PromiseCell<T>>,
}

// SAFETY: like `Future`: the value moves in from the completing thread (`T: Send`) and is read
// by reference from others (`T: Sync`).
unsafe impl<T: Send + Sync> Send for Promise<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Promise<T> {}

/// A writer of a promise made by [`Promise::with_task`], `Send` when `T` is: the value only
/// moves in here and out through the one [`Task`], so nobody reads it by reference and
/// `T: Sync` is not needed (for `spawn_blocking`, which has the same bounds as `spawn`).
pub(crate) struct UniqueWriter<T>(Promise<T>);

// SAFETY: see the type's docs: the only operations reachable are completing (moves a `T` in)
// and dropping (breaks the promise); `future` is refused on a unique promise.
unsafe impl<T: Send> Send for UniqueWriter<T> {}
// SAFETY: as above: through `&UniqueWriter` a `T` can only be moved in.
unsafe impl<T: Send> Sync for UniqueWriter<T> {}

impl<T> UniqueWriter<T> {
    /// A unique promise's writer and its reader.
    pub(crate) fn new() -> (UniqueWriter<T>, Task<T>) {
        let (p, t) = Promise::with_task();
        (UniqueWriter(p), t)
    }

    /// [`Promise::try_complete`].
    pub(crate) fn try_complete(&self, result: Result<T, Failure>) -> bool {
        self.0.try_complete(result)
    }

    /// [`Promise::is_completed`].
    pub(crate) fn is_completed(&self) -> bool {
        self.0.is_completed()
    }

    /// [`Promise::try_failure`].
    pub(crate) fn try_failure(&self, failure: Failure) -> bool {
        self.0.try_failure(failure)
    }
}

/// The promise was already completed; the value you tried to complete it with.
///
/// ```
/// let p = ito::Promise::new();
/// p.success(1).unwrap();
/// let err = p.success(2).unwrap_err();
/// assert_eq!(err.0, 2);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct AlreadyCompleted<V>(pub V);

impl<V> fmt::Debug for AlreadyCompleted<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AlreadyCompleted(..)")
    }
}

impl<V> fmt::Display for AlreadyCompleted<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the promise was already completed")
    }
}

impl<V> std::error::Error for AlreadyCompleted<V> {}

impl<T> Promise<T> {
    /// A new, empty promise.
    ///
    /// ```
    /// let p = ito::Promise::<String>::new();
    /// assert!(!p.is_completed());
    /// ```
    pub fn new() -> Self {
        let ptr = alloc(PromiseCell {
            inner: CompletionCell::new(1, &VTable::<T>::VTABLE),
            writers: AtomicUsize::new(1),
        });
        Promise {
            ptr,
            _marker: PhantomData,
        }
    }

    /// A promise whose result has one reader, the returned [`Task`]: the value *moves* to
    /// it, so `T` needs no `Clone` (and the promise's clones are writers, as usual). Such a
    /// promise has no shared future: [`future`](Promise::future) panics on it.
    ///
    /// ```
    /// let (p, t) = ito::Promise::with_task();
    /// std::thread::spawn(move || p.success(std::fs::File::open("Cargo.toml")).unwrap());
    /// assert!(t.wait().unwrap().is_ok());
    /// ```
    pub fn with_task() -> (Promise<T>, Task<T>) {
        let ptr = alloc(PromiseCell {
            inner: CompletionCell::new(1 + HANDLE, &VTable::<T>::VTABLE),
            writers: AtomicUsize::new(UNIQUE | 1),
        });
        let p = Promise {
            ptr,
            _marker: PhantomData,
        };
        // SAFETY: the cell's handle reference goes to the task, its only reader: `future`
        // refuses to make another (`UNIQUE`).
        let t = unsafe { Task::from_raw(ptr.cast()) };
        (p, t)
    }

    #[inline]
    fn cell(&self) -> &PromiseCell<T> {
        // SAFETY: the handle owns a reference.
        unsafe { self.ptr.as_ref() }
    }

    #[inline]
    pub(crate) fn inner(&self) -> &CompletionCell<T> {
        &self.cell().inner
    }

    /// Completes the cell if nobody did yet; gives the value back otherwise.
    #[inline]
    fn complete_cell(&self, v: Result<T, Failure>) -> Result<(), Result<T, Failure>> {
        // SAFETY: the handle keeps the cell alive; `ptr` came from the allocation itself, and
        // `inner` is the first field of the `repr(C)` `PromiseCell`.
        unsafe { CompletionCell::try_complete(self.ptr.cast(), v) }
    }

    /// The cell, as a raw pointer with the provenance of the whole allocation (see
    /// [`Future::cell_ptr`]).
    #[inline]
    pub(crate) fn cell_ptr(&self) -> NonNull<CellHeader> {
        // `inner` is the first field of the `repr(C)` `PromiseCell`.
        self.ptr.cast()
    }

    /// The future this promise completes. Call it as often as you like.
    ///
    /// # Panics
    /// On a promise made by [`with_task`](Promise::with_task), whose result has one reader
    /// already.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// let (a, b) = (p.future(), p.future());
    /// p.success('x').unwrap();
    /// assert_eq!((a.wait(), b.wait()), (Ok('x'), Ok('x')));
    /// ```
    pub fn future(&self) -> Future<T> {
        assert!(
            self.cell().writers.load(Ordering::Relaxed) & UNIQUE == 0,
            "Promise::future on a promise made by Promise::with_task: its Task is its only reader"
        );
        self.inner().header.inc_handle();
        // SAFETY: we just took a handle reference for it.
        unsafe { Future::from_raw(self.ptr.cast()) }
    }

    /// Whether the promise is completed.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// p.success(()).unwrap();
    /// assert!(p.is_completed());
    /// ```
    pub fn is_completed(&self) -> bool {
        self.inner().header.is_complete()
    }

    /// Completes with `result`, or returns `false` if already completed.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// assert!(p.try_complete(Ok(1)));
    /// assert!(!p.try_complete(Ok(2)));
    /// assert_eq!(p.future().wait(), Ok(1));
    /// ```
    #[inline]
    pub fn try_complete(&self, result: Result<T, Failure>) -> bool {
        self.complete_cell(result).is_ok()
    }

    /// Completes with a value, or returns `false` if already completed.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// assert!(p.try_success(1));
    /// ```
    #[inline]
    pub fn try_success(&self, value: T) -> bool {
        self.try_complete(Ok(value))
    }

    /// Fails with `failure`, or returns `false` if already completed.
    ///
    /// ```
    /// let p = ito::Promise::<u8>::new();
    /// assert!(p.try_failure(ito::Failure::msg("no")));
    /// ```
    #[inline]
    pub fn try_failure(&self, failure: Failure) -> bool {
        self.try_complete(Err(failure))
    }

    /// Completes with `result`; if already completed, hands `result` back.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// p.complete(Ok(1)).unwrap();
    /// assert_eq!(p.complete(Ok(2)).unwrap_err().0, Ok(2));
    /// ```
    pub fn complete(
        &self,
        result: Result<T, Failure>,
    ) -> Result<(), AlreadyCompleted<Result<T, Failure>>> {
        self.complete_cell(result).map_err(AlreadyCompleted)
    }

    /// Completes with a value; if already completed, hands the value back.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// p.success(1).unwrap();
    /// ```
    pub fn success(&self, value: T) -> Result<(), AlreadyCompleted<T>> {
        match self.complete_cell(Ok(value)) {
            Ok(()) => Ok(()),
            Err(Ok(v)) => Err(AlreadyCompleted(v)),
            Err(Err(_)) => unreachable!("the value given back is the one passed in"),
        }
    }

    /// Fails with `failure`; if already completed, hands the failure back.
    ///
    /// ```
    /// let p = ito::Promise::<u8>::new();
    /// p.failure(ito::Failure::Cancelled).unwrap();
    /// assert_eq!(p.future().wait(), Err(ito::Failure::Cancelled));
    /// ```
    pub fn failure(&self, failure: Failure) -> Result<(), AlreadyCompleted<Failure>> {
        match self.complete_cell(Err(failure)) {
            Ok(()) => Ok(()),
            Err(Err(f)) => Err(AlreadyCompleted(f)),
            Err(Ok(_)) => unreachable!("the failure given back is the one passed in"),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Promise<T> {
    /// Completes this promise with `other`'s result once it has one, unless something else
    /// completes it first (Scala's `tryCompleteWith`).
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// p.try_complete_with(&ito::Future::successful(9));
    /// assert_eq!(p.future().wait(), Ok(9));
    /// ```
    pub fn try_complete_with(&self, other: &Future<T>) {
        let p = self.clone();
        other.inner().on_complete_raw(move |r| {
            p.try_complete(r.clone());
        });
    }

    /// Like [`try_complete_with`](Self::try_complete_with), but says if the promise is
    /// already completed now.
    ///
    /// ```
    /// let p = ito::Promise::new();
    /// p.success(1).unwrap();
    /// assert!(p.complete_with(&ito::Future::successful(2)).is_err());
    /// ```
    pub fn complete_with(&self, other: &Future<T>) -> Result<(), AlreadyCompleted<()>> {
        if self.is_completed() {
            return Err(AlreadyCompleted(()));
        }
        self.try_complete_with(other);
        Ok(())
    }
}

impl<T> Default for Promise<T> {
    fn default() -> Self {
        Promise::new()
    }
}

impl<T> Clone for Promise<T> {
    fn clone(&self) -> Self {
        self.cell().writers.fetch_add(1, Ordering::Relaxed);
        self.inner().header.inc_ref();
        Promise {
            ptr: self.ptr,
            _marker: PhantomData,
        }
    }
}

impl<T> Drop for Promise<T> {
    fn drop(&mut self) {
        if self.cell().writers.fetch_sub(1, Ordering::AcqRel) & !UNIQUE == 1 {
            // The last writer: nobody can complete the cell any more.
            let _ = self.complete_cell(Err(Failure::BrokenPromise));
        }
        // SAFETY: the handle owns one reference and gives it up.
        unsafe { CellHeader::dec_ref(self.ptr.cast()) };
    }
}

impl<T> fmt::Debug for Promise<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Promise")
            .field("completed", &self.is_completed())
            .finish()
    }
}
