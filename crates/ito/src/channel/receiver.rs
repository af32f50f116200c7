//! [`Receiver`]: the receiving handle, its [`RecvFuture`], its blocking iterators, and its
//! `Stream`.

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::chan::{Chan, RawRecv};
use super::error::{RecvError, TryRecvError};
use crate::loom::Ordering;
use crate::sync::{block, spin_briefly};

/// The receiving half of a channel. Clone it for more receivers (each value goes to exactly
/// one of them, the one that has waited longest); the channel closes for the senders when the
/// last one is dropped, and what is still buffered is dropped then.
///
/// Three ways to consume it: [`recv`](Self::recv)`.await` in a loop, the blocking
/// [`iter`](Self::iter) (also `for v in rx`), or as a [`futures_core::Stream`].
///
/// ```
/// let (tx, rx) = ito::channel::unbounded();
/// let consumer = ito::spawn(async move {
///     let mut sum = 0;
///     while let Ok(v) = rx.recv().await {
///         sum += v;
///     }
///     sum
/// });
/// for i in 1..=4 {
///     tx.try_send(i).unwrap();
/// }
/// drop(tx);
/// assert_eq!(consumer.wait(), Ok(10));
/// ```
pub struct Receiver<T> {
    pub(super) chan: Arc<Chan<T>>,
    /// The receive in flight when the receiver is used as a `Stream` (made on first use).
    pub(super) stream: Option<Pin<Box<RawRecv<T>>>>,
}

impl<T> Receiver<T> {
    /// Receives the oldest value, waiting for one; fails once the channel is closed and
    /// empty.
    ///
    /// Cancel-safe: if the future is dropped after a value was handed to it, the value goes to
    /// the next receiver (or back to the front of the buffer), never lost.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::bounded(1);
    /// tx.try_send('x').unwrap();
    /// assert_eq!(ito::block_on(rx.recv()), Ok('x'));
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture {
            receiver: self,
            raw: RawRecv::new(),
        }
    }

    /// Receives a value if one is there (for a rendezvous channel: if a sender waits).
    ///
    /// ```
    /// use ito::channel::TryRecvError;
    /// let (tx, rx) = ito::channel::bounded(2);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// Receives from plain code, blocking until a value comes (handing a worker's place to
    /// another thread while it waits). Fails once the channel is closed and empty, or if the
    /// calling task is cancelled while it waits.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::bounded(1);
    /// ito::spawn(async move { tx.send(3).await.unwrap() });
    /// assert_eq!(rx.recv_blocking(), Ok(3));
    /// ```
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        let tried = spin_briefly((), |()| match self.try_recv() {
            Ok(v) => Ok(Ok(v)),
            Err(TryRecvError::Closed) => Ok(Err(RecvError::Closed)),
            Err(TryRecvError::Empty) => Err(()),
        });
        match tried {
            Ok(r) => r,
            Err(()) => block(self.recv()).unwrap_or(Err(RecvError::Cancelled)),
        }
    }

    /// A blocking iterator: yields values until the channel is closed and empty (or the
    /// calling task is cancelled).
    ///
    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// (1..=3).for_each(|i| tx.try_send(i).unwrap());
    /// drop(tx);
    /// assert_eq!(rx.iter().sum::<i32>(), 6);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { receiver: self }
    }

    /// A non-blocking iterator over what can be received right now.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// tx.try_send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { receiver: self }
    }

    /// Closes the channel: senders fail from now on, handing their values back (those
    /// waiting for room too); what is buffered can still be received. Returns whether this
    /// call closed it.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// rx.close();
    /// assert_eq!(tx.try_send(2).unwrap_err().into_inner(), 2);
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn close(&self) -> bool {
        self.chan.close()
    }

    describe_channel!("rx");
}

impl<T> Clone for Receiver<T> {
    /// Another receiver of the same channel (with no receive of its own in flight).
    fn clone(&self) -> Self {
        self.chan.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver {
            chan: Arc::clone(&self.chan),
            stream: None,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let Some(raw) = &mut self.stream {
            // SAFETY: the node is not moved; `cancel` only unlinks it (passing on a value
            // handed to it).
            unsafe { raw.as_mut().get_unchecked_mut() }.cancel(&self.chan);
        }
        if self.chan.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.close_and_drain();
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

impl<T> Stream for Receiver<T> {
    type Item = T;

    /// The next value; `None` once the channel is closed and empty.
    ///
    /// ```
    /// use futures_core::Stream;
    /// use std::pin::Pin;
    /// let (tx, mut rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// let next = std::future::poll_fn(|cx| Pin::new(&mut rx).poll_next(cx));
    /// assert_eq!(ito::block_on(next), Some(1));
    /// ```
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let raw = this.stream.get_or_insert_with(|| Box::pin(RawRecv::new()));
        // SAFETY: the node lives in the box and is never moved out of it.
        let raw = unsafe { raw.as_mut().get_unchecked_mut() };
        match raw.poll(&this.chan, cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                raw.rearm();
                Poll::Ready(r.ok())
            }
        }
    }
}

/// The future of [`Receiver::recv`].
///
/// ```
/// let (tx, rx) = ito::channel::bounded(1);
/// let pending = rx.recv(); // nothing happens until it is awaited
/// tx.try_send(4).unwrap();
/// assert_eq!(ito::block_on(pending), Ok(4));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RecvFuture<'a, T> {
    receiver: &'a Receiver<T>,
    raw: RawRecv<T>,
}

impl<T> StdFuture for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `raw` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        this.raw.poll(&this.receiver.chan, cx)
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        self.raw.cancel(&self.receiver.chan);
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture").finish_non_exhaustive()
    }
}

/// The blocking iterator of [`Receiver::iter`].
///
/// ```
/// let (tx, rx) = ito::channel::unbounded();
/// tx.try_send("a").unwrap();
/// drop(tx);
/// let mut it = rx.iter();
/// assert_eq!(it.next(), Some("a"));
/// assert_eq!(it.next(), None); // closed and drained
/// ```
#[must_use = "iterators do nothing unless consumed"]
pub struct Iter<'a, T> {
    receiver: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.receiver.recv_blocking().ok()
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

/// The non-blocking iterator of [`Receiver::try_iter`].
///
/// ```
/// let (tx, rx) = ito::channel::unbounded::<u8>();
/// assert_eq!(rx.try_iter().next(), None); // empty: does not wait
/// # drop(tx);
/// ```
#[must_use = "iterators do nothing unless consumed"]
pub struct TryIter<'a, T> {
    receiver: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.receiver.try_recv().ok()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").finish_non_exhaustive()
    }
}

/// The blocking iterator of a [`Receiver`] taken by value (`for v in rx`).
///
/// ```
/// let (tx, rx) = ito::channel::unbounded();
/// tx.try_send(1).unwrap();
/// drop(tx);
/// assert_eq!(rx.into_iter().collect::<Vec<_>>(), [1]);
/// ```
#[must_use = "iterators do nothing unless consumed"]
pub struct IntoIter<T> {
    receiver: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.receiver.iter().next()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// std::thread::spawn(move || (0..3).for_each(|i| tx.send_blocking(i).unwrap()));
    /// let mut n = 0;
    /// for v in rx {
    ///     assert_eq!(v, n);
    ///     n += 1;
    /// }
    /// assert_eq!(n, 3);
    /// ```
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { receiver: self }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// for v in &rx {
    ///     assert_eq!(v, 1);
    /// }
    /// ```
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}
