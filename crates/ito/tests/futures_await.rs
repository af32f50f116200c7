//! Integration tests for `.await` on an ito `Future`: owned and borrowed, completed from
//! another thread, dropped while pending, and the waker that gets woken.

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use ito::{Failure, Future, Promise};

mod support;
use support::get;

// ---------------------------------------------------------------------------------------------
// .await
// ---------------------------------------------------------------------------------------------

#[test]
fn await_owned_and_borrowed() {
    let f = Future::successful(1);
    assert_eq!(ito::block_on(&f), Ok(1));
    assert_eq!(ito::block_on(f.clone()), Ok(1));
    assert_eq!(ito::block_on(async { (&f).await }), Ok(1));
    assert_eq!(ito::block_on(async { f.clone().await }), Ok(1));
    let g = Future::<u8>::failed(Failure::Timeout);
    assert_eq!(ito::block_on(async { (&g).await }), Err(Failure::Timeout));
    assert_eq!(ito::block_on(async move { g.await }), Err(Failure::Timeout));
    let sum = ito::block_on(async {
        let a = ito::spawn_fn(|| 20);
        let b = ito::spawn(async { 22 });
        a.await.unwrap() + b.await.unwrap()
    });
    assert_eq!(sum, 42);
}

#[test]
fn await_a_future_completed_later_from_another_thread() {
    for round in 0..50 {
        let p = Promise::new();
        let f = p.future();
        let h = thread::spawn(move || {
            if round % 2 == 0 {
                thread::sleep(Duration::from_millis(1));
            }
            p.success(round).unwrap();
        });
        let r = if round % 4 < 2 {
            ito::block_on(async { (&f).await })
        } else {
            ito::block_on(f.clone().into_future())
        };
        assert_eq!(r, Ok(round));
        h.join().unwrap();
    }
    // Inside a task, too.
    let p = Promise::new();
    let f = p.future();
    let t = ito::spawn(async move { f.await.map(|x: i32| x * 2) });
    thread::sleep(Duration::from_millis(2));
    p.success(21).unwrap();
    assert_eq!(get(t), Ok(Ok(42)));
}

#[test]
fn dropping_a_pending_await_is_safe() {
    // By value.
    let p = Promise::<u32>::new();
    let r = ito::block_on(ito::timeout(Duration::from_millis(5), p.future()));
    assert_eq!(r, Err(Failure::Timeout));
    p.success(1).unwrap();
    assert_eq!(p.future().wait(), Ok(1));

    // By reference, then the same future awaited again.
    let p = Promise::<u32>::new();
    let f = p.future();
    let r = ito::block_on(ito::timeout(Duration::from_millis(5), &f));
    assert_eq!(r, Err(Failure::Timeout));
    let h = thread::spawn(move || {
        thread::sleep(Duration::from_millis(2));
        p.success(2).unwrap();
    });
    assert_eq!(ito::block_on(async { (&f).await }), Ok(2));
    h.join().unwrap();

    // A never-future, dropped after the await gave up.
    let never = Future::<u8>::never();
    let r = ito::block_on(ito::timeout(Duration::from_millis(2), &never));
    assert_eq!(r, Err(Failure::Timeout));
    drop(never);

    // Several pending awaits on one cell, dropped in between other registrations.
    let p = Promise::<u32>::new();
    let f = p.future();
    for _ in 0..5 {
        assert_eq!(
            ito::block_on(ito::timeout(Duration::from_millis(1), &f)),
            Err(Failure::Timeout)
        );
        f.on_complete(|_| {});
    }
    let m = f.map(|x| x + 1);
    p.success(3).unwrap();
    assert_eq!(get(&m), Ok(4));
}

#[test]
fn await_gives_up_while_the_promise_completes() {
    // The timeout and the completion race: either outcome is fine, nothing may crash or hang.
    for round in 0..300u32 {
        let p = Promise::new();
        let f = p.future();
        let h = thread::spawn(move || {
            for _ in 0..(round % 7) * 50 {
                std::hint::spin_loop();
            }
            p.success(round).unwrap();
        });
        let r = ito::block_on(ito::timeout(
            Duration::from_micros(u64::from(round % 5) * 20),
            &f,
        ));
        match r {
            Ok(v) => assert_eq!(v, Ok(round)),
            Err(e) => assert_eq!(e, Failure::Timeout),
        }
        h.join().unwrap();
        assert_eq!(get(&f), Ok(round));
    }
}

/// A waker that counts its wake-ups.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn await_wakes_the_latest_waker() {
    use std::task::{Context, Poll, Waker};
    let (a, b) = (
        Arc::new(CountingWaker(AtomicUsize::new(0))),
        Arc::new(CountingWaker(AtomicUsize::new(0))),
    );
    let (wa, wb) = (Waker::from(a.clone()), Waker::from(b.clone()));
    for by_ref in [false, true] {
        b.0.store(0, Ordering::SeqCst);
        let p = Promise::new();
        let f = p.future();
        let r = {
            let mut owned = std::pin::pin!(f.clone().into_future());
            let mut borrowed = std::pin::pin!((&f).into_future());
            let mut poll = |cx: &mut Context<'_>| {
                if by_ref {
                    std::future::Future::poll(borrowed.as_mut(), cx)
                } else {
                    std::future::Future::poll(owned.as_mut(), cx)
                }
            };
            assert_eq!(poll(&mut Context::from_waker(&wa)), Poll::Pending);
            assert_eq!(poll(&mut Context::from_waker(&wb)), Poll::Pending);
            assert_eq!(poll(&mut Context::from_waker(&wb)), Poll::Pending);
            let h = thread::spawn(move || p.success(5).unwrap());
            h.join().unwrap();
            assert_eq!(b.0.load(Ordering::SeqCst), 1, "by_ref {by_ref}");
            poll(&mut Context::from_waker(&wb))
        };
        assert_eq!(r, Poll::Ready(Ok(5)));
    }
}

#[test]
fn polled_then_dropped_awaits_leave_the_cell_usable() {
    use std::task::{Context, Poll, Waker};
    let w = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
    let p = Promise::new();
    let f = p.future();
    for _ in 0..10 {
        let mut fut = Box::pin(f.clone().into_future());
        assert_eq!(
            std::future::Future::poll(fut.as_mut(), &mut Context::from_waker(&w)),
            Poll::Pending
        );
        drop(fut);
        let mut fut = Box::pin((&f).into_future());
        assert_eq!(
            std::future::Future::poll(fut.as_mut(), &mut Context::from_waker(&w)),
            Poll::Pending
        );
    }
    let m = f.map(|x: u8| x + 1);
    p.success(1).unwrap();
    assert_eq!(get(&m), Ok(2));
    assert_eq!(ito::block_on(async { (&f).await }), Ok(1));
}

#[test]
fn derived_futures_dropped_before_the_source_completes() {
    let p = Promise::new();
    let f = p.future();
    let hits = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let h = hits.clone();
        drop(f.map(move |x: u32| {
            h.fetch_add(1, Ordering::SeqCst);
            x
        }));
        drop(f.zip(&Future::successful(1)));
        drop(f.or_alt(&Future::never()));
    }
    drop(f);
    p.success(1).unwrap();
    // The closures still ran, although nobody holds their futures.
    assert_eq!(hits.load(Ordering::SeqCst), 10);
}
