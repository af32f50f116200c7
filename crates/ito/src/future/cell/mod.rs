//! The completion cell: one result, written once, read by many, with a lock-free waiter list.
//!
//! Every [`Future`](crate::Future) is a counted handle on a cell. A cell lives in its own
//! allocation (promises, combinators) or inside a task's allocation (`task/mod.rs`), which is
//! why it is reached through a [`CellHeader`] with a vtable.
//!
//! # The state word
//!
//! ```text
//!  63 ..................................... 3   2          1           0
//! [ pointer to the newest waiter, or 0    ][COMPLETE][COMPLETING][LOCKED]
//! ```
//!
//! - `COMPLETE`: the value is written and published; the pointer bits are 0 and stay 0 (the
//!   completer took the list). Terminal. A reader that loads `COMPLETE` with `Acquire` may read
//!   the value: **reading a completed future is one load**.
//! - `COMPLETING`: a completer won the race ([`CellHeader::try_claim`]) and is writing the
//!   value. Registrations still push onto the list; the completer takes it when it publishes.
//! - `LOCKED`: a thread is editing the list in place (unlinking a waiter whose wait ended
//!   early, or swapping the waker of an async waiter). Every writer of the word spins while it
//!   is set; readers do not care. It is held for a handful of instructions.
//! - pointer: a Treiber stack of [`CellWaiter`] nodes, newest first, linked through `next`.
//! - `TAKEN` (bit 3, a pointer bit, free once `COMPLETE`: the list is gone then): the cell's
//!   unique reader (a [`Task`](crate::Task)) moved the successful value out, and it has drop
//!   glue (a value without is left behind as a copy whose drop does nothing, so nobody marks
//!   it). Only that reader writes it, with a plain store (nobody else writes the word after
//!   `COMPLETE`), and only `destroy` reads it, after the last reference is gone.
//!
//! # Who touches what
//!
//! - `value`: written once, by the single thread that moved the state into `COMPLETING` (or,
//!   for a task's cell, by the task, which is the only completer: [`CellHeader::publish`]
//!   without a claim); read by anyone after observing `COMPLETE`; dropped by `destroy` when the
//!   last reference goes. A cell with a unique reader ([`Task`](crate::Task)) has no other
//!   reader of a *successful* value: the reader moves it out (`CompletionCell::take`) and sets
//!   `TAKEN`. A failure is never moved, only cloned, so internal observers of a failure (a
//!   scope's completion callback) may look at the value's `Err` side while a unique reader
//!   takes its copy; the bytes are never written after `COMPLETE`.
//! - a waiter's `next`: written by the pusher before its releasing CAS, by the unlinker
//!   under `LOCKED`, and read by the completer after it took the list. A node leaves the list
//!   exactly once: unlinked (its owner will not be notified) or taken by the completer (it will
//!   be notified exactly once).
//! - `refs`: two counts in one word. The high half counts [`Future`](crate::Future) handles
//!   (one [`HANDLE`] each); the low half counts every other reference: `Promise` handles,
//!   registered combinators that hold their target, a transaction's log entries and (for a
//!   task's cell) the task's queue entries and wakers. The cell is destroyed when the whole
//!   word reaches zero; the handle count lets `Future::cancel` tell whether anybody else still
//!   holds the future (cloning a handle is still one `fetch_add`).

use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

use crate::Failure;
use crate::loom::{AtomicUsize, Ordering, UnsafeCell, fence, spin_loop};

mod list;
mod typed;

pub(crate) use list::{contain_destroy, discard_all, release_owners, run_callbacks};

const LOCKED: usize = 0b001;
const COMPLETING: usize = 0b010;
const COMPLETE: usize = 0b100;
const TAKEN: usize = 0b1000;
const PTR_MASK: usize = !0b111;

/// One `Future` handle in a cell's reference word (the low half counts the other references).
pub(crate) const HANDLE: usize = 1 << (usize::BITS / 2);

/// The type-erased front of every cell.
#[repr(C)]
pub(crate) struct CellHeader {
    state: AtomicUsize,
    refs: AtomicUsize,
    pub(crate) vtable: &'static CellVTable,
}

/// What differs between kinds of cells.
pub(crate) struct CellVTable {
    /// Drops the value (if any), discards still-registered waiters and frees the allocation.
    ///
    /// Called exactly once, by whoever dropped the last reference.
    pub(crate) destroy: unsafe fn(NonNull<CellHeader>),
    /// For a task's cell: the task that will complete it, so a waiter can run it inline.
    pub(crate) task: Option<unsafe fn(NonNull<CellHeader>) -> NonNull<crate::task::Header>>,
}

/// A cell holding a `Result<T, Failure>` once complete.
#[repr(C)]
pub(crate) struct CompletionCell<T> {
    pub(crate) header: CellHeader,
    value: UnsafeCell<MaybeUninit<Result<T, Failure>>>,
}

/// What [`CellWaiter::call`] is asked to do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Action {
    /// The cell completed: react, then never touch the node's shared parts again.
    Notify,
    /// The cell is being destroyed without completing: free the node without reacting.
    Discard,
}

/// An intrusive list node. Embedded first in every kind of waiter (`repr(C)`), so a
/// `NonNull<CellWaiter>` can be cast back by the `call` function that knows the kind.
#[repr(C, align(8))]
pub(crate) struct CellWaiter {
    next: UnsafeCell<*const CellWaiter>,
    call: unsafe fn(NonNull<CellWaiter>, NonNull<CellHeader>, Action),
    /// Owned by a waiting thread or `.await` (released first on completion), not a callback.
    owner: bool,
}

// SAFETY: a `CellWaiter` is only reached through the cell's list protocol (module docs), which
// orders every access to `next` with the state word's acquire/release operations.
unsafe impl Send for CellWaiter {}
// SAFETY: as above.
unsafe impl Sync for CellWaiter {}

impl CellWaiter {
    /// The function this node is called with.
    pub(crate) fn call_fn(&self) -> unsafe fn(NonNull<CellWaiter>, NonNull<CellHeader>, Action) {
        self.call
    }

    /// A callback node that will be handed to `call` when the cell completes (or is
    /// destroyed).
    pub(crate) fn new(call: unsafe fn(NonNull<CellWaiter>, NonNull<CellHeader>, Action)) -> Self {
        CellWaiter {
            next: UnsafeCell::new(ptr::null()),
            call,
            owner: false,
        }
    }

    /// A node owned by a waiter (a parked thread, an `.await`): on completion `call` must
    /// release the node and wake its owner without running user callbacks.
    pub(crate) fn new_owner(
        call: unsafe fn(NonNull<CellWaiter>, NonNull<CellHeader>, Action),
    ) -> Self {
        CellWaiter {
            next: UnsafeCell::new(ptr::null()),
            call,
            owner: true,
        }
    }
}

/// A cell as a transaction sees it ([`CellHeader::tx_state`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TxState {
    /// The value is published: readable, and it never changes again.
    Complete,
    /// Nobody is completing it.
    Empty,
    /// Being completed, or its list is being edited: look again later.
    Busy,
}

/// Outcome of [`CellHeader::lock`].
pub(crate) enum Locked<'a> {
    /// The list is locked; dropping the guard unlocks it.
    Held(ListGuard<'a>),
    /// The cell completed: the list was taken by the completer.
    Complete,
}

/// The list lock (`LOCKED` bit). Unlocks on drop.
pub(crate) struct ListGuard<'a> {
    cell: &'a CellHeader,
    /// The state word as it was when locked (with `LOCKED` set).
    state: usize,
}

impl ListGuard<'_> {
    /// Unlinks `node` from the list. Returns whether it was found.
    ///
    /// # Safety
    /// `node` must have been pushed on this cell by the caller and not unlinked since.
    pub(crate) unsafe fn unlink(&mut self, node: NonNull<CellWaiter>) -> bool {
        let target = node.as_ptr() as *const CellWaiter;
        let head = (self.state & PTR_MASK) as *const CellWaiter;
        if head == target {
            // SAFETY: the caller's node is live (it owns it); we hold the lock, so nobody else
            // edits `next` fields.
            let next = unsafe { (*target).next.with(|p| *p) };
            self.state = (next as usize) | (self.state & !PTR_MASK);
            return true;
        }
        let mut prev = head;
        while !prev.is_null() {
            // SAFETY: every node in the list is live until it is unlinked or notified; we hold
            // the lock, so the list cannot change under us.
            let next = unsafe { (*prev).next.with(|p| *p) };
            if next == target {
                // SAFETY: as above; `target` is live because the caller owns it.
                let after = unsafe { (*target).next.with(|p| *p) };
                // SAFETY: as above; `prev` is in the list and we hold the lock.
                unsafe { (*prev).next.with_mut(|p| *p = after) };
                return true;
            }
            prev = next;
        }
        false
    }
}

impl ListGuard<'_> {
    /// Turns the lock into the completer's claim: when the guard is released, the cell is
    /// `COMPLETING` and the caller is its only completer (a committing transaction, which
    /// locked the empty cell with [`CellHeader::try_lock_empty`]).
    pub(crate) fn into_claim(mut self) {
        self.state |= COMPLETING;
    }
}

impl Drop for ListGuard<'_> {
    fn drop(&mut self) {
        // Nobody else writes the word while LOCKED is set, so a plain store unlocks.
        self.cell
            .state
            .store(self.state & !LOCKED, Ordering::Release);
    }
}

impl CellHeader {
    /// A new, empty header with `refs` references.
    pub(crate) fn new(refs: usize, vtable: &'static CellVTable) -> Self {
        CellHeader {
            state: AtomicUsize::new(0),
            refs: AtomicUsize::new(refs),
            vtable,
        }
    }

    /// A header that is complete from the start (its cell's value must be written before the
    /// cell is shared).
    pub(crate) fn new_complete(refs: usize, vtable: &'static CellVTable) -> Self {
        CellHeader {
            state: AtomicUsize::new(COMPLETE),
            refs: AtomicUsize::new(refs),
            vtable,
        }
    }

    /// Whether the value is published. One `Acquire` load.
    #[inline]
    pub(crate) fn is_complete(&self) -> bool {
        self.state.load(Ordering::Acquire) & COMPLETE != 0
    }

    /// Records that the unique reader moved the successful value out, so that `destroy` does
    /// not drop it again.
    ///
    /// # Safety
    /// The cell is complete (observed with `Acquire` by this thread) and the caller is its
    /// unique reader, which has just moved the value out.
    #[inline]
    unsafe fn mark_taken(&self) {
        // Nobody else writes the word once it is COMPLETE, so a plain store is enough; the
        // last reference's release/acquire pair orders it before `destroy`.
        self.state.store(COMPLETE | TAKEN, Ordering::Relaxed);
    }

    /// Adds a reference (not a `Future` handle: see [`CellHeader::inc_handle`]).
    #[inline]
    pub(crate) fn inc_ref(&self) {
        inc_ref(&self.refs);
    }

    /// Adds a `Future` handle.
    #[inline]
    pub(crate) fn inc_handle(&self) {
        let old = self.refs.fetch_add(HANDLE, Ordering::Relaxed);
        if old > isize::MAX as usize {
            std::process::abort();
        }
    }

    /// Gives up one `Future` handle unless it is the only one; `false` (and nothing given
    /// up) if it is.
    pub(crate) fn try_dec_handle_shared(&self) -> bool {
        let mut n = self.refs.load(Ordering::Relaxed);
        loop {
            if n / HANDLE <= 1 {
                return false;
            }
            match self.refs.compare_exchange_weak(
                n,
                n - HANDLE,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => n = actual,
            }
        }
    }

    /// Drops a `Future` handle, destroying the cell on the last reference.
    ///
    /// # Safety
    /// The caller owns one handle on the live cell `this` and gives it up.
    #[inline]
    pub(crate) unsafe fn dec_handle(this: NonNull<CellHeader>) {
        // SAFETY: the caller owns a handle, so the header is live.
        let header = unsafe { this.as_ref() };
        if header.refs.fetch_sub(HANDLE, Ordering::Release) == HANDLE {
            fence(Ordering::Acquire);
            // SAFETY: that was the last reference; `destroy` runs exactly once.
            unsafe { Self::destroy(this) };
        }
    }

    /// Drops a reference, destroying the cell (and its task, if any) on the last one.
    ///
    /// # Safety
    /// The caller owns one reference to the live cell `this` and gives it up.
    #[inline]
    pub(crate) unsafe fn dec_ref(this: NonNull<CellHeader>) {
        // SAFETY: the caller owns a reference, so the header is live.
        if dec_ref(&unsafe { this.as_ref() }.refs) {
            // SAFETY: that was the last reference; `destroy` runs exactly once.
            unsafe { Self::destroy(this) };
        }
    }

    /// Destroys a cell whose last reference is gone (see [`contain_destroy`]).
    ///
    /// # Safety
    /// The last reference to `this` is gone; called once.
    #[cold]
    unsafe fn destroy(this: NonNull<CellHeader>) {
        // SAFETY: forwarded; the header is still valid until `destroy` frees it.
        let destroy = unsafe { this.as_ref() }.vtable.destroy;
        // SAFETY: forwarded.
        unsafe { contain_destroy(destroy, this) };
    }

    /// Pushes `node` on the waiter list. Returns `false` (and does not push) if the cell is
    /// already complete; the caller then acts on the value itself.
    ///
    /// # Safety
    /// `node` must stay valid until it is unlinked or its `call` runs, and must not be in any
    /// list.
    pub(crate) unsafe fn push(&self, node: NonNull<CellWaiter>) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & COMPLETE != 0 {
                return false;
            }
            if s & LOCKED != 0 {
                spin_loop();
                s = self.state.load(Ordering::Acquire);
                continue;
            }
            // SAFETY: the node is not shared yet (caller's contract).
            unsafe {
                node.as_ref()
                    .next
                    .with_mut(|p| *p = (s & PTR_MASK) as *const CellWaiter)
            };
            let new = node.as_ptr() as usize | (s & COMPLETING);
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// Locks the waiter list for an in-place edit, unless the cell completed.
    pub(crate) fn lock(&self) -> Locked<'_> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & COMPLETE != 0 {
                return Locked::Complete;
            }
            if s & LOCKED != 0 {
                spin_loop();
                s = self.state.load(Ordering::Acquire);
                continue;
            }
            match self.state.compare_exchange_weak(
                s,
                s | LOCKED,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Locked::Held(ListGuard {
                        cell: self,
                        state: s | LOCKED,
                    });
                }
                Err(actual) => s = actual,
            }
        }
    }

    /// What a transaction sees of the cell.
    #[inline]
    pub(crate) fn tx_state(&self) -> TxState {
        let s = self.state.load(Ordering::Acquire);
        if s & COMPLETE != 0 {
            TxState::Complete
        } else if s & (COMPLETING | LOCKED) != 0 {
            TxState::Busy
        } else {
            TxState::Empty
        }
    }

    /// A committing transaction locks an empty cell it will complete. `None` if the cell is
    /// complete, being completed, or locked by someone else (the transaction then aborts;
    /// it never waits while holding locks).
    pub(crate) fn try_lock_empty(&self) -> Option<ListGuard<'_>> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & (COMPLETE | COMPLETING | LOCKED) != 0 {
                return None;
            }
            match self.state.compare_exchange_weak(
                s,
                s | LOCKED,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Some(ListGuard {
                        cell: self,
                        state: s | LOCKED,
                    });
                }
                // A waiter pushed itself meanwhile (or a spurious failure): look again.
                Err(actual) => s = actual,
            }
        }
    }

    /// Wins the right to write the value. `false` if another completer already has it.
    #[inline]
    pub(crate) fn try_claim(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & (COMPLETE | COMPLETING) != 0 {
                return false;
            }
            if s & LOCKED != 0 {
                spin_loop();
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            match self.state.compare_exchange_weak(
                s,
                s | COMPLETING,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// Publishes the written value and takes the waiter list. Returns the list (newest first).
    ///
    /// # Safety
    /// The caller is the cell's only completer (it won [`try_claim`](Self::try_claim), or the
    /// cell belongs to a task and the caller is that task) and has written the value.
    #[inline]
    pub(crate) unsafe fn publish(&self) -> *const CellWaiter {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            debug_assert!(s & COMPLETE == 0, "a cell completed twice");
            if s & LOCKED != 0 {
                spin_loop();
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            match self
                .state
                .compare_exchange_weak(s, COMPLETE, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return (s & PTR_MASK) as *const CellWaiter,
                Err(actual) => s = actual,
            }
        }
    }
}

/// Byte offset of the reference word in a [`CellHeader`] (a task reaches its count through
/// it: `task::Header::refs`).
pub(crate) const REFS_OFFSET: usize = std::mem::offset_of!(CellHeader, refs);

/// Adds a reference (not a `Future` handle) to the reference word `refs`: a cell header's, or
/// the bare count of a task nobody awaits (`task::Refs`).
#[inline]
pub(crate) fn inc_ref(refs: &AtomicUsize) {
    let old = refs.fetch_add(1, Ordering::Relaxed);
    if old & (HANDLE - 1) == HANDLE - 1 {
        std::process::abort();
    }
}

/// Gives up one reference (not a `Future` handle) of the reference word `refs`. Returns
/// whether it was the last one (everything else's uses then happen before the caller's,
/// as for `Arc`): the caller must destroy what the word counts, once.
#[inline]
#[must_use]
pub(crate) fn dec_ref(refs: &AtomicUsize) -> bool {
    if refs.fetch_sub(1, Ordering::Release) == 1 {
        fence(Ordering::Acquire);
        true
    } else {
        false
    }
}
