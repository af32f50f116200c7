//! The I/O driver: one `mio::Poll` per runtime, the table of registered sources, and a waker
//! that interrupts a thread blocked in the poll.
//!
//! No thread of its own runs it. A runtime thread with nothing to do takes it in its park
//! (`runtime/park/parker.rs`) and blocks in [`Turn::poll`] instead of on its futex; a running
//! worker takes it now and then for a poll that does not block (`runtime/worker.rs`). One
//! thread at a time holds it; the others park as before. The design is in `docs/io.md`.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::Duration;

use mio::event::Source;

use super::ready::Ready;
use super::registry::{Registry, WAKE_TOKEN};
use super::scheduled::ScheduledIo;

/// Events taken from the OS per poll.
const EVENTS_PER_POLL: usize = 1024;

/// One runtime's I/O driver.
pub(crate) struct Driver {
    /// Registers sources with the OS poller (a clone of the poll's own registry, usable
    /// while another thread blocks in the poll).
    os: mio::Registry,
    /// The registered sources' readiness, by token.
    sources: Registry,
    /// Interrupts a thread blocked in the poll.
    waker: mio::Waker,
    /// The poll itself, held by the one thread in the driver.
    poller: Mutex<Poller>,
    /// Set while the thread holding the poll may block in it (an idle thread's park), clear
    /// while it only looks (a running worker's poll with no timeout).
    blocking: AtomicBool,
}

struct Poller {
    poll: mio::Poll,
    events: mio::Events,
    /// Counts turns: a readiness word records the turn that last set it.
    tick: u16,
    /// Wakers collected by the last poll, woken after the lock is let go.
    wake: Vec<Waker>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Driver {
    fn new() -> io::Result<Driver> {
        let poll = mio::Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), mio::Token(WAKE_TOKEN))?;
        let os = poll.registry().try_clone()?;
        Ok(Driver {
            os,
            sources: Registry::default(),
            waker,
            poller: Mutex::new(Poller {
                poll,
                events: mio::Events::with_capacity(EVENTS_PER_POLL),
                tick: 0,
                wake: Vec::new(),
            }),
            blocking: AtomicBool::new(false),
        })
    }

    /// Takes the driver, unless another thread holds it.
    pub(crate) fn try_lock(&self) -> Option<Turn<'_>> {
        self.poller.try_lock().ok().map(|poller| Turn {
            driver: self,
            poller,
        })
    }

    /// Whether the thread holding the driver may block in its poll (it then sees every event:
    /// another idle thread need not wait for the driver).
    pub(crate) fn held_by_sleeper(&self) -> bool {
        self.blocking.load(Ordering::Relaxed)
    }

    /// Interrupts the thread blocked in [`Turn::poll`], or makes its next poll return at once.
    pub(crate) fn wake(&self) {
        // The only error is the eventfd's counter overflowing, which mio handles by reading it
        // back to zero; the poll is then woken by the next write all the same.
        let _ = self.waker.wake();
    }

    /// Registers `source` for `interest`; the returned token and state identify it until
    /// [`Driver::deregister`].
    pub(crate) fn register(
        &self,
        source: &mut impl Source,
        interest: mio::Interest,
    ) -> io::Result<(usize, Arc<ScheduledIo>)> {
        let io = Arc::new(ScheduledIo::default());
        let token = self.sources.insert(io.clone())?;
        if let Err(e) = self.os.register(source, mio::Token(token), interest) {
            self.sources.remove(token);
            return Err(e);
        }
        Ok((token, io))
    }

    /// Deregisters `source`, registered as `token`: events still on their way for it are
    /// dropped.
    pub(crate) fn deregister(&self, source: &mut impl Source, token: usize) {
        // Fails only if the source was never registered, or its descriptor is already
        // closed (which deregistered it); either way there is nothing left to undo.
        let _ = self.os.deregister(source);
        self.sources.remove(token);
    }
}

/// The driver, held by one thread for one poll.
pub(crate) struct Turn<'a> {
    driver: &'a Driver,
    poller: MutexGuard<'a, Poller>,
}

impl Turn<'_> {
    /// Waits for readiness events for at most `timeout` (`None`: until one comes or
    /// [`Driver::wake`]), and records them. The tasks they satisfy are woken by
    /// [`Turn::finish`].
    pub(crate) fn poll(&mut self, timeout: Option<Duration>) {
        let p = &mut *self.poller;
        p.tick = p.tick.wrapping_add(1);
        let blocking = timeout != Some(Duration::ZERO);
        if blocking {
            self.driver.blocking.store(true, Ordering::Relaxed);
        }
        let polled = p.poll.poll(&mut p.events, timeout);
        if blocking {
            self.driver.blocking.store(false, Ordering::Relaxed);
        }
        if let Err(e) = polled {
            if e.kind() == io::ErrorKind::Interrupted {
                return;
            }
            panic!("ito: polling the I/O driver failed: {e}");
        }
        let events = p
            .events
            .iter()
            .filter(|e| e.token().0 != WAKE_TOKEN)
            .map(|e| (e.token().0, Ready::from_event(e)));
        self.driver.sources.dispatch(p.tick, events, &mut p.wake);
    }

    /// Lets go of the driver, then wakes the tasks the poll found ready (so that another
    /// thread may take the driver meanwhile). Returns how many it woke.
    pub(crate) fn finish(mut self) -> usize {
        let mut wake = std::mem::take(&mut self.poller.wake);
        drop(self.poller);
        let n = wake.len();
        for w in wake.drain(..) {
            w.wake();
        }
        // Give the buffer back for the next turn, if nobody took the driver meanwhile.
        if let Ok(mut p) = self.driver.poller.try_lock() {
            if p.wake.capacity() == 0 {
                p.wake = wake;
            }
        }
        n
    }
}

/// A runtime's driver, started by its first registration.
#[derive(Default, Debug)]
pub(crate) struct Slot {
    driver: OnceLock<Driver>,
    /// Serialises the start, so a failed start can be retried (`OnceLock` has no fallible
    /// init on stable Rust).
    starting: Mutex<()>,
}

impl Slot {
    /// The driver, if started.
    #[inline]
    pub(crate) fn get(&self) -> Option<&Driver> {
        self.driver.get()
    }

    /// The driver, started now if it was not; `started` runs once, after a start.
    pub(crate) fn get_or_start(&self, started: impl FnOnce()) -> io::Result<&Driver> {
        if let Some(d) = self.driver.get() {
            return Ok(d);
        }
        let _g = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = self.driver.get() {
            return Ok(d);
        }
        // Nobody else sets it: we hold `starting`, and it was empty.
        let _ = self.driver.set(Driver::new()?);
        started();
        Ok(self.driver.get().expect("set above"))
    }
}
