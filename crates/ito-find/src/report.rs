//! Reporting errors: one line each on stderr, `ito-find: PATH: what`, the path as bytes.
//! An error never stops the search; it only makes the exit status 2.

use std::fmt::Display;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::output::lock;

/// Counts errors and writes them, whole lines under one lock.
pub(crate) struct Reporter {
    sink: Mutex<Box<dyn Write + Send>>,
    errors: AtomicU64,
}

impl Reporter {
    /// Errors go to `sink`.
    pub(crate) fn new(sink: Box<dyn Write + Send>) -> Reporter {
        Reporter {
            sink: Mutex::new(sink),
            errors: AtomicU64::new(0),
        }
    }

    /// Reports `what` about `path`.
    #[cold]
    pub(crate) fn error(&self, path: &[u8], what: &dyn Display) {
        let mut line = b"ito-find: ".to_vec();
        line.extend_from_slice(path);
        line.extend_from_slice(format!(": {what}\n").as_bytes());
        self.emit(&line);
    }

    /// Reports an error that is about no path.
    #[cold]
    pub(crate) fn error_message(&self, what: &str) {
        self.emit(format!("ito-find: {what}\n").as_bytes());
    }

    fn emit(&self, line: &[u8]) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut sink = lock(&self.sink);
        // Nowhere left to report a failure to write to stderr; the count still makes the
        // exit status 2.
        let _ = sink.write_all(line).and_then(|()| sink.flush());
    }

    /// Errors reported so far.
    pub(crate) fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}
