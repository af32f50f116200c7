//! [`Sleep`]: a future that completes at a deadline, whose timer entry is removed when it is
//! dropped; and `Timer`, the waiting part it shares with [`Timeout`](super::Timeout) and
//! [`Interval`](super::Interval).
//!
//! A `Timer` registers with the timer wheel of the runtime it is first polled on, on its
//! first pending poll (a timer that is never polled, or polled only after its deadline,
//! costs no entry). The entry's callback marks a shared slot fired and wakes the waker stored
//! there. Dropping the timer, or resetting it to another deadline, cancels the entry: its
//! callback is removed from the wheel and dropped, so a dropped long sleep leaves nothing
//! behind.
//!
//! The entry is dropped unfired when its runtime shuts down (`driver.rs`). It then marks the
//! slot orphaned and wakes the waker: a task of that runtime, woken after the shutdown, is
//! cancelled; any other poller (the timer moved to another runtime) registers the timer again
//! with its own runtime's wheel.

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::driver::{TimerHandle, call_at};

/// The waiting part of every timer future: a deadline and, once polled, a wheel entry.
pub(crate) struct Timer {
    deadline: Instant,
    entry: Option<(TimerHandle, Arc<Mutex<Slot>>)>,
}

/// Shared by a timer and its wheel entry's callback.
struct Slot {
    state: SlotState,
    waker: Option<Waker>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// The entry is in a wheel.
    Waiting,
    /// The entry fired: the deadline has passed.
    Fired,
    /// The entry was dropped unfired (its runtime shut down): the timer must register again.
    Orphaned,
}

/// The wheel entry's side of the slot: [`fire`](Entry::fire) when the deadline passes, or
/// orphan it when dropped unfired.
struct Entry(Arc<Mutex<Slot>>);

impl Entry {
    fn fire(&self) {
        let w = {
            let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
            s.state = SlotState::Fired;
            s.waker.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // A timer that cancels its entry lets go of the slot first: nobody is left to tell.
        if Arc::strong_count(&self.0) == 1 {
            return;
        }
        let w = {
            let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if s.state != SlotState::Waiting {
                return;
            }
            s.state = SlotState::Orphaned;
            s.waker.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

impl Timer {
    pub(crate) fn new(deadline: Instant) -> Self {
        Timer {
            deadline,
            entry: None,
        }
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// `Ready` once the deadline has passed; otherwise registers (or refreshes) the waker.
    pub(crate) fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.cancel();
            return Poll::Ready(());
        }
        if let Some((_, slot)) = &self.entry {
            let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
            match s.state {
                SlotState::Fired => return Poll::Ready(()),
                SlotState::Waiting => {
                    if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        s.waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
                SlotState::Orphaned => {}
            }
            drop(s);
            self.cancel();
        }
        let slot = Arc::new(Mutex::new(Slot {
            state: SlotState::Waiting,
            waker: Some(cx.waker().clone()),
        }));
        let entry = Entry(Arc::clone(&slot));
        let handle = call_at(self.deadline, move || entry.fire());
        self.entry = Some((handle, slot));
        Poll::Pending
    }

    /// Moves the deadline, dropping the wheel entry (the next pending poll registers anew).
    pub(crate) fn reset(&mut self, deadline: Instant) {
        self.cancel();
        self.deadline = deadline;
    }

    fn cancel(&mut self) {
        if let Some((h, slot)) = self.entry.take() {
            // The slot goes first, so that the entry, dropped by the cancel, has nobody to
            // tell.
            drop(slot);
            h.cancel();
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("deadline", &self.deadline)
            .field("registered", &self.entry.is_some())
            .finish()
    }
}

/// A future that completes with `()` at its deadline (tokio's `Sleep`). Dropping it before
/// then removes its timer entry.
///
/// Unlike [`ito::sleep`](crate::sleep), which returns a shareable
/// [`ito::Future`](crate::Future) (so `.await` yields a `Result` and a dropped sleep keeps
/// its timer until it fires), a `Sleep` belongs to one awaiter: `.await` yields `()`, and it
/// can be [`reset`](Self::reset) to another deadline.
///
/// Cancel-safe: dropping it loses nothing (and frees its timer entry).
///
/// ```
/// use std::time::{Duration, Instant};
/// use ito::time::Sleep;
/// let start = Instant::now();
/// ito::block_on(Sleep::new(Duration::from_millis(2)));
/// assert!(start.elapsed() >= Duration::from_millis(2));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    timer: Timer,
}

impl Sleep {
    /// A sleep of `duration` from now.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let nap = ito::time::Sleep::new(Duration::from_millis(1));
    /// ito::block_on(nap);
    /// ```
    pub fn new(duration: Duration) -> Sleep {
        Sleep::until(Instant::now() + duration)
    }

    /// A sleep until `deadline` (complete at once if it has passed).
    ///
    /// ```
    /// let past = std::time::Instant::now();
    /// ito::block_on(ito::time::Sleep::until(past));
    /// ```
    pub fn until(deadline: Instant) -> Sleep {
        Sleep {
            timer: Timer::new(deadline),
        }
    }

    /// When it completes.
    ///
    /// ```
    /// let at = std::time::Instant::now();
    /// assert_eq!(ito::time::Sleep::until(at).deadline(), at);
    /// ```
    pub fn deadline(&self) -> Instant {
        self.timer.deadline()
    }

    /// Whether the deadline has passed.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert!(!ito::time::Sleep::new(Duration::from_secs(60)).is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.timer.deadline()
    }

    /// Moves the deadline (earlier or later), also after the sleep completed.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut sleep = ito::time::Sleep::new(Duration::from_secs(3600));
    /// sleep.reset(Instant::now());
    /// ito::block_on(&mut sleep); // no hour-long wait
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.timer.reset(deadline);
    }
}

impl StdFuture for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.timer.poll_elapsed(cx)
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.timer.deadline())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wheel entry's callback holds the only other reference to the slot: once the
    /// sleep is dropped the slot is gone, so the entry was removed (not left to fire).
    #[test]
    fn a_dropped_sleep_removes_its_timer_entry() {
        let mut sleep = Sleep::new(Duration::from_secs(3600));
        let pinned = Pin::new(&mut sleep);
        assert!(
            pinned
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        let slot = Arc::downgrade(&sleep.timer.entry.as_ref().expect("registered").1);
        assert_eq!(slot.strong_count(), 2, "the sleep and its wheel entry");
        drop(sleep);
        assert_eq!(slot.strong_count(), 0, "the wheel entry was not removed");
    }

    /// A reset drops the old entry at once; the next poll registers the new deadline.
    #[test]
    fn reset_replaces_the_timer_entry() {
        let mut sleep = Sleep::new(Duration::from_secs(3600));
        let cx = &mut Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut sleep).poll(cx).is_pending());
        let old = Arc::downgrade(&sleep.timer.entry.as_ref().expect("registered").1);
        sleep.reset(Instant::now() + Duration::from_secs(7200));
        assert_eq!(old.strong_count(), 0, "the old entry was not removed");
        assert!(Pin::new(&mut sleep).poll(cx).is_pending());
        assert!(sleep.timer.entry.is_some());
        sleep.reset(Instant::now());
        assert!(Pin::new(&mut sleep).poll(cx).is_ready());
    }
}
