//! `ito::sync::Latch`, `WaitGroup` and `Barrier`: everyone released at once and exactly when
//! the count is reached, reuse of barriers with one leader per round, and blocking waits
//! inside tasks on one worker.

mod support;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ito::sync::{Barrier, Latch, WaitGroup};
use support::{CountWaker, get_ok, poll_once, rt};

/// Waiters stay pending until the last count-down, then all are released; further
/// count-downs do nothing.
#[test]
fn latch_releases_everyone_at_zero() {
    let latch = Latch::new(3);
    let wakers: Vec<_> = (0..4).map(|_| CountWaker::new()).collect();
    let mut waits: Vec<_> = (0..4).map(|_| Box::pin(latch.wait())).collect();
    for (f, (_, w)) in waits.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    latch.count_down();
    latch.count_down();
    assert!(wakers.iter().all(|(c, _)| c.count() == 0));
    assert!(!latch.is_open());
    latch.count_down();
    assert!(wakers.iter().all(|(c, _)| c.count() == 1));
    for (f, (_, w)) in waits.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_ready());
    }
    latch.count_down();
    assert_eq!(latch.count(), 0);
    ito::block_on(async { latch.wait().await });
}

/// Tasks count down a latch that a task blocked in `wait_blocking` waits for, on one worker.
#[test]
fn latch_wait_blocking_in_a_task_on_one_worker() {
    let rt = rt(1);
    let latch = Arc::new(Latch::new(10));
    let l = latch.clone();
    let waiter = rt.spawn_fn(move || l.wait_blocking().is_ok());
    for _ in 0..10 {
        let l = latch.clone();
        rt.spawn_fn(move || l.count_down());
    }
    assert!(get_ok(waiter));
    assert!(latch.is_open());
}

/// Many threads count down at once: the latch opens exactly once, after the last.
#[test]
fn latch_counted_down_by_racing_threads() {
    for _ in 0..20 {
        let latch = Latch::new(8);
        let opened = AtomicUsize::new(0);
        let f = latch.future();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| latch.count_down());
            }
            s.spawn(|| {
                latch.wait_blocking().unwrap();
                opened.fetch_add(1, Ordering::SeqCst);
            });
        });
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        assert_eq!(f.value(), Some(Ok(())));
    }
}

/// A wait group waits for every clone, including those dropped by panicking tasks.
#[test]
fn wait_group_waits_for_every_handle() {
    let rt = rt(2);
    let wg = WaitGroup::new();
    let done = Arc::new(AtomicUsize::new(0));
    for i in 0..16 {
        let (wg, done) = (wg.clone(), done.clone());
        rt.spawn_fn(move || {
            let _wg = wg;
            if i % 5 == 0 {
                panic!("expected: a member panics; its handle still drops");
            }
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    assert!(wg.count() >= 1);
    let waiter = rt.spawn(wg.wait());
    get_ok(waiter);
    assert_eq!(done.load(Ordering::SeqCst), 12);
}

/// `wait` does not return while another handle is alive.
#[test]
fn wait_group_pending_while_a_handle_lives() {
    let wg = WaitGroup::new();
    let other = wg.clone();
    let (c, w) = CountWaker::new();
    let mut wait = pin!(wg.wait());
    assert!(poll_once(wait.as_mut(), &w).is_pending());
    assert_eq!(other.count(), 1);
    drop(other);
    assert_eq!(c.count(), 1);
    assert!(poll_once(wait.as_mut(), &w).is_ready());
}

/// Blocking wait-group waits in tasks on one worker.
#[test]
fn wait_group_blocking_in_a_task_on_one_worker() {
    let rt = rt(1);
    let wg = WaitGroup::new();
    let members: Vec<_> = (0..5).map(|_| wg.clone()).collect();
    let waiter = rt.spawn_fn(move || wg.wait_blocking().is_ok());
    for m in members {
        rt.spawn_fn(move || drop(m));
    }
    assert!(get_ok(waiter));
}

/// A barrier used for many rounds by tasks and threads: nobody passes before everyone of
/// its round arrived, and each round has exactly one leader.
#[test]
fn barrier_rounds_with_one_leader_each() {
    const PARTIES: usize = 6;
    const ROUNDS: usize = 50;
    let rt = rt(2);
    let barrier = Arc::new(Barrier::new(PARTIES));
    let arrived = Arc::new(AtomicUsize::new(0));
    let leaders = Arc::new(AtomicUsize::new(0));
    let party = |blocking: bool| {
        let (b, arrived, leaders) = (barrier.clone(), arrived.clone(), leaders.clone());
        move || {
            for round in 0..ROUNDS {
                arrived.fetch_add(1, Ordering::SeqCst);
                let r = if blocking {
                    b.wait_blocking().unwrap()
                } else {
                    ito::block_on(b.wait())
                };
                // Everyone of this round has arrived before anyone passes.
                assert!(arrived.load(Ordering::SeqCst) >= (round + 1) * PARTIES);
                if r.is_leader() {
                    leaders.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    };
    let tasks: Vec<_> = (0..PARTIES / 2).map(|_| rt.spawn_fn(party(true))).collect();
    std::thread::scope(|s| {
        for _ in 0..PARTIES - PARTIES / 2 {
            s.spawn(party(false));
        }
    });
    tasks.into_iter().for_each(get_ok);
    assert_eq!(leaders.load(Ordering::SeqCst), ROUNDS);
}

/// Blocking barrier waits of all parties inside tasks on one worker do not deadlock.
#[test]
fn barrier_blocking_in_tasks_on_one_worker() {
    let rt = rt(1);
    let barrier = Arc::new(Barrier::new(4));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let b = barrier.clone();
            rt.spawn_fn(move || b.wait_blocking().unwrap().is_leader())
        })
        .collect();
    assert_eq!(tasks.into_iter().map(get_ok).filter(|l| *l).count(), 1);
}

/// A barrier of 0 or 1 parties never waits; its every arrival leads.
#[test]
fn barrier_of_one() {
    for n in [0, 1] {
        let b = Barrier::new(n);
        assert!(b.wait_blocking().unwrap().is_leader());
        assert!(ito::block_on(b.wait()).is_leader());
    }
}
