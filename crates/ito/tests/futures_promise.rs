//! Integration tests for `Promise` (completion races, concurrent callbacks, broken promises,
//! `complete_with`), for `Failure`, and for leaks or double drops of the values futures hold.

use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ito::future::{AlreadyCompleted, first_completed_of, first_success_of, fold, sequence};
use ito::{Failure, Future, Promise};

mod support;
use support::{LONG, get, quiet_expected_panics};

// ---------------------------------------------------------------------------------------------
// Completion races
// ---------------------------------------------------------------------------------------------

const ROUNDS: usize = 2000;
const COMPLETERS: usize = 8;
const REGISTRARS: usize = 2;
const REGS_PER_REGISTRAR: usize = 3;
/// Callbacks per round: one registered before the race, the registrars' during it, one after.
const CBS_PER_ROUND: usize = 2 + REGISTRARS * REGS_PER_REGISTRAR;

/// Per-callback record: how often it ran and the value it saw (+1; 0 = never ran).
struct Slots {
    hits: Vec<AtomicUsize>,
    seen: Vec<AtomicUsize>,
}

impl Slots {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Slots {
            hits: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            seen: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn register(self: &Arc<Self>, f: &Future<usize>, slot: usize) {
        let s = self.clone();
        f.on_complete(move |r| {
            s.hits[slot].fetch_add(1, Ordering::SeqCst);
            s.seen[slot].store(r.expect("completed with a value") + 1, Ordering::SeqCst);
        });
    }
}

#[test]
fn exactly_one_completer_wins_and_every_callback_runs_once() {
    let promises: Vec<Promise<usize>> = (0..ROUNDS).map(|_| Promise::new()).collect();
    let wins: Vec<AtomicUsize> = (0..ROUNDS).map(|_| AtomicUsize::new(0)).collect();
    let winner: Vec<AtomicUsize> = (0..ROUNDS).map(|_| AtomicUsize::new(0)).collect();
    let slots = Slots::new(ROUNDS * CBS_PER_ROUND);

    // Before the race.
    for (r, p) in promises.iter().enumerate() {
        slots.register(&p.future(), r * CBS_PER_ROUND);
    }

    let barrier = Barrier::new(COMPLETERS + REGISTRARS);
    thread::scope(|s| {
        for id in 0..COMPLETERS {
            let (promises, wins, winner, barrier) = (&promises, &wins, &winner, &barrier);
            s.spawn(move || {
                for r in 0..ROUNDS {
                    barrier.wait();
                    if promises[r].try_complete(Ok(id)) {
                        wins[r].fetch_add(1, Ordering::SeqCst);
                        winner[r].store(id + 1, Ordering::SeqCst);
                    }
                }
            });
        }
        for reg in 0..REGISTRARS {
            let (promises, slots, barrier) = (&promises, &slots, &barrier);
            s.spawn(move || {
                for (r, p) in promises.iter().enumerate() {
                    barrier.wait();
                    let f = p.future();
                    for k in 0..REGS_PER_REGISTRAR {
                        let slot = r * CBS_PER_ROUND + 1 + reg * REGS_PER_REGISTRAR + k;
                        slots.register(&f, slot);
                    }
                }
            });
        }
    });

    // After the race.
    for (r, p) in promises.iter().enumerate() {
        slots.register(&p.future(), r * CBS_PER_ROUND + CBS_PER_ROUND - 1);
    }

    for r in 0..ROUNDS {
        assert_eq!(wins[r].load(Ordering::SeqCst), 1, "round {r}: winners");
        let w = winner[r].load(Ordering::SeqCst);
        assert_eq!(
            promises[r].future().value(),
            Some(Ok(w - 1)),
            "round {r}: value"
        );
        for k in 0..CBS_PER_ROUND {
            let slot = r * CBS_PER_ROUND + k;
            assert_eq!(
                slots.hits[slot].load(Ordering::SeqCst),
                1,
                "round {r}, callback {k}: runs"
            );
            assert_eq!(
                slots.seen[slot].load(Ordering::SeqCst),
                w,
                "round {r}, callback {k}: value seen"
            );
        }
    }
}

#[test]
fn mixed_completion_methods_race_one_winner() {
    for round in 0..300usize {
        let p = Promise::<usize>::new();
        let f = p.future();
        let derived = f.map(|v| v * 2);
        let wins = AtomicUsize::new(0);
        let barrier = Barrier::new(6);
        thread::scope(|s| {
            for id in 0..6usize {
                let (p, wins, barrier) = (&p, &wins, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let won = match id {
                        0 => p.try_success(id),
                        1 => p.try_failure(Failure::msg("1")),
                        2 => p.success(id).is_ok(),
                        3 => p.failure(Failure::msg("3")).is_ok(),
                        4 => p.complete(Ok(id)).is_ok(),
                        _ => p.try_complete(Err(Failure::msg("5"))),
                    };
                    if won {
                        wins.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            // A thread that waits while the others race.
            let f = f.clone();
            s.spawn(move || assert!(f.wait_timeout(LONG).is_some()));
        });
        assert_eq!(wins.load(Ordering::SeqCst), 1, "round {round}");
        let r = get(&f);
        match &r {
            Ok(v) => assert!([0, 2, 4].contains(v)),
            Err(e) => assert!(["1", "3", "5"].contains(&e.to_string().as_str())),
        }
        assert_eq!(get(&derived), r.map(|v| v * 2));
    }
}

#[test]
fn waiters_on_many_threads_all_wake() {
    for _ in 0..50 {
        let p = Promise::new();
        let woke = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..6 {
                let (f, woke) = (p.future(), &woke);
                s.spawn(move || {
                    assert_eq!(f.wait_timeout(LONG), Some(Ok(7)));
                    woke.fetch_add(1, Ordering::SeqCst);
                });
            }
            s.spawn(|| p.success(7).unwrap());
        });
        assert_eq!(woke.load(Ordering::SeqCst), 6);
    }
}

// ---------------------------------------------------------------------------------------------
// Completing a completed promise
// ---------------------------------------------------------------------------------------------

#[test]
fn completing_twice_hands_the_value_back() {
    let p = Promise::new();
    assert!(!p.is_completed());
    p.success(String::from("first")).unwrap();
    assert!(p.is_completed());
    assert_eq!(
        p.success(String::from("second")),
        Err(AlreadyCompleted(String::from("second")))
    );
    assert_eq!(p.failure(Failure::Timeout).unwrap_err().0, Failure::Timeout);
    assert_eq!(
        p.complete(Ok("third".into())).unwrap_err().0,
        Ok(String::from("third"))
    );
    assert_eq!(
        p.complete(Err(Failure::Cancelled)).unwrap_err().0,
        Err(Failure::Cancelled)
    );
    assert!(!p.try_success("x".into()));
    assert!(!p.try_failure(Failure::Timeout));
    assert!(!p.try_complete(Ok("y".into())));
    assert_eq!(get(&p.future()), Ok(String::from("first")));

    // Same after a failure.
    let q = Promise::<u8>::new();
    q.failure(Failure::msg("no")).unwrap();
    assert_eq!(q.success(5), Err(AlreadyCompleted(5)));
    assert_eq!(get(&q.future()), Err(Failure::msg("no")));
}

#[test]
fn already_completed_is_an_error_type() {
    let e = AlreadyCompleted(3);
    assert_eq!(e.to_string(), "the promise was already completed");
    assert_eq!(format!("{e:?}"), "AlreadyCompleted(..)");
    let boxed: Box<dyn Error> = Box::new(e.clone());
    assert_eq!(boxed.to_string(), e.to_string());
    assert_eq!(e.0, 3);
}

#[test]
fn promise_basics() {
    let p = Promise::<u8>::default();
    assert_eq!(format!("{p:?}"), "Promise { completed: false }");
    let (a, b) = (p.future(), p.future());
    assert!(a.ptr_eq(&b));
    assert!(p.clone().future().ptr_eq(&a));
    p.success(1).unwrap();
    assert_eq!(format!("{p:?}"), "Promise { completed: true }");
    assert_eq!((a.wait(), b.wait()), (Ok(1), Ok(1)));
    // A future taken after completion sees the value too.
    assert_eq!(p.future().value(), Some(Ok(1)));
}

// ---------------------------------------------------------------------------------------------
// complete_with, try_complete_with
// ---------------------------------------------------------------------------------------------

#[test]
fn complete_with_follows_the_other_future() {
    let p = Promise::new();
    p.complete_with(&Future::successful(9)).unwrap();
    assert_eq!(get(&p.future()), Ok(9));

    let p = Promise::<u8>::new();
    p.complete_with(&Future::failed(Failure::Cancelled))
        .unwrap();
    assert_eq!(get(&p.future()), Err(Failure::Cancelled));

    // The other future completes later, from another thread.
    let p = Promise::new();
    let src = Promise::new();
    p.complete_with(&src.future()).unwrap();
    assert_eq!(p.future().wait_timeout(Duration::from_millis(5)), None);
    let h = thread::spawn(move || src.success("later").unwrap());
    assert_eq!(get(&p.future()), Ok("later"));
    h.join().unwrap();
}

#[test]
fn complete_with_on_a_completed_promise_is_an_error() {
    let p = Promise::new();
    p.success(1).unwrap();
    assert_eq!(
        p.complete_with(&Future::successful(2)),
        Err(AlreadyCompleted(()))
    );
    assert_eq!(get(&p.future()), Ok(1));
}

#[test]
fn try_complete_with_loses_to_an_earlier_completion() {
    let p = Promise::new();
    p.try_complete_with(&Future::successful(9));
    p.try_complete_with(&Future::successful(10));
    assert_eq!(get(&p.future()), Ok(9));

    // The promise is completed directly before the other future completes.
    let p = Promise::new();
    let src = Promise::new();
    p.try_complete_with(&src.future());
    p.success(1).unwrap();
    src.success(2).unwrap();
    assert_eq!(get(&p.future()), Ok(1));

    // Two pending sources: the first to complete wins.
    let p = Promise::new();
    let (a, b) = (Promise::new(), Promise::new());
    p.try_complete_with(&a.future());
    p.complete_with(&b.future()).unwrap();
    b.success('b').unwrap();
    a.success('a').unwrap();
    assert_eq!(get(&p.future()), Ok('b'));
}

#[test]
fn try_complete_with_keeps_the_promise_alive() {
    // The registration holds a writer: dropping our handle does not break the promise.
    let p = Promise::new();
    let f = p.future();
    let src = Promise::new();
    p.try_complete_with(&src.future());
    drop(p);
    assert_eq!(f.wait_timeout(Duration::from_millis(5)), None);
    src.success(4).unwrap();
    assert_eq!(get(&f), Ok(4));

    // ... until the source itself can no longer complete.
    let p = Promise::<u8>::new();
    let f = p.future();
    let never = Future::never();
    p.try_complete_with(&never);
    drop(p);
    assert_eq!(f.wait_timeout(Duration::from_millis(5)), None);
    drop(never);
    assert_eq!(get(&f), Err(Failure::BrokenPromise));
}

// ---------------------------------------------------------------------------------------------
// Broken promises
// ---------------------------------------------------------------------------------------------

#[test]
fn dropping_every_promise_handle_breaks_the_future() {
    let p = Promise::<u8>::new();
    let f = p.future();
    let derived = f.map(|x| x + 1);
    drop(p);
    assert_eq!(get(&f), Err(Failure::BrokenPromise));
    assert_eq!(get(&derived), Err(Failure::BrokenPromise));

    // Not while a clone lives.
    let p = Promise::<u8>::new();
    let f = p.future();
    let clones: Vec<_> = (0..3).map(|_| p.clone()).collect();
    drop(p);
    let mut clones = clones.into_iter();
    clones.next();
    clones.next();
    assert_eq!(f.wait_timeout(Duration::from_millis(10)), None);
    let last = clones.next().unwrap();
    assert!(clones.next().is_none());
    assert!(!f.is_completed());
    // The last clone can still complete it.
    last.success(3).unwrap();
    drop(last);
    assert_eq!(get(&f), Ok(3));
}

#[test]
fn dropping_a_completed_promise_keeps_the_value() {
    let p = Promise::new();
    let f = p.future();
    p.success(8).unwrap();
    drop(p);
    assert_eq!(get(&f), Ok(8));
}

#[test]
fn a_promise_with_no_future_taken_can_be_dropped() {
    drop(Promise::<String>::new());
    let p = Promise::new();
    p.success(String::from("unread")).unwrap();
    drop(p);
}

#[test]
fn broken_while_waiting_wakes_the_waiter() {
    let p = Promise::<u8>::new();
    let f = p.future();
    let h = thread::spawn(move || {
        thread::sleep(Duration::from_millis(2));
        drop(p);
    });
    assert_eq!(get(&f), Err(Failure::BrokenPromise));
    h.join().unwrap();

    let p = Promise::<u8>::new();
    let f = p.future();
    let h = thread::spawn(move || {
        thread::sleep(Duration::from_millis(2));
        drop(p);
    });
    assert_eq!(
        ito::block_on(async { (&f).await }),
        Err(Failure::BrokenPromise)
    );
    h.join().unwrap();
}

#[test]
fn clones_dropped_concurrently_break_exactly_once() {
    for round in 0..300usize {
        let p = Promise::<usize>::new();
        let f = p.future();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        f.on_complete(move |r| {
            assert_eq!(r, Err(Failure::BrokenPromise));
            h.fetch_add(1, Ordering::SeqCst);
        });
        let clones: Vec<_> = (0..6).map(|_| p.clone()).collect();
        drop(p);
        let barrier = Barrier::new(6);
        thread::scope(|s| {
            for c in clones {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    drop(c);
                });
            }
        });
        assert_eq!(get(&f), Err(Failure::BrokenPromise), "round {round}");
        assert_eq!(hits.load(Ordering::SeqCst), 1, "round {round}");
    }
}

#[test]
fn a_completer_holding_a_clone_beats_the_drops() {
    for round in 0..300usize {
        let p = Promise::<usize>::new();
        let f = p.future();
        let clones: Vec<_> = (0..6).map(|_| p.clone()).collect();
        drop(p);
        let barrier = Barrier::new(6);
        thread::scope(|s| {
            for (i, c) in clones.into_iter().enumerate() {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    if i == 0 {
                        c.success(round).unwrap();
                    }
                    drop(c);
                });
            }
        });
        assert_eq!(get(&f), Ok(round));
    }
}

// ---------------------------------------------------------------------------------------------
// Failure
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
struct MyError(u32);

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "my error {}", self.0)
    }
}

impl Error for MyError {}

#[test]
fn failure_from_error_and_msg() {
    let f = Failure::from_error(std::io::Error::other("disk full"));
    assert_eq!(f.to_string(), "disk full");
    assert_eq!(
        f.downcast_ref::<std::io::Error>().map(|e| e.kind()),
        Some(std::io::ErrorKind::Other)
    );
    assert!(f.downcast_ref::<MyError>().is_none());
    assert!(f.source().is_some());
    assert!(!f.is_panic());

    let f = Failure::from_error(MyError(7));
    assert_eq!(f.downcast_ref::<MyError>(), Some(&MyError(7)));
    assert_eq!(f.to_string(), "my error 7");
    assert_eq!(f.source().map(|e| e.to_string()), Some("my error 7".into()));
    // A clone shares the same error.
    let g = f.clone();
    assert!(std::ptr::eq(
        f.downcast_ref::<MyError>().unwrap(),
        g.downcast_ref::<MyError>().unwrap()
    ));

    let m = Failure::msg("no route");
    assert_eq!(m.to_string(), "no route");
    assert_eq!(Failure::msg(String::from("owned")).to_string(), "owned");
    assert!(m.downcast_ref::<std::io::Error>().is_none());
    assert!(m.downcast_ref::<MyError>().is_none());
    let dbg = format!("{m:?}");
    assert!(
        dbg.starts_with("Error(") && dbg.contains("no route"),
        "{dbg}"
    );
    let dbg = format!("{:?}", Failure::from_error(MyError(3)));
    assert_eq!(dbg, "Error(MyError(3))");
}

#[test]
fn failure_kinds_display_and_debug() {
    let p = Failure::Panic("boom".into());
    assert!(p.is_panic());
    assert!(p.to_string().contains("boom"), "{p}");
    assert_eq!(format!("{p:?}"), "Panic(\"boom\")");
    assert!(p.downcast_ref::<MyError>().is_none());
    assert!(p.source().is_none());

    let kinds = [
        (Failure::BrokenPromise, "BrokenPromise"),
        (Failure::Cancelled, "Cancelled"),
        (Failure::Timeout, "Timeout"),
        (Failure::NoSuchElement, "NoSuchElement"),
    ];
    let mut shown = Vec::new();
    for (k, name) in &kinds {
        assert_eq!(format!("{k:?}"), *name);
        assert!(!k.is_panic());
        assert!(k.source().is_none());
        assert!(k.downcast_ref::<std::io::Error>().is_none());
        let s = k.to_string();
        assert!(!s.is_empty());
        shown.push(s);
    }
    assert_eq!(Failure::Timeout.to_string(), "timed out");
    assert_eq!(Failure::Cancelled.to_string(), "cancelled");
    shown.sort();
    shown.dedup();
    assert_eq!(shown.len(), kinds.len(), "two kinds display the same");
}

#[test]
fn failure_equality() {
    assert_eq!(Failure::Timeout, Failure::Timeout);
    assert_ne!(Failure::Timeout, Failure::Cancelled);
    assert_ne!(Failure::BrokenPromise, Failure::NoSuchElement);
    assert_eq!(Failure::Panic("a".into()), Failure::Panic("a".into()));
    assert_ne!(Failure::Panic("a".into()), Failure::Panic("b".into()));
    assert_ne!(Failure::Panic("a".into()), Failure::msg("a"));
    assert_eq!(Failure::msg("x"), Failure::msg("x"));
    assert_ne!(Failure::msg("x"), Failure::msg("y"));
    // User errors that display the same are equal.
    assert_eq!(
        Failure::from_error(std::io::Error::other("same")),
        Failure::msg("same")
    );
    let e = Failure::from_error(MyError(1));
    assert_eq!(e.clone(), e);
}

#[test]
fn panics_in_tasks_become_panic_failures() {
    quiet_expected_panics();
    let f = ito::spawn_fn(|| -> u8 { panic!("expected: task") });
    assert_eq!(get(&f), Err(Failure::Panic("expected: task".into())));
    let g = ito::spawn_fn(|| -> u8 { panic!("expected: task {}", 2) });
    match get(&g) {
        Err(Failure::Panic(m)) => assert_eq!(&*m, "expected: task 2"),
        other => panic!("unexpected {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// No value is leaked or dropped twice
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Counts {
    created: AtomicUsize,
    dropped: AtomicUsize,
}

/// A value that counts its creations (including clones) and drops.
struct Tracked {
    v: u32,
    counts: Arc<Counts>,
}

impl Tracked {
    fn new(counts: &Arc<Counts>, v: u32) -> Self {
        counts.created.fetch_add(1, Ordering::SeqCst);
        Tracked {
            v,
            counts: counts.clone(),
        }
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        Tracked::new(&self.counts, self.v)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let before = self.counts.dropped.fetch_add(1, Ordering::SeqCst);
        assert!(
            before < self.counts.created.load(Ordering::SeqCst),
            "more drops than values"
        );
    }
}

impl PartialEq for Tracked {
    fn eq(&self, other: &Self) -> bool {
        self.v == other.v
    }
}

impl std::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tracked({})", self.v)
    }
}

/// Runs `scenario`, then checks that every value it made was dropped exactly once. Values held
/// by tasks or timers are released a moment after the futures complete, so this polls briefly.
fn no_leaks(name: &str, scenario: impl FnOnce(&Arc<Counts>)) {
    let counts = Arc::new(Counts::default());
    scenario(&counts);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let created = counts.created.load(Ordering::SeqCst);
        let dropped = counts.dropped.load(Ordering::SeqCst);
        assert!(
            dropped <= created,
            "{name}: {dropped} drops of {created} values"
        );
        if created == dropped {
            assert!(created > 0, "{name}: made no values");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {} of {created} values leaked",
            created - dropped
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn promises_do_not_leak_or_double_drop() {
    no_leaks("success and reads", |c| {
        let p = Promise::new();
        let f = p.future();
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(get(&f).unwrap().v, 1);
        assert_eq!(f.value().unwrap().unwrap().v, 1);
        assert_eq!(f.clone().wait().unwrap().v, 1);
    });
    no_leaks("values handed back", |c| {
        let p = Promise::new();
        p.success(Tracked::new(c, 1)).unwrap();
        let back = p.success(Tracked::new(c, 2)).unwrap_err();
        assert_eq!(back.0.v, 2);
        assert!(!p.try_success(Tracked::new(c, 3)));
        let back = p.complete(Ok(Tracked::new(c, 4))).unwrap_err();
        assert_eq!(back.0.unwrap().v, 4);
    });
    no_leaks("never read", |c| {
        let p = Promise::new();
        p.success(Tracked::new(c, 1)).unwrap();
        let _ = Future::successful(Tracked::new(c, 2));
        let _ = Future::<Tracked>::failed(Failure::Timeout);
    });
    no_leaks("race of completers", |c| {
        for _ in 0..50 {
            let p = Promise::new();
            let f = p.future();
            thread::scope(|s| {
                for i in 0..4 {
                    let p = &p;
                    s.spawn(move || p.try_success(Tracked::new(c, i)));
                }
            });
            assert!(get(&f).is_ok());
        }
    });
    no_leaks("completed on another thread", |c| {
        let p = Promise::new();
        let f = p.future();
        let c2 = c.clone();
        let h = thread::spawn(move || p.success(Tracked::new(&c2, 5)).unwrap());
        assert_eq!(get(&f).unwrap().v, 5);
        h.join().unwrap();
    });
    no_leaks("callbacks dropped with a broken promise or a never", |c| {
        let p = Promise::<u8>::new();
        let t = Tracked::new(c, 1);
        let f = p.future().map(move |x| t.v + u32::from(x));
        drop(p);
        assert_eq!(get(&f), Err(Failure::BrokenPromise));
        let never = Future::<u8>::never();
        let t = Tracked::new(c, 2);
        never.on_complete(move |_| drop(t));
        let t = Tracked::new(c, 3);
        let _pending = never.map(move |_| t);
    });
    no_leaks("spawned tasks", |c| {
        let c2 = c.clone();
        let f = ito::spawn_fn(move || Tracked::new(&c2, 9));
        assert_eq!(get(&f).unwrap().v, 9);
        let c3 = c.clone();
        let g = ito::spawn(async move { Tracked::new(&c3, 10) });
        assert_eq!(ito::block_on(async { (&g).await }).unwrap().v, 10);
    });
}

#[test]
fn combinators_do_not_leak_or_double_drop() {
    quiet_expected_panics();
    no_leaks("map, filter, flat_map, transform", |c| {
        let p = Promise::new();
        let f = p.future();
        let c2 = c.clone();
        let m = f.map(move |t: Tracked| Tracked::new(&c2, t.v + 1));
        let kept = f.filter(|t| t.v == 1);
        let dropped = f.filter(|t| t.v == 2);
        let fm = f.flat_map(Future::successful);
        let tr = f.transform(|r| r);
        let tw = f.transform_with(Future::from_result);
        let at = f.and_then(|_| {});
        let pa = f.map(|_| -> Tracked { panic!("expected: leak map") });
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(get(&m).unwrap().v, 2);
        assert_eq!(get(&kept).unwrap().v, 1);
        assert_eq!(get(&dropped), Err(Failure::NoSuchElement));
        assert_eq!(get(&fm).unwrap().v, 1);
        assert_eq!(get(&tr).unwrap().v, 1);
        assert_eq!(get(&tw).unwrap().v, 1);
        assert_eq!(get(&at).unwrap().v, 1);
        assert!(get(&pa).is_err());
        assert_eq!(get(&f.failure()), Err(Failure::NoSuchElement));
    });
    no_leaks("recover, recover_with, fallback_to, or_alt", |c| {
        let bad = Future::<Tracked>::failed(Failure::Timeout);
        let good = Future::successful(Tracked::new(c, 1));
        let c2 = c.clone();
        assert_eq!(
            get(&bad.recover(move |_| Tracked::new(&c2, 2))).unwrap().v,
            2
        );
        assert_eq!(get(&good.recover(|_| unreachable!())).unwrap().v, 1);
        let g2 = good.clone();
        assert_eq!(get(&bad.recover_with(move |_| g2)).unwrap().v, 1);
        assert_eq!(get(&bad.fallback_to(&good)).unwrap().v, 1);
        assert_eq!(get(&good.fallback_to(&bad)).unwrap().v, 1);
        assert_eq!(get(&bad.or_alt(&good)).unwrap().v, 1);
        let p = Promise::new();
        let alt = p.future().or_alt(&good);
        assert_eq!(get(&alt).unwrap().v, 1);
        p.success(Tracked::new(c, 3)).unwrap();
    });
    no_leaks("zip", |c| {
        let (a, b) = (Promise::new(), Promise::new());
        let z = a.future().zip(&b.future());
        a.success(Tracked::new(c, 1)).unwrap();
        b.success(Tracked::new(c, 2)).unwrap();
        let (x, y) = get(&z).unwrap();
        assert_eq!((x.v, y.v), (1, 2));

        // One side arrives, the other fails: the arrived value is still dropped.
        let (a, b) = (Promise::new(), Promise::<Tracked>::new());
        let z = a.future().zip_with(&b.future(), |x: Tracked, y| x.v + y.v);
        a.success(Tracked::new(c, 3)).unwrap();
        b.failure(Failure::Cancelled).unwrap();
        assert_eq!(get(&z), Err(Failure::Cancelled));

        // One side arrives, the other never will.
        let never = Future::<Tracked>::never();
        let z = Future::successful(Tracked::new(c, 4)).zip(&never);
        drop(never);
        assert_eq!(get(&z), Err(Failure::BrokenPromise));
    });
    no_leaks("flatten and with_timeout", |c| {
        let inner = Future::successful(Tracked::new(c, 1));
        let outer = Future::successful(inner);
        assert_eq!(get(&outer.flatten()).unwrap().v, 1);
        let p = Promise::new();
        let t = p.future().with_timeout(LONG);
        p.success(Tracked::new(c, 2)).unwrap();
        assert_eq!(get(&t).unwrap().v, 2);
        let q = Promise::new();
        let t = q.future().with_timeout(Duration::from_millis(1));
        assert_eq!(get(&t), Err(Failure::Timeout));
        q.success(Tracked::new(c, 3)).unwrap();
    });
    no_leaks("callbacks", |c| {
        let p = Promise::new();
        let f = p.future();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        f.on_success(move |t: Tracked| s.lock().unwrap().push(t));
        f.on_complete(drop);
        f.on_failure(|_| unreachable!());
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
    });
    no_leaks("collections", |c| {
        let fs: Vec<_> = (0..20)
            .map(|i| Future::successful(Tracked::new(c, i)))
            .collect();
        assert_eq!(get(&sequence(fs.clone())).unwrap().len(), 20);
        assert_eq!(get(&first_completed_of(fs.clone())).unwrap().v, 0);
        assert_eq!(get(&first_success_of(fs.clone())).unwrap().v, 0);
        assert_eq!(get(&fold(fs.clone(), 0, |a, t| a + t.v)), Ok(190));
        let fs2 = fs.clone();
        let b = ito::future::traverse_bounded(0..20usize, 3, move |i| fs2[i].clone());
        assert_eq!(get(&b).unwrap().len(), 20);

        // A failure after some values arrived.
        let (ps, pf): (Vec<_>, Vec<_>) = (0..5)
            .map(|_| {
                let p = Promise::new();
                let f = p.future();
                (p, f)
            })
            .unzip();
        let all = sequence(pf);
        ps[0].success(Tracked::new(c, 0)).unwrap();
        ps[1].success(Tracked::new(c, 1)).unwrap();
        ps[2].failure(Failure::Timeout).unwrap();
        ps[3].success(Tracked::new(c, 3)).unwrap();
        assert_eq!(get(&all), Err(Failure::Timeout));
        drop(ps);
    });
    no_leaks("await", |c| {
        let f = Future::successful(Tracked::new(c, 1));
        assert_eq!(ito::block_on(async { (&f).await }).unwrap().v, 1);
        let g = f.clone();
        assert_eq!(ito::block_on(async move { g.await }).unwrap().v, 1);
        let p = Promise::new();
        let r = ito::block_on(ito::timeout(Duration::from_millis(1), p.future()));
        assert!(r.is_err());
        p.success(Tracked::new(c, 2)).unwrap();
    });
}
