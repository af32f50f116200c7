//! Running a process: its body inside an ordinary ito task, wrapped in [`ProcTask`], which
//! handles what the task layer knows nothing about.
//!
//! - **Registration.** The first time the body returns `Pending`, the wrapper stores the
//!   task's waker in the mailbox's slot: from then on, a push that finds the receiver waiting,
//!   and a kill, wake the task through it. (Before that, the process is running or queued,
//!   and it looks at its mailbox and `KILLED` when it runs; a wake-up claimed before the slot
//!   was filled is noticed by `MailboxCore::register`.)
//! - **Kill.** Every poll starts by looking at `KILLED` (one load of the mailbox word, which
//!   the receive is about to load anyway). A killed process does not poll its body again: it
//!   drops it (destructors run) and ends with the kill's reason. A kill always wakes the
//!   task, so a process blocked on anything (its mailbox, a timer, another future) notices.
//! - **Panics.** The body is polled under `catch_unwind`; a panic ends the process with
//!   [`Exit::Panic`] and the message.
//! - **Exit.** Whatever ends the process (return, panic, kill, or the task being dropped
//!   unfinished when its runtime shuts down: [`Exit::Shutdown`]) goes through
//!   [`ProcTask::finish`], called from `poll` or from the wrapper's `Drop`: the body is
//!   dropped, then the mailbox closes for good and links, monitors and the registry are told
//!   (`Block::exited`).
//! - **Current process.** While the body is polled, a thread-local names the process and the
//!   poll's waker, so a receive can tell whether a wake-up through the slot reaches it.

use std::cell::Cell;
use std::future::Future as StdFuture;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr;
use std::task::{Context, Poll, Waker};

use super::block::{Block, BlockRef};
use super::pid::Pid;
use super::reason::{Exit, IntoExit};
use super::receive::Mailbox;
use crate::Failure;
use crate::runtime::{self, Shared};
use crate::trace::Kind;

thread_local! {
    /// The block of the process whose body this thread is polling, and the waker of that
    /// poll (nulls: none). The waker is borrowed for the duration of the poll only.
    static CURRENT: Cell<(*const (), *const Waker)> =
        const { Cell::new((ptr::null(), ptr::null())) };
}

/// The process body a thread is polling, and that poll's waker (see `CURRENT`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PollingNow((*const (), *const Waker));

impl Default for PollingNow {
    fn default() -> Self {
        PollingNow((ptr::null(), ptr::null()))
    }
}

/// Replaces what this thread is polling (a worker loop suspending or resuming: the poll
/// belongs to the loop's stack). Returns the previous value.
pub(crate) fn swap_polling(now: PollingNow) -> PollingNow {
    PollingNow(CURRENT.with(|c| c.replace(now.0)))
}

/// Whether this thread is polling the body of the process of `block`, and `waker` wakes the
/// same task as the process task's waker: then a wake-up through the mailbox's slot reaches
/// whoever waits with `waker`.
#[inline]
pub(crate) fn is_own_waker<M>(block: &Block<M>, waker: &Waker) -> bool {
    let me = block as *const Block<M> as *const ();
    CURRENT
        .try_with(|c| {
            let (b, w) = c.get();
            // SAFETY: `w` is the waker of the poll in progress on this thread (set and
            // cleared around it by `ProcTask::poll`), so it is live.
            b == me && !w.is_null() && unsafe { &*w }.will_wake(waker)
        })
        .unwrap_or(false)
}

/// Spawns a process on `shared`.
pub(crate) fn spawn_on<M, F, Fut>(shared: &'static Shared, f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Mailbox<M>) -> Fut,
    Fut: StdFuture + Send + 'static,
    Fut::Output: IntoExit,
{
    let block = BlockRef::new();
    let pid = Pid {
        block: block.clone(),
    };
    let body = f(Mailbox::new(block.clone()));
    let task = ProcTask {
        block: Some(block),
        body: ManuallyDrop::new(body),
    };
    if let Some(r) = shared.trace {
        r.record(Kind::ProcessSpawn {
            pid: &*pid.block as *const Block<M> as usize as u64,
        });
    }
    // Exits are reported through the block: the task needs no future and keeps no result.
    runtime::spawn_detached_future_on(shared, task);
    pid
}

/// A process's body and its block, as the future of an ito task.
pub(crate) struct ProcTask<M: Send + 'static, F> {
    /// `None` once the process has ended (the body is dropped then).
    block: Option<BlockRef<M>>,
    /// Present exactly while `block` is `Some`; pinned (never moved, dropped in place).
    body: ManuallyDrop<F>,
}

impl<M: Send + 'static, F> ProcTask<M, F> {
    /// Ends the process: drops the body in place, then reports `reason`.
    #[cold]
    fn finish(&mut self, reason: Exit) {
        let Some(block) = self.block.take() else {
            return;
        };
        // A panicking destructor of the body does not change the reason, and must not stop
        // the notifications.
        // SAFETY: the body is present (block was Some) and never used again (block is None);
        // dropping a pinned value in place is allowed.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
            ManuallyDrop::drop(&mut self.body)
        }));
        if let Err(payload) = dropped {
            crate::failure::drop_payload(payload);
        }
        // Here, once per process, a thread-local look-up finds the runtime's recorder.
        if let Some(r) = crate::trace::current() {
            r.record(Kind::ProcessExit {
                pid: &*block as *const Block<M> as usize as u64,
                normal: matches!(reason, Exit::Normal),
            });
        }
        block.exited(reason);
    }
}

impl<M: Send + 'static, F> ProcTask<M, F> {
    /// The first time the body waits: store the task's waker in the mailbox's slot. (A
    /// process that never waits, like most of a chain run in order, never pays for it.)
    /// Wake-ups claimed before it was there woke nothing; they left their trace in the word
    /// (messages queued, `KILLED`), so if the word has any, poll again.
    #[cold]
    fn register(block: &Block<M>, cx: &Context<'_>) {
        if block.mailbox.register(cx.waker()) {
            cx.waker().wake_by_ref();
        }
    }
}

impl<M: Send + 'static, F> StdFuture for ProcTask<M, F>
where
    F: StdFuture,
    F::Output: IntoExit,
{
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `body` is structurally pinned: it is never moved out (only dropped in
        // place, in `finish`); `block` is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(block) = this.block.as_deref() else {
            return Poll::Ready(());
        };
        let core = &block.mailbox;
        if core.is_killed() {
            let reason = block.kill_reason();
            this.finish(reason);
            return Poll::Ready(());
        }
        let me = block as *const Block<M> as *const ();
        let outer = CURRENT.with(|c| c.replace((me, cx.waker() as *const Waker)));
        // SAFETY: see above: the body stays where it is.
        let body = unsafe { Pin::new_unchecked(&mut *this.body) };
        let polled = catch_unwind(AssertUnwindSafe(|| body.poll(cx)));
        CURRENT.with(|c| c.set(outer));
        match polled {
            Ok(Poll::Pending) => {
                if !core.is_registered() {
                    Self::register(block, cx);
                }
                Poll::Pending
            }
            Ok(Poll::Ready(out)) => {
                this.finish(out.into_exit());
                Poll::Ready(())
            }
            Err(payload) => {
                let reason = match Failure::from_panic(payload) {
                    Failure::Panic(msg) => Exit::Panic(msg),
                    other => Exit::from(other),
                };
                this.finish(reason);
                Poll::Ready(())
            }
        }
    }
}

impl<M: Send + 'static, F> Drop for ProcTask<M, F> {
    fn drop(&mut self) {
        // Dropped unfinished: its runtime shut down (or the task was discarded unrun).
        self.finish(Exit::Shutdown);
    }
}
