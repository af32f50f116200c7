//! Results that move (`Task<T>`): the snippets, non-`Clone` results through every way a
//! result travels, panics resumed, detaching, polling after completion, `select!`, and the
//! `Send` bounds.

mod support;

use std::cell::Cell;
use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::FusedFuture;
use futures::stream::FuturesUnordered;
use ito::{Failure, Future, Promise, Task, TaskSet};
use support::{LONG, get, quiet_expected_panics, rt};

fn open() -> File {
    File::open("Cargo.toml").expect("the crate's manifest")
}

/// Whether `f` is a readable file (it moved through intact).
fn readable(f: &File) -> bool {
    f.metadata().is_ok_and(|m| m.len() > 0)
}

// ----- the snippets --------------------------------------------------------------

#[test]
fn a_result_moves_to_its_awaiter() {
    let f: Result<std::io::Result<File>, Failure> =
        ito::block_on(ito::spawn(async { File::open("Cargo.toml") }));
    assert!(readable(&f.unwrap().unwrap()));
    let v: Result<Vec<String>, Failure> = ito::spawn_fn(|| vec![String::from("moved")]).wait();
    assert_eq!(v, Ok(vec![String::from("moved")]));
}

#[test]
fn a_panic_payload_survives_and_resumes() {
    quiet_expected_panics();
    let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(42u32) })
        .wait()
        .unwrap_err();
    assert_eq!(
        err.into_panic().unwrap().downcast::<u32>().ok().map(|b| *b),
        Some(42)
    );
    // Resumed, the payload is the task's own.
    let t: Task<()> =
        ito::spawn(async { std::panic::panic_any::<String>(String::from("expected: again")) });
    let err = t.wait().unwrap_err();
    let payload = err.into_panic().unwrap();
    let resumed = catch_unwind(AssertUnwindSafe(|| resume_unwind(payload))).unwrap_err();
    assert_eq!(
        resumed.downcast_ref::<String>().map(String::as_str),
        Some("expected: again")
    );
}

#[test]
fn handles_are_std_futures_for_join_all() {
    let all = ito::block_on(futures::future::join_all(
        (0..4).map(|i| ito::spawn(async move { i })),
    ));
    assert_eq!(all, [Ok(0), Ok(1), Ok(2), Ok(3)]);
}

// ----- a non-`Clone` result through every path --------------------------------------------

#[test]
fn a_file_through_spawn_and_spawn_fn_and_spawn_blocking() {
    let a = ito::spawn(async { open() }).wait().unwrap();
    let b = ito::spawn_fn(open).wait().unwrap();
    let c = ito::spawn_blocking(open).wait().unwrap();
    let rt = rt(1);
    let d = rt.spawn_fn(open).wait().unwrap();
    let e = ito::block_on(rt.spawn(async { open() })).unwrap();
    assert!([a, b, c, d, e].iter().all(readable));
}

#[test]
fn a_file_through_a_promise() {
    let (p, t) = Promise::with_task();
    let writer = std::thread::spawn(move || p.success(open()).map_err(|_| ()).unwrap());
    assert!(readable(&get(t).unwrap()));
    writer.join().unwrap();
    // A unique promise dropped unanswered breaks, as any promise does.
    let (p, t) = Promise::<File>::with_task();
    drop(p);
    assert!(matches!(t.wait(), Err(Failure::BrokenPromise)));
}

#[test]
fn a_unique_promise_has_no_shared_future() {
    quiet_expected_panics();
    let (p, _t) = Promise::<u8>::with_task();
    let r = catch_unwind(AssertUnwindSafe(|| p.future()));
    assert!(r.is_err(), "a second reader would read a moved value");
}

#[test]
fn a_file_through_race_and_first_ok() {
    let rt = rt(2);
    let slow = rt.spawn(async {
        let _ = Future::<()>::never().await;
        open()
    });
    let fast = rt.spawn_fn(open);
    assert!(readable(&ito::race(slow, fast).wait().unwrap()));

    let failing = rt.spawn_fn(|| -> File { panic!("expected: no file here") });
    quiet_expected_panics();
    let good = rt.spawn_fn(open);
    assert!(readable(&ito::first_ok([failing, good]).wait().unwrap()));
}

#[test]
fn a_file_through_a_task_set() {
    let mut set = TaskSet::new();
    for i in 0..8 {
        if i % 2 == 0 {
            set.spawn(async { open() });
        } else {
            set.spawn_fn(open);
        }
    }
    let mut n = 0;
    while let Some(r) = set.join_next_blocking() {
        assert!(readable(&r.unwrap()));
        n += 1;
    }
    assert_eq!(n, 8);
}

#[test]
fn a_file_through_a_scope() {
    let files = ito::scope_fn(|s| {
        let a = s.spawn_fn(open);
        let b = s.spawn(async { open() });
        (a.wait().unwrap(), b.wait().unwrap())
    })
    .unwrap();
    assert!(readable(&files.0) && readable(&files.1));
}

#[test]
fn a_reply_moves_through_process_call() {
    use ito::process::{self, Mailbox, ReplyTo};
    let server = process::spawn(|mut mb: Mailbox<ReplyTo<File>>| async move {
        let reply_to = mb.recv().await;
        reply_to.reply(open());
    });
    let file = ito::block_on(process::call(&server, |r| r, LONG)).unwrap();
    assert!(readable(&file));
}

/// Every value arrives exactly once and is dropped exactly once, through waits, awaits,
/// races and sets, while scopes watch the same cells for failures.
#[test]
fn stress_every_value_moves_once() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    quiet_expected_panics();
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let arrived = Arc::new(AtomicUsize::new(0));
    const N: usize = 400;
    let (d, a) = (drops.clone(), arrived.clone());
    let failures = rt
        .spawn_fn(move || {
            let r = ito::scope_fn_supervised(|s| {
                let handles: Vec<_> = (0..N)
                    .map(|i| {
                        let d = d.clone();
                        if i % 10 == 0 {
                            s.spawn_fn(move || -> Counted { panic!("expected: child {i}") })
                        } else if i % 2 == 0 {
                            s.spawn(async move { Counted(d) })
                        } else {
                            s.spawn_fn(move || Counted(d))
                        }
                    })
                    .collect();
                // Half are awaited by another task, half waited for here.
                let (near, far): (Vec<_>, Vec<_>) = handles
                    .into_iter()
                    .enumerate()
                    .partition(|(i, _)| i % 4 < 2);
                let a2 = a.clone();
                let far = ito::spawn(async move {
                    for (_, h) in far {
                        if h.await.is_ok() {
                            a2.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
                for (_, h) in near {
                    if h.wait().is_ok() {
                        a.fetch_add(1, Ordering::SeqCst);
                    }
                }
                far.wait().unwrap();
            });
            r.unwrap_err().failures().to_vec()
        })
        .wait()
        .unwrap();
    assert_eq!(failures.len(), N / 10, "every panic is a scope failure");
    assert!(failures.iter().all(Failure::is_panic));
    assert_eq!(
        arrived.load(Ordering::SeqCst),
        N - N / 10,
        "every value arrived"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        N - N / 10,
        "each value dropped once"
    );
}

// ----- handles --------------------------------------------------------------------------

#[test]
fn a_dropped_handle_does_not_cancel_its_task() {
    let rt = rt(2);
    let gate = Promise::<()>::new();
    let g = gate.future();
    let (tx, rx) = std::sync::mpsc::channel();
    let t = rt.spawn(async move {
        g.await.unwrap();
        tx.send("ran to its end").unwrap();
    });
    drop(t);
    gate.success(()).unwrap();
    assert_eq!(rx.recv_timeout(LONG), Ok("ran to its end"));

    // Also after it was polled pending (its waiter node registered) and dropped.
    let gate = Promise::<()>::new();
    let g = gate.future();
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let mut t = rt.spawn(async move {
            g.await.unwrap();
            tx.send("detached").unwrap();
        });
        let w = std::task::Waker::noop();
        assert!(support::poll_once(std::pin::Pin::new(&mut t), w).is_pending());
        let moved = t; // a `Task` may move after a poll: its waiter is not inside it
        drop(moved);
    }
    gate.success(()).unwrap();
    assert_eq!(rx.recv_timeout(LONG), Ok("detached"));
}

#[test]
fn abort_cancels_and_reports_it() {
    let rt = rt(1);
    let t = rt.spawn(async {
        let _ = Future::<()>::never().await;
        open()
    });
    assert!(t.abort());
    assert!(!t.abort(), "only the first call cancels");
    assert!(matches!(t.wait(), Err(Failure::Cancelled)));
    // A finished task cannot be aborted.
    let mut done = rt.spawn_fn(|| 1);
    assert_eq!(done.wait_timeout(LONG), Some(Ok(1)));
    assert!(!done.abort());
}

#[test]
fn a_handle_polled_after_completion() {
    quiet_expected_panics();
    let mut t = std::pin::pin!(ito::spawn(async { String::from("once") }));
    let w = std::task::Waker::noop();
    assert!(!t.is_terminated());
    let first = loop {
        match support::poll_once(t.as_mut(), w) {
            std::task::Poll::Ready(v) => break v,
            std::task::Poll::Pending => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    assert_eq!(first, Ok(String::from("once")));
    assert!(t.is_terminated());
    assert!(t.is_finished());
    let again = catch_unwind(AssertUnwindSafe(|| support::poll_once(t.as_mut(), w)));
    assert!(again.is_err(), "the result went to the first poll");
}

#[test]
fn wait_timeout_keeps_the_handle_until_the_result_is_there() {
    let gate = Promise::<()>::new();
    let g = gate.future();
    let mut t = ito::spawn(async move { g.await.map(|()| vec![1, 2, 3]) });
    assert_eq!(t.wait_timeout(Duration::from_millis(5)), None);
    assert!(!t.is_finished());
    gate.success(()).unwrap();
    assert_eq!(t.wait_timeout(LONG), Some(Ok(Ok(vec![1, 2, 3]))));
    quiet_expected_panics();
    let again = catch_unwind(AssertUnwindSafe(|| t.wait_timeout(LONG)));
    assert!(again.is_err(), "the handle is spent");
}

#[test]
fn shared_turns_a_handle_into_a_future_for_many_readers() {
    let f: Future<u32> = ito::spawn_fn(|| 20).shared();
    let g = f.map(|x| x + 22);
    let h: Future<u32> = ito::spawn_fn(|| 1).into();
    assert_eq!(
        (f.wait(), f.wait(), g.wait(), h.wait()),
        (Ok(20), Ok(20), Ok(42), Ok(1))
    );
    // The last shared handle still cancels the task.
    let rt = rt(1);
    let never = rt.spawn(async { Future::<()>::never().await }).shared();
    let watcher = never.map(|r| r.is_ok());
    assert!(never.cancel());
    assert_eq!(watcher.wait(), Err(Failure::Cancelled));
}

#[test]
fn select_on_two_handles() {
    let rt = rt(2);
    let gate = Promise::<()>::new();
    let g = gate.future();
    // `Unpin` and `FusedFuture`: `select!` takes the handles as they are, by `&mut`.
    let mut slow = rt.spawn(async move { g.await.map(|()| "slow") });
    let mut fast = rt.spawn(async { "fast" });
    let first = ito::block_on(async {
        futures::select! {
            r = slow => r.unwrap().unwrap(),
            r = fast => r.unwrap(),
        }
    });
    assert_eq!(first, "fast");
    // The loser was polled by reference and kept: its result is still to come.
    assert!(!slow.is_terminated());
    gate.success(()).unwrap();
    let second = ito::block_on(async {
        futures::select! {
            r = slow => r.unwrap().unwrap(),
            complete => "none",
        }
    });
    assert_eq!(second, "slow");
}

/// A handle polled pending, then waited for by value: its waiter is taken off the cell first.
#[test]
fn a_handle_polled_pending_can_still_be_waited_for() {
    let gate = Promise::<()>::new();
    let g = gate.future();
    let mut t = ito::spawn(async move { g.await.map(|()| vec![7u8]) });
    let w = std::task::Waker::noop();
    assert!(support::poll_once(std::pin::Pin::new(&mut t), w).is_pending());
    let opener = std::thread::spawn(move || gate.success(()).unwrap());
    assert_eq!(t.wait(), Ok(Ok(vec![7u8])));
    opener.join().unwrap();
    // And turned into a shared future after a pending poll.
    let gate = Promise::<()>::new();
    let g = gate.future();
    let mut t = ito::spawn(async move { g.await.map(|()| 8u8) });
    assert!(support::poll_once(std::pin::Pin::new(&mut t), w).is_pending());
    let f = t.shared();
    gate.success(()).unwrap();
    assert_eq!(get(&f), Ok(Ok(8)));
}

#[test]
fn futures_unordered_takes_handles() {
    let mut set: FuturesUnordered<Task<usize>> =
        (0..16).map(|i| ito::spawn_fn(move || i)).collect();
    let sum = ito::block_on(async {
        let mut sum = 0;
        while let Some(r) = set.next().await {
            sum += r.unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..16).sum::<usize>());
}

// ----- `Send` bounds --------------------------------------------------------------------

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}
fn assert_unpin<T: Unpin>() {}

/// `Task<T>` needs only `T: Send` to cross threads (tokio's `JoinHandle` rule); a shared
/// `Future<T>` keeps `T: Send + Sync` (read by reference from every clone).
#[test]
fn handles_are_send_when_their_results_are() {
    assert_send::<Task<Cell<u8>>>();
    assert_sync::<Task<Cell<u8>>>();
    assert_unpin::<Task<std::marker::PhantomPinned>>();
    assert_send::<Task<File>>();
    assert_send::<Future<u8>>();
    assert_send::<TaskSet<Cell<u8>>>();
    assert_send::<ito::process::ReplyTo<Cell<u8>>>();

    // Non-`Sync` results through every spawning call.
    let a = ito::spawn_fn(|| Cell::new(1));
    let b = ito::spawn(async { Cell::new(2) });
    let c = ito::spawn_blocking(|| Cell::new(3));
    let moved = std::thread::spawn(move || {
        a.wait().unwrap().get() + b.wait().unwrap().get() + c.wait().unwrap().get()
    });
    assert_eq!(moved.join().unwrap(), 6);
    let r = ito::scope_fn(|s| s.spawn_fn(|| Cell::new(4)).wait().unwrap().get());
    assert_eq!(r.unwrap(), 4);
    let won = ito::race(
        ito::spawn_fn(|| Cell::new(5)),
        ito::spawn_fn(|| Cell::new(5)),
    );
    assert_eq!(won.wait().unwrap().get(), 5);
}

// ----- process bodies that return errors --------------------------------------------------

/// `?` on an `io::Error` in a process body, and on a user error through `Box<dyn Error>`:
/// the exit carries the error itself.
#[test]
fn process_bodies_return_errors_that_their_exits_carry() {
    use ito::process::{self, Mailbox};
    use support::Overheated;

    let io = process::spawn(|_: Mailbox<()>| async {
        File::open("/no/such/file/for/ito")?;
        Ok::<(), std::io::Error>(())
    });
    let exit = io.on_exit().wait().unwrap();
    let e = exit
        .downcast_ref::<std::io::Error>()
        .expect("the io::Error itself");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    let user = process::spawn(|_: Mailbox<()>| async {
        Err(Overheated(90))?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    let exit = user.on_exit().wait().unwrap();
    assert_eq!(exit.downcast_ref::<Overheated>(), Some(&Overheated(90)));
    assert_eq!(exit.to_string(), "overheated at 90 degrees");
}
