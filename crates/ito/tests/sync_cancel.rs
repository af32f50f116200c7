//! Cancelling tasks that wait in `ito::sync` and `ito::channel`: blocking calls return their
//! `Cancelled` errors (a blocking send hands its value back), async waits are dropped, queued
//! pool tasks leave the queue, and nothing is lost: no permit, no slot, no value.

mod support;

use std::sync::Arc;
use std::sync::mpsc;

use ito::channel::{self, RecvError, SendBlockingError, TryRecvError, TrySendError};
use ito::sync::{
    AcquireError, Cancelled, Mutex, Notify, Pool, Semaphore, broadcast, oneshot, watch,
};
use support::{CountWaker, LONG, get_ok, poll_once, rt};

/// Runs `body` as a synchronous task that reports its result on a channel, waits until it has
/// started, cancels it, and returns what it reported.
fn cancel_blocked<T: Send + 'static>(
    rt: &ito::Runtime,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (started, is_started) = mpsc::channel();
    let (report, reported) = mpsc::channel();
    let task = rt.spawn_fn(move || {
        started.send(()).unwrap();
        report.send(body()).unwrap();
    });
    is_started.recv_timeout(LONG).unwrap();
    assert!(task.abort());
    reported
        .recv_timeout(LONG)
        .expect("the blocked call returned")
}

/// Cancels `task` and waits until it has completed as cancelled.
fn cancel_and_confirm<T>(mut task: ito::Task<T>) {
    assert!(task.abort());
    assert!(matches!(
        task.wait_timeout(LONG).unwrap(),
        Err(ito::Failure::Cancelled)
    ));
}

#[test]
fn cancelled_acquire_blocking_leaves_the_queue() {
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(0));
    let s = sem.clone();
    let r = cancel_blocked(&rt, move || s.acquire_blocking().map(|p| p.forget()));
    assert_eq!(r, Err(AcquireError::Cancelled));
    sem.add_permits(1);
    assert_eq!(
        sem.available_permits(),
        1,
        "the permit went to a cancelled waiter"
    );
    assert!(sem.try_acquire().is_ok());
}

#[test]
fn cancelled_recv_blocking_leaves_the_queue() {
    let rt = rt(2);
    let (tx, rx) = channel::bounded::<u32>(0);
    let r = cancel_blocked(&rt, move || rx.recv_blocking());
    assert_eq!(r, Err(RecvError::Cancelled));
    // The receiver is gone (the task dropped it), so the channel is closed; the value comes
    // back rather than vanishing into a cancelled receive.
    assert_eq!(tx.try_send(1), Err(TrySendError::Closed(1)));
}

#[test]
fn cancelled_recv_blocking_passes_nothing_on_to_a_dead_receiver() {
    let rt = rt(2);
    let (tx, rx) = channel::unbounded::<u32>();
    let rx2 = rx.clone();
    let r = cancel_blocked(&rt, move || rx2.recv_blocking());
    assert_eq!(r, Err(RecvError::Cancelled));
    tx.try_send(7).unwrap();
    assert_eq!(rx.try_recv(), Ok(7), "the value reached the live receiver");
}

#[test]
fn cancelled_send_blocking_hands_the_value_back() {
    let rt = rt(2);
    let (tx, rx) = channel::bounded::<String>(0);
    let r = cancel_blocked(&rt, move || tx.send_blocking(String::from("kept")));
    assert_eq!(r, Err(SendBlockingError::Cancelled(String::from("kept"))));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "nothing was sent");
}

/// The blocking waits of `Notify`, `broadcast`, `watch` and `oneshot` return their
/// `Cancelled` errors and leave nothing behind: a later `notify_one` is kept for the next
/// waiter, the cancelled receivers are gone (a broadcast value reaches the live receiver, the
/// watch is closed, a oneshot send hands its value back).
#[test]
fn cancelled_notify_broadcast_watch_oneshot_waits() {
    let rt = rt(2);
    let notify = Arc::new(Notify::new());
    let n = notify.clone();
    let r = cancel_blocked(&rt, move || n.notified_blocking());
    assert_eq!(r, Err(Cancelled));
    assert_eq!(notify.waiting(), 0, "the cancelled waiter left the queue");
    notify.notify_one();
    let (_, w) = CountWaker::new();
    let mut next = Box::pin(notify.notified());
    assert!(
        poll_once(next.as_mut(), &w).is_ready(),
        "the notification was kept"
    );

    let (tx, rx) = broadcast::channel::<u8>(1);
    let mut live = tx.subscribe();
    let r = cancel_blocked(&rt, move || {
        let mut rx = rx;
        rx.recv_blocking()
    });
    assert_eq!(r, Err(broadcast::RecvError::Cancelled));
    assert_eq!(tx.send(3), Ok(1), "the cancelled receiver was dropped");
    assert_eq!(live.try_recv(), Ok(3));

    let (tx, rx) = watch::channel(0);
    let r = cancel_blocked(&rt, move || {
        let mut rx = rx;
        rx.changed_blocking()
    });
    assert_eq!(r, Err(RecvError::Cancelled));
    assert!(tx.is_closed());

    let (tx, rx) = oneshot::channel::<u8>();
    let r = cancel_blocked(&rt, move || rx.recv_blocking());
    assert_eq!(r, Err(RecvError::Cancelled));
    assert_eq!(tx.send(1).unwrap_err().0, 1, "the value comes back");
}

#[test]
fn cancelled_lock_blocking() {
    let rt = rt(2);
    let m = Arc::new(Mutex::new(0));
    let held = m.try_lock().unwrap();
    let m2 = m.clone();
    let r = cancel_blocked(&rt, move || m2.lock_blocking().map(|mut g| *g += 1));
    assert_eq!(r, Err(Cancelled));
    drop(held);
    assert_eq!(*m.try_lock().expect("the lock is free again"), 0);
}

/// An async task waiting for permits is dropped at its suspension point: its waiter leaves
/// the queue, and a release goes to the count (or the next waiter), not to the dead task.
#[test]
fn cancelled_async_acquire_leaves_the_queue() {
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(0));
    let (queued, is_queued) = mpsc::channel();
    let s = sem.clone();
    let task = rt.spawn(async move {
        let acquire = s.acquire();
        queued.send(()).unwrap();
        acquire.await.is_ok()
    });
    is_queued.recv_timeout(LONG).unwrap();
    cancel_and_confirm(task);
    let s = sem.clone();
    let next = rt.spawn(async move { s.acquire().await.map(|p| p.forget()).is_ok() });
    sem.add_permits(1);
    assert!(get_ok(next), "the permit reached the live waiter");
    assert_eq!(sem.available_permits(), 0);
}

/// A queued pool task that is cancelled before it starts leaves the queue without taking a
/// slot; the tasks behind it run.
#[test]
fn cancelled_queued_pool_task_leaves_the_queue() {
    let rt = rt(2);
    let pool = Pool::new(1);
    let gate = ito::Promise::<()>::new();
    let g = gate.future();
    let (first, queued) = rt.block_on(async {
        let first = pool.spawn(async move { g.await.unwrap() });
        let queued = pool.spawn(async { "never" });
        (first, queued)
    });
    assert_eq!(pool.queued(), 1);
    cancel_and_confirm(queued);
    assert_eq!(pool.queued(), 0);
    let after = rt.install(|| pool.spawn(async { "ran" }));
    gate.success(()).unwrap();
    get_ok(first);
    assert_eq!(get_ok(after), "ran");
    assert_eq!(pool.running(), 0);
}

/// A running pool task that is cancelled gives its slot back.
#[test]
fn cancelled_running_pool_task_frees_its_slot() {
    let rt = rt(2);
    let pool = Pool::new(1);
    let (started, is_started) = mpsc::channel();
    let running = rt.install(|| {
        pool.spawn(async move {
            started.send(()).unwrap();
            ito::Future::<()>::never().await.unwrap();
        })
    });
    is_started.recv_timeout(LONG).unwrap();
    cancel_and_confirm(running);
    let next = rt.install(|| pool.spawn(async { 5 }));
    assert_eq!(get_ok(next), 5);
}
