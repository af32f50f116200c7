//! Where completion callbacks run.
//!
//! Waiters that belong to a waiting thread or `.await` are released and woken first, always
//! inline. Callbacks (and the combinators built on them) then run on the thread that completes
//! the cell: no task is spawned, no queue is touched, which is what makes `map`/`flat_map`
//! chains cheap. The timer thread is the exception: it hands callbacks to a task, so user code
//! never delays other timers. To keep a long chain of completions (each callback
//! completing the next cell) from growing the stack without bound, a thread-local depth counts
//! nested dispatches; past [`MAX_INLINE_DEPTH`] the rest of the list is handed to the runtime
//! as a task, which starts again at depth 0 (a trampoline).

use std::cell::Cell;
use std::ptr::NonNull;

use super::cell::{CellHeader, CellWaiter, release_owners, run_callbacks};

/// Nested callback dispatches allowed on one thread's stack before deferring to a task.
pub(crate) const MAX_INLINE_DEPTH: u32 = 48;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Callback nodes handed to a task. Whoever drops it runs them (the task when it runs, or the
/// runtime cancelling the task at shutdown), so they are never lost.
struct Deferred(NonNull<CellHeader>, *const CellWaiter);
// SAFETY: the list and the cell reference are owned by this value alone.
unsafe impl Send for Deferred {}

impl Drop for Deferred {
    fn drop(&mut self) {
        // SAFETY: the list came from `release_owners` on the cell, which this value keeps
        // alive with its own reference, given up after.
        unsafe {
            run_callbacks(self.0, self.1);
            CellHeader::dec_ref(self.0);
        }
    }
}

/// Notifies the waiters of a just-completed cell: owners at once, callbacks inline or (when
/// deep, or on a thread that must not run user code) in a new task.
///
/// # Safety
/// `list` was taken from `cell` by `publish`, and the caller holds a reference to `cell` for
/// the duration of the call.
pub(crate) unsafe fn dispatch(cell: NonNull<CellHeader>, list: *const CellWaiter) {
    // Off the workers, the tasks woken here are pushed together (`runtime::wake_batch`).
    let batch = if crate::runtime::worker::current_ctx().is_none() {
        crate::runtime::wake_batch::open()
    } else {
        None
    };
    // SAFETY: forwarded from the caller.
    let callbacks = unsafe { release_owners(cell, list) };
    drop(batch);
    if callbacks.is_null() {
        return;
    }
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
        // SAFETY: forwarded from the caller; the list came from `release_owners`.
        unsafe { run_callbacks(cell, callbacks) };
    } else {
        defer(cell, callbacks);
    }
}

#[cold]
fn defer(cell: NonNull<CellHeader>, callbacks: *const CellWaiter) {
    // SAFETY: the caller of `dispatch` holds a reference; this one is the task's.
    unsafe { cell.as_ref() }.inc_ref();
    let job = Deferred(cell, callbacks);
    crate::runtime::spawn_detached(Box::new(move || drop(job)));
}

/// Replaces this thread's callback nesting depth (a worker loop suspending or resuming).
/// Returns the previous one.
pub(crate) fn swap_depth(depth: u32) -> u32 {
    DEPTH.with(|d| d.replace(depth))
}

/// From now on, this thread hands every callback to a task instead of running it (the timer
/// thread: user code there would hold up every timer in the process).
pub(crate) fn never_run_callbacks_here() {
    DEPTH.with(|d| d.set(MAX_INLINE_DEPTH));
}
