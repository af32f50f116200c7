//! The I/O readiness state machine (`io::scheduled`), the driver's table of sources
//! (`io::registry`) and the parker's hand-over to the driver (`runtime::park::PollPark`), run
//! as they ship. A task waits with loom's `block_on`, so a lost wake-up is a deadlock loom
//! reports.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use loom::sync::{Condvar, Mutex};
use loom::thread;

use crate::io::Direction;
use crate::io::ready::Ready;
use crate::io::registry::Registry;
use crate::io::scheduled::ScheduledIo;
use crate::runtime::park::PollPark;

use super::loom_sync::block_on;

/// What the driver does for one event: records it, then wakes what it satisfied.
fn driver_event(registry: &Registry, token: usize, tick: u16, ready: Ready) {
    let mut wake = Vec::new();
    registry.dispatch(tick, [(token, ready)], &mut wake);
    for w in wake {
        w.wake();
    }
}

/// A task waits until its source is ready for `dir`.
fn wait_ready(io: &ScheduledIo, dir: Direction) -> Ready {
    block_on(poll_fn(|cx| io.poll_ready(cx, dir))).ready
}

/// A readiness event races a task that finds nothing ready and registers its interest: the
/// task is woken, or sees the event.
#[test]
fn loom_io_readiness_racing_registration_of_interest() {
    loom::model(|| {
        let registry = Arc::new(Registry::default());
        let io = Arc::new(ScheduledIo::default());
        let token = registry.insert(io.clone()).unwrap();
        // The waiter runs on a thread of its own: a wake-up after its wait returned would
        // otherwise reach the main thread inside `join`, which loom does not allow.
        let waiter = thread::spawn(move || wait_ready(&io, Direction::Read));
        driver_event(&registry, token, 1, Ready::READABLE);
        assert_eq!(waiter.join().unwrap(), Ready::READABLE);
    });
}

/// A reader and a writer of one source wait apart: a write event wakes the writer, a read
/// event the reader, whatever the order.
#[test]
fn loom_io_reader_and_writer_wait_apart() {
    loom::model(|| {
        let registry = Arc::new(Registry::default());
        let io = Arc::new(ScheduledIo::default());
        let token = registry.insert(io.clone()).unwrap();
        let w = io.clone();
        let writer = thread::spawn(move || wait_ready(&w, Direction::Write));
        let reader = thread::spawn(move || wait_ready(&io, Direction::Read));
        driver_event(&registry, token, 1, Ready::WRITABLE);
        driver_event(&registry, token, 2, Ready::READABLE);
        assert_eq!(reader.join().unwrap(), Ready::READABLE);
        assert_eq!(writer.join().unwrap(), Ready::WRITABLE);
    });
}

/// A socket of one counter for the models below: a read takes the counter, and would block
/// at zero (under a lock: loom lets a swap of an atomic read a value older than one this
/// thread has seen through a lock, which no C++ execution allows).
fn counter_read(socket: &Mutex<usize>) -> std::io::Result<usize> {
    match std::mem::take(&mut *socket.lock().unwrap()) {
        0 => Err(std::io::ErrorKind::WouldBlock.into()),
        n => Ok(n),
    }
}

/// A registered source whose readiness is stale (an event whose data a read already took),
/// and its socket at zero; `reader` reads it in a thread of its own. Then new data and its
/// event arrive: the reader must return it, never wait for ever.
fn stale_readiness_then_new_data(
    reader: impl FnOnce(&ScheduledIo, &Mutex<usize>) -> usize + Send + 'static,
) {
    let registry = Arc::new(Registry::default());
    let io = Arc::new(ScheduledIo::default());
    let token = registry.insert(io.clone()).unwrap();
    driver_event(&registry, token, 1, Ready::READABLE);
    let socket = Arc::new(Mutex::new(0));
    let s = socket.clone();
    let reader = thread::spawn(move || reader(&io, &s));
    *socket.lock().unwrap() = 1;
    driver_event(&registry, token, 2, Ready::READABLE);
    assert_eq!(reader.join().unwrap(), 1);
}

/// An operation that would block clears the readiness it saw while new data and its event
/// arrive: the event is kept (its tick differs), or it comes after the clear and wakes the
/// task. The task runs `ScheduledIo::poll_io`, the loop of every async read.
#[test]
fn loom_io_clear_after_would_block_racing_a_new_event() {
    loom::model(|| {
        stale_readiness_then_new_data(|io, s| {
            block_on(poll_fn(|cx| {
                io.poll_io(cx, Direction::Read, || counter_read(s))
            }))
            .unwrap()
        });
    });
}

/// A stream read that got fewer bytes than it asked for clears the readiness it ran on
/// (`ScheduledIo::poll_io_clearing`, as every async stream read and write does) while new data
/// and its event arrive: the event is kept (its tick differs), or comes after the clear and
/// wakes the task, so the reader gets every byte. Here every successful read counts as one
/// that used the readiness up.
#[test]
fn loom_io_a_transfer_that_used_up_readiness_racing_a_new_event() {
    loom::model(|| {
        let registry = Arc::new(Registry::default());
        let io = Arc::new(ScheduledIo::default());
        let token = registry.insert(io.clone()).unwrap();
        let socket = Arc::new(Mutex::new(1));
        driver_event(&registry, token, 1, Ready::READABLE);
        let s = socket.clone();
        let reader = thread::spawn(move || {
            let mut got = 0;
            while got < 2 {
                got += block_on(poll_fn(|cx| {
                    io.poll_io_clearing(cx, Direction::Read, || counter_read(&s), |_| true)
                }))
                .unwrap();
            }
            got
        });
        *socket.lock().unwrap() += 1;
        driver_event(&registry, token, 2, Ready::READABLE);
        assert_eq!(reader.join().unwrap(), 2);
    });
}

/// The same race for a task that waits with `readable` and reads with `try_read`
/// (`ScheduledIo::poll_ready`, then `ScheduledIo::try_io`): a `WouldBlock` clears only the
/// stale readiness, so the wait after it sees the new event.
#[test]
fn loom_io_try_io_would_block_racing_a_new_event() {
    loom::model(|| {
        stale_readiness_then_new_data(|io, s| {
            loop {
                wait_ready(io, Direction::Read);
                match io.try_io(Direction::Read, || counter_read(s)) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    r => return r.unwrap(),
                }
            }
        });
    });
}

/// A source whose readiness (tick 1) is stale, and an operation on it whose system call
/// sees nothing and returns `WouldBlock` while an event (tick 2) arrives: the driver's
/// `set_readiness` runs inside the operation, after the call has looked.
///
/// The models above race the same event, but loom's search does not reach this order: it
/// weighs the driver's compare-exchange only against the last access to the word, which is
/// the driver's own load just before it, and that load only against stores. The task's
/// loads after its operation are thus never scheduled after the driver's store.
fn event_during_would_block(
    attempt: impl FnOnce(&ScheduledIo, &mut dyn FnMut() -> std::io::Result<usize>),
) {
    let io = ScheduledIo::default();
    io.set_readiness(1, Ready::READABLE, &mut Vec::new());
    let mut attempts = 0;
    let io_ref = &io;
    attempt(&io, &mut || {
        attempts += 1;
        if attempts == 1 {
            io_ref.set_readiness(2, Ready::READABLE, &mut Vec::new());
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        Ok(attempts)
    });
}

/// `try_io` clears only what it saw (tick 1): the event that came during its attempt is
/// left for the next wait.
#[test]
fn loom_io_try_io_keeps_an_event_that_came_during_its_attempt() {
    loom::model(|| {
        event_during_would_block(|io, op| {
            let r = io.try_io(Direction::Read, op);
            assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert_eq!(
                io.ready_now(Direction::Read).map(|e| e.ready),
                Some(Ready::READABLE),
                "try_io cleared an event that came during its attempt"
            );
        });
    });
}

/// `poll_io` clears only what it saw, and tries again at once instead of waiting for an
/// event that has already come.
#[test]
fn loom_io_poll_io_retries_after_an_event_that_came_during_its_attempt() {
    loom::model(|| {
        event_during_would_block(|io, op| {
            let polled = io.poll_io(&mut Context::from_waker(Waker::noop()), Direction::Read, op);
            assert!(
                matches!(polled, Poll::Ready(Ok(2))),
                "poll_io waited for an event that came during its attempt"
            );
        });
    });
}

/// Closed and error bits survive a clear: a reader after a peer's close sees it at once.
#[test]
fn loom_io_closed_survives_a_clear() {
    loom::model(|| {
        let io = ScheduledIo::default();
        let mut wake = Vec::new();
        io.set_readiness(1, Ready::READABLE.union(Ready::READ_CLOSED), &mut wake);
        let ev = io.ready_now(Direction::Read).unwrap();
        io.clear_readiness(ev);
        assert_eq!(
            io.ready_now(Direction::Read).map(|e| e.ready),
            Some(Ready::READ_CLOSED)
        );
    });
}

/// A registration dropped while an event for it is dispatched: the event either reaches the
/// old source (still alive through its `Arc`) or is dropped; it never reaches a new source
/// that reuses the slot.
#[test]
fn loom_io_dropped_registration() {
    loom::model(|| {
        let registry = Arc::new(Registry::default());
        let old = Arc::new(ScheduledIo::default());
        let token = registry.insert(old.clone()).unwrap();
        let r = registry.clone();
        let driver = thread::spawn(move || driver_event(&r, token, 1, Ready::READABLE));
        registry.remove(token);
        drop(old);
        let new = Arc::new(ScheduledIo::default());
        let new_token = registry.insert(new.clone()).unwrap();
        assert_ne!(new_token, token, "a reused slot gets a new generation");
        driver.join().unwrap();
        assert_eq!(
            new.ready_now(Direction::Read),
            None,
            "a stale event reached it"
        );
        assert_eq!(registry.len(), 1);
        // Removing twice (a stale token) is a no-op.
        registry.remove(token);
        assert_eq!(registry.len(), 1);
    });
}

/// The OS poll a parked thread blocks in, as a flag under a lock.
#[derive(Default)]
struct FakePoll {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl FakePoll {
    fn block(&self) {
        let mut w = self.woken.lock().unwrap();
        while !*w {
            w = self.cv.wait(w).unwrap();
        }
        *w = false;
    }

    fn wake(&self) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

/// An unpark racing a thread that takes the driver and is about to block in its poll: the
/// thread does not block, or the poll is woken.
#[test]
fn loom_io_unpark_racing_a_park_in_the_driver() {
    loom::model(|| {
        let park = Arc::new(PollPark::default());
        let poll = Arc::new(FakePoll::default());
        let (p, o) = (park.clone(), poll.clone());
        let unparker = thread::spawn(move || {
            if p.notify() {
                o.wake();
            }
        });
        if park.enter() {
            poll.block();
            park.leave();
        }
        unparker.join().unwrap();
    });
}
