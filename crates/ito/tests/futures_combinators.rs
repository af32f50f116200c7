//! Integration tests for the `Future` constructors and the combinators that derive one future
//! from others (`map`, `flat_map`, `filter`, `recover`, `fallback_to`, `or_alt`, `zip`), on
//! success, on failure and with panicking closures, registered both before and after the
//! source completes.

use std::panic::panic_any;
use std::thread;
use std::time::{Duration, Instant};

use ito::{Failure, Future, Promise};

mod support;
use support::derive::{check, panic_failure};
use support::get;

/// Payload of the non-string panics these tests provoke on purpose.
struct ExpectedPayload;

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

#[test]
fn successful_is_complete_with_value() {
    let f = Future::successful(5);
    assert!(f.is_completed());
    assert_eq!(f.value(), Some(Ok(5)));
    assert_eq!(f.wait(), Ok(5));
    assert_eq!(f.wait_timeout(Duration::ZERO), Some(Ok(5)));
    assert_eq!(f.clone().wait(), Ok(5));
}

#[test]
fn failed_is_complete_with_failure() {
    let f = Future::<u8>::failed(Failure::msg("down"));
    assert!(f.is_completed());
    assert_eq!(f.value(), Some(Err(Failure::msg("down"))));
    assert_eq!(f.wait(), Err(Failure::msg("down")));
    assert_eq!(
        Future::<u8>::failed(Failure::Cancelled).wait(),
        Err(Failure::Cancelled)
    );
}

#[test]
fn from_result_keeps_both_outcomes() {
    assert_eq!(Future::from_result(Ok::<_, Failure>("a")).wait(), Ok("a"));
    assert_eq!(
        Future::<&str>::from_result(Err(Failure::Timeout)).wait(),
        Err(Failure::Timeout)
    );
    assert!(Future::<u8>::from_result(Err(Failure::Timeout)).is_completed());
}

#[test]
fn never_stays_pending() {
    let f = Future::<u8>::never();
    assert!(!f.is_completed());
    assert_eq!(f.value(), None);
    let t = Instant::now();
    assert_eq!(f.wait_timeout(Duration::from_millis(10)), None);
    assert!(t.elapsed() >= Duration::from_millis(10));
    assert_eq!(f.clone().wait_timeout(Duration::ZERO), None);
    assert!(!f.is_completed());
}

#[test]
fn clones_share_one_cell() {
    let p = Promise::new();
    let a = p.future();
    let b = a.clone();
    assert!(a.ptr_eq(&b));
    assert!(a.ptr_eq(&p.future()));
    assert!(!a.ptr_eq(&Future::successful(1)));
    assert_eq!(format!("{a:?}"), "Future(<pending>)");
    p.success(1).unwrap();
    assert_eq!(b.value(), Some(Ok(1)));
    assert_eq!(format!("{a:?}"), "Future(Ok(1))");
}

// ---------------------------------------------------------------------------------------------
// map, flat_map, filter
// ---------------------------------------------------------------------------------------------

#[test]
fn map_success_failure_panic() {
    check(Ok(2), |f| f.map(|x| x * 10), Ok(20));
    check(Ok(2), |f| f.map(|x| format!("v{x}")), Ok("v2".to_string()));
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.map(|_| -> i32 { unreachable!("map must not run on a failure") }),
        Err(Failure::Timeout),
    );
    check(
        Ok(2),
        |f| f.map(|_| -> i32 { panic!("expected: map") }),
        Err(panic_failure("expected: map")),
    );
    // A formatted (String) payload keeps its message too.
    check(
        Ok(7),
        |f| f.map(|x| -> i32 { panic!("expected: map {x}") }),
        Err(panic_failure("expected: map 7")),
    );
    // A payload that is not a string still becomes a `Panic`.
    check(
        Ok(7),
        |f| f.map(|_| -> i32 { panic_any(ExpectedPayload) }),
        Err(panic_failure("panic with a non-string payload")),
    );
}

#[test]
fn flat_map_success_failure_panic() {
    check(Ok(3), |f| f.flat_map(|x| Future::successful(x + 1)), Ok(4));
    check(
        Ok(3),
        |f| f.flat_map(|x| ito::spawn_fn(move || x * 2).shared()),
        Ok(6),
    );
    check(
        Ok(3),
        |f| f.flat_map(|_| Future::<i32>::failed(Failure::msg("inner"))),
        Err(Failure::msg("inner")),
    );
    check(
        Err::<i32, _>(Failure::msg("outer")),
        |f| f.flat_map(|_| -> Future<i32> { unreachable!("flat_map must not run on a failure") }),
        Err(Failure::msg("outer")),
    );
    check(
        Ok(3),
        |f| f.flat_map(|_| -> Future<i32> { panic!("expected: flat_map") }),
        Err(panic_failure("expected: flat_map")),
    );
    // The inner future completes later, from another thread.
    check(
        Ok(3),
        |f| {
            f.flat_map(|x| {
                let p = Promise::new();
                let inner = p.future();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(1));
                    p.success(x + 100).unwrap();
                });
                inner
            })
        },
        Ok(103),
    );
}

#[test]
fn flat_map_to_a_dropped_never_breaks() {
    let f = Future::successful(1).flat_map(|_| Future::<u8>::never());
    assert_eq!(get(&f), Err(Failure::BrokenPromise));
}

#[test]
fn filter_success_failure_panic() {
    check(Ok(4), |f| f.filter(|x| x % 2 == 0), Ok(4));
    check(
        Ok(3),
        |f| f.filter(|x| x % 2 == 0),
        Err(Failure::NoSuchElement),
    );
    check(
        Err::<i32, _>(Failure::Cancelled),
        |f| f.filter(|_| unreachable!("filter must not run on a failure")),
        Err(Failure::Cancelled),
    );
    check(
        Ok(4),
        |f| f.filter(|_| panic!("expected: filter")),
        Err(panic_failure("expected: filter")),
    );
}

// ---------------------------------------------------------------------------------------------
// recover, recover_with, fallback_to, or_alt
// ---------------------------------------------------------------------------------------------

#[test]
fn recover_success_failure_panic() {
    check(
        Ok(1),
        |f| f.recover(|_| unreachable!("recover must not run on a success")),
        Ok(1),
    );
    check(
        Err(Failure::Timeout),
        |f| f.recover(|e| if e == Failure::Timeout { -1 } else { -2 }),
        Ok(-1),
    );
    check(
        Err::<i32, _>(Failure::msg("x")),
        |f| f.recover(|_| panic!("expected: recover")),
        Err(panic_failure("expected: recover")),
    );
}

#[test]
fn recover_with_success_failure_panic() {
    check(
        Ok(1),
        |f| f.recover_with(|_| unreachable!("recover_with must not run on a success")),
        Ok(1),
    );
    check(
        Err(Failure::Timeout),
        |f| f.recover_with(|_| ito::spawn_fn(|| 7).shared()),
        Ok(7),
    );
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.recover_with(|e| Future::failed(Failure::msg(format!("still {e}")))),
        Err(Failure::msg("still timed out")),
    );
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.recover_with(|_| panic!("expected: recover_with")),
        Err(panic_failure("expected: recover_with")),
    );
}

#[test]
fn fallback_to_prefers_self_then_other() {
    check(Ok(1), |f| f.fallback_to(&Future::successful(2)), Ok(1));
    // A success does not wait for the alternative.
    check(Ok(1), |f| f.fallback_to(&Future::never()), Ok(1));
    check(
        Err(Failure::msg("primary down")),
        |f| f.fallback_to(&Future::successful(2)),
        Ok(2),
    );
    check(
        Err::<i32, _>(Failure::msg("primary")),
        |f| f.fallback_to(&Future::failed(Failure::msg("secondary"))),
        Err(Failure::msg("primary")),
    );
    // The alternative completes later from another thread.
    check(
        Err(Failure::msg("primary")),
        |f| {
            let p = Promise::new();
            let other = p.future();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(1));
                p.success(9).unwrap();
            });
            f.fallback_to(&other)
        },
        Ok(9),
    );
}

#[test]
fn fallback_to_waits_for_self_even_if_other_is_done() {
    let p = Promise::new();
    let d = p.future().fallback_to(&Future::successful(2));
    assert_eq!(d.wait_timeout(Duration::from_millis(5)), None);
    p.success(1).unwrap();
    assert_eq!(get(&d), Ok(1));
}

#[test]
fn or_alt_first_success_wins() {
    check(Ok(1), |f| f.or_alt(&Future::never()), Ok(1));
    check(
        Ok(1),
        |f| f.or_alt(&Future::failed(Failure::Timeout)),
        Ok(1),
    );
    check(
        Err(Failure::Timeout),
        |f| f.or_alt(&Future::successful(2)),
        Ok(2),
    );
    check(
        Err::<i32, _>(Failure::msg("mine")),
        |f| f.or_alt(&Future::failed(Failure::msg("theirs"))),
        Err(Failure::msg("mine")),
    );
    // The other side's success does not wait for self.
    let p = Promise::new();
    let d = p.future().or_alt(&Future::successful(2));
    assert_eq!(get(&d), Ok(2));
    p.success(1).unwrap();
    assert_eq!(get(&d), Ok(2));
}

#[test]
fn or_alt_both_fail_gives_own_failure_in_either_order() {
    // Self fails first.
    let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
    let d = a.future().or_alt(&b.future());
    a.failure(Failure::msg("mine")).unwrap();
    assert_eq!(d.wait_timeout(Duration::from_millis(5)), None);
    b.failure(Failure::msg("theirs")).unwrap();
    assert_eq!(get(&d), Err(Failure::msg("mine")));

    // Other fails first.
    let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
    let d = a.future().or_alt(&b.future());
    b.failure(Failure::msg("theirs")).unwrap();
    assert_eq!(d.wait_timeout(Duration::from_millis(5)), None);
    a.failure(Failure::msg("mine")).unwrap();
    assert_eq!(get(&d), Err(Failure::msg("mine")));

    // One failure then a success from the other side.
    let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
    let d = a.future().or_alt(&b.future());
    a.failure(Failure::msg("mine")).unwrap();
    b.success(5).unwrap();
    assert_eq!(get(&d), Ok(5));
}

#[test]
fn or_alt_races_from_two_threads() {
    for i in 0..200 {
        let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
        let d = a.future().or_alt(&b.future());
        let h = thread::spawn(move || {
            a.failure(Failure::msg("mine")).unwrap();
        });
        if i % 2 == 0 {
            b.failure(Failure::msg("theirs")).unwrap();
            h.join().unwrap();
            assert_eq!(get(&d), Err(Failure::msg("mine")), "round {i}");
        } else {
            b.success(i).unwrap();
            h.join().unwrap();
            assert_eq!(get(&d), Ok(i), "round {i}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// zip, zip_with
// ---------------------------------------------------------------------------------------------

#[test]
fn zip_success_and_failure() {
    check(Ok(1), |f| f.zip(&Future::successful("one")), Ok((1, "one")));
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.zip(&Future::successful("one")),
        Err(Failure::Timeout),
    );
    check(
        Ok(1),
        |f| f.zip(&Future::<&str>::failed(Failure::msg("right"))),
        Err(Failure::msg("right")),
    );
    // A failure does not wait for the other side (kept pending: a dropped `never()` would
    // itself break the zip, see `Future::never`).
    let pending = Future::<u8>::never();
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| f.zip(&pending),
        Err(Failure::Timeout),
    );
    check(
        Ok(1),
        |f| f.zip(&Future::<u8>::failed(Failure::Cancelled)),
        Err(Failure::Cancelled),
    );
    // Both sides completed later, from two threads.
    let (a, b) = (Promise::new(), Promise::new());
    let z = a.future().zip(&b.future());
    let ha = thread::spawn(move || a.success(1).unwrap());
    let hb = thread::spawn(move || b.success('b').unwrap());
    assert_eq!(get(&z), Ok((1, 'b')));
    ha.join().unwrap();
    hb.join().unwrap();
}

#[test]
fn zip_waits_for_both_sides() {
    let (a, b) = (Promise::new(), Promise::new());
    let z = a.future().zip(&b.future());
    a.success(1).unwrap();
    assert_eq!(z.wait_timeout(Duration::from_millis(5)), None);
    b.success(2).unwrap();
    assert_eq!(get(&z), Ok((1, 2)));
}

#[test]
fn zip_first_failure_in_time_wins() {
    let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
    let z = a.future().zip(&b.future());
    b.failure(Failure::msg("b first")).unwrap();
    a.failure(Failure::msg("a second")).unwrap();
    assert_eq!(get(&z), Err(Failure::msg("b first")));

    let (a, b) = (Promise::<i32>::new(), Promise::<i32>::new());
    let z = a.future().zip(&b.future());
    a.failure(Failure::msg("a first")).unwrap();
    b.failure(Failure::msg("b second")).unwrap();
    assert_eq!(get(&z), Err(Failure::msg("a first")));
}

#[test]
fn zip_with_success_failure_panic() {
    check(
        Ok(20),
        |f| f.zip_with(&Future::successful(22), |x, y| x + y),
        Ok(42),
    );
    check(
        Err::<i32, _>(Failure::Timeout),
        |f| {
            f.zip_with(&Future::successful(22), |_, _: i32| -> i32 {
                unreachable!("zip_with must not run on a failure")
            })
        },
        Err(Failure::Timeout),
    );
    check(
        Ok(20),
        |f| {
            f.zip_with(&Future::successful(22), |_, _: i32| -> i32 {
                panic!("expected: zip_with")
            })
        },
        Err(panic_failure("expected: zip_with")),
    );
}
