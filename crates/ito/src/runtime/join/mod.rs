//! Fork-join: [`join`] runs two closures, in parallel when a thread is free to take one, and
//! returns both results.
//!
//! The design is in `docs/join.md`; in short, a `join` is a function call plus a few stores:
//!
//! - the second closure goes into a [`StackJob`](job::StackJob) in the `join` frame, and a
//!   pointer to it onto the worker's private [`JoinStack`](stack::JoinStack);
//! - if the worker's [shelf](shelf) (the jobs it offers to thieves) is empty, the oldest
//!   private job is *exposed* there (cold path, one lock);
//! - the first closure runs; then, if the job was never exposed, the second runs inline. No
//!   atomic read-modify-write, no allocation. If it was exposed, the worker takes it back
//!   under the shelf lock, or finds it stolen and waits, running only jobs that descend from
//!   it meanwhile (leapfrogging), then sleeps, handing its place to a compensation thread.
//!
//! Thieves (idle workers) take the oldest exposed job of another worker, which is the
//! largest piece of work it has. A worker about to block in a wait exposes all its jobs, so
//! nothing it holds is out of reach while it sleeps.

pub(crate) mod job;
pub(crate) mod shelf;
pub(crate) mod stack;

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr;
use std::thread::Result as ThreadResult;

use crate::runtime::park::Backoff;
use crate::runtime::worker::{self, WorkerCtx};
use crate::runtime::{self, Shared};
use crate::trace::{Kind, Why};
use job::{JobHeader, JoinLatch, StackJob};
use shelf::{Reclaim, Shelf};

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// On a worker thread, `a` runs right here and `b` is offered to idle workers; if nobody
/// takes it, it runs here after `a`, at the cost of an ordinary function call. So `join` is
/// cheap enough to call at every level of a recursion, down to the smallest pieces: there is
/// no cutoff to tune. Outside a runtime, `join` runs on the current runtime (the global one,
/// or the one entered by [`Runtime::block_on`](crate::Runtime::block_on)) and blocks the
/// caller until both are done.
///
/// If either closure panics, the other still runs to completion, and then the panic is
/// resumed in the caller (`a`'s, if both panic).
///
/// On a worker thread, `join` always runs on that worker's runtime (even inside another
/// runtime's `block_on`); [`Runtime::join`](crate::Runtime::join) picks one explicitly.
///
/// `b` is offered to other workers only when the worker has nothing else on offer, or when
/// `a` blocks in something ito knows about (a [`Future::wait`](crate::Future::wait),
/// [`block_on`](crate::block_on), another join). If `a` blocks in something ito cannot
/// see (a `std::sync::Mutex`, a channel, a socket) while waiting for work forked by an
/// enclosing `join`, wrap that call in [`block_in_place`]: otherwise that work may stay out
/// of reach until `a` returns.
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = ito::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
///
/// `join` composes with waiting: a side may [`wait`](crate::Future::wait) for a future (the
/// worker exposes its pending joins first, so they are never stuck behind the wait).
///
/// ```
/// let p = ito::Promise::new();
/// let f = p.future();
/// let (got, done) = ito::join(move || f.wait(), move || p.try_success(7));
/// assert!(done);
/// assert_eq!(got, Ok(7));
/// ```
#[inline]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match worker::current_ctx() {
        Some(ctx) => join_on(ctx, a, b),
        None => install_on(runtime::current(), move || join(a, b)),
    }
}

/// Runs `f`, which blocks in a way ito cannot see (a lock, a channel, a socket, a blocking
/// system call), telling the runtime first: the worker exposes every pending [`join`] side
/// of its stack to other workers and hands its place to another thread until `f` returns
/// (tokio's `block_in_place`). Outside a worker it just calls `f`.
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// let rt = ito::Runtime::builder().workers(1).build().unwrap();
/// let (got, ()) = rt.install(|| {
///     ito::join(
///         move || ito::block_in_place(|| rx.recv().unwrap()),
///         move || tx.send(5).unwrap(),
///     )
/// });
/// assert_eq!(got, 5);
/// ```
pub fn block_in_place<R>(f: impl FnOnce() -> R) -> R {
    let _blocked = worker::current_ctx().map(|c| c.enter_blocking(Why::BlockInPlace));
    f()
}

/// [`join`] for three closures: runs `a`, `b` and `c`, potentially in parallel.
///
/// ```
/// let (a, b, c) = ito::join3(|| 1, || "two", || 3.0);
/// assert_eq!((a, b, c), (1, "two", 3.0));
/// ```
#[inline]
pub fn join3<A, B, C, RA, RB, RC>(a: A, b: B, c: C) -> (RA, RB, RC)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    C: FnOnce() -> RC + Send,
    RA: Send,
    RB: Send,
    RC: Send,
{
    let (ra, (rb, rc)) = join(a, || join(b, c));
    (ra, rb, rc)
}

/// `join` on a worker thread.
#[inline(always)]
fn join_on<A, B, RA, RB>(ctx: &WorkerCtx, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let job = StackJob::new(b);
    let stack = ctx.join_stack();
    // From the push until the job is popped (and, if exposed, taken back or its latch set),
    // another thread may hold a pointer into this frame: unwinding out of it would be a
    // use-after-free. `a` runs under `catch_unwind`; anything else that unwinds here is a bug
    // in ito, and aborts.
    let guard = AbortOnUnwind;
    let depth = stack.push(job.header());
    if ctx.shelf().is_empty_hint() {
        expose(ctx, 1);
    }
    let ra = catch_unwind(AssertUnwindSafe(a));
    if stack.is_exposed(depth) {
        return finish_exposed(ctx, &job, depth, ra, guard);
    }
    stack.pop(depth);
    std::mem::forget(guard);
    // SAFETY: never exposed, so no other thread has seen the job; taken once.
    let b = unsafe { job.take_fn() };
    run_second(ra, b)
}

/// `b` after `a`'s outcome: `a`'s panic is resumed once `b` has run.
#[inline]
fn run_second<RA, RB>(ra: ThreadResult<RA>, b: impl FnOnce() -> RB) -> (RA, RB) {
    match ra {
        Ok(ra) => (ra, b()),
        Err(payload) => {
            if let Err(other) = catch_unwind(AssertUnwindSafe(b)) {
                crate::failure::drop_payload(other);
            }
            resume_unwind(payload)
        }
    }
}

/// The end of a `join` whose job was exposed: take it back, or wait for its thief.
#[cold]
#[inline(never)]
fn finish_exposed<F, RA, RB>(
    ctx: &WorkerCtx,
    job: &StackJob<F, RB>,
    depth: usize,
    ra: ThreadResult<RA>,
    guard: AbortOnUnwind,
) -> (RA, RB)
where
    F: FnOnce() -> RB + Send,
    RB: Send,
{
    let reclaim = ctx.shelf().reclaim(job.header());
    ctx.join_stack().pop(depth);
    match reclaim {
        Reclaim::Reclaimed => {
            std::mem::forget(guard);
            // SAFETY: taken back from the shelf, so no thief has it; taken once.
            let b = unsafe { job.take_fn() };
            run_second(ra, b)
        }
        Reclaim::Stolen { thief, depth } => {
            wait_stolen(ctx, job.latch(), thief, depth);
            std::mem::forget(guard);
            // SAFETY: the latch is set; read once.
            let rb = unsafe { job.take_result() };
            match (ra, rb) {
                (Ok(ra), Ok(rb)) => (ra, rb),
                (Err(payload), rb) => {
                    if let Err(other) = rb {
                        crate::failure::drop_payload(other);
                    }
                    resume_unwind(payload)
                }
                (Ok(_), Err(payload)) => resume_unwind(payload),
            }
        }
    }
}

/// Aborts the process if dropped: armed across code that must not unwind.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("ito: panic while a join job was shared with another thread; aborting");
        std::process::abort();
    }
}

/// Waits until a stolen job's latch is set.
///
/// Meanwhile it runs jobs that descend from the stolen one, taken from the thief's shelf
/// (leapfrogging): they are work the latch waits for anyway, so running them here cannot
/// create a dependency the program does not have (unlike running arbitrary work, which could
/// bury this frame under a task that waits for this frame's continuation). When there is
/// none for a while, it sleeps and gives its place to a compensation thread.
fn wait_stolen(ctx: &WorkerCtx, latch: &JoinLatch, thief: *const Shelf, thief_depth: usize) {
    let backoff = Backoff::new();
    let me: *const Shelf = ctx.shelf();
    loop {
        if latch.is_set() {
            return;
        }
        if !thief.is_null() && ctx.stack_has_room() {
            // SAFETY: shelves live in their runtime's slots, which are never freed.
            let thief = unsafe { &*thief };
            let mine = ctx.join_stack().len();
            if let Some(j) = thief.steal_descendant(latch, thief_depth, me, mine) {
                ctx.note_join_steal();
                // SAFETY: taken from a shelf, so ours to run once; its owner waits for it.
                unsafe { run_stolen(ctx, j) };
                backoff.reset();
                continue;
            }
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        latch.sleep(
            || ctx.enter_blocking(Why::JoinLatch),
            || crate::runtime::loops::park_thread(None),
        );
        return;
    }
}

/// Exposes up to `max` of this worker's oldest private jobs on its shelf, and tells idle
/// workers.
#[cold]
#[inline(never)]
pub(crate) fn expose(ctx: &WorkerCtx, max: usize) {
    let shelf = ctx.shelf();
    let owner = ctx.thread_ptr();
    let mut n = 0;
    let any = ctx.join_stack().expose_oldest(max, |frames, first| {
        n = frames.len();
        // SAFETY: our jobs, in their `join` frames, which do not return before reclaiming
        // them or seeing their latch set; the thread handle lives in our context, which
        // outlives every join on this thread.
        unsafe { shelf.expose(frames.iter().copied(), first, owner) }
    });
    if any {
        // Fenced: unlike a push to the deque, an exposed job stays put while its owner runs
        // `a` (no later fork exposes or notifies while the shelf is non-empty), so a missed
        // sleeper would stay asleep for all of `a`.
        ctx.shared.notify_work(true);
        if let Some(r) = ctx.shared.trace {
            r.record(Kind::JoinExpose { n: n as u64 });
        }
    }
}

/// Runs a job taken from another worker's shelf by an idle worker.
///
/// # Safety
///
/// `job` was taken from a shelf by this thread.
///
/// While it runs, nothing on this thread suspends or resumes a loop: a join owner waiting for
/// the job takes from this thread's shelf only jobs that descend from it (`wait_stolen`), which
/// holds only while this thread runs nothing else until the job is done.
pub(crate) unsafe fn run_stolen(ctx: &WorkerCtx, job: shelf::JobRef) {
    let _running = ctx.enter_stolen_job();
    match ctx.shared.trace {
        // SAFETY: the caller's contract; the job's owner waits for its latch.
        None => unsafe { JobHeader::execute(job.0) },
        // SAFETY: as above.
        Some(r) => r.join_job(|| unsafe { JobHeader::execute(job.0) }),
    }
}

/// Runs `f` on a worker of `shared` and returns its result: in place if this thread is one,
/// else by queueing it there and blocking until it is done.
pub(crate) fn install_on<F, R>(shared: &'static Shared, f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if worker::current_for(shared).is_some() {
        return f();
    }
    install_cold(shared, f)
}

#[cold]
#[inline(never)]
fn install_cold<F, R>(shared: &'static Shared, f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    /// The closure and its outcome, on the caller's stack.
    struct Remote<F, R> {
        f: Option<F>,
        out: Option<ThreadResult<R>>,
    }
    /// Runs the closure behind `p`, a `Remote<F, R>`.
    ///
    /// # Safety
    ///
    /// `p` points at a live `Remote<F, R>` that nothing else accesses meanwhile.
    unsafe fn run_remote<F: FnOnce() -> R, R>(p: *mut ()) {
        // SAFETY: the caller's contract.
        let remote = unsafe { &mut *p.cast::<Remote<F, R>>() };
        if let Some(f) = remote.f.take() {
            remote.out = Some(catch_unwind(AssertUnwindSafe(f)));
        }
    }
    struct RemotePtr(*mut (), unsafe fn(*mut ()));
    // SAFETY: the pointee's closure and result are `Send`; the caller waits (below) until
    // the task holding this is done with it.
    unsafe impl Send for RemotePtr {}

    let mut remote = Remote {
        f: Some(f),
        out: None,
    };
    let p = RemotePtr(ptr::from_mut(&mut remote).cast::<()>(), run_remote::<F, R>);
    let done = runtime::spawn_fn_on(shared, move || {
        let p = p;
        // SAFETY: `remote` lives until `done` completes, which is after this returns; the
        // caller does not touch it meanwhile.
        unsafe { (p.1)(p.0) }
    });
    // Wait for the task to complete, whatever happens: it holds a pointer to `remote`, and
    // the closure borrows from the caller. Not `done.wait()`, which returns at once inside a
    // cancelled synchronous task and would let this frame unwind while the task still runs.
    // Complete with `Ok`: it ran. With `Err(Cancelled)`: the runtime shut down before running
    // it (the task dropped its pointer without using it). Either way nothing refers to
    // `remote` now.
    if !done.is_finished() {
        crate::runtime::block_until::block_until_complete(done.cell_ptr());
    }
    debug_assert!(done.is_finished());
    match remote.out.take() {
        Some(Ok(v)) => v,
        Some(Err(payload)) => resume_unwind(payload),
        // Not reachable through the public API: `Runtime::install` borrows the runtime (it
        // cannot be dropped meanwhile), `block_on` borrows the runtime it enters, and the
        // global runtime never shuts down.
        None => panic!("ito: the runtime shut down before running an installed closure"),
    }
}
