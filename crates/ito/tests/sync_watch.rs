//! `ito::sync::watch`: many readers of the latest value, `changed` waking every reader once
//! per change it has not seen, closing.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ito::channel::RecvError;
use ito::sync::watch;
use support::{CountWaker, get_ok, poll_once, rt};

/// Every waiting reader is woken by a send; a reader that did not mark the value seen sees
/// it as changed; several sends before a reader looks are one change to it.
#[test]
fn changed_wakes_every_reader() {
    let (tx, rx) = watch::channel(0);
    let mut readers: Vec<_> = (0..5).map(|_| rx.clone()).collect();
    let wakers: Vec<_> = (0..5).map(|_| CountWaker::new()).collect();
    let mut waits: Vec<_> = readers.iter_mut().map(|r| Box::pin(r.changed())).collect();
    for (f, (_, w)) in waits.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_pending());
    }
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert!(wakers.iter().all(|(c, _)| c.count() == 1));
    for (f, (_, w)) in waits.iter_mut().zip(&wakers) {
        assert!(poll_once(f.as_mut(), w).is_ready());
    }
    drop(waits);
    for r in &mut readers {
        assert_eq!(*r.borrow(), 2);
        assert_eq!(r.has_changed(), Ok(false));
    }
    assert_eq!(
        rx.has_changed(),
        Ok(true),
        "the original never marked it seen"
    );
}

/// After the sender is gone, `changed` returns the last unseen change, then `Closed`.
#[test]
fn close() {
    let (tx, mut rx) = watch::channel("a");
    tx.send("b").unwrap();
    drop(tx);
    assert_eq!(rx.changed_blocking(), Ok(()));
    assert_eq!(*rx.borrow(), "b");
    assert_eq!(ito::block_on(rx.changed()), Err(RecvError::Closed));
    let (tx, rx) = watch::channel(1);
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(2).unwrap_err().0, 2);
    assert_eq!(
        tx.send_replace(3),
        1,
        "send_replace works without receivers"
    );
}

/// A dropped `changed` leaves nothing queued; the change is still seen later.
#[test]
fn a_dropped_changed_loses_nothing() {
    let (tx, mut rx) = watch::channel(0);
    let (_, w) = CountWaker::new();
    {
        let mut c = Box::pin(rx.changed());
        assert!(poll_once(c.as_mut(), &w).is_pending());
    }
    tx.send(1).unwrap();
    assert_eq!(rx.has_changed(), Ok(true));
}

/// Sixteen reader tasks follow a counter that a thread raises 1,000 times: each reader sees
/// a value that only grows, never misses the last value, and ends when the sender is gone.
#[test]
fn many_readers_follow_the_latest_value() {
    const READERS: usize = 16;
    const LAST: u64 = 1_000;
    let rt = rt(4);
    let (tx, rx) = watch::channel(0u64);
    let finished = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let mut rx = rx.clone();
            let finished = finished.clone();
            rt.spawn(async move {
                let mut last = 0;
                let mut changes = 0u64;
                while rx.changed().await.is_ok() {
                    let v = *rx.borrow_and_update();
                    assert!(v >= last, "went back from {last} to {v}");
                    last = v;
                    changes += 1;
                }
                finished.fetch_add(1, Ordering::SeqCst);
                (last, changes)
            })
        })
        .collect();
    drop(rx);
    for v in 1..=LAST {
        tx.send(v).unwrap();
    }
    drop(tx);
    for r in readers {
        let (last, changes) = get_ok(r);
        assert_eq!(last, LAST, "a reader missed the last value");
        assert!((1..=LAST).contains(&changes));
    }
    assert_eq!(finished.load(Ordering::SeqCst), READERS);
}
