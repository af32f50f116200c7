//! `ito::sync::Semaphore`: FIFO fairness, no overtaking, cancel safety (permits counted),
//! close, owned permits, and blocking acquisitions inside tasks on one worker.

mod support;

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use ito::sync::{AcquireError, Semaphore, TryAcquireError};
use support::{CountWaker, HighWater, LogWaker, get_ok, poll_once, rt};

/// Waiters are served in the order they queued, one permit at a time.
#[test]
fn waiters_are_served_in_fifo_order() {
    let sem = Semaphore::new(0);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut futs: Vec<_> = (0..8).map(|_| Box::pin(sem.acquire())).collect();
    let wakers: Vec<_> = (0..8).map(|i| LogWaker::waker(i, &log)).collect();
    for (f, w) in futs.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    for round in 0..8 {
        sem.add_permits(1);
        assert_eq!(*log.lock().unwrap(), (0..=round).collect::<Vec<_>>());
        // Only the woken one is ready; the others still wait.
        for (i, f) in futs.iter_mut().enumerate().skip(round) {
            let r = poll_once(f.as_mut(), &wakers[i]);
            assert_eq!(r.is_ready(), i == round, "waiter {i} in round {round}");
            if let Poll::Ready(p) = r {
                p.unwrap().forget();
            }
        }
    }
    assert_eq!(sem.available_permits(), 0);
}

/// A waiter at the head that needs more permits than are free holds the queue: a smaller
/// request behind it, and `try_acquire`, do not overtake it.
#[test]
fn no_overtaking_of_a_waiter_needing_many() {
    let sem = Semaphore::new(1);
    let (_c, w) = CountWaker::new();
    let mut big = pin!(sem.acquire_many(3));
    assert!(poll_once(big.as_mut(), &w).is_pending());
    assert_eq!(sem.available_permits(), 0, "the head took the free permit");
    let mut small = pin!(sem.acquire());
    assert!(poll_once(small.as_mut(), &w).is_pending());
    sem.add_permits(1);
    assert_eq!(sem.try_acquire().err(), Some(TryAcquireError::NoPermits));
    assert!(poll_once(small.as_mut(), &w).is_pending());
    sem.add_permits(2); // the big one has 3 now, the small one gets the 4th
    let Poll::Ready(Ok(p)) = poll_once(big.as_mut(), &w) else {
        panic!("the head should have its 3 permits")
    };
    assert_eq!(p.num_permits(), 3);
    let Poll::Ready(Ok(q)) = poll_once(small.as_mut(), &w) else {
        panic!("the second waiter should be served")
    };
    assert_eq!(sem.available_permits(), 0);
    drop((p, q));
    assert_eq!(sem.available_permits(), 4);
}

/// Dropping waiting futures in every state loses no permit: queued with nothing, queued
/// holding part of what it wants, and granted but never polled again.
#[test]
fn dropped_waiters_never_leak_permits() {
    let sem = Semaphore::new(0);
    let (_c, w) = CountWaker::new();
    {
        let mut a = Box::pin(sem.acquire_many(2)); // will hold 1 of 2
        let mut b = Box::pin(sem.acquire()); // granted, then dropped unseen
        let mut c = Box::pin(sem.acquire()); // dropped while queued
        assert!(poll_once(a.as_mut(), &w).is_pending());
        assert!(poll_once(b.as_mut(), &w).is_pending());
        assert!(poll_once(c.as_mut(), &w).is_pending());
        sem.add_permits(1);
        drop(a); // its 1 permit goes to b
        drop(c);
        drop(b);
    }
    assert_eq!(sem.available_permits(), 1);
    assert!(sem.try_acquire().is_ok(), "nobody is left queued");
}

/// Many tasks race acquisitions against timeouts (the acquire futures are dropped at random
/// points: queued, just granted, holding part of a request); every permit is back at the end
/// and the semaphore never let more holders in than it has permits.
#[test]
fn timeouts_racing_acquisitions_keep_the_count() {
    const PERMITS: usize = 3;
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(PERMITS));
    let inside = Arc::new(HighWater::default());
    let got = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let (sem, inside, got) = (sem.clone(), inside.clone(), got.clone());
            rt.spawn(async move {
                for j in 0..20 {
                    let n = 1 + (i + j) % 2;
                    let wait = Duration::from_micros(((i * 7 + j * 13) % 50) as u64);
                    if let Ok(Ok(p)) = ito::timeout(wait, sem.acquire_many(n)).await {
                        inside.enter();
                        got.fetch_add(1, Ordering::Relaxed);
                        ito::sleep(Duration::from_micros(20)).await.unwrap();
                        inside.leave();
                        drop(p);
                    }
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(get_ok);
    assert_eq!(
        sem.available_permits(),
        PERMITS,
        "a permit leaked or was duplicated"
    );
    assert!(inside.max() <= PERMITS);
    assert!(got.load(Ordering::Relaxed) > 0);
}

/// `close` fails every waiter and every later acquisition; permits held stay valid and are
/// returned.
#[test]
fn close_fails_waiters_and_later_acquisitions() {
    let sem = Semaphore::new(1);
    let held = sem.try_acquire().unwrap();
    let (c, w) = CountWaker::new();
    let mut waiter = pin!(sem.acquire());
    assert!(poll_once(waiter.as_mut(), &w).is_pending());
    sem.close();
    assert_eq!(c.count(), 1, "the waiter is woken");
    assert!(matches!(
        poll_once(waiter.as_mut(), &w),
        Poll::Ready(Err(AcquireError::Closed))
    ));
    assert_eq!(sem.try_acquire().err(), Some(TryAcquireError::Closed));
    assert_eq!(sem.acquire_blocking().err(), Some(AcquireError::Closed));
    assert_eq!(
        ito::block_on(sem.acquire()).err(),
        Some(AcquireError::Closed)
    );
    drop(held);
    assert_eq!(sem.available_permits(), 1);
    assert!(sem.is_closed());
}

/// A waiter at the head holding part of its request when `close` comes gives it back.
#[test]
fn close_returns_partial_permits() {
    let sem = Semaphore::new(2);
    let (_c, w) = CountWaker::new();
    let mut big = pin!(sem.acquire_many(5));
    assert!(poll_once(big.as_mut(), &w).is_pending());
    assert_eq!(sem.available_permits(), 0);
    sem.close();
    assert_eq!(sem.available_permits(), 2);
    assert!(matches!(
        poll_once(big.as_mut(), &w),
        Poll::Ready(Err(AcquireError::Closed))
    ));
}

/// Owned permits move into tasks; at most `permits` tasks hold one at a time.
#[test]
fn owned_permits_bound_running_tasks() {
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(2));
    let inside = Arc::new(HighWater::default());
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let permit = rt.block_on(sem.acquire_owned()).unwrap();
            let inside = inside.clone();
            rt.spawn(async move {
                inside.enter();
                ito::sleep(Duration::from_micros(100)).await.unwrap();
                inside.leave();
                drop(permit);
            })
        })
        .collect();
    tasks.into_iter().for_each(get_ok);
    assert!(inside.max() <= 2);
    assert_eq!(sem.available_permits(), 2);
}

/// On a one-worker runtime, a task blocked in `acquire_blocking` does not keep the task that
/// releases the permit from running (the blocking call hands the worker's place away).
#[test]
fn blocking_acquire_in_a_task_on_one_worker() {
    let rt = rt(1);
    let sem = Arc::new(Semaphore::new(0));
    let s1 = sem.clone();
    let waiter = rt.spawn_fn(move || s1.acquire_owned_blocking().map(|p| p.num_permits()));
    let s2 = sem.clone();
    let releaser = rt.spawn_fn(move || {
        std::thread::sleep(Duration::from_millis(2));
        s2.add_permits(1);
    });
    assert_eq!(get_ok(waiter), Ok(1));
    get_ok(releaser);
    // Several blocked at once, released one by one by a task behind them.
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let s = sem.clone();
            rt.spawn_fn(move || s.acquire_blocking().map(|p| p.forget()).is_ok())
        })
        .collect();
    let s3 = sem.clone();
    rt.spawn_fn(move || (0..4).for_each(|_| s3.add_permits(1)));
    assert!(waiters.into_iter().all(get_ok));
}

/// The non-blocking semaphore of document 002: a recursion that finds no permit runs the
/// child inline, so it completes with a bounded number of tasks and never waits.
#[test]
fn try_acquire_bounds_a_recursive_search() {
    fn count(sem: &Arc<Semaphore>, depth: u32, tasks: &Arc<HighWater>) -> u64 {
        if depth == 0 {
            return 1;
        }
        let mut children = Vec::new();
        let mut total = 0;
        for _ in 0..3 {
            match sem.try_acquire_owned() {
                Ok(permit) => {
                    let (sem, tasks) = (sem.clone(), tasks.clone());
                    children.push(ito::spawn_fn(move || {
                        tasks.enter();
                        let n = count(&sem, depth - 1, &tasks);
                        tasks.leave();
                        drop(permit);
                        n
                    }));
                }
                Err(TryAcquireError::NoPermits) => total += count(sem, depth - 1, tasks),
                Err(e) => unreachable!("{e}"),
            }
        }
        total + children.into_iter().map(get_ok).sum::<u64>()
    }
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(4));
    let tasks = Arc::new(HighWater::default());
    let (s, t) = (sem.clone(), tasks.clone());
    let leaves = get_ok(rt.spawn_fn(move || count(&s, 6, &t)));
    assert_eq!(leaves, 3u64.pow(6));
    assert!(tasks.max() <= 4);
    assert_eq!(sem.available_permits(), 4);
}

/// `acquire(0)` and `try_acquire_many(0)` succeed at once, even while others wait.
#[test]
fn zero_permits_never_wait() {
    let sem = Semaphore::new(0);
    let (_c, w) = CountWaker::new();
    let mut waiter = pin!(sem.acquire());
    assert!(poll_once(waiter.as_mut(), &w).is_pending());
    assert_eq!(sem.try_acquire_many(0).unwrap().num_permits(), 0);
    assert!(ito::block_on(sem.acquire_many(0)).is_ok());
}

/// A release finding an empty queue after the last waiter left clears the queued state.
#[test]
fn the_last_waiter_leaving_reopens_the_fast_path() {
    let sem = Semaphore::new(0);
    let (_c, w) = CountWaker::new();
    {
        let mut waiter = pin!(sem.acquire());
        assert!(poll_once(waiter.as_mut(), &w).is_pending());
    }
    sem.add_permits(1);
    assert_eq!(sem.available_permits(), 1);
    assert!(sem.try_acquire().is_ok());
}

/// Adding permits beyond the maximum is a clear panic, not a wrapped count.
#[test]
#[should_panic(expected = "MAX_PERMITS")]
fn adding_too_many_permits_panics() {
    let sem = Semaphore::new(Semaphore::MAX_PERMITS);
    sem.add_permits(1);
}

/// The errors convert into failures for `?` in tasks.
#[test]
fn errors_convert_into_failures() {
    let f = ito::spawn_fn(|| -> Result<(), ito::Failure> {
        let sem = Semaphore::new(0);
        sem.close();
        let _p = sem.acquire_blocking()?;
        Ok(())
    });
    let err = get_ok(f).unwrap_err();
    assert_eq!(
        err.downcast_ref::<AcquireError>(),
        Some(&AcquireError::Closed)
    );
    assert_eq!(
        ito::Failure::from(AcquireError::Cancelled),
        ito::Failure::Cancelled
    );
}
