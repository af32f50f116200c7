//! Serial mode: a transaction that keeps conflicting runs alone, holding the serial token.
//! Regression tests from the STM review, each a failing program before its fix: waiting in
//! serial mode for another thread's transaction, the token kept by a panicked async attempt,
//! and a conflict kept from an earlier attempt.

mod support;

use std::sync::{Arc, mpsc};
use std::time::Duration;

use ito::stm::{TVar, atomically, atomically_async};

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
        let mut inner = ito::spawn_fn(move || atomically(|tx| z2.modify(tx, |v| v + 1)));
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
