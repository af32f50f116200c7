//! [`Tally`]: the in-flight count racing the tasks it counts, and the permits racing each
//! other. The tasks are loom threads doing what `walk::par` does around each task body.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::walk::tally::{Leave, Tally};

/// One result slot per task, written without synchronisation by its task and read by the
/// last task out: loom reports the read as a race unless every write happens before it.
struct Slots([UnsafeCell<u32>; 3]);

// SAFETY: each slot is written by one task only, and read only by the last task out, after
// every task has left; the models below check that this order is a happens-before order.
unsafe impl Sync for Slots {}

impl Slots {
    fn new() -> Slots {
        Slots([UnsafeCell::new(0), UnsafeCell::new(0), UnsafeCell::new(0)])
    }

    fn write(&self, i: usize) {
        // SAFETY: slot `i` belongs to the calling task (see the `Sync` impl).
        self.0[i].with_mut(|p| unsafe { *p = 1 });
    }

    fn sum(&self) -> u32 {
        // SAFETY: called by the last task out only (see the `Sync` impl).
        self.0.iter().map(|c| c.with(|p| unsafe { *p })).sum()
    }
}

/// What `Task`'s drop does: give the permit back, leave, and if last, look at every task's
/// result (the walk's "complete the promise").
fn finish(t: &Tally, slots: &Slots, permit: bool, lasts: &AtomicUsize) {
    if permit {
        t.release();
    }
    if t.leave() == Leave::Last {
        assert_eq!(slots.sum(), 3, "the last task out saw every task's work");
        lasts.fetch_add(1, Ordering::Relaxed);
    }
}

/// A root task offers two children with one permit: one gets a task (if the permit is
/// free), the other is done inline. Exactly one task is last, and it sees all the work.
#[test]
fn loom_tally_last_out_sees_all_work() {
    loom::model(|| {
        let t = Arc::new(Tally::new(1, 1));
        let slots = Arc::new(Slots::new());
        let lasts = Arc::new(AtomicUsize::new(0));
        slots.write(0);
        let mut children = Vec::new();
        for i in 1..=2 {
            if t.try_acquire() {
                t.enter();
                let (t, slots, lasts) = (t.clone(), slots.clone(), lasts.clone());
                children.push(thread::spawn(move || {
                    slots.write(i);
                    finish(&t, &slots, true, &lasts);
                }));
            } else {
                slots.write(i);
            }
        }
        finish(&t, &slots, false, &lasts);
        for c in children {
            c.join().unwrap();
        }
        assert_eq!(lasts.load(Ordering::Relaxed), 1);
    });
}

/// A child task spawns a grandchild while the root leaves: the count never passes through
/// zero early, so the last one out still sees all three results.
#[test]
fn loom_tally_nested_spawn_races_root_leaving() {
    loom::model(|| {
        let t = Arc::new(Tally::new(2, 1));
        let slots = Arc::new(Slots::new());
        let lasts = Arc::new(AtomicUsize::new(0));
        assert!(t.try_acquire());
        t.enter();
        let child = {
            let (t, slots, lasts) = (t.clone(), slots.clone(), lasts.clone());
            thread::spawn(move || {
                slots.write(1);
                let grandchild = t.try_acquire().then(|| {
                    t.enter();
                    let (t, slots, lasts) = (t.clone(), slots.clone(), lasts.clone());
                    thread::spawn(move || {
                        slots.write(2);
                        finish(&t, &slots, true, &lasts);
                    })
                });
                if grandchild.is_none() {
                    slots.write(2);
                }
                finish(&t, &slots, true, &lasts);
                if let Some(g) = grandchild {
                    g.join().unwrap();
                }
            })
        };
        slots.write(0);
        finish(&t, &slots, false, &lasts);
        child.join().unwrap();
        assert_eq!(lasts.load(Ordering::Relaxed), 1);
    });
}

/// Two tasks race for one permit, twice each: never two holders at once, and the permit
/// is back at the end.
#[test]
fn loom_tally_permits_are_never_overdrawn() {
    loom::model(|| {
        let t = Arc::new(Tally::new(1, 0));
        let holders = Arc::new(AtomicUsize::new(0));
        let racer = |t: Arc<Tally>, holders: Arc<AtomicUsize>| {
            move || {
                for _ in 0..2 {
                    if t.try_acquire() {
                        assert_eq!(holders.fetch_add(1, Ordering::Relaxed), 0);
                        holders.fetch_sub(1, Ordering::Relaxed);
                        t.release();
                    }
                }
            }
        };
        let other = thread::spawn(racer(t.clone(), holders.clone()));
        racer(t.clone(), holders.clone())();
        other.join().unwrap();
        assert!(t.try_acquire());
        assert!(!t.try_acquire());
    });
}
