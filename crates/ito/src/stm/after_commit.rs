//! What a commit leaves for after it: the promises it completed, notified once the transaction
//! is over ([`Notify`]), and the values it replaced, freed once no pinned reader can reach them
//! ([`retire`], [`flush_retired`]).

#[cfg(not(loom))]
use std::cell::Cell;
use std::ptr::NonNull;

#[cfg(not(loom))]
use super::reclaim;
use super::reclaim::Guard;
use crate::future::cell::{CellHeader, CellWaiter};

/// The waiters and callbacks of the promises a commit completed, to notify once the
/// transaction is over. Each entry holds a reference to its cell. Notifies on drop too.
#[must_use]
pub(crate) struct Notify(pub(super) Vec<(NonNull<CellHeader>, *const CellWaiter)>);

impl Notify {
    /// Wakes the waiters and runs the callbacks.
    #[inline]
    pub(crate) fn run(self) {
        drop(self);
    }
}

impl Drop for Notify {
    #[inline]
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        self.notify_all();
    }
}

impl Notify {
    #[cold]
    fn notify_all(&mut self) {
        for (cell, list) in self.0.drain(..) {
            // SAFETY: we hold a reference; the list was taken from this cell by its publish.
            unsafe { crate::future::notify::dispatch(cell, list) };
            // SAFETY: the reference taken for this notification.
            unsafe { CellHeader::dec_ref(cell) };
        }
    }
}

// SAFETY: the cells belong to futures with `T: Send + Sync`; the lists were taken from them
// and are notified exactly once, from whichever thread runs this.
unsafe impl Send for Notify {}

/// Replaced values wait here, a batch per thread, before going to the epoch collector as one
/// deferred function: deferring each value on its own costs more than the commit itself.
#[cfg(not(loom))]
struct Retired(Vec<RetiredValue>);

/// A replaced value and the function that frees it.
#[cfg(not(loom))]
type RetiredValue = (*mut (), unsafe fn(*mut ()));

#[cfg(not(loom))]
impl Retired {
    /// 60 entries: the batch's buffer (960 bytes) stays below glibc's large-chunk size, whose
    /// allocation would consolidate the fast bins every time.
    const BATCH: usize = 60;

    /// Hands the batch to the epoch collector.
    fn flush(&mut self, guard: &Guard) {
        let _ = DEFERRED.try_with(|d| d.set(true));
        let batch = RetiredBatch(std::mem::replace(
            &mut self.0,
            Vec::with_capacity(Self::BATCH),
        ));
        // SAFETY: every value in the batch was replaced by a commit (unreachable from pins
        // taken since); `RetiredBatch` only frees them, each once, with its own type's function.
        unsafe { guard.defer(move || batch.free()) };
    }
}

#[cfg(not(loom))]
impl Drop for Retired {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            self.flush(&reclaim::pin());
        }
    }
}

/// A batch of replaced values on its way to being freed.
#[cfg(not(loom))]
struct RetiredBatch(Vec<RetiredValue>);

#[cfg(not(loom))]
impl RetiredBatch {
    /// Frees the values. This runs wherever the epoch collector runs it (any thread, inside
    /// some unrelated pin), so a panicking `Drop` is contained here.
    fn free(self) {
        for (p, f) in self.0 {
            // SAFETY: see `Retired::flush`.
            let r = std::panic::catch_unwind(|| unsafe { f(p) });
            if let Err(payload) = r {
                crate::failure::drop_payload(payload);
            }
        }
    }
}

/// Hands this thread's retired values to the epoch collector now, and its pending deferred
/// frees to the global queue (a thread about to sleep: the values it replaced should not wait
/// for its next commits).
pub(crate) fn flush_retired() {
    #[cfg(not(loom))]
    {
        let retired = RETIRED
            .try_with(|r| r.try_borrow().is_ok_and(|r| !r.0.is_empty()))
            .unwrap_or(false);
        let deferred = DEFERRED.try_with(|d| d.replace(false)).unwrap_or(false);
        if !retired && !deferred {
            return; // this thread has nothing waiting (most workers, most of the time)
        }
        let guard = reclaim::pin();
        let _ = RETIRED.try_with(|r| {
            if let Ok(mut r) = r.try_borrow_mut() {
                if !r.0.is_empty() {
                    r.flush(&guard);
                }
            }
        });
        guard.flush();
    }
}

#[cfg(not(loom))]
thread_local! {
    static RETIRED: std::cell::RefCell<Retired> =
        const { std::cell::RefCell::new(Retired(Vec::new())) };
    /// A batch went to this thread's epoch bag since the last `flush_retired`.
    static DEFERRED: Cell<bool> = const { Cell::new(false) };
}

/// Retires a replaced value: it is freed (with `free`) once no pinned reader can reach it.
///
/// # Safety
///
/// `value` was just replaced (unreachable from new pins), is freed by `free`, and belongs to
/// a `TVar<T>` with `T: Send`.
pub(super) unsafe fn retire(guard: &Guard, value: *mut (), free: unsafe fn(*mut ())) {
    #[cfg(not(loom))]
    {
        // A thread about to park hands its retired values back first.
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| crate::runtime::park::before_park(flush_retired));
        let flushed = RETIRED.try_with(|r| {
            let mut r = r.borrow_mut();
            r.0.push((value, free));
            if r.0.len() >= Retired::BATCH {
                r.flush(guard);
            }
        });
        if flushed.is_err() {
            // Thread teardown: defer it on its own.
            let one = RetiredBatch(vec![(value, free)]);
            // SAFETY: as in `Retired::flush`.
            unsafe { guard.defer(move || one.free()) };
        }
    }
    #[cfg(loom)]
    {
        let _ = (guard, value, free); // leaked under loom (see `reclaim.rs`)
    }
}

// SAFETY: the values belong to `TVar<T>`s with `T: Send + Sync`; the batch only frees them.
#[cfg(not(loom))]
unsafe impl Send for RetiredBatch {}
