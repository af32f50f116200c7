//! `ito::sync::broadcast`: every receiver gets every value, a lagging receiver is told how
//! many it missed, senders never wait, closing, and a stress run counting every value once
//! per receiver.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ito::sync::broadcast::{self, RecvError, TryRecvError};
use support::{CountWaker, get_ok, poll_once, rt};

/// A receiver that falls behind a ring of 4 by 6 values is told it missed 6, then reads the
/// 4 values still held, in order; a receiver that kept up missed nothing.
#[test]
fn a_lagging_receiver_is_told_how_many_it_missed() {
    let (tx, mut slow) = broadcast::channel(4);
    let mut fast = tx.subscribe();
    for i in 0..10 {
        assert_eq!(tx.send(i), Ok(2), "sends never wait, even into a full ring");
        assert_eq!(fast.try_recv(), Ok(i));
    }
    assert_eq!(slow.len(), 4);
    assert_eq!(ito::block_on(slow.recv()), Err(RecvError::Lagged(6)));
    for i in 6..10 {
        assert_eq!(slow.recv_blocking(), Ok(i));
    }
    assert_eq!(slow.try_recv(), Err(TryRecvError::Empty));
    drop(tx);
    assert_eq!(slow.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(fast.recv_blocking(), Err(RecvError::Closed));
}

/// Receivers get what was sent before the last sender went, then `Closed`; waiting
/// receivers are woken by the close; sends without receivers hand the value back.
#[test]
fn close_and_no_receivers() {
    let (tx, mut rx) = broadcast::channel(2);
    let (c, w) = CountWaker::new();
    let mut waiting = Box::pin(rx.recv());
    assert!(poll_once(waiting.as_mut(), &w).is_pending());
    let tx2 = tx.clone();
    tx.send(1).unwrap();
    assert_eq!(c.count(), 1);
    assert!(matches!(
        poll_once(waiting.as_mut(), &w),
        std::task::Poll::Ready(Ok(1))
    ));
    drop(waiting);
    let mut waiting = Box::pin(rx.recv());
    assert!(poll_once(waiting.as_mut(), &w).is_pending());
    drop(tx);
    assert_eq!(c.count(), 1, "a sender is left");
    drop(tx2);
    assert_eq!(c.count(), 2, "the close wakes waiting receivers");
    assert!(matches!(
        poll_once(waiting.as_mut(), &w),
        std::task::Poll::Ready(Err(RecvError::Closed))
    ));
    drop(waiting);
    drop(rx);
    let (tx, rx) = broadcast::channel(1);
    drop(rx);
    assert_eq!(tx.send(String::from("x")).unwrap_err().0, "x");
}

/// A receive dropped while it waits leaves nothing behind: the value goes to a later receive.
#[test]
fn a_dropped_receive_loses_nothing() {
    let (tx, mut rx) = broadcast::channel(2);
    let (_, w) = CountWaker::new();
    {
        let mut recv = Box::pin(rx.recv());
        assert!(poll_once(recv.as_mut(), &w).is_pending());
    }
    tx.send(9).unwrap();
    assert_eq!(rx.try_recv(), Ok(9));
}

/// Values the only receiver will never read are dropped when it goes.
#[test]
fn values_are_dropped_with_the_last_receiver() {
    let value = Arc::new(());
    let (tx, rx) = broadcast::channel(4);
    tx.send(value.clone()).unwrap();
    tx.send(value.clone()).unwrap();
    assert_eq!(Arc::strong_count(&value), 3);
    drop(rx);
    assert_eq!(Arc::strong_count(&value), 1);
}

/// Four senders and eight receiving tasks on a four-worker runtime, with a ring large enough
/// that nobody lags: every receiver gets every value exactly once, each sender's values in
/// order.
#[test]
fn stress_every_receiver_gets_every_value_once() {
    const SENDERS: usize = 4;
    const PER_SENDER: usize = 500;
    const RECEIVERS: usize = 8;
    let rt = rt(4);
    let (tx, rx) = broadcast::channel::<(usize, usize)>(SENDERS * PER_SENDER);
    let received = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..RECEIVERS)
        .map(|_| {
            let mut rx = rx.resubscribe();
            let received = received.clone();
            rt.spawn(async move {
                let mut next = [0usize; SENDERS];
                loop {
                    match rx.recv().await {
                        Ok((s, i)) => {
                            assert_eq!(i, next[s], "sender {s}'s values out of order");
                            next[s] += 1;
                            received.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(RecvError::Closed) => return next,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    drop(rx);
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let tx = tx.clone();
            rt.spawn_fn(move || {
                for i in 0..PER_SENDER {
                    tx.send((s, i)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for s in senders {
        get_ok(s);
    }
    for r in readers {
        assert_eq!(get_ok(r), [PER_SENDER; SENDERS]);
    }
    assert_eq!(
        received.load(Ordering::SeqCst),
        RECEIVERS * SENDERS * PER_SENDER
    );
}

/// A slow reader on a small ring under a fast sender: what it reads plus what it was told it
/// missed is exactly what was sent, in order.
#[test]
fn stress_lagged_counts_add_up() {
    const SENT: u64 = 20_000;
    let (tx, mut rx) = broadcast::channel::<u64>(8);
    let reader = std::thread::spawn(move || {
        let (mut read, mut missed, mut expect) = (0u64, 0u64, 0u64);
        loop {
            match rx.recv_blocking() {
                Ok(v) => {
                    assert_eq!(v, expect, "values out of order");
                    read += 1;
                    expect += 1;
                }
                Err(RecvError::Lagged(n)) => {
                    missed += n;
                    expect += n;
                }
                Err(RecvError::Closed) => return (read, missed),
                Err(e) => panic!("unexpected {e}"),
            }
        }
    });
    for v in 0..SENT {
        tx.send(v).unwrap();
    }
    drop(tx);
    let (read, missed) = reader.join().unwrap();
    assert_eq!(read + missed, SENT);
}
