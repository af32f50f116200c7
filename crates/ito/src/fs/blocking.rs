//! Running a file operation on the blocking pool and moving its result back out.
//!
//! The job sends its result through a [`oneshot`](crate::sync::oneshot) channel rather than
//! through the [`Future`](crate::Future) that `spawn_blocking` returns: a oneshot moves the
//! value out (an `io::Result` is not `Clone` and not `Sync`), and the receiver is a plain
//! future that a `poll_*` method can keep in its state.

use std::io;

use crate::sync::oneshot;

/// Runs `f` on the current runtime's blocking pool; its result arrives on the returned
/// receiver. If the job never runs (the runtime shut down) or panics, the sender is dropped
/// and the receiver fails, which [`lost`] turns into an `io::Error`.
pub(super) fn run<T, F>(f: F) -> oneshot::Receiver<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    // The receiver carries the result; the pool's own future only says the job ended.
    drop(crate::spawn_blocking(move || {
        // A receiver that is gone means nobody waits for this result: dropping it is right.
        let _ = tx.send(f());
    }));
    rx
}

/// The error of a job that ended without a result.
pub(super) fn lost() -> io::Error {
    io::Error::other(
        "the blocking file job ended without a result (runtime shut down, or the job panicked)",
    )
}

/// Runs a blocking `io::Result` closure on the blocking pool and waits for it.
pub(super) async fn asyncify<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    run(f).await.unwrap_or_else(|_| Err(lost()))
}
