//! The one place the walk's atomic state machine ([`Tally`](crate::walk::tally::Tally)) gets
//! its primitives from: [loom](https://docs.rs/loom)'s model-checked versions under
//! `RUSTFLAGS="--cfg loom"`, the `std` ones otherwise (the pattern of `ito::loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
