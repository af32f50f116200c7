//! Readiness: what the OS said a source is ready for, and which half of a source a task waits
//! on.

/// A set of readiness bits, as the driver records them for one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Ready(usize);

impl Ready {
    pub(crate) const EMPTY: Ready = Ready(0);
    pub(crate) const READABLE: Ready = Ready(1);
    pub(crate) const WRITABLE: Ready = Ready(1 << 1);
    pub(crate) const READ_CLOSED: Ready = Ready(1 << 2);
    pub(crate) const WRITE_CLOSED: Ready = Ready(1 << 3);
    pub(crate) const ERROR: Ready = Ready(1 << 4);
    /// Every bit a `Ready` can hold.
    pub(crate) const ALL: Ready = Ready((1 << 5) - 1);
    /// The bits a task clears after its operation would block. The others (closed, error)
    /// stay: once a peer has closed, every later operation must see it.
    const CLEARABLE: Ready = Ready(Ready::READABLE.0 | Ready::WRITABLE.0);

    /// The bits of a readiness word.
    pub(crate) const fn from_bits(bits: usize) -> Ready {
        Ready(bits & Ready::ALL.0)
    }

    pub(crate) const fn bits(self) -> usize {
        self.0
    }

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub(crate) const fn union(self, other: Ready) -> Ready {
        Ready(self.0 | other.0)
    }

    pub(crate) const fn intersection(self, other: Ready) -> Ready {
        Ready(self.0 & other.0)
    }

    /// These bits, less those a task may clear.
    pub(crate) const fn without_clearable(self) -> Ready {
        Ready(self.0 & !Ready::CLEARABLE.0)
    }

    /// The readiness one OS event reports.
    #[cfg(not(loom))]
    pub(crate) fn from_event(e: &mio::event::Event) -> Ready {
        let mut r = Ready::EMPTY;
        if e.is_readable() {
            r = r.union(Ready::READABLE);
        }
        if e.is_writable() {
            r = r.union(Ready::WRITABLE);
        }
        if e.is_read_closed() {
            r = r.union(Ready::READ_CLOSED);
        }
        if e.is_write_closed() {
            r = r.union(Ready::WRITE_CLOSED);
        }
        if e.is_error() {
            r = r.union(Ready::ERROR);
        }
        r
    }
}

/// The half of a source a task waits on. Reads and writes wait apart, so that a reader and a
/// writer of one socket (two halves of a stream, in two tasks) never take each other's
/// wake-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The readiness that lets an operation in this direction go ahead (or fail at once).
    pub(crate) const fn mask(self) -> Ready {
        match self {
            Direction::Read => Ready(Ready::READABLE.0 | Ready::READ_CLOSED.0 | Ready::ERROR.0),
            Direction::Write => Ready(Ready::WRITABLE.0 | Ready::WRITE_CLOSED.0 | Ready::ERROR.0),
        }
    }
}
