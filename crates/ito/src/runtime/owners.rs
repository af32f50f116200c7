//! Who owns a runtime's [`Shared`] block, and freeing it when the last owner lets go.
//!
//! The owners are the [`Runtime`](crate::Runtime) value, the runtime's blocking-pool threads,
//! every task allocated for it (alive from its allocation until its last reference, a
//! queue entry, a waker or a handle, is gone), every handle of a timer registered on its
//! driver (`time/driver.rs`), which reaches the driver through a plain pointer, and every
//! [`BlockHold`]: what else keeps a plain pointer to the block and may outlive the `Runtime`
//! (an async scope, which spawns its children there). Worker and compensation threads are
//! not counted: the `Runtime` joins them before it lets go. The global runtime is never let
//! go.
//!
//! A task reaches the block through the plain pointer in its header, so spawning, waking,
//! stealing and parking touch no reference count. Only a task's birth and death are counted,
//! and where they happen decides how:
//!
//! - on one of the runtime's own threads (a worker or compensation thread): a plain
//!   increment of a counter in that thread's slot, which only that thread writes
//!   ([`SlotMetrics`](super::metrics)). A birth is the spawn, which the slot's `spawned`
//!   metric counts already (or `tasks_created`, for the one kind of task that is allocated
//!   without a spawn); a death is `tasks_freed`;
//! - anywhere else (a thread outside the runtime, a blocking-pool thread): an atomic
//!   increment or decrement of [`BlockRefs`].
//!
//! [`BlockRefs`] starts at [`BIAS`], which stands for the `Runtime` and for the slot
//! counters not yet added in. A task born on a worker and freed outside takes the atomic
//! count below its start, but never to zero: that would take `BIAS` more deaths than births
//! outside the workers. When the `Runtime` lets go, every worker has been joined, so the
//! slot counters are final; it adds their balance and removes `BIAS` in one atomic addition
//! ([`BlockRefs::fold`]). From then on the count is exactly the number of owners left, and
//! whoever takes it to zero frees the block. Nothing reaches the block after that: no task,
//! waker or handle of it is left (each was an owner), and no thread of it is left (workers
//! were joined, blocking threads were owners).

use super::Shared;
use super::metrics::{SlotMetrics, bump};
use super::worker;
use crate::loom::{AtomicU64, Ordering, fence};

/// A slot counter (`metrics.rs`: std's atomic, which only its own thread writes).
type SlotCounter = std::sync::atomic::AtomicU64;

/// The count's start: the `Runtime`'s reference and the unfolded slot counters. Half of the
/// `u64` range, so that no run of births or deaths outside the workers reaches zero before
/// the fold.
pub(crate) const BIAS: u64 = 1 << 62;

/// A runtime block's owners counted outside its own threads (module docs).
pub(crate) struct BlockRefs(AtomicU64);

impl BlockRefs {
    /// A count holding the `Runtime`'s reference.
    pub(crate) fn new() -> BlockRefs {
        BlockRefs(AtomicU64::new(BIAS))
    }

    /// One more owner. The caller is an owner already, or holds the `Runtime`.
    #[inline]
    pub(crate) fn acquire(&self) {
        // Relaxed, as `Arc::clone`: the new owner is made by an existing one.
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// One owner fewer. Returns whether it was the last: the caller then frees the block.
    #[inline]
    #[must_use]
    pub(crate) fn release(&self) -> bool {
        self.add_and_check(1u64.wrapping_neg())
    }

    /// The `Runtime` lets go: adds `net`, the births minus the deaths that the slot counters
    /// saw (final: every thread that wrote them was joined), and removes [`BIAS`]. Returns
    /// whether no owner is left: the caller then frees the block.
    #[must_use]
    pub(crate) fn fold(&self, net: u64) -> bool {
        self.add_and_check(net.wrapping_sub(BIAS))
    }

    /// Adds `delta` (wrapping). Whoever makes the count zero has seen every owner's last
    /// access: Release on every change, Acquire before the free (as `Arc`'s drop).
    fn add_and_check(&self, delta: u64) -> bool {
        let prev = self.0.fetch_add(delta, Ordering::Release);
        if prev.wrapping_add(delta) != 0 {
            return false;
        }
        fence(Ordering::Acquire);
        true
    }

    /// The count now (tests).
    #[cfg(loom)]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// An owner of a runtime's block that is neither a task nor a timer: something that reaches
/// the runtime through a plain pointer and may outlive the `Runtime` (an async scope's state,
/// `scope/mod.rs`, whose handles spawn children there). Counted in [`BlockRefs`] wherever it
/// is taken or dropped: these are rare, and may be dropped on any thread.
pub(crate) struct BlockHold(&'static Shared);

impl Drop for BlockHold {
    fn drop(&mut self) {
        // The holder's last use of the block: it may be freed here.
        self.0.release();
    }
}

impl Shared {
    /// Takes a [`BlockHold`] on this runtime. The caller is an owner, holds the `Runtime`, or
    /// runs on one of the runtime's threads (which the `Runtime` joins before it lets go).
    pub(crate) fn hold(&'static self) -> BlockHold {
        self.refs.acquire();
        BlockHold(self)
    }

    /// A task was allocated for this runtime and not spawned (`task::new_future_idle`): it
    /// owns the block until it is freed. A spawned task is counted by its spawn
    /// (`push_new`).
    #[inline]
    pub(crate) fn task_created(&'static self) {
        self.owner_made(|m| &m.tasks_created);
    }

    /// A task of this runtime was freed. The block may be freed here: the caller must not
    /// touch it afterwards.
    #[inline]
    pub(crate) fn task_freed(&'static self) {
        self.owner_gone(|m| &m.tasks_freed);
    }

    /// A timer was registered on this runtime's driver (`time/driver.rs`): its handle owns
    /// the block until it is dropped. The caller is an owner, or holds the `Runtime`.
    #[inline]
    pub(crate) fn timer_held(&'static self) {
        self.owner_made(|m| &m.timers_held);
    }

    /// A handle of a timer on this runtime's driver was dropped. The block may be freed
    /// here: the caller must not touch it afterwards.
    #[inline]
    pub(crate) fn timer_released(&'static self) {
        self.owner_gone(|m| &m.timers_released);
    }

    /// One owner more: on one of the runtime's threads, a plain increment of that thread's
    /// `counter`; elsewhere, of [`BlockRefs`].
    #[inline]
    fn owner_made(&'static self, counter: fn(&SlotMetrics) -> &SlotCounter) {
        match worker::current_for(self) {
            Some(ctx) => bump(counter(&ctx.slot().metrics)),
            None => self.refs.acquire(),
        }
    }

    /// One owner fewer, counted as [`Shared::owner_made`]; the last one frees the block.
    #[inline]
    fn owner_gone(&'static self, counter: fn(&SlotMetrics) -> &SlotCounter) {
        match worker::current_for(self) {
            Some(ctx) => bump(counter(&ctx.slot().metrics)),
            None => self.release(),
        }
    }

    /// One owner outside the runtime's threads is made (a blocking-pool thread).
    pub(super) fn acquire(&self) {
        self.refs.acquire();
    }

    /// One owner outside the runtime's threads lets go; the last one frees the block.
    pub(super) fn release(&'static self) {
        if self.refs.release() {
            // SAFETY: the count reached zero after the `Runtime` folded its share in: no
            // owner is left, so nothing else holds or can obtain this pointer (module docs).
            unsafe { Shared::free(self) };
        }
    }

    /// The `Runtime` lets go after a shutdown that joined every thread of the runtime but
    /// the caller's. Called once. If the caller is itself one of the runtime's threads (its
    /// timer thread too), it still uses the block: the block is kept (never freed).
    pub(super) fn release_runtime(&'static self) {
        if worker::current_for(self).is_some()
            || self.timers.as_ref().is_some_and(|t| t.runs_here())
        {
            return;
        }
        // The slot counters are final, and visible here: joined threads by their join, the
        // others (compensation threads that exited after idling) through this.
        self.threads.sync_with_exited();
        let mut net = 0u64;
        for slot in self.threads.slots() {
            // An unblocker of one of the slot's loops may still be at its last accesses.
            slot.resumes.wait_unblockers();
            let m = &slot.metrics;
            net = net
                .wrapping_add(m.spawned.load(Ordering::Relaxed))
                .wrapping_add(m.tasks_created.load(Ordering::Relaxed))
                .wrapping_sub(m.tasks_freed.load(Ordering::Relaxed))
                .wrapping_add(m.timers_held.load(Ordering::Relaxed))
                .wrapping_sub(m.timers_released.load(Ordering::Relaxed));
        }
        if self.refs.fold(net) {
            // SAFETY: as in `release`: the last owner let go.
            unsafe { Shared::free(self) };
        }
    }

    /// Frees the block.
    ///
    /// # Safety
    /// `shared` came from `Box::leak` in `Builder::build`, and no owner is left.
    unsafe fn free(shared: &'static Shared) {
        let p = std::ptr::from_ref(shared).cast_mut();
        // SAFETY: per the caller: the box's allocation, which nobody reaches any more.
        drop(unsafe { Box::from_raw(p) });
    }
}
