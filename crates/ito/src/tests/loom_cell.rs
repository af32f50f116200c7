//! The completion cell under every interleaving loom can find: racing completers, callbacks
//! registered during completion, async waiters that register, re-poll and drop.

use std::future::IntoFuture;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::{Failure, Future, Promise};

/// Two completers race; exactly one wins, and a callback registered concurrently runs exactly
/// once, with the winner's value.
#[test]
fn racing_completers_and_a_callback() {
    loom::model(|| {
        let p = Promise::<usize>::new();
        let f = p.future();
        let p2 = p.clone();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(0));

        let t1 = thread::spawn(move || p.try_success(1));
        let t2 = thread::spawn(move || p2.try_success(2));
        let (c, s) = (calls.clone(), seen.clone());
        f.inner().on_complete_raw(move |r| {
            c.fetch_add(1, Ordering::SeqCst);
            s.store(*r.as_ref().unwrap(), Ordering::SeqCst);
        });
        let w1 = t1.join().unwrap();
        let w2 = t2.join().unwrap();
        assert!(w1 ^ w2, "exactly one completer wins");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let winner = if w1 { 1 } else { 2 };
        assert_eq!(seen.load(Ordering::SeqCst), winner);
        assert_eq!(f.value(), Some(Ok(winner)));
    });
}

/// The last promise handle dropping races a completer: the future ends up with exactly one
/// result, and the broken-promise failure only when nobody completed.
#[test]
fn drop_races_completion() {
    loom::model(|| {
        let p = Promise::<usize>::new();
        let f = p.future();
        let p2 = p.clone();
        let t = thread::spawn(move || p2.try_success(5));
        drop(p);
        let won = t.join().unwrap();
        assert!(won, "a live clone can always complete");
        assert_eq!(f.value(), Some(Ok(5)));
    });
}

#[derive(Default)]
struct CountWake(std::sync::atomic::AtomicUsize);
impl Wake for CountWake {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An async waiter registers, is re-polled with a new waker, and is woken exactly when the
/// value lands; no wake-up is lost.
#[test]
fn async_waiter_no_lost_wakeup() {
    loom::model(|| {
        let p = Promise::<usize>::new();
        let f: Future<usize> = p.future();
        let t = thread::spawn(move || {
            p.try_success(3);
        });
        let w1 = StdArc::new(CountWake::default());
        let w2 = StdArc::new(CountWake::default());
        let waker1 = Waker::from(w1.clone());
        let waker2 = Waker::from(w2.clone());
        let mut wait = pin!((&f).into_future());
        let first = wait.as_mut().poll(&mut Context::from_waker(&waker1));
        let second = wait.as_mut().poll(&mut Context::from_waker(&waker2));
        t.join().unwrap();
        match (first, second) {
            (Poll::Ready(v), _) => assert_eq!(v, Ok(3)),
            (Poll::Pending, Poll::Ready(v)) => assert_eq!(v, Ok(3)),
            (Poll::Pending, Poll::Pending) => {
                // Completed after the second poll: the current waker must have been woken.
                let woken = w1.0.load(std::sync::atomic::Ordering::SeqCst)
                    + w2.0.load(std::sync::atomic::Ordering::SeqCst);
                assert_eq!(woken, 1, "exactly one wake-up");
                assert!(matches!(
                    wait.as_mut().poll(&mut Context::from_waker(&waker2)),
                    Poll::Ready(Ok(3))
                ));
            }
        }
    });
}

/// A waiter dropped while the cell completes: it is unlinked or waited for, never freed while
/// the completer still touches it.
#[test]
fn async_waiter_dropped_during_completion() {
    loom::model(|| {
        let p = Promise::<usize>::new();
        let f: Future<usize> = p.future();
        let t = thread::spawn(move || {
            p.try_complete(Err(Failure::Timeout));
        });
        let w = StdArc::new(CountWake::default());
        let waker = Waker::from(w);
        {
            let mut wait = pin!((&f).into_future());
            let _ = wait.as_mut().poll(&mut Context::from_waker(&waker));
        } // dropped here, possibly mid-completion
        t.join().unwrap();
        assert_eq!(f.value(), Some(Err(Failure::Timeout)));
    });
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A unique reader (`Task`) moves a success out while the completer is still notifying: it is
/// polled, re-polled with another waker, and takes the value exactly once; the cell then
/// does not drop it again. An internal observer (as a scope's callback) sees the completion.
#[test]
fn unique_reader_takes_the_value_once() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let observed = Arc::new(AtomicUsize::new(0));
        let (p, task) = Promise::<Counted>::with_task();
        let o = observed.clone();
        task.inner().on_complete_raw(move |r| {
            // Only the failure side, as the scope does.
            assert!(r.as_ref().err().is_none());
            o.fetch_add(1, Ordering::SeqCst);
        });
        let d = drops.clone();
        let t = thread::spawn(move || {
            assert!(p.try_success(Counted(d)));
        });
        let w1 = StdArc::new(CountWake::default());
        let w2 = StdArc::new(CountWake::default());
        let waker1 = Waker::from(w1.clone());
        let waker2 = Waker::from(w2.clone());
        let mut task = pin!(task);
        let mut got = match task.as_mut().poll(&mut Context::from_waker(&waker1)) {
            Poll::Ready(v) => Some(v),
            Poll::Pending => match task.as_mut().poll(&mut Context::from_waker(&waker2)) {
                Poll::Ready(v) => Some(v),
                Poll::Pending => None,
            },
        };
        t.join().unwrap();
        if got.is_none() {
            let woken = w1.0.load(std::sync::atomic::Ordering::SeqCst)
                + w2.0.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(woken, 1, "exactly one wake-up");
            match task.as_mut().poll(&mut Context::from_waker(&waker2)) {
                Poll::Ready(v) => got = Some(v),
                Poll::Pending => panic!("woken but not ready"),
            }
        }
        assert!(matches!(got, Some(Ok(_))));
        assert_eq!(drops.load(Ordering::SeqCst), 0, "moved, not dropped");
        drop(got);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(task);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the cell did not drop it again"
        );
        assert_eq!(observed.load(Ordering::SeqCst), 1);
    });
}

/// A `Task` that registered its waiter is dropped while the cell completes: the node is
/// unlinked or waited for, and the value (never taken) is dropped exactly once, by the cell.
#[test]
fn unique_reader_dropped_during_completion() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (p, task) = Promise::<Counted>::with_task();
        let d = drops.clone();
        let t = thread::spawn(move || {
            assert!(p.try_success(Counted(d)));
        });
        let w = StdArc::new(CountWake::default());
        let waker = Waker::from(w);
        {
            let mut task = pin!(task);
            if let Poll::Ready(v) = task.as_mut().poll(&mut Context::from_waker(&waker)) {
                drop(v);
            }
        } // dropped here, possibly mid-completion
        t.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}
