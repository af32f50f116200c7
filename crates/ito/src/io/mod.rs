//! The I/O driver: readiness of OS sources (sockets), polled by runtime threads that have
//! nothing else to do. The design, and why no readiness event is lost, are in `docs/io.md`.
//!
//! | file | concept |
//! |---|---|
//! | `ready.rs` | readiness bits, and the direction (read or write) a task waits on |
//! | `scheduled.rs` | one source's readiness word and waiting tasks: the state machine, and the loop that runs an operation until it does not block |
//! | `registry.rs` | the driver's table of sources, by token with a generation |
//! | `driver.rs` | the OS poller (`mio::Poll`), its waker, and the runtime's lazily started slot |
//! | `evented.rs` | a registered source: an operation on it async, synchronous, or without waiting |
//!
//! Where the driver is polled: `runtime/park/parker.rs` (an idle thread blocks in it) and
//! `runtime/worker.rs` (a running worker polls it without blocking every `IO_INTERVAL`
//! tasks).

// Under loom only the models use the state machines.
#![cfg_attr(loom, allow(dead_code))]

#[cfg(not(loom))]
mod driver;
#[cfg(not(loom))]
mod evented;
pub(crate) mod ready;
pub(crate) mod registry;
pub(crate) mod scheduled;

#[cfg(not(loom))]
pub(crate) use driver::{Driver, Slot};
#[cfg(not(loom))]
pub(crate) use evented::Evented;
pub(crate) use ready::Direction;
