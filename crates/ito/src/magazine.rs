//! A magazine allocator for small values that are freed on another thread than the one that
//! allocated them: STM's variable values (every commit retires the value it replaces, and the
//! epoch collector frees it wherever it runs) and process mailbox nodes (a sender allocates, the
//! receiver frees).
//!
//! Small values go through per-thread free lists with a shared depot of magazines (Bonwick's
//! magazine allocator, in miniature). A block freed on one thread is reused by the next
//! allocation there, and threads whose frees outrun their allocations pass whole magazines to
//! threads that run dry. The system allocator's cross-thread frees cost more than the work
//! they serve on these paths; `docs/stm.md` has the measurement.
//!
//! Values larger than [`MAX`] bytes, aligned to more than [`ALIGN`], or zero-sized, are plain
//! `Box`es.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::UnsafeCell;
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Block sizes of the size classes.
const CLASSES: [usize; 4] = [16, 32, 64, 128];
/// The largest value kept in a class.
const MAX: usize = 128;
/// Blocks are aligned to this.
const ALIGN: usize = 16;
/// Blocks moved between a thread's cache and the depot at a time (a magazine).
const MAGAZINE: usize = 256;
/// Bytes kept in the depot per class; more go back to the system allocator. The epoch
/// collector frees in bursts (a collection can free tens of thousands of values at once on one
/// thread), so the depot must hold a burst or the other threads end up calling `malloc`.
const DEPOT_BYTES: usize = 8 << 20;

/// Magazines kept in the depot for `class`.
#[inline]
const fn depot_max(class: usize) -> usize {
    DEPOT_BYTES / (MAGAZINE * CLASSES[class])
}

/// The size class of `T`, if it has one.
#[inline]
const fn class_of<T>() -> Option<usize> {
    let size = size_of::<T>();
    if size == 0 || size > MAX || align_of::<T>() > ALIGN {
        return None;
    }
    let mut i = 0;
    while CLASSES[i] < size {
        i += 1;
    }
    Some(i)
}

#[inline]
fn layout(class: usize) -> Layout {
    // SAFETY: non-zero sizes, power-of-two alignment, no overflow.
    unsafe { Layout::from_size_align_unchecked(CLASSES[class], ALIGN) }
}

/// Per-thread free blocks, one list per class (fewer than two magazines' worth).
struct Cache([Vec<*mut u8>; 4]);

impl Drop for Cache {
    fn drop(&mut self) {
        for (class, list) in self.0.iter_mut().enumerate() {
            while !list.is_empty() {
                give_to_depot(class, list);
            }
        }
    }
}

/// Full magazines shared by all threads: a thread whose frees outrun its allocations (the
/// epoch collector may run another thread's frees on it) hands a magazine over; a thread that
/// runs dry takes one, instead of calling the system allocator. Empty magazines are kept too,
/// so that moving blocks around never allocates.
struct Depot {
    full: [Mutex<Vec<Vec<*mut u8>>>; 4],
    empty: [Mutex<Vec<Vec<*mut u8>>>; 4],
    /// `full[c].len()`, readable without the lock.
    full_len: [AtomicUsize; 4],
}

// SAFETY: the blocks are raw memory owned by whoever holds the magazine.
unsafe impl Sync for Depot {}

static DEPOT: Depot = Depot {
    full: [const { Mutex::new(Vec::new()) }; 4],
    empty: [const { Mutex::new(Vec::new()) }; 4],
    full_len: [const { AtomicUsize::new(0) }; 4],
};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves up to a magazine of blocks off the top of `list` into the depot.
fn give_to_depot(class: usize, list: &mut Vec<*mut u8>) {
    let mut magazine = lock(&DEPOT.empty[class])
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(MAGAZINE));
    let at = list.len().saturating_sub(MAGAZINE);
    magazine.extend(list.drain(at..));
    let mut full = lock(&DEPOT.full[class]);
    if full.len() < depot_max(class) {
        full.push(magazine);
        DEPOT.full_len[class].store(full.len(), Ordering::Relaxed);
        return;
    }
    drop(full);
    for p in magazine.drain(..) {
        // SAFETY: every pooled block was allocated with this class's layout.
        unsafe { dealloc(p, layout(class)) };
    }
    lock(&DEPOT.empty[class]).push(magazine);
}

/// Refills an empty `list` with a magazine from the depot, if there is one.
fn take_from_depot(class: usize, list: &mut Vec<*mut u8>) {
    if DEPOT.full_len[class].load(Ordering::Relaxed) == 0 {
        return;
    }
    let magazine = {
        let mut full = lock(&DEPOT.full[class]);
        let m = full.pop();
        DEPOT.full_len[class].store(full.len(), Ordering::Relaxed);
        m
    };
    if let Some(mut magazine) = magazine {
        list.append(&mut magazine);
        lock(&DEPOT.empty[class]).push(magazine);
    }
}

thread_local! {
    static CACHE: UnsafeCell<Cache> = const {
        UnsafeCell::new(Cache([Vec::new(), Vec::new(), Vec::new(), Vec::new()]))
    };
}

/// A free block of `class`: from this thread's cache, else a magazine from the depot.
#[inline]
fn pop_block(class: usize) -> Option<*mut u8> {
    CACHE
        .try_with(|c| {
            // SAFETY: this thread's cache; no reference to it escapes this closure, and nothing
            // here re-enters it.
            let list = unsafe { &mut (*c.get()).0[class] };
            if let Some(p) = list.pop() {
                return Some(p);
            }
            take_from_depot(class, list);
            list.pop()
        })
        .ok()
        .flatten()
}

/// Keeps a free block of `class`; `false` if this thread is gone (free it then).
#[inline]
fn push_block(class: usize, block: *mut u8) -> bool {
    CACHE
        .try_with(|c| {
            // SAFETY: as in `pop_block`.
            let list = unsafe { &mut (*c.get()).0[class] };
            if list.capacity() == 0 {
                list.reserve_exact(2 * MAGAZINE);
            }
            list.push(block);
            if list.len() >= 2 * MAGAZINE {
                give_to_depot(class, list);
            }
        })
        .is_ok()
}

/// Boxes `value`; free it with [`free_value`].
#[inline]
pub(crate) fn alloc_value<T>(value: T) -> *mut T {
    let Some(class) = class_of::<T>() else {
        return Box::into_raw(Box::new(value));
    };
    let p = match pop_block(class) {
        Some(p) => p,
        None => {
            // SAFETY: a non-zero-sized layout.
            let p = unsafe { alloc(layout(class)) };
            if p.is_null() {
                handle_alloc_error(layout(class));
            }
            p
        }
    }
    .cast::<T>();
    // SAFETY: a block of at least `size_of::<T>()` bytes aligned to `ALIGN >= align_of::<T>()`.
    unsafe { ptr::write(p, value) };
    p
}

/// Drops and frees a value from [`alloc_value`].
///
/// # Safety
///
/// `p` came from `alloc_value::<T>` and is freed once; nobody uses it afterwards.
#[inline]
pub(crate) unsafe fn free_value<T>(p: *mut T) {
    let Some(class) = class_of::<T>() else {
        // SAFETY: from `Box::into_raw` (the caller's contract).
        drop(unsafe { Box::from_raw(p) });
        return;
    };
    // SAFETY: a live `T` (the caller's contract); after this the block is raw memory.
    unsafe { ptr::drop_in_place(p) };
    let block = p.cast::<u8>();
    if !push_block(class, block) {
        // SAFETY: allocated with this class's layout.
        unsafe { dealloc(block, layout(class)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of::<()>(), None);
        assert_eq!(class_of::<u8>(), Some(0));
        assert_eq!(class_of::<[u64; 2]>(), Some(0));
        assert_eq!(class_of::<[u64; 3]>(), Some(1));
        assert_eq!(class_of::<[u8; 128]>(), Some(3));
        assert_eq!(class_of::<[u8; 129]>(), None);
    }

    #[test]
    fn values_round_trip_and_drop() {
        let rc = std::rc::Rc::new(5);
        for _ in 0..2000 {
            let p = alloc_value((rc.clone(), [7u64; 3]));
            // SAFETY: just allocated.
            assert_eq!(unsafe { *(*p).0 }, 5);
            // SAFETY: from `alloc_value`, freed once.
            unsafe { free_value(p) };
        }
        assert_eq!(std::rc::Rc::strong_count(&rc), 1);
        let big = alloc_value([1u8; 300]);
        // SAFETY: from `alloc_value`, freed once.
        unsafe { free_value(big) };
    }
}
