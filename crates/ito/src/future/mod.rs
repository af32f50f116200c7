//! Futures and promises: [`Task`], [`Future`], [`Promise`], combinators and collections.
//!
//! A result that will be available later, `Result<T, Failure>`, lives in one completion cell.
//! It has two kinds of handles (`docs/results.md` has the why):
//!
//! - a [`Task<T>`] is its one reader: what [`spawn`](crate::spawn),
//!   [`spawn_fn`](crate::spawn_fn), [`race`](crate::race) and
//!   [`Promise::with_task`] return. The result *moves* to it (no `Clone`), and it is a
//!   `std::future::Future`, so the ecosystem's combinators take it as it is.
//! - a [`Future<T>`] is a cheap, cloneable handle that many readers share (Scala's semantics):
//!   every reader gets a copy, so reading needs `T: Clone`. It is filled by a task
//!   ([`Task::shared`]), by a [`Promise`], or by a combinator.
//!
//! There are three ways to use a `Future`'s result, and all three scale:
//!
//! - `.await` it in async code (the task suspends);
//! - compose it ([`map`](Future::map), [`flat_map`](Future::flat_map),
//!   [`zip`](Future::zip), [`on_complete`](Future::on_complete), ...): the continuation is
//!   registered in the cell and runs when it completes; nothing waits;
//! - [`wait`](Future::wait) for it from plain code. On a worker thread this never pins the
//!   worker: it runs the awaited task itself if nobody started it yet, and otherwise hands its
//!   place to a compensation thread while it sleeps (see `docs/scheduler.md`).
//!
//! The free functions [`sequence`], [`traverse`], [`traverse_bounded`],
//! [`first_completed_of`], [`first_success_of`] and [`fold`] work on collections.

pub(crate) mod cell;
mod collect;
mod combinators;
mod derived;
pub(crate) mod notify;
pub(crate) mod promise;
mod task;
mod wait;

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::time::Duration;

pub use collect::{
    first_completed_of, first_success_of, fold, sequence, traverse, traverse_bounded,
};
pub use promise::{AlreadyCompleted, Promise};
pub use task::Task;
pub use wait::{Wait, WaitRef};

use crate::Failure;
use crate::runtime::block_until::Woken;
use cell::{CellHeader, CompletionCell};

/// A handle on a result that will be available later: `Result<T, Failure>`.
///
/// Cloning is one reference-count increment; every clone sees the same result. See the
/// [module docs](self) for the ways to use it.
///
/// ```
/// let f = ito::spawn_fn(|| 6 * 7).shared();
/// let g = f.map(|x| x + 1);
/// assert_eq!(f.wait(), Ok(42));
/// assert_eq!(ito::block_on(g), Ok(43));
/// ```
pub struct Future<T> {
    ptr: NonNull<CompletionCell<T>>,
    _marker: PhantomData<CompletionCell<T>>,
}

// SAFETY: the cell is shared between threads: the value is written once (needs `T: Send`)
// and then read by reference from any thread that holds a handle (needs `T: Sync`).
unsafe impl<T: Send + Sync> Send for Future<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Future<T> {}

impl<T> Future<T> {
    /// Wraps a pointer that carries one handle reference ([`cell::HANDLE`]).
    ///
    /// # Safety
    /// `ptr` points to a live `CompletionCell<T>` and the caller gives its handle reference to it.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: NonNull<CompletionCell<T>>) -> Self {
        Future {
            ptr,
            _marker: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn inner(&self) -> &CompletionCell<T> {
        // SAFETY: the handle owns a reference, so the cell is live.
        unsafe { self.ptr.as_ref() }
    }

    #[inline]
    pub(crate) fn header(&self) -> &CellHeader {
        &self.inner().header
    }

    /// The cell, as a raw pointer with the provenance of the whole allocation. Use this (not
    /// `NonNull::from(self.header())`, whose provenance covers only the header, read-only)
    /// for a pointer that may end up taking or giving up references, or running the task:
    /// the last reference frees the allocation through it.
    #[inline]
    pub(crate) fn cell_ptr(&self) -> NonNull<CellHeader> {
        self.ptr.cast()
    }

    /// Whether the result is available. One atomic load.
    ///
    /// ```
    /// assert!(ito::Future::successful(1).is_completed());
    /// assert!(!ito::Future::<u8>::never().is_completed());
    /// ```
    #[inline]
    pub fn is_completed(&self) -> bool {
        self.header().is_complete()
    }

    /// The result, if available, without waiting: one atomic load plus the clone.
    ///
    /// ```
    /// let f = ito::Future::successful("hi");
    /// assert_eq!(f.value(), Some(Ok("hi")));
    /// ```
    #[inline]
    pub fn value(&self) -> Option<Result<T, Failure>>
    where
        T: Clone,
    {
        self.inner().get().cloned()
    }

    /// Waits for the result and returns a copy of it.
    ///
    /// From a plain thread this parks the thread. On a worker thread it never pins the
    /// worker: if the task that will produce the result has not started, the worker runs it
    /// right here; otherwise the worker hands its place to a compensation thread while it
    /// sleeps (the number of such threads is bounded, see
    /// [`Builder::max_compensation`](crate::Builder::max_compensation)).
    ///
    /// Inside a synchronous task ([`spawn_fn`](crate::spawn_fn)) that is cancelled, a wait
    /// for a result that is not there returns `Err(Failure::Cancelled)` at once.
    ///
    /// ```
    /// let fut = ito::spawn_fn(|| {
    ///     let a = ito::spawn_fn(|| 20);
    ///     let b = ito::spawn_fn(|| 22);
    ///     a.wait().unwrap() + b.wait().unwrap() // blocking inside a task is fine
    /// });
    /// assert_eq!(fut.wait(), Ok(42));
    /// ```
    #[inline]
    pub fn wait(&self) -> Result<T, Failure>
    where
        T: Clone,
    {
        if let Some(v) = self.inner().get() {
            return v.clone();
        }
        match crate::runtime::block_until::block_until(self.ptr.cast(), None) {
            Woken::Cancelled => Err(Failure::Cancelled),
            _ => self
                .value()
                .expect("a wait returned before its future completed"),
        }
    }

    /// Waits at most `timeout` for the result; `None` if time ran out.
    ///
    /// ```
    /// use std::time::Duration;
    /// let never = ito::Future::<u8>::never();
    /// assert_eq!(never.wait_timeout(Duration::from_millis(5)), None);
    /// let now = ito::Future::successful(3);
    /// assert_eq!(now.wait_timeout(Duration::ZERO), Some(Ok(3)));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<T, Failure>>
    where
        T: Clone,
    {
        if let Some(v) = self.inner().get() {
            return Some(v.clone());
        }
        let deadline = std::time::Instant::now().checked_add(timeout);
        match crate::runtime::block_until::block_until(self.ptr.cast(), deadline) {
            Woken::Cancelled => Some(Err(Failure::Cancelled)),
            _ => self.value(),
        }
    }

    /// Gives up this handle and, if it was the last handle on a task's future, cancels the
    /// task. Returns whether this call cancelled it.
    ///
    /// An async task is dropped at its next suspension point (its destructors run on a
    /// worker); a synchronous one ([`spawn_fn`](crate::spawn_fn)) that has not started never
    /// runs, and one that is running sees the cancellation in ito's blocking calls
    /// ([`wait`](Future::wait) and the like return `Err(Failure::Cancelled)`; see
    /// [`is_cancelled`](crate::is_cancelled)). The future then completes with
    /// [`Failure::Cancelled`], unless the task finished first.
    ///
    /// Nothing is cancelled when another handle on the same future is alive (somebody else
    /// still wants the result), when the task already completed, or when the future is not a
    /// task's (a promise's or a combinator's): then this is just a drop.
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let gate = ito::Promise::<()>::new();
    /// let g = gate.future();
    /// let task = rt.spawn(async move { g.await.unwrap(); "finished" }).shared();
    /// let watcher = task.map(|s| s.len());
    /// assert!(task.cancel()); // the only handle: the task is dropped
    /// assert_eq!(watcher.wait(), Err(ito::Failure::Cancelled));
    ///
    /// let shared = rt.spawn(async { 1 }).shared();
    /// let other = shared.clone();
    /// assert!(!shared.cancel()); // `other` still wants it
    /// assert_eq!(other.wait(), Ok(1));
    /// ```
    pub fn cancel(self) -> bool {
        let header = self.header();
        if header.vtable.task.is_none() {
            return false;
        }
        if header.try_dec_handle_shared() {
            // Our handle reference was given up above.
            std::mem::forget(self);
            return false;
        }
        // The only handle: nobody can clone another one while we hold it.
        self.abort()
    }

    /// Cancels the task behind this future whoever else holds it (structured concurrency:
    /// a scope's children). `false` if it is not a task's future or already complete.
    pub(crate) fn abort(&self) -> bool {
        // SAFETY: our handle keeps the cell (and so the task) alive during the call.
        unsafe { crate::task::cancel_task_of(self.ptr.cast::<CellHeader>()) }
    }

    /// Whether two handles refer to the same cell.
    ///
    /// ```
    /// let a = ito::Future::successful(1);
    /// assert!(a.ptr_eq(&a.clone()));
    /// assert!(!a.ptr_eq(&ito::Future::successful(1)));
    /// ```
    pub fn ptr_eq(&self, other: &Future<T>) -> bool {
        self.ptr == other.ptr
    }
}

impl<T: Send + Sync + 'static> Future<T> {
    /// A future that is already completed with `value`.
    ///
    /// ```
    /// assert_eq!(ito::Future::successful(5).wait(), Ok(5));
    /// ```
    pub fn successful(value: T) -> Future<T> {
        promise::completed(Ok(value))
    }

    /// A future that is already failed with `failure`.
    ///
    /// ```
    /// let f = ito::Future::<u8>::failed(ito::Failure::Timeout);
    /// assert_eq!(f.wait(), Err(ito::Failure::Timeout));
    /// ```
    pub fn failed(failure: Failure) -> Future<T> {
        promise::completed(Err(failure))
    }

    /// A future that is already completed with `result`.
    ///
    /// ```
    /// assert_eq!(ito::Future::from_result(Ok::<_, ito::Failure>(1)).wait(), Ok(1));
    /// ```
    pub fn from_result(result: Result<T, Failure>) -> Future<T> {
        promise::completed(result)
    }

    /// A future that never completes.
    ///
    /// Combinators registered on it keep waiting as long as some handle on it is alive; once
    /// the last handle is dropped nothing can ever complete it, so the futures derived from it
    /// complete with [`Failure::BrokenPromise`] instead of hanging forever.
    ///
    /// ```
    /// use std::time::Duration;
    /// let f = ito::Future::<u8>::never();
    /// assert_eq!(f.wait_timeout(Duration::from_millis(1)), None);
    /// ```
    pub fn never() -> Future<T> {
        promise::never()
    }
}

impl<T> Clone for Future<T> {
    #[inline]
    fn clone(&self) -> Self {
        self.header().inc_handle();
        Future {
            ptr: self.ptr,
            _marker: PhantomData,
        }
    }
}

impl<T> Drop for Future<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the handle owns one handle reference and gives it up.
        unsafe { CellHeader::dec_handle(self.ptr.cast()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner().get() {
            Some(Ok(v)) => f.debug_tuple("Future").field(&Ok::<_, ()>(v)).finish(),
            Some(Err(e)) => f.debug_tuple("Future").field(&Err::<(), _>(e)).finish(),
            None => f.write_str("Future(<pending>)"),
        }
    }
}
