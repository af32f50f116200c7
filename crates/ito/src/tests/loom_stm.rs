//! The STM commit protocol (TL2 lock words and clock) and retry's sleep/wake protocol, on
//! the real `atomically`.

use loom::sync::Arc;
use loom::thread;

use crate::stm::tx::Global;
use crate::stm::{StmResult, TVar, atomically_in, retry};

fn global() -> &'static Global {
    // One per model execution; leaked (a few bytes per execution).
    Box::leak(Box::new(Global::new()))
}

/// A transfer commits all or nothing: a concurrent reader's snapshot always sums to zero
/// (read in both orders: a commit publishes its variables one after the other), and the
/// commit lands.
#[test]
fn loom_stm_commit_is_atomic() {
    loom::model(|| {
        let g = global();
        let x = Arc::new(TVar::new(0i32));
        let y = Arc::new(TVar::new(0i32));
        let (x2, y2) = (x.clone(), y.clone());
        let reader = thread::spawn(move || {
            let a = atomically_in(g, |tx| Ok(y2.read(tx)? + x2.read(tx)?));
            let b = atomically_in(g, |tx| Ok(x2.read(tx)? + y2.read(tx)?));
            (a, b)
        });
        atomically_in(g, |tx| {
            x.modify(tx, |v| v + 1)?;
            y.modify(tx, |v| v - 1)
        });
        assert_eq!(
            reader.join().unwrap(),
            (0, 0),
            "a snapshot saw half a transfer"
        );
        assert_eq!((x.read_atomic(), y.read_atomic()), (1, -1));
    });
}

/// Two increments of one variable race: neither is lost.
#[test]
fn loom_stm_no_lost_update() {
    loom::model(|| {
        let g = global();
        let x = Arc::new(TVar::new(0u32));
        let x2 = x.clone();
        let t = thread::spawn(move || atomically_in(g, |tx| x2.modify(tx, |v| v + 1)));
        atomically_in(g, |tx| x.modify(tx, |v| v + 1));
        t.join().unwrap();
        assert_eq!(x.read_atomic(), 2);
    });
}

/// A transaction that retries until a flag is set is always woken by the commit that sets
/// it (a lost wake-up is a loom deadlock).
#[test]
fn loom_stm_retry_is_woken() {
    loom::model(|| {
        let g = global();
        let flag = Arc::new(TVar::new(false));
        let f2 = flag.clone();
        let waiter = thread::spawn(move || {
            atomically_in(g, |tx| -> StmResult<u8> {
                if f2.read(tx)? { Ok(1) } else { retry() }
            })
        });
        atomically_in(g, |tx| flag.write(tx, true));
        assert_eq!(waiter.join().unwrap(), 1);
    });
}

/// Two promises completed by one transaction: a transactional reader sees both or neither,
/// in either order.
#[test]
fn loom_stm_promises_complete_together() {
    loom::model(|| {
        let g = global();
        let a = Arc::new(crate::Promise::<u8>::new());
        let b = Arc::new(crate::Promise::<u8>::new());
        let (fa, fb) = (a.future(), b.future());
        let reader = thread::spawn(move || {
            let x = atomically_in(g, |tx| {
                Ok((fa.try_read_tx(tx)?.is_some(), fb.try_read_tx(tx)?.is_some()))
            });
            let y = atomically_in(g, |tx| {
                Ok((fb.try_read_tx(tx)?.is_some(), fa.try_read_tx(tx)?.is_some()))
            });
            (x, y)
        });
        let done = atomically_in(g, |tx| {
            Ok(a.try_success_tx(tx, 1)? && b.try_success_tx(tx, 2)?)
        });
        assert!(done);
        let ((x1, x2), (y1, y2)) = reader.join().unwrap();
        assert_eq!(x1, x2, "half of a multi-completion");
        assert_eq!(y1, y2, "half of a multi-completion");
    });
}

/// A plain completion races a transactional one: exactly one wins, and the value is the
/// winner's.
#[test]
fn loom_stm_plain_and_transactional_completion_race() {
    loom::model(|| {
        let g = global();
        let p = Arc::new(crate::Promise::<u8>::new());
        let p2 = p.clone();
        let plain = thread::spawn(move || p2.try_success(1));
        let by_tx = atomically_in(g, |tx| p.try_success_tx(tx, 2));
        let by_plain = plain.join().unwrap();
        assert!(by_tx ^ by_plain);
        let want = if by_tx { 2 } else { 1 };
        assert_eq!(p.future().value(), Some(Ok(want)));
    });
}

/// A stale WAITERS bit (left by a sleeper that was woken and unregistered) must not let the
/// next sleeper skip its read-modify-write: the committer's locking CAS has to read from the
/// sleeper's write to see it on the list (a review finding; deadlocks if `mark_waiters`
/// returns early when the bit is already set).
#[test]
fn loom_stm_retry_woken_with_stale_waiters_bit() {
    loom::model(|| {
        let g = global();
        let flag = Arc::new(TVar::new(false));
        let hdr = flag.header();
        // SAFETY: our handle keeps the variable alive.
        let h = unsafe { hdr.as_ref() };
        let w = h.lock.load(crate::loom::Ordering::Relaxed);
        assert!(h.mark_waiters(w));
        let f2 = flag.clone();
        let waiter = thread::spawn(move || {
            atomically_in(g, |tx| -> StmResult<u8> {
                if f2.read(tx)? { Ok(1) } else { retry() }
            })
        });
        atomically_in(g, |tx| flag.write(tx, true));
        assert_eq!(waiter.join().unwrap(), 1);
    });
}
