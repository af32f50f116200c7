//! The one place ito's atomic state machines get their primitives from.
//!
//! Under `RUSTFLAGS="--cfg loom"` these are [loom](https://docs.rs/loom)'s model-checked
//! versions; otherwise the `std` ones. The completion cell (`future::cell`), the task state
//! word (`task::state`), the sleep protocol and its parker (`runtime::park`), fork-join's
//! shelf and latch (`join::shelf`, `join::job`), and a trace buffer (`trace::buffer`) use only
//! what is exported here, so their loom models in `src/tests/loom_*.rs` exercise the real
//! code. The rest of the worker loop
//! (crossbeam-deque, OS threads) is not modelled; stress tests cover it
//! (`tests/runtime_wait.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

/// Threads: a parked owner of a join job is woken through its `Thread` handle.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{Thread, current, park};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{Thread, current, park};
}

/// A spin-loop hint (loom: a yield, so models of spin loops terminate).
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// `UnsafeCell` with loom's closure API, so the same code runs under both.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    #[inline]
    pub(crate) const fn new(v: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
