//! The raw task: one allocation (from the task slab, `slab.rs`) holding the task header,
//! where its outcome goes (the completion cell its [`Task`] reads), and the body (a closure or
//! an async future).
//!
//! ```text
//! TaskCell<B, O> (repr(C), one allocation)
//! ┌──────────────────────────────┐
//! │ Header   state, vtable, sched │ ← TaskRef (queue entries) and wakers point here
//! ├──────────────────────────────┤
//! │ O = CompletionCell<T>: cell header,   │ ← Task<T> / Future<T> handles point here; the refcount lives in
//! │     value; or Refs           │   the cell header (or is all there is: `Refs`)
//! ├──────────────────────────────┤
//! │ body: B (dropped when done)  │
//! └──────────────────────────────┘
//! ```
//!
//! A *detached* task ([`new_detached`]: a process, which nobody awaits) has [`Refs`] for `O`:
//! the 8-byte reference count alone, no cell header, value slot or completion. So a task's
//! references are counted through the task's own vtable ([`Header::refs`]: the word's offset;
//! the last one calls the vtable's `destroy`), never through a `&CellHeader` (which a detached
//! task does not have); `Future` handles, which exist only for tasks with a cell, count
//! through the cell header as every cell does. Both reach the same word.
//!
//! Who touches what:
//! - `Header::state`: any thread, by the transitions in [`state`].
//! - `body`: only the thread that won `SCHEDULED → RUNNING`, until it moves the state on; and
//!   `destroy` (the last reference) if the task never completed.
//! - the cell: its own protocol (`future::cell`); the task is its only completer.
//! - references (the word at the vtable's `refs_offset`: in the cell header, or `Refs`): one
//!   per `Future` handle, per queue entry (`TaskRef`) and per waker. The allocation is freed
//!   when the last one goes, whoever holds it.
//!
//! A pending task with an empty body costs `task_size::<(), ()>()`: 16 bytes of header,
//! 8 for the scheduler pointer, 24 for the cell header and 24 for the `Result<(), Failure>`
//! slot, plus the body (checked by a test to stay within 128 bytes); a detached one 40 bytes
//! less (8 for the count instead of 48 for the cell).

pub(crate) mod cancel;
pub(crate) use cancel::{run_pending_cancels, swap_cancel_depth};
pub(crate) mod slab;
pub(crate) mod state;
mod waker;

use std::future::Future as StdFuture;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crate::Failure;
use crate::future::Task;
use crate::future::cell::{self, CellHeader, CellVTable, CompletionCell, HANDLE};
use crate::loom::{AtomicUsize, UnsafeCell};
use state::{AfterPoll, CancelRequest, Claim, State};

/// What a task needs from the scheduler that runs it; the runtime implements it. This is the
/// only way `task/` reaches the scheduler.
pub(crate) trait Schedule: Sync + 'static {
    /// Queues a woken task to run again.
    fn schedule(&'static self, task: TaskRef);
}

/// The scheduler tasks are bound to: the one implementation of [`Schedule`], named here so
/// that calls through the trait are direct, not through a vtable.
pub(crate) type Scheduler = crate::runtime::Shared;

/// The task that completes `cell`, if `cell` is a task's: how code outside `task/` reaches a
/// task from its future (through `CellVTable::task`), and the only way it may.
///
/// # Safety
/// The caller holds a reference to the cell, which keeps the task's allocation alive.
#[inline]
pub(crate) unsafe fn task_of_cell(cell: NonNull<CellHeader>) -> Option<NonNull<Header>> {
    // SAFETY: live, per the caller; the vtable's `task` belongs to this cell's kind.
    unsafe { cell.as_ref().vtable.task.map(|task_of| task_of(cell)) }
}

/// Requests the cancellation of the task that completes `cell` ([`Header::cancel`]).
/// Returns whether this call requested it: `false` if `cell` is not a task's, or the task
/// is already complete or cancelled.
///
/// # Safety
/// The caller holds a reference to the cell.
pub(crate) unsafe fn cancel_task_of(cell: NonNull<CellHeader>) -> bool {
    // SAFETY: forwarded; the cell's reference keeps the task alive during the call.
    unsafe { task_of_cell(cell).is_some_and(|t| Header::cancel(t)) }
}

/// The front of every task.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    vtable: &'static TaskVTable,
    /// The runtime the task belongs to. The task owns the runtime's shared block from its
    /// allocation until `destroy` (`runtime/owners.rs`), so this pointer does not dangle
    /// while the task exists.
    pub(crate) sched: &'static Scheduler,
}

struct TaskVTable {
    /// Runs the body once. The caller has moved the state to `RUNNING` and holds a reference.
    poll: unsafe fn(NonNull<Header>),
    /// Drops the body and fails the cell with `Cancelled`. Same precondition as `poll`.
    cancel: unsafe fn(NonNull<Header>),
    /// Byte offset from the header to the reference word (in the cell header, or `Refs`).
    refs_offset: usize,
    /// Drops what is left of the task and frees it: called once, by whoever gave up the last
    /// reference (through the task or through the cell: both end here).
    destroy: unsafe fn(NonNull<Header>),
}

/// A task: its header, where its outcome goes (`O`, see [`Outcome`]), its body.
#[repr(C)]
struct TaskCell<B, O> {
    header: Header,
    inner: O,
    body: UnsafeCell<ManuallyDrop<B>>,
}

/// Where a task's outcome goes, and where its reference count lives.
///
/// - `CompletionCell<T>`: the completion cell of the task's [`Task`] (a `Result<T, Failure>` slot
///   and the waiters); the count is the cell header's.
/// - [`Refs`]: nowhere. For a task nobody can await (a process reports its end through its
///   process block): the count alone, and the task saves the cell (40 bytes).
trait Outcome<T>: 'static {
    /// Byte offset of the reference word (an `AtomicUsize`) inside the outcome.
    const REFS_OFFSET: usize;
    /// Records the task's result.
    ///
    /// # Safety
    /// Called once, by the runner; `this` has the task allocation's provenance.
    unsafe fn complete(this: NonNull<Self>, result: Result<T, Failure>);
    /// Drops what the outcome holds.
    ///
    /// # Safety
    /// The last reference is gone (exclusive access); called once.
    unsafe fn drop_contents(&mut self);
}

impl<T: 'static> Outcome<T> for CompletionCell<T> {
    const REFS_OFFSET: usize = std::mem::offset_of!(CompletionCell<T>, header) + cell::REFS_OFFSET;
    #[inline]
    unsafe fn complete(this: NonNull<Self>, result: Result<T, Failure>) {
        // SAFETY: forwarded: the task is the cell's only completer, once.
        unsafe { CompletionCell::complete_claimed(this, result) }
    }
    unsafe fn drop_contents(&mut self) {
        // SAFETY: forwarded.
        unsafe { CompletionCell::drop_contents(self) }
    }
}

/// The outcome of a detached task: its reference count, counted like a cell's other
/// references (`cell::inc_ref`, `cell::dec_ref`). No `Future` handle ever counts here.
#[repr(transparent)]
pub(crate) struct Refs(AtomicUsize);

impl Outcome<()> for Refs {
    const REFS_OFFSET: usize = 0;
    #[inline]
    unsafe fn complete(_: NonNull<Self>, result: Result<(), Failure>) {
        // Nobody can ask for it: a failure (a panic's message) is dropped here.
        drop(result);
    }
    unsafe fn drop_contents(&mut self) {}
}

impl Header {
    /// The task's reference word. Only the word is borrowed, never the outcome around it (a
    /// detached task has no cell header).
    ///
    /// # Safety
    /// The caller holds a reference to the task, and does not use the returned borrow after
    /// giving it up.
    #[inline]
    unsafe fn refs<'a>(this: NonNull<Header>) -> &'a AtomicUsize {
        // SAFETY: the header is live (the caller holds a reference); `refs_offset` was
        // computed with `offset_of!` for this allocation's type, and leads to an initialised
        // `AtomicUsize` in the same allocation (`this` has its provenance: it came from
        // `alloc_cell`). Atomics are shared through `&`.
        unsafe {
            let off = this.as_ref().vtable.refs_offset;
            &*this.as_ptr().cast::<u8>().add(off).cast::<AtomicUsize>()
        }
    }

    #[inline]
    fn inc_ref(this: NonNull<Header>) {
        // SAFETY: the caller holds a reference (and keeps it past this use).
        cell::inc_ref(unsafe { Header::refs(this) });
    }

    /// # Safety
    /// The caller owns one reference and gives it up.
    #[inline]
    unsafe fn dec_ref(this: NonNull<Header>) {
        // SAFETY: the caller owns a reference until the decrement, the borrow's last use.
        if cell::dec_ref(unsafe { Header::refs(this) }) {
            // SAFETY: that was the last reference; `destroy` runs exactly once, here.
            unsafe { Header::destroy(this) };
        }
    }

    /// Destroys a task whose last reference is gone (out of line, as `CellHeader`'s).
    ///
    /// # Safety
    /// The last reference to `this` is gone; called once.
    #[cold]
    unsafe fn destroy(this: NonNull<Header>) {
        // SAFETY: the header is ours alone until `destroy` frees it.
        let sched = unsafe { this.as_ref() }.sched;
        // SAFETY: forwarded.
        unsafe { cell::contain_destroy(this.as_ref().vtable.destroy, this) };
        // The task owned its runtime's block until now (`runtime/owners.rs`); this may free it.
        sched.task_freed();
    }

    /// Runs the task inline if it is scheduled and nobody started it: how a waiter helps.
    /// Returns whether it ran.
    ///
    /// # Safety
    /// The caller holds a reference to the task (for example a `Future` on its cell).
    pub(crate) unsafe fn try_run_inline(this: NonNull<Header>) -> bool {
        // SAFETY: live, per the caller.
        let h = unsafe { this.as_ref() };
        match h.state.transition_to_running() {
            // SAFETY: we won `SCHEDULED → RUNNING` and hold a reference.
            Claim::Run => unsafe { (h.vtable.poll)(this) },
            // SAFETY: as above.
            Claim::Cancel => unsafe { (h.vtable.cancel)(this) },
            Claim::Lost => return false,
        }
        true
    }

    /// Requests the task's cancellation. An idle task is enqueued so that a worker drops its
    /// body; a queued one is dropped by whoever dequeues it; a running async task drops its
    /// body when this poll returns `Pending`; a running synchronous one is woken if it is
    /// blocked in one of ito's blocking calls, which then return `Failure::Cancelled`.
    /// Returns whether this call requested it (`false`: already complete or cancelled).
    ///
    /// # Safety
    /// The caller holds a reference to the task.
    pub(crate) unsafe fn cancel(this: NonNull<Header>) -> bool {
        // SAFETY: live, per the caller.
        let h = unsafe { this.as_ref() };
        match h.state.request_cancel() {
            CancelRequest::Schedule => {
                Header::inc_ref(this);
                TaskRef(this).reschedule();
            }
            CancelRequest::Running => cancel::wake_blocked(this),
            CancelRequest::Queued => {}
            CancelRequest::Nothing => return false,
        }
        true
    }
}

/// An owned reference to a task that is (or was) scheduled: a run-queue entry.
pub(crate) struct TaskRef(NonNull<Header>);

// SAFETY: a task is shared by design; its body is only touched by the thread that won the
// state transition, and bodies are `Send`.
unsafe impl Send for TaskRef {}

impl TaskRef {
    /// Runs the task if this entry wins it; drops the entry either way.
    #[inline]
    pub(crate) fn run(self) {
        // SAFETY: the entry holds a reference.
        unsafe { Header::try_run_inline(self.0) };
    }

    /// Cancels the task if this entry wins it (runtime shutdown); drops the entry.
    ///
    /// Cancelling completes the task's future, which can wake another task that is cancelled
    /// in turn (a chain of tasks each awaiting the next). Nested cancellations run inline up to
    /// `cancel::MAX_CANCEL_DEPTH`; deeper ones are queued on this thread and run when the outermost
    /// call returns (or by `run_pending_cancels`), so a long chain cannot overflow the stack.
    pub(crate) fn cancel(self) {
        cancel::cancel_bounded(self);
    }

    pub(super) fn cancel_now(self) {
        // SAFETY: the entry holds a reference.
        let h = unsafe { self.0.as_ref() };
        if h.state.transition_to_running() != Claim::Lost {
            // SAFETY: we won the task and hold a reference.
            unsafe { (h.vtable.cancel)(self.0) };
        }
    }

    /// Whether this entry can no longer run the task (someone else ran or is running it).
    #[inline]
    pub(crate) fn is_stale(&self) -> bool {
        // SAFETY: the entry holds a reference.
        unsafe { self.0.as_ref() }.state.load() & state::SCHEDULED == 0
    }

    /// The task this entry refers to (for identity comparisons only).
    #[inline]
    pub(crate) fn header_ptr(&self) -> *const Header {
        self.0.as_ptr()
    }

    /// A second reference to the task: keeps the task, and so its runtime's shared block
    /// (`runtime/owners.rs`), alive while this entry is given away.
    #[inline]
    pub(crate) fn clone_ref(&self) -> TaskRef {
        Header::inc_ref(self.0);
        TaskRef(self.0)
    }

    /// The runtime the task belongs to.
    #[inline]
    pub(crate) fn sched(&self) -> &'static Scheduler {
        // SAFETY: the entry holds a reference.
        unsafe { self.0.as_ref() }.sched
    }

    /// Queues the task on its runtime to run again (it was woken).
    #[inline]
    pub(crate) fn reschedule(self) {
        self.sched().schedule(self);
    }
}

impl Drop for TaskRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the entry owns one reference.
        unsafe { Header::dec_ref(self.0) };
    }
}

/// The cell vtable of a task that has a cell (`CompletionCell<T>`).
struct Kind<B, T>(PhantomData<(B, T)>);

fn cell_vtable_task<B, T>(cell: NonNull<CellHeader>) -> NonNull<Header> {
    let off = std::mem::offset_of!(TaskCell<B, CompletionCell<T>>, inner);
    // SAFETY: the cell lives at `off` inside a `TaskCell<B, CompletionCell<T>>`, whose header is at 0.
    unsafe { NonNull::new_unchecked(cell.as_ptr().cast::<u8>().sub(off).cast::<Header>()) }
}

/// The cell vtable's `destroy` (the last reference was a `Future` handle, a callback, ...).
unsafe fn destroy_cell<B, T: 'static>(cell: NonNull<CellHeader>) {
    let h = cell_vtable_task::<B, T>(cell);
    // SAFETY: the task is ours alone until `destroy` frees it.
    let sched = unsafe { h.as_ref() }.sched;
    // SAFETY: forwarded: the last reference to the task is gone; called once.
    unsafe { destroy::<B, T, CompletionCell<T>>(h) };
    // As in `Header::destroy`: the task's ownership of the block ends last.
    sched.task_freed();
}

/// The task vtable's `destroy`.
///
/// # Safety
/// The last reference to the task is gone; called once. `h` has the allocation's provenance.
unsafe fn destroy<B, T, O: Outcome<T>>(h: NonNull<Header>) {
    let task = h.cast::<TaskCell<B, O>>();
    // SAFETY: the last reference: exclusive access to the allocation made by `alloc`.
    let b = unsafe { &mut *task.as_ptr() };
    if !b.header.state.is_complete() {
        // The body was never finished: drop it here, containing a panicking destructor so the
        // waiters below are still discarded (their derived futures break instead of hanging).
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: exclusive access; the body is still present (not COMPLETE).
            b.body.with_mut(|p| unsafe { ManuallyDrop::drop(&mut *p) })
        }));
        if let Err(payload) = dropped {
            crate::failure::drop_payload(payload);
        }
    }
    // SAFETY: exclusive access.
    unsafe { b.inner.drop_contents() };
    // SAFETY: exclusive access; what is left (the header, the emptied cell, the
    // `ManuallyDrop` body) is dropped once, then the memory goes back to the slab it came
    // from (`alloc`).
    unsafe {
        std::ptr::drop_in_place(task.as_ptr());
        slab::dealloc(task);
    }
}

unsafe fn task_of<B, T>(cell: NonNull<CellHeader>) -> NonNull<Header> {
    cell_vtable_task::<B, T>(cell)
}

impl<B, T: 'static> Kind<B, T> {
    const CELL_VTABLE: CellVTable = CellVTable {
        destroy: destroy_cell::<B, T>,
        task: Some(task_of::<B, T>),
    };
}

/// Offset of the reference word from the header of a `TaskCell<B, O>`.
const fn refs_offset<B, T, O: Outcome<T>>() -> usize {
    std::mem::offset_of!(TaskCell<B, O>, inner) + O::REFS_OFFSET
}

/// Allocates a task with `body` and outcome `inner` (which holds the initial references).
fn alloc_cell<B, T, O: Outcome<T>>(
    body: B,
    sched: &'static Scheduler,
    vtable: &'static TaskVTable,
    inner: O,
) -> NonNull<TaskCell<B, O>> {
    let ptr = slab::alloc::<TaskCell<B, O>>();
    // SAFETY: fresh memory for a `TaskCell<B, O>`, freed by `destroy` (the last reference).
    unsafe {
        ptr.as_ptr().write(TaskCell {
            header: Header {
                state: State::new_scheduled(),
                vtable,
                sched,
            },
            inner,
            body: UnsafeCell::new(ManuallyDrop::new(body)),
        })
    };
    ptr
}

/// Allocates a task with `body`, one reference for the returned entry and one for the handle.
#[inline]
fn alloc<B, T: 'static>(
    body: B,
    sched: &'static Scheduler,
    vtable: &'static TaskVTable,
) -> (TaskRef, Task<T>) {
    let (task, cell) = alloc_raw::<B, T>(body, sched, vtable);
    // SAFETY: the cell carries the handle reference and has no other handle.
    (task, unsafe { Task::from_raw(cell) })
}

/// [`alloc`], returning the cell's pointer (which carries the handle reference): two words,
/// returned in registers, however large a `Task` is.
fn alloc_raw<B, T: 'static>(
    body: B,
    sched: &'static Scheduler,
    vtable: &'static TaskVTable,
) -> (TaskRef, NonNull<CompletionCell<T>>) {
    let inner = CompletionCell::new(HANDLE + 1, &Kind::<B, T>::CELL_VTABLE);
    let ptr = alloc_cell::<B, T, CompletionCell<T>>(body, sched, vtable, inner);
    // SAFETY: the cell is at its field inside the fresh allocation; it carries 2 references.
    let cell = unsafe { NonNull::new_unchecked(std::ptr::addr_of_mut!((*ptr.as_ptr()).inner)) };
    (TaskRef(ptr.cast()), cell)
}

/// Completes the task's outcome and marks the task complete. The body must already be dropped.
///
/// # Safety
/// Called once, by the runner, on a `TaskCell<B, O>`.
#[inline]
unsafe fn finish<B, T, O: Outcome<T>>(task: NonNull<TaskCell<B, O>>, result: Result<T, Failure>) {
    // SAFETY: the runner holds a reference; the task is its cell's only completer.
    let t = unsafe { task.as_ref() };
    t.header.state.transition_to_complete();
    // SAFETY: see above. The cell pointer is projected from `task` (not made from a
    // reference), so it carries the allocation's provenance, as `complete` requires.
    unsafe {
        let inner = NonNull::new_unchecked(std::ptr::addr_of_mut!((*task.as_ptr()).inner));
        O::complete(inner, result)
    };
}

// ----- synchronous closures (spawn_fn) -----

struct FnTask<F, T>(PhantomData<(F, T)>);

impl<F: FnOnce() -> T + Send + 'static, T: Send + 'static> FnTask<F, T> {
    const VTABLE: TaskVTable = TaskVTable {
        poll: Self::poll,
        cancel: Self::cancel,
        refs_offset: refs_offset::<F, T, CompletionCell<T>>(),
        destroy: destroy::<F, T, CompletionCell<T>>,
    };

    unsafe fn poll(h: NonNull<Header>) {
        let task = h.cast::<TaskCell<F, CompletionCell<T>>>();
        // SAFETY: we are the runner: exclusive access to the body, taken exactly once (the
        // state becomes COMPLETE below, so `destroy` will not drop it again).
        let f = unsafe { task.as_ref() }
            .body
            .with_mut(|p| unsafe { ManuallyDrop::take(&mut *p) });
        let running = cancel::Running::enter(h);
        let result = catch_unwind(AssertUnwindSafe(f)).map_err(Failure::from_panic);
        drop(running);
        // SAFETY: the runner, once.
        unsafe { finish(task, result) };
    }

    unsafe fn cancel(h: NonNull<Header>) {
        let task = h.cast::<TaskCell<F, CompletionCell<T>>>();
        // A panicking destructor of a capture must not skip `finish` (the state would stay
        // RUNNING and `destroy` would drop the body again).
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the runner: exclusive access; the body is dropped once, here.
            unsafe { task.as_ref() }
                .body
                .with_mut(|p| unsafe { ManuallyDrop::drop(&mut *p) })
        }));
        if let Err(payload) = dropped {
            crate::failure::drop_payload(payload);
        }
        // SAFETY: the runner, once.
        unsafe { finish(task, Err(Failure::Cancelled)) };
    }
}

/// A task running `f` on a worker. Returns the queue entry to schedule and the handle.
#[inline]
pub(crate) fn new_fn<F, T>(f: F, sched: &'static Scheduler) -> (TaskRef, Task<T>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    alloc(f, sched, &FnTask::<F, T>::VTABLE)
}

// ----- async futures (spawn) -----

/// An async task whose outcome goes to `O` (see [`Outcome`]).
struct FutTask<G, O>(PhantomData<(G, O)>);

impl<G: StdFuture + Send + 'static, O: Outcome<G::Output>> FutTask<G, O>
where
    G::Output: Send + 'static,
{
    const VTABLE: TaskVTable = TaskVTable {
        poll: Self::poll,
        cancel: Self::cancel,
        refs_offset: refs_offset::<G, G::Output, O>(),
        destroy: destroy::<G, G::Output, O>,
    };

    unsafe fn poll(h: NonNull<Header>) {
        let task = h.cast::<TaskCell<G, O>>();
        // SAFETY: the task holds a reference for as long as the borrowed waker is used.
        let waker = unsafe { waker::borrowed(h) };
        let mut cx = Context::from_waker(&waker);
        let polled = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the runner holds a reference, so the task is live.
            unsafe { task.as_ref() }.body.with_mut(|p| {
                // SAFETY: the runner has exclusive access to the body (it won the state
                // transition); the body lives in the task's heap allocation and is never moved
                // until it is dropped in place, so pinning it is sound.
                let fut = unsafe { std::pin::Pin::new_unchecked(&mut **p) };
                fut.poll(&mut cx)
            })
        }));
        let result = match polled {
            Ok(Poll::Pending) => {
                // SAFETY: the runner holds a reference.
                match unsafe { task.as_ref() }.header.state.transition_to_idle() {
                    AfterPoll::Idle => {}
                    AfterPoll::Reschedule => {
                        Header::inc_ref(h);
                        TaskRef(h).reschedule();
                    }
                    // SAFETY: still the runner (the state stays RUNNING).
                    AfterPoll::Cancel => unsafe { Self::cancel(h) },
                }
                return;
            }
            Ok(Poll::Ready(v)) => Ok(v),
            Err(panic) => Err(Failure::from_panic(panic)),
        };
        // SAFETY: the runner: drop the body once, before completing.
        Self::drop_body(task);
        // SAFETY: the runner, once.
        unsafe { finish(task, result) };
    }

    fn drop_body(task: NonNull<TaskCell<G, O>>) {
        // A panicking destructor must not take the worker down: the result stands.
        // SAFETY: called by the runner only, once, before `finish`.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
            task.as_ref().body.with_mut(|p| ManuallyDrop::drop(&mut *p))
        }));
        if let Err(payload) = dropped {
            crate::failure::drop_payload(payload);
        }
    }

    unsafe fn cancel(h: NonNull<Header>) {
        let task = h.cast::<TaskCell<G, O>>();
        Self::drop_body(task);
        // SAFETY: the runner, once.
        unsafe { finish(task, Err(Failure::Cancelled)) };
    }
}

/// A task polling `fut` on a worker. Returns the queue entry to schedule and the handle.
#[inline]
pub(crate) fn new_future<G>(fut: G, sched: &'static Scheduler) -> (TaskRef, Task<G::Output>)
where
    G: StdFuture + Send + 'static,
    G::Output: Send + 'static,
{
    alloc(fut, sched, &FutTask::<G, CompletionCell<G::Output>>::VTABLE)
}

/// A task polling `fut` on a worker that nobody can await (no [`Task`], no result kept: a
/// process, which reports its end through its process block). Returns the queue entry to
/// schedule, the task's only reference.
pub(crate) fn new_detached<G>(fut: G, sched: &'static Scheduler) -> TaskRef
where
    G: StdFuture<Output = ()> + Send + 'static,
{
    let refs = Refs(AtomicUsize::new(1));
    let ptr = alloc_cell::<G, (), Refs>(fut, sched, &FutTask::<G, Refs>::VTABLE, refs);
    TaskRef(ptr.cast())
}

/// The size of a task whose body is `B` and output `T`, for the size test.
#[doc(hidden)]
pub const fn task_size<B, T>() -> usize {
    std::mem::size_of::<TaskCell<B, CompletionCell<T>>>()
}

/// The size of a detached task ([`new_detached`]) whose body is `B`.
pub(crate) const fn detached_task_size<B>() -> usize {
    std::mem::size_of::<TaskCell<B, Refs>>()
}

// ----- async tasks that start idle (ito::sync::Pool) -----

/// A task polling `fut` that is allocated but not queued: it first runs when one of its
/// wakers is woken. `init` gets the body, pinned where it stays, and a waker of the task,
/// before anyone else can reach the task (`sync::Pool` queues the body's wait-list node, with
/// the waker, for a free slot). While `init` runs the task counts as running, so a wake from
/// another thread meanwhile (the slot freed the moment the node was queued) is remembered and
/// acted on when `init` returns, exactly as after a poll.
pub(crate) fn new_future_idle<G>(
    fut: G,
    sched: &'static Scheduler,
    init: impl FnOnce(std::pin::Pin<&mut G>, &std::task::Waker),
) -> Task<G::Output>
where
    G: StdFuture + Send + 'static,
    G::Output: Send + 'static,
{
    let (task, f) = alloc(fut, sched, &FutTask::<G, CompletionCell<G::Output>>::VTABLE);
    // Not spawned: counted here as an owner of the block (`runtime/owners.rs`).
    sched.task_created();
    let h = task.0;
    // SAFETY: live: `task` and `f` hold references.
    let header = unsafe { h.as_ref() };
    let won = header.state.transition_to_running();
    debug_assert_eq!(won, Claim::Run, "a fresh task is ours to run");
    // SAFETY: `task` holds a reference for as long as the borrowed waker is used (below).
    let w = unsafe { waker::borrowed(h) };
    let cell = h.cast::<TaskCell<G, CompletionCell<G::Output>>>();
    // SAFETY: live, as above.
    unsafe { cell.as_ref() }.body.with_mut(|p| {
        // SAFETY: we won `SCHEDULED → RUNNING`: exclusive access to the body, which lives in
        // the task's heap allocation and is never moved until it is dropped in place.
        init(unsafe { std::pin::Pin::new_unchecked(&mut **p) }, &w)
    });
    match header.state.transition_to_idle() {
        AfterPoll::Idle => {}
        AfterPoll::Reschedule => task.reschedule(),
        // Nobody holds a handle yet, but a cancellation is handled like after any poll.
        // SAFETY: still the runner (the state stays RUNNING).
        AfterPoll::Cancel => unsafe { FutTask::<G, CompletionCell<G::Output>>::cancel(h) },
    }
    f
}
