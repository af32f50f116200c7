//! Futures and promises as transactional cells.
//!
//! A future's completion cell goes from empty to complete once, so a transaction needs no
//! version for it: a complete cell is read like a constant; a cell seen empty is logged, and
//! the commit checks it is still empty; a promise completed by a transaction is logged with
//! its value, and the commit locks the empty cell (its list lock, never waiting), then, after
//! the variables are published, claims and publishes every such cell before notifying anyone.
//! So several promises complete all at once or not at all ([`multi_try_success`]), and a
//! transaction reading them sees all or none. (Code outside transactions may see them complete
//! one after the other, within the commit.)
//!
//! An empty future read with [`Future::read_tx`] retries: the transaction sleeps until the
//! future completes (or another variable it read is written).

use std::ptr::NonNull;
use std::sync::Arc;

use super::sleepers::Sleeper;
use super::tx::CellWrite;
use super::{StmResult, Tx, atomically, retry};
use crate::future::cell::{Action, CellHeader, CellWaiter, CompletionCell, Locked, TxState};
use crate::{Failure, Future, Promise};

impl<T: Clone + Send + Sync + 'static> Future<T> {
    /// Reads the future in a transaction: its result if complete; if not, the transaction
    /// [`retry`]s, and runs again once the future completes.
    ///
    /// ```
    /// use ito::stm::atomically;
    /// let p = ito::Promise::new();
    /// let f = p.future();
    /// let reader = std::thread::spawn(move || atomically(|tx| f.read_tx(tx)));
    /// p.success(5).unwrap();
    /// assert_eq!(reader.join().unwrap(), Ok(5));
    /// ```
    pub fn read_tx(&self, tx: &mut Tx) -> StmResult<Result<T, Failure>> {
        match self.try_read_tx(tx)? {
            Some(r) => Ok(r),
            None => retry(),
        }
    }

    /// Reads the future in a transaction without waiting: `None` while it is not complete
    /// (and the commit then checks it still is not).
    ///
    /// ```
    /// use ito::stm::atomically;
    /// let p = ito::Promise::<u8>::new();
    /// let f = p.future();
    /// assert_eq!(atomically(|tx| f.try_read_tx(tx)), None);
    /// p.success(1).unwrap();
    /// assert_eq!(atomically(|tx| f.try_read_tx(tx)), Some(Ok(1)));
    /// ```
    pub fn try_read_tx(&self, tx: &mut Tx) -> StmResult<Option<Result<T, Failure>>> {
        tx.check_failed()?;
        // The handle's own pointer: a log entry made from it may be the last reference.
        let cell = self.cell_ptr();
        // Our own completion first: if another got there before us, our commit will fail.
        if let Some(p) = tx.pending_cell(cell) {
            // SAFETY: a pending completion of this cell is a `Box<Result<T, Failure>>`.
            return Ok(Some(unsafe { (*p.cast::<Result<T, Failure>>()).clone() }));
        }
        if let Some(v) = self.inner().get() {
            if !tx.observe_complete_cell() {
                return tx.conflict();
            }
            return Ok(Some(v.clone()));
        }
        match self.header().tx_state() {
            TxState::Complete => {
                if !tx.observe_complete_cell() {
                    return tx.conflict();
                }
                Ok(self.inner().get().cloned())
            }
            TxState::Busy => tx.conflict(),
            TxState::Empty => {
                tx.log_cell_read(cell);
                Ok(None)
            }
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Promise<T> {
    /// Completes the promise with `result` when the transaction commits, if it is not
    /// complete by then. Returns `false` (and logs nothing) if it is already complete, or
    /// already completed by this transaction.
    ///
    /// ```
    /// use ito::stm::{atomically, TVar};
    /// let p = ito::Promise::new();
    /// let log = TVar::new(0);
    /// let done = atomically(|tx| {
    ///     log.modify(tx, |n| n + 1)?;
    ///     p.try_complete_tx(tx, Ok("hi"))
    /// });
    /// assert!(done);
    /// assert_eq!(p.future().wait(), Ok("hi"));
    /// ```
    pub fn try_complete_tx(&self, tx: &mut Tx, result: Result<T, Failure>) -> StmResult<bool> {
        if self.future_ref_try_read(tx)?.is_some() {
            return Ok(false);
        }
        tx.log_cell_write(CellWrite {
            cell: self.cell_ptr(), // may be the last reference when the log lets it go
            value: Box::into_raw(Box::new(result)).cast(),
            publish: publish_cell::<T>,
            drop_value: drop_cell_value::<T>,
        });
        Ok(true)
    }

    /// [`try_complete_tx`](Self::try_complete_tx) with a value.
    ///
    /// ```
    /// use ito::stm::atomically;
    /// let p = ito::Promise::new();
    /// assert!(atomically(|tx| p.try_success_tx(tx, 3)));
    /// assert!(!atomically(|tx| p.try_success_tx(tx, 4)));
    /// assert_eq!(p.future().wait(), Ok(3));
    /// ```
    pub fn try_success_tx(&self, tx: &mut Tx, value: T) -> StmResult<bool> {
        self.try_complete_tx(tx, Ok(value))
    }

    /// [`try_complete_tx`](Self::try_complete_tx) with a failure.
    ///
    /// ```
    /// use ito::stm::atomically;
    /// let p = ito::Promise::<u8>::new();
    /// assert!(atomically(|tx| p.try_failure_tx(tx, ito::Failure::msg("no"))));
    /// assert!(p.future().wait().is_err());
    /// ```
    pub fn try_failure_tx(&self, tx: &mut Tx, failure: crate::Failure) -> StmResult<bool> {
        self.try_complete_tx(tx, Err(failure))
    }

    /// Whether the promise is complete, as the transaction sees it (completed before it, or
    /// by it).
    ///
    /// ```
    /// use ito::stm::atomically;
    /// let p = ito::Promise::<u8>::new();
    /// assert!(!atomically(|tx| p.is_completed_tx(tx)));
    /// ```
    pub fn is_completed_tx(&self, tx: &mut Tx) -> StmResult<bool> {
        Ok(self.future_ref_try_read(tx)?.is_some())
    }

    /// `try_read_tx` on the promise's own cell, without making a `Future` handle.
    fn future_ref_try_read(&self, tx: &mut Tx) -> StmResult<Option<()>> {
        tx.check_failed()?;
        let header = &self.inner().header;
        let cell = self.cell_ptr(); // logged: may be the last reference when the log lets it go
        if tx.pending_cell(cell).is_some() {
            return Ok(Some(()));
        }
        match header.tx_state() {
            TxState::Complete => {
                if !tx.observe_complete_cell() {
                    return tx.conflict();
                }
                Ok(Some(()))
            }
            TxState::Busy => tx.conflict(),
            TxState::Empty => {
                tx.log_cell_read(cell);
                Ok(None)
            }
        }
    }
}

/// Completes every promise with its value, all at once, or none of them: returns `false`,
/// completing nothing, if any of them is already complete (or appears twice).
///
/// This is document 004's `multiTrySuccess`: dining philosophers whose forks are promises
/// take both forks or neither.
///
/// ```
/// let (left, right) = (ito::Promise::new(), ito::Promise::new());
/// assert!(ito::stm::multi_try_success([(&left, "alice"), (&right, "alice")]));
/// // Both taken: another philosopher gets neither.
/// assert!(!ito::stm::multi_try_success([(&right, "bob"), (&left, "bob")]));
/// assert_eq!(left.future().wait(), Ok("alice"));
/// ```
pub fn multi_try_success<'a, T>(pairs: impl IntoIterator<Item = (&'a Promise<T>, T)>) -> bool
where
    T: Clone + Send + Sync + 'static,
{
    let pairs: Vec<(&Promise<T>, T)> = pairs.into_iter().collect();
    for (i, (p, _)) in pairs.iter().enumerate() {
        if pairs[..i]
            .iter()
            .any(|(q, _)| std::ptr::eq(p.inner(), q.inner()))
        {
            return false;
        }
    }
    atomically(|tx| {
        for (p, _) in &pairs {
            if p.is_completed_tx(tx)? {
                return Ok(false);
            }
        }
        for (p, v) in &pairs {
            p.try_success_tx(tx, v.clone())?;
        }
        Ok(true)
    })
}

/// # Safety
///
/// The caller claimed `cell`, a `CompletionCell<T>`, and `value` is a `Box<Result<T, Failure>>`.
unsafe fn publish_cell<T>(cell: NonNull<CellHeader>, value: *mut ()) -> *const CellWaiter {
    // SAFETY: the caller's contract.
    let v = unsafe { *Box::from_raw(value.cast::<Result<T, Failure>>()) };
    // SAFETY: as above: we are the cell's only completer.
    unsafe { cell.cast::<CompletionCell<T>>().as_ref().publish_claimed(v) }
}

/// # Safety
///
/// `value` is an unpublished `Box<Result<T, Failure>>`, freed once.
unsafe fn drop_cell_value<T>(value: *mut ()) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(value.cast::<Result<T, Failure>>()) });
}

/// A retrying transaction's node on an empty cell's waiter list.
#[repr(C)]
struct CellSleeper {
    waiter: CellWaiter,
    sleeper: Arc<Sleeper>,
}

/// # Safety
///
/// `node` is a `CellSleeper` made by [`register`], called once (by the completer or the
/// destroyer), which then owns it.
unsafe fn call_cell_sleeper(node: NonNull<CellWaiter>, _cell: NonNull<CellHeader>, action: Action) {
    // SAFETY: the caller's contract.
    let b = unsafe { Box::from_raw(node.cast::<CellSleeper>().as_ptr()) };
    if action == Action::Notify {
        b.sleeper.notify();
    }
}

/// Registers `sleeper` on `cell` (the caller holds a reference). Returns the node to
/// [`unregister`] later, or `None` if the cell completed already (then it notified).
pub(crate) fn register(
    cell: NonNull<CellHeader>,
    sleeper: &Arc<Sleeper>,
) -> Option<NonNull<CellWaiter>> {
    let node = Box::new(CellSleeper {
        waiter: CellWaiter::new_owner(call_cell_sleeper),
        sleeper: sleeper.clone(),
    });
    let node = NonNull::from(Box::leak(node)).cast::<CellWaiter>();
    // SAFETY: the caller holds a reference; the node is fresh and lives until called or
    // unlinked.
    if unsafe { cell.as_ref().push(node) } {
        Some(node)
    } else {
        // SAFETY: refused, so still ours.
        drop(unsafe { Box::from_raw(node.cast::<CellSleeper>().as_ptr()) });
        sleeper.notify();
        None
    }
}

/// Takes `node` back off `cell`, unless the completer has it (then it calls and frees it).
pub(crate) fn unregister(cell: NonNull<CellHeader>, node: NonNull<CellWaiter>) {
    // SAFETY: the caller holds a reference.
    match unsafe { cell.as_ref() }.lock() {
        Locked::Held(mut guard) => {
            // SAFETY: our node, pushed by `register` and not unlinked since.
            if unsafe { guard.unlink(node) } {
                drop(guard);
                // SAFETY: unlinked, so ours again.
                drop(unsafe { Box::from_raw(node.cast::<CellSleeper>().as_ptr()) });
            }
        }
        Locked::Complete => {}
    }
}
