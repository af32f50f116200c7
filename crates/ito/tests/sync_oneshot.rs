//! `ito::sync::oneshot`: the value moves to the receiver, a send to a receiver that is gone
//! hands the value back, a dropped sender breaks the receiver.

mod support;

use std::sync::Arc;

use ito::channel::{RecvError, TryRecvError};
use ito::sync::oneshot;
use support::{CountWaker, PanicWaker, get_ok, poll_once, quiet_expected_panics, rt};

/// A value that is not `Clone` moves through, to an awaiting task.
#[test]
fn the_value_moves_to_the_receiver() {
    let rt = rt(2);
    let (tx, rx) = oneshot::channel::<std::fs::File>();
    let reader = rt.spawn(async move { rx.await.map(|f| f.metadata().is_ok()) });
    tx.send(std::fs::File::open("Cargo.toml").unwrap()).unwrap();
    assert_eq!(get_ok(reader), Ok(true));
}

/// A send after the receiver is dropped (or closed) hands the value back; the receiver's
/// drop wakes a sender waiting in `closed`.
#[test]
fn send_hands_the_value_back_when_the_receiver_is_gone() {
    let value = Arc::new(5);
    let (mut tx, rx) = oneshot::channel();
    let (c, w) = CountWaker::new();
    let mut closed = Box::pin(tx.closed());
    assert!(poll_once(closed.as_mut(), &w).is_pending());
    drop(rx);
    assert_eq!(c.count(), 1);
    assert!(poll_once(closed.as_mut(), &w).is_ready());
    drop(closed);
    let back = tx.send(value.clone()).unwrap_err().0;
    assert!(Arc::ptr_eq(&back, &value));
    let (tx, mut rx) = oneshot::channel();
    rx.close();
    assert_eq!(tx.send(1).unwrap_err().0, 1);
}

/// A dropped sender wakes and fails the receiver; a sent value is dropped with the receiver.
#[test]
fn a_dropped_sender_breaks_the_receiver() {
    let (tx, rx) = oneshot::channel::<u8>();
    let (c, w) = CountWaker::new();
    let mut rx = Box::pin(rx);
    assert!(poll_once(rx.as_mut(), &w).is_pending());
    drop(tx);
    assert_eq!(c.count(), 1);
    assert!(matches!(
        poll_once(rx.as_mut(), &w),
        std::task::Poll::Ready(Err(RecvError::Closed))
    ));
    let (tx, rx) = oneshot::channel::<u8>();
    drop(tx);
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
    let value = Arc::new(());
    let (tx, rx) = oneshot::channel();
    tx.send(value.clone()).unwrap();
    drop(rx);
    assert_eq!(Arc::strong_count(&value), 1);
}

/// `try_recv`: empty, then the value, then closed; a blocking receive in a task on one
/// worker lets the sending task run.
#[test]
fn try_recv_and_recv_blocking_on_one_worker() {
    let (tx, mut rx) = oneshot::channel();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.send('x').unwrap();
    assert_eq!(rx.try_recv(), Ok('x'));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    let rt = rt(1);
    let (tx, rx) = oneshot::channel();
    let waiter = rt.spawn_fn(move || rx.recv_blocking());
    let sender = rt.spawn(async move { tx.send(3).unwrap() });
    get_ok(sender);
    assert_eq!(get_ok(waiter), Ok(3));
}

/// A panicking waker is contained: it unwinds neither out of `send` (which woke the receiver)
/// nor out of the receiver's drop (which wakes a sender waiting in `closed`).
#[test]
fn a_panicking_waker_is_contained() {
    quiet_expected_panics();
    let panicking = PanicWaker::waker();
    let (tx, rx) = oneshot::channel();
    let mut rx = Box::pin(rx);
    assert!(poll_once(rx.as_mut(), &panicking).is_pending());
    tx.send(1).unwrap();
    assert!(matches!(
        poll_once(rx.as_mut(), &panicking),
        std::task::Poll::Ready(Ok(1))
    ));
    let (mut tx, rx) = oneshot::channel::<u8>();
    let mut closed = Box::pin(tx.closed());
    assert!(poll_once(closed.as_mut(), &panicking).is_pending());
    drop(rx);
    assert!(poll_once(closed.as_mut(), &panicking).is_ready());
}
