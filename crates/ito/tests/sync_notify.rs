//! `ito::sync::Notify`: the permit, `notify_waiters` releasing exactly the waiters that
//! exist, a cancelled waiter handing its notification on, and stress runs that count every
//! notification once.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ito::sync::Notify;
use support::{CountWaker, LONG, PanicWaker, get_ok, poll_once, quiet_expected_panics, rt};

/// A `notify_one` with nobody waiting is kept (once): the next waiter passes, the one after
/// waits.
#[test]
fn notify_one_stores_one_permit() {
    let notify = Notify::new();
    notify.notify_one();
    notify.notify_one(); // still one permit
    let (_, w) = CountWaker::new();
    let mut first = Box::pin(notify.notified());
    assert!(poll_once(first.as_mut(), &w).is_ready());
    let mut second = Box::pin(notify.notified());
    assert!(poll_once(second.as_mut(), &w).is_pending());
    assert_eq!(notify.waiting(), 1);
}

/// `notify_one` wakes waiters oldest first, each once.
#[test]
fn notify_one_wakes_in_arrival_order() {
    let notify = Notify::new();
    let wakers: Vec<_> = (0..3).map(|_| CountWaker::new()).collect();
    let mut waits: Vec<_> = (0..3).map(|_| Box::pin(notify.notified())).collect();
    for (f, (_, w)) in waits.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    notify.notify_one();
    let woken: Vec<usize> = wakers.iter().map(|(c, _)| c.count()).collect();
    assert_eq!(woken, [1, 0, 0]);
    assert!(poll_once(waits[0].as_mut(), &wakers[0].1).is_ready());
    assert!(poll_once(waits[1].as_mut(), &wakers[1].1).is_pending());
    notify.notify_one();
    assert_eq!(wakers[1].0.count(), 1);
    assert_eq!(wakers[2].0.count(), 0);
}

/// `notify_waiters` releases every future created before it (queued or never polled) and
/// none created after; it stores no permit.
#[test]
fn notify_waiters_releases_exactly_the_existing_waiters() {
    let notify = Notify::new();
    let (c, w) = CountWaker::new();
    let mut queued = Box::pin(notify.notified());
    assert!(poll_once(queued.as_mut(), &w).is_pending());
    let mut unpolled = Box::pin(notify.notified());
    notify.notify_waiters();
    let mut later = Box::pin(notify.notified());
    assert_eq!(c.count(), 1);
    assert!(poll_once(queued.as_mut(), &w).is_ready());
    assert!(poll_once(unpolled.as_mut(), &w).is_ready());
    assert!(poll_once(later.as_mut(), &w).is_pending());
}

/// A waiter released by `notify_waiters` does not also use up the permit a later
/// `notify_one` stored (nobody was queued): the permit is left for the next waiter.
#[test]
fn a_waiter_released_by_notify_waiters_leaves_the_permit() {
    let notify = Notify::new();
    let (_, w) = CountWaker::new();
    let mut released = Box::pin(notify.notified());
    notify.notify_waiters();
    notify.notify_one(); // nobody queued: stored as the permit
    assert!(poll_once(released.as_mut(), &w).is_ready());
    let mut next = Box::pin(notify.notified());
    assert!(
        poll_once(next.as_mut(), &w).is_ready(),
        "the permit was used up by a waiter notify_waiters had released"
    );
}

/// A waiter chosen by `notify_one` and dropped before it saw it hands the notification to the
/// next waiter; with nobody left it becomes the permit.
#[test]
fn a_cancelled_waiter_passes_its_notification_on() {
    let notify = Notify::new();
    let (c1, w1) = CountWaker::new();
    let (c2, w2) = CountWaker::new();
    let mut a = Box::pin(notify.notified());
    let mut b = Box::pin(notify.notified());
    assert!(poll_once(a.as_mut(), &w1).is_pending());
    assert!(poll_once(b.as_mut(), &w2).is_pending());
    notify.notify_one();
    assert_eq!((c1.count(), c2.count()), (1, 0));
    drop(a);
    assert_eq!(c2.count(), 1, "the notification went to the next waiter");
    drop(b); // chosen in turn, and dropped: the permit keeps it
    ito::block_on(notify.notified());
    // A waiter dropped while still queued takes nothing with it.
    let mut c = Box::pin(notify.notified());
    assert!(poll_once(c.as_mut(), &w1).is_pending());
    drop(c);
    assert_eq!(notify.waiting(), 0);
    let mut d = Box::pin(notify.notified());
    assert!(
        poll_once(d.as_mut(), &w1).is_pending(),
        "no permit was made up"
    );
}

/// A panicking waker is contained, as every wake-up of the wait list is: it unwinds neither
/// out of `notify_one` nor out of the drop of a chosen `Notified` that hands its notification
/// on (a drop that may run while a panic is already unwinding, where a second one aborts).
#[test]
fn a_panicking_waker_is_contained() {
    quiet_expected_panics();
    let notify = Notify::new();
    let panicking = PanicWaker::waker();
    let (c, w) = CountWaker::new();
    let mut a = Box::pin(notify.notified());
    let mut b = Box::pin(notify.notified());
    assert!(poll_once(a.as_mut(), &panicking).is_pending());
    assert!(poll_once(b.as_mut(), &panicking).is_pending());
    notify.notify_one(); // chooses `a`, whose waker panics
    drop(a); // hands the notification to `b`, whose waker panics
    assert!(poll_once(b.as_mut(), &w).is_ready(), "`b` was handed it");
    assert_eq!(c.count(), 0);
}

/// Yields until `done` holds, failing with `what` at `deadline`.
fn wait_until(deadline: Instant, what: &str, done: impl Fn() -> bool) {
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::yield_now();
    }
}

/// A notifier and a waiter in lock-step, 20,000 rounds on two threads: every `notify_one`
/// is received exactly once whether it lands before the waiter queues (the permit) or after.
#[test]
fn stress_no_lost_notification_ping_pong() {
    const ROUNDS: usize = 20_000;
    let ping = Arc::new(Notify::new());
    let pong = Arc::new(Notify::new());
    let received = Arc::new(AtomicUsize::new(0));
    let (p, q, r) = (ping.clone(), pong.clone(), received.clone());
    let waiter = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            ito::block_on(p.notified());
            r.fetch_add(1, Ordering::SeqCst);
            q.notify_one();
        }
    });
    for i in 0..ROUNDS {
        ping.notify_one();
        pong.notified_blocking().unwrap();
        assert_eq!(received.load(Ordering::SeqCst), i + 1);
    }
    waiter.join().unwrap();
    assert_eq!(received.load(Ordering::SeqCst), ROUNDS);
}

/// `waiters` tasks on a four-worker runtime each wait on one `Notify` `rounds` times; each
/// round, once all are queued, `release` is called. Checks, every round, that every waiter
/// was woken exactly once (counted per waiter), and at the end that no permit is left over.
fn waiters_woken_once_per_round(waiters: usize, rounds: usize, release: impl Fn(&Notify)) {
    let rt = rt(4);
    let notify = Arc::new(Notify::new());
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new((0..waiters).map(|_| AtomicUsize::new(0)).collect());
    let tasks: Vec<_> = (0..waiters)
        .map(|i| {
            let (n, counts) = (notify.clone(), counts.clone());
            rt.spawn(async move {
                for _ in 0..rounds {
                    n.notified().await;
                    counts[i].fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let deadline = Instant::now() + LONG;
    let total = || {
        counts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .sum::<usize>()
    };
    for round in 1..=rounds {
        wait_until(deadline, "waiters did not queue", || {
            notify.waiting() == waiters
        });
        release(&notify);
        wait_until(deadline, "a notification was lost", || {
            total() >= round * waiters
        });
        assert_eq!(total(), round * waiters);
        for c in counts.iter() {
            let n = c.load(Ordering::SeqCst);
            assert_eq!(n, round, "a waiter was woken twice or never");
        }
    }
    for t in tasks {
        get_ok(t);
    }
    let (_, w) = CountWaker::new();
    let mut extra = Box::pin(notify.notified());
    let left_over = poll_once(extra.as_mut(), &w).is_ready();
    assert!(!left_over, "a permit was left over");
}

/// As many `notify_one`s as queued waiters wake each waiter once, nobody twice.
#[test]
fn stress_every_notify_one_wakes_one_waiter_once() {
    waiters_woken_once_per_round(16, 200, |n| (0..16).for_each(|_| n.notify_one()));
}

/// `notify_waiters` releases every queued waiter, once.
#[test]
fn stress_notify_waiters_releases_every_queued_waiter() {
    waiters_woken_once_per_round(8, 300, Notify::notify_waiters);
}

/// A task blocked in `notified_blocking` on a one-worker runtime does not keep the task that
/// notifies it from running.
#[test]
fn notified_blocking_in_a_task_on_one_worker() {
    let rt = rt(1);
    let notify = Arc::new(Notify::new());
    let n = notify.clone();
    let waiter = rt.spawn_fn(move || n.notified_blocking());
    let n = notify.clone();
    // Spawned second: on one worker it runs after the waiter blocked (or, if it runs first,
    // the permit keeps its notification).
    let notifier = rt.spawn(async move { n.notify_one() });
    get_ok(notifier);
    assert_eq!(get_ok(waiter), Ok(()));
}
