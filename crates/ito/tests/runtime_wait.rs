//! The scheduler and blocking waits: `wait()` inside tasks never pins a worker or deadlocks an
//! acyclic graph, threads stay bounded, panics become failures, shutdown cancels queued work.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ito::{Failure, Future, Promise, Runtime, Task};

/// Generous bound for anything that should finish: a hang fails the test instead of the run.
const LIMIT: Duration = Duration::from_secs(20);

fn sfib(n: u64) -> u64 {
    if n < 2 { n } else { sfib(n - 1) + sfib(n - 2) }
}

/// Document 000's `Await.result` program: every call forks two tasks and blocks on both.
fn fib_wait(n: u64, cutoff: u64) -> Task<u64> {
    if n < cutoff {
        return ito::spawn_fn(move || sfib(n));
    }
    ito::spawn_fn(move || {
        let a = fib_wait(n - 1, cutoff);
        let b = fib_wait(n - 2, cutoff);
        a.wait().unwrap() + b.wait().unwrap()
    })
}

fn fib_async(n: u64, cutoff: u64) -> Task<u64> {
    if n < cutoff {
        return ito::spawn(async move { sfib(n) });
    }
    ito::spawn(async move {
        let a = fib_async(n - 1, cutoff);
        let b = fib_async(n - 2, cutoff);
        a.await.unwrap() + b.await.unwrap()
    })
}

fn fib_flat(n: u64, cutoff: u64) -> Future<u64> {
    if n < cutoff {
        return ito::spawn_fn(move || sfib(n)).shared();
    }
    ito::spawn_fn(move || {
        let a = fib_flat(n - 1, cutoff);
        let b = fib_flat(n - 2, cutoff);
        a.zip(&b).map(|(x, y)| x + y)
    })
    .shared()
    .flatten()
}

#[test]
fn wait_inside_tasks_on_one_worker() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    for cutoff in [2, 5, 10] {
        let r = rt
            .spawn_fn(move || fib_wait(18, cutoff).wait())
            .wait_timeout(LIMIT);
        assert_eq!(r, Some(Ok(Ok(2584))), "cutoff {cutoff}");
    }
    let m = rt.metrics();
    assert!(
        m.helped > 0,
        "waits should have run their tasks inline: {m:?}"
    );
}

#[test]
fn every_style_at_every_cutoff_with_bounded_threads() {
    let rt = Runtime::builder()
        .workers(2)
        .max_compensation(4)
        .build()
        .unwrap();
    for cutoff in [22, 15, 10, 5, 2] {
        for (style, f) in [
            (
                "wait",
                (|n, c| fib_wait(n, c).shared()) as fn(u64, u64) -> Future<u64>,
            ),
            ("async", |n, c| fib_async(n, c).shared()),
            ("flat", fib_flat),
        ] {
            let r = rt.spawn_fn(move || f(22, cutoff)).wait_timeout(LIMIT);
            let v = r.unwrap_or_else(|| panic!("{style} cutoff {cutoff} hung"));
            assert_eq!(v.unwrap().wait(), Ok(17711), "{style} cutoff {cutoff}");
        }
    }
    let m = rt.metrics();
    // workers + compensation threads; the blocking pool is unused here.
    assert!(m.peak_threads <= 2 + 4, "too many threads: {m:?}");
}

#[test]
fn waiting_from_outside_threads_parks_them() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let f = rt
        .spawn_fn(|| {
            std::thread::sleep(Duration::from_millis(10));
            5
        })
        .shared();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || f.wait())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(5));
    }
}

/// An acyclic graph that deadlocks a scheduler whose blocked `wait` runs arbitrary queued
/// tasks: `outer` waits on a timer; a queued task `x` waits on `outer`'s result. If `outer`'s
/// wait ran `x` on top of its own frame, `x` would wait forever for a frame buried beneath it.
#[test]
fn a_blocked_wait_does_not_bury_its_frame() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let mut outer = rt.spawn_fn(|| {
        let done = Promise::new();
        let outer_result = done.future();
        let x = ito::spawn_fn(move || outer_result.wait().map(|v: u32| v + 1));
        ito::sleep(Duration::from_millis(20)).wait().unwrap();
        done.success(41).unwrap();
        x.wait().unwrap()
    });
    assert_eq!(outer.wait_timeout(LIMIT), Some(Ok(Ok(42))));
}

/// Every worker blocked on a promise that only a queued task can complete: with no
/// compensation allowed, the runtime must still start a thread rather than deadlock.
#[test]
fn all_workers_blocked_still_progress() {
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(0)
        .build()
        .unwrap();
    let p = Promise::new();
    let f = p.future();
    let mut waiter = rt.spawn_fn(move || f.wait());
    let mut completer = rt.spawn_fn(move || p.success(7).unwrap());
    assert_eq!(waiter.wait_timeout(LIMIT), Some(Ok(Ok(7))));
    assert_eq!(completer.wait_timeout(LIMIT), Some(Ok(())));
}

/// More simultaneous blocked waits than the compensation bound, all released by the last task.
#[test]
fn many_blocked_waiters_beyond_the_bound() {
    let rt = Runtime::builder()
        .workers(2)
        .max_compensation(2)
        .build()
        .unwrap();
    let p = Promise::new();
    let waiters: Vec<_> = (0..12)
        .map(|i| {
            let f = p.future();
            rt.spawn_fn(move || f.wait().unwrap() + i as u64)
        })
        .collect();
    let mut release = rt.spawn_fn(move || {
        std::thread::sleep(Duration::from_millis(5));
        p.success(100).unwrap();
    });
    for (i, mut w) in waiters.into_iter().enumerate() {
        assert_eq!(w.wait_timeout(LIMIT), Some(Ok(100 + i as u64)));
    }
    assert_eq!(release.wait_timeout(LIMIT), Some(Ok(())));
}

/// A chain of tasks each blocking on the next, deeper than a stack can hold inline.
#[test]
fn deep_blocking_chain_does_not_overflow() {
    fn chain(depth: u32) -> Future<u32> {
        ito::spawn_fn(move || {
            if depth == 0 {
                0
            } else {
                chain(depth - 1).wait().unwrap() + 1
            }
        })
        .shared()
    }
    let rt = Runtime::builder()
        .workers(1)
        .stack_size(1 << 20)
        .build()
        .unwrap();
    let r = rt.spawn_fn(|| chain(20_000).wait()).wait_timeout(LIMIT);
    assert_eq!(r, Some(Ok(Ok(20_000))));
}

#[test]
fn panics_become_failures_and_workers_survive() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let f = rt.spawn_fn(|| -> u8 { panic!("boom {}", 7) });
    assert_eq!(f.wait(), Err(Failure::Panic("boom 7".into())));
    let g = rt.spawn(async { panic!("async boom") });
    let r: Result<(), Failure> = g.wait();
    assert_eq!(r, Err(Failure::Panic("async boom".into())));
    assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
}

#[test]
fn dropping_a_runtime_cancels_queued_tasks() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    // Pin the only worker on a std channel (deliberately not an ito wait).
    let busy = rt.spawn_fn(move || rx.recv().is_ok());
    std::thread::sleep(Duration::from_millis(20));
    let queued = rt.spawn_fn(|| 1);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        tx.send(()).unwrap();
    });
    drop(rt);
    releaser.join().unwrap();
    assert_eq!(busy.wait(), Ok(true));
    assert_eq!(queued.wait(), Err(Failure::Cancelled));
}

#[test]
fn async_tasks_woken_from_other_threads() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let promises: Vec<Promise<usize>> = (0..100).map(|_| Promise::new()).collect();
    let tasks: Vec<_> = promises
        .iter()
        .map(|p| {
            let f = p.future();
            let count = count.clone();
            rt.spawn(async move {
                let v = f.await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                v * 2
            })
        })
        .collect();
    std::thread::spawn(move || {
        for (i, p) in promises.into_iter().enumerate() {
            p.success(i).unwrap();
        }
    });
    for (i, mut t) in tasks.into_iter().enumerate() {
        assert_eq!(t.wait_timeout(LIMIT), Some(Ok(i * 2)));
    }
    assert_eq!(count.load(Ordering::SeqCst), 100);
}

#[test]
fn block_on_inside_a_worker() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let r = rt
        .spawn_fn(|| ito::block_on(async { ito::spawn(async { 2 }).await.unwrap() * 3 }))
        .wait_timeout(LIMIT);
    assert_eq!(r, Some(Ok(6)));
}

#[test]
fn spawn_blocking_runs_apart_and_reports_panics() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let f = rt.spawn_blocking(|| {
        std::thread::sleep(Duration::from_millis(5));
        "slept"
    });
    let g = rt.spawn_blocking(|| -> u8 { panic!("io failed") });
    assert_eq!(f.wait(), Ok("slept"));
    assert_eq!(g.wait(), Err(Failure::Panic("io failed".into())));
}

#[test]
fn tasks_spawned_from_outside_run_and_are_counted() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let n = 10_000;
    let count = Arc::new(AtomicUsize::new(0));
    let fs: Vec<_> = (0..n)
        .map(|_| {
            let c = count.clone();
            rt.spawn_fn(move || c.fetch_add(1, Ordering::Relaxed))
        })
        .collect();
    for f in fs {
        f.wait().unwrap();
    }
    assert_eq!(count.load(Ordering::Relaxed), n);
    let m = rt.metrics();
    assert!(m.spawned >= n as u64, "{m:?}");
    assert!(m.polled >= n as u64, "{m:?}");
}

#[test]
fn a_pending_task_is_small() {
    let empty = ito::task_size::<std::future::Pending<()>, ()>();
    assert!(
        empty <= 128,
        "a pending task with an empty body takes {empty} bytes"
    );
    let closure = ito::task_size::<fn() -> u64, u64>();
    assert!(closure <= 128, "a closure task takes {closure} bytes");
}

#[test]
fn global_runtime_serves_free_functions() {
    let f = ito::spawn_fn(|| ito::spawn_fn(|| 20).wait().unwrap() + 22);
    assert_eq!(f.wait(), Ok(42));
    assert_eq!(ito::block_on(ito::spawn(async { 1 })), Ok(1));
}

/// A busy worker's spawn must wake an idle one: the spawner spins (not an ito wait, so no
/// compensation) until the other worker has run the spawned task. Repeated, because the idle
/// protocol's races show up only now and then.
#[test]
fn a_busy_workers_spawn_wakes_an_idle_worker() {
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;
    let rt = Runtime::builder().workers(2).build().unwrap();
    for round in 0..200 {
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        let mut outer = rt.spawn_fn(move || {
            let inner = ito::spawn_fn(move || r2.store(true, Ordering::SeqCst));
            let start = Instant::now();
            while !ran.load(Ordering::SeqCst) {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "round {round}: the idle worker was never woken"
                );
                std::thread::yield_now();
            }
            inner
        });
        let mut inner = outer.wait_timeout(LIMIT).expect("outer finished").unwrap();
        assert_eq!(inner.wait_timeout(LIMIT), Some(Ok(())));
    }
}

/// Runs `f` on a thread of its own and fails if it has not finished after `LIMIT`: a lost
/// wake-up hangs its waiter, and this turns the hang into a failure.
fn guarded(f: impl FnOnce() + Send + 'static) {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (done, is_done) = channel();
    let t = std::thread::spawn(move || {
        f();
        done.send(()).unwrap();
    });
    match is_done.recv_timeout(LIMIT) {
        Ok(()) => t.join().unwrap(),
        // `f` panicked: report its panic.
        Err(RecvTimeoutError::Disconnected) => std::panic::resume_unwind(t.join().unwrap_err()),
        Err(RecvTimeoutError::Timeout) => panic!("a wait hung: a lost wake-up"),
    }
}

/// A way to wait for a future's value.
type Wait = fn(Future<u64>) -> u64;

/// The three ways an outside thread waits for a future, by name.
const OUTSIDE_WAITS: [(&str, Wait); 3] = [
    ("wait", |f| f.wait().unwrap()),
    ("wait_timeout", |f| {
        f.wait_timeout(LIMIT).expect("done before LIMIT").unwrap()
    }),
    ("block_on", |f| ito::block_on(f).unwrap()),
];

/// A wake-up left over on a thread (the outside spin saw a result, then its completer's
/// `unpark` arrived) must not end a later wait early: each kind of wait parks again until
/// its own result is there.
#[test]
fn a_leftover_wake_up_does_not_end_a_later_outside_wait() {
    guarded(|| {
        for (i, (name, wait)) in OUTSIDE_WAITS.into_iter().enumerate() {
            let p = Promise::new();
            let f = p.future();
            // Late enough that the waiter is past its spin, in all likelihood.
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                p.success(i as u64).unwrap();
            });
            std::thread::current().unpark();
            assert_eq!(wait(f), i as u64, "{name}");
            t.join().unwrap();
        }
    });
}

/// An outside thread spins for a few microseconds before it parks (`wait`, `wait_timeout`,
/// `block_on`): results that arrive within the spin, around its end and much later all come
/// back, each exactly once. Every kind of wait with a short delay (often caught by the spin,
/// which leaves the completer's wake-up behind) is followed by every kind with a long one
/// (which has to park, with that wake-up pending).
#[test]
fn outside_waits_spin_then_park_and_lose_nothing() {
    use std::sync::mpsc::{TryRecvError, channel};
    /// Delays within the 5 us spin, and around its end or well past it.
    const SHORT_US: [u64; 6] = [0, 1, 2, 3, 4, 5];
    const LONG_US: [u64; 6] = [6, 8, 12, 20, 100, 2_000];
    const ROUNDS: u64 = 270;
    fn busy_for(us: u64) {
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_micros(us) {
            std::hint::spin_loop();
        }
    }
    let delays = |round: u64| {
        let i = (round / 9 % 6) as usize;
        (SHORT_US[i], LONG_US[i])
    };
    guarded(move || {
        let mut got = 0u64;
        // Promises completed by a thread that is not a worker and polls for the next one
        // without sleeping, so that completions land inside the waiter's spin too.
        let (tx, rx) = channel::<(Promise<u64>, u64, u64)>();
        let completer = std::thread::spawn(move || {
            loop {
                match rx.try_recv() {
                    Ok((p, v, us)) => {
                        busy_for(us);
                        p.success(v).unwrap();
                    }
                    Err(TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(TryRecvError::Disconnected) => return,
                }
            }
        });
        for round in 1..=ROUNDS {
            let (short, long) = delays(round);
            let first = OUTSIDE_WAITS[(round % 3) as usize];
            let then = OUTSIDE_WAITS[(round / 3 % 3) as usize];
            for ((_, wait), us) in [(first, short), (then, long)] {
                let p = Promise::new();
                let f = p.future();
                tx.send((p, round, us)).unwrap();
                got += wait(f);
            }
        }
        drop(tx);
        completer.join().unwrap();
        // Tasks that complete after some busy work on a worker.
        let rt = Runtime::builder().workers(2).build().unwrap();
        for round in 1..=ROUNDS {
            let (short, long) = delays(round);
            for us in [short, long] {
                let busy = move || {
                    busy_for(us);
                    round
                };
                got += rt.spawn_fn(busy).wait().unwrap();
                got += rt.block_on(async move { ito::spawn_fn(busy).await.unwrap() });
            }
        }
        assert_eq!(got, 6 * ROUNDS * (ROUNDS + 1) / 2);
    });
}

/// While a thread runs in `block_on` beside an awake worker, a wake-up for new work may be
/// deferred (`idle.rs`, "Deferred wake-ups"): here the main thread and the only awake worker
/// both block outside ito, each waiting for the other side's task, so the deferred task runs
/// only because the sleeping watcher takes it within its period.
#[test]
fn a_deferred_wake_up_is_delivered_when_block_on_and_a_worker_block_outside_ito() {
    use std::sync::mpsc::channel;
    for _ in 0..20 {
        guarded(|| {
            let rt = Runtime::builder().workers(2).build().unwrap();
            rt.block_on(async {
                // Both workers fall asleep while this thread runs (one becomes the watcher).
                std::thread::sleep(Duration::from_millis(5));
                let (to_first, first_rx) = channel::<()>();
                let (to_main, main_rx) = channel::<()>();
                // Blocks its worker outside ito until this thread hears from `second`.
                let first = ito::spawn_fn(move || first_rx.recv().unwrap());
                let second = ito::spawn_fn(move || to_main.send(()).unwrap());
                main_rx.recv().unwrap();
                to_first.send(()).unwrap();
                assert_eq!(first.await, Ok(()));
                assert_eq!(second.await, Ok(()));
            });
        });
    }
}
