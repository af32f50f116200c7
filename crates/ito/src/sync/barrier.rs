//! [`Barrier`]: `n` parties meet, then all go on; reusable, with a leader per round (as
//! `std::sync::Barrier`).
//!
//! A round is a [`Promise<()>`](crate::Promise) under a small mutex with the arrival count.
//! The `n`-th arrival takes the round's promise, puts a fresh one for the next round, and
//! completes the old one after unlocking: every waiter of the round is released at once, and
//! arrivals for the next round already wait on the new promise. The last arrival is the
//! round's leader.
//!
//! An async `wait` arrives when it is first polled; once it has arrived, dropping it does not
//! take the arrival back (the round would otherwise be left short by a party that already
//! counted itself in). This is what `std`'s barrier does for a thread that leaves; plan
//! cancellation of barrier waiters accordingly.

use std::fmt;
use std::future::{Future as StdFuture, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Cancelled, block};
use crate::future::Wait;
use crate::loom::Mutex;
use crate::{Future, Promise};

/// A reusable barrier for `n` parties (tasks or threads).
///
/// ```
/// use std::sync::Arc;
/// let barrier = Arc::new(ito::sync::Barrier::new(3));
/// let tasks: Vec<_> = (0..3)
///     .map(|_| {
///         let b = barrier.clone();
///         ito::spawn(async move { b.wait().await.is_leader() })
///     })
///     .collect();
/// let leaders = tasks.into_iter().map(|t| t.wait().unwrap()).filter(|l| *l).count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    parties: usize,
    round: Mutex<Round>,
}

struct Round {
    arrived: usize,
    release: Promise<()>,
}

/// What [`Barrier::wait`] returns: whether this party was the round's leader (its last
/// arrival; exactly one per round).
///
/// ```
/// let b = ito::sync::Barrier::new(1);
/// let r = b.wait_blocking().unwrap();
/// assert!(r.is_leader());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "tells whether this party is the round's leader"]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// Whether this party arrived last in its round (exactly one does).
    ///
    /// ```
    /// let b = ito::sync::Barrier::new(1);
    /// assert!(b.wait_blocking().unwrap().is_leader());
    /// ```
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}

impl Barrier {
    /// A barrier for `parties` parties (0 behaves as 1: nobody waits).
    ///
    /// ```
    /// let b = ito::sync::Barrier::new(2);
    /// # drop(b);
    /// ```
    pub fn new(parties: usize) -> Barrier {
        Barrier {
            parties: parties.max(1),
            round: Mutex::new(Round {
                arrived: 0,
                release: Promise::new(),
            }),
        }
    }

    /// Arrives and waits for the round's other parties.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let b = Arc::new(ito::sync::Barrier::new(2));
    /// let b2 = b.clone();
    /// let other = ito::spawn(async move { b2.wait().await.is_leader() });
    /// let me = ito::block_on(b.wait()).is_leader();
    /// assert!(me ^ other.wait().unwrap());
    /// ```
    pub fn wait(&self) -> BarrierWait<'_> {
        BarrierWait {
            barrier: self,
            waiting: None,
        }
    }

    /// Arrives and waits from plain code (handing a worker's place to another thread
    /// meanwhile); fails only if the calling task is cancelled (its arrival still counts).
    ///
    /// ```
    /// let b = ito::sync::Barrier::new(2);
    /// std::thread::scope(|s| {
    ///     let other = s.spawn(|| b.wait_blocking().unwrap().is_leader());
    ///     let me = b.wait_blocking().unwrap().is_leader();
    ///     assert!(me ^ other.join().unwrap());
    /// });
    /// ```
    pub fn wait_blocking(&self) -> Result<BarrierWaitResult, Cancelled> {
        block(self.wait())
    }

    /// Counts one arrival: the leader's result, or the round's release to wait for.
    fn arrive(&self) -> Result<BarrierWaitResult, Future<()>> {
        let released = {
            let mut round = self.round.lock().unwrap_or_else(|e| e.into_inner());
            round.arrived += 1;
            if round.arrived < self.parties {
                return Err(round.release.future());
            }
            round.arrived = 0;
            std::mem::take(&mut round.release)
        };
        let _ = released.try_success(());
        Ok(BarrierWaitResult { leader: true })
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("parties", &self.parties)
            .finish_non_exhaustive()
    }
}

/// The future of [`Barrier::wait`]. It arrives when first polled.
///
/// ```
/// let b = ito::sync::Barrier::new(1);
/// assert!(ito::block_on(b.wait()).is_leader());
/// ```
#[must_use = "futures do nothing unless awaited (and arrive when first polled)"]
pub struct BarrierWait<'a> {
    barrier: &'a Barrier,
    waiting: Option<Wait<()>>,
}

impl StdFuture for BarrierWait<'_> {
    type Output = BarrierWaitResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<BarrierWaitResult> {
        // SAFETY: `waiting` is structurally pinned: once set it is never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        if this.waiting.is_none() {
            match this.barrier.arrive() {
                Ok(leader) => return Poll::Ready(leader),
                Err(release) => this.waiting = Some(release.into_future()),
            }
        }
        let waiting = this.waiting.as_mut().expect("set above");
        // SAFETY: as above; `waiting` lives in the pinned future.
        let waiting = unsafe { Pin::new_unchecked(waiting) };
        // The promise is held by the barrier (or the leader completing it), never dropped
        // uncompleted, so the only result is `Ok(())`.
        waiting
            .poll(cx)
            .map(|_| BarrierWaitResult { leader: false })
    }
}

impl fmt::Debug for BarrierWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWait")
            .field("arrived", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}
