//! A worker thread's stack of joins in progress: private frames, plus how many of the oldest
//! ones are exposed.
//!
//! Frames are pushed and popped in strict stack order (a `join` pops its frame before it
//! returns), and exposure takes the oldest unexposed frame, so the exposed frames are always
//! a prefix: `frames[..exposed]`. Only the owning thread touches this.

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;

use super::job::JobHeader;

pub(crate) struct JoinStack {
    frames: UnsafeCell<Vec<NonNull<JobHeader>>>,
    exposed: Cell<usize>,
}

impl JoinStack {
    pub(crate) fn new() -> JoinStack {
        JoinStack {
            frames: UnsafeCell::new(Vec::with_capacity(64)),
            exposed: Cell::new(0),
        }
    }

    /// Runs `f` on the frames. `f` must not call back into this stack.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Vec<NonNull<JobHeader>>) -> R) -> R {
        // SAFETY: `JoinStack` is not `Sync`, so only this thread gets here, and every caller
        // passes a closure that does not re-enter: no other reference to the vector is live.
        f(unsafe { &mut *self.frames.get() })
    }

    /// Pushes a frame; returns its depth.
    #[inline]
    pub(crate) fn push(&self, job: NonNull<JobHeader>) -> usize {
        self.with(|v| {
            let d = v.len();
            v.push(job);
            d
        })
    }

    /// Pops the frame at `depth` (the top).
    #[inline]
    pub(crate) fn pop(&self, depth: usize) {
        self.with(|v| {
            debug_assert_eq!(v.len(), depth + 1);
            v.truncate(depth);
        });
        if self.exposed.get() > depth {
            self.exposed.set(depth);
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.with(|v| v.len())
    }

    /// Whether the frame at `depth` has been exposed.
    #[inline]
    pub(crate) fn is_exposed(&self, depth: usize) -> bool {
        depth < self.exposed.get()
    }

    /// Marks up to `max` of the oldest unexposed frames exposed and passes them, oldest first,
    /// with the depth of the first, to `expose` (which must not touch this stack). Returns
    /// whether there were any.
    pub(crate) fn expose_oldest(
        &self,
        max: usize,
        expose: impl FnOnce(&[NonNull<JobHeader>], usize),
    ) -> bool {
        let first = self.exposed.get();
        let n = self.with(|v| {
            let end = v.len().min(first.saturating_add(max));
            let frames = &v[first.min(end)..end];
            if !frames.is_empty() {
                expose(frames, first);
            }
            frames.len()
        });
        self.exposed.set(first + n);
        n > 0
    }
}
