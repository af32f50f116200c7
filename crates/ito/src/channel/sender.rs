//! [`Sender`]: the sending handle, and its [`SendFuture`].

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

use super::chan::{Chan, RawSend};
use super::error::{SendBlockingError, SendError, TrySendError};
use crate::loom::Ordering;
use crate::sync::{block_pinned, spin_briefly};

/// The sending half of a channel. Clone it for more senders; the channel closes (for the
/// receivers, once they drained it) when the last one is dropped.
///
/// ```
/// let (tx, rx) = ito::channel::bounded(4);
/// for i in 0..3 {
///     let tx = tx.clone();
///     ito::spawn(async move { tx.send(i).await.unwrap() });
/// }
/// drop(tx);
/// let mut got: Vec<i32> = rx.iter().collect(); // ends when every sender is gone
/// got.sort();
/// assert_eq!(got, [0, 1, 2]);
/// ```
pub struct Sender<T> {
    pub(super) chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting for room in the buffer (for a rendezvous channel, for a
    /// receiver to take it). Fails, handing the value back, if the channel is closed.
    ///
    /// Cancel-safe in the sense that matters: if the future is dropped before the value was
    /// taken, the value is dropped with it and was not sent; if it was taken, it was sent.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::bounded(1);
    /// ito::block_on(async {
    ///     tx.send("a").await.unwrap();
    ///     assert_eq!(rx.recv().await, Ok("a"));
    /// });
    /// ```
    pub fn send(&self, value: T) -> SendFuture<'_, T> {
        SendFuture {
            sender: self,
            raw: RawSend::new(value),
        }
    }

    /// Sends `value` if that needs no waiting; hands it back otherwise.
    ///
    /// ```
    /// use ito::channel::TrySendError;
    /// let (tx, rx) = ito::channel::bounded(0); // rendezvous: nobody receiving yet
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    /// # drop(rx);
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(value)
    }

    /// Sends `value` from plain code, blocking until there is room (handing a worker's place to
    /// another thread while it waits). Fails, handing the value back, if the channel is closed
    /// or the calling task is cancelled while it waits.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::bounded(0);
    /// let consumer = ito::spawn(async move { rx.recv().await });
    /// tx.send_blocking(5).unwrap(); // returns once the consumer has the value
    /// assert_eq!(consumer.wait(), Ok(Ok(5)));
    /// ```
    pub fn send_blocking(&self, value: T) -> Result<(), SendBlockingError<T>> {
        let tried = spin_briefly(value, |v| match self.try_send(v) {
            Ok(()) => Ok(Ok(())),
            Err(TrySendError::Closed(v)) => Ok(Err(SendBlockingError::Closed(v))),
            Err(TrySendError::Full(v)) => Err(v),
        });
        let value = match tried {
            Ok(r) => return r,
            Err(v) => v,
        };
        let mut fut = pin!(self.send(value));
        match block_pinned(fut.as_mut()) {
            Ok(r) => r.map_err(|SendError(v)| SendBlockingError::Closed(v)),
            Err(_cancelled) => match fut.take_back() {
                Some(v) => Err(SendBlockingError::Cancelled(v)),
                None => Ok(()), // a receiver took it just before the cancellation
            },
        }
    }

    /// Closes the channel: sends fail from now on (senders waiting for room get their values
    /// back); receivers still get what is buffered, then [`RecvError::Closed`](super::RecvError).
    /// Returns whether this call closed it.
    ///
    /// ```
    /// let (tx, rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// assert!(tx.close());
    /// assert!(tx.try_send(2).is_err());
    /// assert_eq!(rx.recv_blocking(), Ok(1));
    /// assert!(rx.recv_blocking().is_err());
    /// ```
    pub fn close(&self) -> bool {
        self.chan.close()
    }

    describe_channel!("tx");
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: Arc::clone(&self.chan),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.close();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

/// The future of [`Sender::send`].
///
/// ```
/// let (tx, rx) = ito::channel::bounded(0);
/// let consumer = ito::spawn(async move { rx.recv().await });
/// ito::block_on(tx.send(9)).unwrap(); // a rendezvous: completes when the consumer has it
/// assert_eq!(consumer.wait(), Ok(Ok(9)));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct SendFuture<'a, T> {
    sender: &'a Sender<T>,
    raw: RawSend<T>,
}

impl<T> SendFuture<'_, T> {
    /// Leaves the queue and returns the value if it was not sent.
    fn take_back(self: Pin<&mut Self>) -> Option<T> {
        // SAFETY: the node is not moved; `cancel` only unlinks it and takes the value out.
        let this = unsafe { self.get_unchecked_mut() };
        this.raw.cancel(&this.sender.chan)
    }
}

impl<T> StdFuture for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `raw` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        this.raw.poll(&this.sender.chan, cx)
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        drop(self.raw.cancel(&self.sender.chan));
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture").finish_non_exhaustive()
    }
}
