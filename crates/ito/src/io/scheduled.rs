//! The readiness state machine of one registered source: a readiness word the driver sets and
//! tasks clear, and the tasks waiting on each direction.
//!
//! The word holds the ready bits and the tick of the driver turn that last set them. A task
//! that saw readiness, tried its operation and got `WouldBlock` clears only the bits it saw,
//! and only if the tick has not changed since: an event that arrived meanwhile (a new tick) is
//! kept, so the task retries instead of waiting for an edge that already came.
//!
//! A task that finds no readiness registers its waker under the waiters lock and then looks
//! at the word again. The driver sets the word before it takes the same lock to collect the
//! wakers. So either the driver's lock comes after the task's, and it finds the waker, or it
//! came before, and the task's second look (after its own lock) sees the bits. No readiness
//! event is lost between a task's look and its registration (`docs/io.md`).
//!
//! [`ScheduledIo::poll_io`] and [`ScheduledIo::try_io`] run an operation on the source by
//! these rules (the loom models run them as they ship); `io/evented.rs` gives them the OS
//! object.

use std::io;
use std::task::{Context, Poll, Waker};

use super::ready::{Direction, Ready};
use crate::loom::{AtomicUsize, Mutex, Ordering};

/// Bits of the readiness word below the tick.
const TICK_SHIFT: u32 = 16;
/// The tick's bits, once shifted down.
const TICK_MASK: usize = 0xFFFF;

/// What a task saw when it found its source ready: the bits, and the tick that set them (for
/// [`ScheduledIo::clear_readiness`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadyEvent {
    pub(crate) ready: Ready,
    tick: u16,
}

/// Tasks waiting for readiness, per direction. Each is woken once by the next event for its
/// direction; a waker registered again with the same task replaces its old entry.
#[derive(Default)]
struct Waiters {
    reader: Vec<Waker>,
    writer: Vec<Waker>,
}

impl Waiters {
    fn of(&mut self, dir: Direction) -> &mut Vec<Waker> {
        match dir {
            Direction::Read => &mut self.reader,
            Direction::Write => &mut self.writer,
        }
    }
}

/// The readiness of one registered source and the tasks waiting on it.
#[derive(Default)]
pub(crate) struct ScheduledIo {
    /// Ready bits below `TICK_SHIFT`, the tick of the driver turn that last set some above.
    readiness: AtomicUsize,
    waiters: Mutex<Waiters>,
}

impl std::fmt::Debug for ScheduledIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = self.readiness.load(Ordering::Relaxed);
        f.debug_struct("ScheduledIo")
            .field("ready", &Ready::from_bits(word))
            .field("tick", &((word >> TICK_SHIFT) & TICK_MASK))
            .finish()
    }
}

fn event_of(word: usize, dir: Direction) -> Option<ReadyEvent> {
    let ready = Ready::from_bits(word).intersection(dir.mask());
    (!ready.is_empty()).then_some(ReadyEvent {
        ready,
        tick: ((word >> TICK_SHIFT) & TICK_MASK) as u16,
    })
}

impl ScheduledIo {
    /// The driver saw `ready` for this source in its turn `tick`: adds the bits, then moves
    /// the wakers of every direction they satisfy to `wake` (the caller wakes them outside
    /// its locks).
    pub(crate) fn set_readiness(&self, tick: u16, ready: Ready, wake: &mut Vec<Waker>) {
        let mut word = self.readiness.load(Ordering::Relaxed);
        loop {
            let next = ((tick as usize) << TICK_SHIFT) | Ready::from_bits(word).union(ready).bits();
            match self.readiness.compare_exchange_weak(
                word,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for dir in [Direction::Read, Direction::Write] {
            if !ready.intersection(dir.mask()).is_empty() {
                wake.append(waiters.of(dir));
            }
        }
    }

    /// The readiness for `dir` now, if any.
    pub(crate) fn ready_now(&self, dir: Direction) -> Option<ReadyEvent> {
        event_of(self.readiness.load(Ordering::Acquire), dir)
    }

    /// Ready for `dir`, or registers `cx`'s waker to be woken by the next event for `dir`.
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction) -> Poll<ReadyEvent> {
        if let Some(ev) = self.ready_now(dir) {
            return Poll::Ready(ev);
        }
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        let list = waiters.of(dir);
        if !list.iter().any(|w| w.will_wake(cx.waker())) {
            list.push(cx.waker().clone());
        }
        // The second look, after registering: see the module docs.
        let ev = self.ready_now(dir);
        drop(waiters);
        match ev {
            Some(ev) => Poll::Ready(ev),
            None => Poll::Pending,
        }
    }

    /// The operation that `ev` allowed would block: clears the bits `ev` saw, unless an event
    /// has set readiness again since (its tick differs). Closed and error bits stay.
    pub(crate) fn clear_readiness(&self, ev: ReadyEvent) {
        let clear = ev.ready.bits() & !ev.ready.without_clearable().bits();
        let mut word = self.readiness.load(Ordering::Acquire);
        loop {
            if ((word >> TICK_SHIFT) & TICK_MASK) as u16 != ev.tick {
                return;
            }
            match self.readiness.compare_exchange_weak(
                word,
                word & !clear,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }

    /// Runs `op`, which `ev` allowed; if it would block, clears what `ev` saw.
    fn run<R>(&self, ev: ReadyEvent, op: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        let r = op();
        if matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.clear_readiness(ev);
        }
        r
    }

    /// Runs `op` once if the source was last seen ready for `dir`, without waiting.
    /// `WouldBlock` if it was not seen ready, or if `op` would block; in the second case the
    /// readiness it saw is cleared, so the next wait for `dir` waits for a new event.
    pub(crate) fn try_io<R>(
        &self,
        dir: Direction,
        op: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match self.ready_now(dir) {
            Some(ev) => self.run(ev, op),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Runs `op` once the source is ready for `dir`, until it does not block. `Pending`
    /// registers `cx`; `op` has then consumed nothing (it would have blocked).
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_clearing(cx, dir, op, |_| false)
    }

    /// [`ScheduledIo::poll_io`] for an operation whose success can show that it used the
    /// readiness up (`used_up`): then the readiness it ran on is cleared, as after a
    /// `WouldBlock`, and the next call for `dir` waits for the next event instead of making a
    /// system call only to learn that it would block. A stream read that got fewer bytes than
    /// it asked for (but some) drained the socket's buffer, and a write that put fewer than it
    /// had filled it: the driver's edge-triggered poll reports data or room that comes later
    /// as a new event, whose new tick the clear leaves alone (tokio's streams do the same).
    pub(crate) fn poll_io_clearing<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut() -> io::Result<R>,
        used_up: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        loop {
            let ev = match self.poll_ready(cx, dir) {
                Poll::Ready(ev) => ev,
                Poll::Pending => return Poll::Pending,
            };
            match self.run(ev, &mut op) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Ok(r) => {
                    if used_up(&r) {
                        self.clear_readiness(ev);
                    }
                    return Poll::Ready(Ok(r));
                }
                r => return Poll::Ready(r),
            }
        }
    }

    /// Drops every registered waker unwoken (the source is going away; nobody waits on it
    /// any more).
    pub(crate) fn clear_waiters(&self) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *waiters);
        drop(waiters);
        drop(taken);
    }
}
