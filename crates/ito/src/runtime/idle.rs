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
//! **Deferred wake-ups.** A thread that is not a worker but runs in `block_on` (polling or
//! spinning, not parked) holds a CPU too: with `workers` workers awake beside it, the runtime
//! runs more threads than it was sized for, and on a machine with as many CPUs as workers they
//! take turns on them (the pool benchmark's main-thread runs, 100 tiny tasks spawned from
//! `block_on` on 2 workers and 2 CPUs, did about 125,000 runs/s when one worker ran them all and
//! 40,000-70,000 when both did; `docs/scheduler.md`). So a wake-up is deferred when `outside`
//! threads are running, at least one worker is awake, and awake workers plus `outside` already
//! reach `workers` ([`Idle::may_defer`]). A deferred task still gets a thread:
//! - the awake workers find it when they next look (they are not searching, or the push would
//!   not have wanted a wake-up, so they are running tasks);
//! - an outside thread that stops running (parks, or leaves `block_on`) first leaves `outside`,
//!   then (after a `SeqCst` fence) looks for queued work and notifies for it. A thread counts
//!   once, by its outermost `block_on`, and is counted out wherever it parks in ito (a nested
//!   `block_on`, as ito's blocking calls are, `Future::wait`, an STM retry: `pause_outside`
//!   in `block_on.rs`); one that blocks outside ito (a lock, a system call) stays counted;
//! - and since either may take arbitrarily long (a task or a `block_on` future that blocks in
//!   a lock or a system call), a wake-up is deferred only while a **watcher** is there: one
//!   sleeper (the `watcher` flag) parks with a timeout while `outside` threads run, and on
//!   each timeout takes any queued work itself (it stops watching once no outside thread runs
//!   or every worker sleeps: nothing can be deferred then). A watcher that stops watching clears the flag,
//!   then (after a `SeqCst` fence) looks at the queues once more, so a notifier that saw the
//!   flag set and deferred cannot be missed. The delay is bounded by the watch period.
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
    /// Threads that are not workers and run in `block_on` (polling or spinning, not parked).
    outside: AtomicUsize,
    /// Held by the one sleeper that parks with a timeout while `outside` threads run; wake-ups
    /// are deferred only while it is held.
    watcher: AtomicBool,
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
            outside: AtomicUsize::new(0),
            watcher: AtomicBool::new(false),
            sleepers: Mutex::new(Vec::new()),
            sleeping: (0..slots).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// New work was pushed: wake one sleeper (with `unpark`) if nobody is searching, unless
    /// `defer` (called only then, after the fence) says the wake-up may be deferred
    /// ([`Idle::may_defer`]).
    #[inline]
    pub(crate) fn notify_with(
        &self,
        fenced: bool,
        defer: impl FnOnce() -> bool,
        unpark: impl FnOnce(usize),
    ) {
        if fenced {
            fence(Ordering::SeqCst);
        }
        if self.num_sleeping.load(Ordering::SeqCst) == 0
            || self.searching.load(Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_one(defer, unpark);
    }

    #[cold]
    fn wake_one(&self, defer: impl FnOnce() -> bool, unpark: impl FnOnce(usize)) {
        if defer() {
            return;
        }
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

    /// A searcher found work. If it was the last one, wake another to keep looking (unless
    /// `defer` says the wake-up may be deferred).
    pub(crate) fn stop_searching_with(
        &self,
        defer: impl FnOnce() -> bool,
        unpark: impl FnOnce(usize),
    ) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.notify_with(true, defer, unpark);
        }
    }

    /// Whether a wake-up may be deferred, with `active` threads acting as workers out of a
    /// target of `workers`: a watcher is there, and threads outside the runtime are running
    /// beside at least one awake worker, enough of them together to fill `workers` CPUs. Called
    /// by a notifier after its `SeqCst` fence.
    pub(crate) fn may_defer(&self, active: usize, workers: usize) -> bool {
        let outside = self.outside.load(Ordering::SeqCst);
        if outside == 0 || !self.watcher.load(Ordering::SeqCst) {
            return false;
        }
        let awake = self.awake(active);
        awake >= 1 && awake + outside >= workers
    }

    /// Of `active` threads acting as workers, those not asleep in the sleepers list (running
    /// tasks, searching, or about to sleep).
    pub(crate) fn awake(&self, active: usize) -> usize {
        active.saturating_sub(self.num_sleeping.load(Ordering::SeqCst))
    }

    /// A thread that is not a worker starts running in `block_on`.
    pub(crate) fn enter_outside(&self) {
        self.outside.fetch_add(1, Ordering::SeqCst);
    }

    /// A thread counted by [`Idle::enter_outside`] stops running (it parks or returns). It
    /// must then look for queued work and notify for it: a wake-up may have been deferred
    /// because it was running (the fence here pairs with the notifier's).
    pub(crate) fn leave_outside(&self) {
        self.outside.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Whether threads that are not workers run in `block_on` now.
    pub(crate) fn has_outside(&self) -> bool {
        self.outside.load(Ordering::SeqCst) != 0
    }

    /// Becomes the watcher (a sleeper that parks with a timeout); `false` if another sleeper
    /// already is one.
    pub(crate) fn try_start_watching(&self) -> bool {
        !self.watcher.load(Ordering::Relaxed) && !self.watcher.swap(true, Ordering::SeqCst)
    }

    /// The watcher stops watching. It must then look at the queues once more (the fence here
    /// pairs with a notifier's: one that saw the flag still set deferred its wake-up).
    pub(crate) fn stop_watching(&self) {
        self.watcher.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
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
