//! Timer drivers: a wheel and the thread that fires it, one per runtime, and the registration
//! API.
//!
//! Ownership: a runtime built with [`Builder`](crate::Builder) owns a [`Driver`] in its
//! shared block. Its thread (`ito-timer`) starts with the runtime's first timer, and the
//! runtime's shutdown stops it, joins it and drops the timers still pending, once the
//! runtime's workers are joined (no worker can be waiting on a timer then). The global
//! runtime, and code outside every runtime, use the process's driver, [`GLOBAL`], which is
//! never stopped. "The runtime here" is the one the process registry files names under: the
//! runtime of the worker or blocking thread, or the one entered by `Runtime::block_on`, else
//! the global runtime.
//!
//! A [`TimerHandle`] reaches its driver through a plain pointer. One registered on a
//! runtime's driver owns the runtime's block (`runtime/owners.rs`) until it is dropped, so
//! the driver it points at outlives it. A timer registered on a stopped driver goes to
//! [`GLOBAL`] instead: a thread that outlives its runtime's shutdown (a blocking-pool thread,
//! a worker that dropped its own runtime) still gets its timers fired.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::Instant;

use super::wheel::{TimerKey, Wheel};
use crate::runtime::Shared;
use crate::trace::{Kind, Recorder};

type Callback = Box<dyn FnOnce() + Send>;

/// The process's driver: the global runtime's, and that of code outside every runtime.
static GLOBAL: Driver = Driver::new();

thread_local! {
    /// The driver whose thread this is, if it is a timer thread.
    static RUNS: Cell<*const Driver> = const { Cell::new(std::ptr::null()) };
}

/// A timer wheel and the thread that fires it.
pub(crate) struct Driver {
    state: Mutex<State>,
    /// The timer thread, once started; set under `state`'s lock, read without it.
    thread: OnceLock<Thread>,
    /// The recorder of the runtime whose timers these are, if it is traced: set once, when
    /// the runtime is built (the global runtime's, for [`GLOBAL`]).
    trace: OnceLock<&'static Recorder>,
}

struct State {
    wheel: Wheel<Callback>,
    /// When the timer thread plans to wake (ns since [`origin`]); `u64::MAX` when parked for
    /// good.
    planned: u64,
    /// The timer thread, to join; `None` before it starts and after it is stopped.
    join: Option<JoinHandle<()>>,
    /// Set once by [`Driver::stop`]: no timer is registered or fired any more.
    stopped: bool,
}

/// The instant every driver counts nanoseconds from.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn nanos_since_origin(t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(origin()).as_nanos()).unwrap_or(u64::MAX)
}

impl Driver {
    /// A driver with no timers; its thread starts with its first timer.
    pub(crate) const fn new() -> Driver {
        Driver {
            state: Mutex::new(State {
                wheel: Wheel::new(),
                planned: u64::MAX,
                join: None,
                stopped: false,
            }),
            thread: OnceLock::new(),
            trace: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `f` to fire at `at`, starting the thread if this is the first timer. Hands `f`
    /// back if the driver is stopped.
    fn insert(&'static self, at: u64, f: Callback) -> Result<TimerKey, Callback> {
        let mut st = self.lock();
        if st.stopped {
            return Err(f);
        }
        if self.thread.get().is_none() {
            let handle = thread::Builder::new()
                .name("ito-timer".into())
                .spawn(move || run(self))
                .expect("ito: cannot start the timer thread");
            let _ = self.thread.set(handle.thread().clone());
            st.join = Some(handle);
        }
        let key = st.wheel.insert(at, f);
        let wake = at < st.planned;
        if wake {
            st.planned = at;
        }
        drop(st);
        if wake {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
        Ok(key)
    }

    /// Removes the timer `key` if it has not fired, and returns its callback.
    fn cancel(&self, key: TimerKey) -> Option<Callback> {
        self.lock().wheel.cancel(key)
    }

    /// Whether the calling thread is this driver's timer thread.
    pub(crate) fn runs_here(&self) -> bool {
        RUNS.with(|r| std::ptr::eq(r.get(), self))
    }

    /// Stops the timer thread and joins it (unless the caller is that thread, which then
    /// exits at its next turn), then drops the pending timers' callbacks unrun. Later timers
    /// go to [`GLOBAL`]. Called by the runtime's shutdown once its workers are joined.
    pub(crate) fn stop(&self) {
        let (wheel, join) = {
            let mut st = self.lock();
            st.stopped = true;
            (
                std::mem::replace(&mut st.wheel, Wheel::new()),
                st.join.take(),
            )
        };
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
        if let Some(h) = join {
            if !self.runs_here() {
                // A panic on the timer thread was already reported; the thread is gone.
                let _ = h.join();
            }
        }
        // Outside the lock: dropping a callback may wake a task, which may drop a timer.
        drop(wheel);
    }
}

fn run(d: &'static Driver) {
    RUNS.with(|r| r.set(d));
    crate::future::notify::never_run_callbacks_here();
    tighten_timer_slack();
    let mut fired: Vec<Callback> = Vec::new();
    loop {
        let next = {
            let mut st = d.lock();
            if st.stopped {
                return;
            }
            let now = nanos_since_origin(Instant::now());
            st.wheel.advance(now, &mut fired);
            let next = st.wheel.next_wakeup();
            st.planned = next.unwrap_or(u64::MAX);
            next.map(|n| (n, now))
        };
        if let Some(r) = d.trace.get() {
            if !fired.is_empty() {
                r.record(Kind::TimerFire {
                    n: fired.len() as u64,
                });
            }
        }
        for cb in fired.drain(..) {
            // A panicking callback must not stop the timers.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(cb));
        }
        match next {
            Some((at, now)) if at > now => {
                thread::park_timeout(std::time::Duration::from_nanos(at - now));
            }
            Some(_) => {}
            None => thread::park(),
        }
    }
}

/// Asks the kernel to wake this thread on time: Linux lets a timed wait of an ordinary thread
/// run up to 50 µs late by default (its timer slack), which the timer thread would add to every
/// sleep it ends.
fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: `PR_SET_TIMERSLACK` takes one integer argument (the slack in nanoseconds) and
    // changes only the calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Records the timer fires of `shared`'s driver (the process's, for the global runtime) to
/// its recorder, if it is traced. Called once, when the runtime is built.
pub(crate) fn trace_timers(shared: &'static Shared) {
    if let Some(r) = shared.trace {
        let _ = shared.timers().unwrap_or(&GLOBAL).trace.set(r);
    }
}

/// A registered timer; [`cancel`](TimerHandle::cancel) drops its callback unrun.
#[must_use = "dropping a timer handle lets the timer run; `call_at_detached` needs no handle"]
pub(crate) struct TimerHandle {
    driver: &'static Driver,
    key: TimerKey,
    /// The runtime whose driver holds the timer: this handle owns its block.
    owner: Option<&'static Shared>,
}

impl TimerHandle {
    /// Cancels the timer if it has not fired, dropping the callback.
    pub(crate) fn cancel(self) {
        let cb = self.driver.cancel(self.key);
        drop(cb); // outside the lock: dropping it may complete promises
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        if let Some(shared) = self.owner {
            // The last use of the driver: the block may be freed here.
            shared.timer_released();
        }
    }
}

/// The driver of the runtime here (module docs), and the runtime if it owns it.
#[inline]
fn driver_here() -> (&'static Driver, Option<&'static Shared>) {
    match crate::runtime::current_if_started() {
        Some(shared) => match shared.timers() {
            Some(d) => (d, Some(shared)),
            None => (&GLOBAL, None),
        },
        None => (&GLOBAL, None),
    }
}

/// Adds `f` to the driver here, or to [`GLOBAL`] if that one is stopped.
fn register(
    deadline: Instant,
    f: Callback,
) -> (&'static Driver, TimerKey, Option<&'static Shared>) {
    let at = nanos_since_origin(deadline);
    let (driver, shared) = driver_here();
    match driver.insert(at, f) {
        Ok(key) => (driver, key, shared),
        Err(f) => match GLOBAL.insert(at, f) {
            Ok(key) => (&GLOBAL, key, None),
            Err(_) => unreachable!("the process's timer driver is never stopped"),
        },
    }
}

/// Runs `f` on the timer thread of the runtime here at `deadline`.
pub(crate) fn call_at(deadline: Instant, f: impl FnOnce() + Send + 'static) -> TimerHandle {
    let (driver, key, owner) = register(deadline, Box::new(f));
    if let Some(shared) = owner {
        // The registering thread is one of the runtime's, or inside its `block_on`: the
        // block is alive, and this handle becomes one of its owners.
        shared.timer_held();
    }
    TimerHandle { driver, key, owner }
}

/// [`call_at`] for a timer that is never cancelled: no handle, so no owner.
pub(crate) fn call_at_detached(deadline: Instant, f: impl FnOnce() + Send + 'static) {
    register(deadline, Box::new(f));
}
