//! Integration tests for the `Future` constructors, callbacks and combinators, on success, on
//! failure and with panicking closures, registered both before and after the source completes.

use std::future::IntoFuture;
use std::panic::panic_any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ito::{Failure, Future, Promise};

mod support;
use support::{LONG, get, quiet_expected_panics};

/// Payload of the non-string panics these tests provoke on purpose.
struct ExpectedPayload;

fn panic_failure(msg: &str) -> Failure {
    Failure::Panic(msg.into())
}

/// How the source future of a combinator gets its result.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `Future::from_result`: complete before the combinator is registered.
    Constant,
    /// A promise completed before the combinator is registered.
    CompletedPromise,
    /// A promise completed on this thread after the combinator is registered.
    Later,
    /// A promise completed from another thread after the combinator is registered.
    OtherThread,
}

const MODES: [Mode; 4] = [
    Mode::Constant,
    Mode::CompletedPromise,
    Mode::Later,
    Mode::OtherThread,
];

/// Builds a derived future with `build` on a source that gets `src` as described by `mode`,
/// and returns the derived future's result.
fn derive_in<T, U>(
    mode: Mode,
    src: Result<T, Failure>,
    build: &dyn Fn(&Future<T>) -> Future<U>,
) -> Result<U, Failure>
where
    T: Clone + Send + Sync + 'static,
    U: Clone + Send + Sync + 'static,
{
    match mode {
        Mode::Constant => {
            let f = Future::from_result(src);
            get(&build(&f))
        }
        Mode::CompletedPromise => {
            let p = Promise::new();
            p.complete(src).expect("fresh promise");
            let f = p.future();
            get(&build(&f))
        }
        Mode::Later => {
            let p = Promise::new();
            let f = p.future();
            let d = build(&f);
            p.complete(src).expect("fresh promise");
            get(&d)
        }
        Mode::OtherThread => {
            let p = Promise::new();
            let f = p.future();
            let d = build(&f);
            let h = thread::spawn(move || {
                thread::sleep(Duration::from_millis(2));
                p.complete(src).is_ok()
            });
            let r = get(&d);
            assert!(h.join().unwrap());
            r
        }
    }
}

/// Asserts that `build` on a source with result `src` gives `expected`, in every [`Mode`].
fn check<T, U>(
    src: Result<T, Failure>,
    build: impl Fn(&Future<T>) -> Future<U>,
    expected: Result<U, Failure>,
) where
    T: Clone + Send + Sync + 'static,
    U: Clone + Send + Sync + PartialEq + std::fmt::Debug + 'static,
{
    quiet_expected_panics();
    for mode in MODES {
        let got = derive_in(mode, src.clone(), &build);
        assert_eq!(got, expected, "mode {mode:?}");
    }
}

/// A future of some type whose result can be probed without knowing the type.
trait Probe {
    fn probe(&self, d: Duration) -> Option<Result<(), Failure>>;
    fn done(&self) -> bool;
}

impl<U: Clone> Probe for Future<U> {
    fn probe(&self, d: Duration) -> Option<Result<(), Failure>> {
        self.wait_timeout(d).map(|r| r.map(|_| ()))
    }
    fn done(&self) -> bool {
        self.is_completed()
    }
}

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
        |f| f.flat_map(|x| ito::spawn_fn(move || x * 2)),
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
        |f| f.recover_with(|_| ito::spawn_fn(|| 7)),
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
        |f| f.transform_with(|r| ito::spawn_fn(move || r.map(|x| x * 3).unwrap_or(0))),
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
    let nested = ito::spawn_fn(|| ito::spawn_fn(|| 9));
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

// ---------------------------------------------------------------------------------------------
// Callbacks
// ---------------------------------------------------------------------------------------------

/// Registers `on_complete`, `on_success` and `on_failure` and returns what each saw.
#[allow(clippy::type_complexity)]
fn callbacks_in(
    mode: Mode,
    src: Result<i32, Failure>,
) -> (Vec<Result<i32, Failure>>, Vec<i32>, Vec<Failure>) {
    let all = Arc::new(Mutex::new(Vec::new()));
    let ok = Arc::new(Mutex::new(Vec::new()));
    let err = Arc::new(Mutex::new(Vec::new()));
    let (a, o, e) = (all.clone(), ok.clone(), err.clone());
    let r = derive_in(mode, src, &move |f: &Future<i32>| {
        let (a, o, e) = (a.clone(), o.clone(), e.clone());
        f.on_complete(move |r| a.lock().unwrap().push(r));
        f.on_success(move |v| o.lock().unwrap().push(v));
        f.on_failure(move |x| e.lock().unwrap().push(x));
        // Registered last: by the time it completes, the callbacks above have run.
        f.and_then(|_| {})
    });
    drop(r);
    (
        all.lock().unwrap().clone(),
        ok.lock().unwrap().clone(),
        err.lock().unwrap().clone(),
    )
}

#[test]
fn callbacks_see_the_result_once() {
    for mode in MODES {
        let (all, ok, err) = callbacks_in(mode, Ok(4));
        assert_eq!(all, vec![Ok(4)], "mode {mode:?}");
        assert_eq!(ok, vec![4], "mode {mode:?}");
        assert!(err.is_empty(), "mode {mode:?}");

        let (all, ok, err) = callbacks_in(mode, Err(Failure::Timeout));
        assert_eq!(all, vec![Err(Failure::Timeout)], "mode {mode:?}");
        assert!(ok.is_empty(), "mode {mode:?}");
        assert_eq!(err, vec![Failure::Timeout], "mode {mode:?}");
    }
}

#[test]
fn callbacks_run_immediately_on_a_completed_future() {
    let hits = Arc::new(AtomicUsize::new(0));
    let f = Future::successful(1);
    let h = hits.clone();
    f.on_complete(move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    let h = hits.clone();
    f.on_success(move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let g = Future::<u8>::failed(Failure::Timeout);
    let h = hits.clone();
    g.on_failure(move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[test]
fn panicking_callbacks_do_not_hurt_the_completer_or_other_callbacks() {
    quiet_expected_panics();
    for mode in [Mode::Later, Mode::OtherThread, Mode::Constant] {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let r = derive_in(mode, Ok(1), &move |f: &Future<i32>| {
            f.on_complete(|_| panic!("expected: on_complete"));
            f.on_success(|_| panic!("expected: on_success"));
            let h1 = h.clone();
            f.on_complete(move |_| {
                h1.fetch_add(1, Ordering::SeqCst);
            });
            let h2 = h.clone();
            f.on_success(move |_| {
                h2.fetch_add(1, Ordering::SeqCst);
            });
            f.map(|x| x + 1)
        });
        assert_eq!(r, Ok(2), "mode {mode:?}");
        assert_eq!(hits.load(Ordering::SeqCst), 2, "mode {mode:?}");
    }
    let p = Promise::<u8>::new();
    let f = p.future();
    f.on_failure(|_| panic!("expected: on_failure"));
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    f.on_failure(move |e| *s.lock().unwrap() = Some(e));
    // Completing returns normally although a callback panicked.
    assert!(p.failure(Failure::Cancelled).is_ok());
    assert_eq!(*seen.lock().unwrap(), Some(Failure::Cancelled));
}

#[test]
fn closures_run_only_after_completion() {
    let calls = Arc::new(AtomicUsize::new(0));
    let p = Promise::<i32>::new();
    let q = Promise::<i32>::new();
    let f = p.future();
    let g = q.future();
    let bump = |c: &Arc<AtomicUsize>| {
        let c = c.clone();
        move || {
            c.fetch_add(1, Ordering::SeqCst);
        }
    };
    let mut derived: Vec<Box<dyn Probe>> = Vec::new();
    let b = bump(&calls);
    derived.push(Box::new(f.map(move |x| {
        b();
        x
    })));
    let b = bump(&calls);
    derived.push(Box::new(f.flat_map(move |x| {
        b();
        Future::successful(x)
    })));
    let b = bump(&calls);
    derived.push(Box::new(f.filter(move |_| {
        b();
        true
    })));
    let b = bump(&calls);
    derived.push(Box::new(g.recover(move |_| {
        b();
        0
    })));
    let b = bump(&calls);
    derived.push(Box::new(g.recover_with(move |_| {
        b();
        Future::successful(0)
    })));
    let b = bump(&calls);
    derived.push(Box::new(f.transform(move |r| {
        b();
        r
    })));
    let b = bump(&calls);
    derived.push(Box::new(f.transform_with(move |r| {
        b();
        Future::from_result(r)
    })));
    let b = bump(&calls);
    derived.push(Box::new(f.and_then(move |_| b())));
    let b = bump(&calls);
    derived.push(Box::new(f.zip_with(&g, move |x, _| {
        b();
        x
    })));
    let b = bump(&calls);
    f.on_complete(move |_| b());
    let b = bump(&calls);
    f.on_success(move |_| b());
    let b = bump(&calls);
    g.on_failure(move |_| b());
    derived.push(Box::new(f.failure()));
    derived.push(Box::new(f.fallback_to(&g)));
    derived.push(Box::new(f.or_alt(&g)));
    derived.push(Box::new(f.zip(&g)));

    thread::sleep(Duration::from_millis(2));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    for (i, d) in derived.iter().enumerate() {
        assert!(!d.done(), "derived #{i} completed before its source");
    }

    let h = thread::spawn(move || p.success(1).unwrap());
    h.join().unwrap();
    // `g` pending: zip_with (and zip, recover, recover_with) still wait.
    assert_eq!(calls.load(Ordering::SeqCst), 8);
    q.failure(Failure::Timeout).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 11);
    for (i, d) in derived.iter().enumerate() {
        assert!(d.probe(LONG).is_some(), "derived #{i} did not complete");
    }
    // zip_with's closure is not called when a side fails.
    assert_eq!(calls.load(Ordering::SeqCst), 11);
}

// ---------------------------------------------------------------------------------------------
// Futures derived from `never`
// ---------------------------------------------------------------------------------------------

/// One of every kind of future derived from `never` (and a few derived from derived ones).
fn derive_all(never: &Future<i32>) -> Vec<(&'static str, Box<dyn Probe>)> {
    let mut v: Vec<(&'static str, Box<dyn Probe>)> = vec![
        ("map", Box::new(never.map(|x| x + 1))),
        ("flat_map", Box::new(never.flat_map(Future::successful))),
        ("filter", Box::new(never.filter(|_| true))),
        ("recover", Box::new(never.recover(|_| 0))),
        (
            "recover_with",
            Box::new(never.recover_with(|_| Future::successful(0))),
        ),
        (
            "fallback_to",
            Box::new(never.fallback_to(&Future::successful(2))),
        ),
        (
            "fallback_to(other never)",
            Box::new(Future::failed(Failure::Timeout).fallback_to(never)),
        ),
        (
            "or_alt",
            Box::new(never.or_alt(&Future::failed(Failure::Timeout))),
        ),
        (
            "or_alt(other never)",
            Box::new(Future::failed(Failure::Timeout).or_alt(never)),
        ),
        ("or_alt(self)", Box::new(never.or_alt(never))),
        ("zip", Box::new(never.zip(&Future::successful(1)))),
        (
            "zip(other never)",
            Box::new(Future::successful(1).zip(never)),
        ),
        ("zip_with", Box::new(never.zip_with(never, |a, b| a + b))),
        ("transform", Box::new(never.transform(|r| r))),
        (
            "transform_with",
            Box::new(never.transform_with(Future::from_result)),
        ),
        ("and_then", Box::new(never.and_then(|_| {}))),
        ("failure", Box::new(never.failure())),
        ("map.map", Box::new(never.map(|x| x + 1).map(|x| x + 1))),
        (
            "flat_map to never",
            Box::new(Future::successful(1).flat_map({
                let n = never.clone();
                move |_| n
            })),
        ),
    ];
    let nested = never.map(Future::successful);
    v.push(("map.flatten", Box::new(nested.flatten())));
    v
}

#[test]
fn derived_from_never_stay_pending_while_it_lives() {
    let never = Future::<i32>::never();
    let derived = derive_all(&never);
    assert_eq!(derived[0].1.probe(Duration::from_millis(20)), None);
    for (name, d) in &derived {
        assert!(
            !d.done(),
            "{name} completed while the never-future is alive"
        );
    }
    // A clone keeps it alive too.
    let clone = never.clone();
    drop(never);
    assert_eq!(derived[0].1.probe(Duration::from_millis(10)), None);
    for (name, d) in &derived {
        assert!(
            !d.done(),
            "{name} completed while a clone of the never-future is alive"
        );
    }
    drop(clone);
    for (name, d) in &derived {
        assert_eq!(
            d.probe(LONG),
            Some(Err(Failure::BrokenPromise)),
            "{name} after the never-future was dropped"
        );
    }
}

#[test]
fn never_nested_flatten_breaks_when_dropped() {
    let outer = Future::<Future<u8>>::never();
    let flat = outer.flatten();
    assert_eq!(flat.wait_timeout(Duration::from_millis(5)), None);
    drop(outer);
    assert_eq!(get(&flat), Err(Failure::BrokenPromise));

    // Outer completes with an inner never-future that is then dropped.
    let p = Promise::new();
    let flat = p.future().flatten();
    p.success(Future::<u8>::never()).unwrap();
    assert_eq!(flat.wait_timeout(Duration::from_millis(5)), None);
    drop(p); // the promise's cell held the last handle on the inner never-future
    assert_eq!(get(&flat), Err(Failure::BrokenPromise));
}

#[test]
fn callbacks_on_a_dropped_never_are_dropped_uncalled() {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let called = Arc::new(AtomicUsize::new(0));
    let never = Future::<u8>::never();
    for _ in 0..3 {
        let g = Guard(dropped.clone());
        let c = called.clone();
        never.on_complete(move |_| {
            let _g = g;
            c.fetch_add(1, Ordering::SeqCst);
        });
    }
    let g = Guard(dropped.clone());
    let c = called.clone();
    never.on_failure(move |_| {
        let _g = g;
        c.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    drop(never);
    assert_eq!(dropped.load(Ordering::SeqCst), 4);
    assert_eq!(called.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Long chains
// ---------------------------------------------------------------------------------------------

#[test]
fn long_chain_registered_before_completion_does_not_overflow() {
    let p = Promise::new();
    let mut f = p.future();
    for _ in 0..20_000 {
        f = f.map(|x: u64| x + 1);
    }
    let h = thread::spawn(move || p.success(0).unwrap());
    assert_eq!(get(&f), Ok(20_000));
    h.join().unwrap();

    let p = Promise::new();
    let mut f = p.future();
    for _ in 0..5_000 {
        f = f.flat_map(|x: u64| Future::successful(x + 1));
    }
    p.success(0).unwrap();
    assert_eq!(get(&f), Ok(5_000));

    // Dropping a never-future breaks a long chain derived from it.
    let never = Future::<u64>::never();
    let mut f = never.clone();
    for _ in 0..20_000 {
        f = f.map(|x| x + 1);
    }
    assert!(!f.is_completed());
    drop(never);
    assert_eq!(get(&f), Err(Failure::BrokenPromise));
}

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
        a.await.unwrap() + (&b).await.unwrap()
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
    assert_eq!(get(&t), Ok(Ok(42)));
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
