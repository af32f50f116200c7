//! Worker loops on task stacks: a task that blocks keeps the stack it runs on, and the worker
//! goes on with another loop on another stack.
//!
//! A worker thread does not run its loop on its own stack. It runs it as a coroutine on a
//! pooled stack (`coro/`), and tasks run on that stack as they would on a thread's: a task
//! that never blocks costs no switch at all. When code on a loop blocks in one of ito's waits
//! (a [`Blocker`](super::park::Blocker) in its loop form), the loop **suspends** with the
//! waiting code on its stack, and the thread's own stack (the trampoline, [`run`]) resumes a
//! spare loop, which goes on running tasks. When the event comes, the waiter's
//! [`LoopToken`] queues the suspended loop on its home slot ([`Resumes`]) and wakes that
//! thread; the loop running there yields at its next turn (between two tasks), and the
//! trampoline resumes the queued loop, which finishes its task and carries on as the
//! thread's loop, while the one that yielded becomes a spare.
//!
//! A loop only ever runs on the thread that created it: its stack may hold thread-locals'
//! addresses and `!Send` values. What this means for users is in `docs/coroutines.md`.
//!
//! | field | written by | read by |
//! |---|---|---|
//! | `Loops` (all of it) | the owning thread | the owning thread |
//! | `Slot::resumes` | any thread (push), the owner (pop) | both |
//! | `LoopToken::park` | any thread (`unblock`), the owner (park, resume) | both |

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Shared;
use super::metrics::bump;
use super::park::{LoopPark, Sleep};
use super::worker::{self, Exit, WorkerCtx};
use crate::coro::{self, Coro, Resumed, StackPool};
use crate::loom::thread::Thread;
use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering};

/// Spare loops a thread keeps; more are ended as they become spare.
const MAX_SPARE: usize = 8;
/// How long the trampoline sleeps between two looks at its resume queue when it has no loop
/// to run (shutdown with loops still suspended, or no stack to be had).
const RESUME_POLL: Duration = Duration::from_millis(1);
/// The longest it sleeps between two looks.
const RESUME_POLL_MAX: Duration = Duration::from_millis(100);
/// The most stack kept free below a task that a waiter runs inline (a quarter of the stack
/// when that is less).
pub(super) const STACK_RESERVE: usize = 256 * 1024;

/// The loops waiting to be resumed on one slot's thread.
#[derive(Default)]
pub(crate) struct Resumes {
    /// The queue is not empty. Set and cleared under the lock; read without it.
    pending: AtomicBool,
    ids: Mutex<VecDeque<u32>>,
    /// The slot's thread is parked in a wait that blocks the thread ([`park_thread`]): a push
    /// unparks it through `parked`, so that it resumes the queued loop meanwhile.
    blocked: AtomicBool,
    parked: Mutex<Option<Thread>>,
    /// Unblockers that found a loop of this slot suspended and have not yet made their last
    /// access to the runtime ([`unblock`]). Once queued, the loop may resume, end its task,
    /// and the runtime be dropped before such an unblocker is done with the slot and the
    /// sleep state; the `Runtime` waits for none to be left before it lets go of the block
    /// (`owners.rs`). An unblocker is no owner: it is counted here, on a line it writes anyway.
    unblocking: AtomicUsize,
    /// Under loom, a stand-in for the runtime's block: an unblocker reads it at its last
    /// access, and a model writes it where the `Runtime` frees the block, so that loom reports
    /// a read that the free does not wait for.
    #[cfg(loom)]
    pub(crate) block: ModelBlock,
}

/// [`Resumes::block`]'s cell, shared between the model's threads.
#[cfg(loom)]
#[derive(Default)]
pub(crate) struct ModelBlock(pub(crate) loom::cell::UnsafeCell<u8>);

// SAFETY: only loom models build one, and loom checks every access to the cell, reporting
// any two that race.
#[cfg(loom)]
unsafe impl Sync for ModelBlock {}

impl Resumes {
    /// Whether a loop waits to be resumed (`SeqCst`: the sleep protocol's look at its queues).
    #[inline]
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }

    pub(crate) fn push(&self, id: u32) {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.push_back(id);
        self.pending.store(true, Ordering::SeqCst);
        drop(ids);
        // Pairs with `park_thread`: either it sees `pending`, or we see `blocked`.
        if self.blocked.load(Ordering::SeqCst) {
            if let Some(t) = &*self.parked.lock().unwrap_or_else(|e| e.into_inner()) {
                t.unpark();
            }
        }
    }

    /// Waits until no unblocker is between finding a loop of this slot suspended and its last
    /// access to the runtime: the `Runtime` letting go, after the slot's thread was joined.
    pub(crate) fn wait_unblockers(&self) {
        while self.unblocking.load(Ordering::Acquire) != 0 {
            // Rare and short: an unblocker descheduled in the middle of its queueing.
            crate::loom::spin_loop();
            #[cfg(not(loom))]
            std::thread::yield_now();
        }
    }

    pub(crate) fn pop(&self) -> Option<u32> {
        if !self.pending.load(Ordering::Acquire) {
            return None;
        }
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        let id = ids.pop_front();
        if ids.is_empty() {
            self.pending.store(false, Ordering::SeqCst);
        }
        id
    }
}

/// What wakes one loop: its park state and its home.
pub(crate) struct LoopToken {
    park: LoopPark,
    id: u32,
    index: usize,
    shared: &'static Shared,
}

impl LoopToken {
    /// Ends the loop's park: queues it at home and wakes its thread if it sleeps. A thread
    /// that is awake looks at its queue between two tasks, and before it sleeps
    /// (`WorkerCtx::has_queued_work`).
    ///
    /// The park is looked at first, and the runtime only if the loop is suspended: an
    /// unblocker is no owner of the runtime's block (`owners.rs`), and one kept past its wait
    /// (the waker of a `block_on` on this loop) may be used after the runtime was freed.
    /// A suspended loop keeps its thread, and so the block, alive until it is queued;
    /// `Resumes::unblocking` keeps the block for the rest of the unblock.
    pub(crate) fn unblock(&self) {
        let home = || {
            let slot = self
                .shared
                .threads
                .slot(self.index)
                .expect("a loop's slot exists");
            (&*slot.resumes, &self.shared.sleep)
        };
        unblock(&self.park, home, self.index, self.id);
    }
}

/// [`LoopToken::unblock`] on its parts (the loom models run this): records the unblock, and
/// if the loop is suspended, queues it on slot `index` and wakes that slot's thread. `home`
/// (the slot's resume queue and the runtime's sleep state) is reached only then.
pub(crate) fn unblock<'a>(
    park: &LoopPark,
    home: impl FnOnce() -> (&'a Resumes, &'a Sleep),
    index: usize,
    id: u32,
) {
    if park.unblock() {
        let (resumes, sleep) = home();
        // Counted before the loop can resume (`Resumes::unblocking`). Relaxed: the push's
        // lock orders it before the loop's resumption, and so before the thread's join.
        resumes.unblocking.fetch_add(1, Ordering::Relaxed);
        resumes.push(id);
        sleep.wake_slot(index);
        #[cfg(loom)]
        resumes.block.0.with(|_| ());
        // The last access: Release, for the `Runtime` that waits for it before the free.
        resumes.unblocking.fetch_sub(1, Ordering::Release);
    }
}

impl std::fmt::Debug for LoopToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopToken")
            .field("id", &self.id)
            .field("slot", &self.index)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Resumes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumes")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// How a running loop handed control back to the trampoline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    None,
    /// It blocked: keep it until its token queues it.
    Blocked,
    /// It is between two tasks and a queued loop waits: resume that one.
    Resume,
    /// Set by the trampoline: the spare being resumed must end.
    Quit,
}

struct Entry {
    /// `None` while it runs, or while the id is free.
    coro: Option<Coro<Exit>>,
    token: Arc<LoopToken>,
}

/// A worker thread's loops. Only the owning thread touches it.
pub(crate) struct Loops {
    pool: Option<StackPool>,
    name: Arc<str>,
    entries: RefCell<Vec<Entry>>,
    free: RefCell<Vec<u32>>,
    /// Loops parked between two tasks, ready to run (started or not).
    spare: RefCell<Vec<u32>>,
    /// Loops suspended in a wait.
    suspended: Cell<usize>,
    /// The loop running now; `None` on the thread's own stack.
    current: Cell<Option<u32>>,
    /// The running loop was resumed by a waiter that blocks the thread, not by the trampoline:
    /// it hands control back at its next turn between two tasks.
    borrowed: Cell<bool>,
    /// The depth of the thread's join stack when the running loop was resumed: code on it may
    /// suspend only with no join of its own in progress above that.
    join_base: Cell<usize>,
    command: Cell<Command>,
}

impl Loops {
    /// The loops of slot `index`'s thread, on stacks from `pool` (`None`: tasks run on the
    /// thread's own stack and waits block the thread).
    pub(super) fn new(pool: Option<StackPool>, name: String) -> Loops {
        Loops {
            pool,
            name: name.into(),
            entries: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            spare: RefCell::new(Vec::new()),
            suspended: Cell::new(0),
            current: Cell::new(None),
            borrowed: Cell::new(false),
            join_base: Cell::new(0),
            command: Cell::new(Command::None),
        }
    }

    /// Loops suspended in a wait on this thread.
    pub(super) fn suspended(&self) -> usize {
        self.suspended.get()
    }

    /// Whether the running loop hands control back at its next turn (see `borrowed`).
    #[inline]
    pub(super) fn is_borrowed(&self) -> bool {
        self.borrowed.get()
    }

    /// The token of the running loop if the code running on it may suspend: it runs on a
    /// loop, has no join of its own in progress (a join's frames live on the thread's join
    /// stack, which the next loop would build on), is not inside a wait that blocks the
    /// thread, and a spare loop is there to take over.
    pub(crate) fn suspendable(&self, ctx: &WorkerCtx) -> Option<Arc<LoopToken>> {
        let id = self.current.get()?;
        if ctx.join_stack().len() != self.join_base.get()
            || ctx.blocked.get()
            || ctx.runs_stolen_job()
            || !self.ensure_spare(ctx)
        {
            return None;
        }
        Some(self.entries.borrow()[id as usize].token.clone())
    }

    /// Suspends the running loop until `token` is unblocked (`Blocker::park`). May return
    /// spuriously.
    pub(crate) fn suspend(&self, ctx: &WorkerCtx, token: &LoopToken) {
        debug_assert_eq!(self.current.get(), Some(token.id));
        if !token.park.try_park() {
            return;
        }
        bump(&ctx.slot().metrics.suspends);
        let traced = ctx.shared.trace.map(|r| (r, r.suspend()));
        let saved = SavedLocals::take();
        self.command.set(Command::Blocked);
        coro::suspend();
        saved.restore();
        token.park.resumed();
        if let Some((r, task)) = traced {
            r.resume(task);
        }
    }

    /// Between two tasks, with a loop queued for resumption: hands the thread to it. Returns
    /// whether this loop must end (the trampoline has spares enough).
    pub(super) fn yield_to_resumed(&self) -> bool {
        if self.current.get().is_none() {
            return false;
        }
        self.command.set(Command::Resume);
        coro::suspend();
        self.command.replace(Command::None) == Command::Quit
    }

    fn ensure_spare(&self, ctx: &WorkerCtx) -> bool {
        if !self.spare.borrow().is_empty() {
            return true;
        }
        match self.new_loop(ctx) {
            Some(id) => {
                self.spare.borrow_mut().push(id);
                true
            }
            None => false,
        }
    }

    fn take_spare(&self, ctx: &WorkerCtx) -> Option<u32> {
        let spare = self.spare.borrow_mut().pop();
        spare.or_else(|| self.new_loop(ctx))
    }

    /// A loop that has not started, on a fresh stack; `None` if no stack can be had.
    fn new_loop(&self, ctx: &WorkerCtx) -> Option<u32> {
        let pool = self.pool.as_ref()?;
        let coro = Coro::new(pool, self.name.clone(), loop_body).ok()?;
        let reused = self.free.borrow_mut().pop();
        let mut entries = self.entries.borrow_mut();
        let id = match reused {
            Some(id) => {
                entries[id as usize].coro = Some(coro);
                id
            }
            None => {
                let id = u32::try_from(entries.len()).ok()?;
                entries.push(Entry {
                    coro: Some(coro),
                    token: Arc::new(LoopToken {
                        park: LoopPark::new(),
                        id,
                        index: ctx.index(),
                        shared: ctx.shared,
                    }),
                });
                id
            }
        };
        Some(id)
    }

    /// Runs loop `id` until it hands control back; `borrowed`: for a waiter that blocks the
    /// thread (see `borrowed`), not for the trampoline.
    fn resume(&self, ctx: &WorkerCtx, id: u32, borrowed: bool) -> Resumed<Exit> {
        let mut coro = self.entries.borrow_mut()[id as usize]
            .coro
            .take()
            .expect("a loop resumed while it runs");
        let stack = coro.stack();
        let reserve = STACK_RESERVE.min((stack.end - stack.start) / 4);
        let outer_limit = ctx.set_stack_limit(stack.start + reserve);
        let outer = self.current.replace(Some(id));
        let outer_borrowed = self.borrowed.replace(borrowed);
        let outer_base = self.join_base.replace(ctx.join_stack().len());
        let r = coro.resume();
        self.join_base.set(outer_base);
        self.borrowed.set(outer_borrowed);
        self.current.set(outer);
        ctx.set_stack_limit(outer_limit);
        if coro.is_done() {
            drop(coro);
            self.free.borrow_mut().push(id);
        } else {
            self.entries.borrow_mut()[id as usize].coro = Some(coro);
        }
        r
    }

    /// Keeps `id` (just back between two tasks) as a spare, or ends it if there are enough.
    fn make_spare(&self, ctx: &WorkerCtx, id: u32) {
        if self.spare.borrow().len() < MAX_SPARE {
            self.spare.borrow_mut().push(id);
        } else {
            self.end(ctx, id);
        }
    }

    /// Ends a spare loop: one that started is resumed to return from its loop.
    fn end(&self, ctx: &WorkerCtx, id: u32) {
        let started = self.entries.borrow()[id as usize]
            .coro
            .as_ref()
            .is_some_and(Coro::is_started);
        if !started {
            drop(self.entries.borrow_mut()[id as usize].coro.take());
            self.free.borrow_mut().push(id);
            return;
        }
        self.command.set(Command::Quit);
        match self.resume(ctx, id, false) {
            Resumed::Returned(_) => {}
            Resumed::Panicked(payload) => crate::failure::drop_payload(payload),
            Resumed::Suspended => unreachable!("a loop told to quit suspended"),
        }
    }

    /// Waits on the thread until a suspended loop is queued, and takes it. Looks at the queue
    /// after [`RESUME_POLL`], then less and less often, up to [`RESUME_POLL_MAX`] apart (a
    /// loop that never resumes after a `shutdown_timeout` gave up must not cost a core).
    fn wait_for_resume(&self, ctx: &WorkerCtx) -> u32 {
        let mut poll = RESUME_POLL;
        loop {
            if let Some(id) = ctx.slot().resumes.pop() {
                self.suspended.set(self.suspended.get() - 1);
                return id;
            }
            ctx.idler().park(Some(poll));
            poll = (poll * 2).min(RESUME_POLL_MAX);
        }
    }
}

impl Loops {
    /// For a waiter that blocks this thread: runs the loops queued for resumption, each until
    /// its task ends (it then hands control back between two tasks and becomes a spare) or it
    /// suspends again. They can resume on no other thread, and the awaited event may depend on
    /// them.
    fn serve_queued(&self, ctx: &WorkerCtx) {
        // The waiter's blocking belongs to its own loop, not to the ones run here.
        let blocked = ctx.blocked.replace(false);
        while let Some(id) = ctx.slot().resumes.pop() {
            self.suspended.set(self.suspended.get() - 1);
            match self.resume(ctx, id, true) {
                Resumed::Suspended => match self.command.replace(Command::None) {
                    Command::Blocked => self.suspended.set(self.suspended.get() + 1),
                    Command::Resume => self.make_spare(ctx, id),
                    c => unreachable!("a borrowed loop suspended with {c:?}"),
                },
                // Shutdown: the loop ended; the waiter's own loop will see it too.
                Resumed::Returned(_) => {}
                Resumed::Panicked(payload) => crate::failure::drop_payload(payload),
            }
        }
        ctx.blocked.set(blocked);
    }
}

/// Parks the calling thread, which waits in a way that blocks it (it could not suspend), until
/// unparked or `deadline`. On a worker, it runs the loops queued for resumption meanwhile
/// instead (and then returns: callers re-check their condition, as after any park).
pub(crate) fn park_thread(deadline: Option<Instant>) {
    let Some(ctx) = worker::current_ctx().filter(|c| !c.runs_stolen_job()) else {
        return plain_park(deadline);
    };
    let resumes = &ctx.slot().resumes;
    *resumes.parked.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(crate::loom::thread::current());
    resumes.blocked.store(true, Ordering::SeqCst);
    if resumes.is_pending() {
        resumes.blocked.store(false, Ordering::SeqCst);
        ctx.loops().serve_queued(ctx);
        return;
    }
    plain_park(deadline);
    resumes.blocked.store(false, Ordering::SeqCst);
    if resumes.is_pending() {
        ctx.loops().serve_queued(ctx);
    }
}

fn plain_park(deadline: Option<Instant>) {
    match deadline {
        None => crate::loom::thread::park(),
        #[cfg(not(loom))]
        Some(d) => std::thread::park_timeout(d.saturating_duration_since(Instant::now())),
        // A loom park with a timeout returns at once: the timeout may fire at any point.
        #[cfg(loom)]
        Some(_) => loom::thread::yield_now(),
    }
}

/// What a loop coroutine runs: the worker loop, until it exits or is told to quit.
fn loop_body() -> Exit {
    let ctx = super::worker::current_ctx().expect("a worker loop runs on a worker thread");
    loop {
        // Tasks contain their own panics; anything that still escapes (a destructor run by
        // the loop itself) must not kill the worker: keep working.
        match catch_unwind(AssertUnwindSafe(|| ctx.run_loop())) {
            Ok(exit) => return exit,
            Err(payload) => crate::failure::drop_payload(payload),
        }
    }
}

/// The trampoline: runs the thread's loops until one exits and none is left suspended.
/// Without stacks, runs the loop on the thread's own stack.
pub(super) fn run(ctx: &WorkerCtx) -> Exit {
    let loops = ctx.loops();
    let Some(mut next) = loops.take_spare(ctx) else {
        return loop_body();
    };
    let exit = loop {
        match loops.resume(ctx, next, false) {
            Resumed::Suspended => match loops.command.replace(Command::None) {
                Command::Blocked => {
                    loops.suspended.set(loops.suspended.get() + 1);
                    next = match loops.take_spare(ctx) {
                        Some(id) => id,
                        None => loops.wait_for_resume(ctx),
                    };
                }
                Command::Resume => {
                    if let Some(id) = ctx.slot().resumes.pop() {
                        loops.suspended.set(loops.suspended.get() - 1);
                        loops.make_spare(ctx, next);
                        next = id;
                    }
                }
                c => unreachable!("a loop suspended with {c:?}"),
            },
            Resumed::Returned(exit) => {
                if loops.suspended() == 0 {
                    break exit;
                }
                // Shutting down with loops still suspended: they finish their tasks first.
                // What only this thread can reach (its LIFO slot, its deque) is cancelled
                // first: a suspended task may wait for it.
                ctx.drain();
                next = loops.wait_for_resume(ctx);
            }
            Resumed::Panicked(payload) => {
                crate::failure::drop_payload(payload);
                next = match loops.take_spare(ctx) {
                    Some(id) => id,
                    None => loops.wait_for_resume(ctx),
                };
            }
        }
    };
    let spares = std::mem::take(&mut *loops.spare.borrow_mut());
    for id in spares {
        loops.end(ctx, id);
    }
    exit
}

/// Thread-locals that belong to the code on a loop's stack rather than to the thread: taken
/// (reset) when the loop suspends, so the next loop starts clean, and put back on resume.
struct SavedLocals {
    entered: Option<&'static Shared>,
    cancel_current: *const crate::task::Header,
    cancel_depth: u32,
    notify_depth: u32,
    process: crate::process::PollingNow,
    in_tx: bool,
}

impl SavedLocals {
    fn take() -> SavedLocals {
        SavedLocals {
            entered: worker::swap_entered(None),
            cancel_current: crate::task::cancel::swap_current(std::ptr::null()),
            cancel_depth: crate::task::swap_cancel_depth(0),
            notify_depth: crate::future::notify::swap_depth(0),
            process: crate::process::swap_polling(Default::default()),
            in_tx: crate::stm::swap_in_transaction(false),
        }
    }

    fn restore(self) {
        worker::swap_entered(self.entered);
        crate::task::cancel::swap_current(self.cancel_current);
        crate::task::swap_cancel_depth(self.cancel_depth);
        crate::future::notify::swap_depth(self.notify_depth);
        crate::process::swap_polling(self.process);
        crate::stm::swap_in_transaction(self.in_tx);
    }
}
