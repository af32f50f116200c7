//! `.await` on a [`Future`]: the async waiter, a node pinned inside the awaiting future.

use std::future::IntoFuture;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
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

/// Registration of one async waiter on a cell: shared by [`Wait`], [`WaitRef`] and
/// [`Task`](crate::Task), which read the value their own way once it is ready.
///
/// The node is written when it is registered, not when the registration is made: a handle
/// that is never polled pending (most of them) pays only its flags.
pub(crate) struct Registration {
    /// Initialised while `registered`, and from the first registration on (a node taken back
    /// from the list keeps its fields; the next registration overwrites them).
    node: MaybeUninit<AsyncNode>,
    /// Whether `node` is initialised.
    written: bool,
    registered: bool,
    _pin: PhantomPinned,
}

impl Registration {
    #[inline]
    pub(crate) const fn new() -> Self {
        Registration {
            node: MaybeUninit::uninit(),
            written: false,
            registered: false,
            _pin: PhantomPinned,
        }
    }

    /// The node; initialised (the caller checked `registered`, or wrote it).
    fn node(&self) -> &AsyncNode {
        debug_assert!(self.written);
        // SAFETY: callers only ask while the node is initialised (`written`).
        unsafe { self.node.assume_init_ref() }
    }

    /// Drops the node (its waker, if it still holds one), unless it is registered.
    fn drop_node(&mut self) {
        if self.written && !self.registered {
            self.written = false;
            // SAFETY: initialised, and off every list: nobody else sees it.
            unsafe { self.node.assume_init_drop() };
        }
    }

    fn node_ptr(&self) -> NonNull<CellWaiter> {
        NonNull::from(&self.node).cast()
    }

    /// Waits (briefly) until the completer is done with our node.
    fn wait_done(&self) {
        while !self.node().done.load(Ordering::Acquire) {
            spin_loop();
        }
    }

    /// `Ready` once `cell` is complete (observed with `Acquire`), with the node off its list;
    /// `Pending` with the node registered to wake `cx` otherwise.
    pub(crate) fn poll_ready(
        self: Pin<&mut Self>,
        cell: &CellHeader,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        // SAFETY: we never move out of `self`; the node stays where it is while registered.
        let this = unsafe { self.get_unchecked_mut() };
        if cell.is_complete() {
            this.release(cell);
            return Poll::Ready(());
        }
        if !this.registered {
            // Not registered, so nobody else sees the node: (re)write it whole, after dropping
            // what an earlier registration left (a waker, if the node was taken back).
            this.drop_node();
            this.node.write(AsyncNode {
                waiter: CellWaiter::new_owner(notify_async),
                waker: UnsafeCell::new(Some(cx.waker().clone())),
                done: AtomicBool::new(false),
            });
            this.written = true;
            // SAFETY: the node is pinned inside `self` and unlinked (or waited for) in `release`
            // before `self` is dropped.
            if unsafe { cell.push(this.node_ptr()) } {
                this.registered = true;
                return Poll::Pending;
            }
            // The push was refused (the cell is complete): the node is still ours.
            this.drop_node();
            return Poll::Ready(());
        }
        // Re-polled while registered: keep the stored waker if it still wakes this task; else
        // clone the new one *before* locking and drop the old one *after*: a foreign waker's
        // clone or drop is user code and may reach this very cell.
        let same = match cell.lock() {
            Locked::Held(_guard) => {
                // SAFETY: registered and locked: the completer can't have taken the node.
                this.node()
                    .waker
                    .with(|p| unsafe { (*p).as_ref().is_some_and(|w| w.will_wake(cx.waker())) })
            }
            Locked::Complete => false,
        };
        if same {
            return Poll::Pending;
        }
        let new = cx.waker().clone();
        match cell.lock() {
            Locked::Held(guard) => {
                // SAFETY: as above.
                let old = this.node().waker.with_mut(|p| unsafe { (*p).replace(new) });
                drop(guard);
                drop(old);
                Poll::Pending
            }
            Locked::Complete => {
                this.release(cell);
                Poll::Ready(())
            }
        }
    }

    /// Takes the node out of the cell's list, or waits until the completer is done with it.
    pub(crate) fn release(&mut self, cell: &CellHeader) {
        if !self.registered {
            return;
        }
        match cell.lock() {
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

impl Drop for Registration {
    fn drop(&mut self) {
        // Its owner released it first (`release`), so it is off every list.
        debug_assert!(!self.registered, "a registration dropped while on a list");
        self.drop_node();
    }
}

/// Polls `reg` on `inner` and clones the value once it is there.
fn poll_clone<T: Clone>(
    reg: Pin<&mut Registration>,
    inner: &CompletionCell<T>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, Failure>> {
    match reg.poll_ready(&inner.header, cx) {
        Poll::Ready(()) => Poll::Ready(inner.get().expect("ready once complete").clone()),
        Poll::Pending => Poll::Pending,
    }
}

/// The future returned by `.await`ing a [`Future`] by value.
///
/// ```
/// let f = ito::spawn_fn(|| 1).shared();
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
/// let f = ito::spawn_fn(|| 1).shared();
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
        poll_clone(reg, this.fut.inner(), cx)
    }
}

impl<T: Clone> std::future::Future for WaitRef<'_, T> {
    type Output = Result<T, Failure>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `reg`.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `reg` is pinned because `self` is.
        let reg = unsafe { Pin::new_unchecked(&mut this.reg) };
        poll_clone(reg, this.fut.inner(), cx)
    }
}

impl<T> Drop for Wait<T> {
    fn drop(&mut self) {
        self.reg.release(self.fut.header());
    }
}

impl<T> Drop for WaitRef<'_, T> {
    fn drop(&mut self) {
        self.reg.release(self.fut.header());
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
