//! The buffer a [`File`](super::File) moves between the caller and its blocking job.
//!
//! It holds either bytes read ahead that the caller has not taken yet, or bytes the caller
//! wrote that a job is writing: one operation is in flight at a time, so never both.

use std::io::{self, IoSlice, Read, Write};

/// The most bytes one blocking read or write moves (as tokio's `File`): a larger write
/// returns a short count and the caller writes the rest next.
pub(super) const MAX_BUF: usize = 2 * 1024 * 1024;

#[derive(Debug, Default)]
pub(super) struct Buf {
    bytes: Vec<u8>,
    /// How many of `bytes` the caller has already taken.
    taken: usize,
}

impl Buf {
    pub(super) fn len(&self) -> usize {
        self.bytes.len() - self.taken
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands read-ahead bytes to the caller; returns how many.
    pub(super) fn copy_to(&mut self, dst: &mut [u8]) -> usize {
        let n = dst.len().min(self.len());
        dst[..n].copy_from_slice(&self.bytes[self.taken..self.taken + n]);
        self.taken += n;
        if self.taken == self.bytes.len() {
            self.clear();
        }
        n
    }

    /// Takes up to [`MAX_BUF`] bytes of `src` to write; returns how many.
    pub(super) fn copy_from(&mut self, src: &[u8]) -> usize {
        debug_assert!(self.is_empty());
        let n = src.len().min(MAX_BUF);
        self.clear();
        self.bytes.extend_from_slice(&src[..n]);
        n
    }

    /// Takes up to [`MAX_BUF`] bytes of `bufs`, in order, to write; returns how many.
    pub(super) fn copy_from_bufs(&mut self, bufs: &[IoSlice<'_>]) -> usize {
        debug_assert!(self.is_empty());
        self.clear();
        for b in bufs {
            let room = MAX_BUF - self.bytes.len();
            let n = b.len().min(room);
            self.bytes.extend_from_slice(&b[..n]);
            if n < b.len() {
                break;
            }
        }
        self.bytes.len()
    }

    /// Reads up to `max` bytes from `r` into the empty buffer (on the blocking pool).
    pub(super) fn read_from(&mut self, r: &mut impl Read, max: usize) -> io::Result<usize> {
        debug_assert!(self.is_empty());
        self.clear();
        self.bytes.resize(max, 0);
        let res = loop {
            match r.read(&mut self.bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                res => break res,
            }
        };
        self.bytes.truncate(*res.as_ref().unwrap_or(&0));
        res
    }

    /// Writes every byte to `w` (on the blocking pool) and empties the buffer, whether or not
    /// the write succeeded: a failed write is reported, not retried.
    pub(super) fn write_to(&mut self, w: &mut impl Write) -> io::Result<()> {
        let res = w.write_all(&self.bytes[self.taken..]);
        self.clear();
        res
    }

    /// Drops the unread read-ahead bytes and returns the (negative) offset that moves the
    /// OS file position back to where the caller stands.
    pub(super) fn discard_read(&mut self) -> i64 {
        // A buffer holds at most `MAX_BUF` bytes, far below `i64::MAX`.
        let back = -(self.len() as i64);
        self.clear();
        back
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.taken = 0;
    }
}
