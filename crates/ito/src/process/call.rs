//! Request and reply (gen_server's `call`), built on a promise with one reader
//! ([`Promise::with_task`](crate::Promise::with_task)): the caller sends a message carrying a
//! [`ReplyTo`], and waits on the promise's [`Task`](crate::Task) with a timeout. The answer
//! moves from the server to the caller: no `Clone`, no lock.
//!
//! If the server drops the `ReplyTo` without answering (it ended, or it dropped the message
//! when its mailbox closed) the promise breaks and the caller hears [`CallError::NoReply`] at
//! once, without a monitor.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use super::pid::Pid;
use crate::Failure;
use crate::future::promise::UniqueWriter;

/// Where a server sends the answer to one [`call`].
///
/// ```
/// use std::time::Duration;
/// use ito::process::{self, Mailbox, ReplyTo};
/// let doubler = process::spawn(|mut mb: Mailbox<(u32, ReplyTo<u32>)>| async move {
///     let (n, reply_to) = mb.recv().await;
///     reply_to.reply(2 * n);
/// });
/// let r = ito::block_on(process::call(&doubler, |r| (21, r), Duration::from_secs(5)));
/// assert_eq!(r.unwrap(), 42);
/// ```
pub struct ReplyTo<R> {
    promise: UniqueWriter<R>,
}

impl<R: Send + 'static> ReplyTo<R> {
    /// Sends the answer. If the caller stopped waiting (its timeout passed), the answer is
    /// dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{self, CallError, Mailbox, ReplyTo};
    /// enum Msg {
    ///     Ask(ReplyTo<&'static str>),
    ///     Go,
    /// }
    /// let slow = process::spawn(|mut mb: Mailbox<Msg>| async move {
    ///     let Msg::Ask(reply_to) = mb.recv().await else { return };
    ///     let _go = mb.recv().await;
    ///     reply_to.reply("too late"); // the caller stopped waiting: the answer is dropped
    /// });
    /// let r = ito::block_on(process::call(&slow, Msg::Ask, Duration::from_millis(10)));
    /// assert!(matches!(r, Err(CallError::Timeout)));
    /// assert!(slow.send(Msg::Go).is_ok());
    /// assert!(slow.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn reply(self, value: R) {
        let _ = self.promise.try_complete(Ok(value));
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplyTo(..)")
    }
}

/// Why a [`call`] got no answer.
///
/// ```
/// use std::time::Duration;
/// use ito::process::{self, CallError, Mailbox, ReplyTo};
/// let silent = process::spawn(|mut mb: Mailbox<ReplyTo<()>>| async move {
///     let _ignored = mb.recv().await;
/// });
/// let r = ito::block_on(process::call(&silent, |r| r, Duration::from_secs(5)));
/// assert!(matches!(r, Err(CallError::NoReply)));
/// ```
#[derive(PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError<M> {
    /// The server had ended: the request was not delivered and is handed back.
    NoProc(M),
    /// No answer within the timeout.
    Timeout,
    /// The server dropped the request without answering (typically: it ended meanwhile).
    NoReply,
}

impl<M> fmt::Debug for CallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NoProc(_) => f.write_str("NoProc(..)"),
            CallError::Timeout => f.write_str("Timeout"),
            CallError::NoReply => f.write_str("NoReply"),
        }
    }
}

impl<M> fmt::Display for CallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallError::NoProc(_) => "the server has ended: the request was not delivered",
            CallError::Timeout => "the server did not answer in time",
            CallError::NoReply => "the server dropped the request without answering",
        })
    }
}

impl<M> Error for CallError<M> {}

/// Sends `pid` the request `make(reply_to)` and waits at most `timeout` for the answer
/// (Erlang's `gen_server:call`). Use `.await` in async code, [`ito::block_on`](crate::block_on)
/// elsewhere.
///
/// ```
/// use std::time::Duration;
/// use ito::process::{self, CallError, Mailbox, ReplyTo};
/// enum Req { Get(ReplyTo<u64>), Add(u64) }
/// let counter = process::spawn(|mut mb: Mailbox<Req>| async move {
///     let mut n = 0;
///     loop {
///         match mb.recv().await {
///             Req::Add(k) => n += k,
///             Req::Get(r) => r.reply(n),
///         }
///     }
/// });
/// counter.send(Req::Add(5)).unwrap();
/// let t = Duration::from_secs(5);
/// assert!(matches!(ito::block_on(process::call(&counter, Req::Get, t)), Ok(5)));
/// counter.kill();
/// counter.on_exit().wait().unwrap();
/// let late = ito::block_on(process::call(&counter, Req::Get, t));
/// assert!(matches!(late, Err(CallError::NoProc(Req::Get(_)))));
/// ```
pub async fn call<M, R>(
    pid: &Pid<M>,
    make: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Duration,
) -> Result<R, CallError<M>>
where
    M: Send + 'static,
    R: Send + 'static,
{
    let (promise, answer) = UniqueWriter::new();
    pid.send(make(ReplyTo { promise }))
        .map_err(|e| CallError::NoProc(e.0))?;
    match crate::timeout(timeout, answer).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_broken)) => Err(CallError::NoReply),
        Err(Failure::Timeout) => Err(CallError::Timeout),
        Err(_) => Err(CallError::NoReply),
    }
}
