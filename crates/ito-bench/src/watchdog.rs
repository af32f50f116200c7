//! Watchdogs: a thread that calls a function when a run is late. [`Watchdog`] starts one
//! thread per run; [`SharedWatchdog`] serves many short runs from one thread.

use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// A thread that calls `on_timeout` unless finished within `limit`.
pub(crate) struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog.
    pub(crate) fn start(limit: Duration, on_timeout: impl FnOnce() + Send + 'static) -> Watchdog {
        let (done, rx) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("ito-bench-watchdog".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    on_timeout();
                }
            })
            .expect("spawning the watchdog thread");
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }

    /// Stops the watchdog (the callback will not run).
    pub(crate) fn finish(mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What an armed [`SharedWatchdog`] calls when its run is late.
type Alarm = Box<dyn FnOnce() + Send>;

/// One watchdog thread for many short runs: [`arm`](Self::arm) before a run,
/// [`disarm`](Self::disarm) after. Unlike [`Watchdog`] it starts no thread per run, and
/// arming wakes nobody (the thread polls every [`SharedWatchdog::POLL`]), so runs of a few
/// microseconds are not disturbed; a late run is caught within that period of its limit.
pub(crate) struct SharedWatchdog {
    armed: Arc<std::sync::Mutex<Option<(Instant, Alarm)>>>,
}

impl SharedWatchdog {
    /// How often the thread looks at the armed deadline.
    pub(crate) const POLL: Duration = Duration::from_millis(20);

    /// Starts the thread (it lives as long as the process).
    pub(crate) fn start() -> SharedWatchdog {
        let armed: Arc<std::sync::Mutex<Option<(Instant, Alarm)>>> = Arc::default();
        let slot = Arc::clone(&armed);
        thread::Builder::new()
            .name("ito-bench-watchdog".into())
            .spawn(move || {
                loop {
                    thread::sleep(Self::POLL);
                    let mut g = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if g.as_ref()
                        .is_some_and(|(deadline, _)| Instant::now() >= *deadline)
                    {
                        let (_, alarm) = g.take().expect("checked above");
                        drop(g);
                        alarm();
                    }
                }
            })
            .expect("spawning the watchdog thread");
        SharedWatchdog { armed }
    }

    /// Calls `on_timeout` (from the watchdog thread) unless disarmed within `limit`.
    pub(crate) fn arm(&self, limit: Duration, on_timeout: impl FnOnce() + Send + 'static) {
        let deadline = Instant::now() + limit;
        *self.armed.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((deadline, Box::new(on_timeout)));
    }

    /// Cancels the armed deadline.
    pub(crate) fn disarm(&self) {
        let alarm = self.armed.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(alarm);
    }
}
