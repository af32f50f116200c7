//! Structured concurrency: scopes, race, first_ok, TaskSet, CancellationToken.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ito::{CancellationToken, Failure, Future, Promise, Runtime, Task, TaskSet};

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Counts live instances: +1 when made, -1 when dropped.
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(c: &Arc<AtomicUsize>) -> Live {
        c.fetch_add(1, Ordering::SeqCst);
        Live(c.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn rt(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

#[test]
fn the_first_failure_cancels_every_child() {
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let r = rt
        .spawn_fn({
            let drops = drops.clone();
            move || {
                ito::scope_fn(|s| {
                    for i in 0..200 {
                        let d = DropCount(drops.clone());
                        if i % 2 == 0 {
                            s.spawn(async move {
                                let _d = d;
                                Future::<()>::never().await
                            });
                        } else {
                            s.spawn_fn(move || {
                                let _d = d;
                                Future::<()>::never().wait()
                            });
                        }
                    }
                    s.spawn_fn(|| -> () { panic!("child 200 failed") });
                })
            }
        })
        .wait()
        .unwrap();
    let err = r.unwrap_err();
    assert_eq!(err.first(), &Failure::Panic("child 200 failed".into()));
    assert_eq!(
        err.failures().len(),
        1,
        "cancelled children are not failures"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 200);
}

#[test]
fn no_child_outlives_its_scope() {
    let rt = rt(2);
    let live = Arc::new(AtomicUsize::new(0));
    let l = live.clone();
    rt.spawn_fn(move || {
        for round in 0..20 {
            ito::scope_fn(|s| {
                for i in 0..10 {
                    let l = l.clone();
                    s.spawn_fn(move || {
                        let _g = Live::new(&l);
                        // Grandchildren, spawned through the same scope.
                        for _ in 0..3 {
                            let l = l.clone();
                            s.spawn(async move {
                                let _g = Live::new(&l);
                                ito::sleep(Duration::from_micros(50 * (i % 3)))
                                    .await
                                    .unwrap();
                            });
                        }
                        std::thread::yield_now();
                    });
                }
            })
            .unwrap();
            assert_eq!(
                l.load(Ordering::SeqCst),
                0,
                "round {round}: a child outlived the scope"
            );
        }
    })
    .wait()
    .unwrap();
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

#[test]
fn children_borrow_the_callers_frame() {
    let mut data = vec![0u64; 64];
    let base = 10u64;
    ito::scope_fn(|s| {
        for (i, chunk) in data.chunks_mut(8).enumerate() {
            let base = &base;
            s.spawn_fn(move || {
                for (j, x) in chunk.iter_mut().enumerate() {
                    *x = base + (i * 8 + j) as u64;
                }
            });
        }
    })
    .unwrap();
    assert_eq!(data, (10..74).collect::<Vec<_>>());
}

#[test]
fn supervised_scopes_keep_siblings_and_report_every_failure() {
    let finished = AtomicUsize::new(0);
    let err = ito::scope_fn_supervised(|s| {
        for i in 0..3 {
            s.spawn_fn(move || -> () { panic!("bad {i}") });
        }
        for _ in 0..10 {
            s.spawn_fn(|| {
                std::thread::sleep(Duration::from_millis(1));
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
    })
    .unwrap_err();
    let mut msgs: Vec<String> = err.failures().iter().map(|f| f.to_string()).collect();
    msgs.sort();
    assert_eq!(
        msgs,
        ["panicked: bad 0", "panicked: bad 1", "panicked: bad 2"]
    );
    assert_eq!(finished.load(Ordering::SeqCst), 10);
    assert_eq!(Failure::from(err.clone()), err.first().clone());
}

#[test]
fn a_panicking_body_cancels_and_waits_then_resumes() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ito::scope_fn(|s| {
            let d = DropCount(d.clone());
            s.spawn(async move {
                let _d = d;
                Future::<()>::never().await
            });
            panic!("body failed");
        })
    }));
    assert!(caught.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn nested_scopes_on_one_worker_do_not_deadlock() {
    fn sum(v: &[u64]) -> u64 {
        if v.len() <= 16 {
            return v.iter().sum();
        }
        let (l, r) = v.split_at(v.len() / 2);
        ito::scope_fn(|s| {
            let a = s.spawn_fn(|| sum(l));
            let b = s.spawn_fn(|| sum(r));
            a.wait().unwrap() + b.wait().unwrap()
        })
        .unwrap()
    }
    let v: Vec<u64> = (0..20_000).collect();
    for workers in [1, 2] {
        let rt = rt(workers);
        let v2 = v.clone();
        assert_eq!(rt.spawn_fn(move || sum(&v2)).wait(), Ok(199_990_000));
    }
}

#[test]
fn cancelling_the_task_that_runs_a_scope_cancels_its_children() {
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let (started, is_started) = std::sync::mpsc::channel();
    let d = drops.clone();
    let task = rt
        .spawn_fn(move || {
            ito::scope_fn(|s| {
                for _ in 0..5 {
                    let d = DropCount(d.clone());
                    s.spawn(async move {
                        let _d = d;
                        Future::<()>::never().await
                    });
                }
                started.send(()).unwrap();
            })
        })
        .shared();
    is_started.recv().unwrap();
    let watcher = task.map(|r| r.is_ok());
    assert!(task.cancel());
    assert_eq!(
        watcher.wait(),
        Ok(true),
        "cancelled children are not failures"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 5);
}

#[test]
fn async_scope_waits_and_dropping_it_cancels() {
    let rt = rt(2);
    let out = rt.block_on(ito::scope(|s| async move {
        let a = s.spawn(async { 2 });
        let b = s.clone().spawn_fn(|| 3);
        a.await.unwrap() * b.await.unwrap()
    }));
    assert_eq!(out.unwrap(), 6);

    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let gate = Promise::<()>::new();
    let g = gate.future();
    let spawned = Promise::<()>::new();
    let sp = spawned.clone();
    let outer = rt.spawn(async move {
        ito::scope(|s| async move {
            for _ in 0..4 {
                let d = DropCount(d.clone());
                s.spawn(async move {
                    let _d = d;
                    Future::<()>::never().await
                });
            }
            sp.success(()).unwrap();
            g.await
        })
        .await
    });
    // Not a sleep: on a slow machine the task might not have started yet, and cancelling it
    // then would drop it before it spawned anything.
    spawned.future().wait().unwrap();
    assert!(outer.abort()); // drops the scope future mid-way
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while drops.load(Ordering::SeqCst) < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "children not cancelled"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(gate);
}

#[test]
fn race_cancels_the_loser() {
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let d = DropCount(drops.clone());
    let slow = rt.spawn(async move {
        let _d = d;
        ito::sleep(Duration::from_secs(3600)).await.unwrap();
        "slow"
    });
    let fast = rt.spawn(async { "fast" });
    assert_eq!(ito::race(slow, fast).wait(), Ok("fast"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while drops.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "loser not cancelled");
        std::thread::yield_now();
    }
    // A failure wins a race too.
    let bad = rt.spawn_fn(|| -> u8 { panic!("no") });
    let never = rt.spawn(async {
        let _ = Future::<()>::never().await;
        0u8
    });
    assert!(ito::race(bad, never).wait().unwrap_err().is_panic());
}

/// A handle that fails with `f` (a promise's, made failed).
fn failed<T>(f: Failure) -> Task<T> {
    let (p, t) = Promise::with_task();
    p.failure(f).unwrap();
    t
}

/// A handle that never completes while its promise is kept.
fn pending<T>(keep: &mut Vec<Promise<T>>) -> Task<T> {
    let (p, t) = Promise::with_task();
    keep.push(p);
    t
}

#[test]
fn first_ok_skips_failures_and_reports_the_last() {
    let mut keep = Vec::new();
    let fs = vec![
        failed(Failure::msg("a")),
        ito::spawn_fn(|| 3u8),
        pending(&mut keep),
    ];
    assert_eq!(ito::first_ok(fs).wait(), Ok(3));
    let all_bad = vec![failed::<u8>(Failure::msg("a")), failed(Failure::msg("b"))];
    assert_eq!(ito::first_ok(all_bad).wait().unwrap_err().to_string(), "b");
}

#[test]
fn task_set_yields_in_completion_order_and_cancels_on_drop() {
    let rt = rt(2);
    rt.block_on(async {
        let mut set = TaskSet::new();
        let gates: Vec<Promise<u32>> = (0..5).map(|_| Promise::new()).collect();
        for g in &gates {
            let f = g.future();
            set.spawn(async move { f.await.unwrap() });
        }
        assert_eq!(set.len(), 5);
        for i in [3usize, 0, 4, 1, 2] {
            gates[i].success(i as u32).unwrap();
            assert_eq!(set.join_next().await, Some(Ok(i as u32)));
        }
        assert_eq!(set.join_next().await, None);
    });

    let drops = Arc::new(AtomicUsize::new(0));
    {
        let mut set = TaskSet::new();
        for _ in 0..10 {
            let d = DropCount(drops.clone());
            set.spawn(async move {
                let _d = d;
                Future::<()>::never().await
            });
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while drops.load(Ordering::SeqCst) < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "tasks outlived their set"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn cancellation_tokens_reach_every_descendant() {
    let root = CancellationToken::new();
    let tokens: Vec<CancellationToken> = (0..8).map(|_| root.child_token()).collect();
    let grand: Vec<CancellationToken> = tokens.iter().map(|t| t.child_token()).collect();
    tokens[0].cancel();
    assert!(grand[0].is_cancelled() && !grand[1].is_cancelled() && !root.is_cancelled());
    // Children made concurrently with the cancel are cancelled either way.
    let r2 = root.clone();
    let maker = std::thread::spawn(move || (0..1000).map(|_| r2.child_token()).collect::<Vec<_>>());
    root.cancel();
    let late = maker.join().unwrap();
    assert!(late.iter().all(CancellationToken::is_cancelled));
    assert!(grand.iter().all(CancellationToken::is_cancelled));
    assert_eq!(root.child_token().cancelled().wait(), Ok(()));
}

#[test]
fn cancelling_the_scope_token_cancels_the_scope() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let r = ito::scope_fn(|s| {
        for _ in 0..3 {
            let d = DropCount(d.clone());
            s.spawn(async move {
                let _d = d;
                Future::<()>::never().await
            });
        }
        let token = s.token().clone();
        s.spawn_fn(move || token.cancel());
        "done"
    });
    // The children were cancelled (otherwise the scope would wait forever), and cancelled
    // children are not failures.
    assert_eq!(r.unwrap(), "done");
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}
