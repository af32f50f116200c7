//! The waker of an async task: a pointer to its [`Header`] carrying one reference.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::{Header, TaskRef};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

fn raw(h: NonNull<Header>) -> RawWaker {
    RawWaker::new(h.as_ptr() as *const (), &VTABLE)
}

fn header(p: *const ()) -> NonNull<Header> {
    // SAFETY: every waker of this vtable was built from a non-null header pointer.
    unsafe { NonNull::new_unchecked(p as *mut Header) }
}

unsafe fn clone(p: *const ()) -> RawWaker {
    let h = header(p);
    Header::inc_ref(h);
    raw(h)
}

unsafe fn wake(p: *const ()) {
    let h = header(p);
    // SAFETY: the waker holds a reference.
    if unsafe { h.as_ref() }.state.transition_to_notified() {
        // The waker's own reference becomes the queue entry's: no count traffic.
        TaskRef(h).reschedule();
    } else {
        // SAFETY: `wake` consumes the waker and its reference.
        unsafe { drop_waker(p) };
    }
}

unsafe fn wake_by_ref(p: *const ()) {
    let h = header(p);
    // SAFETY: the waker holds a reference.
    if unsafe { h.as_ref() }.state.transition_to_notified() {
        // We moved it idle → SCHEDULED: enqueue it, with a reference of its own.
        Header::inc_ref(h);
        TaskRef(h).reschedule();
    }
}

unsafe fn drop_waker(p: *const ()) {
    // SAFETY: the waker owns one reference.
    unsafe { Header::dec_ref(header(p)) };
}

/// A waker borrowing the runner's reference, for the duration of one poll.
///
/// # Safety
/// The caller holds a reference to the task for as long as the waker (not its clones) is used.
pub(super) unsafe fn borrowed(h: NonNull<Header>) -> ManuallyDrop<Waker> {
    // SAFETY: the vtable upholds the `RawWaker` contract; `ManuallyDrop` keeps this copy from
    // dropping a reference it does not own.
    ManuallyDrop::new(unsafe { Waker::from_raw(raw(h)) })
}
