//! The process-wide STM state: the version clock and the serial-mode flag.

use crate::loom::{AtomicBool, AtomicU64};

/// Process-wide STM state, on a cache line of its own (readers write the clock; no unrelated
/// static should pay for that).
#[repr(align(64))]
pub(crate) struct Global {
    /// The version clock: the version of the newest commit.
    pub(crate) clock: AtomicU64,
    /// A transaction runs in serial mode: other committers abort until it is done.
    pub(crate) serial: AtomicBool,
}

impl Global {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Global {
        Global {
            clock: AtomicU64::new(0),
            serial: AtomicBool::new(false),
        }
    }

    #[cfg(all(loom, test))]
    pub(crate) fn new() -> Global {
        Global {
            clock: AtomicU64::new(0),
            serial: AtomicBool::new(false),
        }
    }
}
