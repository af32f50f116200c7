//! The process block: what a process shares with everyone who holds its [`Pid`](super::Pid).
//!
//! ```text
//! Arc<Block<M>> (one allocation, 56 bytes: 64 with the allocator's header)
//! ┌─────────────────────────────────────────┐
//! │ strong, weak counts           16 bytes   │  Arc's
//! │ mailbox: state word            8 bytes   │  the MPSC stack + flags (mailbox.rs)
//! │ mailbox: waker slot           16 bytes   │  the process task's waker
//! │ extras: *Extras               8 bytes   │  null until it links/monitors/traps/is named
//! │ id                             8 bytes   │  ProcessId
//! └─────────────────────────────────────────┘
//! ```
//!
//! References: one per `Pid`/`AnyPid`, one for the [`Mailbox`](super::Mailbox), one for the
//! running process (its task's body). The block outlives the process as long as handles to
//! it exist, so a late send finds a closed mailbox (and gets its message back) instead of
//! freed memory.

use std::any::Any;
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

use super::exit::{Exit, Extras, MonitorRef, Notify};
use super::mailbox::{MailboxCore, NodeBox};
use super::pid::{AnyPid, ProcessId};
use crate::loom::{AtomicPtr, Ordering};

/// The shared state of one process.
pub(crate) struct Block<M> {
    pub(crate) mailbox: MailboxCore<M>,
    extras: AtomicPtr<Extras<M>>,
    id: ProcessId,
}

/// What a process looks like without its message type: what links, monitors, the registry
/// and supervisors use.
pub(crate) trait Ctl: Send + Sync {
    fn id(&self) -> ProcessId;
    fn is_alive(&self) -> bool;
    fn signal(&self, from: ProcessId, reason: &Exit, untrappable: bool);
    fn add_link(&self, other: &AnyPid) -> Result<(), Exit>;
    fn remove_link(&self, other: ProcessId);
    fn add_monitor(&self, mref: MonitorRef, notify: Notify) -> Result<(), (Notify, Exit)>;
    fn remove_monitor(&self, mref: MonitorRef) -> bool;
    fn add_name(&self, name: &Arc<str>) -> bool;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// Process ids are handed out in blocks of this many per thread, so spawning does not bounce
/// one counter's cache line between workers.
const ID_BATCH: u64 = 1024;

thread_local! {
    /// The next id this thread hands out, and the end of its batch.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn next_id() -> ProcessId {
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

impl<M> Block<M> {
    pub(crate) fn new() -> Self {
        Block {
            mailbox: MailboxCore::new(),
            extras: AtomicPtr::new(ptr::null_mut()),
            id: next_id(),
        }
    }

    #[inline]
    pub(crate) fn id(&self) -> ProcessId {
        self.id
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
