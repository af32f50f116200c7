//! The task state word: wakes racing a poll, waiters racing the queue to claim a task, and
//! cancellation racing both; and the blocked set that wakes a cancelled synchronous task.

use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::runtime::park::Unblocker;
use crate::task::cancel::BlockedSet;
use crate::task::state::{AfterPoll, CancelRequest, Claim, State};

/// A wake racing the end of a poll produces at most one reschedule, and a wake that produces
/// none came before the poll started (so the poll saw its effect).
#[test]
fn wake_races_poll() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        let s2 = s.clone();
        let waker = thread::spawn(move || s2.transition_to_notified());
        assert_eq!(s.transition_to_running(), Claim::Run);
        let after = s.transition_to_idle();
        let must_enqueue = waker.join().unwrap();
        let reschedules = usize::from(must_enqueue) + usize::from(after == AfterPoll::Reschedule);
        assert!(reschedules <= 1, "one wake, at most one reschedule");
        if reschedules == 1 {
            assert!(!s.transition_to_notified(), "already scheduled");
        }
    });
}

/// A queue entry and a waiter race to run a scheduled task: exactly one wins.
#[test]
fn one_runner_wins() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        let s2 = s.clone();
        let t = thread::spawn(move || s2.transition_to_running() == Claim::Run);
        let mine = s.transition_to_running() == Claim::Run;
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs);
    });
}

/// Two wakers race while the task is idle: exactly one must enqueue it.
#[test]
fn two_wakers_enqueue_once() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        assert_eq!(s.transition_to_running(), Claim::Run);
        assert_eq!(s.transition_to_idle(), AfterPoll::Idle);
        let s2 = s.clone();
        let t = thread::spawn(move || s2.transition_to_notified());
        let mine = s.transition_to_notified();
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs);
    });
}

/// A worker's view of one queue entry: claim the task, then poll it (every poll returns
/// `Pending`) or cancel it. Returns how many times the body was dropped.
fn run_entry(s: &State, queue: &Mutex<usize>) -> usize {
    match s.transition_to_running() {
        Claim::Lost => 0,
        Claim::Cancel => {
            s.transition_to_complete();
            1
        }
        Claim::Run => match s.transition_to_idle() {
            AfterPoll::Idle => 0,
            AfterPoll::Reschedule => {
                *queue.lock().unwrap() += 1;
                0
            }
            AfterPoll::Cancel => {
                s.transition_to_complete();
                1
            }
        },
    }
}

/// A cancellation racing a worker's poll and a waker: the body is dropped exactly once,
/// whichever state the cancellation finds (queued, running, idle), and the task ends complete
/// (every poll here returns `Pending`, so only the cancellation can finish it).
#[test]
fn cancel_races_poll_and_wake() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        let queue = Arc::new(Mutex::new(1usize)); // the spawn's entry
        let (s2, q2) = (s.clone(), queue.clone());
        let waker = thread::spawn(move || {
            if s2.transition_to_notified() {
                *q2.lock().unwrap() += 1;
            }
        });
        let (s3, q3) = (s.clone(), queue.clone());
        let canceller = thread::spawn(move || match s3.request_cancel() {
            CancelRequest::Schedule => *q3.lock().unwrap() += 1,
            CancelRequest::Queued | CancelRequest::Running => {}
            CancelRequest::Nothing => panic!("nothing else cancels or completes it"),
        });
        let mut drops = 0;
        let take = |q: &Mutex<usize>| {
            let mut n = q.lock().unwrap();
            let some = *n > 0;
            if some {
                *n -= 1;
            }
            some
        };
        // One worker runs entries as they come (at most a few), then drains after the joins.
        for _ in 0..2 {
            if take(&queue) {
                drops += run_entry(&s, &queue);
            }
        }
        waker.join().unwrap();
        canceller.join().unwrap();
        while take(&queue) {
            drops += run_entry(&s, &queue);
        }
        assert_eq!(
            drops,
            1,
            "the body is dropped exactly once (state {:#b})",
            s.load()
        );
        assert!(s.is_complete(), "state {:#b}", s.load());
    });
}

/// A synchronous task about to park in a blocking call races its cancellation: the blocked
/// thread either sees `CANCELLED` before parking or is unparked by the canceller (a lost
/// wake-up would leave it parked forever, which loom reports as a deadlock).
#[test]
fn cancelled_blocked_task_is_woken() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        assert_eq!(s.transition_to_running(), Claim::Run);
        let set = Arc::new(BlockedSet::new());
        const TASK: usize = 0x1000;
        let (s2, set2) = (s.clone(), set.clone());
        let blocked = thread::spawn(move || {
            let key = set2.register(TASK, Unblocker::Thread(thread::current()));
            while !s2.is_cancelled() {
                thread::park();
            }
            set2.unregister(TASK, key);
        });
        assert_eq!(s.request_cancel(), CancelRequest::Running);
        set.wake(TASK);
        blocked.join().unwrap();
    });
}

/// A queue entry and a helping waiter (`try_run_inline`) race to claim a queued task while it
/// is cancelled: exactly one of them wins, and a cancellation that found the task queued is
/// never lost (the winner cancels instead of running).
#[test]
fn cancel_races_two_claimers() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        let (s2, s3) = (s.clone(), s.clone());
        let entry = thread::spawn(move || s2.transition_to_running());
        let canceller = thread::spawn(move || s3.request_cancel());
        let mine = s.transition_to_running();
        let theirs = entry.join().unwrap();
        let request = canceller.join().unwrap();
        let (winner, loser) = if mine == Claim::Lost {
            (theirs, mine)
        } else {
            (mine, theirs)
        };
        assert_eq!(loser, Claim::Lost, "exactly one claim wins");
        assert_ne!(winner, Claim::Lost, "exactly one claim wins");
        match request {
            CancelRequest::Queued => assert_eq!(winner, Claim::Cancel),
            CancelRequest::Running => assert_eq!(winner, Claim::Run),
            other => panic!("the task is never idle or complete here: {other:?}"),
        }
        s.transition_to_complete();
        assert!(!s.is_cancelled());
    });
}
