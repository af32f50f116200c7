//! Where completion callbacks run.
//!
//! Callbacks (and the combinators built on them) run on the thread that completes the cell,
//! right after it publishes the value: no task is spawned, no queue is touched, which is what
//! makes `map`/`flat_map` chains cheap. To keep a long chain of completions (each callback
//! completing the next cell) from growing the stack without bound, a thread-local depth counts
//! nested dispatches; past [`MAX_INLINE_DEPTH`] the rest of the list is handed to the runtime
//! as a task, which starts again at depth 0 (a trampoline).

use std::cell::Cell;
use std::ptr::NonNull;

use super::cell::{CellHeader, Waiter, notify_all};

/// Nested callback dispatches allowed on one thread's stack before deferring to a task.
pub(crate) const MAX_INLINE_DEPTH: u32 = 48;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A raw list handed to another thread.
struct SendList(NonNull<CellHeader>, *const Waiter);
// SAFETY: the list and the cell reference are owned by the deferred task alone.
unsafe impl Send for SendList {}

/// Notifies the waiters of a just-completed cell, inline or (when deep) in a new task.
///
/// # Safety
/// As for [`notify_all`]: `list` was taken from `cell` by `publish`, and the caller holds a
/// reference to `cell` for the duration of the call.
pub(crate) unsafe fn dispatch(cell: NonNull<CellHeader>, list: *const Waiter) {
    let depth = DEPTH.with(|d| d.get());
    if depth < MAX_INLINE_DEPTH {
        DEPTH.with(|d| d.set(depth + 1));
        struct Reset(u32);
        impl Drop for Reset {
            fn drop(&mut self) {
                DEPTH.with(|d| d.set(self.0));
            }
        }
        let _reset = Reset(depth);
        // SAFETY: forwarded from the caller.
        unsafe { notify_all(cell, list) };
    } else {
        defer(cell, list);
    }
}

#[cold]
fn defer(cell: NonNull<CellHeader>, list: *const Waiter) {
    // SAFETY: the caller of `dispatch` holds a reference; this one is the task's.
    unsafe { cell.as_ref() }.inc_ref();
    let job = SendList(cell, list);
    crate::runtime::spawn_detached(Box::new(move || {
        let job = job;
        // SAFETY: the list was taken from the cell, which the task keeps alive.
        unsafe {
            notify_all(job.0, job.1);
            CellHeader::dec_ref(job.0);
        }
    }));
}
