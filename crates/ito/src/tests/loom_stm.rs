//! The STM commit protocol (TL2 lock words and clock) and retry's sleep/wake protocol, on
//! the real `atomically`.

use loom::sync::Arc;
use loom::thread;

use crate::stm::global::Global;
use crate::stm::{StmResult, TVar, atomically_in, retry};

fn global() -> &'static Global {
    // One per model execution; leaked (a few bytes per execution).
    Box::leak(Box::new(Global::new()))
}

/// A value that is not a scalar, so its variable keeps it boxed (`stm/tvar.rs`): the models
/// below run on both representations.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Boxed(i32);

/// The values a model stores, as scalars or boxed.
trait Value: Clone + Send + Sync + 'static {
    fn of(v: i32) -> Self;
    fn get(&self) -> i32;
}

impl Value for i32 {
    fn of(v: i32) -> Self {
        v
    }
    fn get(&self) -> i32 {
        *self
    }
}

impl Value for Boxed {
    fn of(v: i32) -> Self {
        Boxed(v)
    }
    fn get(&self) -> i32 {
        self.0
    }
}

/// A transfer commits all or nothing: a concurrent reader's snapshot always sums to zero
/// (read in both orders: a commit publishes its variables one after the other), and the
/// commit lands.
fn commit_is_atomic<V: Value>() {
    loom::model(|| {
        let g = global();
        let x = Arc::new(TVar::new(V::of(0)));
        let y = Arc::new(TVar::new(V::of(0)));
        let (x2, y2) = (x.clone(), y.clone());
        let reader = thread::spawn(move || {
            let a = atomically_in(g, |tx| Ok(y2.read(tx)?.get() + x2.read(tx)?.get()));
            let b = atomically_in(g, |tx| Ok(x2.read(tx)?.get() + y2.read(tx)?.get()));
            (a, b)
        });
        atomically_in(g, |tx| {
            x.modify(tx, |v| V::of(v.get() + 1))?;
            y.modify(tx, |v| V::of(v.get() - 1))
        });
        assert_eq!(
            reader.join().unwrap(),
            (0, 0),
            "a snapshot saw half a transfer"
        );
        assert_eq!((x.read_atomic().get(), y.read_atomic().get()), (1, -1));
    });
}

/// A model run twice: on a scalar (stored inline) and on a boxed value.
macro_rules! scalar_and_boxed {
    ($model:ident, $scalar:ident, $boxed:ident) => {
        #[test]
        fn $scalar() {
            $model::<i32>();
        }

        #[test]
        fn $boxed() {
            $model::<Boxed>();
        }
    };
}

scalar_and_boxed!(
    commit_is_atomic,
    loom_stm_commit_is_atomic,
    loom_stm_commit_is_atomic_boxed
);

/// Two increments of one variable race: neither is lost.
fn no_lost_update<V: Value>() {
    loom::model(|| {
        let g = global();
        let x = Arc::new(TVar::new(V::of(0)));
        let x2 = x.clone();
        let t = thread::spawn(move || atomically_in(g, |tx| x2.modify(tx, |v| V::of(v.get() + 1))));
        atomically_in(g, |tx| x.modify(tx, |v| V::of(v.get() + 1)));
        t.join().unwrap();
        assert_eq!(x.read_atomic().get(), 2);
    });
}

scalar_and_boxed!(
    no_lost_update,
    loom_stm_no_lost_update,
    loom_stm_no_lost_update_boxed
);

/// A value of two words (published one after the other) is never seen torn, inside a
/// transaction or outside.
#[test]
fn loom_stm_two_word_scalar_is_not_torn() {
    loom::model(|| {
        let g = global();
        let one = (1u128 << 64) | 1;
        let v = Arc::new(TVar::new(0u128));
        let v2 = v.clone();
        let reader = thread::spawn(move || (atomically_in(g, |tx| v2.read(tx)), v2.read_atomic()));
        atomically_in(g, |tx| v.write(tx, one));
        let (a, b) = reader.join().unwrap();
        assert!(a == 0 || a == one, "torn read in a transaction: {a:#x}");
        assert!(b == 0 || b == one, "torn read outside: {b:#x}");
    });
}

/// A thread retries until `flag` is set; this thread sets it; the retrying thread must be
/// woken (a lost wake-up is a loom deadlock) and see it.
fn retry_until_set(g: &'static Global, flag: Arc<TVar<bool>>) {
    let f2 = flag.clone();
    let waiter = thread::spawn(move || {
        atomically_in(g, |tx| -> StmResult<u8> {
            if f2.read(tx)? { Ok(1) } else { retry() }
        })
    });
    atomically_in(g, |tx| flag.write(tx, true));
    assert_eq!(waiter.join().unwrap(), 1);
}

/// A transaction that retries until a flag is set is always woken by the commit that sets
/// it (a lost wake-up is a loom deadlock).
#[test]
fn loom_stm_retry_is_woken() {
    loom::model(|| {
        let g = global();
        let flag = Arc::new(TVar::new(false));
        retry_until_set(g, flag);
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
        retry_until_set(g, flag);
    });
}

/// The variables of the GV5 models below: `w` committed at version 1 while the clock stayed
/// at 0 (commits do not move it), and `z`, `x` for a transfer.
type Vars = (
    &'static Global,
    Arc<TVar<i32>>,
    Arc<TVar<i32>>,
    Arc<TVar<i32>>,
);

fn gv5_vars() -> Vars {
    let g = global();
    let w = Arc::new(TVar::new(0i32));
    atomically_in(g, |tx| w.write(tx, 1));
    (g, w, Arc::new(TVar::new(0i32)), Arc::new(TVar::new(0i32)))
}

/// The transfer: both variables to 1.
fn transfer(g: &'static Global, z: &TVar<i32>, x: &TVar<i32>) {
    atomically_in(g, |tx| {
        z.write(tx, 1)?;
        x.write(tx, 1)
    });
}

fn assert_whole(seen: (i32, i32)) {
    assert!(
        seen == (0, 0) || seen == (1, 1),
        "a snapshot saw half a transfer: (z, x) = {seen:?}"
    );
}

/// GV5 (commits sample the clock without writing it) against a reader whose snapshot is
/// newer than a commit's clock sample. A transfer writes `z` and `x` (version `clock + 1`).
/// A reader meets `w` (version 1), so it moves the clock to 1 and extends its snapshot to 1,
/// then reads `z` and `x`. If the transfer sampled the clock before it moved, its version is
/// 1, within the reader's snapshot, and nothing re-checks `z`: the reader's load of `z` must
/// see the transfer's lock. Committer (lock `z`, load the clock) and reader (move the clock,
/// load `z`) are a store-buffering pattern, which acquire/release alone does not order.
#[test]
fn loom_stm_clock_sample_and_snapshot_are_ordered() {
    loom::model(|| {
        let (g, w, z, x) = gv5_vars();
        let (x2, z2) = (x.clone(), z.clone());
        let writer = thread::spawn(move || transfer(g, &z2, &x2));
        let seen = atomically_in(g, |tx| {
            w.read(tx)?;
            let z = z.read(tx)?;
            Ok((z, x.read(tx)?))
        });
        writer.join().unwrap();
        assert_whole(seen);
    });
}

/// [`loom_stm_clock_sample_and_snapshot_are_ordered`] with the clock moved by another
/// thread: the reader begins with a snapshot (1) newer than the transfer's clock sample (0).
#[test]
fn loom_stm_clock_sample_and_snapshot_are_ordered_at_begin() {
    loom::model(|| {
        let (g, w, z, x) = gv5_vars();
        let (x2, z2) = (x.clone(), z.clone());
        let mover = thread::spawn(move || atomically_in(g, |tx| w.read(tx)));
        let reader = thread::spawn(move || {
            atomically_in(g, |tx| {
                let z = z2.read(tx)?;
                Ok((z, x2.read(tx)?))
            })
        });
        transfer(g, &z, &x);
        mover.join().unwrap();
        assert_whole(reader.join().unwrap());
    });
}

/// Write skew: each transaction writes one variable if the other is still 0, so in any
/// serial order only one of them writes. Each commit locks its write set, then validates
/// its read set: two committers doing that crosswise are a store-buffering pattern too (each
/// could miss the other's lock), which the commit's fence orders.
#[test]
fn loom_stm_no_write_skew() {
    loom::model(|| {
        let g = global();
        let x = Arc::new(TVar::new(0u8));
        let y = Arc::new(TVar::new(0u8));
        let (x2, y2) = (x.clone(), y.clone());
        let t = thread::spawn(move || {
            atomically_in(g, |tx| {
                if y2.read(tx)? == 0 {
                    x2.write(tx, 1)?;
                }
                Ok(())
            })
        });
        atomically_in(g, |tx| {
            if x.read(tx)? == 0 {
                y.write(tx, 1)?;
            }
            Ok(())
        });
        t.join().unwrap();
        let both = (x.read_atomic(), y.read_atomic());
        assert_ne!(both, (1, 1), "both wrote: not serializable");
    });
}
