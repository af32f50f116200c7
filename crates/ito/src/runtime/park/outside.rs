//! Threads that are not workers: how they are counted while they run in `block_on`, and how
//! they, and workers blocked in a wait, park.
//!
//! A thread running in `block_on` (polling or spinning, not parked) holds a CPU. While it
//! runs beside enough awake workers to fill the runtime's CPUs, wake-ups are deferred (see
//! `README.md`, "Deferred wake-ups"). A thread is counted once, by its outermost `block_on`,
//! and counted out wherever it parks in ito ([`pause_outside`]); one that blocks outside ito
//! (a lock, a system call) stays counted.

use std::cell::Cell;

use super::Blocker;
use crate::runtime::Shared;
use crate::runtime::worker;
use crate::trace::Why;

thread_local! {
    /// The runtime this thread (not a worker) is counted on as running in `block_on`, by the
    /// outermost `block_on` on its stack; `None` while it is parked.
    static RUNNING_ON: Cell<Option<&'static Shared>> = const { Cell::new(None) };
}

/// Counts a thread that is not a worker as running in `block_on` on its runtime while it is
/// not parked. Only the outermost `block_on` on a thread counts it.
pub(crate) struct CountedOutside {
    /// This `block_on` counts the thread (no outer one does).
    owner: bool,
}

impl CountedOutside {
    /// Counts the thread in, unless an outer `block_on` does.
    pub(crate) fn enter() -> CountedOutside {
        let owner = RUNNING_ON.get().is_none();
        if owner {
            CountedOutside::count_in();
        }
        CountedOutside { owner }
    }

    /// Counts the thread in if it is not counted yet and its runtime is running.
    fn count_in() {
        if RUNNING_ON.get().is_none() {
            if let Some(s) = crate::runtime::current_if_started() {
                s.sleep.enter_outside();
                RUNNING_ON.set(Some(s));
            }
        }
    }

    /// After a park (which counted the thread out and back in): counts it in if it was not
    /// counted yet and this `block_on` is the one that counts it. The global runtime may have
    /// started during a poll.
    pub(crate) fn resume(&self) {
        if self.owner {
            CountedOutside::count_in();
        }
    }
}

impl Drop for CountedOutside {
    fn drop(&mut self) {
        if self.owner {
            if let Some(s) = RUNNING_ON.take() {
                s.leave_outside();
            }
        }
    }
}

/// Counts this thread out of `block_on`'s running threads while the guard lives (it is about
/// to park), and notifies for queued work whose wake-up it may have deferred; counts it back
/// in when the guard drops.
pub(crate) fn pause_outside() -> PausedOutside {
    let s = RUNNING_ON.take();
    if let Some(s) = s {
        s.leave_outside();
    }
    PausedOutside(s)
}

/// See [`pause_outside`].
pub(crate) struct PausedOutside(Option<&'static Shared>);

impl Drop for PausedOutside {
    fn drop(&mut self) {
        if let Some(s) = self.0 {
            s.sleep.enter_outside();
            RUNNING_ON.set(Some(s));
        }
    }
}

/// Runs `park`, which parks through `blocker` (a trace shows `why`). A blocker that suspends
/// a worker loop needs nothing more: the thread goes on with other tasks. Otherwise the thread
/// blocks: a worker gives its place to another thread meanwhile
/// (`WorkerCtx::enter_blocking`); any other thread is not counted as running in `block_on`
/// meanwhile ([`pause_outside`]).
pub(crate) fn park_blocked<R>(why: Why, blocker: &Blocker, park: impl FnOnce() -> R) -> R {
    if blocker.suspends() {
        return park();
    }
    let ctx = worker::current_ctx();
    let _blocked = ctx.map(|c| c.enter_blocking(why));
    let _paused = ctx.is_none().then(pause_outside);
    park()
}
