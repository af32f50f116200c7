//! [`Interval`]: ticks at a fixed period (tokio's `Interval`).
//!
//! An interval is a [`Sleep`] to the next tick's deadline: each completed tick returns that
//! deadline and resets the sleep to the one after. When a tick is taken late (the task was
//! busy for longer than a period), [`MissedTickBehavior`] picks the next deadline: catch up
//! at once ([`Burst`](MissedTickBehavior::Burst)), start again one period from now
//! ([`Delay`](MissedTickBehavior::Delay)), or jump to the next deadline on the original
//! schedule ([`Skip`](MissedTickBehavior::Skip)).

use std::fmt;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::sleep::Sleep;
use crate::sync::Cancelled;

/// A tick taken later than this after its deadline counts as missed (a timer fires a little
/// after its deadline, and that is not a missed tick).
const TOLERANCE: Duration = Duration::from_millis(5);

/// An interval whose first tick completes at once, then every `period`.
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
/// let mut every = ito::time::interval(Duration::from_millis(2));
/// let first = ito::block_on(every.tick());
/// let second = ito::block_on(every.tick());
/// assert_eq!(second - first, Duration::from_millis(2));
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// An interval whose first tick completes at `start`, then every `period`.
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now() + Duration::from_millis(1);
/// let mut every = ito::time::interval_at(start, Duration::from_secs(1));
/// assert_eq!(ito::block_on(every.tick()), start);
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "ito::time::interval: the period must be non-zero"
    );
    Interval {
        sleep: Sleep::until(start),
        period,
        missed: MissedTickBehavior::default(),
    }
}

/// What an [`Interval`] does when a tick is taken more than a few milliseconds after its
/// deadline. With a period of 10 ms, ticks due at 0, 10, 20, ... and one taken at 35:
///
/// | behavior | the next ticks are due at |
/// |---|---|
/// | `Burst` (the default) | 10, 20, 30 (all at once: already due), then 40, 50, ... |
/// | `Delay` | 45, 55, 65, ... (one period after the late tick) |
/// | `Skip` | 40, 50, 60, ... (the original schedule, missed ticks dropped) |
///
/// ```
/// use ito::time::MissedTickBehavior;
/// let mut every = ito::time::interval(std::time::Duration::from_secs(1));
/// every.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Skip);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MissedTickBehavior {
    /// Take the missed ticks as fast as they are asked for, until back on schedule.
    #[default]
    Burst,
    /// Start a new schedule one period after the late tick.
    Delay,
    /// Drop the missed ticks: the next is the first deadline of the original schedule that
    /// lies in the future.
    Skip,
}

impl MissedTickBehavior {
    /// The deadline after a tick due at `due` and taken (late) at `now`.
    fn next(self, due: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => due + period,
            MissedTickBehavior::Delay => now + period,
            MissedTickBehavior::Skip => {
                let late = (now - due).as_nanos();
                let into_period = late % period.as_nanos();
                // `into_period < period`, which is a `Duration`: it fits in u64 nanoseconds
                // whenever the period does, and a period beyond that cannot be missed.
                let into_period = Duration::from_nanos(u64::try_from(into_period).unwrap_or(0));
                now + (period - into_period)
            }
        }
    }
}

/// Ticks at a fixed period; see [`interval`]. Its first tick completes at its start.
///
/// ```
/// use std::time::Duration;
/// let mut every = ito::time::interval(Duration::from_millis(1));
/// let ticker = ito::spawn(async move {
///     for _ in 0..3 {
///         every.tick().await;
///     }
///     "three ticks"
/// });
/// assert_eq!(ticker.wait(), Ok("three ticks"));
/// ```
pub struct Interval {
    /// Sleeps until the next tick's deadline.
    sleep: Sleep,
    period: Duration,
    missed: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns its deadline (not the moment it was taken).
    ///
    /// Cancel-safe: a tick is taken only when the future returns it; dropping the future
    /// leaves the interval where it was.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let start = Instant::now();
    /// let mut every = ito::time::interval_at(start, Duration::from_millis(3));
    /// assert_eq!(ito::block_on(every.tick()), start);
    /// assert_eq!(ito::block_on(every.tick()), start + Duration::from_millis(3));
    /// ```
    pub fn tick(&mut self) -> Tick<'_> {
        Tick { interval: self }
    }

    /// Polls for the next tick: `Ready` with its deadline once it is due (the interval then
    /// moves on to the tick after), otherwise `Pending` and `cx` is woken when it is due.
    ///
    /// ```
    /// use std::task::{Context, Waker};
    /// use std::time::{Duration, Instant};
    /// let mut every = ito::time::interval_at(Instant::now(), Duration::from_secs(60));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(every.poll_tick(&mut cx).is_ready()); // the first tick is due
    /// assert!(every.poll_tick(&mut cx).is_pending()); // the next is a minute away
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let due = self.sleep.deadline();
        let now = Instant::now();
        let next = if now > due + TOLERANCE {
            self.missed.next(due, now, self.period)
        } else {
            due + self.period
        };
        self.sleep.reset(next);
        Poll::Ready(due)
    }

    /// Waits from plain code for the next tick, as [`tick`](Self::tick) (handing a worker's
    /// place to another thread meanwhile); fails only if the calling task is cancelled.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut every = ito::time::interval(Duration::from_millis(1));
    /// let a = every.tick_blocking().unwrap();
    /// let b = every.tick_blocking().unwrap();
    /// assert!(b > a);
    /// ```
    pub fn tick_blocking(&mut self) -> Result<Instant, Cancelled> {
        crate::sync::block(self.tick())
    }

    /// Restarts the schedule: the next tick is due one period from now.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut every = ito::time::interval(Duration::from_millis(1));
    /// every.reset();
    /// let before = Instant::now();
    /// assert!(ito::block_on(every.tick()) > before);
    /// ```
    pub fn reset(&mut self) {
        self.sleep.reset(Instant::now() + self.period);
    }

    /// The period.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(ito::time::interval(Duration::from_secs(2)).period(), Duration::from_secs(2));
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What happens when a tick is missed.
    ///
    /// ```
    /// use ito::time::MissedTickBehavior;
    /// let every = ito::time::interval(std::time::Duration::from_secs(1));
    /// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what happens when a tick is missed.
    ///
    /// ```
    /// use ito::time::MissedTickBehavior;
    /// let mut every = ito::time::interval(std::time::Duration::from_secs(1));
    /// every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next", &self.sleep.deadline())
            .field("period", &self.period)
            .field("missed_tick_behavior", &self.missed)
            .finish()
    }
}

/// The future of [`Interval::tick`]: the tick's deadline.
///
/// ```
/// let mut every = ito::time::interval(std::time::Duration::from_secs(1));
/// let tick: ito::time::Tick<'_> = every.tick();
/// ito::block_on(tick); // the first tick: at once
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Tick<'a> {
    interval: &'a mut Interval,
}

impl StdFuture for Tick<'_> {
    type Output = Instant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        self.interval.poll_tick(cx)
    }
}

impl fmt::Debug for Tick<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tick")
            .field("due", &self.interval.sleep.deadline())
            .finish()
    }
}
