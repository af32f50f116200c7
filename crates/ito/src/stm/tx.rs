//! A transaction: its snapshot time, read log and write log, validation and commit (TL2).
//!
//! - **Begin**: pin the epoch, `rv = clock`.
//! - **Read** a variable not written by this transaction: the lock word, the value (cloned),
//!   the lock word again. Unlocked, unchanged and `version <= rv` means the clone is a value
//!   that was current at `rv`: the transaction's view stays a snapshot (opacity). A newer
//!   version first tries to *extend* the snapshot (if nothing read so far changed, move `rv`
//!   to now); otherwise the attempt aborts.
//! - **Write**: into the log only (a boxed value per variable; the latest write wins).
//! - **Commit** (only if something was written): lock every written variable (a failed lock
//!   aborts; nobody waits while holding locks), `wv = clock + 1`, re-check that every read
//!   variable is unlocked (or ours) with `version <= rv` (skipped if `wv == rv + 1`: nobody
//!   committed since we began), then publish each value and unlock with version `wv`; last,
//!   wake the transactions sleeping on the written variables.
//!
//! The serial mode (`contention`) lets a transaction that keeps losing run alone: committers
//! check the flag after locking their write set and abort while another transaction holds it.

use std::cell::Cell;
use std::ptr::NonNull;

use super::reclaim::{self, Guard};
use super::tvar::{Header, LOCKED};
use super::{Kind, StmError, StmResult};
use crate::loom::{AtomicBool, AtomicU64, Ordering, fence};

/// Process-wide STM state.
pub(crate) struct Global {
    /// The version clock: the version of the newest commit.
    pub(crate) clock: AtomicU64,
    /// A transaction runs in serial mode: other committers abort until it is done.
    pub(crate) serial: AtomicBool,
}

impl Global {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Global {
        Global {
            clock: AtomicU64::new(0),
            serial: AtomicBool::new(false),
        }
    }

    #[cfg(all(loom, test))]
    pub(crate) fn new() -> Global {
        Global {
            clock: AtomicU64::new(0),
            serial: AtomicBool::new(false),
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) struct ReadEntry {
    pub(crate) hdr: NonNull<Header>,
    /// The lock word the value was read under (unlocked).
    pub(crate) word: u64,
}

pub(crate) struct WriteEntry {
    pub(crate) hdr: NonNull<Header>,
    /// A `Box<T>` from `into_raw`, or null once published.
    pub(crate) value: *mut (),
}

/// A variable locked by a commit: its word before locking, and its newest write.
struct Locked {
    hdr: NonNull<Header>,
    prev: u64,
    write: usize,
}

thread_local! {
    /// Log buffers, reused across transactions of this thread.
    static BUFFERS: Cell<Option<Buffers>> = const { Cell::new(None) };
}

#[derive(Default)]
struct Buffers {
    reads: Vec<ReadEntry>,
    writes: Vec<WriteEntry>,
    locked: Vec<Locked>,
}

/// A running transaction: pass it to [`TVar::read`](super::TVar::read) and friends.
///
/// Created by [`atomically`](super::atomically) for each attempt; a transaction's reads see one
/// consistent snapshot, and its writes become visible all at once when it commits.
pub struct Tx {
    pub(crate) global: &'static Global,
    pub(crate) guard: Guard,
    pub(crate) rv: u64,
    pub(crate) reads: Vec<ReadEntry>,
    pub(crate) writes: Vec<WriteEntry>,
    locked: Vec<Locked>,
    /// Writes below this index belong to an enclosing `or_else` branch: a new write to the
    /// same variable is appended rather than overwriting, so the branch can be rolled back.
    floor: usize,
    /// An operation saw a conflict: the attempt is doomed, whatever the closure returns.
    failed: Option<Kind>,
    /// This attempt runs in serial mode.
    serial: bool,
}

impl Tx {
    pub(crate) fn begin(global: &'static Global, serial: bool) -> Tx {
        let guard = reclaim::pin();
        let rv = global.clock.load(Ordering::Acquire);
        let b = BUFFERS.with(|b| b.take()).unwrap_or_default();
        Tx {
            global,
            guard,
            rv,
            reads: b.reads,
            writes: b.writes,
            locked: b.locked,
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
    pub(crate) fn pending(&self, hdr: NonNull<Header>) -> Option<*mut ()> {
        self.writes
            .iter()
            .rev()
            .find(|w| w.hdr == hdr)
            .map(|w| w.value)
    }

    /// Logs a write of `value` (a `Box<T>` from `into_raw`) to `hdr`.
    #[inline]
    pub(crate) fn log_write(&mut self, hdr: NonNull<Header>, value: *mut ()) {
        if let Some(i) = self.writes.iter().rposition(|w| w.hdr == hdr) {
            if i >= self.floor {
                let old = std::mem::replace(&mut self.writes[i].value, value);
                // SAFETY: a pending value of this variable, never published, now unreferenced.
                unsafe { drop_pending(hdr, old) };
                return;
            }
        }
        self.writes.push(WriteEntry { hdr, value });
    }

    /// Records a consistent read.
    #[inline]
    pub(crate) fn log_read(&mut self, hdr: NonNull<Header>, word: u64) {
        self.reads.push(ReadEntry { hdr, word });
    }

    /// A variable's version is newer than the snapshot: move the snapshot to now if nothing
    /// read so far has changed. Returns whether it did.
    pub(crate) fn extend(&mut self) -> bool {
        let now = self.global.clock.load(Ordering::Acquire);
        let unchanged = self.reads.iter().all(|r| {
            // SAFETY: logged variables stay allocated while we are pinned.
            unsafe { r.hdr.as_ref() }.lock.load(Ordering::Acquire) == r.word
        });
        if unchanged {
            self.rv = now;
        }
        unchanged
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
        let mark = self.writes.len();
        let floor = std::mem::replace(&mut self.floor, mark);
        let r = first(self);
        self.floor = floor;
        match r {
            Err(StmError(Kind::Retry)) if self.failed.is_none() => {
                self.truncate_writes(mark);
                second(self)
            }
            r => r,
        }
    }

    fn truncate_writes(&mut self, len: usize) {
        for w in self.writes.drain(len..) {
            if !w.value.is_null() {
                // SAFETY: a pending value, never published.
                unsafe { drop_pending(w.hdr, w.value) };
            }
        }
    }

    /// The closure's outcome, overridden by a conflict it may have swallowed.
    pub(crate) fn settle<R>(&self, r: StmResult<R>) -> StmResult<R> {
        self.check_failed()?;
        r
    }

    /// Commits the logged writes (see the module docs). On `Err`, nothing was published.
    pub(crate) fn commit(&mut self) -> Result<(), Kind> {
        if self.writes.is_empty() {
            // Read-only: every read was consistent at `rv`.
            return Ok(());
        }
        self.locked.clear();
        for i in (0..self.writes.len()).rev() {
            let hdr = self.writes[i].hdr;
            if self.locked.iter().any(|l| l.hdr == hdr) {
                continue; // an older write to a variable already taken care of
            }
            // SAFETY: logged variables stay allocated while we are pinned.
            let lock = &unsafe { hdr.as_ref() }.lock;
            let prev = lock.load(Ordering::Relaxed);
            if prev & LOCKED != 0
                || lock
                    .compare_exchange(prev, prev | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
            {
                self.unlock_all();
                return Err(Kind::Conflict);
            }
            self.locked.push(Locked {
                hdr,
                prev,
                write: i,
            });
        }
        // Pairs with the serial transaction's flag store: either it sees our locks (or our new
        // versions) and runs again, or we see its flag and step back.
        if !self.serial && self.global.serial.load(Ordering::SeqCst) {
            self.unlock_all();
            return Err(Kind::Conflict);
        }
        let wv = self.global.clock.fetch_add(1, Ordering::AcqRel) + 1;
        if wv != self.rv + 1 && !self.validate() {
            self.unlock_all();
            return Err(Kind::Conflict);
        }
        for l in &self.locked {
            let value = std::mem::replace(&mut self.writes[l.write].value, std::ptr::null_mut());
            // SAFETY: we hold the lock; the value was written to this variable; pinned.
            unsafe { Header::publish(l.hdr, value, &self.guard) };
            // SAFETY: as above.
            unsafe { l.hdr.as_ref() }
                .lock
                .store(wv << 1, Ordering::Release);
        }
        // Pairs with the fence of a retrying transaction (`wait.rs`).
        fence(Ordering::SeqCst);
        for l in &self.locked {
            // SAFETY: pinned.
            unsafe { l.hdr.as_ref() }.waiters.wake_all();
        }
        self.truncate_writes(0);
        Ok(())
    }

    /// Every read variable is unlocked (or locked by us) with a version within the snapshot.
    fn validate(&self) -> bool {
        self.reads.iter().all(|r| {
            // SAFETY: pinned.
            let word = unsafe { r.hdr.as_ref() }.lock.load(Ordering::Acquire);
            let word = if word & LOCKED != 0 {
                match self.locked.iter().find(|l| l.hdr == r.hdr) {
                    Some(l) => l.prev,
                    None => return false,
                }
            } else {
                word
            };
            word >> 1 <= self.rv
        })
    }

    fn unlock_all(&mut self) {
        for l in self.locked.drain(..) {
            // SAFETY: pinned; we hold this lock, and nothing changed under it.
            unsafe { l.hdr.as_ref() }
                .lock
                .store(l.prev, Ordering::Release);
        }
    }

    /// Whether a variable this transaction read has changed since (a retrying transaction's
    /// last look before sleeping).
    pub(crate) fn reads_changed(&self) -> bool {
        self.reads.iter().any(|r| {
            // SAFETY: the caller keeps the variables alive.
            unsafe { r.hdr.as_ref() }.lock.load(Ordering::SeqCst) != r.word
        })
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        self.truncate_writes(0);
        self.reads.clear();
        self.locked.clear();
        let b = Buffers {
            reads: std::mem::take(&mut self.reads),
            writes: std::mem::take(&mut self.writes),
            locked: std::mem::take(&mut self.locked),
        };
        // During thread teardown the buffers are simply dropped.
        let _ = BUFFERS.try_with(|c| c.set(Some(b)));
    }
}

/// Frees a pending value of `hdr`'s variable.
///
/// # Safety
///
/// `value` is a never-published value written to that variable, freed once.
unsafe fn drop_pending(hdr: NonNull<Header>, value: *mut ()) {
    // SAFETY: the variable is alive (pinned or referenced) and the value is its type's.
    unsafe { (hdr.as_ref().drop_value_fn())(value) }
}
