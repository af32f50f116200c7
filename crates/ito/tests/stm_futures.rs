//! Futures and promises as transactional cells: reads that retry, completions that commit
//! with the transaction, `multi_try_success` all-or-nothing under races.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ito::stm::{StmResult, TVar, atomically, multi_try_success, retry};
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
            let ate: Vec<bool> = eaters.iter().map(|e| support::get(e).unwrap()).collect();
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
    assert_eq!(support::get(&waiter), Ok(Ok(3)));
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
