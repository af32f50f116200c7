//! The wait lists of `ito::sync` and `ito::channel` under every interleaving loom finds: the
//! semaphore's lock-free fast paths racing its queue (acquire vs release vs a waiter dropped
//! at any point), and the channel's hand-offs (send / receive / close, the rendezvous, a
//! receive dropped after a value was handed to it). A lost wake-up shows up as a loom
//! deadlock; a lost or duplicated permit or value as a failed count.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

use crate::channel::{self, RecvError, TryRecvError};
use crate::sync::{Latch, Semaphore};

/// Wakes a parked loom thread.
struct Unpark {
    thread: thread::Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &StdArc<Self>) {
        // A swap, not a store: loom orders a plain store against the parked thread's swaps
        // only by causality, and may let a later swap read the older value.
        if !self.woken.swap(true, Ordering::AcqRel) {
            self.thread.unpark();
        }
    }
}

/// Runs `fut` on this loom thread, parking between polls (a lost wake-up is a deadlock loom
/// reports).
pub(super) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let unpark = StdArc::new(Unpark {
        thread: thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(unpark.clone());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            return v;
        }
        while !unpark.woken.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}

/// Polls `fut` once with a waker that does nothing, then drops it: a waiter that gives up
/// at an arbitrary point (queued, granted but unseen, or served at once). Returns what the
/// poll returned, if it was ready.
pub(super) fn poll_once_then_drop<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A release racing an acquisition that has to queue: the waiter is always woken and gets
/// the permit.
#[test]
fn loom_semaphore_release_wakes_waiter() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s = sem.clone();
        let t = thread::spawn(move || s.add_permits(1));
        let permit = block_on(sem.acquire()).unwrap();
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        assert_eq!(sem.available_permits(), 1);
    });
}

/// Acquire vs release vs a dropped waiter: a waiter that gives up (before it queued, while
/// queued, or after it was handed the permit) never keeps the permit from the waiter behind
/// it, and the count ends where it started.
#[test]
fn loom_semaphore_dropped_waiter() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let (s1, s2) = (sem.clone(), sem.clone());
        let quitter = thread::spawn(move || drop(poll_once_then_drop(s1.acquire())));
        let releaser = thread::spawn(move || s2.add_permits(1));
        let permit = block_on(sem.acquire()).unwrap();
        quitter.join().unwrap();
        releaser.join().unwrap();
        drop(permit);
        assert_eq!(
            sem.available_permits(),
            1,
            "a permit leaked or was duplicated"
        );
        assert!(
            sem.try_acquire().is_ok(),
            "the queued state was left behind"
        );
    });
}

/// A waiter needing two permits, fed one at a time by two releasers while a second waiter
/// gives up: the first gets both, nothing is left over or lost.
#[test]
fn loom_semaphore_partial_hand_out() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let (s1, s2) = (sem.clone(), sem.clone());
        let t1 = thread::spawn(move || s1.add_permits(1));
        let t2 = thread::spawn(move || {
            drop(poll_once_then_drop(s2.acquire()));
            s2.add_permits(1);
        });
        let permit = block_on(sem.acquire_many(2)).unwrap();
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        assert_eq!(sem.available_permits(), 2);
    });
}

/// `close` racing a waiter: the waiter always finishes (`Closed`, or the permit if the
/// release came first), and no permit is lost.
#[test]
fn loom_semaphore_close_vs_waiter() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let (s1, s2) = (sem.clone(), sem.clone());
        let closer = thread::spawn(move || s1.close());
        let releaser = thread::spawn(move || s2.add_permits(1));
        let r = block_on(sem.acquire());
        drop(r);
        closer.join().unwrap();
        releaser.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// The rendezvous: a send completes only once the receiver has the value (nothing is ever
/// buffered), and the receiver gets it.
#[test]
fn loom_channel_rendezvous() {
    loom::model(|| {
        let (tx, rx) = channel::bounded::<u32>(0);
        let t = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            // Returned: the receiver took it; it was never in a buffer.
            assert_eq!(tx.len(), 0);
        });
        assert_eq!(block_on(rx.recv()), Ok(1));
        t.join().unwrap();
    });
}

/// Send / receive / close race on a one-slot channel: every value is either received once
/// or handed back to its sender, never both, never neither; the receiver always ends.
#[test]
fn loom_channel_send_recv_close() {
    loom::model(|| {
        let (tx, rx) = channel::bounded::<u32>(1);
        let closer = tx.clone();
        let sender = thread::spawn(move || {
            let mut back = Vec::new();
            for v in [1, 2] {
                if let Err(e) = block_on(tx.send(v)) {
                    back.push(e.0);
                }
            }
            back
        });
        let c = thread::spawn(move || {
            closer.close();
        });
        let mut got = Vec::new();
        loop {
            match block_on(rx.recv()) {
                Ok(v) => got.push(v),
                Err(RecvError::Closed) => break,
                Err(RecvError::Cancelled) => unreachable!(),
            }
        }
        let back = sender.join().unwrap();
        c.join().unwrap();
        let mut all: Vec<u32> = got.iter().chain(&back).copied().collect();
        all.sort();
        assert_eq!(all, [1, 2], "got {got:?}, handed back {back:?}");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "out of order: {got:?}");
    });
}

/// A receive dropped at any point (before it queued, queued, or just handed the value)
/// while a send and the close of the last sender happen: the value is received exactly once,
/// by the quitter (if its one poll returned it), by the receiver that stays, or (if it came
/// back after the stayer saw the channel closed and empty) from the buffer afterwards.
#[test]
fn loom_channel_dropped_receive_hands_on() {
    loom::model(|| {
        let (tx, rx) = channel::unbounded::<u32>();
        let rx2 = rx.clone();
        let quitter = thread::spawn(move || poll_once_then_drop(rx2.recv()).and_then(Result::ok));
        let sender = thread::spawn(move || tx.try_send(5).unwrap()); // then drops the last sender
        let stayer = block_on(rx.recv()).ok();
        let quitter = quitter.join().unwrap();
        sender.join().unwrap();
        let left = rx.try_recv().ok();
        let got: Vec<u32> = [quitter, stayer, left].into_iter().flatten().collect();
        assert_eq!(
            got,
            [5],
            "quitter {quitter:?}, stayer {stayer:?}, left {left:?}"
        );
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

/// Two count-downs race a waiter: it is released exactly when both happened.
#[test]
fn loom_latch_count_down() {
    loom::model(|| {
        let latch = Arc::new(Latch::new(2));
        let (l1, l2) = (latch.clone(), latch.clone());
        let t1 = thread::spawn(move || l1.count_down());
        let t2 = thread::spawn(move || l2.count_down());
        block_on(latch.wait());
        assert_eq!(latch.count(), 0);
        t1.join().unwrap();
        t2.join().unwrap();
    });
}
