//! `TMVar<T>`: a transactional slot that is empty or holds one value (GHC's `TMVar`), a
//! `TVar<Option<T>>` with blocking take and put.

use super::{StmResult, TVar, Tx, atomically, retry};

/// A slot that is either empty or full (GHC's `TMVar`): [`take`](TMVar::take) waits while it
/// is empty, [`put`](TMVar::put) waits while it is full.
///
/// Use it as a one-place channel, as a lock (`TMVar<()>`: full means free), or as a
/// write-once result. Every operation takes the transaction, so several `TMVar`s can be taken
/// or filled in one atomic step. Clones are handles on the same slot.
///
/// Each operation reads and (except the reads) writes the one underlying [`TVar`]: all
/// operations on a `TMVar` conflict with each other, as they must. A successful take or read
/// clones the value.
///
/// ```
/// use ito::stm::{atomically, TMVar};
/// // A one-place channel.
/// let slot = TMVar::new_empty();
/// let s = slot.clone();
/// let producer = std::thread::spawn(move || {
///     for i in 0..10 {
///         s.put_atomic(i); // waits until the consumer has taken the previous one
///     }
/// });
/// let sum: u32 = (0..10).map(|_| slot.take_atomic()).sum();
/// assert_eq!(sum, 45);
/// producer.join().unwrap();
/// assert!(atomically(|tx| slot.is_empty(tx)));
/// ```
pub struct TMVar<T> {
    slot: TVar<Option<T>>,
}

impl<T> Clone for TMVar<T> {
    /// Another handle on the same slot.
    fn clone(&self) -> Self {
        TMVar {
            slot: self.slot.clone(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> TMVar<T> {
    /// A full slot holding `value` (GHC's `newTMVar`).
    ///
    /// ```
    /// let lock = ito::stm::TMVar::new(());
    /// lock.take_atomic(); // acquire
    /// lock.put_atomic(()); // release
    /// ```
    pub fn new(value: T) -> TMVar<T> {
        TMVar {
            slot: TVar::new(Some(value)),
        }
    }

    /// An empty slot (GHC's `newEmptyTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::<u8>::new_empty();
    /// assert!(atomically(|tx| v.is_empty(tx)));
    /// ```
    pub fn new_empty() -> TMVar<T> {
        TMVar {
            slot: TVar::new(None),
        }
    }

    /// Empties the slot and returns its value; waits ([`retry`]) while it is empty (GHC's
    /// `takeTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new(5);
    /// assert_eq!(atomically(|tx| v.take(tx)), 5);
    /// assert!(atomically(|tx| v.is_empty(tx)));
    /// ```
    pub fn take(&self, tx: &mut Tx) -> StmResult<T> {
        match self.try_take(tx)? {
            Some(v) => Ok(v),
            None => retry(),
        }
    }

    /// Fills the slot with `value`; waits ([`retry`]) while it is full (GHC's `putTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new_empty();
    /// atomically(|tx| v.put(tx, "done"));
    /// assert_eq!(v.take_atomic(), "done");
    /// ```
    pub fn put(&self, tx: &mut Tx, value: T) -> StmResult<()> {
        if self.try_put(tx, value)? {
            Ok(())
        } else {
            retry()
        }
    }

    /// The value, left in the slot; waits ([`retry`]) while it is empty (GHC's `readTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new(3);
    /// assert_eq!(atomically(|tx| v.read(tx)), 3);
    /// assert!(!atomically(|tx| v.is_empty(tx)));
    /// ```
    pub fn read(&self, tx: &mut Tx) -> StmResult<T> {
        match self.slot.read(tx)? {
            Some(v) => Ok(v),
            None => retry(),
        }
    }

    /// Empties the slot and returns its value, or `None` if it was empty (GHC's
    /// `tryTakeTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new('a');
    /// assert_eq!(atomically(|tx| v.try_take(tx)), Some('a'));
    /// assert_eq!(atomically(|tx| v.try_take(tx)), None);
    /// ```
    pub fn try_take(&self, tx: &mut Tx) -> StmResult<Option<T>> {
        let v = self.slot.read(tx)?;
        if v.is_some() {
            self.slot.write(tx, None)?;
        }
        Ok(v)
    }

    /// Fills the slot with `value` if it is empty and says whether it did; a full slot is
    /// left as it is and `value` dropped (GHC's `tryPutTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new_empty();
    /// assert!(atomically(|tx| v.try_put(tx, 1)));
    /// assert!(!atomically(|tx| v.try_put(tx, 2)));
    /// assert_eq!(v.take_atomic(), 1);
    /// ```
    pub fn try_put(&self, tx: &mut Tx, value: T) -> StmResult<bool> {
        if self.slot.read(tx)?.is_some() {
            return Ok(false);
        }
        self.slot.write(tx, Some(value))?;
        Ok(true)
    }

    /// The value, left in the slot, or `None` if it is empty (GHC's `tryReadTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::<u8>::new_empty();
    /// assert_eq!(atomically(|tx| v.try_read(tx)), None);
    /// ```
    pub fn try_read(&self, tx: &mut Tx) -> StmResult<Option<T>> {
        self.slot.read(tx)
    }

    /// Replaces the value of a full slot and returns the old one; waits ([`retry`]) while it
    /// is empty (GHC's `swapTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// let v = TMVar::new(1);
    /// assert_eq!(atomically(|tx| v.swap(tx, 2)), 1);
    /// assert_eq!(v.take_atomic(), 2);
    /// ```
    pub fn swap(&self, tx: &mut Tx, value: T) -> StmResult<T> {
        let old = self.read(tx)?;
        self.slot.write(tx, Some(value))?;
        Ok(old)
    }

    /// Whether the slot is empty (GHC's `isEmptyTMVar`).
    ///
    /// ```
    /// use ito::stm::{atomically, TMVar};
    /// assert!(!atomically(|tx| TMVar::new(0).is_empty(tx)));
    /// ```
    pub fn is_empty(&self, tx: &mut Tx) -> StmResult<bool> {
        Ok(self.slot.read(tx)?.is_none())
    }

    /// [`take`](TMVar::take) in a transaction of its own: waits while the slot is empty.
    ///
    /// ```
    /// let v = ito::stm::TMVar::new(vec![1, 2]);
    /// assert_eq!(v.take_atomic(), [1, 2]);
    /// ```
    pub fn take_atomic(&self) -> T {
        atomically(|tx| self.take(tx))
    }

    /// [`put`](TMVar::put) in a transaction of its own: waits while the slot is full.
    ///
    /// ```
    /// let v = ito::stm::TMVar::new_empty();
    /// v.put_atomic(8);
    /// assert_eq!(v.take_atomic(), 8);
    /// ```
    pub fn put_atomic(&self, value: T) {
        // The transaction may run more than once, and each attempt consumes its value.
        atomically(|tx| self.put(tx, value.clone()));
    }
}

impl<T> std::fmt::Debug for TMVar<T> {
    /// Nothing of the contents: they are transactional state, read with `atomically`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TMVar").finish_non_exhaustive()
    }
}
