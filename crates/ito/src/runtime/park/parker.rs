//! The seam through which every runtime thread parks when it has nothing to do.
//!
//! A [`Parker`] belongs to one runtime thread; its [`Unparker`] is what other threads hold to
//! wake it. Once the runtime's I/O driver has started (`io/driver.rs`), a thread that parks
//! takes the driver if no other thread holds it and blocks in the OS poll instead of on its
//! futex; [`Unparker::unpark`] then wakes the poll. [`PollPark`] is the state machine that
//! makes that hand-over lose no wake-up (`docs/io.md`).
//!
//! Under `--cfg loom` both are built from loom's `Mutex` and `Condvar`, so the sleep protocol's
//! models run the same code that ships. A loom park with a timeout returns at once: the model
//! explores the timeout firing at any point.

use std::time::Duration;

use crate::loom::{AtomicUsize, Ordering};

/// How long a thread that found the driver held for a look (not a blocking poll) parks before
/// it tries to take the driver again.
#[cfg(not(loom))]
const DRIVER_RETRY: Duration = Duration::from_millis(1);

/// Parks one runtime thread. A wake-up given before the park is not lost: the next park
/// returns at once.
pub(crate) struct Parker {
    #[cfg(not(loom))]
    inner: crossbeam_utils::sync::Parker,
    #[cfg(loom)]
    inner: loom::sync::Arc<model::Token>,
    #[cfg(not(loom))]
    io: std::sync::Arc<IoPark>,
}

/// Wakes the thread that owns the matching [`Parker`].
#[derive(Clone)]
pub(crate) struct Unparker {
    #[cfg(not(loom))]
    inner: crossbeam_utils::sync::Unparker,
    #[cfg(loom)]
    inner: loom::sync::Arc<model::Token>,
    #[cfg(not(loom))]
    io: std::sync::Arc<IoPark>,
}

/// What a parker and its unparker share about the driver.
#[cfg(not(loom))]
struct IoPark {
    state: PollPark,
    slot: std::sync::Arc<crate::io::Slot>,
}

impl Parker {
    /// A parker whose thread may poll the driver in `slot` once it has started.
    pub(crate) fn new(#[cfg(not(loom))] slot: std::sync::Arc<crate::io::Slot>) -> Parker {
        Parker {
            #[cfg(not(loom))]
            inner: crossbeam_utils::sync::Parker::new(),
            #[cfg(loom)]
            inner: loom::sync::Arc::new(model::Token::default()),
            #[cfg(not(loom))]
            io: std::sync::Arc::new(IoPark {
                state: PollPark::default(),
                slot,
            }),
        }
    }

    /// The handle that wakes this parker's thread.
    pub(crate) fn unparker(&self) -> Unparker {
        Unparker {
            #[cfg(not(loom))]
            inner: self.inner.unparker().clone(),
            #[cfg(loom)]
            inner: self.inner.clone(),
            #[cfg(not(loom))]
            io: self.io.clone(),
        }
    }

    /// Blocks until woken. May return spuriously: callers re-check their condition. Returns
    /// whether it polled the driver and woke tasks (a worker's woken tasks are then in its own
    /// queues).
    #[inline]
    pub(crate) fn park(&self) -> bool {
        #[cfg(not(loom))]
        return self.park_io(None);
        #[cfg(loom)]
        {
            self.inner.wait();
            false
        }
    }

    /// Blocks until woken or until `timeout` has passed. Returns what [`Parker::park`] does.
    #[inline]
    pub(crate) fn park_timeout(&self, timeout: Duration) -> bool {
        #[cfg(not(loom))]
        return self.park_io(Some(timeout));
        #[cfg(loom)]
        {
            let _ = timeout;
            self.inner.take_or_yield();
            false
        }
    }

    /// Blocks until woken or until `timeout`, never in the driver.
    pub(crate) fn park_without_io(&self, timeout: Option<Duration>) {
        #[cfg(not(loom))]
        self.park_futex(timeout);
        #[cfg(loom)]
        match timeout {
            Some(_) => self.inner.take_or_yield(),
            None => self.inner.wait(),
        }
    }

    /// Parks in the driver if it has started and no other thread holds it, else on the futex.
    #[cfg(not(loom))]
    fn park_io(&self, timeout: Option<Duration>) -> bool {
        let Some(driver) = self.io.slot.get() else {
            self.park_futex(timeout);
            return false;
        };
        let Some(mut turn) = driver.try_lock() else {
            // A thread blocked in the driver sees every event; one that only looks lets go at
            // once, and this thread tries again shortly.
            let timeout = if driver.held_by_sleeper() {
                timeout
            } else {
                Some(timeout.map_or(DRIVER_RETRY, |t| t.min(DRIVER_RETRY)))
            };
            self.park_futex(timeout);
            return false;
        };
        if !self.io.state.enter() {
            return false;
        }
        turn.poll(timeout);
        self.io.state.leave();
        turn.finish() > 0
    }

    #[cfg(not(loom))]
    fn park_futex(&self, timeout: Option<Duration>) {
        match timeout {
            Some(d) => self.inner.park_timeout(d),
            None => self.inner.park(),
        }
    }
}

impl Unparker {
    /// Wakes the parked thread, or makes its next park return at once.
    #[inline]
    pub(crate) fn unpark(&self) {
        #[cfg(not(loom))]
        {
            if self.io.state.notify() {
                if let Some(driver) = self.io.slot.get() {
                    driver.wake();
                }
            }
            self.inner.unpark();
        }
        #[cfg(loom)]
        self.inner.give();
    }
}

// Under loom only `tests/loom_io.rs` uses the state machine (the parker is a model token).
#[cfg_attr(loom, allow(dead_code))]
const IDLE: usize = 0;
#[cfg_attr(loom, allow(dead_code))]
const NOTIFIED: usize = 1;
#[cfg_attr(loom, allow(dead_code))]
const POLLING: usize = 2;

/// Whether a parker's thread is in the driver's poll, and wake-ups given meanwhile.
///
/// The thread announces the poll ([`PollPark::enter`]) after taking the driver and before
/// blocking in it; an unparker swaps in `NOTIFIED` ([`PollPark::notify`]) and wakes the poll
/// if it saw `POLLING`. One of the two sees the other: a thread that enters after the swap
/// finds `NOTIFIED` and does not poll; an unparker that swaps after the enter wakes the poll,
/// whose OS waker makes the poll return even if the thread has not begun blocking yet.
#[derive(Default, Debug)]
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct PollPark {
    state: AtomicUsize,
}

#[cfg_attr(loom, allow(dead_code))]
impl PollPark {
    /// The thread is about to block in the driver. `false`: a wake-up came first (now
    /// consumed); it must not block.
    pub(crate) fn enter(&self) -> bool {
        match self
            .state
            .compare_exchange(IDLE, POLLING, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(_) => {
                self.state.store(IDLE, Ordering::SeqCst);
                false
            }
        }
    }

    /// The thread has returned from the poll; a wake-up given meanwhile is consumed.
    pub(crate) fn leave(&self) {
        self.state.swap(IDLE, Ordering::SeqCst);
    }

    /// Gives a wake-up. `true`: the thread is in the poll, and the caller must wake the
    /// driver.
    pub(crate) fn notify(&self) -> bool {
        self.state.swap(NOTIFIED, Ordering::SeqCst) == POLLING
    }
}

#[cfg(loom)]
mod model {
    use loom::sync::{Condvar, Mutex};

    /// A wake-up token under a lock: the model of a futex-based parker.
    #[derive(Default)]
    pub(super) struct Token {
        given: Mutex<bool>,
        cv: Condvar,
    }

    impl Token {
        pub(super) fn wait(&self) {
            let mut given = self.given.lock().unwrap();
            while !*given {
                given = self.cv.wait(given).unwrap();
            }
            *given = false;
        }

        pub(super) fn take_or_yield(&self) {
            let mut given = self.given.lock().unwrap();
            if !*given {
                drop(given);
                loom::thread::yield_now();
                given = self.given.lock().unwrap();
            }
            *given = false;
        }

        pub(super) fn give(&self) {
            *self.given.lock().unwrap() = true;
            self.cv.notify_one();
        }
    }
}
