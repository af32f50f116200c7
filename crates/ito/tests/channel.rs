//! `ito::channel`: MPMC with no loss or duplication, close from both ends, the rendezvous,
//! values handed back on errors, cancel safety of receives, iterators and `Stream`, and
//! blocking calls inside tasks on one worker.

mod support;

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use futures_core::Stream;
use ito::channel::{self, RecvError, SendBlockingError, SendError, TryRecvError, TrySendError};
use support::{CountWaker, LogWaker, get_ok, poll_once, rt};

const SENDERS: usize = 4;
const RECEIVERS: usize = 4;
const PER_SENDER: usize = 2_000;

/// Checks that `seen` holds every value `0..SENDERS * PER_SENDER` exactly once.
fn assert_each_once(seen: &[AtomicUsize]) {
    for (v, c) in seen.iter().enumerate() {
        assert_eq!(
            c.load(Ordering::Relaxed),
            1,
            "value {v} received {c:?} times"
        );
    }
}

/// 4 senders x 4 receivers on OS threads, blocking calls, several capacities (0 is the
/// rendezvous): every value arrives exactly once, and each sender's values arrive in order at
/// any one receiver.
#[test]
fn mpmc_threads_no_loss_no_duplication() {
    for cap in [0, 1, 16] {
        let (tx, rx) = channel::bounded::<usize>(cap);
        let seen: Arc<Vec<AtomicUsize>> = Arc::new(
            (0..SENDERS * PER_SENDER)
                .map(|_| AtomicUsize::new(0))
                .collect(),
        );
        std::thread::scope(|s| {
            for id in 0..SENDERS {
                let tx = tx.clone();
                s.spawn(move || {
                    for i in 0..PER_SENDER {
                        tx.send_blocking(id * PER_SENDER + i).unwrap();
                    }
                });
            }
            for _ in 0..RECEIVERS {
                let (rx, seen) = (rx.clone(), seen.clone());
                s.spawn(move || {
                    let mut last = [None::<usize>; SENDERS];
                    for v in rx.iter() {
                        let (id, i) = (v / PER_SENDER, v % PER_SENDER);
                        assert!(last[id].is_none_or(|l| l < i), "out of order from {id}");
                        last[id] = Some(i);
                        seen[v].fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            drop(tx); // the receivers stop once every sender is done and the buffer drained
            drop(rx);
        });
        assert_each_once(&seen);
    }
}

/// The same with async tasks on a 2-worker runtime, mixing `send().await` / `try_send` and
/// `recv().await` / the `Stream`.
#[test]
fn mpmc_tasks_no_loss_no_duplication() {
    let rt = rt(2);
    for cap in [0, 3] {
        let (tx, rx) = channel::bounded::<usize>(cap);
        let seen: Arc<Vec<AtomicUsize>> = Arc::new(
            (0..SENDERS * PER_SENDER)
                .map(|_| AtomicUsize::new(0))
                .collect(),
        );
        let senders: Vec<_> = (0..SENDERS)
            .map(|id| {
                let tx = tx.clone();
                rt.spawn(async move {
                    for i in 0..PER_SENDER {
                        let v = id * PER_SENDER + i;
                        if let Err(TrySendError::Full(v)) = tx.try_send(v) {
                            tx.send(v).await.unwrap();
                        }
                    }
                })
            })
            .collect();
        let receivers: Vec<_> = (0..RECEIVERS)
            .map(|r| {
                let (mut rx, seen) = (rx.clone(), seen.clone());
                rt.spawn(async move {
                    let mut n = 0;
                    if r % 2 == 0 {
                        while let Ok(v) = rx.recv().await {
                            seen[v].fetch_add(1, Ordering::Relaxed);
                            n += 1;
                        }
                    } else {
                        while let Some(v) =
                            std::future::poll_fn(|cx| Pin::new(&mut rx).poll_next(cx)).await
                        {
                            seen[v].fetch_add(1, Ordering::Relaxed);
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        drop((tx, rx));
        senders.into_iter().for_each(get_ok);
        let total: usize = receivers.into_iter().map(get_ok).sum();
        assert_eq!(total, SENDERS * PER_SENDER);
        assert_each_once(&seen);
    }
}

/// A rendezvous send does not complete before a receiver takes the value, and completes as
/// soon as one does.
#[test]
fn rendezvous_send_completes_only_when_taken() {
    let (tx, rx) = channel::bounded(0);
    let (c, w) = CountWaker::new();
    let mut send = pin!(tx.send(1));
    assert!(poll_once(send.as_mut(), &w).is_pending());
    assert!(
        poll_once(send.as_mut(), &w).is_pending(),
        "nobody took it yet"
    );
    assert_eq!(rx.len(), 0, "a rendezvous buffers nothing");
    assert_eq!(c.count(), 0);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(c.count(), 1, "taking the value wakes the sender");
    assert!(matches!(poll_once(send.as_mut(), &w), Poll::Ready(Ok(()))));
    // With a receiver waiting first, the send hands over at once.
    let (rc, rw) = CountWaker::new();
    let mut recv = pin!(rx.recv());
    assert!(poll_once(recv.as_mut(), &rw).is_pending());
    assert_eq!(tx.try_send(2), Ok(()));
    assert_eq!(rc.count(), 1);
    assert!(matches!(poll_once(recv.as_mut(), &rw), Poll::Ready(Ok(2))));
    // try_send with nobody receiving fails, handing the value back.
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
}

/// A blocking rendezvous send between threads returns only after the receiver has the value.
#[test]
fn rendezvous_between_threads() {
    let (tx, rx) = channel::bounded(0);
    let taken = Arc::new(AtomicUsize::new(0));
    let t2 = taken.clone();
    let receiver = std::thread::spawn(move || {
        for i in 0..100 {
            assert_eq!(rx.recv_blocking(), Ok(i));
            t2.store(i + 1, Ordering::SeqCst);
        }
    });
    for i in 0..100 {
        tx.send_blocking(i).unwrap();
        // The receiver took value i before this send returned; it may not have recorded it
        // yet, but it can never be two behind.
        assert!(taken.load(Ordering::SeqCst) + 1 >= i);
    }
    receiver.join().unwrap();
}

/// Closing from the sending side: buffered values are still received, then `Closed`;
/// waiting senders get their values back.
#[test]
fn close_from_the_sender() {
    let (tx, rx) = channel::bounded(2);
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    let (c, w) = CountWaker::new();
    let mut blocked = pin!(tx.send(3));
    assert!(poll_once(blocked.as_mut(), &w).is_pending());
    assert!(tx.close());
    assert!(!rx.close(), "already closed");
    assert_eq!(c.count(), 1, "the waiting sender is woken");
    match poll_once(blocked.as_mut(), &w) {
        Poll::Ready(Err(SendError(v))) => assert_eq!(v, 3),
        _ => panic!("the waiting send should fail with its value"),
    }
    assert_eq!(tx.try_send(4), Err(TrySendError::Closed(4)));
    assert_eq!(tx.send_blocking(5), Err(SendBlockingError::Closed(5)));
    assert_eq!(rx.recv_blocking(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
}

/// Dropping every sender closes the channel for the receivers after they drained it; waiting
/// receivers are woken with `Closed`.
#[test]
fn dropping_all_senders_closes_after_draining() {
    let (tx, rx) = channel::unbounded();
    let tx2 = tx.clone();
    let (c, w) = CountWaker::new();
    let rx2 = rx.clone();
    let mut waiting = pin!(rx2.recv());
    assert!(poll_once(waiting.as_mut(), &w).is_pending());
    tx.try_send(7).unwrap(); // handed to the waiting receiver
    assert!(matches!(
        poll_once(waiting.as_mut(), &w),
        Poll::Ready(Ok(7))
    ));
    let mut waiting = pin!(rx2.recv());
    assert!(poll_once(waiting.as_mut(), &w).is_pending());
    tx2.try_send(8).unwrap();
    tx2.try_send(9).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "one sender is left");
    drop(tx2);
    assert!(rx.is_closed());
    assert!(matches!(
        poll_once(waiting.as_mut(), &w),
        Poll::Ready(Ok(8))
    ));
    assert_eq!(rx.try_recv(), Ok(9));
    let mut after = pin!(rx.recv());
    assert!(matches!(
        poll_once(after.as_mut(), &w),
        Poll::Ready(Err(RecvError::Closed))
    ));
    assert!(c.count() >= 1);
}

/// Dropping every receiver makes sends fail with their values, wakes waiting senders, and
/// drops what was buffered.
#[test]
fn dropping_all_receivers_fails_sends_and_drops_the_buffer() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = channel::bounded(1);
    tx.try_send(Counted(drops.clone())).ok().unwrap();
    let (c, w) = CountWaker::new();
    let mut blocked = pin!(tx.send(Counted(drops.clone())));
    assert!(poll_once(blocked.as_mut(), &w).is_pending());
    let rx2 = rx.clone();
    drop(rx);
    assert!(!tx.is_closed());
    drop(rx2);
    assert!(tx.is_closed());
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the buffered value is dropped"
    );
    assert_eq!(c.count(), 1);
    match poll_once(blocked.as_mut(), &w) {
        Poll::Ready(Err(SendError(v))) => drop(v),
        _ => panic!("the waiting send should fail with its value"),
    }
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    match tx.try_send(Counted(drops.clone())) {
        Err(TrySendError::Closed(v)) => drop(v),
        _ => panic!("sending to a channel without receivers must fail"),
    }
}

/// A receive that was handed a value but dropped before it returned it passes the value on:
/// to the next waiting receiver, or back to the front of the buffer.
#[test]
fn a_dropped_receive_passes_its_value_on() {
    let (tx, rx) = channel::bounded(1);
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (w0, w1) = (LogWaker::waker(0, &log), LogWaker::waker(1, &log));
    let mut first = Box::pin(rx.recv());
    let mut second = Box::pin(rx.recv());
    assert!(poll_once(first.as_mut(), &w0).is_pending());
    assert!(poll_once(second.as_mut(), &w1).is_pending());
    tx.try_send(10).unwrap(); // handed to `first`
    drop(first); // ... which gives it to `second`
    assert_eq!(*log.lock().unwrap(), [0, 1]);
    assert!(matches!(
        poll_once(second.as_mut(), &w1),
        Poll::Ready(Ok(10))
    ));
    // Nobody else waiting: it goes back to the front of the buffer, ahead of later values.
    let mut third = Box::pin(rx.recv());
    assert!(poll_once(third.as_mut(), &w0).is_pending());
    tx.try_send(20).unwrap();
    drop(third);
    tx.try_send(21).unwrap_err(); // the buffer (capacity 1) holds 20 again
    assert_eq!(rx.try_recv(), Ok(20));
    assert_eq!(rx.len(), 0);
}

/// A send dropped while queued is not sent; one dropped after its value was taken was sent.
#[test]
fn a_dropped_send_is_all_or_nothing() {
    let (tx, rx) = channel::bounded(0);
    let (_c, w) = CountWaker::new();
    {
        let mut s = pin!(tx.send(1));
        assert!(poll_once(s.as_mut(), &w).is_pending());
    }
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "a dropped send is not sent"
    );
    {
        let mut s = pin!(tx.send(2));
        assert!(poll_once(s.as_mut(), &w).is_pending());
        assert_eq!(rx.try_recv(), Ok(2));
    } // dropped after the hand-off: sent
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// Waiting receivers are served in arrival order.
#[test]
fn receivers_are_served_in_fifo_order() {
    let (tx, rx) = channel::unbounded();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut futs: Vec<_> = (0..5).map(|_| Box::pin(rx.recv())).collect();
    let wakers: Vec<_> = (0..5).map(|i| LogWaker::waker(i, &log)).collect();
    for (f, w) in futs.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    for v in 0..5 {
        tx.try_send(v * 10).unwrap();
    }
    assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
    for (i, (f, w)) in futs.iter_mut().zip(&wakers).enumerate() {
        assert!(matches!(poll_once(f.as_mut(), w), Poll::Ready(Ok(v)) if v == i * 10));
    }
}

/// Blocking sends and receives inside tasks on a one-worker runtime do not deadlock: a
/// producer task blocked on a full rendezvous channel and a consumer task blocked on an empty
/// one both make progress.
#[test]
fn blocking_calls_in_tasks_on_one_worker() {
    let rt = rt(1);
    let (tx, rx) = channel::bounded::<u32>(0);
    let consumer = rt.spawn_fn(move || rx.iter().sum::<u32>());
    let producer = rt.spawn_fn(move || {
        for i in 1..=50 {
            tx.send_blocking(i).unwrap();
        }
    });
    get_ok(producer);
    assert_eq!(get_ok(consumer), 1275);
}

/// The iterators: `iter` blocks until closed, `try_iter` takes what is there, `for v in rx`.
#[test]
fn iterators() {
    let (tx, rx) = channel::unbounded();
    for i in 0..5 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.try_iter().take(2).collect::<Vec<_>>(), [0, 1]);
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1));
        tx.send_blocking(5).unwrap();
    });
    let rest: Vec<_> = rx.into_iter().collect();
    assert_eq!(rest, [2, 3, 4, 5]);
    sender.join().unwrap();
}

/// Errors hand values back and convert into failures.
#[test]
fn errors_hand_values_back_and_convert() {
    let (tx, rx) = channel::bounded(1);
    tx.try_send(String::from("a")).unwrap();
    let e = tx.try_send(String::from("b")).unwrap_err();
    assert!(e.is_full());
    assert_eq!(e.into_inner(), "b");
    drop(rx);
    let e = ito::block_on(tx.send(String::from("c"))).unwrap_err();
    assert_eq!(e.0, "c");
    let f = ito::Failure::from(e);
    assert_eq!(f.downcast_ref::<SendError<()>>(), Some(&SendError(())));
    assert_eq!(
        ito::Failure::from(RecvError::Cancelled),
        ito::Failure::Cancelled
    );
    assert_eq!(format!("{:?}", TrySendError::Full(vec![1])), "Full(..)");
}

/// Many values through a capacity-1 channel between two tasks: every one arrives, in order.
#[test]
fn ping_pong_in_order() {
    let rt = rt(2);
    let (tx, rx) = channel::bounded(1);
    let producer = rt.spawn(async move {
        for i in 0..10_000u32 {
            tx.send(i).await.unwrap();
        }
    });
    let consumer = rt.spawn(async move {
        let mut expect = 0;
        while let Ok(v) = rx.recv().await {
            assert_eq!(v, expect);
            expect += 1;
        }
        expect
    });
    get_ok(producer);
    assert_eq!(get_ok(consumer), 10_000);
}
