//! Recording a runtime's scheduler timeline, for Perfetto or `chrome://tracing`.
//!
//! Tracing is off by default. [`Builder::trace`](crate::Builder::trace) turns it on for one
//! runtime, and the environment variable `ITO_TRACE=path` for the global runtime. A traced
//! runtime records, per thread, every run of a task, spawn, wake-up, steal, park, block,
//! compensation thread, blocking-pool job, fork-join exposure, steal and run of a stolen job,
//! and batch of fired timers, plus the user's [`event`]s and [`span`]s, and writes them to its
//! file in Chrome's trace-event JSON format when it is dropped, or on
//! [`Runtime::write_trace`](crate::Runtime::write_trace) or [`write()`]. A task spawned with
//! [`named`](crate::named) shows its name on its runs. The design, the event list and the cost
//! are in [`design::trace`](crate::design::trace).
//!
//! ```
//! let path = std::env::temp_dir().join(format!("ito-trace-doc-{}.json", std::process::id()));
//! let rt = ito::Runtime::builder().workers(2).trace(&path).build().unwrap();
//! rt.block_on(async {
//!     let _s = ito::trace::span("setup");
//!     ito::trace::event("started");
//! });
//! drop(rt); // writes the file
//! let json = std::fs::read_to_string(&path).unwrap();
//! assert!(json.contains("\"user: started\""));
//! # std::fs::remove_file(&path).ok();
//! ```

mod buffer;
mod chrome;
mod clock;
mod event;
mod hooks;
mod raw;
mod recorder;

#[cfg(loom)]
pub(crate) use buffer::ThreadBuf;
pub(crate) use event::{FROM_INJECTOR, Kind, Why};
pub(crate) use hooks::{Run, task_id};
pub(crate) use recorder::Recorder;

use std::io;

/// The recorder of the runtime this thread works for or has entered (or the global one, if
/// it runs), if that runtime is traced.
pub(crate) fn current() -> Option<&'static Recorder> {
    crate::runtime::current_if_started().and_then(|s| s.trace)
}

/// Records an instant event named `name` on this thread's track, if the current runtime is
/// traced (the runtime this thread works for, or has entered with `block_on`, or else the
/// global runtime). Costs a thread-local look-up when it is not.
///
/// ```
/// ito::trace::event("checkpoint"); // a no-op: nothing is traced here
/// ```
pub fn event(name: &'static str) {
    if let Some(r) = current() {
        r.record(Kind::User { name });
    }
}

/// Starts a span named `name`, recorded when the returned guard drops (on whichever thread
/// drops it), if the current runtime is traced (see [`event`]).
///
/// ```
/// let rt = ito::Runtime::builder().workers(1).build().unwrap();
/// let n = rt.block_on(async {
///     let _span = ito::trace::span("sum");
///     (1..=10).sum::<u32>()
/// });
/// assert_eq!(n, 55);
/// ```
#[must_use = "the span ends when the guard drops"]
pub fn span(name: &'static str) -> Span {
    Span {
        open: current().map(|r| (r, r.now())),
        name,
    }
}

/// A span in progress; see [`span`].
///
/// ```
/// let s = ito::trace::span("work");
/// drop(s); // the span ends here
/// ```
#[derive(Debug)]
pub struct Span {
    open: Option<(&'static Recorder, u64)>,
    name: &'static str,
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some((r, start)) = self.open {
            r.record(Kind::Span {
                name: self.name,
                start,
            });
        }
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path())
            .finish()
    }
}

/// Writes what the current runtime (see [`event`]) recorded so far to its trace file, for a
/// program on the global runtime traced with `ITO_TRACE` (which is never dropped). Events
/// recorded while it writes may be left out. Fails with [`io::ErrorKind::InvalidInput`] if
/// the current runtime is not traced.
///
/// ```
/// let err = ito::trace::write().unwrap_err(); // nothing traced here
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
pub fn write() -> io::Result<()> {
    match current() {
        Some(r) => r.write(),
        None => Err(not_traced()),
    }
}

/// The error for writing the trace of a runtime that is not traced.
pub(crate) fn not_traced() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "ito: this runtime is not traced (see Builder::trace and ITO_TRACE)",
    )
}
