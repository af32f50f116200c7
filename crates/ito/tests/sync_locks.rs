//! `ito::sync::Mutex` and `RwLock`: mutual exclusion under contention (counted), FIFO
//! hand-off, writers not starved, cancel safety, and blocking locks inside tasks on one
//! worker.

mod support;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use ito::sync::{Mutex, RwLock};
use support::{CountWaker, HighWater, LogWaker, get_ok, poll_once, rt};

/// Tasks and threads increment a counter under the mutex, holding it across an await: no
/// increment is lost and nobody is ever inside with someone else.
#[test]
fn mutex_excludes_tasks_and_threads() {
    let rt = rt(2);
    let m = Arc::new(Mutex::new(0u64));
    let inside = Arc::new(HighWater::default());
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (m, inside) = (m.clone(), inside.clone());
            rt.spawn(async move {
                for j in 0..200 {
                    let mut g = m.lock().await;
                    inside.enter();
                    let v = *g;
                    if (i + j) % 50 == 0 {
                        ito::sleep(Duration::from_micros(10)).await.unwrap();
                    }
                    *g = v + 1;
                    inside.leave();
                }
            })
        })
        .collect();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..200 {
                    let mut g = m.lock_blocking().unwrap();
                    inside.enter();
                    *g += 1;
                    inside.leave();
                }
            });
        }
    });
    tasks.into_iter().for_each(get_ok);
    assert_eq!(*m.try_lock().unwrap(), 8 * 200 + 2 * 200);
    assert_eq!(inside.max(), 1);
}

/// The lock goes to waiters in arrival order, and `try_lock` does not barge in ahead of them.
#[test]
fn mutex_is_fifo_without_barging() {
    let m = Mutex::new(());
    let held = m.try_lock().unwrap();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut waiters: Vec<_> = (0..4).map(|_| Box::pin(m.lock())).collect();
    let wakers: Vec<_> = (0..4).map(|i| LogWaker::waker(i, &log)).collect();
    for (f, w) in waiters.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    drop(held);
    assert!(
        m.try_lock().is_err(),
        "the lock was handed to the oldest waiter"
    );
    for i in 0..4 {
        assert_eq!(log.lock().unwrap().last(), Some(&i));
        let Poll::Ready(g) = poll_once(waiters[i].as_mut(), &wakers[i]) else {
            panic!("waiter {i} should hold the lock")
        };
        drop(g);
    }
    assert!(m.try_lock().is_ok());
}

/// A lock future dropped after the lock was handed to it passes the lock on.
#[test]
fn mutex_lock_dropped_after_hand_off() {
    let m = Mutex::new(5);
    let held = m.try_lock().unwrap();
    let (c, w) = CountWaker::new();
    let mut a = Box::pin(m.lock());
    let mut b = pin!(m.lock());
    assert!(poll_once(a.as_mut(), &w).is_pending());
    assert!(poll_once(b.as_mut(), &w).is_pending());
    drop(held); // to `a`
    drop(a); // `a` never saw it: to `b`
    assert_eq!(c.count(), 2);
    let Poll::Ready(g) = poll_once(b.as_mut(), &w) else {
        panic!("b should hold the lock")
    };
    assert_eq!(*g, 5);
}

/// `lock_blocking` in a task on a one-worker runtime while another task holds the lock
/// across a sleep: no deadlock.
#[test]
fn mutex_lock_blocking_in_a_task_on_one_worker() {
    let rt = rt(1);
    let m = Arc::new(Mutex::new(Vec::new()));
    let m1 = m.clone();
    let holder = rt.spawn(async move {
        let mut g = m1.lock().await;
        ito::sleep(Duration::from_millis(2)).await.unwrap();
        g.push("holder");
    });
    let blockers: Vec<_> = (0..3)
        .map(|_| {
            let m = m.clone();
            rt.spawn_fn(move || m.lock_blocking().unwrap().push("blocker"))
        })
        .collect();
    get_ok(holder);
    blockers.into_iter().for_each(get_ok);
    assert_eq!(m.lock_blocking().unwrap().len(), 4);
}

/// Readers share, writers exclude everyone: counted inside the lock.
#[test]
fn rwlock_readers_share_writers_exclude() {
    let rt = rt(2);
    let lock = Arc::new(RwLock::new(0u64));
    let readers = Arc::new(HighWater::default());
    let writers = Arc::new(HighWater::default());
    let both = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (lock, readers, writers, both) =
                (lock.clone(), readers.clone(), writers.clone(), both.clone());
            rt.spawn(async move {
                for j in 0..100 {
                    if (i + j) % 4 == 0 {
                        let mut g = lock.write().await;
                        writers.enter();
                        if readers.now() > 0 || writers.now() > 1 {
                            both.fetch_add(1, Ordering::SeqCst);
                        }
                        *g += 1;
                        writers.leave();
                    } else {
                        let g = lock.read().await;
                        readers.enter();
                        if writers.now() > 0 {
                            both.fetch_add(1, Ordering::SeqCst);
                        }
                        let _ = *g;
                        if j % 10 == 0 {
                            ito::sleep(Duration::from_micros(10)).await.unwrap();
                        }
                        readers.leave();
                    }
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(get_ok);
    assert_eq!(
        both.load(Ordering::SeqCst),
        0,
        "a writer overlapped someone"
    );
    assert_eq!(writers.max(), 1);
    assert_eq!(*lock.try_read().unwrap(), 300);
}

/// A queued writer is not starved: readers arriving after it wait behind it, and are all let
/// in together when it is done.
#[test]
fn rwlock_writer_is_not_starved() {
    let lock = RwLock::new(0);
    let r1 = lock.try_read().unwrap();
    let (_c, w) = CountWaker::new();
    let mut writer = pin!(lock.write());
    assert!(poll_once(writer.as_mut(), &w).is_pending());
    assert!(
        lock.try_read().is_err(),
        "a reader may not pass a waiting writer"
    );
    let mut late_a = Box::pin(lock.read());
    let mut late_b = Box::pin(lock.read());
    assert!(poll_once(late_a.as_mut(), &w).is_pending());
    assert!(poll_once(late_b.as_mut(), &w).is_pending());
    drop(r1);
    let Poll::Ready(mut g) = poll_once(writer.as_mut(), &w) else {
        panic!("the writer should hold the lock")
    };
    *g = 1;
    assert!(poll_once(late_a.as_mut(), &w).is_pending());
    drop(g);
    let (Poll::Ready(a), Poll::Ready(b)) = (
        poll_once(late_a.as_mut(), &w),
        poll_once(late_b.as_mut(), &w),
    ) else {
        panic!("both readers should be in")
    };
    assert_eq!(*a + *b, 2);
}

/// Blocking reads and writes in tasks on one worker.
#[test]
fn rwlock_blocking_in_tasks_on_one_worker() {
    let rt = rt(1);
    let lock = Arc::new(RwLock::new(0));
    let l = lock.clone();
    let writer = rt.spawn(async move {
        let mut g = l.write().await;
        ito::sleep(Duration::from_millis(2)).await.unwrap();
        *g = 7;
    });
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let l = lock.clone();
            rt.spawn_fn(move || *l.read_blocking().unwrap())
        })
        .collect();
    let l = lock.clone();
    let writer2 = rt.spawn_fn(move || *l.write_blocking().unwrap() += 1);
    get_ok(writer);
    get_ok(writer2);
    for r in readers {
        assert!([7, 8].contains(&get_ok(r)));
    }
    assert_eq!(*lock.try_read().unwrap(), 8);
}
