//! Combinator cells: each combinator is **one allocation** holding the derived future's cell,
//! the waiter node(s) registered on its source(s), and the user's closure.
//!
//! ```text
//! Map<T, U, F>          Flat<T, U, F>           Zip<T, U, R, F>
//! ┌──────────────┐      ┌──────────────┐        ┌──────────────┐
//! │ out: CompletionCell<U>│ ◄─ Future<U> handles ─►      │ out: CompletionCell<R>│
//! │ node         │ ─ on source                  │ node_a, node_b ─ on each source
//! │ f            │      │ node1 → node2│ ─ on source, then on the future f returned
//! └──────────────┘      └──────────────┘        │ remaining, a, b, f
//!                                               └──────────────┘
//! ```
//!
//! References on `out`: one per `Future` handle, plus one per node still registered. A node is
//! called exactly once (`Notify` when its source completes, `Discard` if the source is destroyed
//! uncompleted, which completes `out` with [`Failure::BrokenPromise`]), and gives its reference
//! up after completing `out`. So when the last reference goes, every node has run and the
//! closure has been consumed: destroying only drops `out`'s value and the allocation.
//!
//! `Map` and `Flat` are their cell's only completer (no claim CAS: completing is one CAS on
//! `out`). `Zip` has two (a failure on either side completes it at once), so it claims.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use super::Future;
use super::cell::{Action, CellHeader, CellVTable, CellWaiter, CompletionCell, HANDLE};
use crate::Failure;
use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

/// Runs a user closure, turning a panic into a failure.
#[inline]
pub(super) fn guard<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    catch_unwind(AssertUnwindSafe(f)).map_err(Failure::from_panic)
}

/// The vtable of a combinator cell `C` whose first field is its output cell `CompletionCell<U>` (every
/// `C` here is `repr(C)` with `out: CompletionCell<U>` first, and allocated by `Box`).
struct Destroy<C, U>(PhantomData<(C, U)>);

impl<C, U> Destroy<C, U> {
    const VTABLE: CellVTable = CellVTable {
        destroy: Self::destroy,
        task: None,
    };

    unsafe fn destroy(cell: NonNull<CellHeader>) {
        // SAFETY: cells with this vtable are `C`s made by `Box::new`, with `out: CompletionCell<U>` at
        // offset 0; this is the last reference, so access is exclusive. `CompletionCell` has no drop glue
        // of its own, so dropping the box afterwards does not touch the value again.
        unsafe {
            (*cell.cast::<CompletionCell<U>>().as_ptr()).drop_contents();
            drop(Box::from_raw(cell.cast::<C>().as_ptr()));
        }
    }
}

/// Drops a user closure without letting a panicking destructor unwind into the completer.
fn drop_guarded<F>(f: F) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(f))) {
        crate::failure::drop_payload(payload);
    }
}

/// Completes `out` and gives up the calling node's reference on it.
///
/// `out` is a raw pointer derived from the combinator's allocation (not from a reference to
/// `out`): if that reference is the last, the whole allocation is freed through it.
///
/// # Safety
/// The caller is `out`'s only completer and owns one reference on it.
#[inline]
unsafe fn finish<U>(out: NonNull<CompletionCell<U>>, result: Result<U, Failure>) {
    // SAFETY: forwarded from the caller.
    unsafe {
        CompletionCell::complete_claimed(out, result);
        CellHeader::dec_ref(out.cast());
    }
}

/// `container_of`: the combinator cell holding the node at byte offset `off`.
///
/// # Safety
/// `node` is the field at offset `off` of a live `C`.
#[inline]
unsafe fn container<C>(node: NonNull<CellWaiter>, off: usize) -> NonNull<C> {
    // SAFETY: per the caller, stepping back `off` bytes stays inside the same allocation.
    unsafe { NonNull::new_unchecked(node.as_ptr().cast::<u8>().sub(off).cast::<C>()) }
}

/// Hands out the output handle of a fresh combinator cell `b` (`refs` already counts it).
fn handle<C, U>(b: NonNull<C>) -> Future<U> {
    // SAFETY: `C`'s first field is a `CompletionCell<U>` (`repr(C)`); the caller counted this handle.
    unsafe { Future::from_raw(b.cast::<CompletionCell<U>>()) }
}

// ---------------------------------------------------------------------------------------
// Map: out = f(&source result)

#[repr(C)]
struct Map<T, U, F> {
    out: CompletionCell<U>,
    node: CellWaiter,
    f: UnsafeCell<ManuallyDrop<F>>,
    _src: PhantomData<fn(&T)>,
}

unsafe fn call_map<T, U, F>(node: NonNull<CellWaiter>, src: NonNull<CellHeader>, action: Action)
where
    F: FnOnce(&Result<T, Failure>) -> Result<U, Failure>,
{
    // SAFETY: the node is `Map::node` of a live `Map` (it holds a reference on `out`).
    let m = unsafe { container::<Map<T, U, F>>(node, std::mem::offset_of!(Map<T, U, F>, node)) };
    // SAFETY: the node is called once, with `src` its source.
    let result = unsafe { apply_once(&m.as_ref().f, src, action) };
    // SAFETY: the node is `out`'s only completer and holds a reference on it.
    unsafe { finish(m.cast::<CompletionCell<U>>(), result) };
}

/// Takes a combinator's closure out of `f` and applies it to the source's result: on
/// `Notify`, `f(&result)`, with a panic as a failure; on `Discard` (the source was destroyed
/// uncompleted), the closure is dropped and the result is `BrokenPromise`.
///
/// # Safety
/// Called once per closure, by the node registered on `src` (a `CompletionCell<T>`), with the
/// action it was called with.
unsafe fn apply_once<T, R, F>(
    f: &UnsafeCell<ManuallyDrop<F>>,
    src: NonNull<CellHeader>,
    action: Action,
) -> Result<R, Failure>
where
    F: FnOnce(&Result<T, Failure>) -> Result<R, Failure>,
{
    // SAFETY: called once, so the closure is taken once.
    let f = f.with_mut(|p| unsafe { ManuallyDrop::take(&mut *p) });
    match action {
        Action::Notify => {
            // SAFETY: notified, so the source (a `CompletionCell<T>`) is complete.
            let v = unsafe { src.cast::<CompletionCell<T>>().as_ref().value_unchecked() };
            guard(move || f(v)).and_then(|r| r)
        }
        Action::Discard => {
            drop_guarded(f);
            Err(Failure::BrokenPromise)
        }
    }
}

/// A future completed with `f(&source's result)` when `src` completes.
pub(super) fn map<T, U, F>(src: &Future<T>, f: F) -> Future<U>
where
    T: Send + Sync + 'static,
    U: Send + Sync + 'static,
    F: FnOnce(&Result<T, Failure>) -> Result<U, Failure> + Send + 'static,
{
    if let Some(r) = src.inner().get() {
        return Future::from_result(guard(move || f(r)).and_then(|r| r));
    }
    let b = NonNull::from(Box::leak(Box::new(Map::<T, U, F> {
        out: CompletionCell::new(HANDLE + 1, &Destroy::<Map<T, U, F>, U>::VTABLE),
        node: CellWaiter::new(call_map::<T, U, F>),
        f: UnsafeCell::new(ManuallyDrop::new(f)),
        _src: PhantomData,
    })));
    let out = handle::<_, U>(b);
    // SAFETY: the node lives in `b`, which its own reference keeps alive until it is called.
    let node = unsafe { NonNull::new_unchecked(std::ptr::addr_of_mut!((*b.as_ptr()).node)) };
    register(src.header(), node);
    out
}

/// Pushes `node` on `src`, or calls it now if `src` already completed.
#[inline]
fn register(src: &CellHeader, node: NonNull<CellWaiter>) {
    // SAFETY: the node stays valid until called (its combinator holds a reference for it).
    if !unsafe { src.push(node) } {
        // SAFETY: the push was refused because `src` is complete; the node is ours to call.
        unsafe {
            let call = node.as_ref().call_fn();
            call(node, NonNull::from(src), Action::Notify);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Flat: out = the result of the future f(&source result) returns

#[repr(C)]
struct Flat<T, U, F> {
    out: CompletionCell<U>,
    node1: CellWaiter,
    node2: CellWaiter,
    f: UnsafeCell<ManuallyDrop<F>>,
    _src: PhantomData<fn(&T)>,
}

unsafe fn call_flat1<T, U, F>(node: NonNull<CellWaiter>, src: NonNull<CellHeader>, action: Action)
where
    U: Clone,
    F: FnOnce(&Result<T, Failure>) -> Result<Future<U>, Failure>,
{
    let off = std::mem::offset_of!(Flat<T, U, F>, node1);
    // SAFETY: the node is `Flat::node1` of a live `Flat`.
    let m = unsafe { container::<Flat<T, U, F>>(node, off) };
    // SAFETY: node1 is called once, with `src` its source.
    let next = unsafe { apply_once(&m.as_ref().f, src, action) };
    match next {
        Ok(fut) => {
            // node1's reference on `out` passes to node2.
            // SAFETY: node2 is a field of the live `Flat`.
            let node2 =
                unsafe { NonNull::new_unchecked(std::ptr::addr_of_mut!((*m.as_ptr()).node2)) };
            register(fut.header(), node2);
            drop(fut);
        }
        Err(e) => {
            // SAFETY: node1 is `out`'s only completer (node2 never registered) and holds a
            // reference on it.
            unsafe { finish(m.cast::<CompletionCell<U>>(), Err(e)) };
        }
    }
}

unsafe fn call_flat2<T, U: Clone, F>(
    node: NonNull<CellWaiter>,
    src: NonNull<CellHeader>,
    action: Action,
) {
    let off = std::mem::offset_of!(Flat<T, U, F>, node2);
    // SAFETY: the node is `Flat::node2` of a live `Flat`.
    let m = unsafe { container::<Flat<T, U, F>>(node, off) };
    let result = match action {
        Action::Notify => {
            // SAFETY: notified, so the inner future's cell (a `CompletionCell<U>`) is complete.
            let v = unsafe { src.cast::<CompletionCell<U>>().as_ref().value_unchecked() };
            guard(|| v.clone()).and_then(|r| r)
        }
        Action::Discard => Err(Failure::BrokenPromise),
    };
    // SAFETY: node2 is `out`'s only completer and holds the reference node1 passed on.
    unsafe { finish(m.cast::<CompletionCell<U>>(), result) };
}

/// A future completed with the result of the future that `f(&source's result)` returns.
pub(super) fn flat<T, U, F>(src: &Future<T>, f: F) -> Future<U>
where
    T: Send + Sync + 'static,
    U: Clone + Send + Sync + 'static,
    F: FnOnce(&Result<T, Failure>) -> Result<Future<U>, Failure> + Send + 'static,
{
    let b = NonNull::from(Box::leak(Box::new(Flat::<T, U, F> {
        out: CompletionCell::new(HANDLE + 1, &Destroy::<Flat<T, U, F>, U>::VTABLE),
        node1: CellWaiter::new(call_flat1::<T, U, F>),
        node2: CellWaiter::new(call_flat2::<T, U, F>),
        f: UnsafeCell::new(ManuallyDrop::new(f)),
        _src: PhantomData,
    })));
    let out = handle::<_, U>(b);
    // SAFETY: node1 lives in `b`, kept alive by its reference until called.
    let node1 = unsafe { NonNull::new_unchecked(std::ptr::addr_of_mut!((*b.as_ptr()).node1)) };
    register(src.header(), node1);
    out
}

// ---------------------------------------------------------------------------------------
// Zip: out = f(a, b) once both succeed; the first failure otherwise

#[repr(C)]
struct Zip<T, U, R, F> {
    out: CompletionCell<R>,
    node_a: CellWaiter,
    node_b: CellWaiter,
    /// Successful arrivals still missing. The arrival that takes it to 0 reads both slots.
    remaining: AtomicUsize,
    /// Written only by `node_a`'s call, before its release decrement.
    a: UnsafeCell<Option<T>>,
    /// Written only by `node_b`'s call, before its release decrement.
    b: UnsafeCell<Option<U>>,
    /// Taken by the last successful arrival; otherwise dropped with the box.
    f: UnsafeCell<Option<F>>,
}

impl<T: Clone, U: Clone, R, F: FnOnce(T, U) -> R> Zip<T, U, R, F> {
    /// One side arrived with `r` (`None`: its source was destroyed uncompleted).
    ///
    /// # Safety
    /// Called once per side, by that side's node, which holds a reference on `out`.
    unsafe fn arrive<V: Clone>(
        this: NonNull<Self>,
        r: Option<&Result<V, Failure>>,
        slot: impl FnOnce(&Self, V),
    ) {
        // SAFETY: the node's reference keeps `this` alive.
        let z = unsafe { this.as_ref() };
        // Completes `out`, unless the other side did first.
        let complete = |r: Result<R, Failure>| {
            // SAFETY: `out` is the first field of the `repr(C)` `Zip`, and `this` is a raw
            // pointer into the live allocation (from the node's `container`), with its
            // provenance, as `try_complete` requires.
            let _ = unsafe { CompletionCell::try_complete(this.cast::<CompletionCell<R>>(), r) };
        };
        match r {
            Some(Ok(v)) => {
                match guard(|| v.clone()) {
                    Ok(v) => slot(z, v),
                    Err(e) => {
                        complete(Err(e));
                        // SAFETY: this side's node gives up its reference; `out` is the first
                        // field of the `repr(C)` `Zip`, and `this` is a raw pointer into the
                        // allocation (the last reference frees it through this pointer).
                        unsafe { CellHeader::dec_ref(this.cast()) };
                        return;
                    }
                }
                if z.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // Both values are in; the acquire above saw the other side's write.
                    // SAFETY: each slot's writer is done (release/acquire on `remaining`), and
                    // only the last arrival gets here.
                    let (a, b, f) = unsafe {
                        (
                            z.a.with_mut(|p| (*p).take()),
                            z.b.with_mut(|p| (*p).take()),
                            z.f.with_mut(|p| (*p).take()),
                        )
                    };
                    if let (Some(a), Some(b), Some(f)) = (a, b, f) {
                        complete(guard(move || f(a, b)));
                    }
                }
            }
            Some(Err(e)) => {
                complete(Err(e.clone()));
            }
            None => {
                complete(Err(Failure::BrokenPromise));
            }
        }
        // SAFETY: as above.
        unsafe { CellHeader::dec_ref(this.cast()) };
    }
}

/// One side's node was called: find the `Zip`, read that side's source (a `CompletionCell<V>`) and
/// arrive with it.
///
/// # Safety
/// `node` is the field at offset `off` of a live `Zip<T, U, R, F>`, called once; `src` is that
/// side's source cell; `slot` writes only that side's slot.
#[inline]
unsafe fn zip_side<T: Clone, U: Clone, R, F: FnOnce(T, U) -> R, V: Clone>(
    node: NonNull<CellWaiter>,
    src: NonNull<CellHeader>,
    action: Action,
    off: usize,
    slot: impl FnOnce(&Zip<T, U, R, F>, V),
) {
    // SAFETY: per the caller, the node lives at `off` in a live `Zip`.
    let z = unsafe { container::<Zip<T, U, R, F>>(node, off) };
    // SAFETY: notified means the source (a `CompletionCell<V>`) is complete.
    let r = (action == Action::Notify)
        .then(|| unsafe { src.cast::<CompletionCell<V>>().as_ref().value_unchecked() });
    // SAFETY: this side's one call, holding its reference on `out`.
    unsafe { Zip::arrive(z, r, slot) };
}

unsafe fn call_zip_a<T: Clone, U: Clone, R, F: FnOnce(T, U) -> R>(
    node: NonNull<CellWaiter>,
    src: NonNull<CellHeader>,
    action: Action,
) {
    let off = std::mem::offset_of!(Zip<T, U, R, F>, node_a);
    // SAFETY: this is `Zip::node_a`, registered on source `a`; slot `a` is written only here.
    unsafe {
        zip_side::<T, U, R, F, T>(node, src, action, off, |z, v| {
            z.a.with_mut(|p| *p = Some(v))
        })
    };
}

unsafe fn call_zip_b<T: Clone, U: Clone, R, F: FnOnce(T, U) -> R>(
    node: NonNull<CellWaiter>,
    src: NonNull<CellHeader>,
    action: Action,
) {
    let off = std::mem::offset_of!(Zip<T, U, R, F>, node_b);
    // SAFETY: this is `Zip::node_b`, registered on source `b`; slot `b` is written only here.
    unsafe {
        zip_side::<T, U, R, F, U>(node, src, action, off, |z, v| {
            z.b.with_mut(|p| *p = Some(v))
        })
    };
}

/// A future of `f(a, b)` once both succeed; the first failure otherwise.
pub(super) fn zip<T, U, R, F>(a: &Future<T>, b: &Future<U>, f: F) -> Future<R>
where
    T: Clone + Send + Sync + 'static,
    U: Clone + Send + Sync + 'static,
    R: Send + Sync + 'static,
    F: FnOnce(T, U) -> R + Send + 'static,
{
    let z = NonNull::from(Box::leak(Box::new(Zip::<T, U, R, F> {
        out: CompletionCell::new(HANDLE + 2, &Destroy::<Zip<T, U, R, F>, R>::VTABLE),
        node_a: CellWaiter::new(call_zip_a::<T, U, R, F>),
        node_b: CellWaiter::new(call_zip_b::<T, U, R, F>),
        remaining: AtomicUsize::new(2),
        a: UnsafeCell::new(None),
        b: UnsafeCell::new(None),
        f: UnsafeCell::new(Some(f)),
    })));
    let out = handle::<_, R>(z);
    // SAFETY: both nodes live in `z`, each kept alive by its own reference until called.
    let (na, nb) = unsafe {
        (
            NonNull::new_unchecked(std::ptr::addr_of_mut!((*z.as_ptr()).node_a)),
            NonNull::new_unchecked(std::ptr::addr_of_mut!((*z.as_ptr()).node_b)),
        )
    };
    register(a.header(), na);
    register(b.header(), nb);
    out
}
