//! [`Recorder`]: a traced runtime's clock, its threads' buffers, and where the file goes.

use std::cell::Cell;
use std::io;
use std::path::PathBuf;
use std::ptr;
use std::sync::Mutex;

use super::buffer::ThreadBuf;
use super::chrome;
use super::clock::Clock;
use super::event::{Event, Kind};
use super::raw;

/// A traced runtime's recorder: allocated once, with the runtime, and never freed.
pub(crate) struct Recorder {
    /// Time zero of the trace, and the time source of every record.
    clock: Clock,
    /// The file [`Recorder::write`] writes.
    path: PathBuf,
    /// Every buffer, in the order threads first recorded (their track numbers).
    threads: Mutex<Vec<&'static ThreadBuf>>,
}

thread_local! {
    /// The last recorder this thread recorded to, and its buffer there.
    static LOCAL: Cell<(*const Recorder, *const ThreadBuf)> =
        const { Cell::new((ptr::null(), ptr::null())) };
}

impl Recorder {
    /// A recorder that writes to `path`; leaked, like the runtime it records.
    pub(crate) fn new(path: PathBuf) -> &'static Recorder {
        Box::leak(Box::new(Recorder {
            clock: Clock::new(),
            path,
            threads: Mutex::new(Vec::new()),
        }))
    }

    /// The clock's reading now (ticks, turned into nanoseconds at export).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.ticks()
    }

    /// Appends an event at the current time to this thread's buffer. Out of line: the
    /// runtime calls it behind its check of `Shared::trace`, and the untraced path should not
    /// carry its code.
    #[inline(never)]
    pub(crate) fn record(&'static self, kind: Kind) {
        let buf = self.local();
        match raw::encode(kind) {
            (tag, b, None) => raw::put(buf, self.now(), tag, b),
            (tag, b, Some(more)) => raw::put_wide(buf, self.now(), tag, b, more),
        }
    }

    /// Appends a one-record event at the current time to `buf` (this thread's buffer).
    #[inline]
    pub(crate) fn put(&self, buf: &ThreadBuf, tag: u64, b: u64) {
        raw::put(buf, self.now(), tag, b);
    }

    /// This thread's buffer.
    #[inline]
    pub(crate) fn local(&'static self) -> &'static ThreadBuf {
        let (r, b) = LOCAL.get();
        if ptr::eq(r, self) {
            // SAFETY: buffers are leaked, so never freed; the cache holds only this thread's.
            return unsafe { &*b };
        }
        self.register()
    }

    /// Finds or makes this thread's buffer, and caches it.
    #[cold]
    fn register(&'static self) -> &'static ThreadBuf {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let b = match threads.iter().find(|b| b.is_mine()) {
            Some(b) => *b,
            None => {
                let b: &'static ThreadBuf = Box::leak(Box::new(ThreadBuf::for_current_thread()));
                threads.push(b);
                b
            }
        };
        LOCAL.set((self, b));
        b
    }

    /// Every thread's events published so far: its name and its events, oldest first, with
    /// times in nanoseconds since the recorder started.
    pub(crate) fn snapshot(&self) -> Vec<(String, Vec<Event>)> {
        let threads = self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let scale = self.clock.scale();
        threads
            .iter()
            // SAFETY: every record in a buffer was written by `record` or the hooks.
            .map(|b| (b.name.clone(), unsafe { raw::decode(&b.snapshot(), scale) }))
            .collect()
    }

    /// Writes what was recorded so far to the recorder's file, in Chrome's trace-event
    /// format.
    pub(crate) fn write(&self) -> io::Result<()> {
        let tracks = self.snapshot();
        let file = std::fs::File::create(&self.path)?;
        let mut out = io::BufWriter::new(file);
        chrome::write(&mut out, &tracks)?;
        io::Write::flush(&mut out)
    }

    /// The file this recorder writes.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }
}
