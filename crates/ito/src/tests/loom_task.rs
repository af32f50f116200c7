//! The task state word: wakes racing a poll, and waiters racing the queue to claim a task.

use loom::sync::Arc;
use loom::thread;

use crate::task::state::{AfterPoll, State};

/// A wake racing the end of a poll produces at most one reschedule, and a wake that produces
/// none came before the poll started (so the poll saw its effect).
#[test]
fn wake_races_poll() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        let s2 = s.clone();
        let waker = thread::spawn(move || s2.transition_to_notified());
        assert!(s.transition_to_running());
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
        let t = thread::spawn(move || s2.transition_to_running());
        let mine = s.transition_to_running();
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs);
    });
}

/// Two wakers race while the task is idle: exactly one must enqueue it.
#[test]
fn two_wakers_enqueue_once() {
    loom::model(|| {
        let s = Arc::new(State::new_scheduled());
        assert!(s.transition_to_running());
        assert_eq!(s.transition_to_idle(), AfterPoll::Idle);
        let s2 = s.clone();
        let t = thread::spawn(move || s2.transition_to_notified());
        let mine = s.transition_to_notified();
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs);
    });
}
