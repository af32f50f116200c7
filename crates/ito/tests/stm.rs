//! Software transactional memory: atomicity, opacity, retry wake-ups, or_else, panics,
//! nesting, contention, and waiting without pinning workers.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ito::stm::{StmResult, TVar, Tx, atomically, atomically_async, check, retry};
use support::quiet_expected_panics;

#[test]
fn reads_see_own_writes_and_commits_are_visible() {
    let a = TVar::new(1);
    let b = TVar::new(String::from("x"));
    let seen = atomically(|tx| {
        a.write(tx, 5)?;
        a.modify(tx, |v| v * 2)?;
        let old = b.replace(tx, "y".into())?;
        Ok((a.read(tx)?, old, b.read(tx)?))
    });
    assert_eq!(seen, (10, "x".to_string(), "y".to_string()));
    assert_eq!(a.read_atomic(), 10);
    assert_eq!(b.read_atomic(), "y");
    let c = a.clone();
    atomically(|tx| c.write(tx, 11));
    assert_eq!(a.read_atomic(), 11);
}

/// Transfers between accounts from many threads; the total never changes, and readers that
/// sum every account inside one transaction always see the starting total, even in attempts
/// that are later thrown away.
#[test]
fn bank_transfers_keep_the_total_and_readers_see_snapshots() {
    const ACCOUNTS: usize = 32;
    const START: i64 = 1000;
    let accounts: Arc<Vec<TVar<i64>>> = Arc::new((0..ACCOUNTS).map(|_| TVar::new(START)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let bad_snapshots = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for t in 0..4u64 {
        let accounts = accounts.clone();
        handles.push(std::thread::spawn(move || {
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let from = (x % ACCOUNTS as u64) as usize;
                let to = ((x >> 20) % ACCOUNTS as u64) as usize;
                let amount = (x >> 40) as i64 % 50;
                atomically(|tx| {
                    accounts[from].modify(tx, |b| b - amount)?;
                    accounts[to].modify(tx, |b| b + amount)
                });
            }
        }));
    }
    for _ in 0..2 {
        let (accounts, stop, bad) = (accounts.clone(), stop.clone(), bad_snapshots.clone());
        handles.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                atomically(|tx| {
                    let mut sum = 0;
                    for a in accounts.iter() {
                        sum += a.read(tx)?;
                    }
                    // Checked inside the transaction: opacity means even a doomed attempt
                    // never sees a broken invariant.
                    if sum != START * ACCOUNTS as i64 {
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                });
            }
        }));
    }
    for h in handles.drain(..4) {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(bad_snapshots.load(Ordering::Relaxed), 0);
    let total: i64 = accounts.iter().map(TVar::read_atomic).sum();
    assert_eq!(total, START * ACCOUNTS as i64);
}

/// Two variables whose sum is always 0; readers read one, then the other, and check inside.
/// `wrap`/`unwrap` choose how the value is stored: scalars live inline in the variable,
/// other types are boxed (`stm/tvar.rs`), and both must stay opaque.
fn opacity_under_contention_with<T: Clone + Send + Sync + 'static>(
    wrap: fn(i64) -> T,
    unwrap: fn(&T) -> i64,
) {
    let x = Arc::new(TVar::new(wrap(0)));
    let y = Arc::new(TVar::new(wrap(0)));
    let broken = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        for d in 1..=3i64 {
            let (x, y) = (&x, &y);
            s.spawn(move || {
                for _ in 0..20_000 {
                    atomically(|tx| {
                        x.modify(tx, |v| wrap(unwrap(&v) + d))?;
                        y.modify(tx, |v| wrap(unwrap(&v) - d))
                    });
                }
            });
        }
        for _ in 0..2 {
            let (x, y, broken, stop) = (&x, &y, &broken, &stop);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    atomically(|tx| {
                        let a = unwrap(&x.read(tx)?);
                        std::hint::spin_loop();
                        let b = unwrap(&y.read(tx)?);
                        if a + b != 0 {
                            broken.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(())
                    });
                }
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(broken.load(Ordering::Relaxed), 0);
    assert_eq!(unwrap(&x.read_atomic()) + unwrap(&y.read_atomic()), 0);
}

#[test]
fn opacity_under_contention() {
    opacity_under_contention_with(|v| v, |v| *v);
}

#[test]
fn opacity_under_contention_boxed_values() {
    opacity_under_contention_with(Some, |v| v.unwrap());
}

/// Every scalar type (stored inline, in the variable's words) reads back exactly what was
/// written, extremes included, in transactions and outside.
#[test]
fn scalars_of_every_kind_round_trip() {
    fn check<T: Clone + Send + Sync + PartialEq + std::fmt::Debug + 'static>(a: T, b: T) {
        let v = TVar::new(a.clone());
        assert_eq!(v.read_atomic(), a);
        let seen = atomically(|tx| {
            let old = v.replace(tx, b.clone())?;
            Ok((old, v.read(tx)?))
        });
        assert_eq!(seen, (a, b.clone()));
        assert_eq!(v.read_atomic(), b);
    }
    check(i8::MIN, i8::MAX);
    check(u8::MAX, 0);
    check(i16::MIN, -1);
    check(u16::MAX, 1);
    check(i32::MIN, i32::MAX);
    check(u32::MAX, 7);
    check(i64::MIN, i64::MAX);
    check(u64::MAX, 1 << 63);
    check(isize::MIN, isize::MAX);
    check(usize::MAX, 3);
    check(i128::MIN, i128::MAX);
    check(u128::MAX, (1u128 << 64) | 5);
    check(true, false);
    check('a', '\u{10FFFF}');
    check(f32::MIN_POSITIVE, -0.0f32);
    check(f64::MAX, f64::EPSILON);
    let nan = f64::from_bits(0x7ff8_0000_dead_beef);
    let v = TVar::new(nan);
    assert_eq!(v.read_atomic().to_bits(), nan.to_bits());
}

/// A two-word scalar is published word by word: a reader never sees the words of two
/// different commits (every value written has equal halves).
#[test]
fn two_word_scalars_are_never_torn() {
    let v = Arc::new(TVar::new(0u128));
    let stop = AtomicBool::new(false);
    let torn = AtomicUsize::new(0);
    let halves_equal = |x: u128| (x >> 64) as u64 == x as u64;
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let v = &v;
            s.spawn(move || {
                for i in 0..20_000u64 {
                    let k = u128::from(i * 2 + t);
                    atomically(|tx| v.write(tx, (k << 64) | k));
                }
            });
        }
        let (v, stop, torn) = (&v, &stop, &torn);
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let inside = atomically(|tx| v.read(tx));
                if !halves_equal(inside) || !halves_equal(v.read_atomic()) {
                    torn.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(torn.load(Ordering::Relaxed), 0);
    assert!(halves_equal(v.read_atomic()));
}

/// A producer and a consumer hand values through a one-slot TVar thousands of times: a lost
/// wake-up would hang the test.
#[test]
fn retry_never_loses_a_wake_up() {
    const ROUNDS: u64 = 20_000;
    let slot = Arc::new(TVar::new(None::<u64>));
    let s = slot.clone();
    let consumer = std::thread::spawn(move || {
        let mut sum = 0;
        for _ in 0..ROUNDS {
            sum += atomically(|tx| match s.read(tx)? {
                Some(v) => {
                    s.write(tx, None)?;
                    Ok(v)
                }
                None => retry(),
            });
        }
        sum
    });
    for i in 0..ROUNDS {
        atomically(|tx| {
            check(slot.read(tx)?.is_none())?;
            slot.write(tx, Some(i))
        });
    }
    assert_eq!(consumer.join().unwrap(), ROUNDS * (ROUNDS - 1) / 2);
}

/// The same hand-off between async tasks on a small runtime: retry suspends the task.
#[test]
fn async_retry_hand_off() {
    const ROUNDS: u64 = 5_000;
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    let slot = Arc::new(TVar::new(None::<u64>));
    let s = slot.clone();
    let consumer = rt.spawn(async move {
        let mut sum = 0;
        for _ in 0..ROUNDS {
            sum += atomically_async(|tx| match s.read(tx)? {
                Some(v) => {
                    s.write(tx, None)?;
                    Ok(v)
                }
                None => retry(),
            })
            .await;
        }
        sum
    });
    let s = slot.clone();
    let producer = rt.spawn(async move {
        for i in 0..ROUNDS {
            atomically_async(|tx| {
                check(s.read(tx)?.is_none())?;
                s.write(tx, Some(i))
            })
            .await;
        }
    });
    assert_eq!(support::get(producer), Ok(()));
    assert_eq!(support::get(consumer), Ok(ROUNDS * (ROUNDS - 1) / 2));
}

/// A synchronous `atomically` that retries on a worker does not pin it: on a one-worker
/// runtime, the task that sets the flag still runs.
#[test]
fn a_retrying_task_does_not_pin_its_worker() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let flag = Arc::new(TVar::new(false));
    let f = flag.clone();
    let waiter = rt.spawn_fn(move || atomically(|tx| check(f.read(tx)?)));
    std::thread::sleep(Duration::from_millis(10));
    let f = flag.clone();
    let setter = rt.spawn_fn(move || atomically(|tx| f.write(tx, true)));
    assert_eq!(support::get(setter), Ok(()));
    assert_eq!(support::get(waiter), Ok(()));
}

#[test]
fn or_else_falls_back_when_the_first_branch_retries() {
    let a = TVar::new(0);
    let b = TVar::new(0);
    let got = atomically(|tx| {
        tx.or_else(
            |tx| {
                a.write(tx, 99)?; // undone: the branch retries
                retry::<&str>()
            },
            |tx| {
                b.write(tx, 1)?;
                Ok("second")
            },
        )
    });
    assert_eq!(got, "second");
    assert_eq!((a.read_atomic(), b.read_atomic()), (0, 1));
    // The first branch succeeding keeps its writes.
    let got = atomically(|tx| tx.or_else(|tx| a.replace(tx, 7), |_| Ok(-1)));
    assert_eq!((got, a.read_atomic()), (0, 7));
}

/// Both branches retry: the transaction sleeps until something either branch read changes.
#[test]
fn or_else_waits_on_both_branches() {
    let a = Arc::new(TVar::new(0));
    let b = Arc::new(TVar::new(0));
    let (a2, b2) = (a.clone(), b.clone());
    let t = std::thread::spawn(move || {
        atomically(|tx| {
            tx.or_else(
                |tx| {
                    check(a2.read(tx)? > 0)?;
                    Ok("a")
                },
                |tx| {
                    check(b2.read(tx)? > 0)?;
                    Ok("b")
                },
            )
        })
    });
    std::thread::sleep(Duration::from_millis(20));
    atomically(|tx| b.write(tx, 1));
    assert_eq!(t.join().unwrap(), "b");
}

#[test]
fn a_panicking_transaction_leaves_no_partial_writes() {
    quiet_expected_panics();
    let a = TVar::new(1);
    let b = TVar::new(2);
    let r = catch_unwind(AssertUnwindSafe(|| {
        atomically(|tx| -> StmResult<()> {
            a.write(tx, 100)?;
            b.write(tx, 200)?;
            panic!("expected: boom");
        })
    }));
    assert!(r.is_err());
    assert_eq!((a.read_atomic(), b.read_atomic()), (1, 2));
    // The thread can run transactions again.
    atomically(|tx| a.write(tx, 3));
    assert_eq!(a.read_atomic(), 3);
}

#[test]
fn nested_atomically_is_a_clear_panic() {
    quiet_expected_panics();
    let v = TVar::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        atomically(|tx| {
            v.write(tx, 1)?;
            atomically(|tx2| v.write(tx2, 2));
            Ok(())
        })
    }));
    let msg = r.unwrap_err();
    let msg = msg
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .unwrap_or_default();
    assert!(msg.contains("inside a transaction"), "{msg}");
    assert_eq!(v.read_atomic(), 0);
    // Not stuck in "inside a transaction" afterwards.
    atomically(|tx| v.write(tx, 5));
    assert_eq!(v.read_atomic(), 5);
}

#[test]
fn retry_without_reads_is_a_clear_panic() {
    quiet_expected_panics();
    let r = catch_unwind(|| atomically(|_| retry::<()>()));
    let msg = r.unwrap_err();
    let msg = msg
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .unwrap_or_default();
    assert!(msg.contains("read no TVar"), "{msg}");
}

/// A long transaction (reads every variable, writes one) against threads that keep writing
/// those variables: contention management makes it finish.
#[test]
fn a_long_transaction_is_not_starved() {
    let vars: Arc<Vec<TVar<u64>>> = Arc::new((0..2000).map(TVar::new).collect());
    let total = Arc::new(TVar::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let mut hammers = Vec::new();
    for t in 0..3usize {
        let (vars, stop) = (vars.clone(), stop.clone());
        hammers.push(std::thread::spawn(move || {
            let mut i = t;
            while !stop.load(Ordering::Relaxed) {
                i = (i * 7 + 13) % vars.len();
                atomically(|tx| vars[i].modify(tx, |v| v + 1));
            }
        }));
    }
    let started = Instant::now();
    for _ in 0..5 {
        atomically(|tx| {
            let mut sum = 0;
            for v in vars.iter() {
                sum += v.read(tx)?;
                // Make the window for conflicts wide.
                std::hint::spin_loop();
            }
            total.write(tx, sum)
        });
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for h in hammers {
        h.join().unwrap();
    }
    assert!(took < support::LONG, "the long transaction took {took:?}");
    assert!(total.read_atomic() > 0);
}

/// Variables created, shared and dropped while other threads use them in transactions.
#[test]
fn dropping_variables_during_transactions_is_safe() {
    let shared = Arc::new(TVar::new(Vec::<u64>::new()));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let shared = &shared;
            s.spawn(move || {
                for i in 0..2000u64 {
                    let local = TVar::new(vec![t, i]);
                    atomically(|tx| {
                        let mut v = local.read(tx)?;
                        v.push(shared.read(tx)?.len() as u64);
                        local.write(tx, v.clone())?;
                        shared.write(tx, v)
                    });
                    drop(local);
                }
            });
        }
    });
    assert_eq!(shared.read_atomic().len(), 3);
}

/// A helper taking the transaction: transactions compose through functions.
fn transfer(tx: &mut Tx, from: &TVar<i32>, to: &TVar<i32>, n: i32) -> StmResult<()> {
    let f = from.read(tx)?;
    check(f >= n)?;
    from.write(tx, f - n)?;
    to.modify(tx, |t| t + n)
}

#[test]
fn transactions_compose_through_functions() {
    let (a, b, c) = (TVar::new(10), TVar::new(0), TVar::new(0));
    atomically(|tx| {
        transfer(tx, &a, &b, 4)?;
        transfer(tx, &b, &c, 3)
    });
    assert_eq!(
        (a.read_atomic(), b.read_atomic(), c.read_atomic()),
        (6, 1, 3)
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions from the STM review: variable lifetimes
// ---------------------------------------------------------------------------------------------

static DROPS: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone)]
struct Counted(#[allow(dead_code)] Vec<u8>);
impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Finding 1: The closure drops the last handle of a TVar it has read, then retries.
/// `sleep_until_changed` does `inc_ref` on a count that already reached 0 (the free is already
/// deferred), unpins, and later `Registration::drop` touches the freed header and frees it
/// again.
#[test]
fn retry_after_dropping_last_handle_of_a_read_tvar() {
    let keep = Arc::new(TVar::new(0u32));
    let k2 = keep.clone();
    let mut doomed = Some(TVar::new(Counted(vec![7; 64])));
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(if cfg!(miri) { 10 } else { 200 }));
        // Pin many times so the epoch advances and the deferred free of `doomed` runs.
        for _ in 0..(if cfg!(miri) { 600 } else { 20_000 }) {
            let _ = k2.read_atomic();
        }
        atomically(|tx| k2.write(tx, 1));
        for _ in 0..(if cfg!(miri) { 600 } else { 20_000 }) {
            let _ = k2.read_atomic();
        }
    });
    let got = atomically(|tx| {
        if let Some(d) = doomed.as_ref() {
            let _ = d.read(tx)?;
        }
        doomed = None; // last handle dropped while `d` is in the read log
        let k = keep.read(tx)?;
        if k == 0 { retry() } else { Ok(k) }
    });
    writer.join().unwrap();
    // Commit a lot more on this thread (each commit defers a free) so the deferred frees
    // queued on this thread run.
    for i in 0..(if cfg!(miri) { 300 } else { 20_000 }) {
        atomically(|tx| keep.write(tx, i));
    }
    for _ in 0..(if cfg!(miri) { 300 } else { 20_000 }) {
        let _ = keep.read_atomic();
    }
    assert_eq!(got, 1);
    assert!(
        DROPS.load(Ordering::SeqCst) <= 2,
        "the TVar's value was dropped twice (double free)"
    );
    // The value of `doomed` (plus clones made by reads) must be dropped; a double free of the
    // TVar drops its current value twice.
    let d = DROPS.load(Ordering::SeqCst);
    eprintln!("drops = {d}");
}

/// Finding 11: a value replaced by a transaction on a worker that then goes idle is dropped
/// soon (the worker hands its retired values to the collector before it sleeps).
#[test]
fn a_value_replaced_on_a_worker_that_goes_idle_is_dropped() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let (tx_, rx) = mpsc::channel::<()>();
    let slot = Arc::new(TVar::new(Some(tx_)));
    let s = slot.clone();
    rt.spawn_fn(move || atomically(|tx| s.write(tx, None)))
        .wait()
        .unwrap();
    // Other threads keep using the STM meanwhile (their pins advance the epoch and collect).
    let other = TVar::new(0u64);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut r = Err(mpsc::RecvTimeoutError::Timeout);
    while std::time::Instant::now() < deadline {
        for i in 0..1000 {
            atomically(|tx| other.write(tx, i));
        }
        r = rx.recv_timeout(Duration::from_millis(1));
        if r.is_err_and(|e| e == mpsc::RecvTimeoutError::Disconnected) {
            break;
        }
    }
    assert_eq!(r, Err(mpsc::RecvTimeoutError::Disconnected));
}
