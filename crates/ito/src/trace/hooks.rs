//! The calls the runtime makes into a [`Recorder`] at its seams, one per kind of event. Each
//! is reached only behind the runtime's one check of `Shared::trace` (see `docs/trace.md`).
//! The hot ones (runs, spawns, wake-ups) write their records directly, one clock read each.

use super::event::Why;
use super::raw::{self, tag};
use super::recorder::Recorder;

/// How a run of a task began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// A worker took it from its own queue right after its previous run, with nothing in
    /// between but the pop: if the thread's latest record is that run's end, the run is
    /// recorded as starting then, which saves a clock read per task on a busy worker.
    Next,
    /// A worker found it some other way (a steal, the injector, after a park).
    Found,
    /// A waiter runs the task it waits for, inline.
    Helped,
}

impl Recorder {
    /// Runs `run` between a start and an end record, as the thread's current task.
    #[inline(never)]
    pub(crate) fn run_task(&'static self, task: u64, how: Run, run: impl FnOnce()) {
        let buf = self.local();
        let prev = buf.set_task(task);
        let (start, at) = match (how, raw::latest(buf)) {
            (Run::Next, (end, tag::POLL_END)) => (tag::POLL_START, end),
            (Run::Helped, _) => (tag::HELP_START, self.now()),
            _ => (tag::POLL_START, self.now()),
        };
        raw::put(buf, at, start, task);
        /// Records the end however the run is left, on the thread it ends on (a task that
        /// suspended with its stack may end on another).
        struct End(&'static Recorder, u64);
        impl Drop for End {
            fn drop(&mut self) {
                let buf = self.0.local();
                buf.set_task(self.1);
                self.0.put(buf, tag::POLL_END, self.1);
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
        let buf = self.local();
        self.put(buf, tag::SUSPEND, 0);
        buf.set_task(0)
    }

    /// `task`, suspended by [`suspend`](Recorder::suspend), runs again on this thread.
    #[inline(never)]
    pub(crate) fn resume(&'static self, task: u64) {
        let buf = self.local();
        buf.set_task(task);
        self.put(buf, tag::RESUME, task);
    }

    /// A task was spawned, by the task this thread runs, named `name` if it has a name (a
    /// wide record, which the exporter attaches to the task's runs).
    #[inline(never)]
    pub(crate) fn spawn(&'static self, task: u64, name: Option<&'static str>) {
        let buf = self.local();
        match name {
            None => self.put(buf, tag::SPAWN, task),
            Some(name) => {
                raw::put_wide(
                    buf,
                    self.now(),
                    tag::SPAWN_NAMED,
                    task,
                    raw::name_words(name),
                );
            }
        }
    }

    /// Runs `job`, a join job this thread took from another's shelf, between a start and an
    /// end record. The job does not unwind (`join/job.rs` catches its panic for its owner).
    #[inline(never)]
    pub(crate) fn join_job(&'static self, job: impl FnOnce()) {
        self.put(self.local(), tag::JOIN_JOB_START, 0);
        job();
        self.put(self.local(), tag::JOIN_JOB_END, 0);
    }

    /// A task was woken, by the task this thread runs.
    #[inline(never)]
    pub(crate) fn wake(&'static self, task: u64) {
        self.put(self.local(), tag::WAKE, task);
    }

    /// The thread parks or blocks for `why`; [`Recorder::unpark`] ends it.
    #[inline(never)]
    pub(crate) fn park(&'static self, why: Why) {
        self.put(self.local(), tag::PARK, why as u64);
    }

    /// The park or block the thread recorded last has ended.
    #[inline(never)]
    pub(crate) fn unpark(&'static self) {
        self.put(self.local(), tag::UNPARK, 0);
    }
}

/// A task's id in a trace: its header's address, unique among live tasks (the task header
/// has no room for a counter).
#[inline]
pub(crate) fn task_id(t: &crate::task::TaskRef) -> u64 {
    t.header_ptr() as usize as u64
}
