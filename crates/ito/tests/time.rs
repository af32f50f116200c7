//! Timers: `sleep`, `sleep_until`, `timeout`, `with_timeout`, `wait_timeout`, from plain threads,
//! sync tasks and async tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ito::{Failure, Future, Promise, Runtime, Task};

#[test]
fn sleep_lasts_at_least_its_duration() {
    for ms in [0u64, 1, 3, 10] {
        let t = Instant::now();
        ito::sleep(Duration::from_millis(ms)).wait().unwrap();
        assert!(t.elapsed() >= Duration::from_millis(ms), "{ms} ms");
    }
}

#[test]
fn sleep_is_not_rounded_up_to_whole_milliseconds_by_much() {
    // A 1 ms sleep should take about 1 ms, not 2 (a wheel that rounds up to the next tick
    // would). Take the best of several tries: the machine is shared.
    let best = (0..20)
        .map(|_| {
            let t = Instant::now();
            ito::sleep(Duration::from_micros(1000)).wait().unwrap();
            t.elapsed()
        })
        .min()
        .unwrap();
    assert!(
        best < Duration::from_micros(1900),
        "best 1 ms sleep took {best:?}"
    );
}

#[test]
fn sleep_until_in_the_past_is_complete_at_once() {
    let f = ito::sleep_until(Instant::now() - Duration::from_secs(1));
    assert!(f.is_completed());
}

/// 500 sleeps with deadlines 40 µs apart, registered in reverse order: every one fires, none
/// before its deadline, and every callback runs exactly once. (Callbacks on timer-completed
/// futures run as tasks, concurrently, so their order is not the deadlines' order; the wheel's
/// unit tests check firing order.)
#[test]
fn many_concurrent_sleeps_all_fire_none_early() {
    let early = Arc::new(AtomicUsize::new(0));
    let fired = Arc::new(AtomicUsize::new(0));
    let base = Instant::now() + Duration::from_millis(5);
    let mut all = Vec::new();
    for i in (0..500u64).rev() {
        let (early, fired) = (early.clone(), fired.clone());
        let deadline = base + Duration::from_micros(i * 40);
        let f = ito::sleep_until(deadline);
        f.on_complete(move |_| {
            if Instant::now() < deadline {
                early.fetch_add(1, Ordering::SeqCst);
            }
            fired.fetch_add(1, Ordering::SeqCst);
        });
        all.push((deadline, f));
    }
    for (deadline, f) in &all {
        f.wait_timeout(Duration::from_secs(10))
            .expect("a sleep never fired")
            .unwrap();
        assert!(Instant::now() >= *deadline);
    }
    let t = Instant::now();
    while fired.load(Ordering::SeqCst) < 500 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "callbacks did not all run"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fired.load(Ordering::SeqCst), 500);
    assert_eq!(early.load(Ordering::SeqCst), 0);
}

#[test]
fn timeout_of_an_async_block() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let slow = rt.block_on(ito::timeout(Duration::from_millis(5), async {
        ito::sleep(Duration::from_secs(30)).await.unwrap();
        1
    }));
    assert_eq!(slow, Err(Failure::Timeout));
    let fast = rt.block_on(ito::timeout(Duration::from_secs(30), async {
        ito::sleep(Duration::from_millis(1)).await.unwrap();
        2
    }));
    assert_eq!(fast, Ok(2));
}

#[test]
fn with_timeout_races_a_late_completion() {
    for round in 0..50u64 {
        let p = Promise::new();
        let f = p
            .future()
            .with_timeout(Duration::from_micros(200 + round * 10));
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros(round * 10));
            p.try_success(round)
        });
        let won = h.join().unwrap();
        match f.wait() {
            Ok(v) => assert_eq!(v, round),
            Err(e) => assert_eq!(e, Failure::Timeout),
        }
        assert!(won, "the promise itself is always completable");
    }
}

#[test]
fn sleeping_in_tasks_does_not_pin_workers() {
    // 50 async tasks and then 10 sync tasks each sleep 20 ms on one worker: with the worker
    // pinned they would take a second; async sleeps overlap, and sync ones suspend, so they
    // overlap too.
    let rt = Runtime::builder().workers(1).build().unwrap();
    let t = Instant::now();
    let fs: Vec<Task<()>> = (0..50)
        .map(|_| rt.spawn(async { ito::sleep(Duration::from_millis(20)).await.unwrap() }))
        .collect();
    for f in fs {
        f.wait().unwrap();
    }
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "async sleeps overlap: {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    let fs: Vec<Task<()>> = (0..10)
        .map(|_| rt.spawn_fn(|| ito::sleep(Duration::from_millis(20)).wait().unwrap()))
        .collect();
    for f in fs {
        f.wait().unwrap();
    }
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "sync sleeps overlap: {:?}",
        t.elapsed()
    );
    // They suspend, and the worker goes on: no thread is brought in for them.
    let m = rt.metrics();
    assert!(m.suspends >= 10, "{m:?}");
    assert_eq!(m.compensations, 0, "{m:?}");
}

#[test]
fn wait_timeout_inside_a_task() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let r = rt
        .spawn_fn(|| Future::<u8>::never().wait_timeout(Duration::from_millis(5)))
        .wait();
    assert_eq!(r, Ok(None));
}
