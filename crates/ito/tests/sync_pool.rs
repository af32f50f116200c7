//! `ito::sync::Pool`: never more than `limit` running (an atomic high-water mark), start order
//! is spawn order, slots come back after panics, back-pressure, queued tasks cost no poll.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ito::sync::Pool;
use support::{HighWater, get_ok, rt};

/// 200 tasks (async and closures, some sleeping, some blocking) through pools of several
/// sizes: the number running never exceeds the limit, and every task runs once.
#[test]
fn never_more_than_the_limit() {
    let rt = rt(2);
    for limit in [1, 3, 8] {
        let pool = Pool::new(limit);
        let inside = Arc::new(HighWater::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = rt.block_on(async {
            (0..200)
                .map(|i| {
                    let (inside, ran) = (inside.clone(), ran.clone());
                    if i % 3 == 0 {
                        pool.spawn_fn(move || {
                            inside.enter();
                            if i % 2 == 0 {
                                ito::sleep(Duration::from_micros(50)).wait().unwrap();
                            }
                            ran.fetch_add(1, Ordering::SeqCst);
                            inside.leave();
                        })
                    } else {
                        pool.spawn(async move {
                            inside.enter();
                            if i % 2 == 0 {
                                ito::sleep(Duration::from_micros(50)).await.unwrap();
                            }
                            ran.fetch_add(1, Ordering::SeqCst);
                            inside.leave();
                        })
                    }
                })
                .collect()
        });
        tasks.into_iter().for_each(get_ok);
        assert_eq!(ran.load(Ordering::SeqCst), 200);
        assert!(inside.max() <= limit, "{} > {limit}", inside.max());
        assert_eq!(pool.running(), 0);
        assert_eq!(pool.queued(), 0);
    }
}

/// With one slot, tasks start in the order they were spawned.
#[test]
fn tasks_start_in_spawn_order() {
    let rt = rt(2);
    let pool = Pool::new(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let gate = ito::Promise::<()>::new();
    let g = gate.future();
    let first = pool.spawn(async move { g.await.unwrap() });
    // Spawned from a worker (its LIFO deque would reverse them) and from outside.
    let o = order.clone();
    let p = pool.clone();
    let from_worker = rt.spawn_fn(move || {
        (0..10)
            .map(|i| {
                let o = o.clone();
                p.spawn_fn(move || o.lock().unwrap().push(i))
            })
            .collect::<Vec<_>>()
    });
    let queued = get_ok(from_worker);
    assert_eq!(pool.queued(), 10);
    gate.success(()).unwrap();
    get_ok(first);
    queued.into_iter().for_each(get_ok);
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
}

/// A task that panics gives its slot back; so does a queued task's future being dropped
/// (it still runs, detached, like any ito task).
#[test]
fn slots_come_back_after_panics() {
    let pool = Pool::new(2);
    let bad: Vec<_> = (0..6)
        .map(|_| pool.spawn_fn(|| -> u8 { panic!("expected: pool task panics") }))
        .collect();
    for mut f in bad {
        assert!(
            f.wait_timeout(support::LONG)
                .unwrap()
                .unwrap_err()
                .is_panic()
        );
    }
    let ok = pool.spawn_fn(|| 1);
    assert_eq!(get_ok(ok), 1);
    assert_eq!(pool.running(), 0);
}

/// `spawn_blocking_wait` blocks the producer until a slot frees: with limit 2, the producer
/// is never more than 2 tasks ahead, and nothing queues.
#[test]
fn blocking_wait_applies_back_pressure() {
    let rt = rt(2);
    let pool = Pool::new(2);
    let inside = Arc::new(HighWater::default());
    let p = pool.clone();
    let i2 = inside.clone();
    let producer = rt.spawn_fn(move || {
        let mut fs = Vec::new();
        for _ in 0..30 {
            let inside = i2.clone();
            fs.push(
                p.spawn_blocking_wait(async move {
                    inside.enter();
                    ito::sleep(Duration::from_micros(100)).await.unwrap();
                    inside.leave();
                })
                .unwrap(),
            );
            assert_eq!(p.queued(), 0, "back-pressure: nothing queues");
            assert!(p.running() <= 2);
        }
        fs
    });
    get_ok(producer).into_iter().for_each(get_ok);
    assert!(inside.max() <= 2);
}

/// The async reservation: a slot is taken before the task exists; dropping it unused frees
/// it.
#[test]
fn reservations() {
    let pool = Pool::new(1);
    let slot = ito::block_on(pool.reserve());
    assert_eq!(pool.running(), 1);
    let queued = pool.spawn_fn(|| "queued");
    assert_eq!(pool.queued(), 1);
    drop(slot); // the queued task gets the slot
    assert_eq!(get_ok(queued), "queued");
    let slot = pool.reserve_blocking().unwrap();
    assert_eq!(get_ok(slot.spawn_fn(|| 3)), 3);
}

/// A one-slot pool of tasks that block inside (`wait`, `recv_blocking`) on a one-worker
/// runtime does not deadlock.
#[test]
fn blocking_inside_pool_tasks_on_one_worker() {
    let rt = rt(1);
    let pool = Pool::new(1);
    let (tx, rx) = ito::channel::bounded::<u32>(0);
    let p = pool.clone();
    let consumer = rt.spawn_fn(move || p.spawn_fn(move || rx.iter().sum::<u32>()));
    let producer = rt.spawn_fn(move || {
        for i in 0..20 {
            tx.send_blocking(i).unwrap();
        }
    });
    get_ok(producer);
    assert_eq!(get_ok(get_ok(consumer)), 190);
}

/// A queued task costs no poll before it starts: its body runs exactly once, when a slot
/// frees, and its future completes with the value.
#[test]
fn queued_tasks_are_not_polled_before_they_start() {
    struct CountPolls(Arc<AtomicUsize>);
    impl std::future::Future for CountPolls {
        type Output = usize;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<usize> {
            std::task::Poll::Ready(self.0.fetch_add(1, Ordering::SeqCst) + 1)
        }
    }
    let pool = Pool::new(1);
    let gate = ito::Promise::<()>::new();
    let g = gate.future();
    let first = pool.spawn(async move { g.await.unwrap() });
    let polls = Arc::new(AtomicUsize::new(0));
    let queued = pool.spawn(CountPolls(polls.clone()));
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(polls.load(Ordering::SeqCst), 0);
    gate.success(()).unwrap();
    get_ok(first);
    assert_eq!(get_ok(queued), 1);
}

#[test]
#[should_panic(expected = "at least 1")]
fn a_pool_of_zero_is_refused() {
    let _ = Pool::new(0);
}
