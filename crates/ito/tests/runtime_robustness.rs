//! Regression tests from the core review: panicking destructors and clones, callbacks that
//! need the worker a waiter spins on, user code on the timer thread, shutdown with blocked
//! workers, deferred notifications at shutdown, idle wake-up storms, and compensation threads
//! that outlive their need.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ito::{Failure, Promise, Runtime};

mod support;
use support::quiet_expected_panics as quiet;

/// Panics in `Drop` (but not while already unwinding).
struct PanicOnDrop;
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("expected: drop panics");
        }
    }
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn a_panic_payload_that_panics_on_drop_fails_the_task_once() {
    quiet();
    let rt = Runtime::builder().workers(1).build().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let c = Counted(drops.clone());
    let mut f = rt.spawn_fn(move || -> u32 {
        let _c = c;
        std::panic::panic_any(PanicOnDrop)
    });
    let r = f
        .wait_timeout(Duration::from_secs(5))
        .expect("the task completed");
    assert!(matches!(r, Err(Failure::Panic(_))), "{r:?}");
    drop(f);
    assert_eq!(
        drops.load(SeqCst),
        1,
        "the closure's captures are dropped exactly once"
    );
    assert_eq!(
        rt.spawn_fn(|| 1).wait_timeout(Duration::from_secs(5)),
        Some(Ok(1))
    );
}

#[test]
fn a_panicking_output_destructor_does_not_kill_the_worker() {
    quiet();
    let rt = Runtime::builder().workers(1).build().unwrap();
    drop(rt.spawn_fn(|| {
        std::thread::sleep(Duration::from_millis(20));
        PanicOnDrop
    }));
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(
        rt.spawn_fn(|| 1).wait_timeout(Duration::from_secs(5)),
        Some(Ok(1))
    );
}

#[test]
fn a_cancelled_task_with_a_panicking_capture_is_dropped_once() {
    quiet();
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().workers(1).build().unwrap();
    let _busy = rt.spawn_fn(|| std::thread::sleep(Duration::from_millis(100)));
    std::thread::sleep(Duration::from_millis(20));
    let (c, p) = (Counted(drops.clone()), PanicOnDrop);
    let x = rt.spawn_fn(move || {
        let _keep = (&c, &p);
    });
    drop(rt); // cancels `x` while it is queued
    assert_eq!(x.wait(), Err(Failure::Cancelled)); // the handle goes with the wait
    assert_eq!(drops.load(SeqCst), 1);
}

/// An `.await` that sees its future complete must not wait on a callback (user code) that
/// itself needs this worker.
#[test]
fn a_completed_await_does_not_wait_for_callbacks() {
    let rt: &'static Runtime = Box::leak(Box::new(Runtime::builder().workers(1).build().unwrap()));
    let p = Promise::<u32>::new();
    let f = p.future();
    let (tx, rx) = mpsc::channel();
    f.on_complete(move |_| {
        std::thread::sleep(Duration::from_millis(100));
        let mut b = rt.spawn_fn(|| 5);
        tx.send(b.wait_timeout(Duration::from_secs(5))).unwrap();
    });
    let f2 = f.clone();
    let mut a = rt.spawn(async move { ito::timeout(Duration::from_millis(30), f2).await });
    std::thread::sleep(Duration::from_millis(10));
    std::thread::spawn(move || p.success(1).unwrap());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(Some(Ok(5))));
    assert!(a.wait_timeout(Duration::from_secs(5)).is_some());
}

/// Callbacks on futures completed by timers run off the timer thread, so one that waits for
/// another timer does not stall every timer.
#[test]
fn timer_callbacks_do_not_run_on_the_timer_thread() {
    let f = ito::sleep(Duration::from_millis(5)).map(|_| {
        let t = Instant::now();
        let r = ito::sleep(Duration::from_millis(5)).wait_timeout(Duration::from_secs(5));
        (r, t.elapsed())
    });
    let (inner, took) = f
        .wait_timeout(Duration::from_secs(10))
        .expect("completed")
        .unwrap();
    assert_eq!(inner, Some(Ok(())));
    assert!(took < Duration::from_secs(2), "a 5 ms sleep took {took:?}");
}

/// Dropping a runtime whose worker is blocked on a promise that a queued task would complete.
#[test]
fn dropping_a_runtime_with_blocked_workers_returns() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let p = Promise::<u32>::new();
        let f = p.future();
        let a = rt.spawn_fn(move || f.wait());
        std::thread::sleep(Duration::from_millis(30));
        let _z = rt.spawn_fn(|| std::thread::sleep(Duration::from_millis(200)));
        std::thread::sleep(Duration::from_millis(30));
        let _y = rt.spawn_fn(move || {
            let _ = p.success(1);
        });
        drop(rt);
        tx.send(a.wait()).unwrap();
    });
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("Runtime::drop returned");
    // Either the completer ran, or it was cancelled and broke the promise.
    assert!(
        matches!(r, Ok(Ok(1)) | Ok(Err(Failure::BrokenPromise))),
        "{r:?}"
    );
}

/// Callbacks deferred to a task (deep chains) still run if that task is cancelled.
#[test]
fn deferred_callbacks_survive_shutdown() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let p = Promise::<u32>::new();
    let mut f = p.future();
    for _ in 0..100 {
        f = f.map(|x| x + 1);
    }
    let _t = rt.spawn_fn(move || {
        p.success(0).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    });
    std::thread::sleep(Duration::from_millis(30));
    drop(rt);
    assert_eq!(f.wait_timeout(Duration::from_secs(5)), Some(Ok(100)));
}

#[test]
fn a_panicking_clone_fails_a_combinator_instead_of_hanging_it() {
    quiet();
    #[derive(Debug)]
    struct BadClone;
    impl Clone for BadClone {
        fn clone(&self) -> Self {
            panic!("expected: clone")
        }
    }
    let p = Promise::<u8>::new();
    let inner = Promise::<BadClone>::new();
    let innerf = inner.future();
    let out = p.future().flat_map(move |_| innerf.clone());
    p.success(1).unwrap();
    let _ = inner.success(BadClone);
    // `failure()` reads only the error side, so no clone of a `BadClone` is involved.
    let r = out.failure().wait_timeout(Duration::from_secs(5));
    assert_eq!(r, Some(Ok(Failure::Panic("expected: clone".into()))));
}

#[test]
fn idle_workers_do_not_wake_each_other_for_ever() {
    let rt = Runtime::builder().workers(4).build().unwrap();
    rt.spawn_fn(|| ()).wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let a = rt.metrics().parks;
    std::thread::sleep(Duration::from_millis(500));
    let b = rt.metrics().parks;
    assert!(b - a < 20, "{} parks during 0.5 s of idleness", b - a);
}

#[test]
fn idle_compensation_threads_exit_after_the_keep_alive() {
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(4)
        .thread_keep_alive(Duration::from_millis(50))
        .build()
        .unwrap();
    // Blocking outside ito holds a thread (a wait in ito would suspend instead).
    let block = || ito::block_in_place(|| std::thread::sleep(Duration::from_millis(20)));
    let fs: Vec<_> = (0..8).map(|_| rt.spawn_fn(block)).collect();
    for mut f in fs {
        assert_eq!(f.wait_timeout(Duration::from_secs(10)), Some(Ok(())));
    }
    let peak = rt.metrics().peak_threads;
    assert!(peak > 1, "some compensation happened: {peak}");
    let t = Instant::now();
    while rt.metrics().threads > 1 {
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", rt.metrics());
        std::thread::sleep(Duration::from_millis(10));
    }
    // Slots are reused: another burst works and the runtime stays bounded.
    let fs: Vec<_> = (0..8).map(|_| rt.spawn_fn(block)).collect();
    for mut f in fs {
        assert_eq!(f.wait_timeout(Duration::from_secs(10)), Some(Ok(())));
    }
}

/// A task woken while a worker drains its queues at shutdown is cancelled, not lost.
#[test]
fn a_task_woken_during_the_shutdown_drain_completes() {
    for _ in 0..3 {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let mut a = rt.spawn(async {
            std::thread::sleep(Duration::from_millis(80)); // shutdown starts meanwhile
            let b = ito::spawn_fn(|| 1u32); // onto this worker's deque
            b.await // pending; the drain cancels `b`, which wakes us
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(rt);
        assert!(a.wait_timeout(Duration::from_secs(5)).is_some(), "lost");
    }
}

/// `thread_keep_alive(Duration::MAX)` means "never exit", not an overflow.
#[test]
fn an_unbounded_keep_alive_is_fine() {
    static OVERFLOWS: AtomicUsize = AtomicUsize::new(0);
    quiet();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.to_string().contains("overflow") {
            OVERFLOWS.fetch_add(1, SeqCst);
        }
        prev(info)
    }));
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(2)
        .thread_keep_alive(Duration::MAX)
        .build()
        .unwrap();
    let fs: Vec<_> = (0..6)
        .map(|_| rt.spawn_fn(|| ito::sleep(Duration::from_millis(10)).wait()))
        .collect();
    for mut f in fs {
        assert_eq!(f.wait_timeout(Duration::from_secs(10)), Some(Ok(Ok(()))));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(OVERFLOWS.load(SeqCst), 0, "{:?}", rt.metrics());
}

/// Every thread blocked and no compensation allowed: a task pushed from outside still runs.
#[test]
fn an_outside_push_runs_while_every_thread_is_blocked() {
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(0)
        .build()
        .unwrap();
    let p = Promise::<u32>::new();
    let f = p.future();
    let mut a = rt.spawn_fn(move || f.wait());
    std::thread::sleep(Duration::from_millis(30));
    let _b = rt.spawn_fn(move || p.success(7).unwrap());
    assert_eq!(a.wait_timeout(Duration::from_secs(5)), Some(Ok(Ok(7))));
}

/// Many outside pushes while every thread is blocked start one thread, not one each.
#[test]
fn outside_pushes_while_blocked_do_not_stampede() {
    let rt: &'static Runtime = Box::leak(Box::new(
        Runtime::builder()
            .workers(1)
            .max_compensation(0)
            .build()
            .unwrap(),
    ));
    let p = Promise::<u32>::new();
    let f = p.future();
    let mut a = rt.spawn_fn(move || f.wait());
    std::thread::sleep(Duration::from_millis(30));
    let gate = Arc::new(std::sync::Barrier::new(16));
    let hs: Vec<_> = (0..16)
        .map(|_| {
            let g = gate.clone();
            std::thread::spawn(move || {
                g.wait();
                rt.spawn_fn(|| std::thread::sleep(Duration::from_millis(20)))
            })
        })
        .collect();
    for h in hs {
        assert_eq!(
            h.join().unwrap().wait_timeout(Duration::from_secs(10)),
            Some(Ok(()))
        );
    }
    p.success(1).unwrap();
    assert_eq!(a.wait_timeout(Duration::from_secs(5)), Some(Ok(Ok(1))));
    let peak = rt.metrics().peak_threads;
    assert!(peak <= 3, "peak {peak} threads for a 1-worker runtime");
}

/// After shutdown, breaking the head of a long chain of idle tasks (each awaiting the previous
/// one) cancels the whole chain iteratively, without overflowing the stack.
#[test]
fn cancelling_a_long_chain_after_shutdown_does_not_overflow() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let head = Promise::<u32>::new();
    let mut prev = head.future();
    let mut last = None;
    for _ in 0..50_000 {
        let f = prev.clone();
        // A failure upstream (the broken head) becomes a panic here, i.e. a failure too.
        let t = rt
            .spawn(async move { f.await.expect("upstream") + 1 })
            .shared();
        prev = t.clone();
        last = Some(t);
    }
    let last = last.unwrap();
    std::thread::sleep(Duration::from_millis(200)); // every task polled once, now idle
    drop(rt);
    drop(head); // wakes the first task, after shutdown: each is cancelled in turn
    let r = last
        .wait_timeout(Duration::from_secs(10))
        .expect("the chain ended");
    assert!(r.is_err(), "{r:?}");
}

/// A runtime dropped inside a cancellation (a cancelled task owned it) must still cancel its
/// own queued work right away, or its blocked workers never leave.
#[test]
fn a_shutdown_nested_in_a_cancellation_completes() {
    let r2 = Runtime::builder()
        .workers(2)
        .max_compensation(0)
        .build()
        .unwrap();
    let _busy = r2.spawn_fn(|| std::thread::sleep(Duration::from_millis(600)));
    let pz = Promise::<u32>::new();
    let pf = pz.future();
    let _y = r2.spawn_fn(move || pf.wait().is_err()); // blocks the other worker
    std::thread::sleep(Duration::from_millis(50));
    let _z = r2.spawn_fn(move || drop(pz)); // queued: nobody is free to run it
    std::thread::sleep(Duration::from_millis(30));
    let r1 = Runtime::builder().workers(1).build().unwrap();
    let pa = Promise::<u32>::new();
    let fa = pa.future();
    let _a = r1.spawn(async move {
        let _owns = r2;
        let _ = fa.await;
    });
    std::thread::sleep(Duration::from_millis(50)); // `_a` is parked
    drop(r1);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(pa); // wakes `_a` after shutdown: cancelled, its body drops r2
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a shutdown inside a cancellation hung");
}

/// A promise dropped by a thread-local destructor (after ito's own thread-locals are gone)
/// wakes a task of a runtime that shut down: it is still cancelled. Runs in a child process,
/// since the failure mode is a panic during thread exit.
#[test]
fn a_cancellation_from_a_thread_local_destructor() {
    const CHILD: &str = "ITO_TEST_TLS_CHILD";
    if std::env::var(CHILD).is_err() {
        let st = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_cancellation_from_a_thread_local_destructor",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .status()
            .unwrap();
        assert!(st.success(), "child failed: {st:?}");
        return;
    }
    thread_local! {
        static HOLD: std::cell::RefCell<Option<Promise<u32>>> =
            const { std::cell::RefCell::new(None) };
    }
    let rt = Runtime::builder().workers(1).build().unwrap();
    let p1 = Promise::<u32>::new();
    let p2 = Promise::<u32>::new();
    let (f1, f2) = (p1.future(), p2.future());
    let mut a = rt.spawn(async move { f1.await });
    let mut b = rt.spawn(async move { f2.await });
    std::thread::sleep(Duration::from_millis(50));
    drop(rt);
    std::thread::spawn(move || {
        HOLD.with(|h| *h.borrow_mut() = Some(p1)); // registered before ito's thread-locals
        drop(p2); // a cancellation on this thread
    })
    .join()
    .unwrap();
    assert!(a.wait_timeout(Duration::from_secs(5)).is_some());
    assert!(b.wait_timeout(Duration::from_secs(5)).is_some());
}

/// A zero keep-alive: compensation threads exit as soon as they are not needed, and an idle
/// one that is still needed does not spin.
#[test]
fn a_zero_keep_alive_works() {
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(2)
        .thread_keep_alive(Duration::ZERO)
        .build()
        .unwrap();
    for _ in 0..3 {
        let fs: Vec<_> = (0..4)
            .map(|_| rt.spawn_fn(|| ito::sleep(Duration::from_millis(10)).wait()))
            .collect();
        for mut f in fs {
            assert_eq!(f.wait_timeout(Duration::from_secs(10)), Some(Ok(Ok(()))));
        }
    }
    let parks = rt.metrics().parks;
    std::thread::sleep(Duration::from_millis(200));
    assert!(rt.metrics().parks - parks < 100, "{:?}", rt.metrics());
}

/// Waits (a hang guard, not a timing assumption) until every worker of `rt` sleeps.
fn until_all_workers_sleep(rt: &Runtime) {
    let t = Instant::now();
    while rt.metrics().sleeping < rt.workers() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "workers still awake: {:?}",
            rt.metrics()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A worker out of work keeps looking only for its `idle_spin` window, then sleeps: an idle
/// runtime's workers all end up asleep, whatever the window, and wake for new work.
#[test]
fn idle_workers_sleep_after_the_spin_window() {
    for spin in [
        Duration::ZERO,
        Duration::from_micros(50),
        Duration::from_millis(20),
    ] {
        let rt = Runtime::builder()
            .workers(2)
            .idle_spin(spin)
            .build()
            .unwrap();
        for round in 0..3u64 {
            let fs: Vec<_> = (0..50).map(|i| rt.spawn_fn(move || i * round)).collect();
            let sum: u64 = fs.into_iter().map(|f| f.wait().unwrap()).sum();
            assert_eq!(sum, 1225 * round);
            until_all_workers_sleep(&rt);
            // Work from a task on the runtime too (pushes to a worker's own deque).
            let inner = rt.spawn_fn(move || {
                let fs: Vec<_> = (0..50).map(|i| ito::spawn_fn(move || i + round)).collect();
                fs.into_iter().map(|f| f.wait().unwrap()).sum::<u64>()
            });
            assert_eq!(inner.wait(), Ok(1225 + 50 * round));
            until_all_workers_sleep(&rt);
        }
    }
}

/// However long the spin window, dropping the runtime does not wait for it to end.
#[test]
fn a_long_spin_window_does_not_delay_shutdown() {
    let rt = Runtime::builder()
        .workers(2)
        .idle_spin(Duration::from_secs(3600))
        .build()
        .unwrap();
    for i in 0..100u32 {
        assert_eq!(rt.spawn_fn(move || i).wait(), Ok(i));
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(rt);
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "shutdown waited for the spin window"
    );
}

/// `shutdown_timeout` returns once its bound has passed, while a task still blocks outside ito,
/// and says that a thread had not finished; the blocked task then finishes on its own.
#[test]
fn shutdown_timeout_returns_while_a_task_blocks_outside_ito() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    drop(rt.spawn_fn(move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv();
        done_tx.send(()).unwrap();
    }));
    started_rx.recv().unwrap();
    assert!(
        !rt.shutdown_timeout(std::time::Duration::from_millis(20)),
        "a thread blocked outside ito cannot have finished"
    );
    assert!(
        done_rx.try_recv().is_err(),
        "returned before the blocked task was released"
    );
    release_tx.send(()).unwrap();
    done_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the task finishes on its own after shutdown_timeout returned");
}

/// A runtime with nothing running shuts down within its bound.
#[test]
fn shutdown_timeout_of_an_idle_runtime_finishes() {
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
    assert!(rt.shutdown_timeout(std::time::Duration::from_secs(30)));
}

/// A graph with more tasks blocked outside ito than the runtime can have threads stalls
/// (such a block holds its thread; a wait in ito would suspend instead); the runtime says so on
/// standard error instead of stalling silently. Runs in a child process, which the test kills once it has seen the
/// report: the stalled chain would otherwise never finish.
#[test]
fn a_stall_past_the_thread_bound_is_reported() {
    const CHILD: &str = "ITO_TEST_STALL_CHILD";
    if std::env::var(CHILD).is_err() {
        use std::io::{BufRead, BufReader};
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_stall_past_the_thread_bound_is_reported",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("every thread is blocked") {
                    let _ = tx.send(line);
                    return;
                }
            }
        });
        let seen = rx.recv_timeout(std::time::Duration::from_secs(60));
        let _ = child.kill();
        let _ = child.wait();
        let line = seen.expect("no stall report within 60 s");
        assert!(line.contains("stall-test"), "{line}");
        return;
    }
    // Task i blocks outside ito until task i+1 has blocked and come back: each block holds a
    // thread, and 400 of them do not fit in 1 + 0 + 256 slots.
    let rt = Runtime::builder()
        .workers(1)
        .max_compensation(0)
        .stack_size(256 * 1024)
        .thread_name("stall-test")
        .build()
        .unwrap();
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..=400).map(|_| mpsc::channel::<u32>()).unzip();
    let mut receivers = receivers.into_iter();
    let tasks: Vec<_> = senders[1..]
        .iter()
        .cloned()
        .zip(receivers.by_ref())
        .map(|(below, mine)| {
            rt.spawn_fn(move || {
                let v = ito::block_in_place(|| mine.recv().unwrap());
                let _ = below.send(v);
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(120));
    drop((tasks, senders));
}
