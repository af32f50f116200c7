//! The process-wide signal registry: one lazily started thread that receives every signal
//! ito listens for and forwards it to a [`watch`](crate::sync::watch) channel per signal.
//!
//! signal-hook installs the handler, which only does what is async-signal-safe: it marks the
//! signal pending and writes a byte to a self-pipe. The thread blocks reading that pipe
//! (`Signals::forever`) and, for each signal, replaces the value of the signal's watch
//! channel: every [`Signal`](super::unix::Signal) subscribed to it sees one change, and
//! several deliveries before a listener looks coalesce into one, as in tokio. A thread is
//! used because ito has no I/O driver to register the pipe with yet; once one exists, the
//! pipe's read end can be registered there and the thread dropped.

use std::collections::HashMap;
use std::io;
use std::os::raw::c_int;
use std::sync::{Arc, Mutex, MutexGuard};

use signal_hook::consts::FORBIDDEN;
use signal_hook::iterator::{Handle, Signals};

use crate::sync::watch;

/// Above every signal number the OS has (Linux's real-time signals end at 64), and below
/// signal-hook's own limit, past which it panics instead of failing.
const SIGNAL_LIMIT: c_int = 128;

type Senders = HashMap<c_int, watch::Sender<()>>;

struct Registry {
    handle: Handle,
    /// A signal is in here once its handler is installed, and stays: handlers are never
    /// removed.
    senders: Arc<Mutex<Senders>>,
}

/// `None` until the first registration starts the thread (or after a failed start, so that
/// the next registration tries again).
static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only map and option updates run under these locks: a poisoned lock guards a
    // consistent value.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A receiver of signal `sig` that has seen every delivery so far, installing the handler
/// (and starting the thread) on the first call for `sig`.
pub(super) fn subscribe(sig: c_int) -> io::Result<watch::Receiver<()>> {
    if FORBIDDEN.contains(&sig) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "signal {sig} cannot be listened for: SIGKILL and SIGSTOP cannot be caught, \
                 and SIGILL, SIGFPE and SIGSEGV mean the program is broken"
            ),
        ));
    }
    if !(1..SIGNAL_LIMIT).contains(&sig) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{sig} is not a signal number"),
        ));
    }
    let mut registry = lock(&REGISTRY);
    let registry = match &mut *registry {
        Some(r) => r,
        empty => empty.insert(start()?),
    };
    if let Some(tx) = lock(&registry.senders).get(&sig) {
        return Ok(tx.subscribe());
    }
    // The registry lock keeps a second registration of `sig` out until this one is done; the
    // channel goes in before the handler, so the first delivery has somewhere to go.
    let (tx, rx) = watch::channel(());
    lock(&registry.senders).insert(sig, tx);
    if let Err(e) = registry.handle.add_signal(sig) {
        lock(&registry.senders).remove(&sig);
        return Err(e);
    }
    Ok(rx)
}

/// Creates the self-pipe and starts the thread that reads it.
fn start() -> io::Result<Registry> {
    let mut signals = Signals::new(std::iter::empty::<c_int>())?;
    let handle = signals.handle();
    let senders = Arc::new(Mutex::new(Senders::new()));
    let forward = Arc::clone(&senders);
    std::thread::Builder::new()
        .name("ito-signal".into())
        .spawn(move || {
            for sig in signals.forever() {
                if let Some(tx) = lock(&forward).get(&sig) {
                    // Sent whether or not anyone listens now: a later listener must not see it.
                    tx.send_replace(());
                }
            }
        })?;
    Ok(Registry { handle, senders })
}
