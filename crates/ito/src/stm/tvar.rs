//! `TVar<T>`: a transactional variable. A versioned lock word, a pointer to the current value,
//! and the list of transactions sleeping in `retry` until it is written.
//!
//! # The lock word
//!
//! ```text
//!  63 ........................... 2     1        0
//! [ version of the last commit     ][WAITERS][LOCKED]
//! ```
//!
//! - `version`: the global clock's value at the commit that last wrote the variable (0 for a
//!   variable nobody committed to yet). Only changes while `LOCKED` is held, and the unlock
//!   store is what publishes it.
//! - `LOCKED`: a committing transaction holds the variable (between locking its write set and
//!   publishing). Readers that see it abort and run again; other committers abort too (there is
//!   no waiting while holding locks, so no deadlock).
//! - `WAITERS`: a transaction sleeping in `retry` is on the wait list. Set by the sleeper with a
//!   CAS that expects the (unlocked) word it read, so it cannot be set after a commit changed
//!   the variable; read by the committer's locking CAS, and cleared by its unlock store. So a
//!   committer knows whether to wake anyone without a fence, and no wake-up is lost
//!   (`wait.rs`).
//!
//! # The value
//!
//! Scalars (the integer types, `f32`, `f64`, `bool`, `char`: [`is_scalar`]) live in the
//! header itself, in two words (`VarHeader::words`) that a commit overwrites while it holds
//! `LOCKED`, with `Release` stores before its unlock store; a reader loads the lock word, the
//! words (`Acquire`), and the lock word again, a seqlock: same word, unlocked, means the words
//! are the value that version published (a word from a later commit would make the second
//! lock load see that commit's lock). Scalars have no padding, every byte is initialized and
//! every value is `Copy`, so the words are exact and a read needs no allocation, no clone and
//! nothing freed later.
//!
//! Every other `T`: `value` points at a heap `T` that is never mutated: a commit stores a
//! pointer to a new one (while `LOCKED`) and hands the old one to the epoch collector
//! (`reclaim.rs`). A reader clones the pointee while pinned, then re-reads the lock word: same
//! word, unlocked, means the clone is of the value that version published.

use std::any::TypeId;
use std::marker::PhantomData;
use std::mem::{MaybeUninit, size_of};
use std::ptr::NonNull;

use super::reclaim::{self, Guard};
use super::sleepers::SleeperList;
use super::tx::Pending;
use super::{StmResult, Tx};
use crate::loom::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
use crate::magazine as alloc;

pub(crate) const LOCKED: u64 = 0b01;
pub(crate) const WAITERS: u64 = 0b10;
/// The version bits start here.
pub(crate) const VERSION_SHIFT: u32 = 2;

/// The version in a lock word.
#[inline]
pub(crate) fn version(word: u64) -> u64 {
    word >> VERSION_SHIFT
}

/// Whether `TVar<T>` keeps its value inline, in [`VarHeader::words`]: the primitive scalar types,
/// which have no padding (every byte of a value is initialized, so the words are exact),
/// no invalid bit patterns across the words that can tear (the types of more than one word
/// are integers), no `Drop`, and a `Clone` that is a copy. Folds to a constant.
#[inline(always)]
pub(crate) fn is_scalar<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    t == TypeId::of::<i64>()
        || t == TypeId::of::<u64>()
        || t == TypeId::of::<usize>()
        || t == TypeId::of::<isize>()
        || t == TypeId::of::<i32>()
        || t == TypeId::of::<u32>()
        || t == TypeId::of::<bool>()
        || t == TypeId::of::<i8>()
        || t == TypeId::of::<u8>()
        || t == TypeId::of::<i16>()
        || t == TypeId::of::<u16>()
        || t == TypeId::of::<i128>()
        || t == TypeId::of::<u128>()
        || t == TypeId::of::<f32>()
        || t == TypeId::of::<f64>()
        || t == TypeId::of::<char>()
}

/// The words of a scalar (`is_scalar::<T>()`), zero beyond its size.
#[inline(always)]
fn to_words<T: 'static>(value: T) -> [u64; 2] {
    debug_assert!(is_scalar::<T>() && size_of::<T>() <= 16);
    let mut words = [0u64; 2];
    // SAFETY: a scalar is at most 16 bytes, all of them initialized (no padding); the copy is
    // bytewise, so the alignment of `T` does not matter. `T` has no `Drop`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&raw const value).cast::<u8>(),
            words.as_mut_ptr().cast::<u8>(),
            size_of::<T>(),
        )
    };
    words
}

/// The scalar whose words (`to_words`) these are.
///
/// # Safety
///
/// `words` came from `to_words::<T>` (for a type of two words, both from the same call).
#[inline(always)]
unsafe fn from_words<T: 'static>(words: [u64; 2]) -> T {
    let mut v = MaybeUninit::<T>::uninit();
    // SAFETY: the bytes of a `T` that `to_words` copied out (the caller's contract), copied
    // back bytewise into a place of type `T`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            words.as_ptr().cast::<u8>(),
            v.as_mut_ptr().cast::<u8>(),
            size_of::<T>(),
        );
        v.assume_init()
    }
}

/// The type-erased front of every TVar.
#[repr(C)]
pub(crate) struct VarHeader {
    pub(crate) lock: AtomicU64,
    /// A scalar's value (`is_scalar`), written only under `LOCKED`; unused for other types.
    pub(crate) words: [AtomicU64; 2],
    refs: AtomicUsize,
    /// The wait list, made on the first `retry` that waits on this variable (most variables
    /// never have one, and a 64-byte header would put the lock word and the value pointer on
    /// two cache lines).
    waiters: AtomicPtr<SleeperList>,
    vtable: &'static VTable,
}

/// What a transaction's log needs to do with a TVar whose `T` it does not know.
pub(crate) struct VTable {
    /// Stores `value` (a `T` from `alloc::alloc_value`) as the current value and returns the old
    /// one (to be retired). Called with the variable locked by the caller.
    publish: unsafe fn(NonNull<VarHeader>, *mut ()) -> *mut (),
    /// Frees a pending value that was never published.
    pub(crate) drop_value: unsafe fn(*mut ()),
    /// Frees the variable (its value, waiters) once its last handle is gone.
    free: unsafe fn(NonNull<VarHeader>),
}

/// A variable: one cache line (scalars never leave it), so that two variables never share one.
#[repr(C, align(64))]
struct VarCell<T> {
    header: VarHeader,
    /// The current value of a non-scalar `T` (from `alloc::alloc_value`); null for scalars.
    value: AtomicPtr<T>,
}

impl VarHeader {
    /// Publishes a pending value; returns the replaced one, which pinned readers may still be
    /// cloning: it must go to the epoch collector (`drop_value_fn` frees it).
    ///
    /// # Safety
    ///
    /// The caller holds the variable's lock and `value` came from a write to this variable.
    pub(crate) unsafe fn publish(this: NonNull<VarHeader>, value: *mut ()) -> *mut () {
        // SAFETY: forwarded.
        unsafe { (this.as_ref().vtable.publish)(this, value) }
    }

    /// Publishes a scalar's words (see the module docs): `Release`, so a reader whose
    /// `Acquire` load of a word reads this store then sees our lock (or later) in the lock
    /// word, and rejects the read if it saw an older word first.
    ///
    /// # Safety
    ///
    /// The caller holds the variable's lock, and `words` came from `to_words::<T>` for this
    /// variable's `T` (a write to it): readers turn them back into a `T` (`from_words`), and
    /// for `bool` or `char` other bits would be an invalid value.
    #[inline]
    pub(crate) unsafe fn publish_words(&self, words: [u64; 2]) {
        self.words[0].store(words[0], Ordering::Release);
        self.words[1].store(words[1], Ordering::Release);
    }

    pub(crate) fn drop_value_fn(&self) -> unsafe fn(*mut ()) {
        self.vtable.drop_value
    }

    /// The wait list, made if there is none yet.
    pub(crate) fn waiters(&self) -> &SleeperList {
        let p = self.waiters.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: installed once, freed only with the variable.
            return unsafe { &*p };
        }
        let fresh = Box::into_raw(Box::new(SleeperList::new()));
        match self.waiters.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just installed; freed only with the variable.
            Ok(_) => unsafe { &*fresh },
            Err(existing) => {
                // SAFETY: ours, never shared.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: installed once, freed only with the variable.
                unsafe { &*existing }
            }
        }
    }

    /// The wait list, if one was ever made (a committer that saw `WAITERS` finds it made).
    pub(crate) fn waiters_if_any(&self) -> Option<&SleeperList> {
        let p = self.waiters.load(Ordering::Acquire);
        // SAFETY: installed once, freed only with the variable.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// A sleeper is on the wait list: sets `WAITERS` if the variable is still at `word` (the
    /// unlocked word the sleeper read). Returns `false` if it changed (or is being committed).
    pub(crate) fn mark_waiters(&self, word: u64) -> bool {
        let mut cur = self.lock.load(Ordering::Acquire);
        loop {
            if cur & LOCKED != 0 || version(cur) != version(word) {
                return false;
            }
            // Even if the bit is already set (maybe by a sleeper gone since), write it: the
            // committer's locking CAS must read from this write to see us on the list.
            match self.lock.compare_exchange_weak(
                cur,
                cur | WAITERS,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Adds a reference (a handle's clone).
    pub(crate) fn inc_ref(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds a reference unless the last one is already gone (a sleeping transaction keeps the
    /// variables it waits on; one whose last handle was dropped, maybe by the transaction
    /// itself, can never be written again, and its free is already on its way).
    pub(crate) fn try_inc_ref(&self) -> bool {
        let mut n = self.refs.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match self
                .refs
                .compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => n = actual,
            }
        }
    }

    /// Drops a reference; the last one frees the variable once no pinned reader can see it.
    ///
    /// # Safety
    ///
    /// The caller owns a reference to the live variable and gives it up.
    pub(crate) unsafe fn dec_ref(this: NonNull<VarHeader>) {
        // SAFETY: the caller owns a reference.
        let h = unsafe { this.as_ref() };
        if h.refs.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            let free = h.vtable.free;
            let p = SendPtr(this);
            // SAFETY: unreachable from new pins (no handle is left, and transactions that
            // reach it through their logs are pinned now); the closure only frees (and
            // contains a panicking `Drop` of the value: it runs inside some unrelated pin).
            unsafe {
                reclaim::pin().defer(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        free(p.into_inner())
                    }));
                    if let Err(payload) = r {
                        crate::failure::drop_payload(payload);
                    }
                })
            };
        }
    }
}

/// A `NonNull<VarHeader>` sent to the epoch collector.
struct SendPtr(NonNull<VarHeader>);

impl SendPtr {
    fn into_inner(self) -> NonNull<VarHeader> {
        self.0
    }
}

// SAFETY: the header belongs to a `TVar<T>` with `T: Send + Sync`; the receiver only frees it.
unsafe impl Send for SendPtr {}

/// A transactional variable holding a `T`.
///
/// Read and write it inside [`atomically`](crate::stm::atomically); clones are handles on the
/// same variable.
///
/// ```
/// use ito::stm::{atomically, TVar};
/// let a = TVar::new(10);
/// let b = TVar::new(0);
/// atomically(|tx| {
///     let x = a.read(tx)?;
///     a.write(tx, x - 3)?;
///     b.modify(tx, |v| v + 3)
/// });
/// assert_eq!((a.read_atomic(), b.read_atomic()), (7, 3));
/// ```
pub struct TVar<T> {
    ptr: NonNull<VarHeader>,
    _marker: PhantomData<T>,
}

// SAFETY: a TVar hands out clones of `T` to any thread and takes `T`s from any thread.
unsafe impl<T: Send + Sync> Send for TVar<T> {}
// SAFETY: as above; all shared state is behind atomics, the lock word or the epoch.
unsafe impl<T: Send + Sync> Sync for TVar<T> {}

impl<T: Clone + Send + Sync + 'static> TVar<T> {
    /// A new variable holding `value`.
    ///
    /// ```
    /// let v = ito::stm::TVar::new(String::from("hi"));
    /// assert_eq!(v.read_atomic(), "hi");
    /// ```
    pub fn new(value: T) -> TVar<T> {
        let (words, value) = if is_scalar::<T>() {
            (to_words(value), std::ptr::null_mut())
        } else {
            ([0; 2], alloc::alloc_value(value))
        };
        let inner = Box::new(VarCell {
            header: VarHeader {
                lock: AtomicU64::new(0),
                words: [AtomicU64::new(words[0]), AtomicU64::new(words[1])],
                refs: AtomicUsize::new(1),
                waiters: AtomicPtr::new(std::ptr::null_mut()),
                vtable: &VTableOf::<T>::VTABLE,
            },
            value: AtomicPtr::new(value),
        });
        TVar {
            ptr: NonNull::from(Box::leak(inner)).cast(),
            _marker: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn header(&self) -> NonNull<VarHeader> {
        self.ptr
    }

    #[inline]
    fn inner(&self) -> &VarCell<T> {
        // SAFETY: a handle keeps the variable alive; `VarCell<T>` starts with the header.
        unsafe { self.ptr.cast::<VarCell<T>>().as_ref() }
    }

    /// Reads the variable in `tx`: its value in the transaction's snapshot, or what `tx`
    /// wrote to it.
    ///
    /// ```
    /// use ito::stm::{atomically, TVar};
    /// let v = TVar::new(vec![1, 2]);
    /// let len = atomically(|tx| Ok(v.read(tx)?.len()));
    /// assert_eq!(len, 2);
    /// ```
    #[inline]
    pub fn read(&self, tx: &mut Tx) -> StmResult<T> {
        tx.check_failed()?;
        let hdr = self.header();
        if let Some(p) = tx.pending(hdr) {
            return Ok(match p {
                // SAFETY: a pending value of this variable: a scalar's words.
                Pending::Inline(words) => unsafe { from_words(words) },
                // SAFETY: a pending value of this variable: a `T` owned by the log.
                Pending::Boxed(p) => unsafe { (*p.cast::<T>()).clone() },
            });
        }
        loop {
            match self.read_consistent(Some(&tx.guard)) {
                Some((v, word)) if version(word) <= tx.rv => {
                    tx.log_read(hdr, word);
                    return Ok(v);
                }
                // Written after our snapshot was taken: move the clock and the snapshot up to
                // it, if nothing read so far changed.
                Some((_, word)) => {
                    tx.advance_clock(version(word));
                    if !tx.extend() {
                        return tx.conflict();
                    }
                }
                // Newer than a snapshot we cannot move, or a commit in progress.
                _ => return tx.conflict(),
            }
        }
    }

    /// Writes `value` to the variable in `tx`; other transactions see it once `tx` commits.
    ///
    /// ```
    /// use ito::stm::{atomically, TVar};
    /// let v = TVar::new(1);
    /// atomically(|tx| v.write(tx, 2));
    /// assert_eq!(v.read_atomic(), 2);
    /// ```
    #[inline]
    pub fn write(&self, tx: &mut Tx, value: T) -> StmResult<()> {
        tx.check_failed()?;
        let value = if is_scalar::<T>() {
            Pending::Inline(to_words(value))
        } else {
            Pending::Boxed(alloc::alloc_value(value).cast())
        };
        tx.log_write(self.header(), value);
        Ok(())
    }

    /// Replaces the value with `f(value)` in `tx`.
    ///
    /// ```
    /// use ito::stm::{atomically, TVar};
    /// let v = TVar::new(20);
    /// atomically(|tx| v.modify(tx, |x| x + 1));
    /// assert_eq!(v.read_atomic(), 21);
    /// ```
    #[inline]
    pub fn modify(&self, tx: &mut Tx, f: impl FnOnce(T) -> T) -> StmResult<()> {
        let v = self.read(tx)?;
        self.write(tx, f(v))
    }

    /// Writes `value` in `tx` and returns the value it replaces.
    ///
    /// ```
    /// use ito::stm::{atomically, TVar};
    /// let v = TVar::new("old");
    /// assert_eq!(atomically(|tx| v.replace(tx, "new")), "old");
    /// ```
    #[inline]
    pub fn replace(&self, tx: &mut Tx, value: T) -> StmResult<T> {
        let old = self.read(tx)?;
        self.write(tx, value)?;
        Ok(old)
    }

    /// The value as of one consistent instant, outside any transaction (GHC's `readTVarIO`).
    ///
    /// ```
    /// let v = ito::stm::TVar::new(3);
    /// assert_eq!(v.read_atomic(), 3);
    /// ```
    pub fn read_atomic(&self) -> T {
        // (Scalars are read without a pin: nothing of theirs is ever freed while we look.)
        let guard = (!is_scalar::<T>()).then(reclaim::pin);
        loop {
            if let Some((v, _)) = self.read_consistent(guard.as_ref()) {
                return v;
            }
            crate::loom::spin_loop();
        }
    }

    /// One attempt at a consistent read: the value and the (unlocked) lock word it belongs to,
    /// or `None` if a commit was in progress.
    #[inline]
    pub(crate) fn read_consistent(&self, _guard: Option<&Guard>) -> Option<(T, u64)> {
        let inner = self.inner();
        let before = inner.header.lock.load(Ordering::Acquire);
        if before & LOCKED != 0 {
            return None;
        }
        if is_scalar::<T>() {
            // A seqlock read (module docs): the `Acquire` word loads keep the second lock load
            // after them, and one that reads a later commit's word makes that load see the
            // commit's lock.
            let w0 = inner.header.words[0].load(Ordering::Acquire);
            let w1 = if size_of::<T>() > 8 {
                inner.header.words[1].load(Ordering::Acquire)
            } else {
                0
            };
            let after = inner.header.lock.load(Ordering::Acquire);
            return ((before ^ after) & !WAITERS == 0).then(|| {
                // SAFETY: unchanged and unlocked around the loads: the words one commit (or
                // `new`) stored with `to_words::<T>`.
                (unsafe { from_words([w0, w1]) }, before)
            });
        }
        let p = inner.value.load(Ordering::Acquire);
        // SAFETY: the pointee is never mutated, and it is not freed while we are pinned (a
        // commit that replaces it defers the free past our pin).
        let v = unsafe { (*p).clone() };
        // The value load is `Acquire`: if it saw a newer commit's pointer, this load sees that
        // commit's lock (or later), and the words differ.
        let after = inner.header.lock.load(Ordering::Acquire);
        // (A sleeper setting WAITERS in between changes nothing we read.)
        ((before ^ after) & !WAITERS == 0).then_some((v, before))
    }
}

impl<T> Clone for TVar<T> {
    /// Another handle on the same variable.
    fn clone(&self) -> Self {
        // SAFETY: our handle keeps the header alive.
        unsafe { self.ptr.as_ref() }.inc_ref();
        TVar {
            ptr: self.ptr,
            _marker: PhantomData,
        }
    }
}

impl<T> Drop for TVar<T> {
    fn drop(&mut self) {
        // SAFETY: we own this handle's reference.
        unsafe { VarHeader::dec_ref(self.ptr) };
    }
}

impl<T: std::fmt::Debug + Clone + Send + Sync + 'static> std::fmt::Debug for TVar<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TVar").field(&self.read_atomic()).finish()
    }
}

struct VTableOf<T>(PhantomData<T>);

impl<T: Send + Sync + 'static> VTableOf<T> {
    const VTABLE: VTable = VTable {
        publish: publish::<T>,
        drop_value: drop_value::<T>,
        free: free::<T>,
    };
}

/// # Safety
///
/// `VarHeader::publish`'s contract, for a `TVar<T>`.
unsafe fn publish<T: Send + Sync + 'static>(h: NonNull<VarHeader>, value: *mut ()) -> *mut () {
    // SAFETY: the header of an `VarCell<T>`.
    let inner = unsafe { h.cast::<VarCell<T>>().as_ref() };
    // We hold the lock: no other writer, so a load and a store (no read-modify-write).
    let old = inner.value.load(Ordering::Relaxed);
    inner.value.store(value.cast::<T>(), Ordering::Release);
    old.cast()
}

/// # Safety
///
/// `value` is a `T` from `alloc::alloc_value`, freed once (never published, or retired).
unsafe fn drop_value<T>(value: *mut ()) {
    // SAFETY: the caller's contract.
    unsafe { alloc::free_value(value.cast::<T>()) };
}

/// # Safety
///
/// The last reference to an `VarCell<T>` is gone and no pinned reader can reach it.
unsafe fn free<T>(h: NonNull<VarHeader>) {
    // SAFETY: the caller's contract.
    let inner = unsafe { Box::from_raw(h.cast::<VarCell<T>>().as_ptr()) };
    let waiters = inner.header.waiters.load(Ordering::Relaxed);
    if !waiters.is_null() {
        // SAFETY: installed by `VarHeader::waiters`, freed here only.
        drop(unsafe { Box::from_raw(waiters) });
    }
    let value = inner.value.load(Ordering::Relaxed);
    if !value.is_null() {
        // SAFETY: the current value of a non-scalar, owned by the variable.
        unsafe { alloc::free_value(value) };
    }
}
