//! Printing matches: whole lines, never interleaved, as bytes.
//!
//! Each task collects its matches in its own [`Batch`] and hands the batch to the shared
//! writer under one lock, so a line is never split between two writers. A batch is written
//! when it passes [`BATCH_BYTES`], when its task ends, and after every match when stdout is a
//! terminal (someone is watching). `--max-results` is counted here: each match takes a
//! number; the one that takes the last number stops the walk, and later ones are dropped.
//! A write that fails with `EPIPE` (the reader is gone: `| head -1`) closes the output
//! quietly and stops the walk; any other write error is reported once.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::report::Reporter;

/// A batch is written once it holds this many bytes.
pub(crate) const BATCH_BYTES: usize = 32 * 1024;

/// Whether the walk goes on after a match.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep walking.
    Continue,
    /// Stop the walk: the limit is reached or nobody reads the output any more.
    Stop,
}

/// Where matches go.
pub(crate) struct Output {
    sink: Mutex<Box<dyn Write + Send>>,
    terminator: u8,
    flush_each: bool,
    limit: u64,
    /// `--sort`: matches are kept here and printed at the end.
    sorted: Option<Mutex<Vec<Box<[u8]>>>>,
    /// Matches found (numbers taken; may pass `limit` when tasks race).
    count: AtomicU64,
    /// The output failed or its reader went away; nothing more is written.
    closed: AtomicBool,
}

/// One task's matches not yet written.
#[derive(Default)]
pub(crate) struct Batch {
    buf: Vec<u8>,
}

impl Output {
    /// Matches go to `sink`, each ended by `terminator`; `flush_each` writes each match at
    /// once; at most `limit` matches are printed; `sort` holds them back until
    /// [`finish`](Self::finish).
    pub(crate) fn new(
        sink: Box<dyn Write + Send>,
        terminator: u8,
        flush_each: bool,
        limit: Option<u64>,
        sort: bool,
    ) -> Output {
        Output {
            sink: Mutex::new(sink),
            terminator,
            flush_each,
            limit: limit.unwrap_or(u64::MAX),
            sorted: sort.then(|| Mutex::new(Vec::new())),
            count: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Records the match `prefix` + `name`.
    #[inline]
    pub(crate) fn emit(
        &self,
        batch: &mut Batch,
        prefix: &[u8],
        name: &[u8],
        report: &Reporter,
    ) -> Flow {
        if let Some(sorted) = &self.sorted {
            self.count.fetch_add(1, Ordering::Relaxed);
            let path = [prefix, name].concat().into_boxed_slice();
            lock(sorted).push(path);
            return Flow::Continue;
        }
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        if n >= self.limit {
            return Flow::Stop;
        }
        batch.buf.extend_from_slice(prefix);
        batch.buf.extend_from_slice(name);
        batch.buf.push(self.terminator);
        let last = n + 1 == self.limit;
        if (last || self.flush_each || batch.buf.len() >= BATCH_BYTES)
            && self.write(batch, report) == Flow::Stop
        {
            return Flow::Stop;
        }
        if last { Flow::Stop } else { Flow::Continue }
    }

    /// Writes what `batch` holds.
    pub(crate) fn write(&self, batch: &mut Batch, report: &Reporter) -> Flow {
        if batch.buf.is_empty() {
            return Flow::Continue;
        }
        let flow = self.write_bytes(&batch.buf, report);
        batch.buf.clear();
        flow
    }

    fn write_bytes(&self, bytes: &[u8], report: &Reporter) -> Flow {
        let mut sink = lock(&self.sink);
        if self.closed.load(Ordering::Relaxed) {
            return Flow::Stop;
        }
        match sink.write_all(bytes).and_then(|()| sink.flush()) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.closed.store(true, Ordering::Relaxed);
                if e.kind() != io::ErrorKind::BrokenPipe {
                    report.error_message(&format!("cannot write the output: {e}"));
                }
                Flow::Stop
            }
        }
    }

    /// Prints the held-back matches of `--sort` (sorted, at most `limit`); returns how many
    /// matches the search found, counting at most `limit`.
    pub(crate) fn finish(&self, report: &Reporter) -> u64 {
        if let Some(sorted) = &self.sorted {
            let mut all = std::mem::take(&mut *lock(sorted));
            all.sort_unstable();
            all.truncate(usize::try_from(self.limit).unwrap_or(usize::MAX));
            let mut batch = Batch::default();
            for path in &all {
                batch.buf.extend_from_slice(path);
                batch.buf.push(self.terminator);
                if batch.buf.len() >= BATCH_BYTES && self.write(&mut batch, report) == Flow::Stop {
                    break;
                }
            }
            let _ = self.write(&mut batch, report);
        }
        self.count.load(Ordering::Relaxed).min(self.limit)
    }

    /// Whether the output was closed by its reader (`EPIPE`) or failed.
    pub(crate) fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// A writer into a buffer shared with its clones ([`Search::run_into`](crate::Search)).
#[derive(Clone, Default)]
pub(crate) struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Takes what was written so far.
    pub(crate) fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *lock(&self.0))
    }
}

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        lock(&self.0).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Locks `m`, ignoring poisoning: a panicking holder leaves at worst a partial line.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink whose reader is gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn reporter() -> (Reporter, SharedBuf) {
        let err = SharedBuf::default();
        (Reporter::new(Box::new(err.clone())), err)
    }

    #[test]
    fn limit_stops_and_drops_the_rest() {
        let sink = SharedBuf::default();
        let out = Output::new(Box::new(sink.clone()), b'\n', false, Some(2), false);
        let (rep, _) = reporter();
        let mut b = Batch::default();
        assert_eq!(out.emit(&mut b, b"d/", b"a", &rep), Flow::Continue);
        assert_eq!(out.emit(&mut b, b"d/", b"b", &rep), Flow::Stop);
        assert_eq!(out.emit(&mut b, b"d/", b"c", &rep), Flow::Stop);
        let _ = out.write(&mut b, &rep);
        assert_eq!(&*lock(&sink.0), b"d/a\nd/b\n");
        assert_eq!(out.finish(&rep), 2);
    }

    #[test]
    fn batches_until_flushed_unless_flush_each() {
        let (rep, _) = reporter();
        for each in [false, true] {
            let sink = SharedBuf::default();
            let out = Output::new(Box::new(sink.clone()), 0, each, None, false);
            let mut b = Batch::default();
            assert_eq!(out.emit(&mut b, b"", b"x", &rep), Flow::Continue);
            assert_eq!(lock(&sink.0).len(), if each { 2 } else { 0 });
            let _ = out.write(&mut b, &rep);
            assert_eq!(&*lock(&sink.0), b"x\0");
        }
    }

    #[test]
    fn sort_holds_back_and_truncates() {
        let sink = SharedBuf::default();
        let out = Output::new(Box::new(sink.clone()), b'\n', true, Some(2), true);
        let (rep, _) = reporter();
        let mut b = Batch::default();
        for n in [b"c", b"a", b"b"] {
            assert_eq!(out.emit(&mut b, b"", n, &rep), Flow::Continue);
        }
        assert!(lock(&sink.0).is_empty());
        assert_eq!(out.finish(&rep), 2);
        assert_eq!(&*lock(&sink.0), b"a\nb\n");
    }

    #[test]
    fn broken_pipe_closes_quietly() {
        let out = Output::new(Box::new(Closed), b'\n', true, None, false);
        let (rep, err) = reporter();
        let mut b = Batch::default();
        assert_eq!(out.emit(&mut b, b"", b"x", &rep), Flow::Stop);
        assert!(out.closed());
        assert!(lock(&err.0).is_empty());
        assert_eq!(rep.errors(), 0);
    }
}
