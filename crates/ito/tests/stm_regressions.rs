//! Regression tests from the STM review: each was a failing program before its fix (use
//! after free when a transaction drops a variable it read and retries; promise callbacks of a
//! commit starting transactions; opacity across plain completions; reading one's own
//! completion; a panicking waker during a commit).

mod support;

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

/// Makes the calling transaction's attempts conflict (through a helper thread's commit in the
/// middle of the attempt) until `n` attempts have run; returns the attempt number.
struct Conflicter {
    x: Arc<TVar<u64>>,
    y: Arc<TVar<u64>>,
    go: mpsc::Sender<()>,
    ack: mpsc::Receiver<()>,
    attempts: u32,
}

impl Conflicter {
    fn new() -> Conflicter {
        let x = Arc::new(TVar::new(0u64));
        let y = Arc::new(TVar::new(0u64));
        let (go, go_rx) = mpsc::channel::<()>();
        let (ack_tx, ack) = mpsc::channel::<()>();
        let (x2, y2) = (x.clone(), y.clone());
        std::thread::spawn(move || {
            while go_rx.recv().is_ok() {
                atomically(|tx| {
                    x2.modify(tx, |v| v + 1)?;
                    y2.modify(tx, |v| v + 1)
                });
                ack_tx.send(()).unwrap();
            }
        });
        Conflicter {
            x,
            y,
            go,
            ack,
            attempts: 0,
        }
    }

    /// Call at the start of an attempt: the first `n` attempts end in a conflict.
    fn maybe_conflict(&mut self, tx: &mut ito::stm::Tx, n: u32) -> ito::stm::StmResult<u32> {
        self.attempts += 1;
        if self.attempts <= n {
            let _ = self.x.read(tx)?;
            self.go.send(()).unwrap();
            self.ack.recv().unwrap();
            let _ = self.y.read(tx)?; // newer than the snapshot, x changed: conflict
        }
        Ok(self.attempts)
    }
}

/// Finding 3: a transaction in serial mode (after 16 conflicts) that waits for a task (or a `join`
/// side, or a scoped thread) which itself runs `atomically`: the inner transaction waits in
/// `wait_while_serial` for ever, the outer waits for it: deadlock. The same code without serial
/// mode completes. (Nesting detection is per thread, so this is not reported.)
#[test]
fn serial_mode_waiting_for_another_threads_transaction_deadlocks() {
    let z = Arc::new(TVar::new(0u32));
    let mut c = Conflicter::new();
    let mut outcomes = Vec::new();
    atomically(|tx| {
        let attempt = c.maybe_conflict(tx, 16)?;
        let z2 = z.clone();
        let inner = ito::spawn_fn(move || atomically(|tx| z2.modify(tx, |v| v + 1)));
        let r = inner.wait_timeout(Duration::from_secs(2));
        outcomes.push((attempt, r.is_some()));
        Ok(())
    });
    eprintln!("attempt, inner transaction finished within 2 s: {outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o.1),
        "inner transaction blocked: {outcomes:?}"
    );
}

/// Finding 7: `atomically_async` keeps the serial token in the future; a panic in the serial attempt
/// leaves it there until the future is dropped. While a panicked future is kept (a
/// `catch_unwind` around `poll`, a leaked task), every other writer blocks.
#[test]
fn async_serial_token_survives_a_panic() {
    use std::future::Future as _;
    support::quiet_expected_panics();
    let mut c = Conflicter::new();
    let mut fut = atomically_async(move |tx| {
        let attempt = c.maybe_conflict(tx, 16)?;
        if attempt == 17 {
            panic!("expected: serial attempt panics");
        }
        Ok(())
    });
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = std::pin::Pin::new(&mut fut).poll(&mut cx);
    }));
    assert!(r.is_err());
    let v = Arc::new(TVar::new(0));
    let v2 = v.clone();
    let other = std::thread::spawn(move || atomically(|tx| v2.write(tx, 1)));
    std::thread::sleep(Duration::from_secs(1));
    let blocked = !other.is_finished();
    drop(fut);
    other.join().unwrap();
    assert!(
        !blocked,
        "an unrelated writer blocked while the panicked future was alive"
    );
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

/// Finding 12: an `StmError` kept from an earlier attempt and returned later would make the
/// transaction run for ever: it is a clear panic instead.
#[test]
fn a_stale_conflict_is_a_clear_panic() {
    support::quiet_expected_panics();
    let mut c = Conflicter::new();
    let mut kept: Option<ito::stm::StmError> = None;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        atomically(|tx| {
            if let Some(e) = kept.take() {
                return Err::<(), _>(e);
            }
            if let Err(e) = c.maybe_conflict(tx, 1) {
                kept = Some(e);
                return Err(e);
            }
            Ok(())
        })
    }));
    let msg = support::panic_message(&*r.unwrap_err());
    assert!(msg.contains("earlier attempt"), "{msg}");
}
