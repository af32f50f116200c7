//! How a running synchronous task learns that it was cancelled.
//!
//! An async task is cancelled at its next suspension point: the runner finds `CANCELLED` in
//! the state word after a `Pending` poll and drops the body (`task::state`). A synchronous
//! body (a [`spawn_fn`](crate::spawn_fn) closure) has no suspension points; it sees
//! cancellation in ito's own blocking calls (`Future::wait`, `block_on_cancellable` and what
//! is built on it), which then return `Failure::Cancelled`.
//!
//! Two pieces make that work:
//!
//! - **The current task.** While a worker (or a waiter helping inline) runs a synchronous
//!   body, a thread-local points at its header ([`Running`]). Nested runs (a `wait` that runs
//!   the awaited task inline) save and restore it, so it always names the innermost body.
//! - **The blocked set.** A blocking call that is about to park registers `(task, unblocker)`
//!   in a sharded set ([`Watch`]) and only then checks `CANCELLED`; a canceller sets
//!   `CANCELLED` and only then looks the task up in the set and unblocks what it finds (a
//!   thread, or a suspended worker loop). The shard's mutex
//!   orders the two: either the canceller sees the registration, or the blocked thread sees
//!   the bit (loom model `loom_cancel`).
//!
//! Parking costs microseconds, so a mutex here is not on any hot path; tasks that never block
//! never touch the set.
//!
//! Cancelling a queued task runs its cancellation, which can complete a future whose waiter is
//! cancelled in turn: [`cancel_bounded`] runs such chains inline to a bounded depth and queues
//! the rest on the thread, so a long chain cannot overflow the stack.

use std::cell::Cell;
use std::ptr::{self, NonNull};

use super::{Header, TaskRef};
use crate::loom::Mutex;
use crate::runtime::park::{Blocker, Unblocker};

thread_local! {
    /// The synchronous task whose body this thread is running, or null.
    static CURRENT: Cell<*const Header> = const { Cell::new(ptr::null()) };
}

/// Marks this thread as running a synchronous task's body, until dropped.
pub(crate) struct Running {
    prev: *const Header,
}

impl Running {
    #[inline]
    pub(crate) fn enter(h: NonNull<Header>) -> Running {
        let prev = CURRENT.with(|c| c.replace(h.as_ptr()));
        Running { prev }
    }
}

impl Running {
    /// Marks this thread as running no synchronous task, until dropped. A waiter that runs
    /// the awaited task inline uses it: an async task's poll (or whatever else runs there)
    /// is not part of the waiter's body, and must not see the waiter's cancellation. (A
    /// synchronous task run inline names itself on entry anyway.)
    #[inline]
    pub(crate) fn outside() -> Running {
        let prev = CURRENT.with(|c| c.replace(ptr::null()));
        Running { prev }
    }
}

impl Drop for Running {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// Replaces the synchronous task this thread runs (a worker loop suspending or resuming:
/// the task belongs to the loop's stack, not to the thread). Returns the previous one.
pub(crate) fn swap_current(task: *const Header) -> *const Header {
    CURRENT.with(|c| c.replace(task))
}

/// The synchronous task running on this thread, if any.
#[inline]
fn current() -> Option<NonNull<Header>> {
    NonNull::new(CURRENT.with(Cell::get).cast_mut())
}

/// Whether the synchronous task running on this thread has been asked to cancel.
#[inline]
pub(crate) fn current_cancelled() -> bool {
    // SAFETY: the header is live while its body runs (the runner holds a reference).
    current().is_some_and(|h| unsafe { h.as_ref() }.state.is_cancelled())
}

const SHARDS: usize = 32;

/// Waiters blocked in ito's blocking calls on behalf of a synchronous task.
pub(crate) struct BlockedSet {
    shards: [Mutex<Shard>; SHARDS],
}

/// One shard: registrations by slot (`None`: free), and the free slots. Registering and
/// unregistering cost O(1) however many waiters are blocked (100,000 suspended tasks are);
/// only a cancellation looks through the shard.
#[derive(Default)]
struct Shard {
    entries: Vec<Option<(usize, Unblocker)>>,
    free: Vec<usize>,
}

/// A registration in a [`BlockedSet`], to unregister it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockedKey(usize);

impl BlockedSet {
    pub(crate) fn new() -> Self {
        BlockedSet {
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
        }
    }

    fn shard(&self, task: usize) -> &Mutex<Shard> {
        &self.shards[(task >> 6) % SHARDS]
    }

    /// Registers `who` as blocked for `task`.
    pub(crate) fn register(&self, task: usize, who: Unblocker) -> BlockedKey {
        let mut shard = self.shard(task).lock().unwrap();
        let entry = Some((task, who));
        match shard.free.pop() {
            Some(i) => {
                shard.entries[i] = entry;
                BlockedKey(i)
            }
            None => {
                shard.entries.push(entry);
                BlockedKey(shard.entries.len() - 1)
            }
        }
    }

    /// Removes the registration `key` of `task`.
    pub(crate) fn unregister(&self, task: usize, key: BlockedKey) {
        let mut shard = self.shard(task).lock().unwrap();
        let gone = shard.entries[key.0].take();
        debug_assert!(gone.is_some_and(|(t, _)| t == task));
        shard.free.push(key.0);
    }

    /// Unblocks every waiter registered for `task`. Call after setting `CANCELLED`.
    pub(crate) fn wake(&self, task: usize) {
        for (t, u) in self.shard(task).lock().unwrap().entries.iter().flatten() {
            if *t == task {
                u.unblock();
            }
        }
    }
}

#[cfg(not(loom))]
fn blocked() -> &'static BlockedSet {
    static SET: std::sync::OnceLock<BlockedSet> = std::sync::OnceLock::new();
    SET.get_or_init(BlockedSet::new)
}

/// Wakes the threads blocked on behalf of `task` (which was just marked `CANCELLED`).
#[cold]
pub(crate) fn wake_blocked(task: NonNull<Header>) {
    #[cfg(not(loom))]
    blocked().wake(task.as_ptr() as usize);
    #[cfg(loom)]
    let _ = task;
}

/// A blocking call's registration: while it lives, cancelling the current synchronous task
/// unblocks the call's blocker. Check [`Watch::cancelled`] after registering and after every
/// wake-up.
pub(crate) struct Watch {
    task: NonNull<Header>,
    #[cfg(not(loom))]
    key: BlockedKey,
}

impl Watch {
    /// Registers `blocker`, if this thread runs a synchronous task; `None` otherwise (nothing
    /// can cancel a plain thread's blocking call).
    #[cold]
    pub(crate) fn new(blocker: &Blocker) -> Option<Watch> {
        let task = current()?;
        #[cfg(not(loom))]
        let key = blocked().register(task.as_ptr() as usize, blocker.unblocker());
        #[cfg(loom)]
        let _ = blocker;
        Some(Watch {
            task,
            #[cfg(not(loom))]
            key,
        })
    }

    /// Whether the task was cancelled.
    #[inline]
    pub(crate) fn cancelled(&self) -> bool {
        // SAFETY: the header is live while its body runs, and the watch lives inside the body.
        unsafe { self.task.as_ref() }.state.is_cancelled()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        blocked().unregister(self.task.as_ptr() as usize, self.key);
    }
}

/// Nested cancellations run inline on one thread before the rest are queued.
const MAX_CANCEL_DEPTH: u32 = 32;

/// This thread's cancellation nesting depth, and what is queued beyond it.
struct Cancels {
    depth: u32,
    queue: Vec<TaskRef>,
}

thread_local! {
    static CANCELS: std::cell::RefCell<Cancels> =
        const { std::cell::RefCell::new(Cancels { depth: 0, queue: Vec::new() }) };
}

/// Replaces this thread's cancellation nesting depth (a worker loop suspending or resuming).
/// Returns the previous one.
pub(crate) fn swap_cancel_depth(depth: u32) -> u32 {
    CANCELS
        .try_with(|c| std::mem::replace(&mut c.borrow_mut().depth, depth))
        .unwrap_or(0)
}

/// Runs the cancellations queued on this thread (see [`cancel_bounded`]). Shutdown calls it,
/// and so does a thread about to park: a task it waits for may be sitting in this queue.
pub(crate) fn run_pending_cancels() {
    while let Some(t) = CANCELS
        .try_with(|c| c.borrow_mut().queue.pop())
        .ok()
        .flatten()
    {
        t.cancel();
    }
}

/// [`TaskRef::cancel`]: runs it inline up to [`MAX_CANCEL_DEPTH`] nested levels, queues it
/// on this thread beyond.
pub(super) fn cancel_bounded(task: TaskRef) {
    let mut me = Some(task);
    let inline = CANCELS.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.depth >= MAX_CANCEL_DEPTH {
            c.queue.extend(me.take());
            false
        } else {
            c.depth += 1;
            true
        }
    });
    let Some(task) = me else { return }; // queued for the outermost call
    if inline.is_err() {
        // This thread's locals are being destroyed: no queue, cancel right here.
        task.cancel_now();
        return;
    }
    /// Leaves this nesting level however `cancel_now` returns.
    struct Level;
    impl Drop for Level {
        fn drop(&mut self) {
            let _ = CANCELS.try_with(|c| c.borrow_mut().depth -= 1);
        }
    }
    let level = Level;
    task.cancel_now();
    drop(level);
    if CANCELS.try_with(|c| c.borrow().depth == 0).unwrap_or(false) {
        run_pending_cancels();
    }
}
