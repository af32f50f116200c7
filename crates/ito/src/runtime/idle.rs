//! Sleeping and waking workers without stampedes.
//!
//! Two counters, a list and a flag per slot:
//! - `searching`: workers looking for work to steal. While one is searching, a new task needs
//!   no wake-up: the searcher will find it. A woken worker starts out searching. A worker never
//!   runs a task while counted here (else every push would skip waking sleepers while it runs).
//! - `sleepers` (with its length mirrored in `num_sleeping`): workers parked for lack of work;
//!   `sleeping[i]` is set while slot `i` is in the list, and cleared by whoever takes it out.
//!
//! A push wakes at most one sleeper, and only if nobody is searching
//! ([`Idle::notify_with`]). A searcher that finds work and was the last searcher wakes one
//! more ([`Idle::stop_searching_with`]), so wake-ups spread one at a time, as far as the work
//! goes.
//!
//! Lost wake-ups are prevented Dekker-style: a worker going to sleep first registers in
//! `sleepers`, then (after a `SeqCst` fence) looks at every queue once more; a pusher first
//! pushes, then (after a `SeqCst` fence) reads `num_sleeping` and `searching`. One of them
//! sees the other. The last searcher to give up also looks once more. The loom models in
//! `tests/loom_idle.rs` check both races.
//!
//! A searcher that finds nothing keeps looking for `Builder::idle_spin` before it gives up
//! (`WorkerCtx::keep_looking`), still counted in `searching`; only one at a time (the
//! `spinner` flag, which is not part of the protocol). Nothing above changes: it is a longer
//! search, and it gives up like any searcher.
//!
//! Pushes to a worker's own deque skip the fence: if that races with a worker falling asleep,
//! the task is still in the pusher's own deque, which the pusher will run, so progress is never
//! at stake (only, for a moment, parallelism), and the next push repairs it. Pushes from
//! outside (the injector), which no worker might otherwise look at, always fence.

use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering, fence};

pub(crate) struct Idle {
    searching: AtomicUsize,
    /// Held by the one searcher that keeps looking before it sleeps (`WorkerCtx::keep_looking`).
    /// Not part of the wake-up protocol: a spinner is an ordinary searcher.
    spinner: AtomicBool,
    num_sleeping: AtomicUsize,
    sleepers: Mutex<Vec<usize>>,
    sleeping: Box<[AtomicBool]>,
}

impl Idle {
    /// An idle protocol for up to `slots` workers.
    pub(crate) fn new(slots: usize) -> Self {
        Idle {
            searching: AtomicUsize::new(0),
            spinner: AtomicBool::new(false),
            num_sleeping: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::new()),
            sleeping: (0..slots).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// New work was pushed: wake one sleeper (with `unpark`) if nobody is searching.
    #[inline]
    pub(crate) fn notify_with(&self, fenced: bool, unpark: impl FnOnce(usize)) {
        if fenced {
            fence(Ordering::SeqCst);
        }
        if self.num_sleeping.load(Ordering::SeqCst) == 0
            || self.searching.load(Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_one(unpark);
    }

    #[cold]
    fn wake_one(&self, unpark: impl FnOnce(usize)) {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        // Re-check under the lock: another notifier may have woken a searcher already.
        if self.searching.load(Ordering::SeqCst) != 0 {
            return;
        }
        let Some(i) = list.pop() else { return };
        self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        self.searching.fetch_add(1, Ordering::SeqCst);
        self.sleeping[i].store(false, Ordering::Release);
        drop(list);
        unpark(i);
    }

    /// Whether some worker sleeps idle.
    pub(crate) fn has_sleepers(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) != 0
    }

    /// Workers asleep in the sleepers list now.
    pub(crate) fn num_sleeping(&self) -> usize {
        self.num_sleeping.load(Ordering::Relaxed)
    }

    /// Whether some worker is searching for work (it will find what is pushed, or sleep and
    /// be woken for it).
    pub(crate) fn has_searchers(&self) -> bool {
        self.searching.load(Ordering::SeqCst) != 0
    }

    /// Becomes the one searcher that keeps looking for a while before sleeping; `false` if
    /// another one is already doing so (one is enough to pick up new work without a wake-up,
    /// and idle CPUs burn less).
    pub(crate) fn try_start_spinning(&self) -> bool {
        !self.spinner.load(Ordering::Relaxed) && !self.spinner.swap(true, Ordering::Acquire)
    }

    /// The spinner stops spinning.
    pub(crate) fn stop_spinning(&self) {
        self.spinner.store(false, Ordering::Release);
    }

    /// Whether slot `i` is still in the sleepers list (a parked worker loops on this).
    pub(crate) fn is_sleeping(&self, i: usize) -> bool {
        self.sleeping[i].load(Ordering::Acquire)
    }

    /// A worker starts searching.
    pub(crate) fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// A searcher found work. If it was the last one, wake another to keep looking.
    pub(crate) fn stop_searching_with(&self, unpark: impl FnOnce(usize)) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.notify_with(true, unpark);
        }
    }

    /// A searcher gives up. Returns whether it was the last one (it must then look again).
    pub(crate) fn leave_searching_was_last(&self) -> bool {
        self.searching.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// Worker `i` is about to park.
    pub(crate) fn register_sleeper(&self, i: usize) {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        self.sleeping[i].store(true, Ordering::Relaxed);
        list.push(i);
        self.num_sleeping.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes a would-be sleeper off the list. `false` if a notifier already took it (and will
    /// unpark it, having counted it as searching).
    pub(crate) fn unregister_sleeper(&self, i: usize) -> bool {
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        match list.iter().position(|&j| j == i) {
            Some(pos) => {
                list.swap_remove(pos);
                self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
                self.sleeping[i].store(false, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// After registering as a sleeper: is there work anywhere (`has_work` looks)?
    pub(crate) fn work_visible_with(&self, has_work: impl FnOnce() -> bool) -> bool {
        fence(Ordering::SeqCst);
        has_work()
    }
}
