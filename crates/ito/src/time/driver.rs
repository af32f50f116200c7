//! The timer thread and its registration API.

use std::sync::{Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::Instant;

use super::wheel::{TimerKey, Wheel};

type Callback = Box<dyn FnOnce() + Send>;

struct Driver {
    state: Mutex<State>,
    origin: Instant,
    thread: Thread,
}

struct State {
    wheel: Wheel<Callback>,
    /// When the timer thread plans to wake (ns since origin); `u64::MAX` when parked for good.
    planned: u64,
}

fn driver() -> &'static Driver {
    static DRIVER: OnceLock<Driver> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let handle = thread::Builder::new()
            .name("ito-timer".into())
            .spawn(|| run(driver()))
            .expect("ito: cannot start the timer thread");
        Driver {
            state: Mutex::new(State {
                wheel: Wheel::new(),
                planned: u64::MAX,
            }),
            origin: Instant::now(),
            thread: handle.thread().clone(),
        }
    })
}

fn nanos_since(origin: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
}

fn run(d: &'static Driver) {
    crate::future::notify::never_run_callbacks_here();
    tighten_timer_slack();
    let mut fired: Vec<Callback> = Vec::new();
    loop {
        let next = {
            let mut st = d.state.lock().unwrap_or_else(|e| e.into_inner());
            let now = nanos_since(d.origin, Instant::now());
            st.wheel.advance(now, &mut fired);
            let next = st.wheel.next_wakeup();
            st.planned = next.unwrap_or(u64::MAX);
            next.map(|n| (n, now))
        };
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

/// A registered timer; [`cancel`](TimerHandle::cancel) drops its callback unrun.
#[must_use = "a timer handle cancels nothing unless `cancel` is called; use `detach` to keep it"]
pub(crate) struct TimerHandle(TimerKey);

impl TimerHandle {
    /// Cancels the timer if it has not fired; dropping the callback.
    pub(crate) fn cancel(self) {
        let d = driver();
        let cb = d
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .wheel
            .cancel(self.0);
        drop(cb); // outside the lock: dropping it may complete promises
    }

    /// Lets the timer run; it can no longer be cancelled.
    pub(crate) fn detach(self) {}
}

/// Runs `f` on the timer thread at `deadline`.
pub(crate) fn call_at(deadline: Instant, f: impl FnOnce() + Send + 'static) -> TimerHandle {
    let d = driver();
    let at = nanos_since(d.origin, deadline);
    let mut st = d.state.lock().unwrap_or_else(|e| e.into_inner());
    let key = st.wheel.insert(at, Box::new(f));
    let wake = at < st.planned;
    if wake {
        st.planned = at;
    }
    drop(st);
    if wake {
        d.thread.unpark();
    }
    TimerHandle(key)
}
