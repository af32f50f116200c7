//! A synchronous function run on its own stack, which can [`suspend`] from any depth and be
//! resumed later on the thread that started it.

use std::any::Any;
use std::cell::Cell;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

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
#[cfg(test)]
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
    name: Arc<str>,
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
    pub(crate) fn new<F>(pool: &StackPool, name: impl Into<Arc<str>>, f: F) -> io::Result<Self>
    where
        F: FnOnce() -> R + 'static,
    {
        Ok(Self::with_stack(pool.take()?, name, f))
    }

    /// A coroutine that will run `f` on `stack`.
    pub(crate) fn with_stack<F>(stack: Stack, name: impl Into<Arc<str>>, f: F) -> Self
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
    #[cfg(test)]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The usable range `[low, base)` of its stack.
    pub(crate) fn stack(&self) -> std::ops::Range<usize> {
        self.guard.1..self.base
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
            #[cfg(test)]
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
