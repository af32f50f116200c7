//! A source registered with a runtime's driver: the OS object, its readiness, and an operation
//! on it run async, synchronously, or once without waiting.
//!
//! Every socket of `net/` wraps one [`Evented`]. An operation is tried when the source was
//! last seen ready; if it would block, the readiness it saw is cleared
//! ([`ScheduledIo::clear_readiness`]) and the caller waits for the next event (the loop is
//! [`ScheduledIo::poll_io`]). An async caller waits through its task's waker; a synchronous one
//! through `block_on_cancellable`, the same path as every blocking call of ito, which never
//! blocks a worker in a system call; a `try_` caller does not wait ([`ScheduledIo::try_io`]).

use std::future::poll_fn;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use mio::event::Source;

use super::driver::{Driver, Slot};
use super::ready::Direction;
use super::scheduled::{ReadyEvent, ScheduledIo};

/// An OS source registered with the current runtime's driver for reads and writes;
/// deregistered when dropped.
pub(crate) struct Evented<S: Source> {
    /// `None` only once [`Evented::into_inner`] or drop took it.
    source: Option<S>,
    /// The driver it is registered with, kept alive by the source, which may outlive its
    /// runtime.
    slot: Arc<Slot>,
    token: usize,
    io: Arc<ScheduledIo>,
}

impl<S: Source + std::fmt::Debug> std::fmt::Debug for Evented<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Evented").field(&self.source).finish()
    }
}

/// The error a synchronous operation returns when the synchronous task waiting in it is
/// cancelled (not `Interrupted`: `read_exact` and `write_all` would retry that for ever).
fn cancelled() -> io::Error {
    io::Error::other(crate::Failure::Cancelled)
}

impl<S: Source> Evented<S> {
    /// Registers `source` (already non-blocking) with the current runtime's driver, starting
    /// the driver if this is the runtime's first.
    pub(crate) fn new(mut source: S) -> io::Result<Evented<S>> {
        let slot = crate::runtime::current().sleep.io_slot()?;
        let interest = mio::Interest::READABLE | mio::Interest::WRITABLE;
        let (token, io) = driver(&slot).register(&mut source, interest)?;
        Ok(Evented {
            source: Some(source),
            slot,
            token,
            io,
        })
    }

    /// The OS object.
    #[inline]
    pub(crate) fn source(&self) -> &S {
        self.source.as_ref().expect("present until dropped")
    }

    /// Waits until the source is ready for `dir` (or closed, or in error). Cancel safe: it
    /// consumes nothing; a dropped wait leaves a waker that the next event wakes once.
    pub(crate) async fn ready(&self, dir: Direction) -> ReadyEvent {
        poll_fn(|cx| self.io.poll_ready(cx, dir)).await
    }

    /// An operation that `ev` allowed would block: waits for the next event.
    pub(crate) fn clear_readiness(&self, ev: ReadyEvent) {
        self.io.clear_readiness(ev);
    }

    /// Runs `op` once if the source was last seen ready for `dir`, without waiting
    /// ([`ScheduledIo::try_io`]): `WouldBlock` if it was not, or if `op` would block, and then
    /// the next wait for `dir` waits for a new event.
    pub(crate) fn try_io<R>(
        &self,
        dir: Direction,
        op: impl FnOnce(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        self.io.try_io(dir, || op(self.source()))
    }

    /// Runs `op` once the source is ready for `dir`, until it does not block
    /// ([`ScheduledIo::poll_io`]). `Pending` registers `cx`; `op` has then consumed nothing (it
    /// would have blocked).
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.io.poll_io(cx, dir, || op(self.source()))
    }

    /// [`Evented::poll_io`] for a stream transfer of `len` bytes: one that moves fewer (but
    /// some) used the readiness up ([`ScheduledIo::poll_io_clearing`]).
    pub(crate) fn poll_transfer(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        len: usize,
        mut op: impl FnMut(&S) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.io
            .poll_io_clearing(cx, dir, || op(self.source()), |&n| n > 0 && n < len)
    }

    /// [`Evented::poll_io`] as an `async` call.
    pub(crate) async fn io<R>(
        &self,
        dir: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        poll_fn(|cx| self.poll_io(cx, dir, &mut op)).await
    }

    /// Runs `op` until it does not block, waiting for readiness the way ito's blocking calls
    /// wait (`block_on_cancellable`): a cancelled synchronous task gets an error.
    pub(crate) fn blocking_io<R>(
        &self,
        dir: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        // Ready already (the common case when data is flowing): no waiting machinery.
        match self.try_io(dir, &mut op) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            r => return r,
        }
        crate::runtime::block_on_cancellable(self.io(dir, op)).unwrap_or_else(|_| Err(cancelled()))
    }
}

impl<S: Source> Drop for Evented<S> {
    fn drop(&mut self) {
        if let Some(mut source) = self.source.take() {
            driver(&self.slot).deregister(&mut source, self.token);
            self.io.clear_waiters();
        }
    }
}

/// The driver of a slot that `Sleep::io_slot` started.
fn driver(slot: &Slot) -> &Driver {
    slot.get()
        .expect("ito: the I/O driver is started before a source registers")
}
