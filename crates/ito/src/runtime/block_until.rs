//! Blocking waits that never pin a worker.
//!
//! [`block_until`] is what [`Future::wait`](crate::Future::wait) does when the result is not
//! there yet:
//!
//! 1. **Help, but only with what we wait for.** If the cell belongs to a task of this worker's
//!    runtime that nobody has started, run it right here (it is a dependency of ours, so by
//!    acyclicity it cannot be waiting for us). This is what makes `wait()`-style fork-join
//!    (fib with `wait`) run depth-first on one stack like a sequential program.
//! 2. Otherwise **block, but give our place away**: the worker leaves the active count, and if
//!    that leaves the runtime short of workers, an idle worker is woken or a compensation
//!    thread activated (bounded by `max_compensation`, unless every worker is blocked).
//!
//! It deliberately does *not* run arbitrary queued tasks while waiting: a task run on top of a
//! blocked frame buries that frame until the task returns, and if the task (directly or not)
//! waits for the buried frame's result, an acyclic graph deadlocks. `docs/scheduler.md` has
//! the argument and the example.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use super::park::{Blocker, Spin, Unblocker, pause_outside};
use super::worker::{self, WorkerCtx};
use crate::future::cell::{Action, CellHeader, CellWaiter, Locked};
use crate::task::Header;
use crate::task::cancel::{self, Watch};
use crate::trace::Why;

/// How a [`block_until`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// The cell is complete.
    Complete,
    /// The deadline passed first.
    TimedOut,
    /// The synchronous task running on this thread was cancelled first.
    Cancelled,
}

/// A waiter parked on a cell (a thread, or a suspended worker loop). Lives on the waiter's
/// stack.
#[repr(C)]
struct ThreadNode {
    waiter: CellWaiter,
    who: Unblocker,
    done: AtomicBool,
}

unsafe fn notify_thread(node: NonNull<CellWaiter>, _cell: NonNull<CellHeader>, _action: Action) {
    let node = node.cast::<ThreadNode>();
    // SAFETY: the node is live until `done` is set: its owner does not return before it sees
    // `done` (or unlinks the node itself, in which case this is never called).
    let who = unsafe { node.as_ref() }.who.clone();
    // SAFETY: as above; this store is our last access to the node.
    unsafe { node.as_ref() }.done.store(true, Ordering::Release);
    who.unblock();
}

/// Waits until `cell` is complete, or `deadline` passes, or the synchronous task running on
/// this thread is cancelled.
///
/// The caller holds a reference to the cell for the duration.
#[cold]
pub(crate) fn block_until(cell: NonNull<CellHeader>, deadline: Option<Instant>) -> Woken {
    block_until_inner(cell, deadline, true)
}

/// [`block_until`] that ignores the cancellation of the current task: for waits that keep
/// borrowed memory alive (a scope waiting for its cancelled children, `install` waiting for
/// the task that points into its frame). The caller holds a reference to the cell.
#[cold]
pub(crate) fn block_until_complete(cell: NonNull<CellHeader>) {
    block_until_inner(cell, None, false);
}

fn block_until_inner(
    cell: NonNull<CellHeader>,
    deadline: Option<Instant>,
    cancellable: bool,
) -> Woken {
    // SAFETY: the caller holds a reference.
    let header = unsafe { cell.as_ref() };
    if cancellable && cancel::current_cancelled() {
        return if header.is_complete() {
            Woken::Complete
        } else {
            Woken::Cancelled
        };
    }
    let ctx = worker::current_ctx();
    if let Some(ctx) = ctx {
        if deadline.is_none() && try_help(ctx, cell) && header.is_complete() {
            return Woken::Complete;
        }
    }
    if header.is_complete() {
        return Woken::Complete;
    }
    park_on(header, deadline, ctx, cancellable)
}

/// Runs the task behind `cell` inline if that is safe and nobody started it.
fn try_help(ctx: &WorkerCtx, cell: NonNull<CellHeader>) -> bool {
    // SAFETY: the caller of `block_until` holds a reference.
    let Some(task) = (unsafe { crate::task::task_of_cell(cell) }) else {
        return false;
    };
    // SAFETY: the task shares the cell's allocation, which the caller keeps alive.
    let same_runtime = std::ptr::eq(unsafe { task.as_ref() }.sched, ctx.shared);
    if !same_runtime || !ctx.stack_has_room() {
        return false;
    }
    // The task run here is not part of the current synchronous task (if any): its blocking
    // calls and `is_cancelled` must not answer for ours.
    let _outside = cancel::Running::outside();
    if ctx.run_if_on_top(task.as_ptr()) {
        return true;
    }
    // SAFETY: we hold a reference (through the cell).
    let ran = unsafe { Header::try_run_inline(task) };
    if ran {
        ctx.note_helped();
    }
    ran
}

fn park_on(
    header: &CellHeader,
    deadline: Option<Instant>,
    ctx: Option<&WorkerCtx>,
    cancellable: bool,
) -> Woken {
    let blocker = Blocker::current();
    let node = ThreadNode {
        waiter: CellWaiter::new_owner(notify_thread),
        who: blocker.unblocker(),
        done: AtomicBool::new(false),
    };
    let ptr = NonNull::from(&node).cast::<CellWaiter>();
    // SAFETY: the node outlives its registration: we return only after it is unlinked or
    // notified.
    if !unsafe { header.push(ptr) } {
        return Woken::Complete;
    }
    // A cancellation queued on this thread may be what completes the future.
    crate::task::run_pending_cancels();
    let done = || node.done.load(Ordering::Acquire).then_some(());
    if ctx.is_none() && Spin::outside().run(deadline, done).is_some() {
        return Woken::Complete;
    }
    let watch = if cancellable {
        Watch::new(&blocker)
    } else {
        None
    };
    // A suspended loop leaves the thread running: nothing to hand over.
    let _blocked = ctx
        .filter(|_| !blocker.suspends())
        .map(|c| c.enter_blocking(Why::Wait));
    // Off the workers: a thread parked in a `block_on` is not running (`park/README.md`, "Deferred
    // wake-ups").
    let _paused = ctx.is_none().then(pause_outside);
    let why = loop {
        if node.done.load(Ordering::Acquire) {
            return Woken::Complete;
        }
        if watch.as_ref().is_some_and(Watch::cancelled) {
            break Woken::Cancelled;
        }
        match deadline {
            None => blocker.park(),
            Some(d) => {
                if Instant::now() >= d {
                    break Woken::TimedOut;
                }
                blocker.park_until(d);
            }
        }
    };
    // Timed out or cancelled: take the node back, or wait for the completer to finish with it
    // (then the value is there after all).
    match header.lock() {
        Locked::Held(mut guard) => {
            // SAFETY: our node, pushed above and not notified (the lock was free and the cell
            // incomplete), so still listed.
            let found = unsafe { guard.unlink(ptr) };
            debug_assert!(found);
        }
        Locked::Complete => {
            while !node.done.load(Ordering::Acquire) {
                thread::yield_now();
            }
            return Woken::Complete;
        }
    }
    why
}
