//! The idle-worker protocol (`runtime::idle`): a worker that finds no work and goes to sleep
//! must never miss a task pushed meanwhile, whether it was the last searcher or not.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::runtime::idle::Idle;

/// The worker's side of `WorkerCtx::sleep`, over a one-counter "queue". Returns once the worker
/// has seen the work, parking in between if it has to (loom fails the model if it parks forever).
fn sleep_until_work(idle: &Idle, queue: &AtomicUsize, was_searching: bool) {
    let has_work = || queue.load(Ordering::Acquire) > 0;
    if was_searching && idle.leave_searching_was_last() && has_work() {
        return;
    }
    idle.register_sleeper(0);
    if idle.work_visible_with(has_work) && idle.unregister_sleeper(0) {
        return;
    }
    while idle.is_sleeping(0) {
        thread::park();
    }
    // Woken by a notifier: it pushed before waking us.
    assert!(has_work(), "woken without work");
}

/// A push from outside (fenced) racing a worker falling asleep.
#[test]
fn push_races_a_worker_falling_asleep() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let queue = Arc::new(AtomicUsize::new(0));
        let me = thread::current();
        let (i2, q2) = (idle.clone(), queue.clone());
        let pusher = thread::spawn(move || {
            q2.store(1, Ordering::Release);
            i2.notify_with(true, || false, |_| me.unpark());
        });
        sleep_until_work(&idle, &queue, false);
        pusher.join().unwrap();
    });
}

/// A push from outside (fenced) racing a worker that is counted as searching and runs
/// `worker`: the push sees a searcher and wakes nobody, so the searcher must see the push.
fn push_races_a_searcher(worker: fn(&Idle, &AtomicUsize)) {
    loom::model(move || {
        let idle = Arc::new(Idle::new(1));
        let queue = Arc::new(AtomicUsize::new(0));
        idle.start_searching();
        let me = thread::current();
        let (i2, q2) = (idle.clone(), queue.clone());
        let pusher = thread::spawn(move || {
            q2.store(1, Ordering::Release);
            i2.notify_with(true, || false, |_| me.unpark());
        });
        worker(&idle, &queue);
        pusher.join().unwrap();
    });
}

/// A push racing the last searcher giving up.
#[test]
fn push_races_the_last_searcher() {
    push_races_a_searcher(|idle, queue| {
        if queue.load(Ordering::Acquire) > 0 {
            idle.stop_searching_with(|| false, |_| {});
        } else {
            sleep_until_work(idle, queue, true);
        }
    });
}

/// The worker's side of `WorkerCtx::keep_looking` followed by `sleep`: counted as searching,
/// it looks `rounds` more times (the spin window), taking the work if it sees it; then it
/// gives up like any searcher.
fn spin_then_sleep(idle: &Idle, queue: &AtomicUsize, rounds: usize) {
    assert!(idle.try_start_spinning());
    for _ in 0..rounds {
        if queue.load(Ordering::Acquire) > 0 {
            idle.stop_spinning();
            idle.stop_searching_with(|| false, |_| {});
            return;
        }
    }
    idle.stop_spinning();
    sleep_until_work(idle, queue, true);
}

/// A push racing a searcher that spins before sleeping: the spinner must see the push,
/// either while it spins or when it gives up.
#[test]
fn push_races_a_spinning_searcher() {
    push_races_a_searcher(|idle, queue| spin_then_sleep(idle, queue, 2));
}

/// The watcher's side of `WorkerCtx::sleep` (a copy of its loop: keep the two in step), for
/// worker 0, already registered as a sleeper and watching: each timed-out park (here, a
/// yield) looks for work; once no outside thread runs, it stops watching first, looks once
/// more, and then sleeps like any sleeper. (The real loop also stops when every worker
/// sleeps; that is the same stop and look.) Returns
/// what the queue holds at the worker's first look after it stopped watching (woken, or
/// leaving with the work it saw): the search that follows `sleep`.
fn watch_until_work(idle: &Idle, queue: &AtomicUsize) -> usize {
    let has_work = || queue.load(Ordering::Acquire) > 0;
    let mut watching = true;
    while idle.is_sleeping(0) {
        if watching {
            if !idle.has_outside() {
                idle.stop_watching();
                watching = false;
            }
            if idle.work_visible_with(has_work) && idle.unregister_sleeper(0) {
                if watching {
                    idle.stop_watching();
                }
                return queue.load(Ordering::Acquire);
            }
            thread::yield_now();
        } else {
            thread::park();
        }
    }
    if watching {
        idle.stop_watching();
    }
    let seen = queue.load(Ordering::Acquire);
    assert!(seen > 0, "woken without work");
    seen
}

/// A push whose wake-up may be deferred (an outside thread runs beside one awake worker, out of
/// two) racing that outside thread leaving and the watcher giving up: with `settles`, the
/// outside thread notifies for queued work as it leaves (`Shared::leave_outside`); without, the
/// watcher alone must catch the push. Either way the sleeping watcher must end up with the work.
fn deferred_push_races_the_watcher(settles: bool) {
    loom::model(move || {
        let idle = Arc::new(Idle::new(2));
        let queue = Arc::new(AtomicUsize::new(0));
        idle.enter_outside();
        idle.register_sleeper(0);
        assert!(idle.try_start_watching());
        let me = thread::current();
        // Two threads act as workers (worker 0 asleep, worker 1 busy), out of two.
        let (i2, q2, me2) = (idle.clone(), queue.clone(), me.clone());
        let pusher = thread::spawn(move || {
            q2.store(1, Ordering::Release);
            i2.notify_with(true, || i2.may_defer(2, 2), |_| me2.unpark());
        });
        let (i3, q3) = (idle.clone(), queue.clone());
        let outside = thread::spawn(move || {
            i3.leave_outside();
            if settles && q3.load(Ordering::Acquire) > 0 {
                i3.notify_with(false, || i3.may_defer(2, 2), |_| me.unpark());
            }
        });
        watch_until_work(&idle, &queue);
        pusher.join().unwrap();
        outside.join().unwrap();
    });
}

/// See [`deferred_push_races_the_watcher`].
#[test]
fn deferred_push_races_the_outside_thread_and_the_watcher() {
    deferred_push_races_the_watcher(true);
}

/// See [`deferred_push_races_the_watcher`].
#[test]
fn deferred_push_is_caught_by_the_watcher_alone() {
    deferred_push_races_the_watcher(false);
}

/// The watcher leaving its watch (woken by a push that did not defer, or taking work it saw)
/// while a second push defers its wake-up because it still saw the watcher: the watcher's
/// search after it stops watching must see that second push (`Idle::stop_watching`'s fence,
/// paired with the notifier's), since nobody else will be woken for it. The outside thread
/// keeps running throughout.
#[test]
fn a_push_deferred_to_a_leaving_watcher_is_seen_by_its_search() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        // Bit 0: the first push; bit 1: the second.
        let queue = Arc::new(AtomicUsize::new(0));
        let deferred = Arc::new(AtomicUsize::new(0));
        idle.enter_outside();
        idle.register_sleeper(0);
        assert!(idle.try_start_watching());
        let me = thread::current();
        // Two threads act as workers (worker 0 asleep, worker 1 busy), out of two.
        let (i1, q1, me1) = (idle.clone(), queue.clone(), me.clone());
        let first = thread::spawn(move || {
            q1.fetch_or(1, Ordering::Release);
            // A notifier that wakes (it saw no outside thread running, say).
            i1.notify_with(true, || false, |_| me1.unpark());
        });
        let (i2, q2, d2) = (idle.clone(), queue.clone(), deferred.clone());
        let second = thread::spawn(move || {
            q2.fetch_or(2, Ordering::Release);
            i2.notify_with(
                true,
                || {
                    let defer = i2.may_defer(2, 2);
                    d2.store(usize::from(defer), Ordering::Relaxed);
                    defer
                },
                |_| me.unpark(),
            );
        });
        let seen = watch_until_work(&idle, &queue);
        first.join().unwrap();
        second.join().unwrap();
        if deferred.load(Ordering::Relaxed) == 1 {
            assert_eq!(seen & 2, 2, "a deferred push missed by the leaving watcher");
        }
    });
}

/// A push that could be deferred by the counts (an outside thread runs beside one awake
/// worker, out of two) while no sleeper watches (it went to sleep before the outside thread
/// started): the wake-up must not be deferred, since nobody would bound the delay, and the
/// awake worker may be blocked for good.
#[test]
fn a_push_is_not_deferred_without_a_watcher() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        let queue = Arc::new(AtomicUsize::new(0));
        idle.enter_outside();
        let me = thread::current();
        let (i2, q2) = (idle.clone(), queue.clone());
        let pusher = thread::spawn(move || {
            q2.store(1, Ordering::Release);
            i2.notify_with(true, || i2.may_defer(2, 2), |_| me.unpark());
        });
        sleep_until_work(&idle, &queue, false);
        pusher.join().unwrap();
    });
}
