//! A join's second closure as a job another thread may run, and the latch its owner waits on.
//!
//! A [`StackJob`] lives in the frame of the `join` call that made it, on the owner's stack. It
//! starts *private*: only the owner knows it, and if nobody ever asks for it the owner runs
//! the closure inline and no other field is touched (the fast path). Once *exposed* on the
//! owner's shelf (`shelf.rs`), a thief may take it; the owner then may not leave the `join`
//! frame until the thief has set the [`JoinLatch`], since the thief holds a pointer to the job.
//!
//! # Fields and who touches them
//!
//! | field | written | read |
//! |---|---|---|
//! | `header.run` | owner, at creation | whoever runs the exposed job |
//! | `header.latch` | owner (`PENDING → SLEEPING`), runner (`→ DONE`) | both |
//! | `header.exposed` | owner, at exposure, under its shelf lock | anyone who took the job |
//! | `header.stolen` | the thief, under the owner's shelf lock | the owner, under that lock |
//! | `f` | created by the owner; taken by exactly one runner | - |
//! | `result` | the thief, before it sets the latch | the owner, after it sees `DONE` |
//!
//! # JoinLatch states
//!
//! `PENDING` (0) → `DONE` (2) when the runner finishes before the owner sleeps, or
//! `PENDING` → `SLEEPING` (1) → `DONE`, when the owner gave up spinning: then the runner must
//! unpark it. The runner's last access to the job is the store of `DONE`; in the `SLEEPING`
//! case it clones the owner's thread handle first (the owner cannot return before `DONE`).

use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::thread::Result as ThreadResult;

use super::shelf::Shelf;
use crate::loom::thread::Thread;
use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

const PENDING: usize = 0;
const SLEEPING: usize = 1;
const DONE: usize = 2;

/// Set once by whoever ran an exposed job; waited on by the job's owner.
pub(crate) struct JoinLatch(AtomicUsize);

impl JoinLatch {
    #[inline]
    pub(crate) fn new() -> JoinLatch {
        JoinLatch(AtomicUsize::new(PENDING))
    }

    /// The job has run and its result is readable.
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire) == DONE
    }

    /// Owner: parks with `park` until the latch is set (a worker's `park` runs the loops it
    /// must resume meanwhile, `runtime/loops.rs`). If it really has to sleep (the latch is not set
    /// when it commits to sleeping), `before` runs first and its result (a guard) is held
    /// while it sleeps.
    pub(crate) fn sleep<G>(&self, before: impl FnOnce() -> G, park: impl Fn()) {
        // Committing to sleep (`PENDING -> SLEEPING`) obliges the runner to unpark us.
        if self
            .0
            .compare_exchange(PENDING, SLEEPING, Ordering::Acquire, Ordering::Acquire)
            .is_ok()
        {
            let _guard = before();
            while !self.is_set() {
                park();
            }
        }
    }

    /// Runner: sets the latch. `owner` is read only if the owner is asleep, before the final
    /// store (after which the job, `owner` included, may be gone).
    ///
    /// # Safety
    ///
    /// `owner` must be valid to read until this returns, if the owner sleeps.
    pub(crate) unsafe fn set(&self, owner: *const Thread) {
        match self
            .0
            .compare_exchange(PENDING, DONE, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => {}
            Err(_) => {
                // SLEEPING: the owner is parked (or about to be) and cannot return before
                // the store below, so its handle is still there.
                // SAFETY: the caller's contract.
                let t = unsafe { (*owner).clone() };
                self.0.store(DONE, Ordering::Release);
                t.unpark();
            }
        }
    }
}

/// Written by the owner when it exposes the job (under its shelf lock); fixed after that.
#[derive(Clone, Copy)]
pub(crate) struct Exposed {
    /// The job's index in its owner's stack of joins.
    pub(crate) depth: usize,
    /// The owner's thread, to unpark it.
    pub(crate) owner: *const Thread,
}

/// Written by the thread that takes the job, under the owner's shelf lock.
#[derive(Clone, Copy)]
pub(crate) struct Stolen {
    /// The thief's shelf (null: taken at shutdown by a thread that is not a worker).
    pub(crate) thief: *const Shelf,
    /// The thief's stack depth when it took the job: while the job runs, the thief's frames
    /// at or above this depth are the job's descendants.
    pub(crate) thief_depth: usize,
}

/// The type-erased part of a [`StackJob`], at its start.
#[repr(C)]
pub(crate) struct JobHeader {
    /// Runs the job and sets the latch (`run_job::<F, R>`).
    run: unsafe fn(NonNull<JobHeader>),
    pub(crate) latch: JoinLatch,
    exposed: UnsafeCell<MaybeUninit<Exposed>>,
    stolen: UnsafeCell<MaybeUninit<Stolen>>,
}

impl JobHeader {
    /// # Safety
    ///
    /// The job was exposed, and the caller synchronised with that (it holds, or took the job
    /// under, the owner's shelf lock; or it is the owner).
    pub(crate) unsafe fn exposed(&self) -> Exposed {
        // SAFETY: the caller's contract: initialised, and never written again.
        self.exposed.with(|g| unsafe { (*g).assume_init() })
    }

    /// # Safety
    ///
    /// The caller is the owner, holds its shelf lock, and the job is not on the shelf yet.
    pub(crate) unsafe fn set_exposed(&self, v: Exposed) {
        // SAFETY: the caller's contract: nobody else can see the job.
        self.exposed.with_mut(|g| unsafe { (*g).write(v) });
    }

    /// # Safety
    ///
    /// The job was taken from the shelf, and the caller holds the owner's shelf lock.
    pub(crate) unsafe fn stolen(&self) -> Stolen {
        // SAFETY: the caller's contract: written by the thief under the lock we hold.
        self.stolen.with(|g| unsafe { (*g).assume_init() })
    }

    /// # Safety
    ///
    /// The caller is taking the job off the owner's shelf, under its lock.
    pub(crate) unsafe fn set_stolen(&self, v: Stolen) {
        // SAFETY: the caller's contract: the owner reads it only under the lock we hold.
        self.stolen.with_mut(|g| unsafe { (*g).write(v) });
    }

    /// Runs an exposed job this thread has taken, then sets its latch.
    ///
    /// # Safety
    ///
    /// The caller took the job from a shelf (so it runs it exactly once), and the job's
    /// owner is waiting for the latch (so the job is alive until it is set).
    pub(crate) unsafe fn execute(job: NonNull<JobHeader>) {
        // SAFETY: the caller's contract; `run` belongs to the job's concrete type.
        unsafe { (job.as_ref().run)(job) }
    }
}

/// A join's second closure and the slot for its result, on the owner's stack.
#[repr(C)]
pub(crate) struct StackJob<F, R> {
    header: JobHeader,
    f: UnsafeCell<ManuallyDrop<F>>,
    result: UnsafeCell<MaybeUninit<ThreadResult<R>>>,
}

impl<F: FnOnce() -> R, R> StackJob<F, R> {
    #[inline]
    pub(crate) fn new(f: F) -> Self {
        StackJob {
            header: JobHeader {
                run: run_job::<F, R>,
                latch: JoinLatch::new(),
                exposed: UnsafeCell::new(MaybeUninit::uninit()),
                stolen: UnsafeCell::new(MaybeUninit::uninit()),
            },
            f: UnsafeCell::new(ManuallyDrop::new(f)),
            result: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    #[inline]
    pub(crate) fn header(&self) -> NonNull<JobHeader> {
        NonNull::from(&self.header)
    }

    #[inline]
    pub(crate) fn latch(&self) -> &JoinLatch {
        &self.header.latch
    }

    /// Takes the closure to run it inline.
    ///
    /// # Safety
    ///
    /// The job was never taken by a thief (never exposed, or reclaimed from the shelf), and
    /// this is called at most once.
    #[inline]
    pub(crate) unsafe fn take_fn(&self) -> F {
        // SAFETY: the caller's contract: nobody else has taken or will take it.
        self.f.with_mut(|f| unsafe { ManuallyDrop::take(&mut *f) })
    }

    /// The thief's result.
    ///
    /// # Safety
    ///
    /// The latch is set (the result is written), and this is called at most once.
    pub(crate) unsafe fn take_result(&self) -> ThreadResult<R> {
        debug_assert!(self.header.latch.is_set());
        // SAFETY: the caller's contract: written before the latch was set (which we
        // acquired), read once.
        self.result.with(|r| unsafe { ptr::read(r).assume_init() })
    }
}

/// `JobHeader::run` for a `StackJob<F, R>`.
///
/// # Safety
///
/// `JobHeader::execute`'s contract, and `job` is the header of a `StackJob<F, R>`.
unsafe fn run_job<F: FnOnce() -> R, R>(job: NonNull<JobHeader>) {
    let job = job.cast::<StackJob<F, R>>();
    // SAFETY: the caller's contract: the job is alive until we set its latch.
    let job = unsafe { job.as_ref() };
    // SAFETY: we took the job from the shelf, so we are its only runner.
    let f = job.f.with_mut(|f| unsafe { ManuallyDrop::take(&mut *f) });
    let r = catch_unwind(AssertUnwindSafe(f));
    // SAFETY: nobody reads the result before the latch is set.
    job.result.with_mut(|slot| unsafe { (*slot).write(r) });
    // SAFETY: the job was exposed before we took it, under the same lock.
    let owner = unsafe { job.header.exposed() }.owner;
    // SAFETY: `owner` is valid while the owner waits, which it does until this store.
    unsafe { job.header.latch.set(owner) };
}
