//! Task cancellation: `Future::cancel`, cancellation points of async and synchronous tasks,
//! and that every body is dropped exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::time::Duration;

use ito::{Failure, Promise, Runtime};

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn rt(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

#[test]
fn an_idle_async_task_is_dropped_and_its_future_fails() {
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let polls = Arc::new(AtomicUsize::new(0));
    let gate = Promise::<()>::new();
    let (g, d, p) = (gate.future(), DropCount(drops.clone()), polls.clone());
    let task = rt.spawn(async move {
        let _d = d;
        p.fetch_add(1, Ordering::SeqCst);
        g.await.unwrap();
        p.fetch_add(1, Ordering::SeqCst);
    });
    while polls.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let watcher = task.map(|()| ());
    assert!(task.cancel());
    assert_eq!(watcher.wait(), Err(Failure::Cancelled));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    gate.success(()).unwrap(); // completing the gate afterwards wakes nothing
    assert_eq!(polls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_queued_synchronous_task_never_runs() {
    let rt = rt(1);
    let (started, is_started) = channel();
    let release = Promise::<()>::new();
    let r = release.future();
    // Occupy the only worker so the next task stays queued.
    let blocker = rt.spawn_fn(move || {
        started.send(()).unwrap();
        r.wait().unwrap();
    });
    is_started.recv().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let (r2, d) = (ran.clone(), DropCount(drops.clone()));
    let queued = rt.spawn_fn(move || {
        let _d = d;
        r2.fetch_add(1, Ordering::SeqCst);
    });
    let watcher = queued.map(|()| ());
    assert!(queued.cancel());
    release.success(()).unwrap();
    assert_eq!(blocker.wait(), Ok(()));
    assert_eq!(watcher.wait(), Err(Failure::Cancelled));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_running_synchronous_task_sees_cancellation_in_wait() {
    for workers in [1, 2] {
        let rt = rt(workers);
        let (started, is_started) = channel();
        let (report, reported) = channel();
        let never = ito::Future::<u8>::never();
        let task = rt.spawn_fn(move || {
            started.send(()).unwrap();
            let a = never.wait();
            // Already cancelled: every later blocking call returns at once.
            let b = ito::sleep(Duration::from_secs(60)).wait();
            let c = never.wait_timeout(Duration::from_secs(60));
            // A completed future still gives its value.
            let d = ito::Future::successful(7).wait();
            report.send((a, b, c, d, ito::is_cancelled())).unwrap();
            "finished anyway"
        });
        is_started.recv().unwrap();
        let watcher = task.map(|s| s);
        assert!(task.cancel());
        let (a, b, c, d, flag) = reported.recv().unwrap();
        assert_eq!(a, Err(Failure::Cancelled));
        assert_eq!(b, Err(Failure::Cancelled));
        assert_eq!(c, Some(Err(Failure::Cancelled)));
        assert_eq!(d, Ok(7));
        assert!(flag);
        // A synchronous body that returns after cancellation keeps its result.
        assert_eq!(watcher.wait(), Ok("finished anyway"));
    }
}

#[test]
fn a_sleeping_synchronous_task_is_woken() {
    let rt = rt(1);
    let (started, is_started) = channel();
    let task = rt.spawn_fn(move || {
        started.send(()).unwrap();
        ito::sleep(Duration::from_secs(3600)).wait()
    });
    is_started.recv().unwrap();
    std::thread::sleep(Duration::from_millis(5)); // let it park (either order must work)
    let watcher = task.map(|r| r);
    assert!(task.cancel());
    assert_eq!(watcher.wait(), Ok(Err(Failure::Cancelled)));
    // The worker it occupied is free again.
    assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
}

#[test]
fn another_handle_keeps_the_task_alive() {
    let rt = rt(2);
    let gate = Promise::<()>::new();
    let g = gate.future();
    let task = rt.spawn(async move { g.await.map(|()| 5) });
    let other = task.clone();
    assert!(!task.cancel());
    gate.success(()).unwrap();
    assert_eq!(other.wait(), Ok(Ok(5)));
}

#[test]
fn cancelling_a_finished_task_or_a_promise_is_a_drop() {
    let rt = rt(1);
    let done = rt.spawn(async { 1 });
    assert_eq!(done.wait(), Ok(1));
    assert!(!done.cancel());
    let p = Promise::<u8>::new();
    assert!(!p.future().cancel());
    assert!(p.try_success(1));
}

#[test]
fn a_task_cancelled_while_running_stops_at_its_next_suspension() {
    let rt = rt(2);
    // The task's only handle reaches the task through a slot (a promise would keep a copy).
    let slot = Arc::new(std::sync::Mutex::new(None::<ito::Future<()>>));
    let me = Promise::<()>::new();
    let (handed, drops) = (me.future(), Arc::new(AtomicUsize::new(0)));
    let my_slot = slot.clone();
    let (d, reached) = (DropCount(drops.clone()), Arc::new(AtomicUsize::new(0)));
    let r = reached.clone();
    let gate = Promise::<()>::new();
    let g = gate.future();
    let task = rt.spawn(async move {
        let _d = d;
        handed.await.unwrap();
        let own = my_slot.lock().unwrap().take().unwrap();
        // Cancel ourselves mid-poll: this poll goes on...
        assert!(own.cancel());
        r.fetch_add(1, Ordering::SeqCst);
        // ...and the body is dropped at the next suspension.
        g.await.unwrap();
        r.fetch_add(1, Ordering::SeqCst);
    });
    let watcher = task.map(|()| ());
    *slot.lock().unwrap() = Some(task);
    me.success(()).unwrap();
    assert_eq!(watcher.wait(), Err(Failure::Cancelled));
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(gate);
}

#[test]
fn stress_cancel_against_wakes_and_completion() {
    let rt = Arc::new(rt(2));
    const N: usize = 4000;
    let drops = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let mut gates = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..N {
        let gate = Promise::<()>::new();
        let g = gate.future();
        let (d, c) = (DropCount(drops.clone()), completed.clone());
        let t = if i % 2 == 0 {
            rt.spawn(async move {
                let _d = d;
                let _ = g.await;
                c.fetch_add(1, Ordering::SeqCst);
            })
        } else {
            rt.spawn_fn(move || {
                let _d = d;
                let _ = g.wait();
                c.fetch_add(1, Ordering::SeqCst);
            })
        };
        gates.push(gate);
        tasks.push(t);
    }
    let outcomes: Vec<_> = tasks.iter().map(|t| t.map(|()| ())).collect();
    // One thread opens the gates while another cancels, both in random-ish orders.
    let opener = std::thread::spawn(move || {
        for (i, g) in gates.into_iter().enumerate().rev() {
            if i % 3 != 0 {
                let _ = g.try_success(());
            }
        }
    });
    let mut cancelled = 0;
    for t in tasks {
        cancelled += usize::from(t.cancel());
    }
    opener.join().unwrap();
    let mut ok = 0;
    let mut failed = 0;
    for o in outcomes {
        match o.wait() {
            Ok(()) => ok += 1,
            Err(Failure::Cancelled) => failed += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(ok + failed, N);
    assert!(failed <= cancelled);
    // Every body was dropped exactly once (gates dropped without completing break the rest).
    assert_eq!(drops.load(Ordering::SeqCst), N);
    assert_eq!(completed.load(Ordering::SeqCst), ok);
}
