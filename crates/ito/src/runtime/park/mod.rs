//! Parking: how a runtime thread that has nothing to do goes to sleep, and who wakes it.
//!
//! This module is the one owner of parking. The protocol, and the argument that it never
//! loses a wake-up, are in `README.md` beside this file.
//!
//! - [`Sleep`] (this file) is the runtime's shared half: the counts of searching, sleeping,
//!   active and outside threads, the sleepers list, and the unparker of every slot. Pushers
//!   call [`Sleep::notify`].
//! - `sleep.rs` is a runtime thread's half: [`Idler`] (its parker and whether it searches)
//!   and the procedures a worker calls when it runs out of work ([`Sleep::start_looking`],
//!   [`Sleep::work_found`], [`Sleep::keep_looking`], [`Sleep::sleep`]), written against the
//!   [`Seeker`] trait so that the loom models run them as they ship.
//! - `outside.rs` counts threads that are not workers but run in `block_on`, and parks them.
//! - `parker.rs` is the seam every runtime thread parks through.
//! - `spin.rs` is the one spin-before-park policy.

mod blocker;
mod outside;
mod parker;
mod sleep;
mod spin;

use std::sync::OnceLock;
use std::time::Duration;

use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering, fence};

pub(crate) use blocker::{Blocker, LoopPark, Unblocker};
pub(crate) use outside::{CountedOutside, park_blocked, pause_outside};
#[cfg(loom)]
pub(crate) use parker::PollPark;
pub(crate) use parker::{Parker, Unparker};
pub(crate) use sleep::{Idler, Seeker};
pub(crate) use spin::{Backoff, Spin, spin_briefly};

/// The runtime's half of parking: who searches, who sleeps, who runs, and how to wake them.
pub(crate) struct Sleep {
    /// Threads looking for work to steal. While one searches, a push needs no wake-up.
    searching: AtomicUsize,
    /// Held by the one searcher that keeps looking before it sleeps (not part of the
    /// protocol: a spinner is an ordinary searcher).
    spinner: AtomicBool,
    /// The length of `sleepers`, readable without the lock.
    num_sleeping: AtomicUsize,
    /// Threads acting as workers: not blocked in a wait, not retired.
    active: AtomicUsize,
    /// The target parallelism.
    workers: usize,
    /// Threads that are not workers and run in `block_on` (polling or spinning, not parked).
    outside: AtomicUsize,
    /// Held by the one sleeper that parks with a timeout while `outside` threads run;
    /// wake-ups are deferred only while it is held.
    watcher: AtomicBool,
    /// Slots whose threads sleep for lack of work.
    sleepers: Mutex<Vec<usize>>,
    /// Set while slot `i` is in `sleepers`; cleared by whoever takes it out.
    sleeping: Box<[AtomicBool]>,
    /// Set by [`Sleep::wake_slot`] when it takes slot `i` out of `sleepers`: the thread was
    /// woken for its own resume queue, not counted as searching. Cleared by that thread.
    woken_for_resume: Box<[AtomicBool]>,
    /// Each slot's unparker, set when its first thread starts.
    unparkers: Box<[OnceLock<Unparker>]>,
    /// How long a worker out of work keeps looking before it sleeps.
    idle_spin: Spin,
    /// The I/O driver, started by the first registration; idle threads park in it.
    #[cfg(not(loom))]
    io: std::sync::Arc<crate::io::Slot>,
}

impl Sleep {
    /// Parking for `slots` threads, `workers` of them permanent (and active from the start).
    pub(crate) fn new(slots: usize, workers: usize, idle_spin: Duration) -> Sleep {
        Sleep {
            searching: AtomicUsize::new(0),
            spinner: AtomicBool::new(false),
            num_sleeping: AtomicUsize::new(0),
            active: AtomicUsize::new(workers),
            workers,
            outside: AtomicUsize::new(0),
            watcher: AtomicBool::new(false),
            sleepers: Mutex::new(Vec::new()),
            sleeping: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            woken_for_resume: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            unparkers: (0..slots).map(|_| OnceLock::new()).collect(),
            idle_spin: Spin::idle(idle_spin),
            #[cfg(not(loom))]
            io: Default::default(),
        }
    }

    /// A parker for slot `index`, whose unparker this registers. A slot keeps its parker for
    /// life (a compensation slot hands it to the slot's next thread).
    pub(crate) fn new_parker(&self, index: usize) -> Parker {
        let parker = Parker::new(
            #[cfg(not(loom))]
            self.io.clone(),
        );
        assert!(
            self.unparkers[index].set(parker.unparker()).is_ok(),
            "ito: slot {index} was given a second parker"
        );
        parker
    }

    /// The runtime's I/O driver, started now if it was not. Threads asleep when it starts are
    /// woken once, so that one of them moves into the driver.
    #[cfg(not(loom))]
    pub(crate) fn io_driver(&self) -> std::io::Result<&crate::io::Driver> {
        self.io.get_or_start(|| self.unpark_all())
    }

    /// The slot of the runtime's I/O driver, the driver started: what a registered source
    /// keeps, since it may outlive the runtime's shared block (`io/evented.rs`).
    #[cfg(not(loom))]
    pub(crate) fn io_slot(&self) -> std::io::Result<std::sync::Arc<crate::io::Slot>> {
        self.io_driver()?;
        Ok(self.io.clone())
    }

    /// Whether the I/O driver has started: readiness then reaches tasks only through a thread
    /// that polls it, so the last active thread must not block without a replacement.
    pub(crate) fn io_started(&self) -> bool {
        #[cfg(not(loom))]
        return self.io.get().is_some();
        #[cfg(loom)]
        false
    }

    /// A running worker's look at the driver, without blocking, if it has started and no
    /// other thread holds it: readiness is not left waiting behind a busy queue. The tasks it
    /// wakes go to the caller's queues.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn poll_io_now(&self) {
        if let Some(driver) = self.io.get() {
            poll_now(driver);
        }
    }

    /// Whether the I/O driver has started and no thread blocks in it.
    #[cfg(not(loom))]
    pub(crate) fn io_unwatched(&self) -> bool {
        self.io.get().is_some_and(|d| !d.held_by_sleeper())
    }

    /// Wakes slot `i`'s thread (or makes its next park return at once).
    pub(crate) fn unpark(&self, i: usize) {
        if let Some(u) = self.unparkers[i].get() {
            u.unpark();
        }
    }

    /// Wakes slot `i`'s thread if it sleeps for lack of work; an awake thread is left alone.
    /// The caller has just queued work that only that thread may run (a loop to resume): the
    /// fence pairs with the one a thread falling asleep makes after registering, so either it
    /// sees the work or we see it in the list. Unlike [`notify`](Self::notify)'s wake-up, the
    /// thread is not counted as searching: it has its work, and a searcher that finds work
    /// wakes the next sleeper to search on, which here would wake a thread for nothing.
    pub(crate) fn wake_slot(&self, i: usize) {
        fence(Ordering::SeqCst);
        if !self.sleeping[i].load(Ordering::SeqCst) {
            return;
        }
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(pos) = list.iter().position(|&j| j == i) else {
            return;
        };
        list.swap_remove(pos);
        self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        self.woken_for_resume[i].store(true, Ordering::Relaxed);
        self.sleeping[i].store(false, Ordering::Release);
        drop(list);
        self.unpark(i);
    }

    /// Wakes every slot's thread (shutdown).
    pub(crate) fn unpark_all(&self) {
        for u in self.unparkers.iter().filter_map(OnceLock::get) {
            u.unpark();
        }
    }

    /// New work was pushed: wake one sleeper if nobody is searching and the wake-up may not be
    /// deferred. `fenced`: the push may race a thread falling asleep that would not otherwise
    /// look at the pushed queue (see `README.md`); a worker's push to its own deque skips it.
    #[inline]
    pub(crate) fn notify(&self, fenced: bool) {
        if fenced {
            fence(Ordering::SeqCst);
        }
        if self.num_sleeping.load(Ordering::SeqCst) == 0
            || self.searching.load(Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_one();
    }

    #[cold]
    fn wake_one(&self) {
        if self.may_defer() {
            return;
        }
        let mut list = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        // Another notifier may have woken a searcher since the check in `notify`.
        if self.searching.load(Ordering::SeqCst) != 0 {
            return;
        }
        let Some(i) = list.pop() else { return };
        self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        self.searching.fetch_add(1, Ordering::SeqCst);
        self.sleeping[i].store(false, Ordering::Release);
        drop(list);
        self.unpark(i);
    }

    /// Whether a wake-up may be deferred: a watcher is there, and threads outside the runtime
    /// run beside at least one awake worker, enough of them together to fill `workers` CPUs.
    /// Called by a notifier after its `SeqCst` fence.
    fn may_defer(&self) -> bool {
        let outside = self.outside.load(Ordering::SeqCst);
        if outside == 0 || !self.watcher.load(Ordering::SeqCst) {
            return false;
        }
        let awake = self.awake();
        awake >= 1 && awake + outside >= self.workers
    }

    /// Threads acting as workers that are not asleep in the sleepers list (running tasks,
    /// searching, or about to sleep).
    fn awake(&self) -> usize {
        self.active
            .load(Ordering::SeqCst)
            .saturating_sub(self.num_sleeping.load(Ordering::SeqCst))
    }

    /// Whether some thread sleeps for lack of work.
    pub(crate) fn has_sleepers(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) != 0
    }

    /// Threads asleep in the sleepers list now (metrics).
    pub(crate) fn num_sleeping(&self) -> usize {
        self.num_sleeping.load(Ordering::Relaxed)
    }

    /// Whether some thread searches for work (it will find what is pushed).
    pub(crate) fn has_searchers(&self) -> bool {
        self.searching.load(Ordering::SeqCst) != 0
    }

    /// The target parallelism: permanent workers.
    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// Threads acting as workers now.
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Whether more threads act as workers than the runtime was sized for (a compensation
    /// thread then retires). A hint: `try_retire` decides.
    pub(crate) fn over_target(&self) -> bool {
        self.active.load(Ordering::Relaxed) > self.workers
    }

    /// One more thread acts as a worker (a waiter returns, or a thread is brought in).
    pub(crate) fn add_active(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    /// A thread stops acting as a worker (it blocks, or a start failed). Returns how many
    /// were active before. The caller then fences if it must see work pushed meanwhile.
    pub(crate) fn remove_active(&self) -> usize {
        self.active.fetch_sub(1, Ordering::SeqCst)
    }

    /// A compensation thread steps back if more threads act as workers than `workers`.
    /// Returns whether it did.
    pub(super) fn try_retire(&self) -> bool {
        let mut a = self.active.load(Ordering::Relaxed);
        loop {
            if a <= self.workers {
                return false;
            }
            match self
                .active
                .compare_exchange(a, a - 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => a = actual,
            }
        }
    }

    /// A thread that is not a worker starts running in `block_on`.
    pub(crate) fn enter_outside(&self) {
        self.outside.fetch_add(1, Ordering::SeqCst);
    }

    /// A thread counted by [`Sleep::enter_outside`] stops running (it parks or returns). A
    /// wake-up may have been deferred because it ran: after the fence, it notifies if
    /// `has_work` sees queued work.
    pub(crate) fn leave_outside(&self, has_work: impl FnOnce() -> bool) {
        self.outside.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if has_work() {
            self.notify(false);
        }
    }

    /// Whether threads that are not workers run in `block_on` now.
    pub(crate) fn has_outside(&self) -> bool {
        self.outside.load(Ordering::SeqCst) != 0
    }
}

#[cfg(not(loom))]
#[cold]
fn poll_now(driver: &crate::io::Driver) {
    if let Some(mut turn) = driver.try_lock() {
        turn.poll(Some(Duration::ZERO));
        turn.finish();
    }
}

/// Hooks a thread runs before it parks for lack of work: parts of ito that keep per-thread
/// state worth handing back register one (STM frees the values its transactions replaced).
static BEFORE_PARK: [OnceLock<fn()>; 2] = [OnceLock::new(), OnceLock::new()];

/// Registers `hook` to run on a runtime thread before it parks for lack of work. Registering
/// the same hook twice is a no-op.
///
/// # Panics
///
/// If more distinct hooks are registered than there are places for (a bug in ito).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn before_park(hook: fn()) {
    for place in &BEFORE_PARK {
        match place.get() {
            Some(h) if std::ptr::fn_addr_eq(*h, hook) => return,
            Some(_) => continue,
            None => {
                if place.set(hook).is_ok()
                    || place.get().is_some_and(|h| std::ptr::fn_addr_eq(*h, hook))
                {
                    return;
                }
            }
        }
    }
    panic!("ito: too many before-park hooks");
}

/// Runs the hooks registered with [`before_park`].
pub(crate) fn run_before_park_hooks() {
    for hook in BEFORE_PARK.iter().filter_map(OnceLock::get) {
        hook();
    }
}
