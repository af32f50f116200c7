//! The calls the runtime makes into a [`Recorder`] at its seams, one per kind of event. Each
//! is reached only behind the runtime's one check of `Shared::trace` (see `docs/trace.md`).

use super::event::{Kind, Why};
use super::recorder::Recorder;

impl Recorder {
    /// Runs `run` (a task taken from a queue, or `helped`: run inline by a waiter) between a
    /// start and an end record, as the thread's current task.
    #[inline(never)]
    pub(crate) fn run_task(&'static self, task: u64, helped: bool, run: impl FnOnce()) {
        let buf = self.local();
        let prev = buf.set_task(task);
        self.record_here(if helped {
            Kind::HelpStart { task }
        } else {
            Kind::PollStart { task }
        });
        /// Records the end however the run is left.
        struct End(&'static Recorder, u64);
        impl Drop for End {
            fn drop(&mut self) {
                self.0.record_here(Kind::PollEnd);
                self.0.local().set_task(self.1);
            }
        }
        let _end = End(self, prev);
        run();
    }

    /// The running task suspends: its run ends here. Returns the task, for [`resume`].
    ///
    /// [`resume`]: Recorder::resume
    #[inline(never)]
    pub(crate) fn suspend(&'static self) -> u64 {
        self.record_here(Kind::Suspend);
        self.local().set_task(0)
    }

    /// `task`, suspended by [`suspend`](Recorder::suspend), runs again on this thread.
    #[inline(never)]
    pub(crate) fn resume(&'static self, task: u64) {
        self.local().set_task(task);
        self.record_here(Kind::Resume { task });
    }

    /// A task was spawned, by the task this thread runs.
    #[inline(never)]
    pub(crate) fn spawn(&'static self, task: u64) {
        let parent = self.local().task();
        self.record_here(Kind::Spawn { task, parent });
    }

    /// A task was woken, by the task this thread runs.
    #[inline(never)]
    pub(crate) fn wake(&'static self, task: u64) {
        let by = self.local().task();
        self.record_here(Kind::Wake { task, by });
    }

    /// The thread parks or blocks for `why`; [`Recorder::unpark`] ends it.
    #[inline(never)]
    pub(crate) fn park(&'static self, why: Why) {
        self.record_here(Kind::Park { why });
    }

    /// The park or block the thread recorded last has ended.
    #[inline(never)]
    pub(crate) fn unpark(&'static self) {
        self.record_here(Kind::Unpark);
    }
}

/// A task's id in a trace: its header's address, unique among live tasks (the task header
/// has no room for a counter).
#[inline]
pub(crate) fn task_id(t: &crate::task::TaskRef) -> u64 {
    t.header_ptr() as usize as u64
}
