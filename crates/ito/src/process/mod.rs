//! Lightweight processes, Erlang/OTP style: mailboxes, links, monitors, supervisors, a
//! registry, and request-reply.
//!
//! A process is an ito task running an async body that receives from its own [`Mailbox`]. You
//! address it with a [`Pid<M>`]: sending is one CAS and never blocks; a process that has ended
//! hands the message back. A process costs about 120 bytes while it waits for its first message
//! (`docs/process.md` has the layout), so a million fit in about 130 megabytes.
//!
//! ```
//! use ito::process::{self, Mailbox, Pid};
//!
//! // Document 001's chain: each process waits for a number and passes on number + 1.
//! let (tx, rx) = std::sync::mpsc::channel();
//! let last = process::spawn(move |mut mb: Mailbox<u64>| async move {
//!     tx.send(mb.recv().await).unwrap();
//! });
//! let mut next: Pid<u64> = last;
//! for _ in 0..1000 {
//!     let to = next;
//!     next = process::spawn(move |mut mb: Mailbox<u64>| async move {
//!         let n = mb.recv().await;
//!         to.send(n + 1).unwrap();
//!     });
//! }
//! next.send(0).unwrap();
//! assert_eq!(rx.recv().unwrap(), 1000);
//! ```
//!
//! - **Receiving**: [`Mailbox::recv`], [`Mailbox::try_recv`], [`Mailbox::recv_timeout`], and
//!   the selective [`Mailbox::recv_matching`], which leaves the messages it passes over queued
//!   in order. Messages from one sender arrive in the order sent.
//! - **Ending**: a body that returns `()` ends with [`Exit::Normal`]; one that returns an
//!   [`Exit`], with it; one that returns `Err(e)`, with `Exit::from(e)`: the body keeps the
//!   error type it has (its own `E: Error + Send + Sync`, `io::Error`,
//!   `Box<dyn Error + Send + Sync>`, `Exit`), `?` works on any error, and the error is kept as
//!   it is in [`Exit::Error`], where [`Exit::downcast_ref`] finds it (a text becomes an
//!   [`Exit::Reason`]); a panic, with [`Exit::Panic`] and its message and payload;
//!   [`Pid::kill`], with [`Exit::Killed`], whatever the process is waiting for (its body is
//!   dropped, so destructors run).
//! - **Links** ([`Mailbox::link`], [`Mailbox::spawn_link`]): when one of two linked processes
//!   ends abnormally, the other ends with the same reason, unless it traps exits
//!   ([`Mailbox::trap_exits`]), in which case it receives an [`ExitSignal`] message. A normal
//!   end does not propagate. A killed process's links get [`Exit::Killed`] (trappable).
//! - **Monitors** ([`Mailbox::monitor`]): one [`Down`] message with the reason when the
//!   process ends; [`Pid::on_exit`] is the same as a future, for code outside processes.
//! - **Supervisors** ([`Supervisor`]): restart children one-for-one, one-for-all or
//!   rest-for-one, as permanent, transient or temporary children, within a restart intensity.
//! - **Names** ([`register`], [`whereis`], [`unregister`]): a name is freed when its process
//!   ends.
//! - **Request-reply** ([`call`]): send a message carrying a [`ReplyTo`], wait for the answer
//!   with a timeout.
//!
//! Processes run on the current runtime (the worker's, the one entered with
//! [`Runtime::block_on`](crate::Runtime::block_on), or the global one). The design, the
//! memory layout and the measurements are in `docs/process.md`.

mod block;
mod call;
mod exit;
mod mailbox;
mod pid;
mod reason;
mod receive;
mod registry;
mod run;
mod supervisor;

use std::future::Future as StdFuture;

pub use call::{CallError, ReplyTo, call};
pub use exit::{Down, ExitSignal, MonitorRef};
pub use pid::{AnyPid, Pid, ProcessId, SendError};
pub use reason::{Exit, IntoExit};
pub use receive::{Mailbox, Recv, RecvMatching};
pub use registry::{RegisterError, register, unregister, whereis, whereis_any};
pub use supervisor::{ChildInfo, ChildSpec, Restart, Strategy, Supervisor, SupervisorMsg};

#[cfg(all(test, loom))]
pub(crate) use block::BlockRef;
#[cfg(all(test, loom))]
pub(crate) use exit::Notify;
#[cfg(all(test, loom))]
pub(crate) use exit::link;
#[cfg(all(test, loom))]
pub(crate) use mailbox::{MailboxCore, Node, NodeBox, Take};
pub(crate) use run::{PollingNow, swap_polling};

/// Spawns a process on the current runtime. `body` receives the process's [`Mailbox`] and
/// returns its async body; the process ends when the body does (see [`IntoExit`] for what it
/// may return). `body` itself is called at once, on the calling thread; the async body runs
/// on the runtime's workers.
///
/// ```
/// use ito::process::{self, Exit, Mailbox};
/// let greeter = process::spawn(|mut mb: Mailbox<String>| async move {
///     let name = mb.recv().await;
///     if name.is_empty() {
///         return Err(Exit::reason("no name"));
///     }
///     println!("hello, {name}");
///     Ok(())
/// });
/// greeter.send(String::new()).unwrap();
/// assert_eq!(greeter.on_exit().wait(), Ok(Exit::reason("no name")));
/// ```
pub fn spawn<M, F, Fut>(body: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Mailbox<M>) -> Fut,
    Fut: StdFuture + Send + 'static,
    Fut::Output: IntoExit,
{
    run::spawn_on(crate::runtime::current(), body)
}

/// What a process spawned with `body` costs before it receives anything: the size in bytes
/// of its task (header, reference count, and the future `body` returns, wrapped) and of its
/// process block (reference count, mailbox, waker, extras pointer). Both come from the task
/// slab, which rounds each up to a multiple of 8 bytes; `docs/process.md` has the measured
/// totals.
///
/// ```
/// use ito::process::{self, Mailbox, Pid};
/// let next: Option<Pid<u64>> = None;
/// let (task, block) = process::process_size(&move |mut mb: Mailbox<u64>| async move {
///     let n = mb.recv().await;
///     if let Some(p) = &next {
///         let _ = p.send(n + 1);
///     }
/// });
/// assert!(task + block <= 256, "{task} + {block}");
/// ```
pub fn process_size<M, F, Fut>(_body: &F) -> (usize, usize)
where
    M: Send + 'static,
    F: FnOnce(Mailbox<M>) -> Fut,
    Fut: StdFuture + Send + 'static,
{
    (
        crate::task::detached_task_size::<run::ProcTask<M, Fut>>(),
        std::mem::size_of::<block::Block<M>>(),
    )
}
