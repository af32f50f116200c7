//! [`CompletionCell<T>`]: a cell with its value, and the callbacks registered on it.

use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

use super::{
    Action, COMPLETE, CellHeader, CellVTable, CellWaiter, CompletionCell, TAKEN, discard_all,
};
use crate::Failure;
use crate::loom::{Ordering, UnsafeCell};

impl<T> CompletionCell<T> {
    /// An empty cell.
    pub(crate) fn new(refs: usize, vtable: &'static CellVTable) -> Self {
        CompletionCell {
            header: CellHeader::new(refs, vtable),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A cell complete from the start.
    pub(crate) fn new_complete(
        refs: usize,
        vtable: &'static CellVTable,
        v: Result<T, Failure>,
    ) -> Self {
        CompletionCell {
            header: CellHeader::new_complete(refs, vtable),
            value: UnsafeCell::new(MaybeUninit::new(v)),
        }
    }

    /// The value, if complete. One `Acquire` load on the fast path.
    #[inline]
    pub(crate) fn get(&self) -> Option<&Result<T, Failure>> {
        if self.header.is_complete() {
            // SAFETY: COMPLETE was observed with Acquire, so the value's write happened-before.
            Some(unsafe { self.value_unchecked() })
        } else {
            None
        }
    }

    /// # Safety
    /// The cell must be complete (observed with `Acquire` ordering by this thread).
    #[inline]
    pub(crate) unsafe fn value_unchecked(&self) -> &Result<T, Failure> {
        // SAFETY: per the caller, the value is initialised and no longer written.
        self.value.with(|p| unsafe { (*p).assume_init_ref() })
    }

    /// Moves the result out for the cell's unique reader: a success is moved (and the cell
    /// remembers it, `TAKEN`), a failure is cloned and stays in the cell (module docs: internal
    /// observers may be looking at it).
    ///
    /// # Safety
    /// The cell is complete (observed with `Acquire` by this thread); the caller is its unique
    /// reader (it holds the cell's only handle, a [`Task`](crate::Task), and no callback on the
    /// cell reads a success) and calls this at most once.
    #[inline]
    pub(crate) unsafe fn take(&self) -> Result<T, Failure> {
        // SAFETY: complete, per the caller.
        let v = unsafe { self.value_unchecked() };
        match v {
            Err(e) => Err(e.clone()),
            Ok(_) => {
                // SAFETY: the unique reader moves the success out once; `mark_taken` keeps
                // `destroy` from dropping it again, and nobody else reads a success.
                let v = unsafe { std::ptr::read(v) };
                // A `T` without drop glue left behind is dropped as a no-op: no mark needed
                // (and no store on the `wait` of a number).
                if std::mem::needs_drop::<T>() {
                    // SAFETY: complete, and we just moved the value out.
                    unsafe { self.header.mark_taken() };
                }
                v
            }
        }
    }

    /// Completes the cell if nobody did yet; gives the value back otherwise.
    ///
    /// # Safety
    /// `this` points to a live cell and carries the provenance of its whole allocation (it
    /// was not made from a reference to the cell or its header): callbacks handed to a task
    /// keep the cell alive through it, and the last reference frees the allocation with it.
    #[inline]
    pub(crate) unsafe fn try_complete(
        this: NonNull<Self>,
        v: Result<T, Failure>,
    ) -> Result<(), Result<T, Failure>> {
        // SAFETY: live, per the caller.
        if !unsafe { this.as_ref() }.header.try_claim() {
            return Err(v);
        }
        // SAFETY: we won the claim: we are the only completer; `this` as the caller's.
        unsafe { Self::complete_claimed(this, v) };
        Ok(())
    }

    /// Writes and publishes the value and notifies the waiters.
    ///
    /// # Safety
    /// The caller is the only completer (it won `try_claim`, or is the cell's task), and
    /// `this` is as for [`try_complete`](Self::try_complete).
    #[inline]
    pub(crate) unsafe fn complete_claimed(this: NonNull<Self>, v: Result<T, Failure>) {
        // SAFETY: live and ours to complete, per the caller.
        let list = unsafe { this.as_ref().publish_claimed(v) };
        if !list.is_null() {
            // SAFETY: the caller holds a reference (it is completing the cell), the list was
            // taken from this cell, and `this` has the allocation's provenance (a deferred
            // dispatch may give up the last reference through it).
            unsafe { crate::future::notify::dispatch(this.cast(), list) };
        }
    }

    /// Writes and publishes the value, and returns the waiter list for
    /// [`notify::dispatch`](crate::future::notify::dispatch) (a transaction publishes all its
    /// cells before it notifies anyone).
    ///
    /// # Safety
    /// As [`complete_claimed`](Self::complete_claimed).
    #[inline]
    pub(crate) unsafe fn publish_claimed(&self, v: Result<T, Failure>) -> *const CellWaiter {
        // SAFETY: the only completer writes once; readers wait for COMPLETE.
        self.value.with_mut(|p| unsafe { (*p).write(v) });
        // SAFETY: value written; we are the only completer.
        unsafe { self.header.publish() }
    }

    /// Drops the value if the cell is complete, or discards the waiters if it is not.
    ///
    /// # Safety
    /// Exclusive access: called from `destroy` only.
    pub(crate) unsafe fn drop_contents(&mut self) {
        let s = self.header.state.load(Ordering::Acquire);
        if s & COMPLETE != 0 {
            if s & TAKEN != 0 {
                return; // the unique reader moved the value out
            }
            // SAFETY: complete, so initialised; exclusive access.
            self.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
        } else {
            // SAFETY: exclusive access.
            unsafe { discard_all(NonNull::from(&self.header)) };
        }
    }
}

/// A heap waiter that runs a closure on the completed value: the building block of every
/// callback and combinator.
#[repr(C)]
struct Callback<T, F> {
    waiter: CellWaiter,
    f: ManuallyDrop<F>,
    _t: PhantomData<fn(&T)>,
}

/// Frees a callback node and hands back its closure.
///
/// # Safety
/// `node` was made by `push_callback` from a `Box<Callback<T, F>>`, and is called once (so
/// we own it).
unsafe fn unbox<T, F>(node: NonNull<CellWaiter>) -> F {
    // SAFETY: per the caller, the node is a `Box<Callback<T, F>>` that we own.
    let mut b = unsafe { Box::from_raw(node.cast::<Callback<T, F>>().as_ptr()) };
    // SAFETY: taken once, here; the box is freed below without dropping `f` again.
    unsafe { ManuallyDrop::take(&mut b.f) }
}

unsafe fn call_callback<T, F>(node: NonNull<CellWaiter>, cell: NonNull<CellHeader>, action: Action)
where
    F: FnOnce(&Result<T, Failure>),
{
    // SAFETY: `on_complete_raw` made the node; a waiter is called once.
    let f = unsafe { unbox::<T, F>(node) };
    if action == Action::Notify {
        // SAFETY: the cell is a `CompletionCell<T>` (the callback was registered through one) and is
        // complete.
        let v = unsafe { cell.cast::<CompletionCell<T>>().as_ref().value_unchecked() };
        f(v);
    }
}

unsafe fn call_take<T, F>(node: NonNull<CellWaiter>, cell: NonNull<CellHeader>, action: Action)
where
    F: FnOnce(Result<T, Failure>),
{
    // SAFETY: `on_complete_take` made the node; a waiter is called once.
    let f = unsafe { unbox::<T, F>(node) };
    if action == Action::Notify {
        // SAFETY: the cell is a complete `CompletionCell<T>` whose unique reader registered
        // this callback (`on_complete_take`'s contract).
        let v = unsafe { cell.cast::<CompletionCell<T>>().as_ref().take() };
        f(v);
    }
}

impl<T> CompletionCell<T> {
    /// Pushes a fresh callback node, or calls it now if the cell is complete.
    fn push_callback<F>(
        &self,
        f: F,
        call: unsafe fn(NonNull<CellWaiter>, NonNull<CellHeader>, Action),
    ) {
        let node = Box::new(Callback::<T, F> {
            waiter: CellWaiter::new(call),
            f: ManuallyDrop::new(f),
            _t: PhantomData,
        });
        let node = NonNull::from(Box::leak(node)).cast::<CellWaiter>();
        // SAFETY: a fresh heap node, valid until called or discarded.
        if !unsafe { self.header.push(node) } {
            // Completed meanwhile: run it ourselves.
            // SAFETY: the node is ours again (push refused it); the cell is complete.
            unsafe { call(node, NonNull::from(&self.header), Action::Notify) };
        }
    }

    /// Hands the result to `f` by value once the cell completes (see
    /// [`take`](Self::take) for what moves).
    ///
    /// # Safety
    /// The caller is the cell's unique reader (it consumed the cell's only handle) and gives
    /// its right to read to `f`.
    pub(crate) unsafe fn on_complete_take<F>(&self, f: F)
    where
        F: FnOnce(Result<T, Failure>) + Send,
    {
        if self.header.is_complete() {
            // SAFETY: complete; the unique reader's right was given to us.
            f(unsafe { self.take() });
            return;
        }
        self.push_callback(f, call_take::<T, F>);
    }

    /// Runs `f` on the value once the cell completes: now, on this thread, if it already has;
    /// otherwise on the completing thread (see `notify::dispatch`). If the cell is destroyed
    /// without completing, `f` is dropped without being called.
    pub(crate) fn on_complete_raw<F>(&self, f: F)
    where
        F: FnOnce(&Result<T, Failure>) + Send,
    {
        if let Some(v) = self.get() {
            f(v);
            return;
        }
        self.push_callback(f, call_callback::<T, F>);
    }
}
