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
