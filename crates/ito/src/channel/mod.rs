//! Multi-producer, multi-consumer channels: [`bounded`] (with `bounded(0)` a rendezvous) and
//! [`unbounded`].
//!
//! Both ends are cloneable handles. Each value goes to exactly one receiver, in the order it
//! was sent (per sender), and waiting senders and receivers are served first come, first
//! served. Every operation comes in three forms: async (`send(v).await`, `recv().await`),
//! blocking from plain code (`send_blocking`, `recv_blocking`, which on a worker hand the
//! worker's place to another thread while they wait) and non-blocking (`try_send`,
//! `try_recv`).
//!
//! **Closing.** Either end can [`close`](Sender::close) the channel; dropping the last
//! [`Sender`] closes it too. Once closed, sends fail and receivers get what is still buffered,
//! then [`RecvError::Closed`]. Dropping the last [`Receiver`] closes it and drops what is
//! buffered. Errors of a send always hand the value back ([`SendError`], [`TrySendError`],
//! [`SendBlockingError`]).
//!
//! **Rendezvous.** `bounded(0)` has no buffer: a send completes only when a receiver has taken
//! the value (document 003's `Coro::Channel->new(1)`, where a `put` waits for the `get`).
//!
//! **Consuming.** `while let Ok(v) = rx.recv().await`, the blocking [`Receiver::iter`] / `for v
//! in rx`, or [`Receiver`] as a [`futures_core::Stream`].
//!
//! The design (one short critical section per operation, direct hand-off between waiters,
//! cancel safety) is in `chan.rs` and `docs/sync.md`.
//!
//! ```
//! // Document 003's hand-made pool: workers reading jobs from a bounded channel.
//! let (jobs, queue) = ito::channel::bounded::<Box<dyn FnOnce() -> u64 + Send>>(4);
//! let (results, collected) = ito::channel::unbounded();
//! for _ in 0..4 {
//!     let (queue, results) = (queue.clone(), results.clone());
//!     ito::spawn(async move {
//!         while let Ok(job) = queue.recv().await {
//!             results.send(job()).await.unwrap();
//!         }
//!     });
//! }
//! drop((queue, results));
//! for i in 0..100u64 {
//!     jobs.send_blocking(Box::new(move || i * i)).unwrap();
//! }
//! drop(jobs); // the workers stop once the queue is drained
//! assert_eq!(collected.iter().sum::<u64>(), (0..100).map(|i| i * i).sum());
//! ```

/// The methods both handles have (they describe the channel, not the handle); `$h` is the
/// handle in the examples, `"tx"` or `"rx"`.
macro_rules! describe_channel {
    ($h:literal) => {
        /// Whether the channel is closed: by either end, or by the last sender or the last
        /// receiver going away. Receivers may still have buffered values to take.
        ///
        #[doc = concat!("```\nlet (tx, rx) = ito::channel::unbounded::<()>();\nrx.close();\nassert!(", $h, ".is_closed());\n# drop(tx);\n```")]
        pub fn is_closed(&self) -> bool {
            self.chan.is_closed()
        }

        /// How many values are buffered.
        ///
        #[doc = concat!("```\nlet (tx, rx) = ito::channel::unbounded();\ntx.try_send(()).unwrap();\nassert_eq!(", $h, ".len(), 1);\n# drop(rx);\n```")]
        pub fn len(&self) -> usize {
            self.chan.len()
        }

        /// Whether nothing is buffered.
        ///
        #[doc = concat!("```\nlet (tx, rx) = ito::channel::bounded::<u8>(1);\nassert!(", $h, ".is_empty());\n# drop((tx, rx));\n```")]
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// The buffer's capacity: `None` for an unbounded channel, `Some(0)` for a rendezvous.
        ///
        #[doc = concat!("```\nlet (tx, rx) = ito::channel::bounded::<u8>(3);\nassert_eq!(", $h, ".capacity(), Some(3));\nassert_eq!(ito::channel::unbounded::<u8>().0.capacity(), None);\n# drop((tx, rx));\n```")]
        pub fn capacity(&self) -> Option<usize> {
            self.chan.capacity()
        }
    };
}

mod chan;
mod error;
mod receiver;
mod sender;

use std::sync::Arc;

pub use error::{RecvError, SendBlockingError, SendError, TryRecvError, TrySendError};
pub use receiver::{IntoIter, Iter, Receiver, RecvFuture, TryIter};
pub use sender::{SendFuture, Sender};

use chan::Chan;

/// A channel buffering at most `cap` values; `cap == 0` makes it a rendezvous (a send
/// completes only when a receiver takes the value).
///
/// ```
/// let (tx, rx) = ito::channel::bounded(2);
/// tx.try_send(1).unwrap();
/// tx.try_send(2).unwrap();
/// assert!(tx.try_send(3).is_err()); // full
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    assert!(cap < usize::MAX, "channel::bounded: use unbounded()");
    pair(Chan::new(Some(cap)))
}

/// A channel with an unlimited buffer: sends never wait.
///
/// ```
/// let (tx, rx) = ito::channel::unbounded();
/// for i in 0..1000 {
///     tx.try_send(i).unwrap();
/// }
/// assert_eq!(rx.len(), 1000);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(None))
}

fn pair<T>(chan: Chan<T>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(chan);
    (
        Sender {
            chan: Arc::clone(&chan),
        },
        Receiver { chan, stream: None },
    )
}
