//! A broadcast channel: every value sent goes to every receiver.
//!
//! A bounded ring of the last `capacity` values. Senders never wait: a send into a full ring
//! overwrites the oldest value. Each [`Receiver`] keeps its own position; one that falls more
//! than `capacity` values behind has missed some, and its next receive says how many
//! ([`RecvError::Lagged`]) and moves it to the oldest value still held. The channel closes when
//! the last [`Sender`] is dropped: receivers get what they have not read yet, then
//! [`RecvError::Closed`]. Values are `Clone`: each receiver gets its own copy.
//!
//! One mutex guards the ring, the handle counts and the wait list (`wait_list.rs`) of
//! receivers waiting for a value; a send wakes them all (`condvar.rs`). A receive clones the
//! value under that mutex, so a slow `Clone` holds up senders and the other receivers: send
//! large values in an `Arc`.
//! A value stays in the ring until it is overwritten or the last receiver is dropped (memory
//! is bounded by `capacity` values either way).
//!
//! ```
//! use ito::sync::broadcast::{self, RecvError};
//! let (tx, mut rx1) = broadcast::channel(16);
//! let mut rx2 = tx.subscribe();
//! tx.send("hello").unwrap();
//! drop(tx);
//! assert_eq!(ito::block_on(rx1.recv()), Ok("hello"));
//! assert_eq!(rx2.recv_blocking(), Ok("hello"));
//! assert_eq!(rx2.recv_blocking(), Err(RecvError::Closed));
//! ```

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::condvar::{CondWait, wake_all};
use super::wait_list::{WaitList, WakeList};
use super::{block, spin_briefly};
use crate::Failure;
use crate::channel::SendError;
use crate::loom::{Mutex, MutexGuard};

/// A broadcast channel holding the last `capacity` values.
///
/// # Panics
/// If `capacity` is 0.
///
/// ```
/// let (tx, mut rx) = ito::sync::broadcast::channel(2);
/// tx.send(1).unwrap();
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(
        capacity > 0,
        "broadcast::channel: the capacity must be at least 1"
    );
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            ring: VecDeque::with_capacity(capacity),
            head: 0,
            senders: 1,
            receivers: 1,
            waiters: WaitList::new(),
        }),
        capacity,
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared, next: 0 },
    )
}

struct Shared<T> {
    state: Mutex<State<T>>,
    capacity: usize,
}

struct State<T> {
    /// The last values sent, oldest first.
    ring: VecDeque<T>,
    /// The position (count of values ever sent before it) of `ring[0]`.
    head: u64,
    senders: usize,
    receivers: usize,
    /// Receivers waiting for a value or for the close.
    waiters: WaitList<()>,
}

impl<T> State<T> {
    /// The position the next value sent will have.
    fn tail(&self) -> u64 {
        self.head + self.ring.len() as u64
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The only user code run under the lock is `T::clone` (a receive copies the value
        // under it), and one that panics leaves the state untouched: a poisoned lock still
        // guards a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending half of a broadcast channel. Clone it for more senders; the channel closes
/// when the last one is dropped.
///
/// ```
/// let (tx, mut rx) = ito::sync::broadcast::channel(4);
/// let tx2 = tx.clone();
/// ito::spawn_fn(move || tx2.send(7).unwrap()).wait().unwrap();
/// assert_eq!(rx.recv_blocking(), Ok(7));
/// # drop(tx);
/// ```
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T: Clone> Sender<T> {
    /// Sends `value` to every receiver, overwriting the oldest value if the ring is full;
    /// never waits. Returns how many receivers there are, or hands the value back if there
    /// are none.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::broadcast::channel(1);
    /// assert_eq!(tx.send(1), Ok(1));
    /// drop(rx);
    /// assert_eq!(tx.send(2).unwrap_err().0, 2);
    /// ```
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let mut wakes = WakeList::new();
        let (receivers, overwritten) = {
            let mut st = self.shared.lock();
            if st.receivers == 0 {
                return Err(SendError(value));
            }
            st.ring.push_back(value);
            let overwritten = if st.ring.len() > self.shared.capacity {
                st.head += 1;
                st.ring.pop_front()
            } else {
                None
            };
            wake_all(&mut st.waiters, &mut wakes);
            (st.receivers, overwritten)
        };
        wakes.wake_all();
        drop(overwritten); // outside the lock: a value's destructor is user code
        Ok(receivers)
    }

    /// A new receiver, which gets the values sent from now on.
    ///
    /// ```
    /// let (tx, _rx) = ito::sync::broadcast::channel(4);
    /// tx.send("before").unwrap();
    /// let mut late = tx.subscribe();
    /// tx.send("after").unwrap();
    /// assert_eq!(late.try_recv(), Ok("after"));
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver::at_tail(&self.shared)
    }

    /// How many receivers there are.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::broadcast::channel::<u8>(1);
    /// let rx2 = rx.clone();
    /// assert_eq!(tx.receiver_count(), 2);
    /// # drop((rx, rx2));
    /// ```
    pub fn receiver_count(&self) -> usize {
        self.shared.lock().receivers
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut wakes = WakeList::new();
        {
            let mut st = self.shared.lock();
            st.senders -= 1;
            if st.senders == 0 {
                wake_all(&mut st.waiters, &mut wakes);
            }
        }
        wakes.wake_all();
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("Sender")
            .field("receivers", &st.receivers)
            .field("held", &st.ring.len())
            .field("capacity", &self.shared.capacity)
            .finish()
    }
}

/// The receiving half of a broadcast channel: it sees every value sent after it was created
/// (by [`channel`], [`Sender::subscribe`] or `clone`, which starts where the original is).
///
/// ```
/// let (tx, mut rx) = ito::sync::broadcast::channel(8);
/// let mut rx2 = rx.clone();
/// tx.send(5).unwrap();
/// assert_eq!((rx.try_recv(), rx2.try_recv()), (Ok(5), Ok(5)));
/// ```
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The position of the next value this receiver reads.
    next: u64,
}

impl<T: Clone> Receiver<T> {
    /// Receives the next value, waiting for one. Fails with [`RecvError::Lagged`] if values
    /// were overwritten before this receiver read them (it then continues from the oldest
    /// value held), and with [`RecvError::Closed`] once every sender is gone and everything
    /// was read.
    ///
    /// Cancel-safe: a value is consumed only when the future returns it; dropping the future
    /// loses nothing.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::broadcast::channel(4);
    /// let reader = ito::spawn(async move { rx.recv().await });
    /// tx.send(42).unwrap();
    /// assert_eq!(reader.wait(), Ok(Ok(42)));
    /// ```
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv {
            rx: self,
            wait: CondWait::new(),
        }
    }

    /// Receives the next value if there is one; never waits.
    ///
    /// ```
    /// use ito::sync::broadcast::{self, TryRecvError};
    /// let (tx, mut rx) = broadcast::channel(2);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// for i in 0..3 {
    ///     tx.send(i).unwrap();
    /// }
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Lagged(1)));
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let st = self.shared.lock();
        take(&st, &mut self.next)
    }

    /// Receives from plain code, as [`recv`](Self::recv), blocking until a value comes
    /// (handing a worker's place to another thread meanwhile). Fails as `recv` does, or with
    /// [`RecvError::Cancelled`] if the calling task is cancelled while it waits.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::broadcast::channel(1);
    /// std::thread::spawn(move || tx.send('a').unwrap());
    /// assert_eq!(rx.recv_blocking(), Ok('a'));
    /// ```
    pub fn recv_blocking(&mut self) -> Result<T, RecvError> {
        let tried = spin_briefly(&mut *self, |rx| match rx.try_recv() {
            Err(TryRecvError::Empty) => Err(rx),
            r => Ok(r.map_err(TryRecvError::waited)),
        });
        match tried {
            Ok(r) => r,
            Err(rx) => block(rx.recv()).unwrap_or(Err(RecvError::Cancelled)),
        }
    }

    /// How many values this receiver has not read yet (not counting those it missed).
    ///
    /// ```
    /// let (tx, rx) = ito::sync::broadcast::channel(4);
    /// tx.send(()).unwrap();
    /// tx.send(()).unwrap();
    /// assert_eq!(rx.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        let st = self.shared.lock();
        (st.tail() - self.next.max(st.head)) as usize
    }

    /// Whether this receiver has read everything sent so far.
    ///
    /// ```
    /// let (_tx, rx) = ito::sync::broadcast::channel::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new receiver that gets the values sent from now on (not what this one has still to
    /// read).
    ///
    /// ```
    /// let (tx, rx) = ito::sync::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let fresh = rx.resubscribe();
    /// assert!(fresh.is_empty());
    /// ```
    pub fn resubscribe(&self) -> Receiver<T> {
        Receiver::at_tail(&self.shared)
    }
}

impl<T> Receiver<T> {
    /// A new receiver of `shared` that gets the values sent from now on.
    fn at_tail(shared: &Arc<Shared<T>>) -> Receiver<T> {
        let mut st = shared.lock();
        st.receivers += 1;
        Receiver {
            shared: Arc::clone(shared),
            next: st.tail(),
        }
    }
}

/// Takes the value at `*next` (or reports what was missed), advancing `next`.
fn take<T: Clone>(st: &State<T>, next: &mut u64) -> Result<T, TryRecvError> {
    if *next < st.head {
        let missed = st.head - *next;
        *next = st.head;
        return Err(TryRecvError::Lagged(missed));
    }
    match st.ring.get((*next - st.head) as usize) {
        Some(v) => {
            let v = v.clone();
            *next += 1;
            Ok(v)
        }
        None if st.senders == 0 => Err(TryRecvError::Closed),
        None => Err(TryRecvError::Empty),
    }
}

impl<T> Clone for Receiver<T> {
    /// A receiver at the same position: it reads what this one has still to read.
    fn clone(&self) -> Self {
        self.shared.lock().receivers += 1;
        Receiver {
            shared: Arc::clone(&self.shared),
            next: self.next,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let drained = {
            let mut st = self.shared.lock();
            st.receivers -= 1;
            if st.receivers > 0 {
                return;
            }
            // Nobody can read these any more (a new receiver starts at the tail).
            st.head += st.ring.len() as u64;
            std::mem::take(&mut st.ring)
        };
        drop(drained); // outside the lock: a value's destructor is user code
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("position", &self.next)
            .finish_non_exhaustive()
    }
}

/// The future of [`Receiver::recv`].
///
/// ```
/// let (tx, mut rx) = ito::sync::broadcast::channel(1);
/// tx.send(1).unwrap();
/// let recv = rx.recv();
/// assert_eq!(ito::block_on(recv), Ok(1));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a, T> {
    rx: &'a mut Receiver<T>,
    wait: CondWait,
}

impl<T: Clone> StdFuture for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `wait` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let mut st = this.rx.shared.lock();
        match take(&st, &mut this.rx.next) {
            Err(TryRecvError::Empty) => {
                // SAFETY: this channel's list, under its lock; `Drop` leaves it.
                unsafe { this.wait.park(&mut st.waiters, cx) };
                Poll::Pending
            }
            r => Poll::Ready(r.map_err(TryRecvError::waited)),
        }
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        if self.wait.was_parked() {
            let mut st = self.rx.shared.lock();
            // SAFETY: the list it was parked on, under its lock.
            unsafe { self.wait.leave(&mut st.waiters) };
        }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("position", &self.rx.next)
            .finish_non_exhaustive()
    }
}

/// A broadcast receive that waits failed.
///
/// ```
/// use ito::sync::broadcast::{self, RecvError};
/// let (tx, mut rx) = broadcast::channel(1);
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Lagged(1)));
/// assert_eq!(rx.recv_blocking(), Ok(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecvError {
    /// Every sender is gone and this receiver read everything.
    Closed,
    /// This receiver fell behind: that many values were overwritten before it read them. Its
    /// next receive returns the oldest value still held.
    Lagged(u64),
    /// The task calling [`recv_blocking`](Receiver::recv_blocking) was cancelled while it
    /// waited.
    Cancelled,
}

/// [`Receiver::try_recv`] failed.
///
/// ```
/// use ito::sync::broadcast::{self, TryRecvError};
/// let (tx, mut rx) = broadcast::channel::<u8>(1);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// tx.send(1).unwrap();
/// tx.send(2).unwrap(); // overwrites 1, which `rx` had not read
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Lagged(1)));
/// assert_eq!(rx.try_recv(), Ok(2));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TryRecvError {
    /// Nothing new to read yet.
    Empty,
    /// This receiver fell behind by that many values (see [`RecvError::Lagged`]).
    Lagged(u64),
    /// Every sender is gone and this receiver read everything.
    Closed,
}

impl TryRecvError {
    /// The error of a receive that would wait for `Empty` (which it never passes here).
    fn waited(self) -> RecvError {
        match self {
            TryRecvError::Lagged(n) => RecvError::Lagged(n),
            TryRecvError::Closed | TryRecvError::Empty => RecvError::Closed,
        }
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("receiving on a closed broadcast channel"),
            RecvError::Lagged(n) => write!(f, "the receiver lagged behind by {n} values"),
            RecvError::Cancelled => f.write_str("cancelled while waiting to receive"),
        }
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("nothing new on the broadcast channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed broadcast channel"),
            TryRecvError::Lagged(n) => write!(f, "the receiver lagged behind by {n} values"),
        }
    }
}

impl Error for RecvError {}
impl Error for TryRecvError {}

impl From<RecvError> for Failure {
    /// `Cancelled` becomes [`Failure::Cancelled`]; the others a [`Failure::Error`] holding it.
    ///
    /// ```
    /// use ito::sync::broadcast::RecvError;
    /// let f = ito::Failure::from(RecvError::Lagged(3));
    /// assert_eq!(f.downcast_ref::<RecvError>(), Some(&RecvError::Lagged(3)));
    /// ```
    fn from(e: RecvError) -> Failure {
        match e {
            RecvError::Cancelled => Failure::Cancelled,
            e => Failure::from_error(e),
        }
    }
}

impl From<TryRecvError> for Failure {
    /// A [`Failure::Error`] holding it.
    ///
    /// ```
    /// use ito::sync::broadcast::TryRecvError;
    /// let f = ito::Failure::from(TryRecvError::Empty);
    /// assert!(f.downcast_ref::<TryRecvError>().is_some());
    /// ```
    fn from(e: TryRecvError) -> Failure {
        Failure::from_error(e)
    }
}
