//! Futures and promises as transactional cells: reads that retry, completions that commit
//! with the transaction, `multi_try_success` all-or-nothing under races.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use ito::stm::{StmResult, TVar, atomically, atomically_async, multi_try_success, retry};
use ito::{Failure, Promise};
use support::quiet_expected_panics;

#[test]
fn read_tx_waits_for_completion_and_sees_failures() {
    let p = Promise::<u32>::new();
    let f = p.future();
    let t = std::thread::spawn(move || atomically(|tx| f.read_tx(tx)));
    std::thread::sleep(Duration::from_millis(10));
    assert!(p.failure(Failure::msg("no")).is_ok());
    assert!(t.join().unwrap().is_err());
}

/// A transaction that completes a promise and writes a variable: both or neither.
#[test]
fn a_completion_commits_with_the_transaction() {
    quiet_expected_panics();
    let p = Promise::new();
    let v = TVar::new(0);
    // A panicking transaction completes nothing.
    let r = catch_unwind(AssertUnwindSafe(|| {
        atomically(|tx| -> StmResult<()> {
            v.write(tx, 1)?;
            p.try_success_tx(tx, "x")?;
            panic!("expected: abandon");
        })
    }));
    assert!(r.is_err());
    assert!(!p.is_completed());
    assert_eq!(v.read_atomic(), 0);
    // A first branch that completes it and then retries is rolled back.
    let took = atomically(|tx| {
        tx.or_else(
            |tx| {
                p.try_success_tx(tx, "first")?;
                retry()
            },
            |tx| {
                v.write(tx, 2)?;
                Ok("second")
            },
        )
    });
    assert_eq!(took, "second");
    assert!(!p.is_completed());
    // Completing it twice in one transaction: the second sees the first.
    let (a, b) = atomically(|tx| Ok((p.try_success_tx(tx, "a")?, p.try_success_tx(tx, "b")?)));
    assert!(a && !b);
    assert_eq!(p.future().wait(), Ok("a"));
    // And a transaction reads its own pending completion.
    let q = Promise::new();
    let fq = q.future();
    let seen = atomically(|tx| {
        q.try_success_tx(tx, 9)?;
        fq.read_tx(tx)
    });
    assert_eq!(seen, Ok(9));
}

/// Plain completions race transactional ones on the same promises: each promise gets exactly
/// one value, and a transaction that says it completed one really did.
#[test]
fn plain_and_transactional_completions_race() {
    for _ in 0..200 {
        let p = Arc::new(Promise::new());
        let (p1, p2) = (p.clone(), p.clone());
        let tx_thread = std::thread::spawn(move || atomically(|tx| p1.try_success_tx(tx, 1)));
        let plain = std::thread::spawn(move || p2.try_success(2));
        let (by_tx, by_plain) = (tx_thread.join().unwrap(), plain.join().unwrap());
        assert!(by_tx ^ by_plain, "exactly one completion wins");
        let expected = if by_tx { 1 } else { 2 };
        assert_eq!(p.future().wait(), Ok(expected));
    }
}

/// Callbacks on promises completed by a transaction run exactly once, after the commit.
#[test]
fn callbacks_of_transactional_completions_run_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let promises: Vec<Promise<u32>> = (0..20).map(|_| Promise::new()).collect();
    for p in &promises {
        let r = runs.clone();
        p.future().on_complete(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        });
    }
    assert!(multi_try_success(promises.iter().map(|p| (p, 7))));
    assert_eq!(runs.load(Ordering::SeqCst), 20);
    assert!(!multi_try_success(promises.iter().map(|p| (p, 8))));
    assert_eq!(runs.load(Ordering::SeqCst), 20);
}

/// Threads race `multi_try_success` on overlapping pairs of promises (a ring): every winner
/// got both of its promises, every loser got none it did not share with a winner.
#[test]
fn multi_try_success_is_all_or_nothing_under_races() {
    const N: usize = 16;
    for _ in 0..100 {
        let forks: Arc<Vec<Promise<usize>>> = Arc::new((0..N).map(|_| Promise::new()).collect());
        let winners: Vec<bool> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..N)
                .map(|i| {
                    let forks = &forks;
                    s.spawn(move || multi_try_success([(&forks[i], i), (&forks[(i + 1) % N], i)]))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, &won) in winners.iter().enumerate() {
            let left = forks[i].future().value();
            let right = forks[(i + 1) % N].future().value();
            if won {
                assert_eq!((left, right), (Some(Ok(i)), Some(Ok(i))), "winner {i}");
            } else {
                assert!(
                    left != Some(Ok(i)) && right != Some(Ok(i)),
                    "loser {i} holds a fork"
                );
            }
        }
        assert!(winners.iter().any(|&w| w), "somebody eats");
    }
}

/// A transaction reading two promises completed together sees both or neither.
#[test]
fn readers_see_multi_completions_all_at_once() {
    for _ in 0..300 {
        let (a, b) = (Arc::new(Promise::new()), Arc::new(Promise::new()));
        let (fa, fb) = (a.future(), b.future());
        let reader = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..50 {
                let s = atomically(|tx| {
                    Ok((fa.try_read_tx(tx)?.is_some(), fb.try_read_tx(tx)?.is_some()))
                });
                seen.push(s);
            }
            seen
        });
        assert!(multi_try_success([(&*a, 1), (&*b, 2)]));
        for (x, y) in reader.join().unwrap() {
            assert_eq!(x, y, "half of a multi-completion was visible");
        }
    }
}

/// Document 004's dining philosophers: forks are promises, a philosopher eats when
/// `multi_try_success` takes both; fresh forks every round; 65 philosophers, 100 rounds, as
/// tasks.
#[test]
fn dining_philosophers_with_promise_forks() {
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    for n in [3usize, 5, 65] {
        for _round in 0..100 {
            let forks: Arc<Vec<Promise<usize>>> =
                Arc::new((0..n).map(|_| Promise::new()).collect());
            let eaters: Vec<_> = (0..n)
                .map(|i| {
                    let forks = forks.clone();
                    rt.spawn_fn(move || {
                        multi_try_success([(&forks[i], i), (&forks[(i + 1) % n], i)])
                    })
                })
                .collect();
            let ate: Vec<bool> = eaters
                .into_iter()
                .map(|e| support::get(e).unwrap())
                .collect();
            let mut held = 0;
            for (i, &e) in ate.iter().enumerate() {
                if e {
                    held += 2;
                    assert_eq!(forks[i].future().value(), Some(Ok(i)));
                    assert_eq!(forks[(i + 1) % n].future().value(), Some(Ok(i)));
                }
            }
            let taken = forks.iter().filter(|f| f.is_completed()).count();
            assert_eq!(taken, held, "a fork was taken by someone who did not eat");
            assert!(ate.iter().any(|&e| e));
        }
    }
}

/// An async transaction waits for a future and a variable together.
#[test]
fn async_read_tx_waits() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let p = Promise::new();
    let f = p.future();
    let waiter = rt.spawn(async move { ito::stm::atomically_async(|tx| f.read_tx(tx)).await });
    std::thread::sleep(Duration::from_millis(10));
    assert!(p.try_success(3));
    assert_eq!(support::get(waiter), Ok(Ok(3)));
}

/// A callback of a promise completed by a transaction may itself run a transaction: it runs
/// after the first one is over.
#[test]
fn callbacks_of_a_commit_may_start_transactions() {
    let p = Promise::new();
    let log = Arc::new(TVar::new(Vec::<u32>::new()));
    let l = log.clone();
    p.future().on_complete(move |r| {
        let v = *r.as_ref().unwrap();
        atomically(|tx| {
            l.modify(tx, |mut xs| {
                xs.push(v);
                xs
            })
        });
    });
    atomically(|tx| p.try_success_tx(tx, 7));
    assert_eq!(log.read_atomic(), vec![7]);
}

// ---------------------------------------------------------------------------------------------
// Regressions from the STM review: opacity and wake-ups across futures
// ---------------------------------------------------------------------------------------------

/// Finding 2: A callback on a promise completed *by a transaction* that itself uses `atomically`:
/// it runs inside the committer's `NestGuard`, so it panics ("`atomically` called inside a
/// transaction"); the panic is swallowed by `run_callbacks`, and the mapped future never
/// completes / the counter is never bumped. The same code works with a plain completion.
#[test]
fn callback_of_tx_completion_can_use_atomically() {
    for by_tx in [false, true] {
        let p = Promise::<u32>::new();
        let counter = TVar::new(0u32);
        let c = counter.clone();
        let mapped = p.future().map(move |v| {
            atomically(|tx| c.modify(tx, |x| x + 1));
            v + 1
        });
        if by_tx {
            assert!(atomically(|tx| p.try_success_tx(tx, 1)));
        } else {
            p.success(1).unwrap();
        }
        let r = mapped.wait_timeout(Duration::from_secs(2));
        eprintln!(
            "by_tx={by_tx}: mapped = {r:?}, counter = {}",
            counter.read_atomic()
        );
        assert!(
            matches!(r, Some(Ok(2))),
            "by_tx={by_tx}: mapped future: {r:?}"
        );
        assert_eq!(counter.read_atomic(), 1, "by_tx={by_tx}");
    }
}

/// Finding 3: Opacity: one attempt sees a future empty, then complete (a plain completion between
/// the two reads does not move the clock, so `observe_complete_cell` accepts it).
#[test]
fn an_attempt_sees_a_cell_empty_then_complete() {
    let p = Promise::<u32>::new();
    let f = p.future();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let completer = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        p.success(1).unwrap();
        done_tx.send(()).unwrap();
    });
    let mut first = true;
    let mut inconsistent = false;
    atomically(|tx| {
        let a = f.try_read_tx(tx)?.is_some();
        if first {
            first = false;
            go_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        }
        let b = f.try_read_tx(tx)?.is_some();
        if a != b {
            inconsistent = true;
        }
        Ok(())
    });
    completer.join().unwrap();
    assert!(
        !inconsistent,
        "one attempt saw the future empty, then complete"
    );
}

/// Finding 3b: Opacity across two cells completed (plainly) in program order p1 then p2: an attempt
/// sees p2 complete and p1 still empty.
#[test]
fn an_attempt_sees_later_completion_but_not_earlier() {
    let p1 = Promise::<u32>::new();
    let p2 = Promise::<u32>::new();
    let (f1, f2) = (p1.future(), p2.future());
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let completer = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        p1.success(1).unwrap();
        p2.success(2).unwrap(); // invariant: p2 complete => p1 complete
        done_tx.send(()).unwrap();
    });
    let mut first = true;
    let mut seen = Vec::new();
    atomically(|tx| {
        let one = f1.try_read_tx(tx)?.is_some();
        if first {
            first = false;
            go_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        }
        let two = f2.try_read_tx(tx)?.is_some();
        seen.push((one, two));
        Ok(())
    });
    completer.join().unwrap();
    assert!(
        !seen.contains(&(false, true)),
        "an attempt saw p2 complete but p1 empty: {seen:?}"
    );
}

/// Finding 3c: Read-your-own-writes on promises: a transaction that completed `p` with 1 reads back
/// another transaction's 2 (the extension treats a cell we *write* as still fine, and
/// `try_read_tx` looks at the cell before the pending write).
#[test]
fn a_transaction_reads_its_own_promise_completion() {
    let p = Arc::new(Promise::<u32>::new());
    let f = p.future();
    let p2 = p.clone();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        let won = atomically(|tx| p2.try_success_tx(tx, 2));
        done_tx.send(()).unwrap();
        won
    });
    let mut first = true;
    let mut seen = Vec::new();
    let won = atomically(|tx| {
        let mine = p.try_success_tx(tx, 1)?;
        if first {
            first = false;
            go_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        }
        let v = f.try_read_tx(tx)?;
        seen.push((mine, v.clone()));
        Ok(mine)
    });
    assert!(other.join().unwrap());
    assert!(!won);
    assert!(
        !seen.contains(&(true, Some(Ok(2)))),
        "an attempt completed p with 1 and then read 2: {seen:?}"
    );
}

/// Finding 4: A panicking waker in `wake_all` unwinds out of a commit that already published: the
/// caller of `atomically` panics although its writes are visible, the other sleepers on the
/// same variable are never woken, and the promise the transaction completed never notifies its
/// waiters (they hang).
#[test]
fn a_panicking_waker_loses_other_wake_ups() {
    use std::future::Future as _;
    use std::task::{Context, RawWaker, RawWakerVTable, Waker};
    fn raw() -> RawWaker {
        RawWaker::new(std::ptr::null(), &VT)
    }
    static VT: RawWakerVTable = RawWakerVTable::new(
        |_| raw(),
        |_| panic!("expected: waker panics"),
        |_| panic!("expected: waker panics"),
        |_| {},
    );
    let x = Arc::new(TVar::new(0u32));
    let p = Arc::new(Promise::<u32>::new());
    // An async transaction retrying on `x`, registered with the panicking waker.
    let x1 = x.clone();
    let mut fut = atomically_async(move |tx| if x1.read(tx)? == 0 { retry() } else { Ok(()) });
    // SAFETY: the vtable never touches the (null) data pointer; clone returns another such
    // waker, drop does nothing.
    let waker = unsafe { Waker::from_raw(raw()) };
    let mut cx = Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    // A sync transaction sleeping on `x` too, and a thread waiting for `p`.
    let x2 = x.clone();
    let sleeper = std::thread::spawn(move || {
        atomically(|tx| if x2.read(tx)? == 0 { retry() } else { Ok(()) })
    });
    let pf = p.future();
    let waiter = std::thread::spawn(move || pf.wait_timeout(Duration::from_secs(3)));
    support::quiet_expected_panics();
    std::thread::sleep(Duration::from_millis(300));
    let (x3, p3) = (x.clone(), p.clone());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        atomically(|tx| {
            x3.write(tx, 1)?;
            p3.try_success_tx(tx, 5)
        })
    }));
    eprintln!("commit returned: {:?}", r.as_ref().map_err(|_| "panicked"));
    assert_eq!(x.read_atomic(), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(6);
    while !(sleeper.is_finished() && waiter.is_finished()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let woke = sleeper.is_finished();
    assert!(r.is_ok(), "the committer panicked after committing");
    assert!(woke, "the other sleeper on x was never woken");
    assert_eq!(
        waiter.join().unwrap(),
        Some(Ok(5)),
        "the promise's waiter was not notified"
    );
    std::mem::forget(fut);
}

/// Finding 5: T2 completes p with 2 and sets x = true in one commit. Our attempt completed p (pending)
/// before T2, then reads x: the snapshot extension accepts x = true (post-T2) although the cell
/// we logged as empty is now complete (`cells_still_empty` skips cells we write). The attempt
/// sees x == true together with p still "ours" (1): no instant had that.
#[test]
fn extension_ignores_a_cell_we_complete_that_another_completed() {
    let p = Arc::new(Promise::<u32>::new());
    let x = Arc::new(TVar::new(false));
    let (p2, x2) = (p.clone(), x.clone());
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let t2 = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        let ok = atomically(|tx| {
            x2.write(tx, true)?;
            p2.try_success_tx(tx, 2)
        });
        done_tx.send(()).unwrap();
        ok
    });
    let f = p.future();
    let mut first = true;
    let mut seen = Vec::new();
    atomically(|tx| {
        let mine = p.try_success_tx(tx, 1)?;
        if first {
            first = false;
            go_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        }
        let xv = x.read(tx)?;
        let pv = f.try_read_tx(tx)?;
        seen.push((mine, xv, pv));
        Ok(())
    });
    assert!(t2.join().unwrap());
    eprintln!("attempts saw (completed p?, x, p): {seen:?}");
    assert!(
        !seen.iter().any(|(mine, xv, _)| *mine && *xv),
        "x = true (after T2) with p still empty for us"
    );
}
