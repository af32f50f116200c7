//! Coroutine stacks: reserved with `mmap`, a guard page at the low end, committed by the
//! kernel only as they are touched, and kept in a per-thread cache for reuse.
//!
//! Stacks are mapped [`CHUNK`] at a time, side by side in one anonymous mapping (one `mmap`,
//! one `madvise` and one `process_madvise` per chunk, one guard per stack), and a released stack
//! goes back to its thread's cache: a burst of tasks that block costs few system calls, and no
//! `munmap` (whose TLB shootdowns cost more than the mapping) until the thread idles and calls
//! [`trim_cache`], which unmaps what the cache holds beyond [`CACHE_CAP`]. Side by side, the top
//! page of one stack and the guard page of the next share a page table. The guard page is
//! installed with `MADV_GUARD_INSTALL` (Linux 6.13) where the kernel has it: a guard marker in
//! the page table that faults like `PROT_NONE` but does not split the mapping, so neighbouring
//! stacks merge into one kernel mapping and 100,000 of them stay far below `vm.max_map_count`
//! (65,530 by default). A chunk's markers go in with one `process_madvise` on the thread itself
//! (Linux 6.14's `PIDFD_SELF`); a kernel without it gets one `madvise` per stack. On an older
//! kernel still the guard page is `mprotect(PROT_NONE)`, which costs two mappings per stack and
//! so caps a process at about 32,000 live stacks under the default limit.
//!
//! What a stack costs the kernel is its first touch: a stack that blocks has committed at least
//! its top page, and, since stacks lie [`StackPool::DEFAULT_SIZE`] apart, one page-table page of
//! its own, which the resident set does not count (`VmPTE`; `docs/coroutines.md` measures both).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::num::NonZeroUsize;
use std::ptr;

/// `madvise` advice that installs guard markers (Linux 6.13); older `libc` releases lack it.
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// How many released stacks one thread keeps for reuse once it idles ([`trim_cache`]); the rest
/// are unmapped then.
///
/// A cached stack keeps the pages its last task touched, so the bound also bounds the memory an
/// idle thread holds on to: a shallow task leaves a page or two behind, and even stacks used to
/// their full depth cost at most `CACHE_CAP * size` per thread.
pub(crate) const CACHE_CAP: usize = 32;

/// Stacks mapped together when the cache is empty.
pub(crate) const CHUNK: usize = 16;

/// `process_madvise(2)`'s target for the calling thread's own memory (`PIDFD_SELF_THREAD`,
/// Linux 6.14); older `libc` releases lack it.
const PIDFD_SELF_THREAD: libc::c_int = -10_000;

/// Installs a guard marker on the page at each of `lows` (a chunk's stacks) with one
/// `process_madvise` call instead of one `madvise` per stack; `false` if that failed, in which
/// case the caller installs them one by one (installing a marker twice is harmless). A
/// failure turns the batched call off for this thread: the kernel lacks it.
fn install_guards(lows: &[usize], page: usize) -> bool {
    // One call takes at most `IOV_MAX` (1,024) ranges.
    const _: () = assert!(CHUNK <= 1024);
    if !BATCHED_GUARDS.with(Cell::get) {
        return false;
    }
    let ranges: Vec<libc::iovec> = lows
        .iter()
        .map(|&low| libc::iovec {
            iov_base: low as *mut libc::c_void,
            iov_len: page,
        })
        .collect();
    // SAFETY: every range is the guard page of a stack in a mapping this thread just made and
    // nothing else uses; `process_madvise` reads the `iovec`s and changes only those pages'
    // page-table entries.
    let done = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            PIDFD_SELF_THREAD,
            ranges.as_ptr(),
            ranges.len(),
            MADV_GUARD_INSTALL,
            0,
        )
    };
    let whole = usize::try_from(done).is_ok_and(|d| d == ranges.len() * page);
    if !whole {
        BATCHED_GUARDS.with(|b| b.set(false));
    }
    whole
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).expect("the page size is positive")
}

/// The size of every stack a pool hands out, checked when the pool is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StackPool {
    /// Usable bytes (a whole number of pages), not counting the guard page.
    size: usize,
}

/// A stack size a [`StackPool`] refuses, with the bounds it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StackSizeError {
    /// The size asked for.
    pub(crate) requested: usize,
}

impl fmt::Display for StackSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task stack size {} is out of range ({} bytes to {} bytes)",
            self.requested,
            StackPool::MIN_SIZE,
            StackPool::MAX_SIZE
        )
    }
}

impl std::error::Error for StackSizeError {}

impl StackPool {
    /// The default usable size of a task's stack: 8 MiB, a worker thread's default, since
    /// tasks run on these stacks and not on their threads' (see `docs/coroutines.md`).
    pub(crate) const DEFAULT_SIZE: usize = 8 << 20;
    /// The smallest stack a pool accepts: room for a panic's unwinding and formatting.
    pub(crate) const MIN_SIZE: usize = 16 * 1024;
    /// The largest stack a pool accepts: a thread's default on Linux (8 MiB) times 128.
    pub(crate) const MAX_SIZE: usize = 1 << 30;

    /// A pool of stacks of `size` usable bytes, rounded up to whole pages.
    pub(crate) fn new(size: usize) -> Result<Self, StackSizeError> {
        if !(Self::MIN_SIZE..=Self::MAX_SIZE).contains(&size) {
            return Err(StackSizeError { requested: size });
        }
        let page = page_size();
        Ok(StackPool {
            size: size.div_ceil(page) * page,
        })
    }

    /// The usable size of this pool's stacks in bytes.
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// A stack from this thread's cache, or a newly mapped one.
    pub(crate) fn take(&self) -> io::Result<Stack> {
        let cached = CACHE.with(|c| {
            let mut c = c.0.borrow_mut();
            match c.last() {
                Some(s) if s.size == self.size => c.pop(),
                _ => None,
            }
        });
        match cached {
            Some(raw) => Ok(Stack { raw: Some(raw) }),
            None => {
                let mut chunk = RawStack::map_chunk(self.size, CHUNK)?;
                let raw = chunk.pop().expect("a chunk has stacks");
                // `try_with`: during thread exit the cache may be gone; the rest are unmapped.
                let _ = CACHE.try_with(|c| c.0.borrow_mut().append(&mut chunk));
                Ok(Stack { raw: Some(raw) })
            }
        }
    }
}

/// Unmaps the stacks this thread's cache holds beyond [`CACHE_CAP`] (a worker about to sleep:
/// the burst that needed them is over).
pub(crate) fn trim_cache() {
    let excess = CACHE
        .try_with(|c| {
            let mut c = c.0.borrow_mut();
            let keep = c.len().min(CACHE_CAP);
            c.split_off(keep)
        })
        .unwrap_or_default();
    unmap_all(excess);
}

/// Unmaps `stacks`, each run of neighbours (stacks of one chunk, or of chunks the kernel placed
/// side by side) with one `munmap`: every call costs a TLB shootdown on every CPU the process
/// runs on, so 100,000 stacks unmapped one by one cost far more than their mapping did.
fn unmap_all(mut stacks: Vec<RawStack>) {
    stacks.sort_unstable_by_key(|s| s.low);
    let page = page_size();
    let mut run: Option<(usize, usize)> = None;
    for stack in stacks {
        let (low, len) = (stack.low.get(), stack.size + page);
        // The range is unmapped below, with its neighbours.
        std::mem::forget(stack);
        run = match run {
            Some((start, end)) if end == low => Some((start, low + len)),
            Some((start, end)) => {
                unmap(start, end);
                Some((low, low + len))
            }
            None => Some((low, low + len)),
        };
    }
    if let Some((start, end)) = run {
        unmap(start, end);
    }
}

/// Unmaps `[start, end)`, a run of stacks whose `RawStack`s are gone.
fn unmap(start: usize, end: usize) {
    // SAFETY: the range is made of whole stacks that this thread owned and forgot (in
    // `unmap_all`): nothing else refers to them and nothing runs on them.
    let rc = unsafe { libc::munmap(start as *mut libc::c_void, end - start) };
    debug_assert_eq!(rc, 0, "munmap of coroutine stacks failed");
}

/// A thread's released stacks; on thread exit, unmapped in runs ([`unmap_all`]).
struct Cache(RefCell<Vec<RawStack>>);

impl Drop for Cache {
    fn drop(&mut self) {
        unmap_all(std::mem::take(self.0.get_mut()));
    }
}

impl Default for StackPool {
    fn default() -> Self {
        StackPool::new(StackPool::DEFAULT_SIZE).expect("the default stack size is in range")
    }
}

thread_local! {
    /// Released stacks kept for reuse by this thread, most recently released last.
    static CACHE: Cache = const { Cache(RefCell::new(Vec::new())) };
}

thread_local! {
    /// Whether this thread may install guard markers in batches ([`install_guards`]); cleared
    /// for good when the kernel refuses. Per thread, so no thread waits on another's probe.
    pub(crate) static BATCHED_GUARDS: Cell<bool> = const { Cell::new(true) };
}

#[cfg(test)]
thread_local! {
    /// Tests set this to take the older kernels' path: a `PROT_NONE` guard page.
    pub(crate) static FORCE_MPROTECT_GUARD: Cell<bool> = const { Cell::new(false) };
}

/// Whether a test asked this thread for the older kernels' `PROT_NONE` guard page.
fn force_mprotect_guard() -> bool {
    #[cfg(test)]
    return FORCE_MPROTECT_GUARD.with(Cell::get);
    #[cfg(not(test))]
    false
}

/// One mapping: a guard page at its low end, then `size` usable bytes.
#[derive(Debug)]
struct RawStack {
    /// The lowest address of the mapping (the guard page).
    low: NonZeroUsize,
    /// Usable bytes above the guard page.
    size: usize,
}

impl RawStack {
    /// Maps `n` stacks of `size` usable bytes (a multiple of the page size) side by side, each
    /// with a guard page at its low end.
    fn map_chunk(size: usize, n: usize) -> io::Result<Vec<RawStack>> {
        let page = page_size();
        let len = (size + page) * n;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing aliases
        // nothing; `MAP_NORESERVE` reserves address space only, pages are committed on touch.
        let addr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the range is the mapping just made, which nothing else uses. Huge pages are
        // refused so that touching one page of a stack commits one page.
        unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
        let lows: Vec<usize> = (0..n).map(|i| addr as usize + i * (size + page)).collect();
        if !force_mprotect_guard() && install_guards(&lows, page) {
            return Ok(lows
                .into_iter()
                .map(|low| RawStack::at(low, size))
                .collect());
        }
        // Each stack owns its part of the mapping from here on (and unmaps it on drop), so an
        // error below unmaps the stacks made so far and the rest of the mapping separately.
        let mut stacks = Vec::with_capacity(n);
        for (i, &low) in lows.iter().enumerate() {
            let guard = low as *mut libc::c_void;
            // SAFETY: the guard page is the first page of this stack's part of the mapping.
            let guarded = !force_mprotect_guard()
                && unsafe { libc::madvise(guard, page, MADV_GUARD_INSTALL) } == 0
                // SAFETY: as above; an older kernel gets a `PROT_NONE` page instead.
                || unsafe { libc::mprotect(guard, page, libc::PROT_NONE) } == 0;
            if !guarded {
                let err = io::Error::last_os_error();
                let rest = len - i * (size + page);
                // SAFETY: the parts of the mapping no stack owns yet: ours alone, unused.
                unsafe { libc::munmap(guard, rest) };
                return Err(err); // `stacks` unmap theirs on drop
            }
            stacks.push(RawStack::at(low, size));
        }
        Ok(stacks)
    }

    /// The stack whose guard page starts at `low`.
    fn at(low: usize, size: usize) -> RawStack {
        RawStack {
            low: NonZeroUsize::new(low).expect("mmap does not return null"),
            size,
        }
    }

    /// One past the highest usable byte: where the stack starts, since it grows down.
    fn base(&self) -> usize {
        self.low.get() + page_size() + self.size
    }
}

impl Drop for RawStack {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours alone and nothing runs on it any more (a `Stack` is
        // released only after its coroutine finished or was unwound).
        let rc =
            unsafe { libc::munmap(self.low.get() as *mut libc::c_void, self.size + page_size()) };
        debug_assert_eq!(rc, 0, "munmap of a coroutine stack failed");
    }
}

/// A stack taken from a [`StackPool`]; dropping it returns it to this thread's cache (or
/// unmaps it when the cache is full). Its memory is not cleared on return: see
/// `docs/coroutines.md` for why reuse keeps the touched pages.
#[derive(Debug)]
pub(crate) struct Stack {
    /// `None` only while being dropped.
    raw: Option<RawStack>,
}

impl Stack {
    fn raw(&self) -> &RawStack {
        self.raw.as_ref().expect("a live stack has its mapping")
    }

    /// The guard page's address range, `[low, low + page)`.
    pub(crate) fn guard(&self) -> (usize, usize) {
        let low = self.raw().low.get();
        (low, low + page_size())
    }

    /// Usable bytes.
    pub(crate) fn size(&self) -> usize {
        self.raw().size
    }

    /// Gives the pages of the usable range back to the kernel (they read as zero when touched
    /// again); the guard stays. Used to measure what reuse without it saves.
    #[cfg(test)]
    pub(crate) fn discard_pages(&self) {
        let raw = self.raw();
        let start = raw.low.get() + page_size();
        // SAFETY: the usable range is ours and nothing runs on it (a `Stack` value is not in use
        // by a coroutine); `MADV_DONTNEED` keeps guard markers.
        unsafe { libc::madvise(start as *mut libc::c_void, raw.size, libc::MADV_DONTNEED) };
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let Some(raw) = self.raw.take() else { return };
        // `try_with`: during thread exit the cache may be gone; the stack is then unmapped.
        let _ = CACHE.try_with(|c| c.0.borrow_mut().push(raw));
    }
}

// SAFETY: `base` and `limit` describe one mapping owned by this value, which lives (in a
// `Stack`) as long as the coroutine using it; `limit` includes the guard page at the low end;
// both are page-aligned, hence aligned to `STACK_ALIGNMENT`; the usable part is at least
// `StackPool::MIN_SIZE`, above `MIN_STACK_SIZE`.
unsafe impl corosensei::stack::Stack for Stack {
    fn base(&self) -> corosensei::stack::StackPointer {
        NonZeroUsize::new(self.raw().base()).expect("a stack's base is not null")
    }

    fn limit(&self) -> corosensei::stack::StackPointer {
        self.raw().low
    }
}
