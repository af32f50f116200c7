//! A runtime thread's half of parking: looking for work, and going to sleep when there is none.
//!
//! The worker loop calls, in order, [`Sleep::start_looking`] before it steals, and then either
//! [`Sleep::work_found`] or [`Sleep::keep_looking`] and [`Sleep::sleep`]. These procedures see
//! the rest of the runtime only through [`Seeker`], which the worker implements and the loom
//! models implement over a counter, so the models check this code as it ships.

use std::cell::Cell;
use std::time::Duration;

use super::{Parker, Sleep};
use crate::loom::{Ordering, fence};

/// How long the watcher parks between looks for work whose wake-up was deferred: the longest
/// such a deferral lasts.
const WATCH_PERIOD: Duration = Duration::from_millis(1);
/// Bounds on a compensation thread's idle park: it must notice when it is no longer needed.
const RETIRE_RECHECK_MIN: Duration = Duration::from_millis(10);
const RETIRE_RECHECK_MAX: Duration = Duration::from_secs(1);

/// What the sleep protocol needs from the thread that runs out of work.
pub(crate) trait Seeker {
    /// Work found by a search.
    type Found;
    /// Takes work from anywhere (the injector, other threads' queues and shelves).
    fn steal_anywhere(&self) -> Option<Self::Found>;
    /// Whether any queue holds work; loads only.
    fn has_queued_work(&self) -> bool;
    /// Whether the runtime is shutting down.
    fn is_shutdown(&self) -> bool;
    /// Whether this is a compensation thread that is no longer needed.
    fn should_retire(&self) -> bool;
    /// How long this compensation thread may stay unused before it exits.
    fn keep_alive(&self) -> Duration;
    /// Runs the hooks registered to run before a thread parks.
    fn before_park(&self);
    /// Counts one park (metrics), about to happen.
    fn count_park(&self);
    /// The park counted last has returned (a trace records it).
    fn unparked(&self) {}
    /// Whether this thread's own queues hold work (tasks the driver woke while it polled).
    fn has_local_work(&self) -> bool {
        false
    }
    /// Whether the I/O driver has started and no thread blocks in it: readiness then reaches
    /// no task until some thread polls it, and a spinner would not.
    fn io_unwatched(&self) -> bool {
        false
    }
}

/// A runtime thread's own parking state.
pub(crate) struct Idler {
    index: usize,
    /// Counted in `Sleep::searching`.
    searching: Cell<bool>,
    compensator: bool,
    parker: Parker,
}

impl Idler {
    /// The state of slot `index`'s thread, parking on `parker` (from [`Sleep::new_parker`]).
    pub(crate) fn new(index: usize, compensator: bool, parker: Parker) -> Idler {
        Idler {
            index,
            searching: Cell::new(false),
            compensator,
            parker,
        }
    }

    /// The parker, for a compensation slot's next thread.
    pub(crate) fn into_parker(self) -> Parker {
        self.parker
    }

    /// Parks until woken, or for at most `timeout` (a retired compensation thread). It never
    /// takes the I/O driver: tasks it woke would wait in the queues of a thread that runs
    /// none.
    pub(crate) fn park(&self, timeout: Option<Duration>) {
        self.parker.park_without_io(timeout);
    }
}

/// Lets go of the spinner role however `keep_looking` is left.
struct Spinning<'a>(&'a Sleep);

impl Drop for Spinning<'_> {
    fn drop(&mut self) {
        self.0.spinner.store(false, Ordering::Release);
    }
}

/// Gives up the watch however `sleep` is left: after leaving the sleepers list, before the
/// search that follows.
struct Watching<'a>(&'a Sleep);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        // A notifier that still saw the flag set deferred its wake-up to us: the fence pairs
        // with the notifier's, and the caller looks at the queues next.
        self.0.watcher.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }
}

impl Sleep {
    /// `me` starts looking for work elsewhere (no-op if it already is).
    #[inline]
    pub(crate) fn start_looking(&self, me: &Idler) {
        if !me.searching.replace(true) {
            self.searching.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `me` found work, or is about to run some: it stops searching. If it was the last
    /// searcher, another thread is woken to keep looking, so wake-ups spread one at a time.
    /// A thread never runs work while counted as searching: pushes skip waking sleepers while
    /// anyone searches.
    #[inline]
    pub(crate) fn work_found(&self, me: &Idler) {
        if me.searching.replace(false) && self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.notify(true);
        }
    }

    /// A searcher that found nothing keeps looking for `Builder::idle_spin` before it sleeps,
    /// still counted as searching, so pushes meanwhile skip their wake-up. Only one thread at
    /// a time does. It is a longer search: what it owes the pushers that skipped their wake-up
    /// it pays in [`Sleep::sleep`], like any searcher.
    ///
    /// It does not spin while the I/O driver is unwatched ([`Seeker::io_unwatched`]): the
    /// readiness it cannot see would wait out the spin, and sleeping takes the driver.
    pub(crate) fn keep_looking<S: Seeker>(&self, me: &Idler, seeker: &S) -> Option<S::Found> {
        if self.idle_spin.is_off()
            || !me.searching.get()
            || seeker.io_unwatched()
            || !self.try_start_spinning()
        {
            return None;
        }
        let spinning = Spinning(self);
        let found = self.idle_spin.run(None, || {
            if seeker.is_shutdown() || seeker.should_retire() {
                return Some(None);
            }
            // Loads only until something shows up: a steal attempt writes to its victim.
            if seeker.has_queued_work() {
                if let Some(found) = seeker.steal_anywhere() {
                    return Some(Some(found));
                }
            }
            None
        });
        drop(spinning);
        let found = found.flatten();
        if found.is_some() {
            self.work_found(me);
        }
        found
    }

    fn try_start_spinning(&self) -> bool {
        !self.spinner.load(Ordering::Relaxed) && !self.spinner.swap(true, Ordering::Acquire)
    }

    /// No work anywhere: sleep until notified. Returns work found by the last searcher's final
    /// look, which the caller runs; `None` when it was woken (it is then counted as searching,
    /// by its waker), saw work while falling asleep, or should retire or shut down.
    pub(crate) fn sleep<S: Seeker>(&self, me: &Idler, seeker: &S) -> Option<S::Found> {
        if me.searching.replace(false) && self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last searcher looks once more: a push may have skipped its wake-up because
            // we were searching.
            if let Some(found) = self.last_look(me, seeker) {
                return Some(found);
            }
        }
        seeker.before_park();
        self.register_sleeper(me.index);
        if self.work_visible(|| seeker.has_queued_work()) && self.unregister_sleeper(me.index) {
            return None;
        }
        // While threads outside the runtime run in `block_on`, one sleeper watches: wake-ups
        // are deferred only while it does, and it takes what was deferred within a
        // `WATCH_PERIOD`.
        let mut watching = (!me.compensator && self.has_outside() && self.try_start_watching())
            .then(|| Watching(self));
        while self.is_sleeping(me.index) && !seeker.is_shutdown() {
            seeker.count_park();
            if watching.is_some() {
                let polled = me.parker.park_timeout(WATCH_PERIOD);
                seeker.unparked();
                if self.leave_after_poll(me, seeker, polled) {
                    return None;
                }
                if !self.is_sleeping(me.index) {
                    break;
                }
                // Nothing to watch for any more: nobody runs outside, or every thread acting
                // as a worker sleeps (with no worker awake nothing is deferred). Stopping
                // comes before the look below.
                if !self.has_outside() || self.awake() == 0 {
                    watching = None;
                }
                if self.work_visible(|| seeker.has_queued_work())
                    && self.unregister_sleeper(me.index)
                {
                    return None;
                }
                continue;
            }
            if !me.compensator {
                let polled = me.parker.park();
                seeker.unparked();
                if self.leave_after_poll(me, seeker, polled) {
                    return None;
                }
                continue;
            }
            // A compensation thread retires, and later exits, only from the worker loop, so
            // its idle park is bounded.
            let recheck = seeker
                .keep_alive()
                .clamp(RETIRE_RECHECK_MIN, RETIRE_RECHECK_MAX);
            let polled = me.parker.park_timeout(recheck);
            seeker.unparked();
            if self.leave_after_poll(me, seeker, polled) {
                return None;
            }
            if self.is_sleeping(me.index)
                && seeker.should_retire()
                && self.unregister_sleeper(me.index)
            {
                return None;
            }
        }
        drop(watching);
        // Woken by a notifier, which counted us as searching, or by `wake_slot`, which did not.
        let for_resume = self.woken_for_resume[me.index].swap(false, Ordering::Relaxed);
        if !for_resume && !seeker.is_shutdown() {
            me.searching.set(true);
        }
        None
    }

    /// After a park in which this thread polled the I/O driver and woke tasks: if they are in
    /// its own queues, it leaves the sleepers list to run them (`true`; the caller returns,
    /// not searching), and, like a searcher that found work, wakes one more thread, which
    /// takes the driver when it sleeps again. `false`: nothing to run here, or a notifier
    /// already took it off the list (it comes back searching, and finds them).
    fn leave_after_poll<S: Seeker>(&self, me: &Idler, seeker: &S, polled: bool) -> bool {
        if !polled || !seeker.has_local_work() || !self.unregister_sleeper(me.index) {
            return false;
        }
        self.notify(true);
        true
    }

    /// A compensation thread that is no longer needed steps back (`WorkerCtx::retire`): it
    /// leaves the active count if more threads act as workers than the target. Returns whether
    /// it did. It hands on what it leaves behind: the wake-up it was counted as searching for,
    /// as any searcher that stops does, the work in the queues, and the I/O driver. It may have
    /// seen that work and left it: [`Sleep::sleep`] returns, not searching, when it sees work
    /// as it falls asleep, and a push made while it searched woke nobody. It may have slept in
    /// the driver until its recheck: the threads that fell asleep meanwhile sleep on their
    /// futexes for good, and a retired thread never takes the driver.
    pub(crate) fn retire<S: Seeker>(&self, me: &Idler, seeker: &S) -> bool {
        if !self.try_retire() {
            return false;
        }
        self.work_found(me);
        // Like a push: the look's fence pairs with a sleeper's, so either we see it in the
        // list, or it sees the work. A sleeper woken for an unwatched driver finds nothing,
        // sleeps again, and takes the driver.
        if self.work_visible(|| seeker.has_queued_work() || seeker.io_unwatched()) {
            self.notify(false);
        }
        true
    }

    /// The last searcher's final look before sleeping. Finding nothing must not wake anyone:
    /// a woken sleeper would do the same and wake us back, for ever.
    fn last_look<S: Seeker>(&self, me: &Idler, seeker: &S) -> Option<S::Found> {
        self.start_looking(me);
        let found = seeker.steal_anywhere();
        if found.is_some() {
            self.work_found(me);
        } else {
            me.searching.set(false);
            self.searching.fetch_sub(1, Ordering::SeqCst);
        }
        found
    }

    fn try_start_watching(&self) -> bool {
        !self.watcher.load(Ordering::Relaxed) && !self.watcher.swap(true, Ordering::SeqCst)
    }

    /// Whether slot `i` is still in the sleepers list.
    pub(crate) fn is_sleeping(&self, i: usize) -> bool {
        self.sleeping[i].load(Ordering::Acquire)
    }

    /// Slot `i`'s thread is about to park.
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

    /// After registering as a sleeper: is there work anywhere? The fence pairs with a
    /// pusher's: either it sees us in the list, or we see its work.
    pub(crate) fn work_visible(&self, has_work: impl FnOnce() -> bool) -> bool {
        fence(Ordering::SeqCst);
        has_work()
    }
}
