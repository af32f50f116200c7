//! A synchronous function run on its own stack, which can [`suspend`] from any depth and be
//! resumed later on the thread that started it.

use std::any::Any;
use std::borrow::Cow;
use std::cell::Cell;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::overflow::{self, Running};
use super::stack::{Stack, StackPool};

/// A panic's payload, as `std::panic::catch_unwind` returns it.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// How a [`Coro::resume`] came back.
#[derive(Debug)]
#[must_use = "a finished coroutine's result or panic is lost if ignored"]
pub(crate) enum Resumed<R> {
    /// The coroutine called [`suspend`]; resume it again to continue.
    Suspended,
    /// The function returned this value; the coroutine is finished.
    Returned(R),
    /// The function panicked; its stack has unwound and the coroutine is finished.
    Panicked(Payload),
}

type Inner<R> = Coroutine<(), (), Result<R, Payload>, Stack>;

thread_local! {
    /// The yielder of the coroutine running on this thread (null when none), set by `resume`
    /// for the duration of the switch.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(ptr::null()) };
    /// This thread's number for [`Coro`]'s home check, 0 until first asked.
    static THREAD_NUMBER: Cell<u64> = const { Cell::new(0) };
}

/// A number for the calling thread, unique among all threads the process ever ran (unlike the
/// address of a thread-local, which a later thread may reuse).
pub(crate) fn thread_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    THREAD_NUMBER.with(|n| {
        if n.get() == 0 {
            n.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        n.get()
    })
}

/// Whether the caller runs inside a coroutine (so that [`suspend`] may be called).
pub(crate) fn in_coroutine() -> bool {
    !YIELDER.with(Cell::get).is_null()
}

/// Suspends the coroutine running on this thread: control goes back to the caller of its
/// [`Coro::resume`], and this call returns when it is resumed again.
///
/// # Panics
///
/// Panics when called outside a coroutine. When the suspended coroutine is dropped instead of
/// resumed, this call unwinds (with a payload private to the switching crate) so that the
/// coroutine's destructors run; code that catches that unwind must resume it.
pub(crate) fn suspend() {
    let yielder = YIELDER.with(Cell::get);
    assert!(!yielder.is_null(), "suspend() called outside a coroutine");
    // SAFETY: a non-null `YIELDER` is the running coroutine's yielder, which lives on its
    // stack for as long as the coroutine runs; `resume` resets it before the coroutine can end.
    unsafe { (*yielder).suspend(()) };
}

/// A synchronous function on its own pooled stack.
///
/// A `Coro` is `!Send`: once started, its stack may hold thread-locals' addresses and `!Send`
/// values, so it must be resumed (and dropped) on the thread it started on. [`SendCoro`] is the
/// form that may travel between threads, checking the thread at each use.
pub(crate) struct Coro<R> {
    inner: Inner<R>,
    name: Cow<'static, str>,
    guard: (usize, usize),
    base: usize,
    yielder: *const Yielder<(), ()>,
    /// The thread it started on; 0 before the first resume.
    home: u64,
}

impl<R: 'static> Coro<R> {
    /// A coroutine that will run `f` on a stack from `pool`, named `name` in overflow reports.
    /// Nothing runs until the first [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// The error of mapping a new stack when the thread's cache is empty.
    pub(crate) fn new<F>(
        pool: &StackPool,
        name: impl Into<Cow<'static, str>>,
        f: F,
    ) -> io::Result<Self>
    where
        F: FnOnce() -> R + 'static,
    {
        Ok(Self::with_stack(pool.take()?, name, f))
    }

    /// A coroutine that will run `f` on `stack`.
    pub(crate) fn with_stack<F>(stack: Stack, name: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: FnOnce() -> R + 'static,
    {
        let guard = stack.guard();
        let base = guard.1 + stack.size();
        let inner = Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
            YIELDER.with(|y| y.set(yielder));
            // A panic is caught here, on the coroutine's stack, and handed to `resume` as a
            // value. The forced unwind of a dropped coroutine is caught too; its payload is then
            // discarded by the unwinding code, which takes a return as the end of the unwind.
            panic::catch_unwind(AssertUnwindSafe(f))
        });
        Coro {
            inner,
            name: name.into(),
            guard,
            base,
            yielder: ptr::null(),
            home: 0,
        }
    }
}

impl<R> Coro<R> {
    /// Runs the coroutine until it suspends, returns or panics.
    ///
    /// # Panics
    ///
    /// Panics when the coroutine has finished, or when it started on another thread.
    pub(crate) fn resume(&mut self) -> Resumed<R> {
        assert!(
            !self.is_done(),
            "coroutine '{}' resumed after it finished",
            self.name
        );
        let me = thread_number();
        if self.home == 0 {
            self.home = me;
        }
        assert_eq!(
            self.home, me,
            "coroutine '{}' resumed on a thread it did not start on",
            self.name
        );
        match self.switch_in(|inner| inner.resume(())) {
            CoroutineResult::Yield(()) => Resumed::Suspended,
            CoroutineResult::Return(Ok(value)) => Resumed::Returned(value),
            CoroutineResult::Return(Err(payload)) => Resumed::Panicked(payload),
        }
    }

    /// Whether the function returned or panicked.
    pub(crate) fn is_done(&self) -> bool {
        self.inner.done()
    }

    /// Whether the coroutine has been resumed at least once.
    pub(crate) fn is_started(&self) -> bool {
        self.inner.started()
    }

    /// The name given at creation.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Runs `go` with this coroutine marked as running on this thread (for `suspend` and for
    /// overflow reports), restoring what ran before afterwards, even if `go` unwinds.
    fn switch_in<T>(&mut self, go: impl FnOnce(&mut Inner<R>) -> T) -> T {
        struct Restore {
            running: Option<Running>,
            yielder: *const Yielder<(), ()>,
            ours: *mut *const Yielder<(), ()>,
        }
        impl Drop for Restore {
            fn drop(&mut self) {
                // SAFETY: `ours` points to the `yielder` field of the coroutine being switched
                // into, which outlives this guard (it is a local of `switch_in`).
                unsafe { *self.ours = YIELDER.with(|y| y.replace(self.yielder)) };
                overflow::set_running(self.running);
            }
        }
        overflow::prepare_thread();
        let running = overflow::set_running(Some(Running {
            guard: self.guard,
            base: self.base,
            name: &*self.name,
        }));
        let restore = Restore {
            running,
            yielder: YIELDER.with(|y| y.replace(self.yielder)),
            ours: &mut self.yielder,
        };
        let out = go(&mut self.inner);
        drop(restore);
        out
    }
}

impl<R> Drop for Coro<R> {
    fn drop(&mut self) {
        if self.inner.started() && !self.inner.done() {
            // `Coro` is `!Send`, and `SendCoro` drops it only at home.
            debug_assert_eq!(self.home, thread_number());
            // Unwinds the suspended stack, running its destructors, with this coroutine marked
            // as running so that an overflow during the unwind is still reported by name.
            self.switch_in(Inner::force_unwind);
        }
    }
}

/// A [`Coro`] that may be sent between threads: it checks at every use that it is on its home
/// thread (the one of its first resume), so the `!Send` state on its stack is only ever touched
/// there. Dropped elsewhere, a started coroutine that has not finished is leaked rather than
/// unwound on a foreign thread (see `docs/coroutines.md`).
pub(crate) struct SendCoro<R> {
    coro: std::mem::ManuallyDrop<Coro<R>>,
}

// SAFETY: an unstarted coroutine holds only the `Send` closure (and the stack, which is plain
// memory); a started one is resumed and dropped only on its home thread, checked by thread
// number, so nothing on its stack is ever touched by another thread. `R: Send` because the
// value may be taken out on the home thread and then moved anywhere.
unsafe impl<R: Send> Send for SendCoro<R> {}

impl<R: Send + 'static> SendCoro<R> {
    /// Like [`Coro::new`] (with its errors), for a `Send` function and result.
    pub(crate) fn new<F: FnOnce() -> R + Send + 'static>(
        pool: &StackPool,
        name: impl Into<Cow<'static, str>>,
        f: F,
    ) -> io::Result<Self> {
        Ok(SendCoro {
            coro: std::mem::ManuallyDrop::new(Coro::new(pool, name, f)?),
        })
    }
}

impl<R> SendCoro<R> {
    /// Whether the caller may use the coroutine: it has not started, or this is its home thread.
    pub(crate) fn is_home(&self) -> bool {
        let home = self.coro.home;
        home == 0 || home == thread_number()
    }

    /// [`Coro::resume`] on the home thread (the first resume makes the caller's thread home);
    /// `None`, touching nothing, on any other thread.
    ///
    /// The coroutine itself is never handed out: swapped for another `Coro`, whose closure need
    /// not be `Send`, it would make this `Send` wrapper carry `!Send` data.
    pub(crate) fn resume(&mut self) -> Option<Resumed<R>> {
        self.is_home().then(|| self.coro.resume())
    }

    /// Whether the function returned or panicked.
    pub(crate) fn is_done(&self) -> bool {
        self.coro.is_done()
    }

    /// The name given at creation.
    pub(crate) fn name(&self) -> &str {
        self.coro.name()
    }
}

impl<R> Drop for SendCoro<R> {
    fn drop(&mut self) {
        // A finished coroutine may be dropped anywhere: nothing is left on its stack, so its
        // drop touches no thread's state, and its stack goes back to this thread's cache.
        if self.is_home() || self.coro.is_done() {
            // SAFETY: `coro` is dropped once, here, on its home thread, or unstarted, or
            // finished (when dropping it runs no code on its stack).
            unsafe { std::mem::ManuallyDrop::drop(&mut self.coro) };
        }
    }
}
