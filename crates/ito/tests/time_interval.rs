//! `ito::time::{Sleep, Interval}`: a sleep's `.await` yields `()`, can be reset, and frees
//! its timer when dropped; an interval's ticks, and its three missed-tick behaviours on a
//! schedule that started in the past.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use ito::time::{Interval, MissedTickBehavior, Sleep, interval, interval_at};

const PERIOD: Duration = Duration::from_millis(20);

/// An interval that started ten periods (and a half) ago.
fn started_in_the_past(behavior: MissedTickBehavior) -> (Interval, Instant) {
    let start = Instant::now()
        .checked_sub(PERIOD * 10 + PERIOD / 2)
        .expect("the monotonic clock is older than a few periods");
    let mut every = interval_at(start, PERIOD);
    every.set_missed_tick_behavior(behavior);
    (every, start)
}

fn poll_tick_now(every: &mut Interval) -> Poll<Instant> {
    every.poll_tick(&mut Context::from_waker(Waker::noop()))
}

/// `Sleep` lasts at least its duration and yields `()`; a reset to the past completes it.
#[test]
fn sleep_awaits_to_unit_and_resets() {
    let start = Instant::now();
    let (): () = ito::block_on(Sleep::new(Duration::from_millis(3)));
    assert!(start.elapsed() >= Duration::from_millis(3));
    let mut long = Sleep::new(Duration::from_secs(3600));
    let cx = &mut Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut long).poll(cx).is_pending());
    assert!(!long.is_elapsed());
    long.reset(Instant::now());
    assert!(Pin::new(&mut long).poll(cx).is_ready());
    assert!(long.is_elapsed());
}

/// Hour-long sleeps inside `timeout`s, in tasks: each timeout ends first and drops its
/// sleep (whose timer entry is removed; `time::sleep`'s unit tests check that), and no task
/// is held up by a sleep it dropped.
#[test]
fn dropped_sleeps_in_tasks() {
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            ito::spawn(async {
                let r = ito::timeout(
                    Duration::from_millis(1),
                    Sleep::new(Duration::from_secs(3600)),
                );
                r.await.is_err()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(
            t.wait(),
            Ok(true),
            "the hour-long sleep cannot finish first"
        );
    }
}

/// The first tick completes at once with the start; then one tick per period, each returning
/// its deadline.
#[test]
fn ticks_return_their_deadlines() {
    let start = Instant::now();
    let mut every = interval_at(start, PERIOD);
    let ticks: Vec<Instant> = ito::block_on(async {
        let mut ticks = Vec::new();
        for _ in 0..4 {
            ticks.push(every.tick().await);
        }
        ticks
    });
    let expected: Vec<Instant> = (0..4).map(|k| start + PERIOD * k).collect();
    assert_eq!(ticks, expected);
    assert!(
        Instant::now() >= start + PERIOD * 3,
        "a tick completed before its deadline"
    );
}

/// `Burst`: the missed ticks come at once, each with its own deadline, until the schedule is
/// in the future again.
#[test]
fn burst_catches_up_at_once() {
    let (mut every, start) = started_in_the_past(MissedTickBehavior::Burst);
    for k in 0..=10 {
        assert_eq!(
            poll_tick_now(&mut every),
            Poll::Ready(start + PERIOD * k),
            "tick {k}"
        );
    }
    assert!(
        poll_tick_now(&mut every).is_pending(),
        "tick 11 is due in the future"
    );
}

/// `Delay`: after a late tick, the next is one period after it was taken.
#[test]
fn delay_starts_a_new_schedule() {
    let (mut every, start) = started_in_the_past(MissedTickBehavior::Delay);
    let taken = Instant::now();
    assert_eq!(poll_tick_now(&mut every), Poll::Ready(start));
    assert!(
        poll_tick_now(&mut every).is_pending(),
        "missed ticks are not caught up"
    );
    let second = ito::block_on(every.tick());
    assert!(second >= taken + PERIOD);
    let third = ito::block_on(every.tick());
    assert!(third >= second + PERIOD);
}

/// `Skip`: after a late tick, the next is the first future deadline of the original
/// schedule.
#[test]
fn skip_keeps_the_original_schedule() {
    let (mut every, start) = started_in_the_past(MissedTickBehavior::Skip);
    let taken = Instant::now();
    assert_eq!(poll_tick_now(&mut every), Poll::Ready(start));
    assert!(
        poll_tick_now(&mut every).is_pending(),
        "missed ticks are dropped"
    );
    let second = ito::block_on(every.tick());
    assert!(second > taken);
    let since_start = (second - start).as_nanos();
    assert_eq!(
        since_start % PERIOD.as_nanos(),
        0,
        "off the original schedule"
    );
    assert!(since_start / PERIOD.as_nanos() >= 11);
}

/// A `tick` future dropped before it completes takes no tick: the next one returns the same
/// deadline. `reset` moves the next tick to one period from now.
#[test]
fn a_dropped_tick_takes_nothing_and_reset_restarts() {
    let start = Instant::now() + PERIOD;
    let mut every = interval_at(start, PERIOD);
    {
        let mut tick = std::pin::pin!(every.tick());
        let cx = &mut Context::from_waker(Waker::noop());
        assert!(tick.as_mut().poll(cx).is_pending());
    }
    assert_eq!(
        ito::block_on(every.tick()),
        start,
        "the dropped tick took one"
    );
    let before = Instant::now();
    every.reset();
    assert!(ito::block_on(every.tick()) >= before + PERIOD);
}

/// An interval moved into a task ticks there; the first tick is at once.
#[test]
fn interval_in_a_task() {
    let created = Instant::now();
    let mut every = interval(Duration::from_millis(1));
    let ticks = ito::spawn(async move {
        let mut ticks = Vec::new();
        for _ in 0..5 {
            ticks.push(every.tick().await);
        }
        ticks
    })
    .wait()
    .unwrap();
    assert!(ticks[0] >= created);
    for w in ticks.windows(2) {
        assert_eq!(w[1] - w[0], Duration::from_millis(1));
    }
}
