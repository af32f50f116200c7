//! `TQueue<T>`: a transactional FIFO queue (GHC's `TQueue` and `TBQueue`) built from two
//! [`TVar`]s, one per end.
//!
//! # Representation
//!
//! The classic two-list queue, with persistent (shared, immutable) lists so that reading a
//! `TVar` (which clones its value) costs one reference count, not a copy of the queue:
//!
//! - `back`: the newest elements, newest first. A push conses onto it.
//! - `front`: the oldest elements, oldest first. A pop takes its head; when it is empty, a pop
//!   reverses `back` into a new `front` and empties `back`.
//!
//! Every node records the length of the list it starts, so `len` is `O(1)`.
//!
//! A bounded queue keeps its free capacity split in two *credit* counters, as GHC's
//! `TBQueue` does: `back.credits` (spent by pushes) and `front.credits` (earned by pops).
//! A push that runs out of credits takes all of `front`'s at once. Invariant, at every
//! commit: `front.credits + back.credits + len == capacity`.
//!
//! Costs and conflicts are documented on [`TQueue`].

use std::sync::Arc;

use super::{StmResult, TVar, Tx, atomically, retry};

/// A persistent singly-linked list: `Clone` shares it.
struct List<T>(Option<Arc<Node<T>>>);

struct Node<T> {
    value: T,
    next: List<T>,
    /// The length of the list starting at this node.
    len: usize,
}

impl<T> Clone for List<T> {
    fn clone(&self) -> Self {
        List(self.0.clone())
    }
}

impl<T> List<T> {
    const EMPTY: List<T> = List(None);

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }

    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    fn cons(&self, value: T) -> List<T> {
        List(Some(Arc::new(Node {
            value,
            next: self.clone(),
            len: self.len() + 1,
        })))
    }

    fn head(&self) -> Option<&T> {
        self.0.as_ref().map(|n| &n.value)
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        let mut cur = self.0.as_deref();
        std::iter::from_fn(move || {
            let n = cur?;
            cur = n.next.0.as_deref();
            Some(&n.value)
        })
    }
}

impl<T: Clone> List<T> {
    /// The head and the rest.
    fn uncons(&self) -> Option<(T, List<T>)> {
        self.0.as_ref().map(|n| (n.value.clone(), n.next.clone()))
    }

    /// A new list with the elements in the opposite order (each one cloned).
    fn reversed(&self) -> List<T> {
        let mut out = List::EMPTY;
        for v in self.iter() {
            out = out.cons(v.clone());
        }
        out
    }
}

impl<T> Drop for Node<T> {
    /// Drops the rest of the list iteratively: a long list must not overflow the stack.
    fn drop(&mut self) {
        let mut next = self.next.0.take();
        while let Some(n) = next {
            match Arc::try_unwrap(n) {
                Ok(mut n) => next = n.next.0.take(),
                Err(_) => break, // shared: someone else drops the rest later
            }
        }
    }
}

/// One end of the queue: its list and its capacity credits (bounded queues only).
struct End<T> {
    list: List<T>,
    credits: usize,
}

impl<T> Clone for End<T> {
    fn clone(&self) -> Self {
        End {
            list: self.list.clone(),
            credits: self.credits,
        }
    }
}

/// A transactional first-in first-out queue, unbounded ([`TQueue::new`]) or bounded
/// ([`TQueue::bounded`]): GHC's `TQueue` and `TBQueue`.
///
/// Every operation takes the transaction, so a queue operation composes with anything else
/// in the same [`atomically`] block, including [`Tx::or_else`] across several queues. Clones
/// are handles on the same queue.
///
/// # Costs
///
/// The queue is two persistent lists in two [`TVar`]s: the back (newest first; a push conses
/// onto it) and the front (oldest first; a pop takes its head, and when it is empty, moves
/// the whole back list over, reversed). `push`, `len` and `is_empty` are `O(1)`; `pop`,
/// `try_pop`, `peek` and `try_peek` are amortized `O(1)`: an element is moved (cloned) from
/// the back list to the front list once, by the pop that finds the front empty. (A
/// transaction that does that move and then conflicts does it again when it reruns.)
/// `drain` is `O(len)`. Each pop and peek also clones the element it returns, so for a `T`
/// that is expensive to clone, queue an `Arc<T>`.
///
/// # Conflicts
///
/// - A push writes the back only. On a bounded queue, once per up to `capacity` pushes, it
///   also writes the front, to take the room pops have freed since (the free capacity is
///   split between the two ends, as in GHC's `TBQueue`).
/// - A pop writes the front only, except when the front is empty: then it also empties the
///   back (once per batch of elements moved over).
/// - So a producer and a consumer do not conflict while the queue is neither (nearly) empty
///   nor (nearly) full; producers conflict with each other, and so do consumers, as they
///   must (they change the same end).
/// - `len`, `drain` and an `is_empty` on an empty front read both ends: they conflict with
///   any push or pop that commits meanwhile.
/// - A pop or peek that waits on an empty queue wakes at the next push; a push that waits on
///   a full bounded queue wakes at the next pop.
///
/// ```
/// use ito::stm::{atomically, TQueue};
/// let q = TQueue::new();
/// let producer = {
///     let q = q.clone();
///     std::thread::spawn(move || {
///         for i in 0..100 {
///             q.push_atomic(i);
///         }
///     })
/// };
/// // `pop` waits (retries) while the queue is empty.
/// let got: Vec<u32> = (0..100).map(|_| q.pop_atomic()).collect();
/// assert_eq!(got, (0..100).collect::<Vec<_>>());
/// producer.join().unwrap();
/// assert!(atomically(|tx| q.is_empty(tx)));
/// ```
pub struct TQueue<T> {
    front: TVar<End<T>>,
    back: TVar<End<T>>,
    capacity: Option<usize>,
}

impl<T> Clone for TQueue<T> {
    /// Another handle on the same queue.
    fn clone(&self) -> Self {
        TQueue {
            front: self.front.clone(),
            back: self.back.clone(),
            capacity: self.capacity,
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Default for TQueue<T> {
    /// An empty unbounded queue.
    fn default() -> Self {
        TQueue::new()
    }
}

impl<T: Clone + Send + Sync + 'static> TQueue<T> {
    /// An empty unbounded queue (GHC's `newTQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::<String>::new();
    /// assert_eq!(q.capacity(), None);
    /// assert_eq!(atomically(|tx| q.len(tx)), 0);
    /// ```
    pub fn new() -> TQueue<T> {
        TQueue::with(None, 0)
    }

    /// An empty queue that holds at most `capacity` elements (GHC's `newTBQueue`): a push
    /// waits (retries) while it is full.
    ///
    /// Panics if `capacity` is 0 (a push could never succeed).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::bounded(2);
    /// assert!(atomically(|tx| q.try_push(tx, 'a')));
    /// assert!(atomically(|tx| q.try_push(tx, 'b')));
    /// assert!(!atomically(|tx| q.try_push(tx, 'c'))); // full
    /// assert_eq!(q.pop_atomic(), 'a');
    /// assert!(atomically(|tx| q.try_push(tx, 'c')));
    /// ```
    pub fn bounded(capacity: usize) -> TQueue<T> {
        assert!(
            capacity > 0,
            "ito::stm::TQueue::bounded: the capacity must be at least 1"
        );
        TQueue::with(Some(capacity), capacity)
    }

    fn with(capacity: Option<usize>, credits: usize) -> TQueue<T> {
        TQueue {
            front: TVar::new(End {
                list: List::EMPTY,
                credits: 0,
            }),
            back: TVar::new(End {
                list: List::EMPTY,
                credits,
            }),
            capacity,
        }
    }

    /// The most elements the queue holds: `Some(n)` for a [`bounded`](TQueue::bounded) queue,
    /// `None` for an unbounded one.
    ///
    /// ```
    /// use ito::stm::TQueue;
    /// assert_eq!(TQueue::<u8>::bounded(16).capacity(), Some(16));
    /// assert_eq!(TQueue::<u8>::new().capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    /// Adds `value` at the back; on a full bounded queue, waits ([`retry`]) until a pop makes
    /// room (GHC's `writeTQueue` / `writeTBQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// atomically(|tx| {
    ///     q.push(tx, 1)?;
    ///     q.push(tx, 2)
    /// });
    /// assert_eq!(atomically(|tx| q.len(tx)), 2);
    /// ```
    pub fn push(&self, tx: &mut Tx, value: T) -> StmResult<()> {
        if self.try_push(tx, value)? {
            Ok(())
        } else {
            retry()
        }
    }

    /// Adds `value` at the back if there is room, and says whether it did; on a full bounded
    /// queue, drops `value` and returns `false` without waiting. Always `true` for an
    /// unbounded queue.
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let waiting_room = TQueue::bounded(1);
    /// assert!(atomically(|tx| waiting_room.try_push(tx, "ann")));
    /// assert!(!atomically(|tx| waiting_room.try_push(tx, "bob"))); // bob leaves
    /// ```
    pub fn try_push(&self, tx: &mut Tx, value: T) -> StmResult<bool> {
        let mut back = self.back.read(tx)?;
        if self.capacity.is_some() {
            if back.credits == 0 {
                // Take the credits pops have earned since the last time.
                let mut front = self.front.read(tx)?;
                if front.credits == 0 {
                    return Ok(false);
                }
                back.credits = std::mem::take(&mut front.credits);
                self.front.write(tx, front)?;
            }
            back.credits -= 1;
        }
        back.list = back.list.cons(value);
        self.back.write(tx, back)?;
        Ok(true)
    }

    /// Removes and returns the oldest element; waits ([`retry`]) while the queue is empty
    /// (GHC's `readTQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// let q2 = q.clone();
    /// let consumer = std::thread::spawn(move || atomically(|tx| q2.pop(tx)));
    /// q.push_atomic("hello");
    /// assert_eq!(consumer.join().unwrap(), "hello");
    /// ```
    pub fn pop(&self, tx: &mut Tx) -> StmResult<T> {
        match self.try_pop(tx)? {
            Some(v) => Ok(v),
            None => retry(),
        }
    }

    /// Removes and returns the oldest element, or `None` if the queue is empty (GHC's
    /// `tryReadTQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// assert_eq!(atomically(|tx| q.try_pop(tx)), None);
    /// q.push_atomic(7);
    /// assert_eq!(atomically(|tx| q.try_pop(tx)), Some(7));
    /// ```
    pub fn try_pop(&self, tx: &mut Tx) -> StmResult<Option<T>> {
        let mut front = self.front.read(tx)?;
        let (value, rest) = match front.list.uncons() {
            Some(x) => x,
            None => match self.refill(tx)?.uncons() {
                Some(x) => x,
                None => return Ok(None),
            },
        };
        front.list = rest;
        if self.capacity.is_some() {
            front.credits += 1;
        }
        self.front.write(tx, front)?;
        Ok(Some(value))
    }

    /// With `front` empty: moves the back list over (reversed), empties `back`, and returns
    /// the new front list (empty if the whole queue is). Leaves `front` to the caller, which
    /// writes it (or, in `try_peek`, has this written for it).
    fn refill(&self, tx: &mut Tx) -> StmResult<List<T>> {
        let mut back = self.back.read(tx)?;
        if back.list.is_empty() {
            return Ok(List::EMPTY);
        }
        let list = back.list.reversed();
        back.list = List::EMPTY;
        self.back.write(tx, back)?;
        Ok(list)
    }

    /// The oldest element, left in the queue; waits ([`retry`]) while the queue is empty
    /// (GHC's `peekTQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// q.push_atomic(1);
    /// q.push_atomic(2);
    /// assert_eq!(atomically(|tx| q.peek(tx)), 1);
    /// assert_eq!(q.pop_atomic(), 1);
    /// ```
    pub fn peek(&self, tx: &mut Tx) -> StmResult<T> {
        match self.try_peek(tx)? {
            Some(v) => Ok(v),
            None => retry(),
        }
    }

    /// The oldest element, left in the queue, or `None` if the queue is empty (GHC's
    /// `tryPeekTQueue`).
    ///
    /// Like GHC's, a peek that finds the front list empty moves the back list over, so it
    /// writes the queue (without changing its contents) and conflicts with pushes then.
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// assert_eq!(atomically(|tx| q.try_peek(tx)), None);
    /// q.push_atomic('x');
    /// assert_eq!(atomically(|tx| q.try_peek(tx)), Some('x'));
    /// assert_eq!(atomically(|tx| q.len(tx)), 1);
    /// ```
    pub fn try_peek(&self, tx: &mut Tx) -> StmResult<Option<T>> {
        let mut front = self.front.read(tx)?;
        if let Some(v) = front.list.head() {
            return Ok(Some(v.clone()));
        }
        let list = self.refill(tx)?;
        let Some(v) = list.head().cloned() else {
            return Ok(None);
        };
        front.list = list;
        self.front.write(tx, front)?;
        Ok(Some(v))
    }

    /// Removes every element and returns them, oldest first (GHC's `flushTQueue`).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::bounded(8);
    /// for i in 0..5 {
    ///     q.push_atomic(i);
    /// }
    /// assert_eq!(atomically(|tx| q.drain(tx)), vec![0, 1, 2, 3, 4]);
    /// assert!(atomically(|tx| q.is_empty(tx)));
    /// ```
    pub fn drain(&self, tx: &mut Tx) -> StmResult<Vec<T>> {
        let mut front = self.front.read(tx)?;
        let mut back = self.back.read(tx)?;
        let n = front.list.len() + back.list.len();
        let mut out = Vec::with_capacity(n);
        out.extend(front.list.iter().cloned());
        let start = out.len();
        out.extend(back.list.iter().cloned());
        out[start..].reverse();
        if n > 0 {
            front.list = List::EMPTY;
            back.list = List::EMPTY;
            if self.capacity.is_some() {
                front.credits += n;
            }
            self.front.write(tx, front)?;
            self.back.write(tx, back)?;
        }
        Ok(out)
    }

    /// How many elements the queue holds (`O(1)`; reads both ends, so it conflicts with every
    /// push and pop).
    ///
    /// ```
    /// use ito::stm::{atomically, TQueue};
    /// let q = TQueue::new();
    /// q.push_atomic(());
    /// q.push_atomic(());
    /// assert_eq!(atomically(|tx| q.len(tx)), 2);
    /// ```
    pub fn len(&self, tx: &mut Tx) -> StmResult<usize> {
        Ok(self.front.read(tx)?.list.len() + self.back.read(tx)?.list.len())
    }

    /// Whether the queue is empty (reads the back end only when the front one is empty).
    ///
    /// ```
    /// use ito::stm::{atomically, check, TQueue};
    /// let q = TQueue::<u8>::new();
    /// assert!(atomically(|tx| q.is_empty(tx)));
    /// q.push_atomic(1);
    /// // Wait until someone empties the queue:
    /// let q2 = q.clone();
    /// let t = std::thread::spawn(move || atomically(|tx| check(q2.is_empty(tx)?)));
    /// q.pop_atomic();
    /// t.join().unwrap();
    /// ```
    pub fn is_empty(&self, tx: &mut Tx) -> StmResult<bool> {
        Ok(self.front.read(tx)?.list.is_empty() && self.back.read(tx)?.list.is_empty())
    }

    /// [`push`](TQueue::push) in a transaction of its own: waits while a bounded queue is
    /// full.
    ///
    /// ```
    /// let q = ito::stm::TQueue::new();
    /// q.push_atomic(String::from("job"));
    /// assert_eq!(q.pop_atomic(), "job");
    /// ```
    pub fn push_atomic(&self, value: T) {
        // The transaction may run more than once, and each attempt consumes its value.
        atomically(|tx| self.push(tx, value.clone()));
    }

    /// [`pop`](TQueue::pop) in a transaction of its own: waits while the queue is empty.
    ///
    /// ```
    /// let q = ito::stm::TQueue::bounded(4);
    /// q.push_atomic(3);
    /// assert_eq!(q.pop_atomic(), 3);
    /// ```
    pub fn pop_atomic(&self) -> T {
        atomically(|tx| self.pop(tx))
    }
}

impl<T> std::fmt::Debug for TQueue<T> {
    /// The capacity only: the contents are transactional state, read with `atomically`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TQueue")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::List;

    #[test]
    fn list_ops() {
        let l = List::EMPTY.cons(1).cons(2).cons(3);
        assert_eq!(l.len(), 3);
        assert_eq!(l.iter().copied().collect::<Vec<_>>(), [3, 2, 1]);
        let r = l.reversed();
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), [1, 2, 3]);
        let (h, t) = r.uncons().unwrap();
        assert_eq!((h, t.len()), (1, 2));
        // `l` is untouched by everything above.
        assert_eq!(l.head(), Some(&3));
    }

    /// Dropping a long list (alone, or sharing a tail) does not recurse per node.
    #[test]
    fn long_lists_drop_without_overflowing_the_stack() {
        let mut l = List::EMPTY;
        for i in 0..1_000_000u32 {
            l = l.cons(i);
        }
        let shared_tail = l.clone();
        let longer = l.cons(7);
        drop(l);
        drop(longer);
        assert_eq!(shared_tail.len(), 1_000_000);
        drop(shared_tail);
    }
}
