//! A transaction: its snapshot time, read log and write log, validation and commit (TL2).
//!
//! - **Begin**: pin the epoch, `rv = clock`.
//! - **Read** a variable not written by this transaction: the lock word, the value (scalars:
//!   their words; other types: cloned), the lock word again. Unlocked, unchanged and
//!   `version <= rv` means the value was current at `rv`: the transaction's view stays a
//!   snapshot (opacity). A newer version first tries to *extend* the snapshot (if nothing read
//!   so far changed, move `rv` to now); otherwise the attempt aborts.
//! - **Write**: into the log only (a scalar's words, or a boxed value; the latest write wins).
//! - **Commit** (only if something was written): lock every written variable (a failed lock
//!   aborts; nobody waits while holding locks), `wv = clock + 1` (and above the old version of
//!   every written variable) *without* writing the clock (TL2's GV5), re-check that every read
//!   variable is unlocked (or ours) with `version <= rv`, then publish each value and unlock
//!   with version `wv`; last, wake the transactions sleeping on the written variables. A reader
//!   that meets a version above its snapshot moves the clock up to it and extends.
//!
//! The log lives in one heap block per thread, reused by every transaction of the thread, so
//! a transaction allocates nothing (beyond boxed values of non-scalar types). A write entry
//! carries its variable's lock state during the commit, so locking, validating and publishing
//! walk the write log itself.
//!
//! The serial mode (`contention`) lets a transaction that keeps losing run alone: committers
//! check the flag after locking their write set and abort while another transaction holds it.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use super::after_commit::{Notify, retire};
use super::global::Global;
use super::reclaim::{self, Guard};
use super::tvar::{LOCKED, VERSION_SHIFT, VarHeader, WAITERS, version};
use super::{Kind, StmError, StmResult};
use crate::future::cell::{CellHeader, CellWaiter, ListGuard, TxState};
use crate::loom::{Ordering, fence};

#[derive(Clone, Copy)]
pub(crate) struct ReadEntry {
    pub(crate) hdr: NonNull<VarHeader>,
    /// The lock word the value was read under (unlocked).
    pub(crate) word: u64,
}

/// A value written by a transaction, not yet published.
#[derive(Clone, Copy)]
pub(crate) enum Pending {
    /// A scalar's words (`tvar::is_scalar`): nothing to allocate or free.
    Inline([u64; 2]),
    /// A `T` from `alloc::alloc_value`, or null once published or freed.
    Boxed(*mut ()),
}

pub(crate) struct WriteEntry {
    pub(crate) hdr: NonNull<VarHeader>,
    pub(crate) value: Pending,
    /// During a commit: the lock word before this entry's lock (valid while `locked`).
    prev: u64,
    /// During a commit: this entry holds its variable's lock (the newest write to a variable
    /// takes it; an older one, left by an `or_else` branch, is shadowed and does not).
    locked: bool,
}

/// A future's cell read while empty: the commit checks it is still empty. Holds a reference.
pub(crate) struct CellRead {
    pub(crate) cell: NonNull<CellHeader>,
}

/// A promise this transaction completes. Holds a reference to the cell.
pub(crate) struct CellWrite {
    pub(crate) cell: NonNull<CellHeader>,
    /// A `Box<Result<T, Failure>>` from `into_raw`, or null once published.
    pub(crate) value: *mut (),
    /// Writes the value into the claimed cell and publishes it; returns its waiter list.
    pub(crate) publish: unsafe fn(NonNull<CellHeader>, *mut ()) -> *const CellWaiter,
    /// Frees an unpublished value.
    pub(crate) drop_value: unsafe fn(*mut ()),
}

thread_local! {
    /// This thread's log, between transactions.
    static LOG: Cell<Option<Box<Log>>> = const { Cell::new(None) };
}

/// A transaction's logs (empty between transactions).
#[derive(Default)]
pub(crate) struct Log {
    pub(crate) reads: Vec<ReadEntry>,
    pub(crate) writes: Vec<WriteEntry>,
    pub(crate) cell_reads: Vec<CellRead>,
    pub(crate) cell_writes: Vec<CellWrite>,
    /// Some variable has two entries in `writes` (an `or_else` branch wrote a variable that
    /// was written before it): the commit must skip the older ones.
    shadowed: bool,
}

/// A running transaction: pass it to [`TVar::read`](super::TVar::read) and friends.
///
/// Created by [`atomically`](super::atomically) for each attempt; a transaction's reads see one
/// consistent snapshot, and its writes become visible all at once when it commits.
///
/// ```
/// use ito::stm::{TVar, Tx, atomically};
/// let (a, b) = (TVar::new(10), TVar::new(0));
/// let moved = atomically(|tx: &mut Tx| {
///     let n = a.replace(tx, 0)?;
///     b.modify(tx, |v| v + n)?;
///     Ok(n)
/// });
/// assert_eq!((moved, a.read_atomic(), b.read_atomic()), (10, 0, 10));
/// ```
pub struct Tx {
    pub(crate) global: &'static Global,
    pub(crate) guard: Guard,
    pub(crate) rv: u64,
    /// The thread's log, given back on drop.
    pub(crate) log: ManuallyDrop<Box<Log>>,
    /// Writes below this index belong to an enclosing `or_else` branch: a new write to the
    /// same variable is appended rather than overwriting, so the branch can be rolled back.
    floor: usize,
    /// An operation saw a conflict: the attempt is doomed, whatever the closure returns.
    failed: Option<Kind>,
    /// This attempt runs in serial mode.
    serial: bool,
}

impl Tx {
    #[inline]
    pub(crate) fn begin(global: &'static Global, serial: bool) -> Tx {
        let guard = reclaim::pin();
        let rv = global.clock.load(Ordering::Acquire);
        // Pairs with the committer's fence between locking and sampling the clock (`commit`):
        // a commit whose version is within our snapshot had its locks visible to our reads.
        fence(Ordering::SeqCst);
        // During thread teardown (or under loom, whose threads share this slot) there may be
        // none: make one.
        let log = LOG.try_with(Cell::take).ok().flatten().unwrap_or_default();
        Tx {
            global,
            guard,
            rv,
            log: ManuallyDrop::new(log),
            floor: 0,
            failed: None,
            serial,
        }
    }

    /// The error every operation returns once the attempt is doomed.
    #[inline]
    pub(crate) fn check_failed(&self) -> StmResult<()> {
        match self.failed {
            None => Ok(()),
            Some(k) => Err(StmError(k)),
        }
    }

    #[cold]
    pub(crate) fn conflict<T>(&mut self) -> StmResult<T> {
        self.failed = Some(Kind::Conflict);
        Err(StmError(Kind::Conflict))
    }

    /// The newest pending write to `hdr`, if any.
    #[inline]
    pub(crate) fn pending(&self, hdr: NonNull<VarHeader>) -> Option<Pending> {
        self.log
            .writes
            .iter()
            .rev()
            .find(|w| w.hdr == hdr)
            .map(|w| w.value)
    }

    /// Logs a write of `value` to `hdr`.
    #[inline]
    pub(crate) fn log_write(&mut self, hdr: NonNull<VarHeader>, value: Pending) {
        let log = &mut **self.log;
        if let Some(i) = log.writes.iter().rposition(|w| w.hdr == hdr) {
            if i >= self.floor {
                let old = std::mem::replace(&mut log.writes[i].value, value);
                // SAFETY: a pending value of this variable, never published, now unreferenced.
                unsafe { drop_pending(hdr, old) };
                return;
            }
            log.shadowed = true;
        }
        log.writes.push(WriteEntry {
            hdr,
            value,
            prev: 0,
            locked: false,
        });
    }

    /// Records a consistent read.
    #[inline]
    pub(crate) fn log_read(&mut self, hdr: NonNull<VarHeader>, word: u64) {
        self.log.reads.push(ReadEntry { hdr, word });
    }

    /// A variable's version is newer than the snapshot: move the snapshot to now if nothing
    /// read so far has changed. Returns whether it did.
    pub(crate) fn extend(&mut self) -> bool {
        let now = self.global.clock.load(Ordering::Acquire);
        if now == self.rv && self.log.reads.is_empty() && self.log.cell_reads.is_empty() {
            return true;
        }
        // As in `begin`: the reads from here on see the locks of every commit whose version is
        // within `now`.
        fence(Ordering::SeqCst);
        let unchanged = self.log.reads.iter().all(|r| {
            // SAFETY: logged variables stay allocated while we are pinned.
            let now = unsafe { r.hdr.as_ref() }.lock.load(Ordering::Acquire);
            // A sleeper setting WAITERS changes nothing we read.
            now & !WAITERS == r.word & !WAITERS
        }) && self.cells_still_empty(false);
        if unchanged {
            self.rv = now;
        }
        unchanged
    }

    /// A variable's version is newer than the snapshot, and newer than the clock, since
    /// commits do not move the clock: move the clock up to it first, so that extending the
    /// snapshot can reach it. (Only readers write the clock, and only when they meet a
    /// version from a commit that happened after they began.)
    #[cold]
    pub(crate) fn advance_clock(&self, version: u64) {
        self.global.clock.fetch_max(version, Ordering::AcqRel);
    }

    /// A cell was seen complete. It has no version, so make sure the snapshot can include it:
    /// if anything committed since the snapshot was taken, the snapshot must move to now
    /// (a commit that wrote a variable we read and completed this cell would otherwise show
    /// us the variable before it and the cell after it). Returns `false` on a conflict.
    ///
    /// Cells seen empty must still be empty, whatever the clock says: plain completions do
    /// not move it, and a cell seen empty, then another seen complete that was completed
    /// after it, is a view no instant had.
    #[inline]
    pub(crate) fn observe_complete_cell(&mut self) -> bool {
        if self.log.reads.is_empty() && self.log.cell_reads.is_empty() {
            return true;
        }
        // Commits do not move the clock (see `commit`), so only a validation tells.
        self.extend() && self.cells_still_empty(false)
    }
    /// Runs `first`; if it calls [`retry`](super::retry), undoes its writes and runs `second`
    /// instead (GHC's `orElse`). The reads of `first` stay in the transaction: if `second`
    /// retries too, the whole transaction waits for a change to anything either branch read.
    ///
    /// ```
    /// use ito::stm::{atomically, retry, TVar};
    /// let empty = TVar::new(None::<u32>);
    /// let full = TVar::new(Some(5));
    /// let take = |v: &TVar<Option<u32>>, tx: &mut ito::stm::Tx| match v.read(tx)? {
    ///     Some(x) => { v.write(tx, None)?; Ok(x) }
    ///     None => retry(),
    /// };
    /// let got = atomically(|tx| tx.or_else(|tx| take(&empty, tx), |tx| take(&full, tx)));
    /// assert_eq!(got, 5);
    /// assert_eq!(full.read_atomic(), None);
    /// ```
    pub fn or_else<R>(
        &mut self,
        first: impl FnOnce(&mut Tx) -> StmResult<R>,
        second: impl FnOnce(&mut Tx) -> StmResult<R>,
    ) -> StmResult<R> {
        self.check_failed()?;
        let mark = self.log.writes.len();
        let cell_mark = self.log.cell_writes.len();
        let floor = std::mem::replace(&mut self.floor, mark);
        let r = first(self);
        self.floor = floor;
        match r {
            Err(StmError(Kind::Retry)) if self.failed.is_none() => {
                self.truncate_writes(mark);
                self.truncate_cell_writes(cell_mark);
                second(self)
            }
            r => r,
        }
    }

    fn truncate_writes(&mut self, len: usize) {
        for w in self.log.writes.drain(len..) {
            // SAFETY: a pending value, never published (published ones are nulled).
            unsafe { drop_pending(w.hdr, w.value) };
        }
        if len == 0 {
            self.log.shadowed = false;
        }
    }

    fn truncate_cell_writes(&mut self, len: usize) {
        for w in self.log.cell_writes.drain(len..) {
            if !w.value.is_null() {
                // SAFETY: an unpublished value of this kind of cell.
                unsafe { (w.drop_value)(w.value) };
            }
            // SAFETY: the reference taken when the write was logged.
            unsafe { CellHeader::dec_ref(w.cell) };
        }
    }

    fn clear_cell_reads(&mut self) {
        for r in self.log.cell_reads.drain(..) {
            // SAFETY: the reference taken when the read was logged.
            unsafe { CellHeader::dec_ref(r.cell) };
        }
    }

    /// The pending completion of `cell` by this transaction, if any.
    pub(crate) fn pending_cell(&self, cell: NonNull<CellHeader>) -> Option<*mut ()> {
        self.log
            .cell_writes
            .iter()
            .find(|w| w.cell == cell)
            .map(|w| w.value)
    }

    /// Logs that `cell` was seen empty (takes a reference).
    pub(crate) fn log_cell_read(&mut self, cell: NonNull<CellHeader>) {
        if !self.log.cell_reads.iter().any(|r| r.cell == cell) {
            // SAFETY: the caller's handle keeps the cell alive.
            unsafe { cell.as_ref() }.inc_ref();
            self.log.cell_reads.push(CellRead { cell });
        }
    }

    /// Logs the completion of an empty `cell` (takes a reference).
    pub(crate) fn log_cell_write(&mut self, w: CellWrite) {
        // SAFETY: the caller's handle keeps the cell alive.
        unsafe { w.cell.as_ref() }.inc_ref();
        self.log.cell_writes.push(w);
    }

    /// The closure's outcome, overridden by a conflict it may have swallowed.
    pub(crate) fn settle<R>(&self, r: StmResult<R>) -> StmResult<R> {
        self.check_failed()?;
        if let Err(StmError(Kind::Conflict)) = r {
            // Only this attempt's operations make conflicts, and they mark it failed: this one
            // was kept from another attempt, and returning it would run the closure for ever.
            panic!(
                "ito::stm: a transaction returned a conflict from an earlier attempt; \
                 propagate `StmError`s with `?` rather than keeping them"
            );
        }
        r
    }

    /// Commits the logged writes (see the module docs). On `Err`, nothing was published. On
    /// `Ok`, the promises it completed still have to notify their waiters: the caller runs the
    /// returned [`Notify`] once the transaction is over (their callbacks may well start
    /// transactions of their own).
    #[inline]
    pub(crate) fn commit(&mut self) -> Result<Notify, Kind> {
        if self.log.writes.is_empty() && self.log.cell_writes.is_empty() {
            // Read-only: every variable read was consistent at `rv`, every complete cell was
            // complete by then (`observe_complete_cell`); a cell seen empty must still be empty
            // (cells only go from empty to complete, so it was empty at `rv` too).
            return if self.cells_still_empty(false) {
                Ok(Notify(Vec::new()))
            } else {
                Err(Kind::Conflict)
            };
        }
        self.commit_writes()
    }

    fn commit_writes(&mut self) -> Result<Notify, Kind> {
        // Lock the write set; the version must be above the old version of every variable
        // written (see below).
        let Some(above) = self.lock_writes() else {
            return Err(Kind::Conflict);
        };
        // The promises we complete: lock them while still empty.
        let cells = if self.log.cell_writes.is_empty() {
            Vec::new()
        } else {
            match self.lock_cells() {
                Some(cells) => cells,
                None => {
                    self.unlock_all();
                    return Err(Kind::Conflict);
                }
            }
        };
        // Orders our locks before our clock sample for every reader, whose snapshot time is
        // a clock load followed by the same fence (`begin`, `extend`). Without it, locking and
        // sampling here against moving the clock (`advance_clock`) and reading there is a
        // store-buffering pattern: we could sample a clock older than a reader's snapshot (so
        // our version is within it) while the reader still sees our variables unlocked, and
        // it would read one of them before us and another after us
        // (`loom_stm_clock_sample_and_snapshot_are_ordered`). It also pairs with the serial
        // transaction's flag store: either it sees our locks (or our new versions) and runs
        // again, or we see its flag and step back.
        fence(Ordering::SeqCst);
        if !self.serial && self.global.serial.load(Ordering::SeqCst) {
            drop(cells);
            self.unlock_all();
            return Err(Kind::Conflict);
        }
        // TL2's GV5: the commit's version is the clock plus one, without writing the clock (a
        // shared read-modify-write per commit is what kept two threads from scaling). Versions
        // are no longer unique, so the read set is always validated. A reader that meets a
        // version above its snapshot moves the clock up to it (`advance_clock`) and extends.
        // Each variable's version must still grow with every commit to it (sleepers and
        // extensions compare words to see a change), so the version is also above the old
        // version of everything written.
        let wv = (self.global.clock.load(Ordering::Acquire) + 1).max(above);
        if !self.validate() || !self.cells_still_empty(true) {
            drop(cells);
            self.unlock_all();
            return Err(Kind::Conflict);
        }
        let mut waiters = false;
        for w in &mut self.log.writes {
            if !w.locked {
                continue; // shadowed: freed with the log below
            }
            // SAFETY: logged variables stay allocated while we are pinned.
            let h = unsafe { w.hdr.as_ref() };
            match &mut w.value {
                // SAFETY: we hold the lock; the words were written to this variable (by
                // `TVar::<T>::write`, so they are a `T`'s).
                Pending::Inline(words) => unsafe { h.publish_words(*words) },
                // SAFETY: we hold the lock; the value was written to this variable; pinned.
                Pending::Boxed(value) => unsafe { publish_boxed(&self.guard, w.hdr, value) },
            }
            // Unlock with the new version (and no WAITERS: we wake them below).
            h.lock.store(wv << VERSION_SHIFT, Ordering::Release);
            waiters |= w.prev & WAITERS != 0;
        }
        // Promises: claim them all, publish them all, and only then notify anyone, so that no
        // callback or woken waiter runs while one of them is still incomplete.
        let lists = if cells.is_empty() {
            Vec::new()
        } else {
            self.publish_cells(cells)
        };
        if waiters {
            self.wake_writes();
        }
        if !self.log.shadowed {
            // Every entry was published: nothing left to free.
            self.log.writes.clear();
        }
        // Otherwise the shadowed values (an `or_else` branch rewrote their variables) are
        // dropped with the transaction (`Drop for Tx`), not here: a value's `Drop` may panic,
        // and the caller drops the transaction while it holds the returned `Notify`, which
        // then still wakes the waiters of the promises we completed as the panic unwinds.
        if !self.log.cell_writes.is_empty() {
            self.truncate_cell_writes(0);
        }
        Ok(Notify(lists))
    }

    /// Locks the variable of every newest write, noting the word before each lock, and
    /// returns the least version above all those words. On a variable already locked, unlocks
    /// what it took and returns `None`: nobody waits while holding locks, so there is no
    /// deadlock.
    #[inline]
    fn lock_writes(&mut self) -> Option<u64> {
        if self.log.shadowed {
            return self.lock_writes_shadowed();
        }
        let mut above = 0;
        let mut ok = true;
        for w in &mut self.log.writes {
            match lock_one(w) {
                Some(v) => above = above.max(v),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            self.unlock_all();
            return None;
        }
        Some(above)
    }

    /// [`lock_writes`](Self::lock_writes) when an `or_else` branch left older writes to some
    /// variables: only the newest write to each variable takes its lock.
    #[cold]
    fn lock_writes_shadowed(&mut self) -> Option<u64> {
        let mut above = 0;
        for i in 0..self.log.writes.len() {
            let (w, newer) = self.log.writes[i..].split_first_mut().expect("in bounds");
            if newer.iter().any(|n| n.hdr == w.hdr) {
                continue; // an older write to a variable whose newest write takes the lock
            }
            match lock_one(w) {
                Some(v) => above = above.max(v),
                None => {
                    self.unlock_all();
                    return None;
                }
            }
        }
        Some(above)
    }

    /// Locks every promise the transaction completes while it is still empty (never
    /// waiting); `None` if one is not.
    #[cold]
    fn lock_cells<'c>(&self) -> Option<Vec<ListGuard<'c>>> {
        let mut cells = Vec::with_capacity(self.log.cell_writes.len());
        for w in &self.log.cell_writes {
            // SAFETY: the log holds a reference; the guard does not outlive the commit.
            cells.push(unsafe { w.cell.as_ref() }.try_lock_empty()?);
        }
        Some(cells)
    }

    /// Claims every locked promise, then publishes every value; returns their waiter lists,
    /// each with a reference to its cell, to notify once the transaction is over.
    #[cold]
    fn publish_cells(
        &mut self,
        cells: Vec<ListGuard<'_>>,
    ) -> Vec<(NonNull<CellHeader>, *const CellWaiter)> {
        for g in cells {
            g.into_claim();
        }
        let mut lists = Vec::new();
        for w in &mut self.log.cell_writes {
            let value = std::mem::replace(&mut w.value, std::ptr::null_mut());
            // SAFETY: we claimed the cell; the value is of its type.
            let list = unsafe { (w.publish)(w.cell, value) };
            if !list.is_null() {
                // A reference for the notification, which outlives the log.
                // SAFETY: the log holds a reference.
                unsafe { w.cell.as_ref() }.inc_ref();
                lists.push((w.cell, list));
            }
        }
        lists
    }

    /// After publishing: wakes the sleepers of every variable whose `WAITERS` bit the commit's
    /// locking CAS read.
    #[cold]
    fn wake_writes(&self) {
        for w in &self.log.writes {
            if w.locked && w.prev & WAITERS != 0 {
                // SAFETY: pinned.
                if let Some(list) = unsafe { w.hdr.as_ref() }.waiters_if_any() {
                    list.wake_all();
                }
            }
        }
    }

    /// Every cell read while empty is still empty (and not being completed or edited: a
    /// committer holding it might complete it with a write we depend on).
    ///
    /// `locked`: at commit, the cells this transaction completes are locked by it (checked
    /// empty when locked), so they are skipped; before that, they must be empty like the rest.
    #[inline]
    fn cells_still_empty(&self, locked: bool) -> bool {
        self.log.cell_reads.iter().all(|r| {
            (locked && self.log.cell_writes.iter().any(|w| w.cell == r.cell))
                // SAFETY: the log holds a reference.
                || unsafe { r.cell.as_ref() }.tx_state() == TxState::Empty
        })
    }

    /// Every read variable is unlocked (or locked by us) with a version within the snapshot.
    #[inline]
    fn validate(&self) -> bool {
        self.log.reads.iter().all(|r| {
            // SAFETY: pinned.
            let word = unsafe { r.hdr.as_ref() }.lock.load(Ordering::Acquire);
            let word = if word & LOCKED != 0 {
                match self.log.writes.iter().find(|w| w.locked && w.hdr == r.hdr) {
                    Some(w) => w.prev,
                    None => return false,
                }
            } else {
                word
            };
            version(word) <= self.rv
        })
    }

    #[cold]
    fn unlock_all(&mut self) {
        for w in &mut self.log.writes {
            if w.locked {
                w.locked = false;
                // SAFETY: pinned; we hold this lock, and nothing changed under it.
                unsafe { w.hdr.as_ref() }
                    .lock
                    .store(w.prev, Ordering::Release);
            }
        }
    }
}

impl Drop for Tx {
    #[inline]
    fn drop(&mut self) {
        if !self.log.writes.is_empty() {
            self.truncate_writes(0);
        }
        if !self.log.cell_writes.is_empty() {
            self.truncate_cell_writes(0);
        }
        if !self.log.cell_reads.is_empty() {
            self.clear_cell_reads();
        }
        self.log.reads.clear();
        // SAFETY: taken once, here; `self.log` is not used after this.
        let log = unsafe { ManuallyDrop::take(&mut self.log) };
        // During thread teardown the log is simply dropped.
        let _ = LOG.try_with(|c| c.set(Some(log)));
    }
}

/// Locks `w`'s variable (unless it is locked: `None`), notes the word before, and returns the
/// least version above it.
#[inline]
fn lock_one(w: &mut WriteEntry) -> Option<u64> {
    // SAFETY: logged variables stay allocated while we are pinned.
    let lock = &unsafe { w.hdr.as_ref() }.lock;
    let mut prev = lock.load(Ordering::Relaxed);
    loop {
        if prev & LOCKED != 0 {
            return None;
        }
        match lock.compare_exchange_weak(prev, prev | LOCKED, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => break,
            // Another committer (LOCKED now), or a sleeper setting WAITERS (the version cannot
            // change without the lock): look again.
            Err(actual) => prev = actual,
        }
    }
    w.prev = prev;
    w.locked = true;
    Some(version(prev) + 1)
}

/// Publishes a boxed value (nulling the log's pointer) and retires the value it replaces.
///
/// # Safety
///
/// The caller holds `hdr`'s lock, `*value` was written to that variable, and `guard` pins.
#[inline(never)]
unsafe fn publish_boxed(guard: &Guard, hdr: NonNull<VarHeader>, value: &mut *mut ()) {
    let value = std::mem::replace(value, std::ptr::null_mut());
    // SAFETY: the caller's contract.
    let old = unsafe { VarHeader::publish(hdr, value) };
    // SAFETY: replaced, so unreachable from new pins; a value of this variable.
    unsafe { retire(guard, old, hdr.as_ref().drop_value_fn()) };
}

/// Frees a pending value of `hdr`'s variable (a scalar's words need nothing).
///
/// # Safety
///
/// `value` is a never-published value written to that variable, freed once (or a null
/// boxed one: then nothing happens).
#[inline]
unsafe fn drop_pending(hdr: NonNull<VarHeader>, value: Pending) {
    if let Pending::Boxed(p) = value {
        if !p.is_null() {
            // SAFETY: the variable is alive (pinned or referenced) and the value is its type's.
            unsafe { (hdr.as_ref().drop_value_fn())(p) }
        }
    }
}

impl std::fmt::Debug for Tx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx")
            .field("read_version", &self.rv)
            .finish_non_exhaustive()
    }
}
