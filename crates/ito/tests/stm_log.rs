//! The per-thread transaction log (`stm/tx.rs`), from the outside: every pending value is
//! dropped exactly once whatever way an attempt ends (commit, conflict, `or_else` rollback,
//! panic), a transaction that ends early leaves nothing behind for the next one on its
//! thread (no stale writes, no locks held), and a nested `atomically` caught inside a
//! transaction leaves the outer one intact. Small enough for Miri
//! (`cargo +nightly miri test -p ito --test stm_log`, with `-Zmiri-tree-borrows
//! -Zmiri-permissive-provenance -Zmiri-ignore-leaks` for crossbeam-epoch).

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use ito::Promise;
use ito::stm::{TVar, atomically, retry};

/// Live instances of each [`Tracked`] id (clones included). A drop below zero is a double
/// drop and panics at once.
static LIVE: Mutex<Option<HashMap<u32, i64>>> = Mutex::new(None);
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

fn live(id: u32) -> i64 {
    LIVE.lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(&id).copied())
        .unwrap_or(0)
}

fn add_live(id: u32, d: i64) {
    let mut g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let n = g.get_or_insert_with(HashMap::new).entry(id).or_insert(0);
    *n += d;
    let n = *n;
    drop(g);
    assert!(n >= 0, "value {id} dropped more often than it was made");
}

/// A boxed (non-scalar) value that counts its live instances by id; dropping the one whose
/// `panics` flag is set panics (once: the flag is not cloned).
#[derive(Debug)]
struct Tracked {
    id: u32,
    panics: bool,
}

impl Tracked {
    fn new() -> Tracked {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        add_live(id, 1);
        Tracked { id, panics: false }
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Tracked {
        add_live(self.id, 1);
        Tracked {
            id: self.id,
            panics: false,
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        add_live(self.id, -1);
        if self.panics && !std::thread::panicking() {
            panic!("expected: Tracked {} panics in drop", self.id);
        }
    }
}

/// Runs `f` on another thread and waits for it, at most `secs` (a hang guard: a variable left
/// locked by an abandoned attempt makes every writer conflict for ever).
fn on_other_thread<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(if cfg!(miri) { 600 } else { secs }))
        .expect("another thread could not commit: a variable stayed locked")
}

/// `or_else` rolls back a branch that wrote a variable written before it: the branch's
/// values are dropped once each, the older write survives, and the commit publishes the
/// newest write only (the shadowed-write lock loop), dropping the shadowed one.
#[test]
fn or_else_shadowed_writes_drop_each_pending_value_once() {
    let x = TVar::new(Tracked::new());
    let (a, b, c, d) = (
        Tracked::new(),
        Tracked::new(),
        Tracked::new(),
        Tracked::new(),
    );
    let ids = [a.id, b.id, c.id, d.id];
    let mut vals = Some((a, b, c, d));
    let seen = atomically(|tx| {
        // One attempt (nothing else touches `x`); `take` keeps the values' accounting exact.
        let (a, b, c, d) = vals.take().expect("one attempt");
        x.write(tx, a)?;
        let r = tx.or_else(
            |tx| {
                x.write(tx, b)?; // appended: `a` is below the branch's floor
                x.write(tx, c)?; // replaces `b` (dropped now)
                assert_eq!(x.read(tx)?.id, ids[2], "read-your-own-write in a branch");
                retry::<u32>()
            },
            |tx| {
                assert_eq!(
                    x.read(tx)?.id,
                    ids[0],
                    "the branch's writes were rolled back"
                );
                x.write(tx, d)?; // replaces `a` (dropped now)
                Ok(x.read(tx)?.id)
            },
        )?;
        Ok(r)
    });
    assert_eq!(seen, ids[3]);
    assert_eq!(x.read_atomic().id, ids[3]);
    for id in &ids[..3] {
        assert_eq!(live(*id), 0, "pending value {id} not dropped exactly once");
    }
    assert_eq!(live(ids[3]), 1, "the committed value is the variable's");

    // The branch succeeds: two entries for `x`, the older one shadowed.
    let (e, f) = (Tracked::new(), Tracked::new());
    let (ide, idf) = (e.id, f.id);
    let mut vals = Some((e, f));
    atomically(|tx| {
        let (e, f) = vals.take().expect("one attempt");
        x.write(tx, e)?;
        tx.or_else(|tx| x.write(tx, f), |_| unreachable!())
    });
    assert_eq!(x.read_atomic().id, idf);
    assert_eq!(live(ide), 0, "the shadowed write was not dropped once");
    assert_eq!(live(idf), 1);
    // The lock taken by the newest entry was released (and the shadowed one took none).
    let x2 = x.clone();
    on_other_thread(30, move || atomically(|tx| x2.write(tx, Tracked::new())));
}

/// The same with a scalar (inline words in the log, no values to drop).
#[test]
fn or_else_rolls_back_inline_writes() {
    let x = TVar::new(1u128);
    let y = TVar::new(false);
    let r = atomically(|tx| {
        x.write(tx, 2)?;
        tx.or_else(
            |tx| {
                x.write(tx, u128::MAX)?;
                y.write(tx, true)?;
                assert_eq!(x.read(tx)?, u128::MAX);
                retry::<u128>()
            },
            |tx| {
                assert!(!y.read(tx)?, "the branch's write to y was rolled back");
                x.read(tx)
            },
        )
    });
    assert_eq!(r, 2);
    assert_eq!((x.read_atomic(), y.read_atomic()), (2, false));
    atomically(|tx| {
        x.write(tx, 3)?;
        tx.or_else(|tx| x.write(tx, 4), |_| unreachable!())
    });
    assert_eq!(x.read_atomic(), 4);
    let (x2, y2) = (Arc::new(x), Arc::new(y));
    let (x3, y3) = (x2.clone(), y2.clone());
    on_other_thread(30, move || {
        atomically(|tx| {
            x3.write(tx, 5)?;
            y3.write(tx, true)
        })
    });
    assert_eq!((x2.read_atomic(), y2.read_atomic()), (5, true));
}

/// A closure that panics after writing (boxed and inline), reading, and completing a promise:
/// nothing is published, every pending value is dropped once, no lock stays held, and the
/// next transaction on the same thread starts from an empty log.
#[test]
fn a_panicking_transaction_leaves_the_threads_log_clean() {
    support::quiet_expected_panics();
    let boxed = TVar::new(Tracked::new());
    let first = boxed.read_atomic().id;
    let scalar = TVar::new(7i64);
    let other = TVar::new(0u8);
    let p = Promise::<u32>::new();
    let pending = Tracked::new();
    let pid = pending.id;
    let mut slot = Some(pending);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        atomically(|tx| -> ito::stm::StmResult<()> {
            boxed.write(tx, slot.take().expect("one attempt"))?;
            scalar.write(tx, -1)?;
            other.read(tx)?;
            assert!(p.try_success_tx(tx, 9)?);
            panic!("expected: a transaction panics with pending writes");
        })
    }));
    assert!(r.is_err());
    assert_eq!(live(pid), 0, "the pending value was not dropped once");
    assert_eq!(boxed.read_atomic().id, first);
    assert_eq!(scalar.read_atomic(), 7);
    assert!(!p.future().is_completed(), "the promise was completed");

    // The next transaction on this thread writes only `other`: nothing of the panicked
    // attempt may come along.
    atomically(|tx| other.write(tx, 1));
    assert_eq!(boxed.read_atomic().id, first);
    assert_eq!(scalar.read_atomic(), 7);
    assert!(!p.future().is_completed());

    // No lock is held: another thread commits to every variable.
    let (b2, s2, p2) = (boxed.clone(), scalar.clone(), p.clone());
    let done = on_other_thread(30, move || {
        atomically(|tx| {
            b2.write(tx, Tracked::new())?;
            s2.write(tx, 8)?;
            p2.try_success_tx(tx, 10)
        })
    });
    assert!(done);
    assert_eq!(scalar.read_atomic(), 8);
    assert_eq!(support::get(&p.future()), Ok(10));
}

/// A `Drop` that panics while a write replaces a pending value: the new value is in the log
/// (the old one is gone, dropped once), so the transaction can go on and commit it.
#[test]
fn a_panicking_drop_of_a_replaced_pending_value_keeps_the_log_consistent() {
    support::quiet_expected_panics();
    let x = TVar::new(Tracked::new());
    let mut bomb = Tracked::new();
    bomb.panics = true;
    let (bid, next) = (bomb.id, Tracked::new());
    let nid = next.id;
    let mut vals = Some((bomb, next));
    let got = atomically(|tx| {
        let (bomb, next) = vals.take().expect("one attempt");
        x.write(tx, bomb)?;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| x.write(tx, next)));
        assert!(r.is_err(), "the replaced value's drop panics");
        Ok(x.read(tx)?.id)
    });
    assert_eq!(got, nid);
    assert_eq!(x.read_atomic().id, nid);
    assert_eq!(live(bid), 0);
    assert_eq!(live(nid), 1);
}

/// `atomically` inside a transaction panics before touching anything; caught there, the
/// outer transaction still has its log and commits, and the thread is usable afterwards.
#[test]
fn a_nested_atomically_caught_inside_a_transaction_leaves_it_intact() {
    support::quiet_expected_panics();
    let x = TVar::new(0u32);
    let y = TVar::new(Tracked::new());
    let yid = y.read_atomic().id;
    let z = TVar::new(0u32);
    let v = Tracked::new();
    let vid = v.id;
    let mut slot = Some(v);
    atomically(|tx| {
        x.write(tx, 1)?;
        y.write(tx, slot.take().expect("one attempt"))?;
        let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            atomically(|tx| z.write(tx, 5))
        }));
        let msg = support::panic_message(&*nested.expect_err("nested atomically must panic"));
        assert!(msg.contains("inside a transaction"), "unclear panic: {msg}");
        assert_eq!(x.read(tx)?, 1, "the outer log lost its write");
        assert_eq!(y.read(tx)?.id, vid);
        Ok(())
    });
    assert_eq!(
        (x.read_atomic(), y.read_atomic().id, z.read_atomic()),
        (1, vid, 0)
    );
    assert_ne!(yid, vid);
    atomically(|tx| z.write(tx, 6));
    assert_eq!(z.read_atomic(), 6);
}

/// Async transactions that retry and resume on whichever worker polls them, interleaved with
/// synchronous ones on the same workers: every thread's log is its own, so the totals hold.
#[test]
fn async_transactions_moving_between_workers_keep_their_writes() {
    let n = if cfg!(miri) { 3 } else { 200 };
    let turn = Arc::new(TVar::new(0u32));
    let sum = Arc::new(TVar::new(0u64));
    let tasks: Vec<_> = (0..2u32)
        .map(|parity| {
            let (turn, sum) = (turn.clone(), sum.clone());
            ito::spawn(async move {
                for _ in 0..n {
                    // Wait for our turn (retry suspends the task; another worker may resume
                    // it), then take it and add to the sum in the same transaction.
                    ito::stm::atomically_async(|tx| {
                        let t = turn.read(tx)?;
                        if t % 2 != parity {
                            return retry();
                        }
                        turn.write(tx, t + 1)?;
                        sum.modify(tx, |s| s + u64::from(t))
                    })
                    .await;
                    // A synchronous transaction on this worker between the async ones.
                    atomically(|tx| sum.modify(tx, |s| s + 1_000_000));
                }
            })
        })
        .collect();
    for t in tasks {
        t.wait().expect("task");
    }
    let steps = u64::from(2 * n);
    assert_eq!(turn.read_atomic(), 2 * n);
    assert_eq!(
        sum.read_atomic(),
        steps * (steps - 1) / 2 + steps * 1_000_000
    );
}

/// A commit that completes a promise and then drops a shadowed pending value (an `or_else`
/// branch rewrote a variable) whose `Drop` panics: the transaction has committed (the value
/// and the promise are published), so the promise's callbacks must still run; the panic
/// comes out of `atomically` afterwards.
#[test]
fn a_panicking_drop_after_a_commit_still_notifies_the_promises_it_completed() {
    support::quiet_expected_panics();
    let x = TVar::new(Tracked::new());
    let p = Promise::<u32>::new();
    let (ran_tx, ran_rx) = mpsc::channel();
    let seen_by_callback = Arc::new(TVar::new(0u32));
    let s2 = seen_by_callback.clone();
    p.future().on_complete(move |r| {
        // The transaction is over when callbacks run, even as its panic unwinds: they may
        // run transactions of their own.
        atomically(|tx| s2.write(tx, 1));
        let _ = ran_tx.send(r);
    });
    let mut bomb = Tracked::new();
    bomb.panics = true;
    let next = Tracked::new();
    let (bid, nid) = (bomb.id, next.id);
    let mut vals = Some((bomb, next));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        atomically(|tx| {
            let (bomb, next) = vals.take().expect("one attempt");
            x.write(tx, bomb)?;
            // The branch writes `x` again: the older entry is shadowed, dropped after the commit.
            tx.or_else(|tx| x.write(tx, next), |_| unreachable!())?;
            p.try_success_tx(tx, 7)
        })
    }));
    assert!(r.is_err(), "the shadowed value's drop panics");
    assert_eq!(x.read_atomic().id, nid, "the commit was published");
    assert_eq!(live(bid), 0);
    assert!(p.is_completed());
    let got = ran_rx.recv_timeout(Duration::from_secs(if cfg!(miri) { 600 } else { 10 }));
    assert_eq!(
        got.ok(),
        Some(Ok(7)),
        "the promise's callback never ran (its notification was lost)"
    );
    assert_eq!(seen_by_callback.read_atomic(), 1);
    assert_eq!(support::get(&p.future()), Ok(7));
}
