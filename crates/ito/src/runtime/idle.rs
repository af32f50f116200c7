//! Sleeping and waking workers without stampedes.
//!
//! Two counters and a list:
//! - `searching`: workers looking for work to steal. While one is searching, a new task needs
//!   no wake-up: the searcher will find it. A woken worker starts out searching.
//! - `sleepers` (with its length mirrored in `num_sleeping`): workers parked for lack of work.
//!
//! A push wakes at most one sleeper, and only if nobody is searching
//! ([`Idle::notify_work`]). A searcher that finds work and was the last searcher wakes one
//! more ([`Idle::stop_searching`]), so wake-ups spread one at a time, as far as the work goes.
//!
//! Lost wake-ups are prevented Dekker-style: a worker going to sleep first registers in
//! `sleepers`, then (after a `SeqCst` fence) looks at every queue once more; a pusher first
//! pushes, then (after a `SeqCst` fence) reads `searching` and `num_sleeping`. One of them
//! sees the other. The last searcher to give up also looks once more.
//!
//! Pushes to a worker's own deque skip the fence: if that races with a worker falling asleep,
//! the task is still in the pusher's own deque, which the pusher will run, so progress is never
//! at stake (only, for a moment, parallelism), and the next push repairs it. Pushes from
//! outside (the injector), which no worker might otherwise look at, always fence.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

use super::Shared;
use super::worker::Slot;

pub(super) struct Idle {
    searching: AtomicUsize,
    num_sleeping: AtomicUsize,
    sleepers: Mutex<Vec<usize>>,
}

impl Idle {
    pub(super) fn new() -> Self {
        Idle {
            searching: AtomicUsize::new(0),
            num_sleeping: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::new()),
        }
    }

    /// New work was pushed: wake one sleeper if nobody is searching.
    #[inline]
    pub(super) fn notify_work(&self, shared: &'static Shared, fenced: bool) {
        if fenced {
            fence(Ordering::SeqCst);
        }
        if self.num_sleeping.load(Ordering::SeqCst) == 0
            || self.searching.load(Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_one(shared);
    }

    #[cold]
    fn wake_one(&self, shared: &'static Shared) {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        // Re-check under the lock: another notifier may have woken a searcher already.
        if self.searching.load(Ordering::SeqCst) != 0 {
            return;
        }
        let Some(i) = list.pop() else { return };
        self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        self.searching.fetch_add(1, Ordering::SeqCst);
        drop(list);
        let slot = shared.slots[i].get().expect("sleepers have slots");
        slot.sleeping.store(false, Ordering::Release);
        slot.unpark();
    }

    pub(super) fn has_sleepers(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) != 0
    }

    pub(super) fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// A searcher found work. If it was the last one, wake another to keep looking.
    pub(super) fn stop_searching(&self, shared: &'static Shared) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.notify_work(shared, true);
        }
    }

    /// A searcher gives up. Returns whether it was the last one (it must then look again).
    pub(super) fn leave_searching_was_last(&self) -> bool {
        self.searching.fetch_sub(1, Ordering::SeqCst) == 1
    }

    pub(super) fn register_sleeper(&self, index: usize, slot: &Slot) {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        slot.sleeping.store(true, Ordering::Relaxed);
        list.push(index);
        self.num_sleeping.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes a would-be sleeper off the list. `false` if a notifier already took it (and will
    /// unpark it, having counted it as searching).
    pub(super) fn unregister_sleeper(&self, index: usize, slot: &Slot) -> bool {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        match list.iter().position(|&i| i == index) {
            Some(pos) => {
                list.swap_remove(pos);
                self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
                slot.sleeping.store(false, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// After registering as a sleeper: is there work anywhere?
    pub(super) fn work_visible(&self, shared: &'static Shared) -> bool {
        fence(Ordering::SeqCst);
        if !shared.injector.is_empty() {
            return true;
        }
        let n = shared.num_slots.load(Ordering::Acquire);
        shared.slots[..n]
            .iter()
            .filter_map(|s| s.get())
            .any(Slot::has_work)
    }
}
