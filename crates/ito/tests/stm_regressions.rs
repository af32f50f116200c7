//! Regression tests from the STM review: each was a failing program before its fix (use
//! after free when a transaction drops a variable it read and retries; promise callbacks of a
//! commit starting transactions; opacity across plain completions; reading one's own
//! completion; a panicking waker during a commit).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use ito::Promise;
use ito::stm::{TVar, atomically, atomically_async, retry};

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
    common::quiet_expected_panics();
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
