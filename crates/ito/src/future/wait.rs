//! `.await` on a [`Future`]: the async waiter, a node pinned inside the awaiting future.

use std::future::IntoFuture;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use super::Future;
use super::cell::{Action, CellHeader, CellWaiter, CompletionCell, Locked};
use crate::Failure;
use crate::loom::{AtomicBool, Ordering, UnsafeCell, spin_loop};

/// The waiter node of one `.await`. Lives inside the (pinned) awaiting future, so registering
/// allocates nothing.
#[repr(C)]
struct AsyncNode {
    waiter: CellWaiter,
    /// Written by the poller before the node is pushed, and afterwards only under the cell's
    /// list lock; taken by the completer after it took the list. The two never overlap: the
    /// lock cannot be taken once the cell is complete.
    waker: UnsafeCell<Option<Waker>>,
    /// Set (release) by the completer as its last access to the node.
    done: AtomicBool,
}

unsafe fn notify_async(node: NonNull<CellWaiter>, _cell: NonNull<CellHeader>, _action: Action) {
    let node = node.cast::<AsyncNode>();
    // SAFETY: the node is live until `done` is set (its owner waits for `done` before freeing
    // it); the completer has exclusive access to `waker` now (see `AsyncNode::waker`).
    let waker = unsafe { node.as_ref().waker.with_mut(|w| (*w).take()) };
    // SAFETY: as above; this is the last access to the node.
    unsafe { node.as_ref().done.store(true, Ordering::Release) };
    if let Some(w) = waker {
        w.wake();
    }
}

/// Registration state shared by [`Wait`] and [`WaitRef`].
struct Registration {
    node: AsyncNode,
    registered: bool,
    _pin: PhantomPinned,
}

impl Registration {
    fn new() -> Self {
        Registration {
            node: AsyncNode {
                waiter: CellWaiter::new_owner(notify_async),
                waker: UnsafeCell::new(None),
                done: AtomicBool::new(false),
            },
            registered: false,
            _pin: PhantomPinned,
        }
    }

    fn node_ptr(&self) -> NonNull<CellWaiter> {
        NonNull::from(&self.node).cast()
    }

    /// Waits (briefly) until the completer is done with our node.
    fn wait_done(&self) {
        while !self.node.done.load(Ordering::Acquire) {
            spin_loop();
        }
    }

    fn poll<T: Clone>(
        self: Pin<&mut Self>,
        inner: &CompletionCell<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, Failure>> {
        // SAFETY: we never move out of `self`; the node stays where it is while registered.
        let this = unsafe { self.get_unchecked_mut() };
        if let Some(v) = inner.get() {
            this.release(inner);
            return Poll::Ready(v.clone());
        }
        if !this.registered {
            let w = cx.waker().clone();
            // SAFETY: not registered, so nobody else sees the node.
            this.node.waker.with_mut(|p| unsafe { *p = Some(w) });
            // SAFETY: the node is pinned inside `self` and unlinked (or waited for) in `release`
            // before `self` is dropped.
            if unsafe { inner.header.push(this.node_ptr()) } {
                this.registered = true;
                return Poll::Pending;
            }
            // SAFETY: the push was refused, the node is still ours.
            this.node.waker.with_mut(|p| unsafe { *p = None });
            let v = inner.get().expect("push refused only when complete");
            return Poll::Ready(v.clone());
        }
        // Re-polled while registered: keep the stored waker if it still wakes this task; else
        // clone the new one *before* locking and drop the old one *after*: a foreign waker's
        // clone or drop is user code and may reach this very cell.
        let same = match inner.header.lock() {
            Locked::Held(_guard) => {
                // SAFETY: registered and locked: the completer can't have taken the node.
                this.node
                    .waker
                    .with(|p| unsafe { (*p).as_ref().is_some_and(|w| w.will_wake(cx.waker())) })
            }
            Locked::Complete => false,
        };
        if same {
            return Poll::Pending;
        }
        let new = cx.waker().clone();
        match inner.header.lock() {
            Locked::Held(guard) => {
                // SAFETY: as above.
                let old = this.node.waker.with_mut(|p| unsafe { (*p).replace(new) });
                drop(guard);
                drop(old);
                Poll::Pending
            }
            Locked::Complete => {
                this.release(inner);
                let v = inner.get().expect("lock refused only when complete");
                Poll::Ready(v.clone())
            }
        }
    }

    /// Takes the node out of the cell's list, or waits until the completer is done with it.
    fn release<T>(&mut self, inner: &CompletionCell<T>) {
        if !self.registered {
            return;
        }
        match inner.header.lock() {
            Locked::Held(mut guard) => {
                // SAFETY: our node, registered on this cell and not yet unlinked.
                let found = unsafe { guard.unlink(self.node_ptr()) };
                debug_assert!(found, "a registered waiter vanished from the list");
            }
            Locked::Complete => self.wait_done(),
        }
        self.registered = false;
    }
}

/// The future returned by `.await`ing a [`Future`] by value.
///
/// ```
/// let f = ito::spawn_fn(|| 1);
/// assert_eq!(ito::block_on(async move { f.await }), Ok(1));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Wait<T> {
    fut: Future<T>,
    reg: Registration,
}

/// The future returned by `.await`ing a `&`[`Future`].
///
/// ```
/// let f = ito::spawn_fn(|| 1);
/// let r = ito::block_on(async { (&f).await });
/// assert_eq!(r, Ok(1));
/// assert_eq!(f.value(), Some(Ok(1)));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct WaitRef<'a, T> {
    fut: &'a Future<T>,
    reg: Registration,
}

impl<T: Clone> std::future::Future for Wait<T> {
    type Output = Result<T, Failure>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `reg`; `fut` is never moved out while pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `reg` is pinned because `self` is.
        let reg = unsafe { Pin::new_unchecked(&mut this.reg) };
        reg.poll(this.fut.inner(), cx)
    }
}

impl<T: Clone> std::future::Future for WaitRef<'_, T> {
    type Output = Result<T, Failure>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `reg`.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `reg` is pinned because `self` is.
        let reg = unsafe { Pin::new_unchecked(&mut this.reg) };
        reg.poll(this.fut.inner(), cx)
    }
}

impl<T> Drop for Wait<T> {
    fn drop(&mut self) {
        self.reg.release(self.fut.inner());
    }
}

impl<T> Drop for WaitRef<'_, T> {
    fn drop(&mut self) {
        self.reg.release(self.fut.inner());
    }
}

// SAFETY: the node's raw parts are only touched through the cell protocol; the waker is Send.
unsafe impl<T: Send + Sync> Send for Wait<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Send for WaitRef<'_, T> {}

impl<T: Clone> IntoFuture for Future<T> {
    type Output = Result<T, Failure>;
    type IntoFuture = Wait<T>;
    fn into_future(self) -> Wait<T> {
        Wait {
            fut: self,
            reg: Registration::new(),
        }
    }
}

impl<'a, T: Clone> IntoFuture for &'a Future<T> {
    type Output = Result<T, Failure>;
    type IntoFuture = WaitRef<'a, T>;
    fn into_future(self) -> WaitRef<'a, T> {
        WaitRef {
            fut: self,
            reg: Registration::new(),
        }
    }
}

impl<T> std::fmt::Debug for Wait<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wait")
            .field("registered", &self.reg.registered)
            .finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for WaitRef<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitRef")
            .field("registered", &self.reg.registered)
            .finish_non_exhaustive()
    }
}
