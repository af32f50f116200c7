//! Task memory: size classes, per-thread magazines, a shared depot, and chunks carved a
//! magazine at a time (Bonwick's magazine allocator, with the slab layer replaced by a bump
//! pointer).
//!
//! Every task is one allocation made by the thread that spawns it and freed by whichever
//! thread drops its last reference, often another worker (a stolen task, a process that
//! ends on the thread that sent it its last message). glibc's allocator makes that costly in
//! two ways: a free from a thread other than the allocating one takes the allocating arena's
//! lock, and a worker thread's arena grows one page at a time with an `mprotect` call per
//! page. The measurements are in `docs/scheduler.md`, "Task memory".
//!
//! Here:
//! - a block's size class is its size rounded up to 8 bytes (classes up to [`MAX`] bytes;
//!   larger tasks, or tasks aligned to more than 16, use the global allocator); blocks of a
//!   class whose size is a multiple of 16 are 16-aligned;
//! - each thread keeps, per class, two *magazines* (intrusive free lists of at most
//!   [`MAG`] blocks): an allocation pops from the loaded one, a free pushes to it, and the
//!   thread touches nothing shared until a magazine runs empty or full. This is Bonwick's
//!   `loaded`/`previous` pair, which absorbs alternating frees and allocations without trips
//!   to the depot;
//! - full magazines that a thread does not need go to the depot, one mutex per class, and a
//!   thread that runs dry takes one: blocks freed by a thief go back to the spawner a
//!   magazine per lock;
//! - a thread whose cache and the depot are empty carves a magazine's worth of fresh blocks
//!   from its current chunk. Chunks come from the global allocator, 64 KiB at first and
//!   doubling up to 2 MiB, so a program that spawns little stays small. They are not advised
//!   as huge pages, whose faulting cost varies widely on a VM. Once a thread has carved its
//!   first 2 MiB chunk, each further chunk is faulted in by one
//!   `madvise(MADV_POPULATE_WRITE)` call instead of a page fault per page (`prefault`).
//!
//! Memory that held tasks is kept for later tasks, never returned to the system: a program's
//! task memory stays at its peak. The leftovers of an exiting thread (its magazines, the
//! uncarved rest of its chunk) go to the depot and a spare list.
//!
//! Under loom every allocation is a plain global allocation (the models are about the state
//! machines, not about memory).

use std::alloc::Layout;
#[cfg(not(loom))]
use std::cell::UnsafeCell;
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::Mutex;

/// Class granularity: block sizes are multiples of this, and blocks are aligned to it.
const STEP: usize = 8;
/// The strictest alignment served: blocks of a class whose size is a multiple of this are
/// aligned to it (every carved run starts so aligned), and a type's size is a multiple of
/// its alignment.
const ALIGN: usize = 16;
/// The largest block size; larger tasks use the global allocator.
const MAX: usize = 512;
#[cfg(not(loom))]
const CLASSES: usize = MAX / STEP;
/// Blocks per magazine.
#[cfg(not(loom))]
const MAG: usize = 64;
/// The first chunk a thread carves from; each next one is twice as large, up to
/// [`MAX_CHUNK`].
#[cfg(not(loom))]
const FIRST_CHUNK: usize = 64 << 10;
/// The largest chunk.
#[cfg(not(loom))]
const MAX_CHUNK: usize = 2 << 20;

/// The size class of a layout, if it has one.
#[inline]
const fn class_of(layout: Layout) -> Option<usize> {
    if layout.size() == 0 || layout.size() > MAX || layout.align() > ALIGN {
        return None;
    }
    Some(layout.size().div_ceil(STEP) - 1)
}

/// Allocates memory for a `T` (never null; aborts on exhaustion like `Box::new`).
#[inline]
pub(crate) fn alloc<T>() -> NonNull<T> {
    let layout = Layout::new::<T>();
    match const { class_of(Layout::new::<T>()) } {
        Some(class) => imp::alloc(class).cast(),
        None => global_alloc(layout).cast(),
    }
}

/// Frees memory from [`alloc`].
///
/// # Safety
/// `p` came from `alloc::<T>()` and is not used again (its value has been dropped or moved
/// out).
#[inline]
pub(crate) unsafe fn dealloc<T>(p: NonNull<T>) {
    let layout = Layout::new::<T>();
    match const { class_of(Layout::new::<T>()) } {
        // SAFETY: a block of this class, per the caller.
        Some(class) => unsafe { imp::dealloc(class, p.cast()) },
        // SAFETY: allocated by `global_alloc` with this layout, per the caller.
        None => unsafe { std::alloc::dealloc(p.as_ptr().cast(), layout) },
    }
}

fn global_alloc(layout: Layout) -> NonNull<u8> {
    if layout.size() == 0 {
        // Zero-sized: any aligned non-null pointer will do, and `dealloc` of a ZST layout
        // would be wrong, but a task always holds a header, so this never happens.
        unreachable!("a task is never zero-sized");
    }
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

#[cfg(loom)]
mod imp {
    use super::*;

    fn layout(class: usize) -> Layout {
        Layout::from_size_align((class + 1) * STEP, ALIGN).expect("a valid class layout")
    }

    pub(super) fn alloc(class: usize) -> NonNull<u8> {
        global_alloc(layout(class))
    }

    pub(super) unsafe fn dealloc(class: usize, p: NonNull<u8>) {
        // SAFETY: allocated by `alloc` with this class's layout.
        unsafe { std::alloc::dealloc(p.as_ptr(), layout(class)) }
    }
}

#[cfg(not(loom))]
mod imp {
    use super::*;

    /// A free block's first word: the next free block of its magazine.
    struct Free {
        next: *mut Free,
    }

    /// An intrusive list of free blocks of one class.
    #[derive(Clone, Copy)]
    struct Mag {
        head: *mut Free,
        len: usize,
    }

    // SAFETY: a magazine's blocks are raw memory owned by whoever holds the magazine.
    unsafe impl Send for Mag {}

    impl Mag {
        const EMPTY: Mag = Mag {
            head: std::ptr::null_mut(),
            len: 0,
        };

        #[inline]
        fn pop(&mut self) -> Option<NonNull<u8>> {
            let p = NonNull::new(self.head)?;
            // SAFETY: a block in a magazine is free and starts with its link.
            self.head = unsafe { p.as_ref() }.next;
            self.len -= 1;
            Some(p.cast())
        }

        #[inline]
        fn push(&mut self, p: NonNull<u8>) {
            let f = p.cast::<Free>().as_ptr();
            // SAFETY: the block is free (the caller gave it up) and at least `STEP` bytes,
            // aligned to `STEP` (8): room for the link.
            unsafe { f.write(Free { next: self.head }) };
            self.head = f;
            self.len += 1;
        }
    }

    /// Faults in `[p, p + len)` (a fresh chunk) in one system call where the kernel can
    /// (`MADV_POPULATE_WRITE`, Linux 5.14). Only an optimisation: where the call fails or does
    /// not exist, the pages fault in on first touch as usual.
    fn prefault(p: *mut u8, len: usize) {
        #[cfg(all(target_os = "linux", not(miri)))]
        // SAFETY: `madvise` is given a range inside a live allocation of ours, starting on a
        // 4 KiB boundary (where the system's pages are larger, or the kernel predates the
        // advice, the call fails with `EINVAL` and does nothing). `MADV_POPULATE_WRITE` maps
        // the pages as a write fault would, without writing: a page already mapped keeps its
        // contents, a copy-on-write one is copied, a fresh one reads as zeroes (and we never
        // read a block before writing it). It cannot touch memory outside the range.
        unsafe {
            libc::madvise(p.cast(), len, libc::MADV_POPULATE_WRITE);
        }
        #[cfg(any(not(target_os = "linux"), miri))]
        let _ = (p, len);
    }

    /// A thread's magazines and its chunk.
    struct Cache {
        /// Allocations pop here, frees push here.
        loaded: [Mag; CLASSES],
        /// Empty or full (`MAG` blocks): swapped with `loaded` when that runs empty or full.
        previous: [Mag; CLASSES],
        /// The uncarved part of the current chunk (pointers derived from the chunk's, so
        /// blocks carry its provenance; both null before the first chunk).
        bump: *mut u8,
        end: *mut u8,
        /// The size of the next chunk.
        next_chunk: usize,
        /// A chunk of `MAX_CHUNK` bytes was carved already: the next ones are prefaulted.
        bulk: bool,
    }

    // SAFETY: the blocks are raw memory owned by whoever holds the cache.
    unsafe impl Send for Cache {}

    impl Cache {
        const NEW: Cache = Cache {
            loaded: [Mag::EMPTY; CLASSES],
            previous: [Mag::EMPTY; CLASSES],
            bump: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            next_chunk: FIRST_CHUNK,
            bulk: false,
        };

        #[inline]
        fn alloc(&mut self, class: usize) -> NonNull<u8> {
            if let Some(p) = self.loaded[class].pop() {
                return p;
            }
            self.refill(class);
            self.loaded[class]
                .pop()
                .expect("a refilled magazine holds a block")
        }

        /// `loaded[class]` is empty: the previous magazine if it is full, else a full one
        /// from the depot, else fresh blocks.
        #[cold]
        fn refill(&mut self, class: usize) {
            if self.previous[class].len > 0 {
                std::mem::swap(&mut self.loaded[class], &mut self.previous[class]);
                return;
            }
            if let Some(m) = depot_take(class) {
                self.loaded[class] = m;
                return;
            }
            self.carve(class);
        }

        #[inline]
        fn dealloc(&mut self, class: usize, p: NonNull<u8>) {
            if self.loaded[class].len >= MAG {
                self.make_room(class);
            }
            self.loaded[class].push(p);
        }

        /// `loaded[class]` is full: it becomes `previous` (a full `previous` goes to the
        /// depot first), and `loaded` starts empty.
        #[cold]
        fn make_room(&mut self, class: usize) {
            if self.previous[class].len > 0 {
                depot_give(class, self.previous[class]);
            }
            self.previous[class] = self.loaded[class];
            self.loaded[class] = Mag::EMPTY;
        }

        /// Bytes left uncarved in the current chunk.
        fn room(&self) -> usize {
            self.end.addr() - self.bump.addr()
        }

        /// Fills `loaded[class]` (empty) with up to `MAG` fresh blocks from the chunk.
        fn carve(&mut self, class: usize) {
            let size = (class + 1) * STEP;
            // Runs start `ALIGN`-aligned, so blocks whose size is a multiple of it are too.
            let a = self.bump.addr();
            let skip = (a.next_multiple_of(ALIGN) - a).min(self.room());
            self.bump = self.bump.wrapping_add(skip);
            if self.room() < size {
                self.new_chunk(size * MAG);
            }
            let n = (self.room() / size).min(MAG);
            // Pushed in reverse so that allocations walk the fresh memory upwards.
            for i in (0..n).rev() {
                let p = self.bump.wrapping_add(i * size);
                // SAFETY: inside the chunk (`i * size < room`), which is non-null.
                self.loaded[class].push(unsafe { NonNull::new_unchecked(p) });
            }
            self.bump = self.bump.wrapping_add(n * size);
        }

        /// Replaces the current chunk (its uncarved rest goes to the spare list) with a spare
        /// run of at least `want` bytes, or a new chunk.
        fn new_chunk(&mut self, want: usize) {
            let mut spares = lock(&SPARE_RUNS);
            if self.room() >= STEP {
                spares.push(Run(self.bump, self.end));
            }
            if let Some(i) = spares.iter().position(|r| r.1.addr() - r.0.addr() >= want) {
                Run(self.bump, self.end) = spares.swap_remove(i);
                return;
            }
            drop(spares);
            let size = self.next_chunk;
            // Once a thread has carved a chunk of the largest size it is allocating in bulk:
            // its next chunks are faulted in by one call each instead of one page fault per
            // page.
            let populate = size == MAX_CHUNK && self.bulk;
            self.bulk |= size == MAX_CHUNK;
            self.next_chunk = (size * 2).min(MAX_CHUNK);
            let layout = Layout::from_size_align(size, 4096).expect("a valid chunk layout");
            let p = global_alloc(layout);
            if populate {
                prefault(p.as_ptr(), size);
            }
            self.bump = p.as_ptr();
            self.end = self.bump.wrapping_add(size);
        }

        /// Hands everything to the depot and the spare list (the thread is exiting).
        fn release(&mut self) {
            for class in 0..CLASSES {
                for m in [&mut self.loaded[class], &mut self.previous[class]] {
                    if m.len > 0 {
                        depot_give(class, *m);
                        *m = Mag::EMPTY;
                    }
                }
            }
            if self.room() >= STEP {
                lock(&SPARE_RUNS).push(Run(self.bump, self.end));
            }
            self.bump = std::ptr::null_mut();
            self.end = std::ptr::null_mut();
        }
    }

    /// This thread's cache. `Drop` releases it when the thread exits.
    struct Local(UnsafeCell<Cache>);

    impl Drop for Local {
        fn drop(&mut self) {
            self.0.get_mut().release();
        }
    }

    thread_local! {
        static CACHE: Local = const { Local(UnsafeCell::new(Cache::NEW)) };
    }

    /// For threads whose cache is gone (frees from other thread-local destructors at thread
    /// exit) or not yet usable.
    static ORPHAN: Mutex<Cache> = Mutex::new(Cache::NEW);

    /// Full magazines per class, shared by all threads.
    static DEPOT: [Mutex<Vec<Mag>>; CLASSES] = [const { Mutex::new(Vec::new()) }; CLASSES];

    /// An uncarved rest of a chunk: start and end, with the chunk's provenance.
    struct Run(*mut u8, *mut u8);

    // SAFETY: the run is raw memory owned by whoever holds it.
    unsafe impl Send for Run {}

    /// Uncarved rests of chunks, left by exiting threads or by a thread that needed a longer
    /// run.
    static SPARE_RUNS: Mutex<Vec<Run>> = Mutex::new(Vec::new());

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn depot_take(class: usize) -> Option<Mag> {
        lock(&DEPOT[class]).pop()
    }

    fn depot_give(class: usize, m: Mag) {
        lock(&DEPOT[class]).push(m);
    }

    #[inline]
    pub(super) fn alloc(class: usize) -> NonNull<u8> {
        CACHE
            .try_with(|c| {
                // SAFETY: this thread's cache; no reference to it escapes this closure and
                // nothing in it re-enters the allocator.
                unsafe { &mut *c.0.get() }.alloc(class)
            })
            .unwrap_or_else(|_| lock(&ORPHAN).alloc(class))
    }

    /// A carve from a run that starts 8 bytes off a multiple of 16 (what a chunk's last,
    /// partial run of 24-byte blocks can leave) still gives 16-aligned blocks to a class of
    /// 16-aligned types.
    #[cfg(test)]
    #[test]
    fn carved_blocks_keep_the_alignment() {
        let layout = Layout::from_size_align(4096, 16).unwrap();
        let base = global_alloc(layout).as_ptr();
        let mut cache = Cache::NEW;
        (cache.bump, cache.end) = (base.wrapping_add(8), base.wrapping_add(4096));
        let class = 32 / STEP - 1; // `[u128; 2]`
        cache.carve(class);
        let mut n = 0;
        while let Some(p) = cache.loaded[class].pop() {
            assert_eq!(p.as_ptr().addr() % ALIGN, 0);
            assert!(p.as_ptr().addr() + 32 <= base.addr() + 4096);
            n += 1;
        }
        assert_eq!(n, MAG);
        // SAFETY: allocated above with this layout; the blocks carved from it are unused.
        unsafe { std::alloc::dealloc(base, layout) };
    }

    /// `prefault` changes no byte: pages written before it keep what they hold, and pages
    /// not yet touched are writable after it.
    #[cfg(test)]
    #[test]
    fn prefault_keeps_contents() {
        const PAGE: usize = 4096;
        let layout = Layout::from_size_align(MAX_CHUNK, PAGE).unwrap();
        let base = global_alloc(layout).as_ptr();
        let mark = |page: usize| (page % 251) as u8 + 1;
        // Every other page written (mapped), the rest never touched.
        for page in (0..MAX_CHUNK / PAGE).step_by(2) {
            // SAFETY: a page inside the allocation.
            unsafe { base.add(page * PAGE).write_bytes(mark(page), PAGE) };
        }
        prefault(base, MAX_CHUNK);
        for page in 0..MAX_CHUNK / PAGE {
            // SAFETY: a page inside the allocation; each byte is written before it is read.
            let bytes = unsafe {
                if page % 2 == 1 {
                    base.add(page * PAGE).write_bytes(mark(page), PAGE);
                }
                std::slice::from_raw_parts(base.add(page * PAGE), PAGE)
            };
            assert!(bytes.iter().all(|&b| b == mark(page)), "page {page}");
        }
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(base, layout) };
    }

    /// # Safety
    /// `p` is a block of `class` that nobody uses any more.
    #[inline]
    pub(super) unsafe fn dealloc(class: usize, p: NonNull<u8>) {
        let done = CACHE.try_with(|c| {
            // SAFETY: as in `alloc`.
            unsafe { &mut *c.0.get() }.dealloc(class, p)
        });
        if done.is_err() {
            lock(&ORPHAN).dealloc(class, p);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(Layout::new::<[u8; 1]>()), Some(0));
        assert_eq!(class_of(Layout::new::<[u64; 2]>()), Some(1));
        assert_eq!(class_of(Layout::new::<[u64; 3]>()), Some(2));
        assert_eq!(class_of(Layout::new::<u128>()), Some(1));
        assert_eq!(class_of(Layout::new::<[u8; 512]>()), Some(63));
        assert_eq!(class_of(Layout::new::<[u8; 513]>()), None);
        #[repr(align(64))]
        struct Big(#[allow(dead_code)] u8);
        assert_eq!(class_of(Layout::new::<Big>()), None);
    }

    /// A block pointer moved to another thread (raw pointers are not `Send`).
    struct Sent<B>(NonNull<B>);

    // SAFETY: the block is raw memory owned by whoever holds it.
    unsafe impl<B> Send for Sent<B> {}

    /// Blocks are distinct, aligned, writable, and reused after being freed, across
    /// threads: what one thread frees another allocates (through the depot).
    #[test]
    fn blocks_move_between_threads() {
        type B = [u64; 15]; // 120 bytes: the 128-byte class
        let n = 10 * 64 + 7;
        let blocks: Vec<Sent<B>> = (0..n)
            .map(|i| {
                let p = alloc::<B>();
                assert_eq!(p.as_ptr().addr() % STEP, 0);
                // SAFETY: fresh memory for a `B`.
                unsafe { p.as_ptr().write([i as u64; 15]) };
                Sent(p)
            })
            .collect();
        let mut sorted: Vec<usize> = blocks.iter().map(|p| p.0.as_ptr().addr()).collect();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "every live block is distinct");
        for (i, p) in blocks.iter().enumerate() {
            // SAFETY: written above.
            assert_eq!(unsafe { *p.0.as_ptr() }, [i as u64; 15]);
        }
        // Another thread frees them all; its full magazines go to the depot.
        std::thread::spawn(move || {
            for p in blocks {
                // SAFETY: allocated above as `B`, not used again.
                unsafe { dealloc(p.0) };
            }
        })
        .join()
        .unwrap();
        // This thread gets them back from the depot before it carves new ones.
        let again: Vec<NonNull<B>> = (0..2 * n).map(|_| alloc::<B>()).collect();
        assert!(
            again
                .iter()
                .any(|p| sorted.binary_search(&p.as_ptr().addr()).is_ok()),
            "freed blocks are reused"
        );
        for p in again {
            // SAFETY: allocated above as `B`.
            unsafe { dealloc(p) };
        }
    }

    /// Types too large or too aligned for a class go to the global allocator and back.
    #[test]
    fn large_and_aligned_types() {
        #[repr(align(64))]
        struct Aligned(#[allow(dead_code)] [u8; 64]);
        let p = alloc::<Aligned>();
        assert_eq!(p.as_ptr() as usize % 64, 0);
        // SAFETY: from `alloc::<Aligned>()`, unused.
        unsafe { dealloc(p) };
        let q = alloc::<[u8; 4096]>();
        // SAFETY: as above.
        unsafe { dealloc(q) };
    }
}
