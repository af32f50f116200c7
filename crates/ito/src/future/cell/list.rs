//! What happens to a cell's waiter list when the cell completes or is destroyed: owners are
//! released first, then callbacks run in order; an uncompleted cell discards its waiters.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};

use super::{Action, COMPLETE, CellHeader, CellWaiter, PTR_MASK};
use crate::loom::Ordering;

/// Runs `destroy(this)`, containing a panic: a panicking `Drop` of a value (or of a task body
/// or closure) must not unwind whoever dropped the last reference (a worker, a completer, a
/// user) through someone else's destructor.
///
/// # Safety
/// `destroy`'s own contract for `this` (the last reference to it is gone; called once).
pub(crate) unsafe fn contain_destroy<P>(destroy: unsafe fn(NonNull<P>), this: NonNull<P>) {
    // SAFETY: forwarded.
    let r = catch_unwind(AssertUnwindSafe(|| unsafe { destroy(this) }));
    if let Err(payload) = r {
        crate::failure::drop_payload(payload);
    }
}

/// Notifies the *owner* nodes of a just-taken `list` (a thread parked in `wait()`, an
/// `.await`): each releases its node and wakes its owner, without running any user callback
/// first. Returns the remaining callback nodes, in registration order, for
/// [`run_callbacks`].
///
/// Owners come first and are never deferred because an owner that finds the cell complete may
/// wait for its node to be released: if a callback (arbitrary user code) ran first and waited
/// for something that owner's thread must do, the two would deadlock.
///
/// # Safety
/// `list` was taken from `cell` by `publish`; `cell` is complete and stays alive during the
/// call (the caller holds a reference).
pub(crate) unsafe fn release_owners(
    cell: NonNull<CellHeader>,
    list: *const CellWaiter,
) -> *const CellWaiter {
    // Reverse the stack into registration order.
    let mut rev: *const CellWaiter = ptr::null();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: the completer owns every node of the taken list until it calls it.
        let next = unsafe { (*cur).next.with(|p| *p) };
        // SAFETY: as above.
        unsafe { (*cur).next.with_mut(|p| *p = rev) };
        rev = cur;
        cur = next;
    }
    // Notify owners; relink callbacks, in order, into a new list.
    let mut head: *const CellWaiter = ptr::null();
    let mut tail: *const CellWaiter = ptr::null();
    let mut cur = rev;
    while !cur.is_null() {
        // SAFETY: as above; read `next` before `call`, which may free the node.
        let (next, call, owner) = unsafe { ((*cur).next.with(|p| *p), (*cur).call, (*cur).owner) };
        if owner {
            let node = NonNull::new(cur as *mut CellWaiter).expect("non-null list node");
            // SAFETY: the node was registered on `cell` and is called exactly once, here.
            let r = catch_unwind(AssertUnwindSafe(|| unsafe {
                call(node, cell, Action::Notify)
            }));
            if let Err(payload) = r {
                crate::failure::drop_payload(payload); // a panicking waker; reported by the hook
            }
        } else {
            // SAFETY: the node is ours (taken list); relinking it touches only its `next`.
            unsafe { (*cur).next.with_mut(|p| *p = ptr::null()) };
            if tail.is_null() {
                head = cur;
            } else {
                // SAFETY: `tail` is a callback node of this list, still ours.
                unsafe { (*tail).next.with_mut(|p| *p = cur) };
            }
            tail = cur;
        }
        cur = next;
    }
    head
}

/// Runs the callback nodes returned by [`release_owners`], in order. A panicking callback
/// does not stop the others.
///
/// # Safety
/// `list` came from `release_owners` on `cell`, which is complete and stays alive during the
/// call (the caller holds a reference).
pub(crate) unsafe fn run_callbacks(cell: NonNull<CellHeader>, list: *const CellWaiter) {
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: the caller owns the nodes; read `next` before `call`, which frees the node.
        let (next, call) = unsafe { ((*cur).next.with(|p| *p), (*cur).call) };
        let node = NonNull::new(cur as *mut CellWaiter).expect("non-null list node");
        // SAFETY: the node was registered on `cell` and is called exactly once, here.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe {
            call(node, cell, Action::Notify)
        }));
        if let Err(payload) = r {
            crate::failure::drop_payload(payload); // already reported by the panic hook
        }
        cur = next;
    }
}

/// Discards every waiter still registered on a cell that is being destroyed uncompleted.
///
/// # Safety
/// Called from `destroy` only, with exclusive access to the cell.
pub(crate) unsafe fn discard_all(cell: NonNull<CellHeader>) {
    // SAFETY: exclusive access (caller's contract).
    let s = unsafe { cell.as_ref() }.state.load(Ordering::Acquire);
    if s & COMPLETE != 0 {
        return;
    }
    let mut cur = (s & PTR_MASK) as *const CellWaiter;
    while !cur.is_null() {
        // SAFETY: nodes still listed are owned by the list; nobody else can reach them now.
        let (next, call) = unsafe { ((*cur).next.with(|p| *p), (*cur).call) };
        let node = NonNull::new(cur as *mut CellWaiter).expect("non-null list node");
        // SAFETY: each node is discarded exactly once, here. A panicking drop inside must not
        // keep the remaining nodes from being discarded.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe {
            call(node, cell, Action::Discard)
        }));
        if let Err(payload) = r {
            crate::failure::drop_payload(payload);
        }
        cur = next;
    }
}
