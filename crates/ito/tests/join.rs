//! Fork-join: results, panics, deep recursion, and composition with waiting, async code,
//! other runtimes and other threads.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use support::quiet_expected_panics;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = ito::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn rt(workers: usize) -> ito::Runtime {
    ito::Runtime::builder()
        .workers(workers)
        .thread_name(format!("join-test-{workers}"))
        .build()
        .unwrap()
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

/// The panic message of a caught panic.
fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn fib_on_runtimes_of_every_size() {
    for w in [1, 2, 4] {
        let rt = rt(w);
        assert_eq!(rt.install(|| fib(25)), fib_seq(25), "{w} workers");
    }
}

/// Fork at every call of a deep tree (the finest grain) at the default stack size.
#[test]
fn fine_grained_fib_on_default_stacks() {
    let rt = rt(2);
    assert_eq!(rt.install(|| fib(30)), 832_040);
}

/// A linear recursion with a join at every level: thousands of nested frames on one stack.
#[test]
fn deep_linear_recursion() {
    fn depth(d: u32) -> u32 {
        if d == 0 {
            return 0;
        }
        let (a, b) = ito::join(|| depth(d - 1), || 1);
        a + b
    }
    let rt = rt(2);
    assert_eq!(rt.install(|| depth(5_000)), 5_000);
}

/// Borrowed, non-`'static` data: a parallel sum over a slice.
#[test]
fn borrows_from_the_caller() {
    fn sum(v: &[u64]) -> u64 {
        if v.len() <= 1 {
            return v.iter().sum();
        }
        let (l, r) = v.split_at(v.len() / 2);
        let (a, b) = ito::join(|| sum(l), || sum(r));
        a + b
    }
    let v: Vec<u64> = (1..=10_000).collect();
    let rt = rt(2);
    assert_eq!(rt.install(|| sum(&v)), 10_000 * 10_001 / 2);
    let mut names = vec![String::new(); 2];
    let (a, b) = names.split_at_mut(1);
    rt.join(|| a[0] = "left".into(), || b[0] = "right".into());
    assert_eq!(names, ["left", "right"]);
}

#[test]
fn join_from_a_thread_that_is_not_a_worker() {
    // Outside any runtime: the global one.
    let (a, b) = ito::join(thread_name, thread_name);
    assert!(a.starts_with("ito-global"), "{a}");
    assert!(b.starts_with("ito-global"), "{b}");
    assert_eq!(ito::join(|| fib(15), || fib(16)), (610, 987));
    // Inside `Runtime::block_on` on this thread: that runtime.
    let rt = rt(2);
    let (a, _) = rt.block_on(async { ito::join(thread_name, || ()) });
    assert!(a.starts_with("join-test-2"), "{a}");
}

#[test]
fn join_inside_an_async_task() {
    let rt = rt(2);
    let f = rt.spawn(async {
        let x = ito::spawn_fn(|| 20).await.unwrap();
        let (a, b) = ito::join(|| fib(20), || x + 1);
        let y = ito::spawn(async { 1 }).await.unwrap();
        a + b + y
    });
    assert_eq!(f.wait(), Ok(6765 + 21 + 1));
}

#[test]
fn wait_inside_a_join_side() {
    let rt = rt(2);
    let got = rt.install(|| {
        ito::join(
            || ito::spawn_fn(|| fib(18)).wait().unwrap(),
            || ito::spawn(async { 5 }).wait().unwrap(),
        )
    });
    assert_eq!(got, (2584, 5));
}

/// The first side waits for what only the second side produces. On one worker this works
/// only because the worker exposes its pending join before it blocks, and a compensation
/// thread takes it.
#[test]
fn a_side_may_wait_for_the_other() {
    for w in [1, 2] {
        let rt = rt(w);
        for _ in 0..20 {
            let p = ito::Promise::new();
            let f = p.future();
            let (got, ok) = rt.install(|| {
                ito::join(
                    || f.wait_timeout(support::LONG).expect("the other side ran"),
                    || p.try_success(9),
                )
            });
            assert_eq!(got, Ok(9));
            assert!(ok);
        }
        // Deeper: the wait is three joins down, and the promise is completed by the
        // outermost join's second side.
        let p = ito::Promise::new();
        let f = p.future();
        let (got, ()) = rt.install(|| {
            ito::join(
                || {
                    ito::join(
                        || ito::join(|| f.wait_timeout(support::LONG).unwrap(), || 1).0,
                        || 2,
                    )
                    .0
                },
                || {
                    p.try_success(3);
                },
            )
        });
        assert_eq!(got, Ok(3));
    }
}

/// A join whose sides join on another runtime, nested both ways.
#[test]
fn nested_across_runtimes() {
    let outer = rt(2);
    let inner = ito::Runtime::builder()
        .workers(2)
        .thread_name("inner")
        .build()
        .unwrap();
    let (a, b) = outer.install(|| {
        ito::join(
            || {
                let (x, y) = inner.join(|| (fib(18), thread_name()), || fib(17));
                assert!(x.1.starts_with("inner"), "{}", x.1);
                // And back out: a join on the outer runtime from an inner worker.
                let z = inner.install(|| outer.join(thread_name, || fib(10)));
                assert!(z.0.starts_with("join-test-2"), "{}", z.0);
                x.0 + y + z.1
            },
            || fib(19),
        )
    });
    assert_eq!((a, b), (2584 + 1597 + 55, 4181));
}

#[test]
fn install_runs_on_the_runtime_and_in_place_on_its_workers() {
    let rt = rt(2);
    let name = rt.install(thread_name);
    assert!(name.starts_with("join-test-2"), "{name}");
    let same = rt.install(|| {
        let here = std::thread::current().id();
        rt.install(|| std::thread::current().id() == here)
    });
    assert!(same);
}

#[test]
fn a_panic_in_the_first_side_still_runs_the_second() {
    quiet_expected_panics();
    for w in [1, 2] {
        let rt = rt(w);
        for slow in [false, true] {
            let ran = AtomicUsize::new(0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                rt.join(
                    || -> u8 {
                        if slow {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        panic!("expected: left")
                    },
                    || {
                        std::thread::sleep(Duration::from_millis(2));
                        ran.fetch_add(1, Ordering::SeqCst);
                    },
                )
            }));
            assert_eq!(message(r.unwrap_err()), "expected: left");
            assert_eq!(ran.load(Ordering::SeqCst), 1, "{w} workers, slow {slow}");
        }
    }
}

#[test]
fn a_panic_in_the_second_side_reaches_the_caller_after_the_first() {
    quiet_expected_panics();
    for w in [1, 2] {
        let rt = rt(w);
        let done = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.join(
                || {
                    // Slow enough that, with two workers, the second side is stolen.
                    std::thread::sleep(Duration::from_millis(20));
                    done.fetch_add(1, Ordering::SeqCst);
                },
                || -> u8 { panic!("expected: right") },
            )
        }));
        assert_eq!(message(r.unwrap_err()), "expected: right");
        assert_eq!(done.load(Ordering::SeqCst), 1);
        // Both panic: the first side's panic wins.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.join(
                || -> u8 { panic!("expected: first") },
                || -> u8 { panic!("expected: second") },
            )
        }));
        assert_eq!(message(r.unwrap_err()), "expected: first");
        // The runtime is still usable.
        assert_eq!(rt.install(|| fib(15)), 610);
    }
}

#[test]
fn a_long_first_side_lets_an_idle_worker_take_the_second() {
    let rt = rt(2);
    let before = rt.metrics().join_steals;
    let (a, b) = rt.install(|| {
        ito::join(
            || {
                std::thread::sleep(Duration::from_millis(50));
                std::thread::current().id()
            },
            || std::thread::current().id(),
        )
    });
    assert_ne!(a, b, "the second side ran on the other worker");
    assert!(rt.metrics().join_steals > before);
}

#[test]
fn join3_runs_all_three() {
    let rt = rt(2);
    assert_eq!(
        rt.install(|| ito::join3(|| fib(10), || 2, || "c")),
        (55, 2, "c")
    );
}

/// Many threads start fork-join trees on one runtime at once: every leaf runs exactly once
/// and every result arrives once.
#[test]
fn stress_every_leaf_runs_once() {
    fn tree(lo: usize, hi: usize, hits: &[AtomicUsize]) -> usize {
        if hi - lo == 1 {
            hits[lo].fetch_add(1, Ordering::Relaxed);
            return lo;
        }
        let mid = (lo + hi) / 2;
        let (a, b) = ito::join(|| tree(lo, mid, hits), || tree(mid, hi, hits));
        a + b
    }
    const LEAVES: usize = 20_000;
    let rt = rt(3);
    let hits: Vec<AtomicUsize> = (0..LEAVES * 8).map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (rt, hits) = (&rt, &hits);
            s.spawn(move || {
                let lo = t * LEAVES;
                for _ in 0..3 {
                    let sum = rt.install(|| tree(lo, lo + LEAVES, hits));
                    assert_eq!(sum, (lo..lo + LEAVES).sum::<usize>());
                }
            });
        }
    });
    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 3));
}

/// Joins mixed with tasks that block: waits inside join sides, joins inside tasks that are
/// waited on, on a small runtime.
#[test]
fn stress_joins_and_waits_mixed() {
    fn node(d: u32) -> u64 {
        if d == 0 {
            return 1;
        }
        if d % 3 == 0 {
            let f = ito::spawn_fn(move || node(d - 1));
            let (a, b) = ito::join(|| f.wait().unwrap(), || node(d - 1));
            a + b
        } else {
            let (a, b) = ito::join(|| node(d - 1), || node(d - 1));
            a + b
        }
    }
    for w in [1, 2] {
        let rt = rt(w);
        for _ in 0..5 {
            assert_eq!(rt.install(|| node(12)), 1 << 12);
        }
    }
}

/// Runs `f` on a thread of its own, failing the test if it does not return in time.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(support::LONG)
        .unwrap_or_else(|_| panic!("{what}: did not finish in time"))
}

/// Dropping a runtime while join jobs are pending, one of which blocks on another: the
/// runtime's threads finish every join (a blocked one brings in another thread), and the
/// drop returns.
#[test]
fn shutdown_finishes_pending_joins_even_when_one_waits_for_another() {
    within("drop during joins", || {
        for _ in 0..5 {
            let rt = ito::Runtime::builder()
                .workers(2)
                .max_compensation(0)
                .build()
                .unwrap();
            let busy = rt.spawn_fn(|| std::thread::sleep(Duration::from_millis(60)));
            std::thread::sleep(Duration::from_millis(5));
            let (started, is_started) = std::sync::mpsc::channel();
            let t = rt.spawn_fn(move || {
                started.send(()).unwrap();
                let (p2, pc) = (ito::Promise::new(), ito::Promise::new());
                let (f2, fc) = (p2.future(), pc.future());
                ito::join(
                    || {
                        ito::join(
                            || fc.wait().unwrap(),
                            || {
                                pc.try_success(());
                            },
                        );
                        p2.try_success(());
                    },
                    // Waits for `p2`, which needs the inner second side to run first.
                    || f2.wait().unwrap(),
                );
                1
            });
            // A task still queued at the drop is cancelled: wait until `t` runs (a loaded
            // machine may take longer than any fixed sleep), then give its joins a moment.
            is_started.recv().unwrap();
            std::thread::sleep(Duration::from_millis(10));
            drop(rt);
            assert_eq!(busy.wait(), Ok(()));
            assert_eq!(t.wait(), Ok(1));
        }
    });
}

/// Join jobs still pending at shutdown run on the runtime's own threads, so their nested
/// joins stay on that runtime.
#[test]
fn shutdown_runs_pending_joins_on_the_runtimes_threads() {
    fn tree(d: u32, names: &std::sync::Mutex<std::collections::HashSet<String>>) -> u64 {
        if d == 0 {
            names.lock().unwrap().insert(thread_name());
            return 1;
        }
        let (a, b) = ito::join(|| tree(d - 1, names), || tree(d - 1, names));
        a + b
    }
    within("drop during a tree", || {
        for pause in [0, 200, 600, 2000] {
            let names = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
            let rt = ito::Runtime::builder()
                .workers(2)
                .thread_name("victim")
                .build()
                .unwrap();
            let n = names.clone();
            let f = rt.spawn_fn(move || tree(14, &n));
            std::thread::sleep(Duration::from_micros(pause));
            drop(rt);
            // Cancelled if it never started; otherwise complete.
            if let Ok(v) = f.wait() {
                assert_eq!(v, 1 << 14);
            }
            for name in names.lock().unwrap().iter() {
                assert!(name.starts_with("victim"), "a leaf ran on {name}");
            }
        }
    });
}

/// A side that blocks outside ito (a channel) on work forked by an enclosing join: with
/// `block_in_place`, the worker exposes that work before blocking.
#[test]
fn block_in_place_exposes_pending_joins() {
    within("block_in_place", || {
        for w in [1, 2] {
            let rt = rt(w);
            for _ in 0..20 {
                let (tx, rx) = std::sync::mpsc::channel();
                let got = rt.install(move || {
                    ito::join(
                        move || {
                            ito::join(
                                move || ito::block_in_place(|| rx.recv().unwrap()),
                                move || tx.send(4).unwrap(),
                            )
                            .0
                        },
                        || (),
                    )
                    .0
                });
                assert_eq!(got, 4);
            }
        }
    });
}

/// An ito wait inside `block_in_place` (a wait inside a wait) counts the worker out once: with
/// no compensation thread allowed and the only worker blocked, a task pushed from outside
/// still gets a thread (the no-deadlock guarantee), and it is the task the wait needs.
#[test]
fn a_wait_inside_block_in_place_keeps_the_no_deadlock_guarantee() {
    within("nested wait", || {
        let rt = ito::Runtime::builder()
            .workers(1)
            .max_compensation(0)
            .build()
            .unwrap();
        let p = ito::Promise::<u32>::new();
        let f = p.future();
        std::thread::scope(|s| {
            let rt = &rt;
            s.spawn(move || {
                // Let the worker park in the inner wait first (either order must work).
                std::thread::sleep(std::time::Duration::from_millis(50));
                drop(rt.spawn_fn(move || p.success(7).unwrap()));
            });
            let got = rt.install(|| ito::block_in_place(|| f.wait()));
            assert_eq!(got, Ok(7));
        });
    });
}

/// Work started from the blocking pool goes to the pool's runtime.
#[test]
fn the_blocking_pool_uses_its_runtime() {
    let rt = rt(2);
    let f = rt.spawn_blocking(|| {
        let spawned = ito::spawn_fn(thread_name).wait().unwrap();
        let (joined, _) = ito::join(thread_name, || ());
        (spawned, joined)
    });
    let (spawned, joined) = f.wait().unwrap();
    assert!(spawned.starts_with("join-test-2"), "{spawned}");
    assert!(joined.starts_with("join-test-2"), "{joined}");
}
