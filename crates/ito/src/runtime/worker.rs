//! A worker thread: its slot (what others see of it), its thread-local context (what only it
//! touches), and its loop.
//!
//! Each thread of a runtime (permanent worker or compensation thread) owns one slot for life:
//! a LIFO deque whose stealing end is in the slot, a parker whose unparker is in the slot, and
//! counters that only the owner writes. The loop:
//!
//! 1. every [`INJECTOR_INTERVAL`] tasks, look at the injector first (fairness for tasks
//!    spawned from outside);
//! 2. the LIFO slot (the task this worker just woke), at most [`MAX_LIFO_STREAK`] times in a
//!    row (then the deque's newest task gets a turn), then its own deque (newest first),
//!    then the injector;
//! 3. steal one task (the oldest) from a victim's deque, starting at a random victim (a
//!    batch if the victim's deque is long, [`BATCH_STEAL_MIN`]); from the injector, a batch;
//! 4. keep looking for a short while (`Builder::idle_spin`, still counted as searching),
//!    then sleep (the protocol in `idle.rs`).
//!
//! A compensation thread also checks, between tasks, whether the runtime has more active
//! threads than workers; if so it retires (parks in the spare list) until needed again.

use std::cell::Cell;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use crossbeam_utils::sync::{Parker, Unparker};

use super::{Metrics, Shared};
use crate::join::shelf::{JobRef, Shelf};
use crate::join::stack::JoinStack;
use crate::task::TaskRef;

/// Tasks run between two looks at the injector.
const INJECTOR_INTERVAL: u32 = 61;
/// Consecutive runs from the LIFO slot before the deque gets a turn.
const MAX_LIFO_STREAK: u32 = 3;
/// A victim's deque at least this long gives a batch to a thief, not one task.
const BATCH_STEAL_MIN: usize = 32;
/// The most tasks one batch steal takes (crossbeam takes at most half the deque).
const BATCH_STEAL_LIMIT: usize = 16;
/// Stack kept free below a task run inline by a waiter.
const STACK_RESERVE: usize = 256 * 1024;
/// Rounds of [`SPINS_PER_ROUND`] spin-loop hints a worker out of work makes between looks
/// before it starts yielding its CPU between looks instead.
const SPIN_ROUNDS: u32 = 16;
/// Spin-loop hints per round.
const SPINS_PER_ROUND: u32 = 32;
/// How long the watcher (a sleeper, while threads outside the runtime run in `block_on`)
/// parks between looks for work whose wake-up was deferred: the longest such a deferral can
/// last (see `idle.rs`, "Deferred wake-ups").
const WATCH_PERIOD: Duration = Duration::from_millis(1);

/// What other threads see of a worker thread.
pub(crate) struct Slot {
    stealer: Stealer<TaskRef>,
    unparker: Unparker,
    /// A retired compensation thread, parked in the spare list.
    retired: AtomicBool,
    /// The join jobs this thread offers to others (on a cache line of its own: the owner
    /// reads it on every `join`).
    pub(crate) shelf: CachePadded<Shelf>,
    /// Written by the owner on every task: on a cache line of its own, so workers do not
    /// bounce each other's lines.
    pub(super) metrics: CachePadded<SlotMetrics>,
}

impl Slot {
    pub(super) fn unpark(&self) {
        self.unparker.unpark();
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

/// Counters written only by the slot's thread (plain load + store, no read-modify-write).
#[derive(Default)]
pub(super) struct SlotMetrics {
    spawned: AtomicU64,
    polled: AtomicU64,
    stolen: AtomicU64,
    parks: AtomicU64,
    helped: AtomicU64,
    join_steals: AtomicU64,
}

#[inline]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl SlotMetrics {
    pub(super) fn add_to(&self, m: &mut Metrics) {
        m.spawned += self.spawned.load(Ordering::Relaxed);
        m.polled += self.polled.load(Ordering::Relaxed);
        m.stolen += self.stolen.load(Ordering::Relaxed);
        m.parks += self.parks.load(Ordering::Relaxed);
        m.helped += self.helped.load(Ordering::Relaxed);
        m.join_steals += self.join_steals.load(Ordering::Relaxed);
    }
}

/// A worker thread's own state, reachable through the `CTX` thread-local.
pub(crate) struct WorkerCtx {
    pub(crate) shared: &'static Shared,
    index: usize,
    slot: &'static Slot,
    local: Worker<TaskRef>,
    parker: Parker,
    lifo: Cell<Option<TaskRef>>,
    lifo_streak: Cell<u32>,
    tick: Cell<u32>,
    rng: Cell<u64>,
    /// Counted in the idle protocol's `searching`.
    searching: Cell<bool>,
    compensator: bool,
    /// Lowest stack address a waiter may run a task inline above.
    stack_limit: usize,
    /// The joins in progress on this thread.
    join: JoinStack,
    /// This thread, for whoever sets the latch of a join job it sleeps on.
    thread: crate::loom::thread::Thread,
}

/// Work found by a search: a task, or another worker's join job.
enum Found {
    Task(TaskRef),
    Job(JobRef),
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

/// A compensation slot whose thread exited after idling for `Builder::thread_keep_alive`: its deque and
/// parker, ready for the next compensation thread, so slots are never used up.
pub(super) struct FreeSlot {
    index: usize,
    local: Worker<TaskRef>,
    parker: Parker,
}

/// Why a worker loop returned.
enum Exit {
    /// The runtime is shutting down.
    Shutdown,
    /// A compensation thread idled for `Builder::thread_keep_alive`; its slot goes to the free list.
    Idle,
}

/// Starts a thread, on a free compensation slot if there is one, else on a new slot. The
/// caller has already counted it in `active`.
pub(super) fn start_thread(shared: &'static Shared, compensator: bool) -> io::Result<usize> {
    let mut handles = shared.handles.lock().unwrap_or_else(|e| e.into_inner());
    // After shutdown, only threads that finish join jobs (which cannot be cancelled).
    if shared.is_shutdown() && !(compensator && shared.has_join_work()) {
        return Err(io::Error::other("ito: the runtime is shutting down"));
    }
    handles.retain(|h| !h.is_finished());
    let reused = if compensator {
        shared
            .free_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
    } else {
        None
    };
    let (index, local, parker) = match reused {
        Some(FreeSlot {
            index,
            local,
            parker,
        }) => {
            let slot = shared.slots[index]
                .get()
                .expect("free slots are initialised");
            slot.retired.store(false, Ordering::Release);
            (index, local, parker)
        }
        None => {
            let local = Worker::new_lifo();
            let parker = Parker::new();
            let slot = Slot {
                stealer: local.stealer(),
                unparker: parker.unparker().clone(),
                retired: AtomicBool::new(false),
                shelf: CachePadded::new(Shelf::new()),
                metrics: CachePadded::new(SlotMetrics::default()),
            };
            let index = shared.num_slots.load(Ordering::Relaxed);
            if index >= shared.slots.len() {
                return Err(io::Error::other("ito: out of worker slots"));
            }
            if shared.slots[index].set(slot).is_err() {
                unreachable!("slots are initialised in order under the handles lock");
            }
            shared.num_slots.store(index + 1, Ordering::Release);
            (index, local, parker)
        }
    };
    let name = if compensator {
        format!("{}-comp-{index}", shared.name)
    } else {
        format!("{}-worker-{index}", shared.name)
    };
    let stack_size = shared.stack_size;
    shared.counters.thread_started();
    // If the OS refuses the thread, the deque and parker come back to the free list.
    let back = std::sync::Arc::new(Mutex::new(None::<(Worker<TaskRef>, Parker)>));
    let given = back.clone();
    *given.lock().unwrap_or_else(|e| e.into_inner()) = Some((local, parker));
    let spawned = std::thread::Builder::new()
        .name(name)
        .stack_size(stack_size)
        .spawn(move || {
            let Some((local, parker)) = given.lock().unwrap_or_else(|e| e.into_inner()).take()
            else {
                return;
            };
            drop(given);
            worker_main(shared, index, local, parker, compensator, stack_size);
        });
    match spawned {
        Ok(h) => {
            handles.push(h);
            Ok(index)
        }
        Err(e) => {
            shared.counters.thread_stopped();
            if let Some((local, parker)) = back.lock().unwrap_or_else(|e| e.into_inner()).take() {
                shared.free_slot(index, local, parker);
            }
            Err(e)
        }
    }
}

/// A worker thread's body.
fn worker_main(
    shared: &'static Shared,
    index: usize,
    local: Worker<TaskRef>,
    parker: Parker,
    compensator: bool,
    stack_size: usize,
) {
    let here = 0u8;
    let base = &here as *const u8 as usize;
    let ctx = WorkerCtx {
        shared,
        index,
        slot: shared.slots[index]
            .get()
            .expect("initialised before the thread starts"),
        local,
        parker,
        lifo: Cell::new(None),
        lifo_streak: Cell::new(0),
        tick: Cell::new(0),
        rng: Cell::new(
            0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
        ),
        searching: Cell::new(false),
        compensator,
        stack_limit: base
            .saturating_sub(stack_size)
            .saturating_add(STACK_RESERVE),
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
    let reset = ResetCtx;
    // Tasks contain their own panics; anything that still escapes (a destructor run by the
    // loop itself) must not kill the worker: keep working.
    let exit = loop {
        match catch_unwind(AssertUnwindSafe(|| ctx.run_loop())) {
            Ok(exit) => break exit,
            Err(payload) => crate::failure::drop_payload(payload),
        }
    };
    match exit {
        Exit::Shutdown => {
            drop(reset);
            ctx.drain();
        }
        Exit::Idle => {
            drop(reset);
            // Whatever is left in the deque goes where others will find it; `push_remote`
            // fences and starts a thread if every other one is blocked meanwhile.
            while let Some(t) = ctx.local.pop() {
                shared.push_remote(t);
            }
            let WorkerCtx { local, parker, .. } = ctx;
            shared.free_slot(index, local, parker);
        }
    }
    shared.counters.thread_stopped();
}

/// Steals one task from the injector, retrying on contention.
pub(super) fn steal_retrying(inj: &Injector<TaskRef>) -> Option<TaskRef> {
    loop {
        match inj.steal() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

impl WorkerCtx {
    #[inline]
    fn slot(&self) -> &'static Slot {
        self.slot
    }

    fn run_loop(&self) -> Exit {
        loop {
            if self.shared.is_shutdown() {
                // Tasks are cancelled at shutdown, but a join job must run for its `join`
                // to return: finish every exposed one first.
                if let Some(j) = self.steal_join_job() {
                    self.run_found(Found::Job(j));
                    continue;
                }
                return Exit::Shutdown;
            }
            if self.compensator && self.should_retire() && self.retire() {
                return Exit::Idle;
            }
            if let Some(t) = self.next_local() {
                self.run_task(t);
                continue;
            }
            if let Some(found) = self.search() {
                self.run_found(found);
                continue;
            }
            if let Some(found) = self.keep_looking() {
                self.run_found(found);
                continue;
            }
            self.sleep();
        }
    }

    #[inline]
    fn run_task(&self, t: TaskRef) {
        // Never run a task while counted as searching: pushes skip waking sleepers while
        // anyone searches, so a searcher busy running a long task would starve them.
        self.stop_searching();
        bump(&self.slot().metrics.polled);
        t.run();
    }

    fn run_found(&self, found: Found) {
        match found {
            Found::Task(t) => self.run_task(t),
            Found::Job(j) => {
                self.stop_searching();
                bump(&self.slot().metrics.join_steals);
                // SAFETY: we took it from a shelf.
                unsafe { crate::join::run_stolen(j) };
            }
        }
    }

    /// Next task from this worker's own queues (and, now and then, the injector).
    #[inline]
    fn next_local(&self) -> Option<TaskRef> {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick % INJECTOR_INTERVAL == 0 {
            if let Some(t) = steal_retrying(&self.shared.injector) {
                return Some(t);
            }
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
                    self.local.push(t);
                    self.shared.notify_work(false);
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

    /// Looks for work elsewhere: the injector, then other slots' shelves and deques.
    fn search(&self) -> Option<Found> {
        if !self.searching.get() {
            self.searching.set(true);
            self.shared.idle.start_searching();
        }
        let found = self.steal_anywhere();
        if found.is_some() {
            self.stop_searching();
        }
        found
    }

    /// A searcher that found nothing keeps looking for `Builder::idle_spin` before it sleeps:
    /// spinning first, then yielding its CPU between looks. It stays counted as searching all
    /// along, so pushes meanwhile skip their wake-up (no system call for the pusher, no
    /// sleep and wake-up for this worker). That is only the search made longer: what a
    /// searcher owes the pushers that skipped their wake-up, it still pays when it gives up
    /// (`sleep`: the last searcher to leave looks once more, after the `SeqCst` decrement;
    /// see `idle.rs`).
    fn keep_looking(&self) -> Option<Found> {
        let window = self.shared.idle_spin;
        if window.is_zero() || !self.searching.get() || !self.shared.idle.try_start_spinning() {
            return None;
        }
        /// Lets go of the spinner role however `spin_for` is left.
        struct Spinning<'a>(&'a super::idle::Idle);
        impl Drop for Spinning<'_> {
            fn drop(&mut self) {
                self.0.stop_spinning();
            }
        }
        let spinning = Spinning(&self.shared.idle);
        let found = self.spin_for(window);
        drop(spinning);
        if found.is_some() {
            self.stop_searching();
        }
        found
    }

    /// `keep_looking`'s loop, for at most `window`.
    fn spin_for(&self, window: Duration) -> Option<Found> {
        let start = Instant::now();
        let mut round = 0u32;
        loop {
            if round < SPIN_ROUNDS {
                for _ in 0..SPINS_PER_ROUND {
                    std::hint::spin_loop();
                }
                round += 1;
            } else {
                std::thread::yield_now();
            }
            if self.shared.is_shutdown() || (self.compensator && self.should_retire()) {
                return None;
            }
            // Loads only, until something shows up: a steal attempt writes to its victim.
            if self.shared.has_queued_work() {
                if let Some(found) = self.steal_anywhere() {
                    return Some(found);
                }
            }
            if start.elapsed() >= window {
                return None;
            }
        }
    }

    fn steal_anywhere(&self) -> Option<Found> {
        if let Some(t) = self.steal_injector() {
            return Some(Found::Task(t));
        }
        let me: *const Shelf = self.shelf();
        let n = self.shared.num_slots.load(Ordering::Acquire);
        if n > 1 {
            let start = self.next_rand() as usize % n;
            for k in 0..n {
                let i = (start + k) % n;
                if i == self.index {
                    continue;
                }
                let Some(slot) = self.shared.slots[i].get() else {
                    continue;
                };
                // A join job first: the oldest one a worker exposed is its largest piece.
                if let Some(j) = slot.shelf.steal(me, self.join.len()) {
                    return Some(Found::Job(j));
                }
                // One task (the oldest: in a fork-join, the largest piece) unless the victim
                // holds a long run of tasks, as a loop spawning many small ones leaves: then a
                // batch, so that the two workers do not bounce the deque's (and the tasks'
                // shared data's) cache lines once per task.
                let batch = slot.stealer.len() >= BATCH_STEAL_MIN;
                loop {
                    let stolen = if batch {
                        slot.stealer
                            .steal_batch_with_limit_and_pop(&self.local, BATCH_STEAL_LIMIT)
                    } else {
                        slot.stealer.steal()
                    };
                    match stolen {
                        Steal::Success(t) => {
                            bump(&self.slot().metrics.stolen);
                            return Some(Found::Task(t));
                        }
                        Steal::Empty => break,
                        Steal::Retry => std::hint::spin_loop(),
                    }
                }
            }
        }
        self.steal_injector().map(Found::Task)
    }

    /// Takes an exposed join job from any slot (shutdown).
    fn steal_join_job(&self) -> Option<JobRef> {
        let me: *const Shelf = self.shelf();
        let n = self.shared.num_slots.load(Ordering::Acquire);
        self.shared.slots[..n]
            .iter()
            .filter_map(|s| s.get())
            .find_map(|s| s.shelf.steal(me, self.join.len()))
    }

    fn steal_injector(&self) -> Option<TaskRef> {
        loop {
            match self.shared.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    #[inline]
    fn stop_searching(&self) {
        if self.searching.replace(false) {
            let shared = self.shared;
            shared
                .idle
                .stop_searching_with(|| shared.may_defer_wake(), |i| shared.unpark_slot(i));
        }
    }

    fn next_rand(&self) -> u64 {
        // xorshift64*
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// No work anywhere: sleep until notified (see `idle.rs`).
    fn sleep(&self) {
        if self.searching.replace(false) && self.shared.idle.leave_searching_was_last() {
            // The last searcher must look once more: a push may have skipped its
            // notification because we were searching.
            if let Some(found) = self.steal_anywhere_and_own() {
                self.run_found(found);
                return;
            }
        }
        let shared = self.shared;
        // Values replaced by transactions on this thread get freed while it sleeps.
        crate::stm::flush_retired();
        shared.idle.register_sleeper(self.index);
        if shared.idle.work_visible_with(|| shared.has_queued_work())
            && shared.idle.unregister_sleeper(self.index)
        {
            return;
        }
        /// Gives up the watch however `sleep` is left (or when dropped early): after leaving
        /// the sleepers list, before the search that follows.
        struct Watching<'a>(&'a super::idle::Idle);
        impl Drop for Watching<'_> {
            fn drop(&mut self) {
                self.0.stop_watching();
            }
        }
        // While threads outside the runtime run in `block_on`, one sleeper watches: wake-ups
        // are deferred only while it does, and it takes what was deferred within a
        // `WATCH_PERIOD` (see `idle.rs`, "Deferred wake-ups").
        let mut watching =
            (!self.compensator && shared.idle.has_outside() && shared.idle.try_start_watching())
                .then(|| Watching(&shared.idle));
        while shared.idle.is_sleeping(self.index) && !shared.is_shutdown() {
            bump(&self.slot().metrics.parks);
            if watching.is_some() {
                self.parker.park_timeout(WATCH_PERIOD);
                if !shared.idle.is_sleeping(self.index) {
                    break;
                }
                // Nothing to watch for any more: nobody runs outside, or every thread acting
                // as a worker sleeps (nothing is deferred with no worker awake; a `block_on`
                // blocked outside ito, an idle server's `accept`, must not keep us waking every
                // period; the next sleeper while outside threads run watches again).
                if !shared.idle.has_outside()
                    || shared.idle.awake(shared.active.load(Ordering::SeqCst)) == 0
                {
                    // Stopping comes before the look below: a notifier that still saw us
                    // watching deferred to us.
                    watching = None;
                }
                if shared.idle.work_visible_with(|| shared.has_queued_work())
                    && shared.idle.unregister_sleeper(self.index)
                {
                    return;
                }
                continue;
            }
            if !self.compensator {
                self.parker.park();
                continue;
            }
            // A compensation thread must notice when it is no longer needed (it retires and
            // later exits only from the loop), so its idle sleep is bounded.
            let recheck = shared.keep_alive.clamp(
                std::time::Duration::from_millis(10),
                std::time::Duration::from_secs(1),
            );
            self.parker.park_timeout(recheck);
            if shared.idle.is_sleeping(self.index)
                && self.should_retire()
                && shared.idle.unregister_sleeper(self.index)
            {
                return;
            }
        }
        drop(watching);
        // Woken by a notifier, which counted us as searching.
        if !shared.is_shutdown() {
            self.searching.set(true);
        }
    }

    /// The last searcher's final look before sleeping. Finding nothing must not wake anyone:
    /// a woken sleeper would do the same and wake us back, for ever.
    fn steal_anywhere_and_own(&self) -> Option<Found> {
        self.searching.set(true);
        self.shared.idle.start_searching();
        let t = self.steal_anywhere();
        if t.is_some() {
            self.stop_searching();
        } else {
            self.searching.set(false);
            let _ = self.shared.idle.leave_searching_was_last();
        }
        t
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
        let here = 0u8;
        (&here as *const u8 as usize) > self.stack_limit
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
                t.run();
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

    /// This thread is about to block: give its place to another thread if the runtime would
    /// otherwise run with fewer active threads than workers.
    pub(crate) fn enter_blocking(&self) -> BlockingGuard {
        // Joins in progress below this frame would be out of reach while we sleep, and the
        // wait may well be for one of them.
        crate::join::expose(self, usize::MAX);
        if let Some(t) = self.lifo.take() {
            self.local.push(t);
        }
        let shared = self.shared;
        if shared.is_shutdown() {
            // Nobody else may be left to run the join jobs this wait could depend on.
            if shared.has_join_work() {
                shared.start_shutdown_helper();
            }
            shared.active.fetch_sub(1, Ordering::SeqCst);
            return BlockingGuard { shared };
        }
        let before = shared.active.fetch_sub(1, Ordering::SeqCst);
        // Pairs with the fence in `Shared::push_remote`: either we see its task here, or it
        // sees `active == 0` and compensates itself.
        fence(Ordering::SeqCst);
        let queued = shared.has_queued_work();
        if queued {
            shared.notify_work(true);
        }
        if before <= shared.workers {
            // Past the bound only if nobody else is active and work is waiting: otherwise
            // the blocked threads might wait for a task no thread is left to run.
            shared.compensate(before == 1 && queued);
        }
        BlockingGuard { shared }
    }

    fn should_retire(&self) -> bool {
        self.shared.active.load(Ordering::Relaxed) > self.shared.workers
    }

    /// A compensation thread steps back: park in the spare list until reactivated. Returns
    /// `true` if it stayed unused for `Builder::thread_keep_alive` and should exit.
    fn retire(&self) -> bool {
        let shared = self.shared;
        let mut a = shared.active.load(Ordering::Relaxed);
        loop {
            if a <= shared.workers {
                return false;
            }
            match shared
                .active
                .compare_exchange(a, a - 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => a = actual,
            }
        }
        self.stop_searching();
        if let Some(t) = self.lifo.take() {
            self.local.push(t);
        }
        if !self.local.is_empty() {
            shared.notify_work(true);
        }
        self.slot().retired.store(true, Ordering::Release);
        shared
            .spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.index);
        let deadline = Instant::now().checked_add(shared.keep_alive);
        while self.slot().retired.load(Ordering::Acquire) && !shared.is_shutdown() {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                let mut spares = shared.spares.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(pos) = spares.iter().position(|&i| i == self.index) {
                    spares.swap_remove(pos);
                    return true;
                }
                // Someone took us off the list to reactivate us: wait for it.
                drop(spares);
                self.parker.park();
                continue;
            }
            bump(&self.slot().metrics.parks);
            match deadline {
                Some(d) => self.parker.park_timeout(d - now),
                None => self.parker.park(),
            }
        }
        false
    }

    /// Cancels the task in the LIFO slot, which no other thread can see (shutdown called from
    /// this worker).
    pub(super) fn cancel_lifo(&self) {
        if let Some(t) = self.lifo.take() {
            t.cancel();
        }
    }

    /// Cancels whatever is left in this worker's queues (shutdown).
    fn drain(&self) {
        if let Some(t) = self.lifo.take() {
            t.cancel();
        }
        while let Some(t) = self.local.pop() {
            t.cancel();
        }
    }
}

/// Counts the thread back in as active when its wait ends.
pub(crate) struct BlockingGuard {
    shared: &'static Shared,
}

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        self.shared.active.fetch_add(1, Ordering::SeqCst);
    }
}

impl Shared {
    /// Hands a compensation slot's deque and parker to the next compensation thread.
    fn free_slot(&self, index: usize, local: Worker<TaskRef>, parker: Parker) {
        self.free_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(FreeSlot {
                index,
                local,
                parker,
            });
    }

    /// Brings one more thread into play for a worker that is blocking. `all_blocked`: no other
    /// thread of the runtime is active and work is queued, so the bound may be exceeded.
    pub(super) fn compensate(&'static self, all_blocked: bool) {
        if !all_blocked && (self.idle.has_sleepers() || self.idle.has_searchers()) {
            // An idle worker can take the work: a searcher finds it, a sleeper is woken
            // when work appears.
            return;
        }
        let spare = self.spares.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(i) = spare {
            self.active.fetch_add(1, Ordering::SeqCst);
            let slot = self.slots[i].get().expect("spare slots are initialised");
            slot.retired.store(false, Ordering::Release);
            slot.unpark();
            self.counters.compensations.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Compensation threads alive (running, blocked or retired): slots in use by them.
        let free = self
            .free_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        let live = (self.num_slots.load(Ordering::Acquire) - self.workers).saturating_sub(free);
        if live < self.max_comp || all_blocked {
            self.active.fetch_add(1, Ordering::SeqCst);
            match start_thread(self, true) {
                Ok(_) => {
                    self.counters.compensations.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    self.active.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }
}
