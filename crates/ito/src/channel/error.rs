//! The channels' errors. Every error of a send hands the value back.

use std::error::Error;
use std::fmt;

use crate::Failure;

/// [`Sender::send`](super::Sender::send) failed because the channel is closed; the value is
/// handed back.
///
/// ```
/// let (tx, rx) = ito::channel::unbounded();
/// drop(rx);
/// let err = ito::block_on(tx.send("lost?")).unwrap_err();
/// assert_eq!(err.into_inner(), "lost?"); // not lost
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(ito::channel::SendError(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// [`Sender::try_send`](super::Sender::try_send) failed; the value is handed back.
///
/// ```
/// use ito::channel::TrySendError;
/// let (tx, rx) = ito::channel::bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// drop(rx);
/// assert_eq!(tx.try_send(3), Err(TrySendError::Closed(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrySendError<T> {
    /// The buffer is full (for a rendezvous channel: no receiver is waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(ito::channel::TrySendError::Full(1).into_inner(), 1);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// Whether the buffer was full.
    ///
    /// ```
    /// assert!(ito::channel::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the channel was closed.
    ///
    /// ```
    /// assert!(ito::channel::TrySendError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

/// [`Sender::send_blocking`](super::Sender::send_blocking) failed; the value is handed back.
///
/// ```
/// use ito::channel::SendBlockingError;
/// let (tx, rx) = ito::channel::bounded(1);
/// rx.close();
/// assert_eq!(tx.send_blocking(7), Err(SendBlockingError::Closed(7)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendBlockingError<T> {
    /// The channel is closed (or was closed while the sender waited for room).
    Closed(T),
    /// The task calling `send_blocking` was cancelled while it waited for room.
    Cancelled(T),
}

impl<T> SendBlockingError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(ito::channel::SendBlockingError::Cancelled(1).into_inner(), 1);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendBlockingError::Closed(v) | SendBlockingError::Cancelled(v) => v,
        }
    }
}

/// A receive that waits failed.
///
/// ```
/// use ito::channel::RecvError;
/// let (tx, rx) = ito::channel::unbounded::<u8>();
/// drop(tx);
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecvError {
    /// The channel is closed and empty: nothing will ever arrive.
    Closed,
    /// The task calling [`recv_blocking`](super::Receiver::recv_blocking) was cancelled while
    /// it waited (the async [`recv`](super::Receiver::recv) never returns this: dropping its
    /// future is how an async receive is cancelled).
    Cancelled,
}

/// [`Receiver::try_recv`](super::Receiver::try_recv) failed.
///
/// ```
/// use ito::channel::TryRecvError;
/// let (tx, rx) = ito::channel::unbounded::<u8>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TryRecvError {
    /// Nothing to receive right now (for a rendezvous channel: no sender is waiting).
    Empty,
    /// The channel is closed and empty.
    Closed,
}

// Debug without `T: Debug` (the value is usually not what one wants to see), as crossbeam.
impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "Full(..)",
            TrySendError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Debug for SendBlockingError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendBlockingError::Closed(_) => "Closed(..)",
            SendBlockingError::Cancelled(_) => "Cancelled(..)",
        })
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "sending on a full channel",
            TrySendError::Closed(_) => "sending on a closed channel",
        })
    }
}

impl<T> fmt::Display for SendBlockingError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendBlockingError::Closed(_) => "sending on a closed channel",
            SendBlockingError::Cancelled(_) => "cancelled while waiting to send",
        })
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvError::Closed => "receiving on a closed and empty channel",
            RecvError::Cancelled => "cancelled while waiting to receive",
        })
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "receiving on an empty channel",
            TryRecvError::Closed => "receiving on a closed and empty channel",
        })
    }
}

impl<T> Error for SendError<T> {}
impl<T> Error for TrySendError<T> {}
impl<T> Error for SendBlockingError<T> {}
impl Error for RecvError {}
impl Error for TryRecvError {}

// Into `Failure`, for `?` in tasks. A failure is shared between threads, so it cannot keep a
// value that need not be `Sync`: the value is dropped and the failure holds the same error
// with `()` in its place, which `Failure::downcast_ref` finds.

impl<T> From<SendError<T>> for Failure {
    /// A [`Failure::Error`] holding `SendError(())` (the value is dropped).
    ///
    /// ```
    /// use ito::channel::SendError;
    /// let f = ito::Failure::from(SendError(vec![1]));
    /// assert_eq!(f.downcast_ref::<SendError<()>>(), Some(&SendError(())));
    /// ```
    fn from(_: SendError<T>) -> Failure {
        Failure::from_error(SendError(()))
    }
}

impl<T> From<TrySendError<T>> for Failure {
    /// A [`Failure::Error`] holding the error with `()` for the value (which is dropped).
    ///
    /// ```
    /// use ito::channel::TrySendError;
    /// let f = ito::Failure::from(TrySendError::Full("x"));
    /// assert_eq!(f.downcast_ref::<TrySendError<()>>(), Some(&TrySendError::Full(())));
    /// ```
    fn from(e: TrySendError<T>) -> Failure {
        Failure::from_error(match e {
            TrySendError::Full(_) => TrySendError::Full(()),
            TrySendError::Closed(_) => TrySendError::Closed(()),
        })
    }
}

impl<T> From<SendBlockingError<T>> for Failure {
    /// `Cancelled` becomes [`Failure::Cancelled`]; `Closed` a [`Failure::Error`] holding
    /// `SendError(())`. The value is dropped.
    ///
    /// ```
    /// use ito::channel::SendBlockingError;
    /// assert_eq!(ito::Failure::from(SendBlockingError::Cancelled(1)), ito::Failure::Cancelled);
    /// ```
    fn from(e: SendBlockingError<T>) -> Failure {
        match e {
            SendBlockingError::Closed(_) => Failure::from_error(SendError(())),
            SendBlockingError::Cancelled(_) => Failure::Cancelled,
        }
    }
}

impl From<RecvError> for Failure {
    /// `Cancelled` becomes [`Failure::Cancelled`]; `Closed` a [`Failure::Error`] holding it.
    ///
    /// ```
    /// use ito::channel::RecvError;
    /// fn drain(rx: &ito::channel::Receiver<u8>) -> Result<u32, ito::Failure> {
    ///     let mut sum = 0;
    ///     loop {
    ///         sum += u32::from(rx.recv_blocking()?);
    ///     }
    /// }
    /// let (tx, rx) = ito::channel::unbounded();
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// let f = drain(&rx).unwrap_err();
    /// assert_eq!(f.downcast_ref::<RecvError>(), Some(&RecvError::Closed));
    /// ```
    fn from(e: RecvError) -> Failure {
        match e {
            RecvError::Closed => Failure::from_error(e),
            RecvError::Cancelled => Failure::Cancelled,
        }
    }
}

impl From<TryRecvError> for Failure {
    /// A [`Failure::Error`] holding it.
    ///
    /// ```
    /// use ito::channel::TryRecvError;
    /// let f = ito::Failure::from(TryRecvError::Empty);
    /// assert_eq!(f.downcast_ref::<TryRecvError>(), Some(&TryRecvError::Empty));
    /// ```
    fn from(e: TryRecvError) -> Failure {
        Failure::from_error(e)
    }
}
