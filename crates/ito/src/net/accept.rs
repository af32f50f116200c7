//! Accepting connections, with a back-off when the process is out of descriptors.
//!
//! `accept` fails with `EMFILE` (or `ENFILE`, `ENOBUFS`, `ENOMEM`) while the process, or the
//! system, has no descriptor or buffer to give the new connection. The connection stays in the
//! listen queue, so the listener stays readable: retrying at once would spin a core. The
//! listener sleeps on a timer instead, from 1 ms doubling to 1 s, and tries again; the first
//! success resets the back-off.

use std::io;
use std::time::Duration;

use mio::event::Source;

use crate::io::{Direction, Evented};

const BACKOFF_MIN: Duration = Duration::from_millis(1);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Whether `e` says the process or the system is out of descriptors or memory for now.
fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Runs `accept` on the listener `io` until it yields a connection or fails for another
/// reason than a lack of resources. Cancel safe: a connection accepted is returned by the
/// same poll.
pub(crate) async fn accept<L: Source, T>(
    io: &Evented<L>,
    mut accept: impl FnMut(&L) -> io::Result<T>,
) -> io::Result<T> {
    let mut backoff = BACKOFF_MIN;
    loop {
        match io.io(Direction::Read, &mut accept).await {
            Err(e) if out_of_resources(&e) => {
                // The timer fires unless the runtime shuts down; either way, try again.
                let _ = crate::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            r => return r,
        }
    }
}
