//! Integration tests for `Future` callbacks (`on_complete`, `on_success`, `on_failure`): each
//! runs once, after completion, whatever the others do; futures derived from `never` stay
//! pending and release their callbacks when it is dropped; long chains do not overflow.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use ito::{Failure, Future, Promise};

mod support;
use support::derive::{MODES, Mode, Probe, derive_in};
use support::{LONG, get, quiet_expected_panics};

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
