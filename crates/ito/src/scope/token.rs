//! [`CancellationToken`]: a cancellation signal shared by a tree of computations.

use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};

use crate::{Future, Promise};

/// A cancellation signal. Clones share it; [`child_token`](CancellationToken::child_token)s
/// are cancelled with their parent (not the other way round).
///
/// Cancelling completes [`cancelled`](CancellationToken::cancelled), a plain ito
/// [`Future`], so code can `.await` it, `wait()` for it, or `race` against it.
///
/// ```
/// let root = ito::CancellationToken::new();
/// let child = root.child_token();
/// let grandchild = child.child_token();
/// child.cancel();
/// assert!(grandchild.is_cancelled() && !root.is_cancelled());
/// assert_eq!(grandchild.cancelled().wait(), Ok(()));
/// ```
#[derive(Clone)]
pub struct CancellationToken {
    node: Arc<Node>,
}

struct Node {
    signal: Promise<()>,
    children: Mutex<Vec<Weak<Node>>>,
}

impl CancellationToken {
    /// A new token, not cancelled.
    ///
    /// ```
    /// assert!(!ito::CancellationToken::new().is_cancelled());
    /// ```
    pub fn new() -> Self {
        CancellationToken {
            node: Arc::new(Node {
                signal: Promise::new(),
                children: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A token cancelled when this one is (at once if it already is), and cancellable on its
    /// own without affecting this one.
    ///
    /// ```
    /// let parent = ito::CancellationToken::new();
    /// let child = parent.child_token();
    /// child.cancel();
    /// assert!(!parent.is_cancelled());
    /// ```
    pub fn child_token(&self) -> CancellationToken {
        let child = CancellationToken::new();
        let mut children = self.node.children.lock().unwrap();
        if self.is_cancelled() {
            drop(children);
            child.cancel();
        } else {
            // Forget children that are gone, so a long-lived parent does not grow forever.
            if children.len() >= 16 && children.len().is_power_of_two() {
                children.retain(|w| w.strong_count() > 0);
            }
            children.push(Arc::downgrade(&child.node));
        }
        child
    }

    /// Cancels this token and every child token, transitively. Idempotent.
    ///
    /// ```
    /// let t = ito::CancellationToken::new();
    /// t.cancel();
    /// t.cancel();
    /// assert!(t.is_cancelled());
    /// ```
    pub fn cancel(&self) {
        let mut stack = vec![self.node.clone()];
        while let Some(node) = stack.pop() {
            let inner = node.signal.inner();
            // The lock orders this with `child_token`: a child registered before we take the
            // list is cancelled here; one registered after sees the signal and cancels itself.
            // The signal is published under the lock, but its waiters are notified after it is
            // released: callbacks on `cancelled()` are user code, which may use this token.
            let (children, waiters) = {
                let mut c = node.children.lock().unwrap();
                if !inner.header.try_claim() {
                    continue; // already cancelled, and so were its children
                }
                // SAFETY: we won the claim, so we are the cell's only completer.
                let waiters = unsafe { inner.publish_claimed(Ok(())) };
                (std::mem::take(&mut *c), waiters)
            };
            if !waiters.is_null() {
                // SAFETY: `waiters` was taken from this cell by `publish_claimed`; `node` keeps
                // the promise, and so the cell, alive during the call.
                unsafe { crate::future::notify::dispatch(NonNull::from(inner).cast(), waiters) };
            }
            stack.extend(children.iter().filter_map(Weak::upgrade));
        }
    }

    /// Whether the token was cancelled.
    ///
    /// ```
    /// let t = ito::CancellationToken::new();
    /// assert!(!t.is_cancelled());
    /// ```
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.node.signal.is_completed()
    }

    /// A future completed (with `()`) when the token is cancelled.
    ///
    /// ```
    /// let t = ito::CancellationToken::new();
    /// let t2 = t.clone();
    /// let worker = ito::spawn(async move {
    ///     t2.cancelled().await.unwrap();
    ///     "stopped"
    /// });
    /// t.cancel();
    /// assert_eq!(worker.wait(), Ok("stopped"));
    /// ```
    pub fn cancelled(&self) -> Future<()> {
        self.node.signal.future()
    }
}

impl Default for CancellationToken {
    fn default() -> Self {
        CancellationToken::new()
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
