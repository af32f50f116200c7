//! A thread's record buffer: a list of chunks of words that only its own thread appends to.
//!
//! Appending writes a record's words (one to four) into the current chunk's next slots and
//! publishes them with one plain release store of the chunk's length: no lock and no
//! read-modify-write, and no cache line that another runtime thread writes. A record never
//! spans two chunks (a chunk's last slots stay unpublished when the next record does not fit
//! them), so a reader sees whole records. The chunk list's lock is taken only to add a chunk
//! and by an export, which copies each chunk's published prefix. Published slots are never
//! written again, so an export may run while the owner keeps appending.
//!
//! Chunks double from [`FIRST_CHUNK`] words up to [`MAX_CHUNK`] (2 MiB), so a thread that
//! records little takes little memory and a busy one adds a chunk rarely. Each chunk's pages
//! are mapped when it is made, by one `madvise` call instead of a page fault per page.

use std::alloc::Layout;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::thread::ThreadId;

use crate::loom::{AtomicUsize, Mutex, Ordering, UnsafeCell};

/// Words in a thread's first chunk (32 KiB).
#[cfg(not(loom))]
const FIRST_CHUNK: usize = 4096;
/// Words in the largest chunks (2 MiB).
#[cfg(not(loom))]
const MAX_CHUNK: usize = 1 << 18;
/// Small under loom, so a model crosses a chunk boundary and leaves a chunk's tail unused.
#[cfg(loom)]
const FIRST_CHUNK: usize = 4;
#[cfg(loom)]
const MAX_CHUNK: usize = 4;

/// The alignment of chunks, so that `madvise` takes them.
const PAGE: usize = 4096;

type Slot = UnsafeCell<MaybeUninit<u64>>;

/// A run of words: slots `..len` are written and never written again.
struct Chunk {
    len: AtomicUsize,
    cap: usize,
    slots: NonNull<Slot>,
}

impl Chunk {
    fn layout(cap: usize) -> Layout {
        Layout::from_size_align(cap * size_of::<Slot>(), PAGE).expect("a chunk's layout is valid")
    }

    fn new(cap: usize) -> Box<Chunk> {
        let layout = Chunk::layout(cap);
        // SAFETY: the layout's size is not zero (`cap` is at least 1).
        let p = unsafe { std::alloc::alloc(layout) }.cast::<Slot>();
        let Some(slots) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout)
        };
        #[cfg(loom)]
        for i in 0..cap {
            // SAFETY: `i < cap`, inside the fresh allocation; loom's cells carry state and
            // must be made. (A std `UnsafeCell<MaybeUninit<_>>` needs no initialising.)
            unsafe { p.add(i).write(UnsafeCell::new(MaybeUninit::uninit())) };
        }
        map_pages(p.cast(), layout.size());
        Box::new(Chunk {
            len: AtomicUsize::new(0),
            cap,
            slots,
        })
    }

    /// Slot `i`, which must be below `cap`.
    #[inline]
    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.cap);
        // SAFETY: `i < cap` (the callers' invariant: the owner writes below `cap`, a reader
        // reads below the published `len <= cap`), and the allocation lives as long as `self`.
        unsafe { &*self.slots.as_ptr().add(i) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        #[cfg(loom)]
        for i in 0..self.cap {
            // SAFETY: made in `new`, dropped once here.
            unsafe { std::ptr::drop_in_place(self.slots.as_ptr().add(i)) };
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.slots.as_ptr().cast(), Chunk::layout(self.cap)) };
    }
}

/// Maps the pages of a fresh chunk now: one system call instead of a page fault per page
/// while recording.
fn map_pages(p: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    // SAFETY: the range is one live, page-aligned allocation of ours. `MADV_POPULATE_WRITE`
    // maps its pages as a write fault would, without writing; they read as zeroes and nothing
    // reads a slot before writing it. Where the kernel lacks the advice, the call fails and
    // does nothing.
    unsafe {
        libc::madvise(p.cast(), len, libc::MADV_POPULATE_WRITE);
    }
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    let _ = (p, len);
}

/// One thread's records for one recorder.
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
    /// The task this thread is running (0: none), for the end of a run to restore. Owner
    /// only.
    task: Cell<u64>,
    /// The encoder's note of the latest record (`trace/raw.rs`). Owner only.
    last: Cell<u64>,
}

// SAFETY: the `Cell`s are read and written only by `owner` (every method that touches them
// is called through `Recorder::local`, which hands a buffer only to its owner); other
// threads call only `snapshot`, which reads chunks under the lock and only their published
// prefix.
unsafe impl Sync for ThreadBuf {}
// SAFETY: as above; the raw pointers point into `chunks`, which moves with the buffer.
unsafe impl Send for ThreadBuf {}

impl ThreadBuf {
    /// A buffer for the calling thread.
    pub(crate) fn for_current_thread() -> ThreadBuf {
        let me = std::thread::current();
        let first = Chunk::new(FIRST_CHUNK);
        let current: *const Chunk = &*first;
        ThreadBuf {
            owner: me.id(),
            name: me
                .name()
                .map_or_else(|| format!("{:?}", me.id()), str::to_owned),
            chunks: Mutex::new(vec![first]),
            current: Cell::new(current),
            task: Cell::new(0),
            last: Cell::new(0),
        }
    }

    /// Whether the calling thread owns this buffer.
    pub(crate) fn is_mine(&self) -> bool {
        self.owner == std::thread::current().id()
    }

    /// Appends a record of `N` words (at most [`FIRST_CHUNK`]). Owner only.
    #[inline]
    pub(crate) fn push<const N: usize>(&self, words: [u64; N]) {
        // SAFETY: `current` points at a boxed chunk held by `chunks` for the buffer's life.
        let mut chunk = unsafe { &*self.current.get() };
        // Only this thread writes `len`.
        let mut n = chunk.len.load(Ordering::Relaxed);
        if n + N > chunk.cap {
            chunk = self.new_chunk(chunk.cap);
            n = 0;
        }
        for (i, w) in words.into_iter().enumerate() {
            // SAFETY: slot `n + i` is past the published prefix, so no reader looks at it,
            // and only the owner writes slots.
            chunk.slot(n + i).with_mut(|p| unsafe { (*p).write(w) });
        }
        chunk.len.store(n + N, Ordering::Release);
    }

    /// Adds a chunk twice as large as the one of `cap` words (at most [`MAX_CHUNK`]).
    #[cold]
    fn new_chunk(&self, cap: usize) -> &Chunk {
        let c = Chunk::new((cap * 2).min(MAX_CHUNK));
        let p: *const Chunk = &*c;
        self.chunks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(c);
        self.current.set(p);
        // SAFETY: just pushed; chunks are never removed.
        unsafe { &*p }
    }

    /// Sets the task this thread runs and returns the previous one. Owner only.
    #[inline]
    pub(crate) fn set_task(&self, task: u64) -> u64 {
        self.task.replace(task)
    }

    /// The encoder's note of the latest record. Owner only.
    #[inline]
    pub(crate) fn last(&self) -> u64 {
        self.last.get()
    }

    /// Sets the encoder's note of the latest record. Owner only.
    #[inline]
    pub(crate) fn set_last(&self, note: u64) {
        self.last.set(note);
    }

    /// Copies every word published so far, oldest first: whole records. Any thread.
    pub(crate) fn snapshot(&self) -> Vec<u64> {
        let chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for c in chunks.iter() {
            let n = c.len.load(Ordering::Acquire);
            for i in 0..n {
                // SAFETY: slots below the published length were written before the release
                // store our acquire load read, and are never written again.
                out.push(c.slot(i).with(|p| unsafe { (*p).assume_init() }));
            }
        }
        out
    }
}
