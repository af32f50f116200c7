//! A thread's event buffer: a list of fixed-size chunks that only its own thread appends to.
//!
//! Appending writes the event into the current chunk's next slot and publishes it with a
//! plain release store of the chunk's length: no lock and no read-modify-write, and no cache
//! line that another runtime thread writes. The chunk list's lock is taken only to add a
//! chunk (once per [`CHUNK`] events) and by an export, which copies each chunk's published
//! prefix. Published slots are never written again, so an export may run while the owner
//! keeps appending.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::thread::ThreadId;

use super::event::Event;
use crate::loom::{AtomicUsize, Mutex, Ordering, UnsafeCell};

/// Events per chunk (128 KiB of 32-byte events).
#[cfg(not(loom))]
const CHUNK: usize = 4096;
/// Small under loom, so a model crosses a chunk boundary.
#[cfg(loom)]
const CHUNK: usize = 2;

/// A run of events: slots `..len` are written and never written again.
struct Chunk {
    len: AtomicUsize,
    slots: Box<[UnsafeCell<MaybeUninit<Event>>]>,
}

impl Chunk {
    fn new() -> Box<Chunk> {
        Box::new(Chunk {
            len: AtomicUsize::new(0),
            slots: (0..CHUNK)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        })
    }
}

/// One thread's events for one recorder.
pub(crate) struct ThreadBuf {
    /// The one thread that appends.
    owner: ThreadId,
    /// The thread's name when it first recorded, for its track.
    pub(crate) name: String,
    /// Every chunk, oldest first. Boxed, so the owner's pointer to the last stays valid when
    /// the vector grows.
    #[allow(clippy::vec_box)]
    chunks: Mutex<Vec<Box<Chunk>>>,
    /// The chunk the owner appends to (the last in `chunks`). Owner only.
    current: Cell<*const Chunk>,
    /// The task this thread is running (0: none), for the parent of a spawn and the waker of
    /// a wake. Owner only.
    task: Cell<u64>,
}

// SAFETY: the `Cell`s are read and written only by `owner` (every method that touches them
// is called through `ThreadBuf::local`, which hands a buffer only to its owner); other
// threads call only `snapshot`, which reads chunks under the lock and only their published
// prefix.
unsafe impl Sync for ThreadBuf {}
// SAFETY: as above; the raw pointer points into `chunks`, which moves with the buffer.
unsafe impl Send for ThreadBuf {}

impl ThreadBuf {
    /// A buffer for the calling thread.
    pub(crate) fn for_current_thread() -> ThreadBuf {
        let me = std::thread::current();
        let first = Chunk::new();
        let current: *const Chunk = &*first;
        ThreadBuf {
            owner: me.id(),
            name: me
                .name()
                .map_or_else(|| format!("{:?}", me.id()), str::to_owned),
            chunks: Mutex::new(vec![first]),
            current: Cell::new(current),
            task: Cell::new(0),
        }
    }

    /// Whether the calling thread owns this buffer.
    pub(crate) fn is_mine(&self) -> bool {
        self.owner == std::thread::current().id()
    }

    /// Appends `ev`. Owner only.
    #[inline]
    pub(crate) fn push(&self, ev: Event) {
        // SAFETY: `current` points at a boxed chunk held by `chunks` for the buffer's life.
        let mut chunk = unsafe { &*self.current.get() };
        // Only this thread writes `len`.
        let mut n = chunk.len.load(Ordering::Relaxed);
        if n == CHUNK {
            chunk = self.new_chunk();
            n = 0;
        }
        // SAFETY: slot `n` is past the published prefix, so no reader looks at it, and only
        // the owner writes slots.
        chunk.slots[n].with_mut(|p| unsafe { (*p).write(ev) });
        chunk.len.store(n + 1, Ordering::Release);
    }

    #[cold]
    fn new_chunk(&self) -> &Chunk {
        let c = Chunk::new();
        let p: *const Chunk = &*c;
        self.chunks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(c);
        self.current.set(p);
        // SAFETY: just pushed; chunks are never removed.
        unsafe { &*p }
    }

    /// The task this thread runs (0: none). Owner only.
    #[inline]
    pub(crate) fn task(&self) -> u64 {
        self.task.get()
    }

    /// Sets the task this thread runs and returns the previous one. Owner only.
    #[inline]
    pub(crate) fn set_task(&self, task: u64) -> u64 {
        self.task.replace(task)
    }

    /// Copies every event published so far, oldest first. Any thread.
    pub(crate) fn snapshot(&self) -> Vec<Event> {
        let chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for c in chunks.iter() {
            let n = c.len.load(Ordering::Acquire);
            for slot in &c.slots[..n] {
                // SAFETY: slots below the published length were written before the release
                // store our acquire load read, and are never written again.
                out.push(slot.with(|p| unsafe { (*p).assume_init() }));
            }
        }
        out
    }
}
