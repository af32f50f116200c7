//! A one-shot channel: one value, from one [`Sender`] to one [`Receiver`].
//!
//! [`Sender::send`] hands the value back if the receiver is gone; dropping the sender without
//! sending makes the receiver fail with [`RecvError::Closed`]. The receiver is a future
//! (`rx.await`), and also has [`Receiver::try_recv`] and [`Receiver::recv_blocking`].
//!
//! One mutex guards the value, the two "gone" flags and one waker per side: each side is a
//! single handle, so there is no list to keep (the receiver is `Unpin` and can be awaited by
//! `&mut`).
//!
//! ```
//! let (tx, rx) = ito::sync::oneshot::channel();
//! ito::spawn_fn(move || tx.send(String::from("done")).unwrap());
//! assert_eq!(ito::block_on(rx).as_deref(), Ok("done"));
//! ```

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::block;
use super::wait_list::wake_one;
use crate::channel::{RecvError, SendError, TryRecvError};
use crate::loom::{Mutex, MutexGuard};

/// A one-shot channel.
///
/// ```
/// let (tx, mut rx) = ito::sync::oneshot::channel::<u8>();
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(ito::channel::TryRecvError::Closed));
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(State {
        value: None,
        sender_gone: false,
        receiver_gone: false,
        rx_waker: None,
        tx_waker: None,
    }));
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared },
    )
}

struct State<T> {
    value: Option<T>,
    /// The sender sent or was dropped: nothing more will come.
    sender_gone: bool,
    receiver_gone: bool,
    /// The receiver waiting for the value.
    rx_waker: Option<Waker>,
    /// The sender waiting in `closed`.
    tx_waker: Option<Waker>,
}

type Shared<T> = Arc<Mutex<State<T>>>;

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, State<T>> {
    // No user code runs under the lock, so a poisoned lock guards a consistent state.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

fn set_waker(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(w) if w.will_wake(waker) => {}
        slot => *slot = Some(waker.clone()),
    }
}

/// The sending half of a one-shot channel.
///
/// ```
/// let (tx, rx) = ito::sync::oneshot::channel();
/// assert!(!tx.is_closed());
/// tx.send(1).unwrap();
/// assert_eq!(rx.recv_blocking(), Ok(1));
/// ```
pub struct Sender<T> {
    shared: Shared<T>,
}

impl<T> Sender<T> {
    /// Sends `value`; hands it back if the receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::oneshot::channel();
    /// drop(rx);
    /// assert_eq!(tx.send(vec![1, 2]).unwrap_err().0, [1, 2]);
    /// ```
    pub fn send(self, value: T) -> Result<(), SendError<T>> {
        let waker = {
            let mut st = lock(&self.shared);
            if st.receiver_gone {
                return Err(SendError(value));
            }
            st.value = Some(value);
            st.sender_gone = true;
            st.rx_waker.take()
        };
        wake_one(waker);
        Ok(())
    }

    /// Whether the receiver is gone ([`send`](Self::send) would fail).
    ///
    /// ```
    /// let (tx, rx) = ito::sync::oneshot::channel::<()>();
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        lock(&self.shared).receiver_gone
    }

    /// Waits until the receiver is gone (to stop working on a value nobody wants).
    ///
    /// Cancel-safe: it changes nothing; dropping it loses nothing.
    ///
    /// ```
    /// let (mut tx, rx) = ito::sync::oneshot::channel::<u8>();
    /// std::thread::spawn(move || drop(rx));
    /// ito::block_on(tx.closed());
    /// assert!(tx.is_closed());
    /// ```
    pub fn closed(&mut self) -> Closed<'_, T> {
        Closed { tx: self }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut st = lock(&self.shared);
            st.sender_gone = true;
            st.rx_waker.take()
        };
        wake_one(waker);
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// The future of [`Sender::closed`].
///
/// ```
/// let (mut tx, rx) = ito::sync::oneshot::channel::<()>();
/// let closed = tx.closed();
/// drop(rx);
/// ito::block_on(closed);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Closed<'a, T> {
    tx: &'a mut Sender<T>,
}

impl<T> StdFuture for Closed<'_, T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = lock(&self.tx.shared);
        if st.receiver_gone {
            return Poll::Ready(());
        }
        set_waker(&mut st.tx_waker, cx.waker());
        Poll::Pending
    }
}

impl<T> fmt::Debug for Closed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Closed").finish_non_exhaustive()
    }
}

/// The receiving half of a one-shot channel: a future of the value, which fails with
/// [`RecvError::Closed`] if the sender was dropped without sending.
///
/// Cancel-safe: a value is taken only when the future returns it; dropping the receiver
/// drops the value, if one was sent.
///
/// ```
/// use ito::channel::RecvError;
/// let (tx, rx) = ito::sync::oneshot::channel::<u8>();
/// drop(tx);
/// assert_eq!(ito::block_on(rx), Err(RecvError::Closed));
/// ```
pub struct Receiver<T> {
    shared: Shared<T>,
}

impl<T> Receiver<T> {
    /// Takes the value if it was sent; never waits.
    ///
    /// ```
    /// use ito::channel::TryRecvError;
    /// let (tx, mut rx) = ito::sync::oneshot::channel();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(5).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed)); // taken
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut st = lock(&self.shared);
        match st.value.take() {
            Some(v) => Ok(v),
            None if st.sender_gone => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Waits from plain code for the value (handing a worker's place to another thread
    /// meanwhile). Fails with [`RecvError::Closed`] if the sender was dropped without
    /// sending, or [`RecvError::Cancelled`] if the calling task is cancelled while it waits.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::oneshot::channel();
    /// std::thread::spawn(move || tx.send("hi").unwrap());
    /// assert_eq!(rx.recv_blocking(), Ok("hi"));
    /// ```
    pub fn recv_blocking(self) -> Result<T, RecvError> {
        block(self).unwrap_or(Err(RecvError::Cancelled))
    }

    /// Refuses the value: a later [`send`](Sender::send) fails and hands it back. A value
    /// already sent can still be taken with [`try_recv`](Self::try_recv).
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::oneshot::channel();
    /// rx.close();
    /// assert_eq!(tx.send(1).unwrap_err().0, 1);
    /// ```
    pub fn close(&mut self) {
        let waker = {
            let mut st = lock(&self.shared);
            st.receiver_gone = true;
            st.tx_waker.take()
        };
        wake_one(waker);
    }
}

impl<T> StdFuture for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = lock(&self.shared);
        match st.value.take() {
            Some(v) => Poll::Ready(Ok(v)),
            None if st.sender_gone => Poll::Ready(Err(RecvError::Closed)),
            None => {
                set_waker(&mut st.rx_waker, cx.waker());
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.close();
        let value = lock(&self.shared).value.take();
        drop(value); // outside the lock: a value's destructor is user code
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.shared);
        f.debug_struct("Receiver")
            .field("sent", &st.value.is_some())
            .field("sender_gone", &st.sender_gone)
            .finish()
    }
}
