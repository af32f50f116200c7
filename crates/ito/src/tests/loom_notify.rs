//! `ito::sync::Notify` (and the wake-all waits of `broadcast` and `watch`, and `oneshot`) under
//! every interleaving loom finds. A lost notification shows up as a loom deadlock (a waiter parked
//! for ever); a duplicated one as a waiter that passes with nothing left to give it.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Waker};

use loom::sync::Arc;
use loom::thread;

use super::loom_sync::{block_on, poll_once_then_drop};
use crate::sync::{Notify, broadcast, oneshot, watch};

/// Whether `fut` is ready on its first poll (it is dropped after).
fn ready_at_once<F: Future>(fut: F) -> bool {
    let fut = pin!(fut);
    matches!(
        fut.poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(_)
    )
}

/// `notify_one` racing a waiter that is about to queue: the waiter always gets through
/// (queued and woken, or by the permit), and the notification is used up.
#[test]
fn loom_notify_one_vs_waiter() {
    loom::model(|| {
        let notify = Arc::new(Notify::new());
        let n = notify.clone();
        let t = thread::spawn(move || n.notify_one());
        block_on(notify.notified());
        t.join().unwrap();
        assert!(
            !ready_at_once(notify.notified()),
            "a notification counted twice"
        );
    });
}

/// Two waiters and a notifier that notifies, waits for one of them to acknowledge, and
/// notifies again (two `notify_one`s in a row with nobody queued are one permit, by design):
/// both waiters get through, each notification is used once, and nothing is left over.
#[test]
fn loom_notify_two_waiters_two_notifications() {
    loom::model(|| {
        let notify = Arc::new(Notify::new());
        let ack = Arc::new(Notify::new());
        let (n1, a1) = (notify.clone(), ack.clone());
        let notifier = thread::spawn(move || {
            for _ in 0..2 {
                n1.notify_one();
                block_on(a1.notified());
            }
        });
        let (n2, a2) = (notify.clone(), ack.clone());
        let waiter = thread::spawn(move || {
            block_on(n2.notified());
            a2.notify_one();
        });
        block_on(notify.notified());
        ack.notify_one();
        waiter.join().unwrap();
        notifier.join().unwrap();
        assert!(
            !ready_at_once(notify.notified()),
            "a notification counted twice"
        );
    });
}

/// A waiter that gives up at any point (before queuing, queued, or chosen but unseen) does
/// not swallow the notification meant for the waiter that stays.
#[test]
fn loom_notify_cancelled_waiter_passes_it_on() {
    loom::model(|| {
        let notify = Arc::new(Notify::new());
        let (n1, n2) = (notify.clone(), notify.clone());
        let quitter = thread::spawn(move || {
            // Took it (permit): give it back, as a caller that got through would pass it on.
            if poll_once_then_drop(n1.notified()).is_some() {
                n1.notify_one();
            }
        });
        let notifier = thread::spawn(move || n2.notify_one());
        block_on(notify.notified());
        quitter.join().unwrap();
        notifier.join().unwrap();
        assert!(
            !ready_at_once(notify.notified()),
            "a notification counted twice"
        );
    });
}

/// `notify_waiters` racing a waiter created before it: the waiter is released whether it
/// queued before the call or polls after it.
#[test]
fn loom_notify_waiters_vs_waiter() {
    loom::model(|| {
        let notify = Arc::new(Notify::new());
        let notified = notify.notified();
        let n = notify.clone();
        let t = thread::spawn(move || n.notify_waiters());
        block_on(notified);
        t.join().unwrap();
    });
}

/// A broadcast send racing a receiver that is about to wait, and the last sender's drop:
/// the receiver gets the value, then `Closed`; it never sleeps through either. The sender
/// stays alive until the value is received, so the send's own wake-up is what is checked
/// (the drop's would hide a send that woke nobody).
#[test]
fn loom_broadcast_send_vs_receiver() {
    loom::model(|| {
        let (tx, mut rx) = broadcast::channel(1);
        let received = Arc::new(Notify::new());
        let r = received.clone();
        let t = thread::spawn(move || {
            tx.send(7).unwrap();
            block_on(r.notified());
        });
        assert_eq!(block_on(rx.recv()), Ok(7));
        received.notify_one();
        assert_eq!(block_on(rx.recv()), Err(broadcast::RecvError::Closed));
        t.join().unwrap();
    });
}

/// Reads `rx` until `Closed`: the values read, in order, and how many it was told it missed.
fn read_to_close(rx: &mut broadcast::Receiver<u32>) -> (Vec<u32>, u64) {
    let (mut read, mut missed) = (Vec::new(), 0);
    loop {
        match block_on(rx.recv()) {
            Ok(v) => read.push(v),
            Err(broadcast::RecvError::Lagged(n)) => missed += n,
            Err(broadcast::RecvError::Closed) => return (read, missed),
            Err(e) => panic!("unexpected {e}"),
        }
    }
}

/// Two sends into a ring of one racing a reader (which may lag) and a receiver subscribed
/// while they run (and one subscribed between them, which gets exactly the second): each reader reads, in order, the values sent after it was created that
/// were not overwritten first, and is told how many were; the first one reads the last value.
#[test]
fn loom_broadcast_lag_and_subscribe_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = broadcast::channel(1);
        let sub = tx.clone();
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
            let mid = tx.subscribe();
            tx.send(2).unwrap();
            mid
        });
        let mut late = sub.subscribe();
        drop(sub);
        let (read, missed) = read_to_close(&mut rx);
        assert_eq!(read.last(), Some(&2), "the last value was not read");
        assert_eq!(read.len() as u64 + missed, 2, "read + missed != sent");
        let (late_read, late_missed) = read_to_close(&mut late);
        // It subscribed at position 0, 1 or 2, and reads or misses what was sent after.
        let late_first = 2 - (late_read.len() as u64 + late_missed);
        let expected: Vec<u32> = (late_first as u32 + 1..=2).collect();
        assert_eq!(
            late_read,
            expected[late_missed as usize..],
            "the late receiver read out of order, or more than was sent after it"
        );
        let mut mid = t.join().unwrap();
        assert_eq!(
            read_to_close(&mut mid),
            (vec![2], 0),
            "subscribed between the sends"
        );
    });
}

/// A watch send, then the sender's drop, racing `changed`: the receiver wakes and reads the
/// new value (never an older one than the version it marked seen), then a `changed` that may
/// already wait is woken by the drop and fails with `Closed`. The sender stays alive until
/// the value is seen, so the drop's wake-up cannot hide a send that woke nobody.
#[test]
fn loom_watch_send_vs_changed() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0);
        let seen = Arc::new(Notify::new());
        let s = seen.clone();
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
            // Alive until the value is seen: the send's own wake-up is checked.
            block_on(s.notified());
            drop(tx);
        });
        block_on(rx.changed()).unwrap();
        assert_eq!(*rx.borrow_and_update(), 1);
        seen.notify_one();
        assert_eq!(
            block_on(rx.changed()),
            Err(crate::channel::RecvError::Closed)
        );
        t.join().unwrap();
    });
}

/// A oneshot send racing the receiver, which waits for the value or gives up: a waiting
/// receiver is always woken with the value, and a value is received, handed back to the
/// sender, or dropped with the receiver: exactly one of the three, and dropped exactly once.
#[test]
fn loom_oneshot_send_vs_receiver() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(StdArc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    loom::model(|| {
        let (tx, rx) = oneshot::channel();
        let t = thread::spawn(move || tx.send(7));
        assert_eq!(block_on(rx), Ok(7));
        assert_eq!(t.join().unwrap(), Ok(()));

        let drops = StdArc::new(AtomicUsize::new(0));
        let (tx, mut rx) = oneshot::channel();
        let value = Counted(drops.clone());
        let t = thread::spawn(move || {
            let gone = tx.is_closed();
            let handed_back = tx.send(value).err().map(|e| e.0);
            assert!(
                !gone || handed_back.is_some(),
                "sent to a receiver known gone"
            );
            handed_back
        });
        let received = rx.try_recv().ok();
        drop(rx);
        let handed_back = t.join().unwrap();
        assert!(
            received.is_none() || handed_back.is_none(),
            "received and handed back"
        );
        let kept = usize::from(received.is_some()) + usize::from(handed_back.is_some());
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1 - kept,
            "dropped once, if not kept"
        );
        drop((received, handed_back));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
    });
}

/// A oneshot sender dropped without sending, and a sender waiting in `closed` while the
/// receiver goes: the waiting side is always woken (`Closed` for the receiver).
#[test]
fn loom_oneshot_drops_wake_the_other_side() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u8>();
        let t = thread::spawn(move || drop(tx));
        assert_eq!(block_on(rx), Err(crate::channel::RecvError::Closed));
        t.join().unwrap();

        let (mut tx, rx) = oneshot::channel::<u8>();
        let t = thread::spawn(move || drop(rx));
        block_on(tx.closed());
        assert!(tx.is_closed());
        t.join().unwrap();
    });
}
