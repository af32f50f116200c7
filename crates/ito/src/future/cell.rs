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
//!
//! # Who touches what
//!
//! - `value`: written once, by the single thread that moved the state into `COMPLETING` (or,
//!   for a task's cell, by the task, which is the only completer: [`CellHeader::publish`]
//!   without a claim); read by anyone after observing `COMPLETE`; dropped by `destroy` when the
//!   last reference goes.
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

use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};

use crate::Failure;
use crate::loom::{AtomicUsize, Ordering, UnsafeCell, fence, spin_loop};

const LOCKED: usize = 0b001;
const COMPLETING: usize = 0b010;
const COMPLETE: usize = 0b100;
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
        if self.header.state.load(Ordering::Acquire) & COMPLETE != 0 {
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

unsafe fn call_callback<T, F>(node: NonNull<CellWaiter>, cell: NonNull<CellHeader>, action: Action)
where
    F: FnOnce(&Result<T, Failure>),
{
    // SAFETY: `node` was made by `on_complete_raw` from a `Box<Callback<T, F>>` and is called
    // once, so we own it.
    let mut b = unsafe { Box::from_raw(node.cast::<Callback<T, F>>().as_ptr()) };
    // SAFETY: taken once, here; the box is freed below without dropping `f` again.
    let f = unsafe { ManuallyDrop::take(&mut b.f) };
    drop(b);
    if action == Action::Notify {
        // SAFETY: the cell is a `CompletionCell<T>` (the callback was registered through one) and is
        // complete.
        let v = unsafe { cell.cast::<CompletionCell<T>>().as_ref().value_unchecked() };
        f(v);
    }
}

impl<T> CompletionCell<T> {
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
        let node = Box::new(Callback::<T, F> {
            waiter: CellWaiter::new(call_callback::<T, F>),
            f: ManuallyDrop::new(f),
            _t: PhantomData,
        });
        let node = NonNull::from(Box::leak(node)).cast::<CellWaiter>();
        // SAFETY: a fresh heap node, valid until called or discarded.
        if !unsafe { self.header.push(node) } {
            // Completed meanwhile: run it ourselves.
            // SAFETY: the node is ours again (push refused it); the cell is complete.
            unsafe { call_callback::<T, F>(node, NonNull::from(&self.header), Action::Notify) };
        }
    }
}
