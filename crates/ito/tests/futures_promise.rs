//! Integration tests for `Promise`: completion races, concurrent callbacks, completing twice,
//! `complete_with`, and broken promises.

use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use ito::future::AlreadyCompleted;
use ito::{Failure, Future, Promise};

mod support;
use support::{LONG, get};

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
