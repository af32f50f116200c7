//! Signals for async code: [`ctrl_c`], and any Unix signal through [`unix::signal`], so that
//! a server can shut down gracefully (tokio's `signal`).
//!
//! Handlers are installed by `signal-hook` (whose registry, `signal-hook-registry`, tokio
//! installs its own handlers through): its handler does only what is async-signal-safe (it marks the signal pending and writes to
//! a self-pipe), it chains with handlers other crates install through it, and it refuses the
//! signals that must not be caught. One process-wide thread, started on the first
//! registration, reads the pipe and wakes every listener through an ito
//! [`watch`](crate::sync::watch) channel per signal. `docs/fs-and-signals.md` has the
//! design.
//!
//! Listening for a signal replaces its default action for the rest of the process: after
//! [`ctrl_c`], Ctrl-C no longer kills the program, which must exit by itself.
//!
//! ```no_run
//! ito::block_on(async {
//!     let server = ito::spawn(async { /* serve until cancelled */ });
//!     ito::signal::ctrl_c().await.expect("listen for Ctrl-C");
//!     server.abort(); // then drain, flush, and return from main
//! });
//! ```

mod registry;
pub mod unix;

use std::future::Future as StdFuture;
use std::io;

/// Completes on the next `SIGINT` (Ctrl-C) delivered after this call.
///
/// The listener is registered when `ctrl_c` is called, not when the future is first polled:
/// a `SIGINT` that comes between the two is not missed. Registering fails only if the
/// handler cannot be installed (the signal thread or its pipe could not be created); the
/// error then comes out of the future.
///
/// Cancel-safe: dropping the future drops its listener and loses nothing; a later call sees
/// only later signals.
///
/// ```
/// let interrupted = ito::signal::ctrl_c(); // listening from here on
/// signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap(); // the process survives
/// ito::block_on(interrupted).unwrap();
/// ```
pub fn ctrl_c() -> impl StdFuture<Output = io::Result<()>> + Send + 'static {
    let listener = unix::signal(unix::SignalKind::interrupt());
    async move {
        listener?.recv().await;
        Ok(())
    }
}
