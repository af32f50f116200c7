//! Fork-join's shelf and latch: the owner taking its job back races a thief taking it; the
//! runner's latch races the owner going to sleep; a waiting owner leapfrogging into its
//! thief's shelf races the thief finishing.

use std::ptr;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::runtime::join::job::{JobHeader, JoinLatch, StackJob};
use crate::runtime::join::shelf::{Reclaim, Shelf};

/// Owner exposes its job and comes back for it while a thief tries to steal it: the job runs
/// exactly once, its result reaches the owner, and a sleeping owner is always woken.
#[test]
fn loom_join_reclaim_races_steal() {
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let shelf = Arc::new(Shelf::new());
        let me = thread::current();
        let r = runs.clone();
        let job = StackJob::new(move || {
            r.fetch_add(1, Ordering::Relaxed);
            7u32
        });
        // SAFETY: the job and `me` live until the end of this closure, after the latch
        // wait or the reclaim below.
        unsafe { shelf.expose([job.header()], 0, &me) };

        let thief_shelf = Arc::new(Shelf::new());
        let (s, ts) = (shelf.clone(), thief_shelf.clone());
        let thief = thread::spawn(move || {
            if let Some(j) = s.steal(Arc::as_ptr(&ts), 0) {
                // SAFETY: taken from the shelf; the owner waits for the latch.
                unsafe { JobHeader::execute(j.0) };
                true
            } else {
                false
            }
        });

        let got = match shelf.reclaim(job.header()) {
            Reclaim::Reclaimed => {
                // SAFETY: reclaimed: nobody else has it.
                let f = unsafe { job.take_fn() };
                f()
            }
            Reclaim::Stolen { thief, depth } => {
                assert_eq!(thief, Arc::as_ptr(&thief_shelf));
                assert_eq!(depth, 0);
                job.latch().sleep(|| (), thread::park);
                // SAFETY: the latch is set.
                unsafe { job.take_result() }.unwrap()
            }
        };
        thief.join().unwrap();
        assert_eq!(got, 7);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(shelf.is_empty_hint());
    });
}

/// A panic in a stolen job reaches the owner as its result.
#[test]
fn loom_join_stolen_panic_is_returned() {
    loom::model(|| {
        let shelf = Arc::new(Shelf::new());
        let me = thread::current();
        let job = StackJob::new(|| -> u8 { std::panic::panic_any("boom") });
        // SAFETY: as in the model above.
        unsafe { shelf.expose([job.header()], 0, &me) };
        let s = shelf.clone();
        let thief = thread::spawn(move || {
            let j = s.steal(ptr::null(), 0).expect("exposed");
            // SAFETY: taken from the shelf; the owner waits for the latch.
            unsafe { JobHeader::execute(j.0) };
        });
        // The owner's first closure "runs" here; it does not reclaim, so the thief gets it.
        job.latch().sleep(|| (), thread::park);
        // SAFETY: the latch is set.
        let r = unsafe { job.take_result() };
        thief.join().unwrap();
        let payload = r.expect_err("the job panicked");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    });
}

/// A waiting owner leapfrogs into its thief's shelf while the thief finishes the waited job
/// and moves on: it may take the job's descendant, never the thief's older job nor one it
/// exposes after the waited job is done.
#[test]
fn loom_join_leapfrog_takes_only_descendants() {
    loom::model(|| {
        let thief_shelf = Arc::new(Shelf::new());
        let waited = Arc::new(JoinLatch::new());
        let descendant_runs = Arc::new(AtomicUsize::new(0));

        let (ts, w, dr) = (thief_shelf.clone(), waited.clone(), descendant_runs.clone());
        let thief = thread::spawn(move || {
            let me = thread::current();
            // An older job of the thief (depth 0), exposed before it took the waited one.
            let older = StackJob::new(|| "older");
            // SAFETY: every job here is reclaimed or its latch waited for before the end.
            unsafe { ts.expose([older.header()], 0, &me) };
            // Running the waited job (taken at depth 1): it forks a descendant at depth 1.
            let d = dr.clone();
            let desc = StackJob::new(move || {
                d.fetch_add(1, Ordering::Relaxed);
                "descendant"
            });
            // SAFETY: as above.
            unsafe { ts.expose([desc.header()], 1, &me) };
            let r = match ts.reclaim(desc.header()) {
                Reclaim::Reclaimed => {
                    // SAFETY: reclaimed.
                    (unsafe { desc.take_fn() })()
                }
                Reclaim::Stolen { .. } => {
                    desc.latch().sleep(|| (), thread::park);
                    // SAFETY: the latch is set.
                    unsafe { desc.take_result() }.unwrap()
                }
            };
            assert_eq!(r, "descendant");
            // The waited job is done: set its latch (its owner never sleeps in this model).
            // SAFETY: the owner pointer is read only if the owner sleeps.
            unsafe { w.set(ptr::null()) };
            // Later work at the same depth: not a descendant.
            let later = StackJob::new(|| "later");
            // SAFETY: as above.
            unsafe { ts.expose([later.header()], 1, &me) };
            assert!(matches!(ts.reclaim(later.header()), Reclaim::Reclaimed));
            assert!(matches!(ts.reclaim(older.header()), Reclaim::Reclaimed));
        });

        let mine = Shelf::new();
        if let Some(j) = thief_shelf.steal_descendant(&waited, 1, &mine, 0) {
            // Only the descendant may come out (the thief's reclaims of the others assert
            // it); running it is what lets the thief go on.
            // SAFETY: taken from the shelf; its owner (the thief) waits for its latch.
            unsafe { JobHeader::execute(j.0) };
        }
        thief.join().unwrap();
        assert_eq!(descendant_runs.load(Ordering::Relaxed), 1);
    });
}

/// Exposing a job races the only idle worker going to sleep: either the sleeper sees the job
/// (and stays up) or the exposer's notification finds the sleeper (and wakes it). The
/// exposure's notification must be fenced for this: the job stays on the shelf for all of
/// the owner's first closure, and no later fork notifies again meanwhile.
#[test]
fn loom_join_exposure_never_misses_a_sleeper() {
    use crate::runtime::park::Sleep;
    loom::model(|| {
        let sleep = Arc::new(Sleep::new(1, 1, std::time::Duration::ZERO));
        let shelf = Arc::new(Shelf::new());
        let (s2, sh2) = (sleep.clone(), shelf.clone());
        let sleeper = thread::spawn(move || {
            s2.register_sleeper(0);
            // Sees the job: takes itself off the list (or was already woken).
            s2.work_visible(|| !sh2.is_empty_hint()) && s2.unregister_sleeper(0)
        });
        let me = thread::current();
        let job = StackJob::new(|| ());
        // SAFETY: reclaimed below, before the job goes out of scope.
        unsafe { shelf.expose([job.header()], 0, &me) };
        // What `join::expose` does after exposing.
        sleep.notify(true);
        let stayed_up = sleeper.join().unwrap();
        assert!(
            stayed_up || !sleep.is_sleeping(0),
            "a job was exposed and the only idle worker slept on"
        );
        assert!(matches!(shelf.reclaim(job.header()), Reclaim::Reclaimed));
    });
}
