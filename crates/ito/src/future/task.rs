//! [`Task`]: the one reader of a result, which moves the result out instead of copying it.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use std::time::Duration;

use super::cell::{CellHeader, CompletionCell};
use super::wait::Registration;
use super::{Future, Promise};
use crate::Failure;
use crate::runtime::block_until::{Woken, block_until};

/// The handle on a spawned task's result (tokio's `JoinHandle`): the result's only reader,
/// so the result *moves* to it. Nothing is cloned and `T` needs no `Clone`.
///
/// - It is a [`std::future::Future`]: `.await` it, or hand it to `join_all`,
///   `FuturesUnordered` or `select!` as it is.
/// - [`wait`](Task::wait) blocks for it from plain code, without pinning a worker (a task
///   nobody started runs right here, as with [`Future::wait`]).
/// - [`shared`](Task::shared) turns it into a [`Future`], which any number of readers share
///   (Scala's semantics; reading it needs `T: Clone`), for the combinators.
///
/// Dropping a `Task` does not cancel the task (tokio's semantics): the task runs to its end
/// and its result is dropped. [`abort`](Task::abort) cancels it.
///
/// [`race`](crate::race), [`first_ok`](crate::first_ok) and [`Promise::with_task`] hand
/// back a `Task` too: the one reader of a race's or a promise's result.
///
/// A `Task` is two words and `Unpin`: `select!` takes it by `&mut` as it is. Its waiter
/// node is allocated (from the task slab) by the first poll that finds the result pending,
/// and freed when the result comes. See the [design notes](crate::design::results) for why,
/// and for the cancellation safety of every ito future.
///
/// `Task<T>` is `Send` and `Sync` when `T` is `Send`: the value goes to one reader, so no
/// thread ever reads it by reference while another does.
///
/// ```
/// let t: ito::Task<Vec<String>> = ito::spawn_fn(|| vec![String::from("moved")]);
/// assert_eq!(t.wait(), Ok(vec![String::from("moved")]));
///
/// let sum = ito::block_on(async {
///     let a = ito::spawn(async { 20 });
///     let b = ito::spawn_fn(|| 22);
///     a.await.unwrap() + b.await.unwrap()
/// });
/// assert_eq!(sum, 42);
/// ```
pub struct Task<T> {
    ptr: NonNull<CompletionCell<T>>,
    /// [`NO_WAITER`], the `.await`ing waiter (a slab block holding a [`Registration`], which
    /// stays where it is however the `Task` moves) while this handle is polled pending, or
    /// [`SPENT`] once the handle returned its result (it has nothing left to give).
    waiter: *mut Registration,
    _marker: PhantomData<CompletionCell<T>>,
}

/// [`Task::waiter`] when no poll found the result pending.
const NO_WAITER: *mut Registration = std::ptr::null_mut();
/// [`Task::waiter`] once the handle returned its result: address 1, never a block's (blocks
/// are 8-aligned and not null).
const SPENT: *mut Registration = std::ptr::without_provenance_mut(1);

// SAFETY: the handle moves the value out once, on the thread that holds it (`T: Send`); no
// thread reads the value by reference through a `Task`, so `T: Sync` is not needed.
unsafe impl<T: Send> Send for Task<T> {}
// SAFETY: a `&Task` reaches only the cell's state (`is_finished`, `abort`), never the value.
unsafe impl<T: Send> Sync for Task<T> {}

// Nothing in a `Task` is pinned: its waiter lives in its own block, and the value is moved out
// of the cell, never polled in place.
impl<T> Unpin for Task<T> {}

impl<T> Task<T> {
    /// Wraps a pointer that carries one handle reference, on a cell that nobody else reads.
    ///
    /// # Safety
    /// `ptr` points to a live `CompletionCell<T>`; the caller gives its handle reference to
    /// the `Task`, and no other handle on the cell exists or will be made.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: NonNull<CompletionCell<T>>) -> Self {
        Task {
            ptr,
            waiter: NO_WAITER,
            _marker: PhantomData,
        }
    }

    /// A handle whose result is there already (a child a cancelled scope does not start).
    pub(crate) fn completed(result: Result<T, Failure>) -> Task<T> {
        let (p, t) = Promise::with_task();
        p.try_complete(result);
        t
    }

    #[inline]
    pub(crate) fn inner(&self) -> &CompletionCell<T> {
        // SAFETY: the handle owns a reference, so the cell is live.
        unsafe { self.ptr.as_ref() }
    }

    #[inline]
    fn header(&self) -> &CellHeader {
        &self.inner().header
    }

    /// The cell with its allocation's provenance (see [`Future::cell_ptr`]).
    #[inline]
    pub(crate) fn cell_ptr(&self) -> NonNull<CellHeader> {
        self.ptr.cast()
    }

    /// Whether the handle returned its result.
    #[inline]
    fn is_spent(&self) -> bool {
        self.waiter == SPENT
    }

    /// Frees the waiter node, if any, after taking it off the cell's list.
    #[inline(always)]
    fn drop_waiter(&mut self) {
        // One comparison: `NO_WAITER` (0) and `SPENT` (1) are the only addresses below 2.
        if self.waiter as usize > SPENT as usize {
            self.free_waiter();
        }
    }

    /// [`drop_waiter`](Self::drop_waiter)'s work, kept apart: only a handle that was polled
    /// pending has a waiter, and `wait` should not carry this code inline.
    #[inline(never)]
    fn free_waiter(&mut self) {
        let w = self.waiter;
        self.waiter = NO_WAITER;
        // SAFETY: a live slab block holding a `Registration` (made by `poll`), ours alone.
        unsafe {
            (*w).release(&self.ptr.as_ref().header);
            std::ptr::drop_in_place(w);
            crate::task::slab::dealloc(NonNull::new_unchecked(w));
        }
    }

    /// Gives up the handle without running `Drop`: the caller takes over its reference.
    #[inline]
    fn into_raw(mut self) -> NonNull<CompletionCell<T>> {
        assert!(
            !self.is_spent(),
            "an ito::Task made shared after it returned its result"
        );
        self.drop_waiter();
        let me = ManuallyDrop::new(self);
        me.ptr
    }

    /// Whether the result is there. One atomic load.
    ///
    /// ```
    /// let gate = ito::Promise::<()>::new();
    /// let g = gate.future();
    /// let t = ito::spawn(async move { g.await });
    /// assert!(!t.is_finished());
    /// gate.success(()).unwrap();
    /// assert_eq!(t.wait(), Ok(Ok(())));
    /// ```
    #[inline]
    pub fn is_finished(&self) -> bool {
        self.header().is_complete()
    }

    /// Waits for the result and moves it out.
    ///
    /// From a plain thread this parks the thread. On a worker it never pins the worker: a
    /// task nobody started runs right here; otherwise the worker hands its place to a
    /// compensation thread while it sleeps (as [`Future::wait`]). Inside a synchronous task
    /// that is cancelled, a wait for a result that is not there returns
    /// `Err(Failure::Cancelled)` at once (the awaited task runs on).
    ///
    /// ```
    /// let f: Result<std::io::Result<std::fs::File>, ito::Failure> =
    ///     ito::spawn_fn(|| std::fs::File::open("Cargo.toml")).wait();
    /// assert!(f.unwrap().is_ok());
    /// ```
    #[inline(always)]
    pub fn wait(self) -> Result<T, Failure> {
        assert!(
            !self.is_spent(),
            "an ito::Task waited on after it returned its result"
        );
        if !self.header().is_complete() {
            // The hot path of fork-join code: the awaited task has usually not run yet, and
            // `block_until` runs it inline, so this call is on every level of that recursion.
            // It is made directly: a helper frame here would be one more frame per level.
            if block_until(self.cell_ptr(), None) == Woken::Cancelled {
                return Err(Failure::Cancelled);
            }
            assert!(
                self.is_finished(),
                "a wait returned before its task completed"
            );
        }
        // SAFETY: complete (seen with `Acquire`); the only reader, once (`self` is consumed).
        unsafe { self.inner().take() }
    }

    /// Waits at most `timeout` for the result and moves it out; `None` if time ran out (the
    /// handle stays usable). Once it returned the result the handle is spent: waiting on it
    /// again panics, as polling it again does.
    ///
    /// ```
    /// use std::time::Duration;
    /// let gate = ito::Promise::<()>::new();
    /// let g = gate.future();
    /// let mut t = ito::spawn(async move { g.await.map(|()| 5) });
    /// assert_eq!(t.wait_timeout(Duration::from_millis(5)), None); // still running
    /// gate.success(()).unwrap();
    /// assert_eq!(t.wait_timeout(Duration::from_secs(60)), Some(Ok(Ok(5))));
    /// ```
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<T, Failure>> {
        assert!(
            !self.is_spent(),
            "an ito::Task waited on after it returned its result"
        );
        if !self.header().is_complete() {
            let deadline = std::time::Instant::now().checked_add(timeout);
            match block_until(self.cell_ptr(), deadline) {
                Woken::Cancelled => return Some(Err(Failure::Cancelled)),
                Woken::TimedOut => return None,
                Woken::Complete => {}
            }
        }
        assert!(
            self.is_finished(),
            "a wait returned before its task completed"
        );
        // A poll may have left a waiter registered: take it off before the handle is spent.
        self.drop_waiter();
        self.waiter = SPENT;
        // SAFETY: complete; the only reader, and `SPENT` keeps this from running twice.
        Some(unsafe { self.inner().take() })
    }

    /// Cancels the task: an async task is dropped at its next suspension point, a
    /// synchronous one that has not started never runs, and one that is running sees the
    /// cancellation in ito's blocking calls (see [`is_cancelled`](crate::is_cancelled)). Its
    /// result is then `Err(Failure::Cancelled)`, unless it finished first. Returns whether
    /// this call cancelled it (`false`: already finished or cancelled, or not a task's
    /// result, as a [`race`](crate::race)'s).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// let t = rt.spawn(async { ito::Future::<()>::never().await });
    /// assert!(t.abort());
    /// assert_eq!(t.wait(), Err(ito::Failure::Cancelled));
    /// ```
    pub fn abort(&self) -> bool {
        // SAFETY: our handle keeps the cell (and so the task) alive during the call.
        unsafe { crate::task::cancel_task_of(self.cell_ptr()) }
    }

    /// Turns this handle into a [`Future`], a handle that any number of readers share
    /// (reading it needs `T: Clone`): for the combinators, promises and collections. The
    /// task is the same; [`Future::cancel`] on the last handle still cancels it.
    ///
    /// ```
    /// let f = ito::spawn_fn(|| 20).shared();
    /// let g = f.map(|x| x + 22);
    /// assert_eq!((f.wait(), g.wait()), (Ok(20), Ok(42)));
    /// ```
    pub fn shared(self) -> Future<T> {
        // SAFETY: the handle reference moves from the `Task` to the `Future`; from now on
        // the cell has shared readers and nothing moves the value out.
        unsafe { Future::from_raw(self.into_raw()) }
    }
}

impl<T> From<Task<T>> for Future<T> {
    /// [`Task::shared`].
    ///
    /// ```
    /// let f: ito::Future<u8> = ito::spawn_fn(|| 1).into();
    /// assert_eq!(f.wait(), Ok(1));
    /// ```
    fn from(t: Task<T>) -> Future<T> {
        t.shared()
    }
}

impl<T> std::future::Future for Task<T> {
    type Output = Result<T, Failure>;

    /// Polls for the result; panics if polled again after it returned the result (as an
    /// `async fn` does; [`FusedFuture`](futures_core::FusedFuture) says when).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        assert!(
            !this.is_spent(),
            "an ito::Task polled after it returned its result"
        );
        // SAFETY: the handle keeps the cell alive.
        let header = unsafe { &this.ptr.as_ref().header };
        if this.waiter == NO_WAITER {
            if !header.is_complete() {
                return this.poll_pending(cx);
            }
        } else {
            // SAFETY: a live slab block holding our `Registration`, which never moves.
            let reg = unsafe { Pin::new_unchecked(&mut *this.waiter) };
            if reg.poll_ready(header, cx).is_pending() {
                return Poll::Pending;
            }
            this.drop_waiter();
        }
        this.waiter = SPENT;
        // SAFETY: complete (seen with `Acquire`); the only reader, and `SPENT` keeps this from
        // running twice.
        Poll::Ready(unsafe { this.ptr.as_ref().take() })
    }
}

impl<T> Task<T> {
    /// The first poll that finds the result pending: allocates the waiter and registers it.
    #[cold]
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, Failure>> {
        let block = crate::task::slab::alloc::<Registration>();
        // SAFETY: a fresh block for a `Registration`, freed by `drop_waiter`.
        unsafe { block.as_ptr().write(Registration::new()) };
        self.waiter = block.as_ptr();
        // SAFETY: as in `poll`: the block is ours and never moves.
        let reg = unsafe { Pin::new_unchecked(&mut *self.waiter) };
        // SAFETY: the handle keeps the cell alive.
        let header = unsafe { &self.ptr.as_ref().header };
        if reg.poll_ready(header, cx).is_pending() {
            return Poll::Pending;
        }
        // Completed meanwhile.
        self.drop_waiter();
        self.waiter = SPENT;
        // SAFETY: complete (seen with `Acquire`); the only reader, once.
        Poll::Ready(unsafe { self.ptr.as_ref().take() })
    }
}

impl<T> futures_core::FusedFuture for Task<T> {
    /// Whether the handle returned its result.
    fn is_terminated(&self) -> bool {
        self.is_spent()
    }
}

impl<T> Drop for Task<T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.drop_waiter();
        // SAFETY: the handle owns one handle reference and gives it up.
        unsafe { CellHeader::dec_handle(self.ptr.cast()) };
    }
}

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("finished", &self.is_finished())
            .field("taken", &self.is_spent())
            .finish()
    }
}
