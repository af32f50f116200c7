//! A watch channel: one value that a [`Sender`] replaces and many [`Receiver`]s read.
//!
//! Receivers see the latest value ([`Receiver::borrow`]), not every value: a receiver that
//! waits with [`Receiver::changed`] wakes once the value changed since it last marked it
//! seen, however many times that was. The channel closes when the sender is dropped:
//! `changed` then fails once the receiver has seen the last value.
//!
//! The value sits in a read-write lock (readers borrow it without blocking each other); a
//! version count, the handle counts and the wait list (`wait_list.rs`) of `changed`
//! futures sit under one mutex. A send writes the value first, then bumps the version and
//! wakes every waiter (`condvar.rs`); a receiver reads the version first, then
//! the value, so the value it reads is never older than the version it marks seen (at worst
//! it is newer, and the next `changed` returns at once for a value already read).
//!
//! ```
//! let (tx, mut rx) = ito::sync::watch::channel("starting");
//! let watcher = ito::spawn(async move {
//!     rx.changed().await.unwrap();
//!     *rx.borrow_and_update()
//! });
//! tx.send("ready").unwrap();
//! assert_eq!(watcher.wait(), Ok("ready"));
//! ```

use std::fmt;
use std::future::Future as StdFuture;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::block;
use super::condvar::{CondWait, wake_all};
use super::wait_list::{WaitList, WakeList};
use crate::channel::{RecvError, SendError};
use crate::loom::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

/// A watch channel holding `init`.
///
/// ```
/// let (tx, rx) = ito::sync::watch::channel(0);
/// tx.send(1).unwrap();
/// assert_eq!(*rx.borrow(), 1);
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        value: RwLock::new(init),
        state: Mutex::new(State {
            version: 0,
            sender_alive: true,
            receivers: 1,
            waiters: WaitList::new(),
        }),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared, seen: 0 },
    )
}

struct Shared<T> {
    value: RwLock<T>,
    state: Mutex<State>,
}

struct State {
    /// Bumped by every send, after the value is written.
    version: u64,
    sender_alive: bool,
    receivers: usize,
    /// `changed` futures waiting for a new version or the close.
    waiters: WaitList<()>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under this lock, so a poisoned lock guards a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> Ref<'_, T> {
        // A `send_modify` closure that panicked poisons the lock; the value is still there.
        Ref(self.value.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Changes the value with `f`, then publishes the new version.
    fn modify<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let r = {
            let mut v = self.value.write().unwrap_or_else(|e| e.into_inner());
            f(&mut v)
        };
        let mut wakes = WakeList::new();
        {
            let mut st = self.lock();
            st.version += 1;
            wake_all(&mut st.waiters, &mut wakes);
        }
        wakes.wake_all();
        r
    }
}

/// The sending half of a watch channel: it replaces the value. The channel closes when it is
/// dropped.
///
/// ```
/// let (tx, rx) = ito::sync::watch::channel(vec![1]);
/// tx.send_modify(|v| v.push(2));
/// assert_eq!(*rx.borrow(), [1, 2]);
/// ```
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Replaces the value and wakes every receiver waiting in
    /// [`changed`](Receiver::changed); hands the value back if there are no receivers.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel(1);
    /// assert!(tx.send(2).is_ok());
    /// drop(rx);
    /// assert_eq!(tx.send(3).unwrap_err().0, 3);
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.shared.lock().receivers == 0 {
            return Err(SendError(value));
        }
        drop(self.send_replace(value));
        Ok(())
    }

    /// Replaces the value whether or not there are receivers, and returns the old one.
    ///
    /// ```
    /// let (tx, _rx) = ito::sync::watch::channel('a');
    /// assert_eq!(tx.send_replace('b'), 'a');
    /// ```
    pub fn send_replace(&self, value: T) -> T {
        self.shared.modify(|v| std::mem::replace(v, value))
    }

    /// Changes the value in place and notifies the receivers as a send does.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel(0);
    /// tx.send_modify(|n| *n += 5);
    /// assert_eq!(*rx.borrow(), 5);
    /// ```
    pub fn send_modify(&self, f: impl FnOnce(&mut T)) {
        self.shared.modify(f);
    }

    /// The current value. Senders wait while it is borrowed: keep the borrow short.
    ///
    /// ```
    /// let (tx, _rx) = ito::sync::watch::channel(9);
    /// assert_eq!(*tx.borrow(), 9);
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        self.shared.read()
    }

    /// A new receiver, which has seen the current value.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel(0);
    /// drop(rx);
    /// let rx = tx.subscribe();
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let mut st = self.shared.lock();
        st.receivers += 1;
        Receiver {
            shared: Arc::clone(&self.shared),
            seen: st.version,
        }
    }

    /// How many receivers there are.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel(());
    /// assert_eq!(tx.receiver_count(), 1);
    /// # drop(rx);
    /// ```
    pub fn receiver_count(&self) -> usize {
        self.shared.lock().receivers
    }

    /// Whether every receiver is gone ([`send`](Self::send) would fail).
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel(());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut wakes = WakeList::new();
        {
            let mut st = self.shared.lock();
            st.sender_alive = false;
            wake_all(&mut st.waiters, &mut wakes);
        }
        wakes.wake_all();
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("value", &*self.borrow())
            .finish_non_exhaustive()
    }
}

/// A receiving half of a watch channel. Clone it for more readers; each keeps its own idea
/// of which version it has seen.
///
/// ```
/// let (tx, rx) = ito::sync::watch::channel(0);
/// let readers: Vec<_> = (0..4)
///     .map(|_| {
///         let mut rx = rx.clone();
///         ito::spawn(async move {
///             rx.changed().await.unwrap();
///             *rx.borrow()
///         })
///     })
///     .collect();
/// tx.send(7).unwrap();
/// for r in readers {
///     assert_eq!(r.wait(), Ok(7));
/// }
/// ```
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The version this receiver marked seen.
    seen: u64,
}

impl<T> Receiver<T> {
    /// The current value, without marking it seen. Senders wait while it is borrowed: keep
    /// the borrow short.
    ///
    /// ```
    /// let (tx, rx) = ito::sync::watch::channel("a");
    /// tx.send("b").unwrap();
    /// assert_eq!(*rx.borrow(), "b");
    /// assert_eq!(rx.has_changed(), Ok(true)); // still unseen
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        self.shared.read()
    }

    /// The current value, marking it seen.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::watch::channel(1);
    /// tx.send(2).unwrap();
    /// assert_eq!(*rx.borrow_and_update(), 2);
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        // The version first, then the value: the value is at least that new.
        self.seen = self.shared.lock().version;
        self.shared.read()
    }

    /// Whether the value changed since this receiver last marked it seen; fails with
    /// [`RecvError::Closed`] if it did not and the sender is gone.
    ///
    /// ```
    /// use ito::channel::RecvError;
    /// let (tx, rx) = ito::sync::watch::channel(());
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// drop(tx);
    /// assert_eq!(rx.has_changed(), Err(RecvError::Closed));
    /// ```
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let st = self.shared.lock();
        if st.version != self.seen {
            Ok(true)
        } else if st.sender_alive {
            Ok(false)
        } else {
            Err(RecvError::Closed)
        }
    }

    /// Waits until the value changed since this receiver last marked it seen, and marks the
    /// new version seen (read it with [`borrow`](Self::borrow)). Returns at once if it already
    /// changed. Fails with [`RecvError::Closed`] once the sender is gone and the last value
    /// was seen.
    ///
    /// Cancel-safe: the version is marked seen only when the future returns `Ok`; dropping
    /// it loses nothing.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// ito::block_on(rx.changed()).unwrap(); // already changed: at once
    /// assert_eq!(*rx.borrow(), 1);
    /// ```
    pub fn changed(&mut self) -> Changed<'_, T> {
        Changed {
            rx: self,
            wait: CondWait::new(),
        }
    }

    /// Waits from plain code, as [`changed`](Self::changed) (handing a worker's place to
    /// another thread meanwhile); fails as `changed` does, or with [`RecvError::Cancelled`]
    /// if the calling task is cancelled while it waits.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::watch::channel(0);
    /// std::thread::spawn(move || tx.send(3).unwrap());
    /// rx.changed_blocking().unwrap();
    /// assert_eq!(*rx.borrow(), 3);
    /// ```
    pub fn changed_blocking(&mut self) -> Result<(), RecvError> {
        block(self.changed()).unwrap_or(Err(RecvError::Cancelled))
    }

    /// Marks the current value seen without reading it.
    ///
    /// ```
    /// let (tx, mut rx) = ito::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// rx.mark_unchanged();
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn mark_unchanged(&mut self) {
        self.seen = self.shared.lock().version;
    }
}

impl<T> Clone for Receiver<T> {
    /// A receiver that has seen what this one has seen.
    fn clone(&self) -> Self {
        self.shared.lock().receivers += 1;
        Receiver {
            shared: Arc::clone(&self.shared),
            seen: self.seen,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.lock().receivers -= 1;
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("value", &*self.borrow())
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// A borrow of a watch channel's value ([`Receiver::borrow`], [`Sender::borrow`]); senders
/// wait until it is dropped.
///
/// ```
/// let (_tx, rx) = ito::sync::watch::channel(String::from("v1"));
/// let r: ito::sync::watch::Ref<'_, String> = rx.borrow();
/// assert_eq!(r.len(), 2);
/// ```
pub struct Ref<'a, T>(RwLockReadGuard<'a, T>);

impl<T> Deref for Ref<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`Receiver::changed`].
///
/// ```
/// let (tx, mut rx) = ito::sync::watch::channel(0);
/// let changed = rx.changed();
/// tx.send(1).unwrap();
/// assert_eq!(ito::block_on(changed), Ok(()));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Changed<'a, T> {
    rx: &'a mut Receiver<T>,
    wait: CondWait,
}

impl<T> StdFuture for Changed<'_, T> {
    type Output = Result<(), RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node inside `wait` is never moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let mut st = this.rx.shared.lock();
        if st.version != this.rx.seen {
            this.rx.seen = st.version;
            return Poll::Ready(Ok(()));
        }
        if !st.sender_alive {
            return Poll::Ready(Err(RecvError::Closed));
        }
        // SAFETY: this channel's list, under its lock; `Drop` leaves it.
        unsafe { this.wait.park(&mut st.waiters, cx) };
        Poll::Pending
    }
}

impl<T> Drop for Changed<'_, T> {
    fn drop(&mut self) {
        if self.wait.was_parked() {
            let mut st = self.rx.shared.lock();
            // SAFETY: the list it was parked on, under its lock.
            unsafe { self.wait.leave(&mut st.waiters) };
        }
    }
}

impl<T> fmt::Debug for Changed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("seen", &self.rx.seen)
            .finish_non_exhaustive()
    }
}
