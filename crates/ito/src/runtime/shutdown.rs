//! Stopping a runtime: its threads finish the tasks they run, queued tasks are cancelled.
//!
//! Threads blocked in a wait may be waiting for a queued task, so shutdown keeps cancelling
//! what is queued (which completes or breaks the futures they wait for) until every thread
//! has left. Join jobs are not tasks and cannot be cancelled: the runtime's threads run every
//! exposed one before they exit, and a thread that blocks meanwhile brings in another.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Shared, threads, worker};
use crate::task;

/// The longest shutdown sleeps between two sweeps while threads are still running.
const SWEEP_PERIOD: Duration = Duration::from_millis(1);
/// Its first sleep, doubled after each sweep up to [`SWEEP_PERIOD`]: threads woken by the
/// first sweep usually exit within tens of microseconds, and a runtime dropped on a
/// quiet machine should not take a whole period.
const FIRST_SWEEP_SLEEP: Duration = Duration::from_micros(10);
/// Sweeps with exposed join jobs and no taker before shutdown starts one more thread.
const STALLED_SWEEPS: u32 = 16;

impl Shared {
    /// Stops the runtime's threads after the tasks they run return; cancels queued tasks.
    /// Called once per runtime (later calls return at once), from any thread, one of the
    /// runtime's own too.
    pub(super) fn shutdown(&'static self) {
        self.shutdown_until(None);
    }

    /// [`Shared::shutdown`] that stops waiting for the runtime's threads at `deadline`.
    /// Returns whether every thread finished; threads still running a task then finish it on
    /// their own and exit. A second call only reports whether the threads have finished.
    pub(super) fn shutdown_until(&'static self, deadline: Option<Instant>) -> bool {
        let me = std::thread::current().id();
        if self.shutdown.swap(true, Ordering::SeqCst) {
            return self.threads.all_finished_but(me);
        }
        self.blocking.shutdown();
        let ctx = worker::current_for(self);
        if let Some(ctx) = ctx {
            // Called from inside a join side: what this thread has pending must stay
            // reachable for the threads that finish the joins.
            crate::runtime::join::expose(ctx, usize::MAX);
        }
        let mut stalled = 0u32;
        let mut pause = FIRST_SWEEP_SLEEP;
        loop {
            self.cancel_queued();
            if self.has_join_work() {
                stalled += 1;
                // Nobody took the jobs for a while (every thread blocked): one more thread.
                if stalled % STALLED_SWEEPS == 0 {
                    threads::start_shutdown_helper(self);
                }
            } else {
                stalled = 0;
            }
            if let Some(ctx) = ctx {
                ctx.cancel_lifo();
            }
            self.sleep.unpark_all();
            if self.threads.all_finished_but(me) {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(SWEEP_PERIOD);
        }
        self.threads.join_all_but(me);
        self.cancel_queued();
        // No worker waits on a timer any more: pending timers are dropped (their tasks,
        // woken, are cancelled), and the timer thread is joined.
        if let Some(timers) = &self.timers {
            timers.stop();
        }
        self.cancel_queued();
        true
    }

    /// Cancels every queued task: the injector's and every deque's.
    pub(super) fn cancel_queued(&self) {
        task::run_pending_cancels();
        while let Some(t) = self.steal_injected() {
            t.cancel();
        }
        for slot in self.threads.slots() {
            while let Some(t) = slot.steal_one() {
                t.cancel();
            }
        }
    }
}
