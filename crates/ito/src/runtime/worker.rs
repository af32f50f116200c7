//! A worker thread: its slot (what others see of it), its context (what only it touches), and
//! its loop.
//!
//! Each thread of a runtime (permanent worker or compensation thread) owns one slot for life:
//! a LIFO deque whose stealing end is in the slot, and counters that only the owner writes.
//! The loop:
//!
//! 1. every [`INJECTOR_INTERVAL`] tasks, take the injector's oldest task first (fairness for
//!    tasks spawned from outside); and every `Builder::event_interval` tasks, look at the I/O
//!    driver without blocking;
//! 2. the LIFO slot (the task this worker just woke), at most [`MAX_LIFO_STREAK`] times in a
//!    row (then the deque's newest task gets a turn, and the LIFO task waits in the bumped
//!    slot to run right after it), then its own deque (newest first), then the injector;
//! 3. steal one task (the oldest) from a victim's deque, starting at a random victim (a
//!    batch if the victim's deque is long, [`BATCH_STEAL_MIN`]); from the injector, a batch;
//! 4. keep looking for a short while, then sleep (`park/`).
//!
//! A compensation thread also checks, between tasks, whether the runtime has more active
//! threads than workers; if so it retires (`threads.rs`).

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crossbeam_deque::{Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;

use super::Shared;
use super::loops::{self, Loops, Resumes, STACK_RESERVE};
use super::metrics::{SlotMetrics, bump};
use super::park::{Idler, Parker, Seeker};
use crate::runtime::join::shelf::{JobRef, Shelf};
use crate::runtime::join::stack::JoinStack;
use crate::task::TaskRef;
use crate::trace::{self, Kind, Run, Why};

/// Tasks run between two looks at the injector.
const INJECTOR_INTERVAL: u32 = 61;
/// Consecutive runs from the LIFO slot before the deque gets a turn.
const MAX_LIFO_STREAK: u32 = 3;
/// What other threads see of a worker thread.
pub(crate) struct Slot {
    pub(super) stealer: Stealer<TaskRef>,
    /// A retired compensation thread, parked in the spare list.
    pub(super) retired: AtomicBool,
    /// The join jobs this thread offers to others (on a cache line of its own: the owner
    /// reads it on every `join`).
    pub(crate) shelf: CachePadded<Shelf>,
    /// Written by the owner on every task: on a cache line of its own, so workers do not
    /// bounce each other's lines.
    pub(super) metrics: CachePadded<SlotMetrics>,
    /// This thread's suspended loops whose wait is over (`loops.rs`).
    pub(crate) resumes: CachePadded<Resumes>,
}

impl Slot {
    pub(super) fn new(local: &Worker<TaskRef>) -> Slot {
        Slot {
            stealer: local.stealer(),
            retired: AtomicBool::new(false),
            shelf: CachePadded::new(Shelf::new()),
            metrics: CachePadded::new(SlotMetrics::default()),
            resumes: CachePadded::new(Resumes::default()),
        }
    }
    pub(super) fn has_work(&self) -> bool {
        !self.stealer.is_empty() || !self.shelf.is_empty_hint()
    }
    /// Steals one task (shutdown's sweep).
    pub(super) fn steal_one(&self) -> Option<TaskRef> {
        loop {
            match self.stealer.steal() {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }
}

/// A worker thread's own state, reachable through the `CTX` thread-local.
pub(crate) struct WorkerCtx {
    pub(crate) shared: &'static Shared,
    pub(super) index: usize,
    slot: &'static Slot,
    pub(super) local: Worker<TaskRef>,
    /// Its half of parking: its parker, and whether it searches.
    pub(super) idler: Idler,
    lifo: Cell<Option<TaskRef>>,
    lifo_streak: Cell<u32>,
    /// A LIFO task that the streak rule made wait for one deque task: it runs next, before
    /// anything the deque task pushes (which would bury it in the deque for good).
    bumped: Cell<Option<TaskRef>>,
    tick: Cell<u32>,
    /// Tasks left to run before the next look at the I/O driver (`Builder::event_interval`).
    io_countdown: Cell<u32>,
    pub(super) rng: Cell<u64>,
    compensator: bool,
    /// Counted out of the active threads by a wait in progress (`enter_blocking`).
    pub(super) blocked: Cell<bool>,
    /// Join jobs of other threads this thread is running (`join::run_stolen`).
    stolen_jobs: Cell<u32>,
    /// Lowest stack address a waiter may run a task inline above, on the stack in use now.
    stack_limit: Cell<usize>,
    /// The loops this thread runs tasks on.
    loops: Loops,
    /// The joins in progress on this thread.
    pub(super) join: JoinStack,
    /// This thread, for whoever sets the latch of a join job it sleeps on.
    thread: crate::loom::thread::Thread,
}

/// See [`WorkerCtx::enter_stolen_job`].
pub(crate) struct StolenJob<'a>(&'a WorkerCtx);

impl Drop for StolenJob<'_> {
    fn drop(&mut self) {
        self.0.stolen_jobs.set(self.0.stolen_jobs.get() - 1);
    }
}

/// Work found by a search: a task, or another worker's join job.
pub(crate) enum Found {
    Task(TaskRef),
    Job(JobRef),
    /// A suspended loop of this thread is ready to resume.
    Resume,
}

thread_local! {
    static CTX: Cell<*const WorkerCtx> = const { Cell::new(ptr::null()) };
    /// The runtime entered by `Runtime::block_on` on a non-worker thread.
    static ENTERED: Cell<Option<&'static Shared>> = const { Cell::new(None) };
}

/// This thread's worker context, if it is a worker of any runtime.
#[inline]
pub(crate) fn current_ctx() -> Option<&'static WorkerCtx> {
    let p = CTX.with(|c| c.get());
    // SAFETY: `CTX` points at the `WorkerCtx` on this thread's worker stack frame, which
    // outlives every use: it is cleared before that frame returns, and the reference never
    // leaves this thread (`WorkerCtx` is not `Sync`).
    unsafe { p.as_ref() }
}

/// This thread's worker context, if it is a worker of `shared`.
#[inline]
pub(crate) fn current_for(shared: &'static Shared) -> Option<&'static WorkerCtx> {
    current_ctx().filter(|c| ptr::eq(c.shared, shared))
}

/// The runtime this thread has entered (`Runtime::block_on`), or else works for.
#[inline]
pub(super) fn current_shared() -> Option<&'static Shared> {
    match ENTERED.with(|e| e.get()) {
        Some(s) => Some(s),
        None => current_ctx().map(|c| c.shared),
    }
}

/// Replaces the runtime this thread has entered (a worker loop suspending or resuming: the
/// `Runtime::block_on` that entered it belongs to the loop's stack). Returns the previous one.
pub(super) fn swap_entered(shared: Option<&'static Shared>) -> Option<&'static Shared> {
    ENTERED.with(|e| e.replace(shared))
}

/// Makes `shared` the current runtime of this (non-worker) thread until the guard drops.
pub(super) fn enter(shared: &'static Shared) -> EnterGuard {
    EnterGuard(ENTERED.with(|e| e.replace(Some(shared))))
}

/// Restores the previously entered runtime.
pub(super) struct EnterGuard(Option<&'static Shared>);

impl Drop for EnterGuard {
    fn drop(&mut self) {
        ENTERED.with(|e| e.set(self.0));
    }
}

/// Why a worker loop returned.
#[derive(Debug)]
pub(super) enum Exit {
    /// The runtime is shutting down.
    Shutdown,
    /// A compensation thread idled for `Builder::thread_keep_alive`; its slot goes to the free list.
    Idle,
}

/// The current position on the thread's stack.
///
/// It reads the stack pointer because the address of a local is not always on the stack:
/// AddressSanitizer's use-after-return detection moves address-taken locals to a
/// heap-allocated fake stack. Measured that way, a waiter would see no room at any depth and
/// never help, so a chain of blocking waits would take one thread per level.
#[inline(always)]
fn stack_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let sp: usize;
        // SAFETY: copies the stack pointer register into a general register; it touches no
        // memory, no flags and no stack.
        unsafe {
            std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags));
        }
        sp
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let sp: usize;
        // SAFETY: as above.
        unsafe {
            std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags));
        }
        sp
    }
    #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        let here = 0u8;
        std::hint::black_box(&here) as *const u8 as usize
    }
}

/// A runtime thread's body. Returns the deque and parker of a compensation thread that
/// exited after idling, for its slot's next thread.
pub(super) fn main(
    shared: &'static Shared,
    index: usize,
    local: Worker<TaskRef>,
    parker: Parker,
    compensator: bool,
    stack_size: usize,
) -> Option<(Worker<TaskRef>, Parker)> {
    let base = stack_pointer();
    let thread_stack_limit = base
        .saturating_sub(stack_size)
        .saturating_add(STACK_RESERVE);
    let name = std::thread::current().name().map_or_else(
        || format!("a task on ito worker {index}"),
        |n| format!("a task on {n}"),
    );
    let ctx = WorkerCtx {
        shared,
        index,
        slot: shared
            .threads
            .slot(index)
            .expect("initialised before the thread starts"),
        local,
        idler: Idler::new(index, compensator, parker),
        lifo: Cell::new(None),
        lifo_streak: Cell::new(0),
        bumped: Cell::new(None),
        tick: Cell::new(0),
        io_countdown: Cell::new(shared.event_interval),
        rng: Cell::new(
            0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
        ),
        compensator,
        blocked: Cell::new(false),
        stolen_jobs: Cell::new(0),
        stack_limit: Cell::new(thread_stack_limit),
        loops: Loops::new(shared.task_stacks, name),
        join: JoinStack::new(),
        thread: crate::loom::thread::current(),
    };
    /// Clears `CTX` however this frame is left, so it never points at a dead context.
    struct ResetCtx;
    impl Drop for ResetCtx {
        fn drop(&mut self) {
            CTX.with(|c| c.set(ptr::null()));
        }
    }
    CTX.with(|c| c.set(&ctx));
    // A traced runtime shows every thread, also one that never records an event.
    if let Some(r) = shared.trace {
        r.local();
    }
    let reset = ResetCtx;
    let exit = loops::run(&ctx);
    drop(reset);
    match exit {
        Exit::Shutdown => {
            ctx.drain();
            None
        }
        Exit::Idle => {
            // Whatever is left in the deque goes where others will find it; `push_remote`
            // fences and starts a thread if every other one is blocked meanwhile.
            while let Some(t) = ctx.local.pop() {
                shared.push_remote(t);
            }
            let WorkerCtx { local, idler, .. } = ctx;
            Some((local, idler.into_parker()))
        }
    }
}

impl WorkerCtx {
    #[inline]
    pub(super) fn slot(&self) -> &'static Slot {
        self.slot
    }

    pub(super) fn run_loop(&self) -> Exit {
        loop {
            if (self.slot.resumes.is_pending() || self.loops.is_borrowed()) && self.resume_queued()
            {
                return Exit::Shutdown;
            }
            if self.shared.is_shutdown() {
                // Tasks are cancelled at shutdown, but a join job must run for its `join`
                // to return: finish every exposed one first.
                if let Some(j) = self.steal_join_job() {
                    self.run_found(Found::Job(j));
                    continue;
                }
                return Exit::Shutdown;
            }
            if self.should_retire() && self.retire() {
                return Exit::Idle;
            }
            if let Some(t) = self.next_local() {
                self.run_task(t, Run::Next);
                continue;
            }
            if let Some(found) = self.search() {
                self.run_found(found);
                continue;
            }
            let sleep = &self.shared.sleep;
            if let Some(found) = sleep.keep_looking(&self.idler, self) {
                self.run_found(found);
                continue;
            }
            if let Some(found) = sleep.sleep(&self.idler, self) {
                self.run_found(found);
            }
        }
    }

    #[inline]
    fn run_task(&self, t: TaskRef, how: Run) {
        // Never run a task while counted as searching: pushes skip waking sleepers while
        // anyone searches, so a searcher busy running a long task would starve them.
        self.stop_searching();
        bump(&self.slot().metrics.polled);
        match self.shared.trace {
            None => t.run(),
            Some(r) => r.run_task(trace::task_id(&t), how, || t.run()),
        }
    }

    /// Hands the thread to a loop queued for resumption; returns whether this loop must end.
    #[cold]
    fn resume_queued(&self) -> bool {
        self.stop_searching();
        self.flush_lifo();
        self.loops.yield_to_resumed()
    }

    fn run_found(&self, found: Found) {
        match found {
            Found::Task(t) => self.run_task(t, Run::Found),
            Found::Resume => {
                // The loop top resumes it.
            }
            Found::Job(j) => {
                self.stop_searching();
                self.note_join_steal();
                // SAFETY: we took it from a shelf.
                unsafe { crate::runtime::join::run_stolen(self, j) };
            }
        }
    }

    /// Next task from this worker's own queues (and, now and then, the injector).
    #[inline]
    fn next_local(&self) -> Option<TaskRef> {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        // The I/O driver's turn (`docs/io.md`): readiness is not left waiting behind a busy
        // queue. Its woken tasks land in this worker's queues.
        let io_left = self.io_countdown.get() - 1;
        if io_left == 0 {
            self.io_countdown.set(self.shared.event_interval);
            #[cfg(not(loom))]
            self.shared.sleep.poll_io_now();
        } else {
            self.io_countdown.set(io_left);
        }
        if tick % INJECTOR_INTERVAL == 0 {
            if let Some(t) = super::steal::steal_retrying(&self.shared.injector) {
                return Some(t);
            }
        }
        if let Some(t) = self.bumped.take() {
            return Some(t);
        }
        if self.lifo_streak.get() < MAX_LIFO_STREAK {
            if let Some(t) = self.lifo.take() {
                self.lifo_streak.set(self.lifo_streak.get() + 1);
                return Some(t);
            }
        } else if let Some(t) = self.lifo.take() {
            return Some(match self.local.pop() {
                // Give the deque a turn: its newest task runs now, the LIFO task right after.
                Some(next) => {
                    self.lifo_streak.set(0);
                    self.bumped.set(Some(t));
                    next
                }
                // Nothing queued here to give a turn to (the injector gets its turn every
                // `INJECTOR_INTERVAL` tasks regardless): keep going, without exposing the task
                // to thieves or waking anyone for it.
                None => {
                    self.lifo_streak.set(1);
                    t
                }
            });
        }
        self.lifo_streak.set(0);
        self.local.pop()
    }

    /// Stops searching (this thread is about to run work), waking another searcher if it
    /// was the last one.
    #[inline]
    pub(super) fn stop_searching(&self) {
        self.shared.sleep.work_found(&self.idler);
    }

    /// Spawned a task from this worker.
    #[inline]
    pub(super) fn push_spawned(&self, task: TaskRef) {
        bump(&self.slot().metrics.spawned);
        self.local.push(task);
        self.shared.notify_work(false);
    }

    /// Woke a task from this worker: it goes to the LIFO slot, to run next.
    #[inline]
    pub(super) fn push_woken(&self, task: TaskRef) {
        if let Some(prev) = self.lifo.replace(Some(task)) {
            self.local.push(prev);
            self.shared.notify_work(false);
        }
    }

    /// The current stack position has room to run a task inline.
    #[inline]
    pub(crate) fn stack_has_room(&self) -> bool {
        stack_pointer() > self.stack_limit.get()
    }

    /// A loop on another stack runs now: inline runs stop at `limit` on it. Returns the limit
    /// of the stack that ran before.
    pub(super) fn set_stack_limit(&self, limit: usize) -> usize {
        self.stack_limit.replace(limit)
    }

    /// This thread's loops.
    #[inline]
    pub(crate) fn loops(&self) -> &Loops {
        &self.loops
    }

    /// Counts a join job of another thread running here until the guard drops.
    pub(crate) fn enter_stolen_job(&self) -> StolenJob<'_> {
        self.stolen_jobs.set(self.stolen_jobs.get() + 1);
        StolenJob(self)
    }

    /// Whether this thread runs another thread's join job (then nothing on it may suspend or
    /// resume a loop: see `join::run_stolen`).
    pub(super) fn runs_stolen_job(&self) -> bool {
        self.stolen_jobs.get() != 0
    }

    /// Helps a waiter whose awaited task is `task`: if it is on top of this worker's deque,
    /// pop and run it; stale entries found on top on the way are dropped (they would otherwise
    /// keep finished tasks' memory alive). Returns whether it ran the task. Otherwise leaves the
    /// deque as it was (the caller may still claim the task wherever its entry is).
    ///
    /// In the fork-join pattern (push `a`, push `b`, wait `a`, wait `b`), `b` is popped here
    /// and `a`'s stale entry is dropped by the next wait one level up: every entry is popped
    /// once, plus one pop per wait that finds another live task on top.
    #[inline]
    pub(crate) fn run_if_on_top(&self, task: *const crate::task::Header) -> bool {
        while let Some(t) = self.local.pop() {
            if t.is_stale() {
                continue;
            }
            if t.header_ptr() == task {
                bump(&self.slot().metrics.helped);
                match self.shared.trace {
                    None => t.run(),
                    Some(r) => r.run_task(trace::task_id(&t), Run::Helped, || t.run()),
                }
                return true;
            }
            self.local.push(t);
            break;
        }
        false
    }

    pub(crate) fn note_helped(&self) {
        bump(&self.slot().metrics.helped);
    }

    pub(crate) fn note_join_steal(&self) {
        bump(&self.slot().metrics.join_steals);
        if let Some(r) = self.shared.trace {
            r.record(Kind::JoinSteal);
        }
    }

    /// This thread's stack of joins in progress.
    #[inline]
    pub(crate) fn join_stack(&self) -> &JoinStack {
        &self.join
    }

    /// This thread's shelf of exposed join jobs.
    #[inline]
    pub(crate) fn shelf(&self) -> &'static Shelf {
        &self.slot.shelf
    }

    /// This thread's handle, valid as long as the thread works for the runtime.
    pub(crate) fn thread_ptr(&self) -> *const crate::loom::thread::Thread {
        &self.thread
    }

    /// Whether this is a compensation thread the runtime no longer needs (it retires).
    fn should_retire(&self) -> bool {
        // Its suspended loops can only resume on it; a borrowed loop's thread has a waiter
        // below it.
        self.compensator
            && self.shared.sleep.over_target()
            && self.loops.suspended() == 0
            && !self.loops.is_borrowed()
    }

    /// Moves the tasks in the LIFO and bumped slots to the deque, where others can steal them
    /// (this thread is about to block or retire).
    pub(super) fn flush_lifo(&self) {
        if let Some(t) = self.bumped.take() {
            self.local.push(t);
        }
        if let Some(t) = self.lifo.take() {
            self.local.push(t);
        }
    }

    /// This thread's slot index.
    pub(super) fn index(&self) -> usize {
        self.index
    }

    /// This thread's half of parking.
    pub(super) fn idler(&self) -> &Idler {
        &self.idler
    }

    /// Counts one park of this thread, which parks for `why`.
    pub(super) fn count_park(&self, why: Why) {
        bump(&self.slot().metrics.parks);
        if let Some(r) = self.shared.trace {
            r.park(why);
        }
    }

    /// Cancels the tasks in the LIFO and bumped slots, which no other thread can see
    /// (shutdown called from this worker).
    pub(super) fn cancel_lifo(&self) {
        if let Some(t) = self.bumped.take() {
            t.cancel();
        }
        if let Some(t) = self.lifo.take() {
            t.cancel();
        }
    }

    /// Cancels whatever is left in this worker's queues (shutdown).
    pub(super) fn drain(&self) {
        self.cancel_lifo();
        while let Some(t) = self.local.pop() {
            t.cancel();
        }
    }
}

impl Seeker for WorkerCtx {
    type Found = Found;

    fn steal_anywhere(&self) -> Option<Found> {
        if self.slot.resumes.is_pending() {
            return Some(Found::Resume);
        }
        WorkerCtx::steal_anywhere(self)
    }
    fn has_queued_work(&self) -> bool {
        self.slot.resumes.is_pending() || self.shared.has_queued_work()
    }
    fn is_shutdown(&self) -> bool {
        self.shared.is_shutdown()
    }
    fn should_retire(&self) -> bool {
        WorkerCtx::should_retire(self)
    }
    fn keep_alive(&self) -> Duration {
        self.shared.threads.keep_alive()
    }
    fn before_park(&self) {
        super::park::run_before_park_hooks();
        // With none of its loops suspended, the burst that needed this thread's task stacks
        // is over (while some are, more are likely to follow: keep the stacks).
        if self.loops.suspended() == 0 {
            crate::coro::trim_cache();
        }
    }
    fn count_park(&self) {
        WorkerCtx::count_park(self, Why::NoWork);
    }
    fn unparked(&self) {
        if let Some(r) = self.shared.trace {
            r.unpark();
        }
    }
    fn has_local_work(&self) -> bool {
        let (lifo, bumped) = (self.lifo.take(), self.bumped.take());
        let some = lifo.is_some() || bumped.is_some();
        self.lifo.set(lifo);
        self.bumped.set(bumped);
        some || !self.local.is_empty()
    }
    fn io_unwatched(&self) -> bool {
        #[cfg(not(loom))]
        return self.shared.sleep.io_unwatched();
        #[cfg(loom)]
        false
    }
}
