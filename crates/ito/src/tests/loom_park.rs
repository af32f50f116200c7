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

use crate::runtime::loops::{Resumes, unblock};
use crate::runtime::park::{Idler, LoopPark, Seeker, Sleep};

/// Queues of one counter: a push sets bits, a steal takes them all (or, `one_at_a_time`, the
/// lowest one, as a steal of one task does).
#[derive(Default)]
struct Queue {
    bits: AtomicUsize,
    one_at_a_time: bool,
}

impl Queue {
    fn one_at_a_time() -> Queue {
        Queue {
            bits: AtomicUsize::new(0),
            one_at_a_time: true,
        }
    }
}

impl Seeker for Queue {
    type Found = usize;
    fn steal_anywhere(&self) -> Option<usize> {
        if !self.one_at_a_time {
            return match self.bits.swap(0, Ordering::AcqRel) {
                0 => None,
                bits => Some(bits),
            };
        }
        let mut bits = self.bits.load(Ordering::Acquire);
        while bits != 0 {
            let lowest = bits & bits.wrapping_neg();
            match self.bits.compare_exchange(
                bits,
                bits & !lowest,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(lowest),
                Err(now) => bits = now,
            }
        }
        None
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

/// A compensation thread's view of the queues: it is no longer needed while more threads
/// act as workers than the runtime was sized for (`WorkerCtx::should_retire`).
struct Compensator<'a> {
    queue: &'a Queue,
    sleep: &'a Sleep,
    /// The I/O driver has started and no thread blocks in it.
    io_unwatched: bool,
}

impl Seeker for Compensator<'_> {
    type Found = usize;
    fn steal_anywhere(&self) -> Option<usize> {
        self.queue.steal_anywhere()
    }
    fn has_queued_work(&self) -> bool {
        self.queue.has_queued_work()
    }
    fn is_shutdown(&self) -> bool {
        false
    }
    fn should_retire(&self) -> bool {
        self.sleep.over_target()
    }
    fn keep_alive(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn before_park(&self) {}
    fn count_park(&self) {}
    fn io_unwatched(&self) -> bool {
        self.io_unwatched
    }
}

/// A runtime of one worker (slot 0) and one compensation thread (slot 1): one more active
/// thread than the target. `comp` runs on a thread of its own with the compensation thread's
/// idler and view of the queues (the driver unwatched if `io_unwatched`).
fn with_compensator(
    io_unwatched: bool,
    comp: impl FnOnce(&Sleep, &Idler, &Compensator<'_>) + Send + 'static,
) -> (Arc<Sleep>, Arc<Queue>, thread::JoinHandle<()>) {
    let (sleep, queue) = runtime(2, 1, Duration::ZERO);
    sleep.add_active();
    let (s1, q1) = (sleep.clone(), queue.clone());
    let handle = thread::spawn(move || {
        let idler = Idler::new(1, true, s1.new_parker(1));
        let seeker = Compensator {
            queue: &q1,
            sleep: &s1,
            io_unwatched,
        };
        comp(&s1, &idler, &seeker);
    });
    (sleep, queue, handle)
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
        taken |= find_work(sleep, queue, idler);
    }
}

/// The worker loop once its own queues are empty: search, keep looking, sleep, until it finds
/// work. Returns what it found, which it then runs (it is no longer searching).
fn find_work(sleep: &Sleep, queue: &impl Seeker<Found = usize>, idler: &Idler) -> usize {
    loop {
        sleep.start_looking(idler);
        if let Some(bits) = queue.steal_anywhere() {
            sleep.work_found(idler);
            return bits;
        }
        if let Some(bits) = sleep.keep_looking(idler, queue) {
            return bits;
        }
        if let Some(bits) = sleep.sleep(idler, queue) {
            return bits;
        }
    }
}

/// Once every thread of a model is done, nobody may be left counted as searching or asleep:
/// a count left behind would make every later push skip its wake-up, or wake a ghost.
fn assert_settled(sleep: &Sleep) {
    assert!(!sleep.has_searchers(), "a searcher is still counted");
    assert!(!sleep.has_sleepers(), "a sleeper is still counted");
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

/// A thread counted as running outside (in `block_on`) that parks and runs again, as
/// `pause_outside` counts it: out, then back in; while out, it pushes `bit` if given.
fn spawn_outside_pause(
    sleep: &Arc<Sleep>,
    queue: &Arc<Queue>,
    bit: Option<usize>,
) -> thread::JoinHandle<()> {
    let (s, q) = (sleep.clone(), queue.clone());
    thread::spawn(move || {
        s.leave_outside(|| q.has_queued_work());
        if let Some(bit) = bit {
            push(&s, &q, bit);
        }
        s.enter_outside();
    })
}

/// Worker 0 of `sleep` runs until it has taken every bit of `want`, while the threads that
/// `race` starts (after the worker's parker is registered) run beside it; then they are
/// joined and the counts must have settled.
fn race_worker(
    sleep: &Arc<Sleep>,
    queue: &Arc<Queue>,
    want: usize,
    race: impl FnOnce() -> Vec<thread::JoinHandle<()>>,
) {
    let idler = Idler::new(0, false, sleep.new_parker(0));
    let others = race();
    work_until(sleep, queue, &idler, want);
    for t in others {
        t.join().unwrap();
    }
    assert_settled(sleep);
}

/// Worker 0 takes a push made beside the compensation thread `comp`, which ends retired:
/// one thread is left acting as a worker, and the counts have settled.
fn worker_gets_a_push_beside(sleep: &Arc<Sleep>, queue: &Arc<Queue>, comp: thread::JoinHandle<()>) {
    let pusher = spawn_pusher(sleep, queue, 1);
    let idler = Idler::new(0, false, sleep.new_parker(0));
    work_until(sleep, queue, &idler, 1);
    comp.join().unwrap();
    pusher.join().unwrap();
    assert_eq!(sleep.active(), 1);
    assert_settled(sleep);
}

/// A push from outside racing a worker that falls asleep without having searched.
#[test]
fn loom_park_push_races_a_worker_falling_asleep() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::ZERO);
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let pusher = spawn_pusher(&sleep, &queue, 1);
        // Woken, or awake because it saw the work: it searches next, as the worker loop does.
        if sleep.sleep(&idler, &*queue).is_none() {
            work_until(&sleep, &queue, &idler, 1);
        }
        pusher.join().unwrap();
        assert_settled(&sleep);
    });
}

/// A push racing the last searcher giving up: the push sees a searcher and wakes nobody, so
/// the searcher must see the push when it gives up.
#[test]
fn loom_park_push_races_the_last_searcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::ZERO);
        race_worker(&sleep, &queue, 1, || {
            let pusher = spawn_pusher(&sleep, &queue, 1);
            vec![pusher]
        });
    });
}

/// A push racing a searcher that keeps looking before it sleeps: it must see the push, either
/// while it spins or when it gives up.
#[test]
fn loom_park_push_races_a_spinning_searcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(1, 1, Duration::from_micros(50));
        race_worker(&sleep, &queue, 1, || {
            let pusher = spawn_pusher(&sleep, &queue, 1);
            vec![pusher]
        });
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
        race_worker(&sleep, &queue, 1, || {
            let pusher = spawn_pusher(&sleep, &queue, 1);
            let (s3, q3) = (sleep.clone(), queue.clone());
            let outside = thread::spawn(move || s3.leave_outside(|| q3.has_queued_work()));
            vec![pusher, outside]
        });
    });
}

/// An outside thread that starts running while the worker falls asleep, and never stops: a
/// push may be deferred only if the sleeper watches, and then its watch must find the work.
#[test]
fn loom_park_a_push_is_deferred_only_to_a_watcher() {
    loom::model(|| {
        let (sleep, queue) = runtime(2, 2, Duration::ZERO);
        race_worker(&sleep, &queue, 1, || {
            let s1 = sleep.clone();
            let outside = thread::spawn(move || s1.enter_outside());
            let pusher = spawn_pusher(&sleep, &queue, 1);
            vec![pusher, outside]
        });
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
        race_worker(&sleep, &queue, 3, || {
            let outside = spawn_outside_pause(&sleep, &queue, Some(1));
            let second = spawn_pusher(&sleep, &queue, 2);
            vec![outside, second]
        });
    });
}

/// Two pushes and two workers, each of which runs the first task it finds for ever (a long
/// task): the searcher that finds work must wake the other worker if a push skipped its
/// wake-up because it saw that searcher, or the second task waits for ever.
#[test]
fn loom_park_a_searcher_that_finds_work_wakes_the_next() {
    loom::model(|| {
        let sleep = Arc::new(Sleep::new(2, 2, Duration::ZERO));
        let queue = Arc::new(Queue::one_at_a_time());
        let (s1, q1) = (sleep.clone(), queue.clone());
        let other = thread::spawn(move || {
            let idler = Idler::new(1, false, s1.new_parker(1));
            find_work(&s1, &*q1, &idler)
        });
        let (s2, q2) = (sleep.clone(), queue.clone());
        let pusher = thread::spawn(move || {
            push(&s2, &q2, 1);
            push(&s2, &q2, 2);
        });
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let mine = find_work(&sleep, &*queue, &idler);
        let theirs = other.join().unwrap();
        pusher.join().unwrap();
        assert_eq!(mine | theirs, 3);
        assert_settled(&sleep);
    });
}

/// A compensation thread that is no longer needed sleeps; a push wakes it just as it decides
/// to retire. It retires (`Sleep::retire`, as `WorkerCtx::retire` calls it), and the worker,
/// asleep, must still get the work: the wake-up the compensation thread was counted for is
/// handed on.
#[test]
fn loom_park_a_retiring_compensator_hands_its_wake_up_on() {
    loom::model(|| {
        let (sleep, queue, comp) = with_compensator(false, |s1, idler, seeker| {
            assert!(s1.sleep(idler, seeker).is_none(), "it never searched");
            assert!(s1.retire(idler, seeker), "the only surplus thread retires");
        });
        worker_gets_a_push_beside(&sleep, &queue, comp);
    });
}

/// A compensation thread whose steals all miss: it can see work but never take it, as when
/// its steal loses the race for the one task.
struct Blind<'a>(&'a Compensator<'a>);

impl Seeker for Blind<'_> {
    type Found = usize;
    fn steal_anywhere(&self) -> Option<usize> {
        None
    }
    fn has_queued_work(&self) -> bool {
        self.0.has_queued_work()
    }
    fn is_shutdown(&self) -> bool {
        false
    }
    fn should_retire(&self) -> bool {
        self.0.should_retire()
    }
    fn keep_alive(&self) -> Duration {
        self.0.keep_alive()
    }
    fn before_park(&self) {}
    fn count_park(&self) {}
}

/// The last searcher is a compensation thread that is no longer needed. A push sees it
/// searching and wakes nobody; it sees the work as it falls asleep and takes itself off the
/// sleepers list, but then retires (the worker loop's top) instead of running it. The worker,
/// asleep, must still get the work: retiring hands on the work the thread leaves behind.
/// (Before this was so, a test saw both workers asleep beside a queued task about once in 300
/// runs.)
#[test]
fn loom_park_a_compensator_that_retires_after_seeing_work_hands_it_on() {
    loom::model(|| {
        let (sleep, queue, comp) = with_compensator(false, |s1, idler, seeker| {
            let seeker = Blind(seeker);
            s1.start_looking(idler);
            assert!(s1.sleep(idler, &seeker).is_none(), "its steals miss");
            assert!(seeker.should_retire());
            assert!(s1.retire(idler, &seeker), "the only surplus thread retires");
        });
        worker_gets_a_push_beside(&sleep, &queue, comp);
    });
}

/// A compensation thread slept in the I/O driver until its recheck, and the worker fell
/// asleep meanwhile on its futex, with no timeout (the driver was held). The compensation
/// thread retires and never takes the driver again: with the driver unwatched, it must wake
/// the worker, which then sleeps in the driver (here: stops searching).
#[test]
fn loom_park_a_compensator_that_retires_from_the_driver_wakes_a_sleeper() {
    loom::model(|| {
        let (sleep, queue, comp) = with_compensator(true, |s1, idler, seeker| {
            // The worker parks on its futex while this thread holds the driver.
            while !s1.has_sleepers() {
                thread::yield_now();
            }
            assert!(s1.retire(idler, seeker), "the only surplus thread retires");
        });
        let idler = Idler::new(0, false, sleep.new_parker(0));
        assert!(sleep.sleep(&idler, &*queue).is_none(), "there is no work");
        sleep.work_found(&idler);
        comp.join().unwrap();
        assert_eq!(sleep.active(), 1);
        assert_settled(&sleep);
    });
}

/// The outside thread parks and runs again (counted out, then back in) while the watcher, which
/// saw nobody outside, stops watching; a push made once the thread is back may defer its
/// wake-up, having seen the watcher still there. The watcher must see that push: it gives up
/// the watch before its last look.
#[test]
fn loom_park_a_watcher_that_stops_sees_a_push_deferred_meanwhile() {
    loom::model(|| {
        let (sleep, queue) = runtime(2, 2, Duration::ZERO);
        sleep.enter_outside();
        race_worker(&sleep, &queue, 1, || {
            let outside = spawn_outside_pause(&sleep, &queue, None);
            let pusher = spawn_pusher(&sleep, &queue, 1);
            vec![outside, pusher]
        });
    });
}

/// Worker 0's view when it has suspended a loop: its own resume queue (the shipped
/// `Resumes`) beside the shared queues; finding a queued loop is finding work.
struct Home<'a> {
    queue: &'a Queue,
    resumes: &'a Resumes,
}

impl Seeker for Home<'_> {
    type Found = usize;
    fn steal_anywhere(&self) -> Option<usize> {
        // As `WorkerCtx`: its own resume queue first.
        if let Some(id) = self.resumes.pop() {
            return Some(1 << (8 + id));
        }
        self.queue.steal_anywhere()
    }
    fn has_queued_work(&self) -> bool {
        self.resumes.is_pending() || self.queue.has_queued_work()
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

/// A loop of worker 0 blocks (`LoopPark::try_park`, then it suspends and the worker looks for
/// work) while another thread unblocks it (`LoopToken::unblock`: the state word, the queue,
/// the targeted wake-up). Whatever the order, the worker resumes the loop exactly once, an
/// unblock that comes before the suspension is consumed instead of lost, and a worker that
/// falls asleep meanwhile is woken.
#[test]
fn loom_park_an_unblocked_loop_is_resumed_at_home_once() {
    loom::model(|| {
        let (sleep, resumes, unblocker) = block_and_unblock();
        unblocker.join().unwrap();
        assert!(!resumes.is_pending(), "a loop queued twice");
        assert_settled(&sleep);
    });
}

/// Worker 0's loop blocks (`LoopPark::try_park`, then the worker looks for work until the
/// loop is queued) while another thread unblocks it (`loops::unblock`). Returns when the
/// worker has resumed the loop, or found the unblock before it suspended; the unblocker may
/// still be running.
fn block_and_unblock() -> (Arc<Sleep>, Arc<Resumes>, thread::JoinHandle<()>) {
    let sleep = Arc::new(Sleep::new(1, 1, Duration::ZERO));
    let queue = Queue::default();
    let resumes = Arc::new(Resumes::default());
    let park = Arc::new(LoopPark::new());
    let idler = Idler::new(0, false, sleep.new_parker(0));
    let (s, r, p) = (sleep.clone(), resumes.clone(), park.clone());
    let unblocker = thread::spawn(move || unblock(&p, || (&*r, &*s), 0, 0));
    if park.try_park() {
        let home = Home {
            queue: &queue,
            resumes: &resumes,
        };
        assert_eq!(find_work(&sleep, &home, &idler), 1 << 8);
        park.resumed();
    }
    (sleep, resumes, unblocker)
}

/// The `Runtime` lets go of its block only after an unblocker's last access to it
/// (`Resumes::wait_unblockers`, `runtime/owners.rs`): the loop the unblocker queued resumes,
/// its task ends and the runtime is dropped while the unblocker may still be between its push
/// and its wake-up. `Resumes::block` stands for the block: the unblocker reads it at its last
/// access, the model writes it where the `Runtime` frees the block; loom reports the read as
/// a data race unless the free waits for it.
#[test]
fn loom_park_the_runtime_frees_its_block_only_after_the_unblocker_is_done() {
    loom::model(|| {
        let (_sleep, resumes, unblocker) = block_and_unblock();
        // The loop's task ended and the runtime is dropped: it waits, then frees the block.
        resumes.wait_unblockers();
        // SAFETY: the model's own cell; loom checks that no access races this one.
        resumes.block.0.with_mut(|b| unsafe { *b = 1 });
        unblocker.join().unwrap();
    });
}

/// Two unblocks of one park (a wake-up and a timeout, say): the loop is queued once.
#[test]
fn loom_park_two_unblocks_queue_a_loop_once() {
    loom::model(|| {
        let park = Arc::new(LoopPark::new());
        let queued = Arc::new(AtomicUsize::new(0));
        let unblockers: Vec<_> = (0..2)
            .map(|_| {
                let (p, q) = (park.clone(), queued.clone());
                thread::spawn(move || {
                    if p.unblock() {
                        q.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let parked = park.try_park();
        for u in unblockers {
            u.join().unwrap();
        }
        let queued = queued.load(Ordering::SeqCst);
        if parked {
            assert_eq!(queued, 1);
            park.resumed();
        } else {
            assert_eq!(queued, 0);
        }
    });
}

/// One loop waits twice (`LoopPark` reused, as a `LoopToken` is across waits), while the
/// worker spins before it sleeps. The first wait's event may come late, during the second
/// wait (a timer of `park_until` that fired as the wait ended): it may make the second wait
/// return spuriously, but the loop is queued only while it is parked, once per suspension,
/// and no unblock is lost.
#[test]
fn loom_park_a_stale_unblock_queues_a_loop_only_while_it_is_parked() {
    use loom::sync::atomic::AtomicBool;
    loom::model(|| {
        let sleep = Arc::new(Sleep::new(1, 1, Duration::from_micros(50)));
        let queue = Queue::default();
        let resumes = Arc::new(Resumes::default());
        let park = Arc::new(LoopPark::new());
        let idler = Idler::new(0, false, sleep.new_parker(0));
        let events: Vec<Arc<AtomicBool>> =
            (0..2).map(|_| Arc::new(AtomicBool::new(false))).collect();
        let unblockers: Vec<_> = events
            .iter()
            .map(|e| {
                let (s, r, p, e) = (sleep.clone(), resumes.clone(), park.clone(), e.clone());
                thread::spawn(move || {
                    e.store(true, Ordering::SeqCst);
                    unblock(&p, || (&*r, &*s), 0, 0);
                })
            })
            .collect();
        let home = Home {
            queue: &queue,
            resumes: &resumes,
        };
        for e in &events {
            while !e.load(Ordering::SeqCst) {
                if park.try_park() {
                    assert_eq!(find_work(&sleep, &home, &idler), 1 << 8);
                    park.resumed();
                }
                assert!(!resumes.is_pending(), "a running loop is queued");
            }
        }
        for u in unblockers {
            u.join().unwrap();
        }
        assert!(!resumes.is_pending(), "a loop queued while it ran");
        assert_settled(&sleep);
    });
}
