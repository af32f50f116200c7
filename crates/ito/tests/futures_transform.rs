//! Integration tests for the `Future` combinators that see the whole result (`transform`,
//! `transform_with`, `and_then`, `failure`), `with_timeout` and `flatten`, on success, on
//! failure and with panicking closures, registered both before and after the source completes.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ito::{Failure, Future, Promise};

mod support;
use support::derive::{MODES, check, derive_in, panic_failure};
use support::{LONG, get, quiet_expected_panics};

// ---------------------------------------------------------------------------------------------
// transform, transform_with, and_then, failure
// ---------------------------------------------------------------------------------------------

#[test]
fn transform_success_failure_panic() {
    check(Ok(1), |f| f.transform(|r| r.map(|x| x + 1)), Ok(2));
    check(
        Ok(1),
        |f| f.transform(|_| Err::<i32, _>(Failure::msg("turned"))),
        Err(Failure::msg("turned")),
    );
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.transform(|r| r.or_else(|e| if e == Failure::Timeout { Ok(0) } else { Err(e) })),
        Ok(0),
    );
    check(
        Err::<i32, _>(Failure::Cancelled),
        |f| f.transform(|r| r.or_else(|e| if e == Failure::Timeout { Ok(0) } else { Err(e) })),
        Err(Failure::Cancelled),
    );
    check(
        Ok(1),
        |f| f.transform(|_| -> Result<i32, Failure> { panic!("expected: transform") }),
        Err(panic_failure("expected: transform")),
    );
}

#[test]
fn transform_with_success_failure_panic() {
    check(
        Ok(1),
        |f| f.transform_with(|r| Future::successful(r.is_ok())),
        Ok(true),
    );
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.transform_with(|r| Future::successful(r.is_ok())),
        Ok(false),
    );
    check(
        Ok(1),
        |f| f.transform_with(|r| ito::spawn_fn(move || r.map(|x| x * 3).unwrap_or(0)).shared()),
        Ok(3),
    );
    check(
        Ok(1),
        |f| f.transform_with(|_| Future::<u8>::failed(Failure::msg("inner"))),
        Err(Failure::msg("inner")),
    );
    check(
        Ok(1),
        |f| f.transform_with(|_| -> Future<u8> { panic!("expected: transform_with") }),
        Err(panic_failure("expected: transform_with")),
    );
}

#[test]
fn and_then_passes_result_through_and_ignores_panics() {
    check(Ok(1), |f| f.and_then(|_| {}), Ok(1));
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.and_then(|_| {}),
        Err(Failure::Timeout),
    );
    check(
        Ok(1),
        |f| f.and_then(|_| panic!("expected: and_then")),
        Ok(1),
    );
    check(
        Err::<i32, _>(Failure::Cancelled),
        |f| f.and_then(|_| panic!("expected: and_then")),
        Err(Failure::Cancelled),
    );
    // The side effect sees the result and has run by the time the derived future completes.
    for mode in MODES {
        let seen = Arc::new(Mutex::new(None));
        let s2 = seen.clone();
        let r = derive_in(mode, Ok(5), &move |f: &Future<i32>| {
            let s3 = s2.clone();
            f.and_then(move |r| *s3.lock().unwrap() = Some(r.clone()))
        });
        assert_eq!(r, Ok(5));
        assert_eq!(*seen.lock().unwrap(), Some(Ok(5)), "mode {mode:?}");
    }
}

#[test]
fn and_then_chains_run_in_order() {
    for mode in MODES {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = derive_in(mode, Ok(0), &move |f: &Future<i32>| {
            let mut cur = f.clone();
            for i in 0..20 {
                let l = l.clone();
                cur = cur.and_then(move |_| l.lock().unwrap().push(i));
            }
            cur
        });
        assert_eq!(r, Ok(0));
        assert_eq!(
            *log.lock().unwrap(),
            (0..20).collect::<Vec<_>>(),
            "mode {mode:?}"
        );
    }
    // A panicking step in the middle does not stop the chain.
    quiet_expected_panics();
    let log = Arc::new(Mutex::new(Vec::new()));
    let p = Promise::new();
    let (l1, l2) = (log.clone(), log.clone());
    let end = p
        .future()
        .and_then(move |_| l1.lock().unwrap().push(1))
        .and_then(|_| panic!("expected: and_then in a chain"))
        .and_then(move |_| l2.lock().unwrap().push(3));
    p.success('x').unwrap();
    assert_eq!(get(&end), Ok('x'));
    assert_eq!(*log.lock().unwrap(), vec![1, 3]);
}

#[test]
fn failure_projection() {
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.failure(),
        Ok(Failure::Timeout),
    );
    check(
        Err::<i32, _>(Failure::msg("why")),
        |f| f.failure(),
        Ok(Failure::msg("why")),
    );
    check(Ok(1), |f| f.failure(), Err(Failure::NoSuchElement));
}

// ---------------------------------------------------------------------------------------------
// with_timeout, flatten
// ---------------------------------------------------------------------------------------------

#[test]
fn with_timeout_passes_results_within_time() {
    check(Ok(1), |f| f.with_timeout(LONG), Ok(1));
    check(
        Err::<i32, _>(Failure::Cancelled),
        |f| f.with_timeout(LONG),
        Err(Failure::Cancelled),
    );
}

#[test]
fn with_timeout_times_out() {
    let t = Instant::now();
    let f = Future::<u8>::never().with_timeout(Duration::from_millis(10));
    assert_eq!(get(&f), Err(Failure::Timeout));
    assert!(t.elapsed() >= Duration::from_millis(10));

    // A promise that is completed only after the timeout fired: the timeout stands.
    let p = Promise::new();
    let f = p.future().with_timeout(Duration::from_millis(2));
    assert_eq!(get(&f), Err(Failure::Timeout));
    p.success(1).unwrap();
    assert_eq!(get(&f), Err(Failure::Timeout));
    assert_eq!(p.future().wait(), Ok(1));
}

#[test]
fn with_timeout_on_dropped_never_still_times_out() {
    let never = Future::<u8>::never();
    let f = never.with_timeout(Duration::from_millis(5));
    drop(never);
    assert_eq!(get(&f), Err(Failure::Timeout));
}

#[test]
fn with_timeout_cancelled_timer_does_not_fire_later() {
    let p = Promise::new();
    let f = p.future().with_timeout(Duration::from_millis(20));
    p.success(3).unwrap();
    assert_eq!(get(&f), Ok(3));
    thread::sleep(Duration::from_millis(30));
    assert_eq!(f.value(), Some(Ok(3)));
}

#[test]
fn flatten_success_and_failure() {
    check(Ok(Future::successful(9)), |f| f.flatten(), Ok(9));
    check(
        Ok(Future::<i32>::failed(Failure::msg("inner"))),
        |f| f.flatten(),
        Err(Failure::msg("inner")),
    );
    check(
        Err::<Future<i32>, _>(Failure::msg("outer")),
        |f| f.flatten(),
        Err(Failure::msg("outer")),
    );
    let nested = ito::spawn_fn(|| ito::spawn_fn(|| 9).shared()).shared();
    assert_eq!(get(&nested.flatten()), Ok(9));
    // The inner future completes after the outer one.
    let inner = Promise::new();
    let outer = Promise::new();
    let flat = outer.future().flatten();
    outer.success(inner.future()).unwrap();
    assert_eq!(flat.wait_timeout(Duration::from_millis(5)), None);
    let h = thread::spawn(move || inner.success("late").unwrap());
    assert_eq!(get(&flat), Ok("late"));
    h.join().unwrap();
}
