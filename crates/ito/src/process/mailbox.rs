//! The mailbox core: an intrusive multi-producer, single-consumer queue, one waker, and the
//! process's closed / exited / killed state, all in one state word.
//!
//! ```text
//! state (one AtomicUsize)
//! ┌──────────────────────────────────────────────┬────────┬─────┬────────┬─────────┬──────┐
//! │ newest pushed Node, or 0, CLOSED or EXITED     │   …    │ REG │ KILLED │ WAKING  │ RECV │
//! └──────────────────────────────────────────────┴────────┴─────┴────────┴─────────┴──────┘
//!   bits 4..                                                  bit 3  bit 2    bit 1    bit 0
//! ```
//!
//! - **The queue** is a Treiber stack of heap nodes (`Node { next, value }`, 16-aligned so the
//!   low four bits of a node address are free). A sender pushes with one CAS; the receiver
//!   takes the whole stack with one CAS and reverses it into its private FIFO list (kept in
//!   the [`Mailbox`](super::Mailbox), not here). Messages from one sender keep their order
//!   (each batch is reversed; batches are taken in order); nothing is lost or duplicated (a
//!   node is either in the stack, or in the receiver's list, exactly once). Unlike Vyukov's
//!   MPSC queue there is no window where a push is half-linked, and the queue, the parking
//!   flag and the closed state share one word, so "is it empty, and if so wait" is one CAS.
//! - `CLOSED` and `EXITED` are sentinel "pointers" (16 and 32: never a heap address). `CLOSED`:
//!   the receiver dropped its `Mailbox`; `EXITED`: the process ended. Pushes to either fail and
//!   hand the message back.
//! - `RECV`: the receiver found the queue empty and waits. The next push wakes it.
//! - `KILLED`: the process must end at its next poll (set by a kill or a fatal exit signal;
//!   the reason waits in the process's extras).
//! - `REG`: the waker slot holds the process task's waker (written once, the first time the
//!   process waits).
//! - `WAKING`: a *claimant* has the waker slot: a push that found `RECV`, or a kill, about to
//!   wake the process through it. At most one holder; the holder, before letting go, wakes
//!   again if something came meanwhile (a push that found `RECV` while `WAKING` was held leaves
//!   `RECV` set; a kill that found `WAKING` held just sets `KILLED`), so no wake-up is lost.
//!
//! Who touches what:
//!
//! | field | written by | read by |
//! |---|---|---|
//! | stack (ptr bits) | senders (push), the receiver (take, close), the process (exit) | the same |
//! | `RECV` | the receiver (arm; take and disarm clear it), a claiming push (clears it) | senders |
//! | `WAKING` | the holder (see above) | claimants |
//! | `KILLED` | killers | the process, at every poll |
//! | `REG` | the process, the first time it waits | claimants |
//! | `slot` | the process at registration, before it sets `REG`; at exit, the holder of `WAKING` (or the process, if nobody holds it) takes the waker and drops it | claimants holding `WAKING`, in a state with `REG` |
//!
//! The waker in the slot is the *process task's* waker, so a kill can wake a process that is
//! blocked on something other than its mailbox. A receive polled with another waker (inside a
//! combinator that gives each child its own waker, or from another task) also gets that waker
//! woken: the claimant calls the `extra` hook, which wakes the waker the receiver stored in the
//! process's extras (`exit.rs`).
//!
//! The loom models are in `src/tests/loom_process.rs`.

use std::marker::PhantomData;
use std::ptr;
use std::task::Waker;

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

const RECV: usize = 0b0001;
const WAKING: usize = 0b0010;
const KILLED: usize = 0b0100;
const REG: usize = 0b1000;
const FLAGS: usize = 0b1111;
/// Sentinel stack value: the receiver dropped its mailbox.
const CLOSED: usize = 0b01_0000;
/// Sentinel stack value: the process has ended.
const EXITED: usize = 0b10_0000;

/// A queued message. `next` is written by the sender before the node is published (the
/// release CAS) and afterwards only by the receiver.
#[repr(C, align(16))]
pub(crate) struct Node<M> {
    pub(crate) next: *mut Node<M>,
    pub(crate) value: M,
}

/// An owned node: allocated by [`NodeBox::new`] from the small-block allocator (per-thread
/// caches of free blocks, with magazines moving between threads: a receiver frees what its
/// senders allocated, and the system allocator's cross-thread frees were most of the cost of
/// a message), freed by `Drop`.
pub(crate) struct NodeBox<M>(ptr::NonNull<Node<M>>);

impl<M> NodeBox<M> {
    /// A fresh node holding `value`.
    #[inline]
    pub(crate) fn new(value: M) -> NodeBox<M> {
        let p = crate::magazine::alloc_value(Node {
            next: ptr::null_mut(),
            value,
        });
        // SAFETY: `alloc_value` never returns null.
        NodeBox(unsafe { ptr::NonNull::new_unchecked(p) })
    }

    /// Gives up ownership (the node goes into a list).
    #[inline]
    pub(crate) fn into_raw(self) -> *mut Node<M> {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes ownership of a node from a list.
    ///
    /// # Safety
    /// `p` came from [`into_raw`](Self::into_raw) and nobody else owns it.
    #[inline]
    pub(crate) unsafe fn from_raw(p: *mut Node<M>) -> NodeBox<M> {
        // SAFETY: non-null, per the contract.
        NodeBox(unsafe { ptr::NonNull::new_unchecked(p) })
    }

    /// The node's link.
    #[inline]
    pub(crate) fn next(&self) -> *mut Node<M> {
        // SAFETY: we own the node.
        unsafe { self.0.as_ref() }.next
    }

    /// Frees the node and returns its message.
    #[inline]
    pub(crate) fn into_value(self) -> M {
        let p = self.into_raw();
        // SAFETY: we owned the node; the value is moved out exactly once, then the block is
        // freed without dropping it again (`Node` has no drop glue besides its value's).
        unsafe {
            let value = ptr::read(&(*p).value);
            crate::magazine::free_value(p.cast::<std::mem::ManuallyDrop<Node<M>>>());
            value
        }
    }
}

impl<M> Drop for NodeBox<M> {
    fn drop(&mut self) {
        // SAFETY: we own the node; freed once.
        unsafe { crate::magazine::free_value(self.0.as_ptr()) };
    }
}

#[inline]
fn stack(s: usize) -> usize {
    s & !FLAGS
}

#[inline]
fn is_open(p: usize) -> bool {
    p != CLOSED && p != EXITED
}

/// What a receive found: a batch of messages (newest first), nothing, or a mailbox that can no
/// longer receive (closed or exited).
#[must_use]
pub(crate) enum Take<M> {
    /// The stack of new messages, newest first (never null).
    Batch(*mut Node<M>),
    /// The queue was empty; with [`MailboxCore::take_or_arm`], `RECV` is now set.
    Empty,
    /// Closed or exited: nothing will ever arrive.
    Gone,
}

/// The shared half of a mailbox: the state word and the waker slot.
pub(crate) struct MailboxCore<M> {
    state: AtomicUsize,
    slot: UnsafeCell<Option<Waker>>,
    _messages: PhantomData<NodeBox<M>>,
}

// SAFETY: messages move from senders to the receiver (`M: Send`); the slot is only touched
// under the `WAKING` protocol described in the module docs; the waker is `Send + Sync`.
unsafe impl<M: Send> Send for MailboxCore<M> {}
// SAFETY: as above: every shared access goes through the state word.
unsafe impl<M: Send> Sync for MailboxCore<M> {}

impl<M> MailboxCore<M> {
    pub(crate) fn new() -> Self {
        MailboxCore {
            state: AtomicUsize::new(0),
            slot: UnsafeCell::new(None),
            _messages: PhantomData,
        }
    }

    // ----- senders and killers -----

    /// Pushes a message. If the receiver waits (`RECV`), wakes it: the process's waker, then
    /// `extra`. A closed or exited mailbox hands the node back.
    #[inline]
    pub(crate) fn push(&self, node: NodeBox<M>, extra: impl Fn()) -> Result<(), NodeBox<M>> {
        let raw = node.into_raw();
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let top = stack(s);
            if !is_open(top) {
                // SAFETY: never published: we still own the node we let go of above.
                return Err(unsafe { NodeBox::from_raw(raw) });
            }
            // SAFETY: unpublished, so ours to write.
            unsafe { (*raw).next = top as *mut Node<M> };
            let claim = s & (RECV | WAKING) == RECV;
            let new = if claim {
                raw as usize | (s & FLAGS & !RECV) | WAKING
            } else {
                raw as usize | (s & FLAGS)
            };
            // Release publishes the node; a claim also acquires the slot's registration.
            let order = if claim {
                Ordering::AcqRel
            } else {
                Ordering::Release
            };
            match self
                .state
                .compare_exchange_weak(s, new, order, Ordering::Relaxed)
            {
                Ok(_) => {
                    if claim {
                        self.wake_and_release(new, extra);
                    }
                    return Ok(());
                }
                Err(actual) => s = actual,
            }
        }
    }

    /// Marks the process killed and wakes it. `false` if it has already exited.
    pub(crate) fn kill(&self, extra: impl Fn()) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if stack(s) == EXITED {
                return false;
            }
            if s & KILLED != 0 {
                // An earlier kill woke it, or the holder of WAKING will (it re-checks KILLED).
                return true;
            }
            let claim = s & WAKING == 0;
            let new = s | KILLED | if claim { WAKING } else { 0 };
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if claim {
                        self.wake_and_release(new, extra);
                    }
                    return true;
                }
                Err(actual) => s = actual,
            }
        }
    }

    /// Holding `WAKING` (acquired in state `held`): wake, then let go (waking again if needed).
    fn wake_and_release(&self, held: usize, extra: impl Fn()) {
        self.wake_slot(held);
        extra();
        self.release(held, extra);
    }

    /// Wakes the process through the slot, if registered. The caller holds `WAKING`.
    #[inline]
    fn wake_slot(&self, held: usize) {
        if held & REG != 0 {
            self.slot.with(|w| {
                // SAFETY: we hold WAKING: nobody writes the slot; REG says it is initialised.
                if let Some(w) = unsafe { &*w } {
                    w.wake_by_ref();
                }
            });
        }
    }

    /// Lets go of `WAKING`, acquired in state `held`. Before it does, it looks at what changed
    /// while it held the slot: a push that found `RECV` (it left `RECV` set with messages
    /// queued) or a new kill means another wake-up is due, and only the holder can give it. If
    /// the process exited meanwhile, the holder drops the slot's waker (the process left it).
    fn release(&self, held: usize, extra: impl Fn()) {
        let mut killed_seen = held & KILLED != 0;
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if stack(s) == EXITED {
                // The process exited while we held the slot: it is ours to clear. Nobody else
                // can take WAKING any more (every taker checks EXITED first).
                // SAFETY: we hold WAKING and the process is gone: exclusive access.
                let w = self.slot.with_mut(|p| unsafe { (*p).take() });
                self.state.fetch_and(!WAKING, Ordering::Release);
                drop(w);
                return;
            }
            let top = stack(s);
            let rewake =
                (s & RECV != 0 && top != 0 && is_open(top)) || (s & KILLED != 0 && !killed_seen);
            if rewake {
                match self.state.compare_exchange_weak(
                    s,
                    s & !RECV,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        killed_seen |= s & KILLED != 0;
                        self.wake_slot(s);
                        extra();
                        s = self.state.load(Ordering::Acquire);
                    }
                    Err(actual) => s = actual,
                }
                continue;
            }
            match self.state.compare_exchange_weak(
                s,
                s & !WAKING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => s = actual,
            }
        }
    }

    // ----- the process and its receiver -----

    /// Whether the process has been killed (it must end at this poll).
    #[inline]
    pub(crate) fn is_killed(&self) -> bool {
        self.state.load(Ordering::Acquire) & KILLED != 0
    }

    /// Whether the process has not exited yet.
    #[inline]
    pub(crate) fn is_alive(&self) -> bool {
        stack(self.state.load(Ordering::Acquire)) != EXITED
    }

    /// Whether the slot holds the process's waker.
    #[inline]
    pub(crate) fn is_registered(&self) -> bool {
        self.state.load(Ordering::Acquire) & REG != 0
    }

    /// The process's first wait: stores its task's waker and sets `REG`. Returns whether a
    /// wake-up may have been claimed before (it woke nothing, the slot was empty): messages
    /// are queued or the process was killed. The caller then polls again.
    ///
    /// No `WAKING` needed: claimants read the slot only in a state with `REG` (the state they
    /// took `WAKING` in, or one they loaded afterwards), and `REG` is set after the write, with
    /// release ordering; a claimant that holds `WAKING` without `REG` leaves the slot alone.
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        if self.is_registered() {
            return false; // once is enough: the slot is never written twice
        }
        let w = waker.clone();
        // SAFETY: REG is not set, so no claimant reads the slot (see above); only the
        // process writes it, once.
        self.slot.with_mut(|p| unsafe { *p = Some(w) });
        let prev = self.state.fetch_or(REG, Ordering::AcqRel);
        prev & KILLED != 0 || (stack(prev) != 0 && is_open(stack(prev)))
    }

    /// Takes every queued message (newest first), or reports an empty or dead mailbox. Clears
    /// `RECV`. Receiver only.
    #[inline]
    pub(crate) fn take(&self) -> Take<M> {
        self.take_inner(false)
    }

    /// [`take`](Self::take), and if the queue is empty, sets `RECV` in the same step so that
    /// the next push wakes the process. Receiver only. Before it arms, the caller must have
    /// stored any extra waker that the `extra` hook of pushes should wake.
    #[inline]
    pub(crate) fn take_or_arm(&self) -> Take<M> {
        self.take_inner(true)
    }

    #[inline]
    fn take_inner(&self, arm: bool) -> Take<M> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let top = stack(s);
            if !is_open(top) {
                return Take::Gone;
            }
            let new = if top != 0 {
                s & FLAGS & !RECV
            } else if arm && s & RECV == 0 {
                s | RECV
            } else {
                return Take::Empty;
            };
            // Acquire: the nodes taken. Release (arming): a claimant that sees RECV also sees
            // what the receiver stored before.
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if top != 0 => return Take::Batch(top as *mut Node<M>),
                Ok(_) => return Take::Empty,
                Err(actual) => s = actual,
            }
        }
    }

    /// A receive that armed `RECV` was dropped before a message came: pushes need not wake.
    pub(crate) fn disarm(&self) {
        self.state.fetch_and(!RECV, Ordering::Relaxed);
    }

    /// The receiver drops its mailbox: no more messages are accepted. Returns what was queued
    /// (newest first, maybe null) for the caller to drop.
    pub(crate) fn close(&self) -> *mut Node<M> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let top = stack(s);
            if !is_open(top) {
                return ptr::null_mut();
            }
            match self.state.compare_exchange_weak(
                s,
                CLOSED | (s & FLAGS & !RECV),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return top as *mut Node<M>,
                Err(actual) => s = actual,
            }
        }
    }

    /// The process ends: the mailbox is closed for good, `KILLED` and `RECV` are cleared, and
    /// the waker is dropped (by us, or by the claimant holding the slot right now). Returns
    /// what was queued (newest first, maybe null) for the caller to drop. Called once, by the
    /// process.
    pub(crate) fn exit(&self) -> *mut Node<M> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            // WAKING stays as it is: a holder sees EXITED when it lets go, and then drops the
            // waker itself.
            let new = EXITED | (s & (WAKING | REG));
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => s = actual,
            }
        }
        if s & WAKING == 0 {
            // SAFETY: nobody holds WAKING and nobody can take it any more (EXITED): the slot
            // is ours.
            let w = self.slot.with_mut(|p| unsafe { (*p).take() });
            drop(w);
        }
        let top = stack(s);
        if is_open(top) {
            top as *mut Node<M>
        } else {
            ptr::null_mut()
        }
    }
}

impl<M> Drop for MailboxCore<M> {
    fn drop(&mut self) {
        // The process exits before its block can be freed, so the stack is normally empty;
        // free whatever is left anyway.
        let s = self.state.load(Ordering::Acquire);
        let top = stack(s);
        if is_open(top) {
            // SAFETY: exclusive access (`&mut self`); the stack's nodes are owned by the queue.
            unsafe { free_list(top as *mut Node<M>) };
        }
    }
}

/// Drops every node of a list linked through `next`, containing panics of the messages'
/// destructors (the rest of the list is still freed).
///
/// # Safety
/// The caller owns every node of the list.
#[inline]
pub(crate) unsafe fn free_list<M>(p: *mut Node<M>) {
    // Usually empty (a process that ends with nothing queued): no call, no unwinding frame.
    if !p.is_null() {
        // SAFETY: forwarded.
        unsafe { free_nodes(p) };
    }
}

/// [`free_list`] of a non-empty list.
///
/// # Safety
/// As [`free_list`].
#[cold]
unsafe fn free_nodes<M>(mut p: *mut Node<M>) {
    while !p.is_null() {
        // SAFETY: owned by the caller, per the contract; each node is visited once.
        let node = unsafe { NodeBox::from_raw(p) };
        p = node.next();
        if let Err(payload) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(node)))
        {
            crate::failure::drop_payload(payload);
        }
    }
}

/// Reverses a list linked through `next` (a taken stack, newest first) into arrival order.
/// Returns the new head and tail.
///
/// # Safety
/// The caller owns every node of the non-empty list starting at `p`.
#[inline]
pub(crate) unsafe fn reverse<M>(mut p: *mut Node<M>) -> (*mut Node<M>, *mut Node<M>) {
    let tail = p;
    let mut head = ptr::null_mut();
    while !p.is_null() {
        // SAFETY: owned by the caller; each node is visited once.
        let next = unsafe { (*p).next };
        // SAFETY: as above.
        unsafe { (*p).next = head };
        head = p;
        p = next;
    }
    (head, tail)
}
