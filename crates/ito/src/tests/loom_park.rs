//! The sleep protocol (`runtime::park`), run as it ships: a thread that finds no work and goes
//! to sleep must never miss work pushed meanwhile, whether it was searching, spinning,
//! watching for deferred wake-ups, or none of these.
//!
//! The worker's side is [`Sleep::start_looking`], [`Sleep::keep_looking`] and [`Sleep::sleep`]
//! called in the worker loop's order, against a [`Seeker`] whose queues are one counter. Loom
//! fails a model in which a thread parks for ever.

use std::time::Duration;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::runtime::park::{Idler, Seeker, Sleep};

/// Queues of one counter: a push sets bits, a steal takes them all.
#[derive(Default)]
struct Queue {
    bits: AtomicUsize,
}

impl Seeker for Queue {
    type Found = usize;
    fn steal_anywhere(&self) -> Option<usize> {
        match self.bits.swap(0, Ordering::AcqRel) {
            0 => None,
            bits => Some(bits),
        }
    }
    fn has_queued_work(&self) -> bool {
        self.bits.load(Ordering::Acquire) != 0
    }
    fn is_shutdown(&self) -> bool {
        false
    }
    fn should_retire(&self) -> bool {
        false
    }
    fn keep_alive(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn before_park(&self) {}
    fn count_park(&self) {}
}

/// A runtime with `slots` slots and `workers` workers; the model's worker is slot 0.
fn runtime(slots: usize, workers: usize, idle_spin: Duration) -> (Arc<Sleep>, Arc<Queue>) {
    (
        Arc::new(Sleep::new(slots, workers, idle_spin)),
        Arc::new(Queue::default()),
    )
}

/// Worker 0's loop, from a search: runs until it has taken every bit of `want`.
fn work_until(sleep: &Sleep, queue: &Queue, idler: &Idler, want: usize) {
    let mut taken = 0;
    while taken != want {
        sleep.start_looking(idler);
        if let Some(bits) = queue.steal_anywhere() {
            sleep.work_found(idler);
            taken |= bits;
            continue;
        }
        if let Some(bits) = sleep.keep_looking(idler, queue) {
            taken |= bits;
            continue;
        }
        if let Some(bits) = sleep.sleep(idler, queue) {
            taken |= bits;
        }
    }
}

/// Pushes `bit` from outside the runtime: the injector's push, then a fenced notification.
fn push(sleep: &Sleep, queue: &Queue, bit: usize) {
    queue.bits.fetch_or(bit, Ordering::Release);
    sleep.notify(true);
}

/// A thread that pushes `bit`.
fn spawn_pusher(sleep: &Arc<Sleep>, queue: &Arc<Queue>, bit: usize) -> thread::JoinHandle<()> {
    let (s, q) = (sleep.clone(), queue.clone());
    thread::spawn(move || push(&s, &q, bit))
}

/// A push from outside racing a worker that falls asleep without having searched.
#[test]
fn loom_park_push_races_a_worker_falling_asleep() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::ZERO);
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let pusher = spawn_pusher(&sleep, &queue, 1);
        let mut taken = sleep.sleep(&idler, &*queue).unwrap_or(0);
        taken |= queue.steal_anywhere().unwrap_or(0);
        if taken == 0 {
            work_until(&sleep, &queue, &idler, 1);
        }
        pusher.join().unwrap();
    });
}

/// A push racing the last searcher giving up: the push sees a searcher and wakes nobody, so
/// the searcher must see the push when it gives up.
#[test]
fn loom_park_push_races_the_last_searcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::ZERO);
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let pusher = spawn_pusher(&sleep, &queue, 1);
        work_until(&sleep, &queue, &idler, 1);
        pusher.join().unwrap();
    });
}

/// A push racing a searcher that keeps looking before it sleeps: it must see the push, either
/// while it spins or when it gives up.
#[test]
fn loom_park_push_races_a_spinning_searcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::from_micros(50));
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let pusher = spawn_pusher(&sleep, &queue, 1);
        work_until(&sleep, &queue, &idler, 1);
        pusher.join().unwrap();
    });
}

/// A push whose wake-up may be deferred (an outside thread runs beside one awake worker, out
/// of two) racing that outside thread leaving: the sleeping worker, a watcher if it saw the
/// outside thread, must end up with the work, woken by the leaving thread or by its own
/// watch.
#[test]
fn loom_park_deferred_push_races_the_outside_thread_leaving() {
    loom::model(|| {
        let (sleep, queue) = runtime(2, 2, Duration::ZERO);
        sleep.enter_outside();
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let pusher = spawn_pusher(&sleep, &queue, 1);
        let (s3, q3) = (sleep.clone(), queue.clone());
        let outside = thread::spawn(move || s3.leave_outside(|| q3.has_queued_work()));
        work_until(&sleep, &queue, &idler, 1);
        pusher.join().unwrap();
        outside.join().unwrap();
    });
}

/// An outside thread that starts running while the worker falls asleep, and never stops: a
/// push may be deferred only if the sleeper watches, and then its watch must find the work.
#[test]
fn loom_park_a_push_is_deferred_only_to_a_watcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(2, 2, Duration::ZERO);
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let s1 = sleep.clone();
        let outside = thread::spawn(move || s1.enter_outside());
        let pusher = spawn_pusher(&sleep, &queue, 1);
        work_until(&sleep, &queue, &idler, 1);
        pusher.join().unwrap();
        outside.join().unwrap();
    });
}

/// The watcher leaves its watch, woken by a push made while the outside thread was parked,
/// while a second push, made after the outside thread runs again, defers its wake-up because
/// it still saw the watcher: the second push must not be lost.
#[test]
fn loom_park_a_push_deferred_to_a_leaving_watcher_is_not_lost() {
    loom::model(|| {
        let (sleep, queue) = runtime(2, 2, Duration::ZERO);
        sleep.enter_outside();
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let (s1, q1) = (sleep.clone(), queue.clone());
        let outside = thread::spawn(move || {
            // Parks (counted out), then runs again, as `pause_outside` does.
            s1.leave_outside(|| q1.has_queued_work());
            push(&s1, &q1, 1);
            s1.enter_outside();
        });
        let second = spawn_pusher(&sleep, &queue, 2);
        work_until(&sleep, &queue, &idler, 3);
        outside.join().unwrap();
        second.join().unwrap();
    });
}
