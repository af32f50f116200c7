//! The process block: what a process shares with everyone who holds its [`Pid`](super::Pid).
//!
//! ```text
//! BlockRef<M> ──▶ Block<M> (one 40-byte block of the task slab)
//! ┌─────────────────────────────────────────┐
//! │ refs                           8 bytes   │  the reference count
//! │ mailbox: state word            8 bytes   │  the MPSC stack + flags (mailbox.rs)
//! │ mailbox: waker slot           16 bytes   │  the process task's waker
//! │ extras: *Extras               8 bytes   │  null until it links/monitors/traps/is named,
//! └─────────────────────────────────────────┘  or until someone asks for its id
//! ```
//!
//! The [`ProcessId`] lives in the extras: it is given out when they are made (the first
//! link, monitor, name, trap or `id()` call, or an exit that handles outlive), from a
//! counter that never repeats, and stays the process's for good. A process nobody asks
//! about (most of a chain's) never takes one; the id is not derived from the block's
//! address, which the slab reuses.
//!
//! References ([`BlockRef`], and `AnyPid` through [`Ctl`]): one per `Pid`/`AnyPid`, one for
//! the [`Mailbox`](super::Mailbox), one for the running process (its task's body). The block
//! outlives the process as long as handles to it exist, so a late send finds a closed
//! mailbox (and gets its message back) instead of freed memory. The block comes from the
//! task slab (`task/slab.rs`), like the task: a process costs no call to the system
//! allocator (an `Arc` cost a `malloc` and a `free`, a sixth of the chain's time).

use std::any::Any;
use std::cell::Cell;
use std::ops::Deref;
use std::ptr::{self, NonNull};

use super::exit::{Extras, MonitorRef, Notify};
use super::mailbox::{MailboxCore, NodeBox};
use super::pid::{AnyPid, ProcessId};
use super::reason::Exit;
use super::registry::Name;
use crate::loom::{AtomicPtr, AtomicUsize, Ordering, fence};
use crate::task::slab;

/// The shared state of one process.
pub(crate) struct Block<M> {
    /// References: handles, the mailbox, the running process.
    refs: AtomicUsize,
    pub(crate) mailbox: MailboxCore<M>,
    extras: AtomicPtr<Extras<M>>,
}

/// What a process looks like without its message type: what links, monitors, the registry
/// and supervisors use.
pub(crate) trait Ctl: Send + Sync {
    fn id(&self) -> ProcessId;
    fn is_alive(&self) -> bool;
    fn signal(&self, from: ProcessId, reason: &Exit, untrappable: bool);
    /// `signal(_, Killed, true)` without the sender's id (which nothing reads there).
    fn kill(&self);
    fn add_link(&self, other: &AnyPid) -> Result<(), Exit>;
    fn remove_link(&self, other: ProcessId);
    fn add_monitor(&self, mref: MonitorRef, notify: Notify) -> Result<(), (Notify, Exit)>;
    fn remove_monitor(&self, mref: MonitorRef) -> bool;
    fn add_name(&self, name: &Name) -> bool;
    /// The block itself, to downcast to its message type.
    fn as_any(&self) -> &dyn Any;
    /// Takes one more reference (an `AnyPid` clone).
    fn retain(&self);
    /// How to give a reference up, given the block's address (with the provenance of its
    /// allocation: `AnyPid` keeps the pointer its `BlockRef` had).
    fn release_fn(&self) -> unsafe fn(NonNull<()>);
}

/// Process ids (taken when a process's extras are made) are handed out in blocks of this
/// many per thread, so threads naming, linking or monitoring many processes do not bounce
/// one counter's cache line between them.
const ID_BATCH: u64 = 1024;

thread_local! {
    /// The next id this thread hands out, and the end of its batch.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

pub(super) fn next_id() -> ProcessId {
    static NEXT_BATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let take_batch = || NEXT_BATCH.fetch_add(ID_BATCH, std::sync::atomic::Ordering::Relaxed);
    let id = IDS
        .try_with(|c| {
            let (mut next, mut end) = c.get();
            if next == end {
                next = take_batch();
                end = next + ID_BATCH;
            }
            c.set((next + 1, end));
            next
        })
        .unwrap_or_else(|_| take_batch());
    ProcessId::new(id)
}

/// A counted reference to a process block (an `Arc` without the weak count, on the task
/// slab).
pub(crate) struct BlockRef<M>(NonNull<Block<M>>);

// SAFETY: the block is shared by design; messages move between threads (`M: Send`), and
// everything else in it is atomic or behind its own protocol.
unsafe impl<M: Send> Send for BlockRef<M> {}
// SAFETY: as above.
unsafe impl<M: Send> Sync for BlockRef<M> {}

impl<M> BlockRef<M> {
    /// A fresh block for a new process, with one reference (this one).
    pub(crate) fn new() -> Self {
        let p = slab::alloc::<Block<M>>();
        // SAFETY: fresh memory for a `Block<M>`, freed by `release` with the last reference.
        unsafe {
            p.as_ptr().write(Block {
                refs: AtomicUsize::new(1),
                mailbox: MailboxCore::new(),
                extras: AtomicPtr::new(ptr::null_mut()),
            })
        };
        BlockRef(p)
    }

    /// The block's address, with the provenance of its allocation.
    pub(crate) fn as_non_null(&self) -> NonNull<Block<M>> {
        self.0
    }

    /// Takes one more reference on the block at `p`.
    ///
    /// # Safety
    /// `p` points at a live block (someone holds a reference for the duration of the call).
    pub(crate) unsafe fn retain_raw(p: NonNull<Block<M>>) -> Self {
        // SAFETY: live, per the caller.
        unsafe { p.as_ref() }.retain();
        BlockRef(p)
    }
}

impl<M> Clone for BlockRef<M> {
    #[inline]
    fn clone(&self) -> Self {
        self.retain();
        BlockRef(self.0)
    }
}

impl<M> Drop for BlockRef<M> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own one reference and give it up.
        unsafe { Block::release(self.0) };
    }
}

impl<M> Deref for BlockRef<M> {
    type Target = Block<M>;
    #[inline]
    fn deref(&self) -> &Block<M> {
        // SAFETY: we hold a reference, so the block is live.
        unsafe { self.0.as_ref() }
    }
}

impl<M> Block<M> {
    /// One more reference.
    #[inline]
    pub(crate) fn retain(&self) {
        // Relaxed, as `Arc::clone`: a new reference is made from an existing one, which
        // keeps the block alive meanwhile.
        if self.refs.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            // As `Arc`: billions of leaked handles; the count must not wrap.
            std::process::abort();
        }
    }

    /// Gives up one reference; the last one drops the block and frees its memory.
    ///
    /// # Safety
    /// `p` points at a live block (with its allocation's provenance) and the caller owns one
    /// reference, which it does not use again.
    #[inline]
    pub(crate) unsafe fn release(p: NonNull<Self>) {
        // SAFETY: live, per the caller.
        if unsafe { p.as_ref() }.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // As `Arc`: every other reference's uses happen before the drop.
        fence(Ordering::Acquire);
        // SAFETY: the last reference: nobody else can reach the block; it was allocated by
        // `BlockRef::new` from the slab and is dropped and freed once, here.
        unsafe {
            ptr::drop_in_place(p.as_ptr());
            slab::dealloc(p);
        }
    }

    /// References held now (handles, the mailbox, the running process).
    #[inline]
    pub(crate) fn ref_count(&self) -> usize {
        self.refs.load(Ordering::Acquire)
    }

    /// The process's id (kept in the extras, which this makes if there are none yet).
    #[inline]
    pub(crate) fn id(&self) -> ProcessId {
        self.extras().id()
    }

    /// The extras, if any were made.
    #[inline]
    pub(crate) fn extras_if_any(&self) -> Option<&Extras<M>> {
        let p = self.extras.load(Ordering::Acquire);
        // SAFETY: once installed, the extras live as long as the block (freed in its `Drop`).
        unsafe { p.as_ref() }
    }

    /// Installs `fresh` unless extras exist: `Ok` with the installed ones, or `Err` with those
    /// that were there (and `fresh` is dropped).
    pub(crate) fn install_extras(&self, fresh: Extras<M>) -> Result<&Extras<M>, &Extras<M>> {
        let new = Box::into_raw(Box::new(fresh));
        match self.extras.compare_exchange(
            ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: installed: lives as long as the block.
            Ok(_) => Ok(unsafe { &*new }),
            Err(existing) => {
                // SAFETY: never published; ours to free.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: installed by someone else: lives as long as the block.
                Err(unsafe { &*existing })
            }
        }
    }

    /// The extras, made now if needed.
    pub(crate) fn extras(&self) -> &Extras<M> {
        match self.extras_if_any() {
            Some(x) => x,
            None => match self.install_extras(Extras::new(None)) {
                Ok(x) | Err(x) => x,
            },
        }
    }

    /// The `extra` hook of the mailbox's wake-ups: a receive polled with a foreign waker left
    /// it in the extras.
    #[inline]
    pub(crate) fn wake_foreign(&self) {
        if let Some(x) = self.extras_if_any() {
            x.wake_recv_waker();
        }
    }
}

impl<M: Send> Block<M> {
    /// Queues a message (what [`Pid::send`](super::Pid::send) does).
    #[inline]
    pub(crate) fn send_internal(&self, msg: M) -> Result<(), M> {
        self.mailbox
            .push(NodeBox::new(msg), || self.wake_foreign())
            .map_err(NodeBox::into_value)
    }
}

impl<M> Drop for Block<M> {
    fn drop(&mut self) {
        let p = self.extras.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: the last reference: nobody else can reach the extras.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}
