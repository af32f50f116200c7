//! A thread's record buffer: a list of chunks that only its own thread appends to.
//!
//! Appending writes the record into the current chunk's next slot and publishes it with a
//! plain release store of the chunk's length: no lock and no read-modify-write, and no cache
//! line that another runtime thread writes. The chunk list's lock is taken only to add a
//! chunk and by an export, which copies each chunk's published prefix. Published slots are
//! never written again, so an export may run while the owner keeps appending.
//!
//! Chunks double from [`FIRST_CHUNK`] records up to [`MAX_CHUNK`] (2 MiB), so a thread that
//! records little takes little memory and a busy one adds a chunk rarely. Each chunk's pages
//! are mapped when it is made, by one `madvise` call instead of a page fault per page, and a
//! 2 MiB chunk is aligned and advised to be one huge page where the system allows it.

use std::alloc::Layout;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::thread::ThreadId;

use super::raw::Raw;
use crate::loom::{AtomicUsize, Mutex, Ordering, UnsafeCell};

/// Records in a thread's first chunk (64 KiB).
#[cfg(not(loom))]
const FIRST_CHUNK: usize = 4096;
/// Records in the largest chunks (2 MiB, a huge page on x86-64).
#[cfg(not(loom))]
const MAX_CHUNK: usize = 1 << 17;
/// Small under loom, so a model crosses a chunk boundary.
#[cfg(loom)]
const FIRST_CHUNK: usize = 2;
#[cfg(loom)]
const MAX_CHUNK: usize = 2;

/// The alignment of a chunk of [`MAX_CHUNK`] records, so that it can be one huge page.
const HUGE: usize = 2 << 20;
/// The alignment of smaller chunks, so that `madvise` takes them.
const PAGE: usize = 4096;

type Slot = UnsafeCell<MaybeUninit<Raw>>;

/// A run of records: slots `..len` are written and never written again.
struct Chunk {
    len: AtomicUsize,
    cap: usize,
    slots: NonNull<Slot>,
}

impl Chunk {
    fn layout(cap: usize) -> Layout {
        let size = cap * size_of::<Slot>();
        let align = if size >= HUGE { HUGE } else { PAGE };
        Layout::from_size_align(size, align).expect("a chunk's layout is valid")
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
        // SAFETY: `i < cap` (the callers' invariant: the owner's `len < cap`, a reader's
        // published `len <= cap`), and the allocation lives as long as `self`.
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

/// Maps the pages of a fresh chunk now, as huge pages where it is 2 MiB aligned and the
/// system allows: one system call instead of a page fault per page while recording.
fn map_pages(p: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    // SAFETY: the range is one live allocation of ours. `MADV_HUGEPAGE` only changes how its
    // pages are backed. `MADV_POPULATE_WRITE` maps its pages as a write fault would, without
    // writing; they read as zeroes and nothing reads a slot before writing it. Where the
    // kernel lacks the advice, or huge pages are off, the calls fail and do nothing.
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
        }
    }

    /// Whether the calling thread owns this buffer.
    pub(crate) fn is_mine(&self) -> bool {
        self.owner == std::thread::current().id()
    }

    /// Appends `r`. Owner only.
    #[inline]
    pub(crate) fn push(&self, r: Raw) {
        // SAFETY: `current` points at a boxed chunk held by `chunks` for the buffer's life.
        let mut chunk = unsafe { &*self.current.get() };
        // Only this thread writes `len`.
        let mut n = chunk.len.load(Ordering::Relaxed);
        if n == chunk.cap {
            chunk = self.new_chunk(chunk.cap);
            n = 0;
        }
        // SAFETY: slot `n` is past the published prefix, so no reader looks at it, and only
        // the owner writes slots.
        chunk.slot(n).with_mut(|p| unsafe { (*p).write(r) });
        chunk.len.store(n + 1, Ordering::Release);
    }

    /// Adds a chunk twice as large as the full one of `cap` records (at most [`MAX_CHUNK`]).
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

    /// The latest record, if it is in the current chunk. Owner only.
    #[inline]
    pub(crate) fn last(&self) -> Option<Raw> {
        // SAFETY: as in `push`.
        let chunk = unsafe { &*self.current.get() };
        let n = chunk.len.load(Ordering::Relaxed).checked_sub(1)?;
        // SAFETY: slot `n` is published, so written; only the owner, us, writes slots.
        Some(chunk.slot(n).with(|p| unsafe { (*p).assume_init() }))
    }

    /// Copies every record published so far, oldest first. Any thread.
    pub(crate) fn snapshot(&self) -> Vec<Raw> {
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
