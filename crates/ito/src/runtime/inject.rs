//! Putting tasks on queues: spawns, wake-ups, and batches of wake-ups from outside.
//!
//! A task spawned or woken on one of the runtime's workers goes to that worker's deque (a
//! woken one to its LIFO slot, to run next). From any other thread it goes to the injector,
//! after a fence, so that a worker falling asleep meanwhile cannot miss it (`park/README.md`).

use std::future::Future as StdFuture;

use super::{Shared, threads, worker};
use crate::future::Task;
use crate::task::{self, Schedule, TaskRef};
use crate::trace;

impl Shared {
    /// New work was pushed: wake an idle thread if needed (`park/`).
    #[inline]
    pub(crate) fn notify_work(&self, fenced: bool) {
        self.sleep.notify(fenced);
    }

    /// Queues a new task: on this worker's deque if we are one of ours, else the injector.
    /// Counting the spawn counts the task as an owner of the block (`owners.rs`): in the
    /// slot's `spawned`, or in the block's count. `name` (`ito::named`) is read only when the
    /// runtime is traced.
    #[inline]
    fn push_new(&'static self, task: TaskRef, name: Option<&'static str>) {
        if let Some(r) = self.trace {
            r.spawn(trace::task_id(&task), name);
        }
        match worker::current_for(self) {
            Some(ctx) => ctx.push_spawned(task),
            None => {
                self.counters.count_spawned_outside();
                self.acquire();
                self.push_remote(task);
            }
        }
    }

    /// Queues tasks woken together from a thread that is not one of ours, with one
    /// notification.
    fn push_remote_batch(&'static self, tasks: Vec<TaskRef>) {
        if self.is_shutdown() {
            for t in tasks {
                t.cancel();
            }
            return;
        }
        // The waker's references were the caller's only hold on the block: see `wake_remote`.
        let keep = tasks.first().map(TaskRef::clone_ref);
        for t in tasks {
            self.injector.push(t);
        }
        self.after_remote_push();
        drop(keep);
    }

    /// Queues a task woken from a thread that is not one of ours. The waker's reference,
    /// which the entry takes over, was this thread's only hold on the block: once pushed, the
    /// task may run, end and be freed, and the runtime be dropped and freed with it, before
    /// `after_remote_push` is done. A second reference keeps the task, and so the block,
    /// alive until then (`owners.rs`). Out of line: a wake from a worker, the common case,
    /// inlines `schedule` without it.
    #[inline(never)]
    fn wake_remote(&'static self, task: TaskRef) {
        let keep = task.clone_ref();
        self.push_remote(task);
        drop(keep);
    }

    /// Queues a task from a thread that is not one of ours.
    pub(super) fn push_remote(&'static self, task: TaskRef) {
        if self.is_shutdown() {
            task.cancel();
            return;
        }
        self.injector.push(task);
        self.after_remote_push();
    }

    /// Wakes a worker for what was just pushed to the injector, and handles the races with
    /// shutdown and with every thread being blocked.
    fn after_remote_push(&'static self) {
        self.notify_work(true);
        if self.is_shutdown() {
            // Raced with shutdown's last sweep: nobody will run it.
            self.cancel_queued();
        } else {
            threads::start_if_all_blocked(self);
        }
    }

    /// Takes one task from the injector, retrying on contention (shutdown's sweep).
    pub(super) fn steal_injected(&self) -> Option<TaskRef> {
        super::steal::steal_retrying(&self.injector)
    }
}

impl Schedule for Shared {
    /// Queues a woken task: to the waking worker's LIFO slot, to this thread's open wake
    /// batch, or to the injector.
    #[inline]
    fn schedule(&'static self, task: TaskRef) {
        if let Some(r) = self.trace {
            r.wake(trace::task_id(&task));
        }
        match worker::current_for(self) {
            Some(ctx) => ctx.push_woken(task),
            None => {
                if let Err(task) = wake_batch::add(task) {
                    self.wake_remote(task);
                }
            }
        }
    }
}

/// Spawns an async task on `shared`.
#[inline]
pub(crate) fn spawn_on<F>(shared: &'static Shared, fut: F) -> Task<F::Output>
where
    F: StdFuture + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_named_on(shared, fut, None)
}

/// Spawns an async task on `shared`, named `name` in its trace.
#[inline]
pub(crate) fn spawn_named_on<F>(
    shared: &'static Shared,
    fut: F,
    name: Option<&'static str>,
) -> Task<F::Output>
where
    F: StdFuture + Send + 'static,
    F::Output: Send + 'static,
{
    let (task, f) = task::new_future(fut, shared);
    shared.push_new(task, name);
    f
}

/// Spawns an async task on `shared` that nobody can await: no [`Task`], no result kept
/// (a process; see `task::new_detached`).
#[inline]
pub(crate) fn spawn_detached_future_on<F>(shared: &'static Shared, fut: F)
where
    F: StdFuture<Output = ()> + Send + 'static,
{
    shared.push_new(task::new_detached(fut, shared), None);
}

/// Spawns a closure task on `shared`.
#[inline]
pub(crate) fn spawn_fn_on<F, T>(shared: &'static Shared, f: F) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_fn_named_on(shared, f, None)
}

/// Spawns a closure task on `shared`, named `name` in its trace.
#[inline]
pub(crate) fn spawn_fn_named_on<F, T>(
    shared: &'static Shared,
    f: F,
    name: Option<&'static str>,
) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (task, fut) = task::new_fn(f, shared);
    shared.push_new(task, name);
    fut
}

/// Runs `job` as a task on the current runtime, dropping its result.
pub(crate) fn spawn_detached(job: Box<dyn FnOnce() + Send>) {
    drop(spawn_fn_on(super::current(), job));
}

/// Wake-ups from a thread that is not a worker, batched. Completing a future that many tasks
/// await would otherwise push and notify once per task, and each notification can wake a
/// worker that runs its one task and sleeps again before the next. Inside a batch, woken
/// tasks are collected and pushed together with one notification.
pub(crate) mod wake_batch {
    use std::cell::RefCell;

    use crate::task::TaskRef;

    thread_local! {
        static BATCH: RefCell<Option<Vec<TaskRef>>> = const { RefCell::new(None) };
    }

    /// Adds `task` to this thread's open batch, or gives it back if there is none.
    pub(crate) fn add(task: TaskRef) -> Result<(), TaskRef> {
        let mut task = Some(task);
        let _ = BATCH.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                if let Some(v) = b.as_mut() {
                    v.extend(task.take());
                }
            }
        });
        match task {
            Some(t) => Err(t),
            None => Ok(()),
        }
    }

    /// Opens a batch on this thread (unless one is open), closed and flushed when the guard
    /// drops.
    pub(crate) fn open() -> Option<Guard> {
        BATCH
            .try_with(|b| {
                let mut b = b.try_borrow_mut().ok()?;
                if b.is_some() {
                    return None;
                }
                *b = Some(Vec::new());
                Some(Guard(()))
            })
            .ok()
            .flatten()
    }

    /// Flushes the batch on drop.
    pub(crate) struct Guard(());

    impl Drop for Guard {
        fn drop(&mut self) {
            let tasks = BATCH
                .try_with(|b| b.borrow_mut().take())
                .ok()
                .flatten()
                .unwrap_or_default();
            let mut tasks = tasks.into_iter().peekable();
            while let Some(first) = tasks.next() {
                let shared = first.sched();
                let mut same = vec![first];
                while let Some(t) = tasks.next_if(|t| std::ptr::eq(t.sched(), shared)) {
                    same.push(t);
                }
                shared.push_remote_batch(same);
            }
        }
    }
}
