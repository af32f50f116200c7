//! Handles on processes: [`Pid<M>`] (send it `M`s), [`AnyPid`] (any process, for links,
//! monitors and supervisors), [`ProcessId`] (a process's name in messages).

use std::error::Error;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ptr::NonNull;

use super::block::{Block, BlockRef, Ctl};
use super::exit::MonitorRef;
use super::reason::Exit;
use crate::{Future, Promise};

/// A process's identity: unique for the life of the program (never reused, even though a
/// process's memory is), cheap to copy and compare. Ids are not in spawn order: a process
/// takes its id when it is first needed ([`Pid::id`]).
///
/// ```
/// use ito::process::{self, Mailbox};
/// let a = process::spawn(|_: Mailbox<()>| async {});
/// let b = process::spawn(|_: Mailbox<()>| async {});
/// assert_ne!(a.id(), b.id());
/// assert_eq!(a.id(), a.clone().id());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId(u64);

impl ProcessId {
    pub(crate) fn new(id: u64) -> Self {
        ProcessId(id)
    }

    /// The number behind the id.
    ///
    /// ```
    /// let p = ito::process::spawn(|_: ito::process::Mailbox<()>| async {});
    /// assert!(p.id().as_u64() > 0);
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<0.{}.0>", self.0)
    }
}

impl fmt::Debug for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The address of a process that receives `M`s. Cheap to clone (one reference count) and to
/// send between threads.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let (tx, rx) = std::sync::mpsc::channel();
/// let echo = process::spawn(move |mut mb: Mailbox<String>| async move {
///     let s = mb.recv().await;
///     tx.send(s).unwrap();
/// });
/// echo.send("hi".to_string()).unwrap();
/// assert_eq!(rx.recv().unwrap(), "hi");
/// ```
pub struct Pid<M> {
    pub(crate) block: BlockRef<M>,
}

impl<M: Send + 'static> Pid<M> {
    /// Queues `msg` in the process's mailbox. Never blocks (mailboxes are unbounded).
    ///
    /// Messages from one sender arrive in the order sent. A process that has ended (or has
    /// dropped its [`Mailbox`](super::Mailbox)) refuses the message and hands it back.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|_: Mailbox<u32>| async {});
    /// p.on_exit().wait().unwrap();
    /// assert_eq!(p.send(7).unwrap_err().0, 7);
    /// ```
    #[inline]
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        self.block.send_internal(msg).map_err(SendError)
    }

    /// The process's id: the same for every handle and every call, before and after the
    /// process ends, and never another process's (see [`ProcessId`]).
    ///
    /// A process takes its id when first asked for it (or when it first links, monitors,
    /// traps exits or is named): the id lives in the part of the process made for those, so a
    /// process nobody asks about does not carry one. The first call may therefore allocate;
    /// comparing and hashing `Pid`s does not need the id.
    ///
    /// ```
    /// let p = ito::process::spawn(|mb: ito::process::Mailbox<()>| async move {
    ///     let _ = mb.id();
    /// });
    /// println!("spawned {}", p.id());
    /// ```
    #[inline]
    pub fn id(&self) -> ProcessId {
        self.block.id()
    }

    /// Whether the process has not ended yet (it may end right after this returns).
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// assert!(p.is_alive());
    /// p.send(()).unwrap();
    /// p.on_exit().wait().unwrap();
    /// assert!(!p.is_alive());
    /// ```
    pub fn is_alive(&self) -> bool {
        self.block.mailbox.is_alive()
    }

    /// Kills the process: it ends with [`Exit::Killed`] at its next poll, whatever it is
    /// waiting for, and cannot trap it. Its body is dropped (destructors run); its links and
    /// monitors learn `Killed`. Killing a process that has ended does nothing. A body blocked
    /// inside a synchronous call (a blocking `wait()`, a blocking channel) is dropped when
    /// that call returns and the body yields.
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// p.kill();
    /// assert_eq!(p.on_exit().wait(), Ok(Exit::Killed));
    /// ```
    pub fn kill(&self) {
        self.block.kill();
    }

    /// A future that completes with the process's exit reason when it ends (at once if it
    /// has ended): a monitor for code that is not a process.
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let p = process::spawn(|_: Mailbox<()>| async { panic!("oops") });
    /// assert_eq!(p.on_exit().wait(), Ok(Exit::Panic("oops".into())));
    /// ```
    pub fn on_exit(&self) -> Future<Exit> {
        on_exit(&*self.block)
    }

    /// This handle without its message type.
    ///
    /// ```
    /// let p = ito::process::spawn(|_: ito::process::Mailbox<u8>| async {});
    /// assert_eq!(p.erase().id(), p.id());
    /// ```
    pub fn erase(&self) -> AnyPid {
        AnyPid::from(self.clone())
    }
}

/// `on_exit` through any handle: a monitor completing a promise.
fn on_exit(ctl: &dyn Ctl) -> Future<Exit> {
    let p = Promise::new();
    let f = p.future();
    let notify = Box::new(move |_, reason: &Exit| {
        let _ = p.try_success(reason.clone());
    });
    if let Err((notify, reason)) = ctl.add_monitor(MonitorRef::new(ctl.id()), notify) {
        notify(ctl.id(), &reason);
    }
    f
}

impl<M> Clone for Pid<M> {
    #[inline]
    fn clone(&self) -> Self {
        Pid {
            block: self.block.clone(),
        }
    }
}

impl<M> fmt::Debug for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pid({})", self.block.id())
    }
}

// Identity is the block's address: every handle on a process points at its block, which
// lives while any handle does, so two live handles share an address exactly when they name
// the same process (and comparing them asks nobody for an id, which `Pid::id` may allocate).
impl<M> PartialEq for Pid<M> {
    fn eq(&self, other: &Self) -> bool {
        self.block.as_non_null() == other.block.as_non_null()
    }
}

impl<M> Eq for Pid<M> {}

impl<M> Hash for Pid<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.block.as_non_null().hash(state);
    }
}

/// A handle on a process of any message type: to link, monitor, kill or supervise it.
/// Converts from a [`Pid`] (`AnyPid::from(&pid)`, or [`Pid::erase`]) and back
/// ([`downcast`](AnyPid::downcast)).
///
/// ```
/// use ito::process::{self, AnyPid, Mailbox};
/// let p = process::spawn(|mut mb: Mailbox<u8>| async move { mb.recv().await; });
/// let any = AnyPid::from(&p);
/// assert!(any.downcast::<u16>().is_none());
/// any.downcast::<u8>().unwrap().send(1).unwrap();
/// p.on_exit().wait().unwrap();
/// ```
pub struct AnyPid(NonNull<dyn Ctl>);

// SAFETY: a counted reference to a block (`Ctl: Send + Sync`), as `Arc<dyn Ctl>` would be.
unsafe impl Send for AnyPid {}
// SAFETY: as above.
unsafe impl Sync for AnyPid {}

impl Clone for AnyPid {
    fn clone(&self) -> Self {
        self.ctl().retain();
        AnyPid(self.0)
    }
}

impl Drop for AnyPid {
    fn drop(&mut self) {
        let release = self.ctl().release_fn();
        // SAFETY: we own one reference and give it up; the pointer is the block's, with its
        // allocation's provenance (taken from a `BlockRef`).
        unsafe { release(self.0.cast()) };
    }
}

impl AnyPid {
    pub(crate) fn ctl(&self) -> &dyn Ctl {
        // SAFETY: we hold a reference, so the block is live.
        unsafe { self.0.as_ref() }
    }

    /// The process's id.
    ///
    /// ```
    /// let p = ito::process::spawn(|_: ito::process::Mailbox<()>| async {});
    /// assert_eq!(ito::process::AnyPid::from(&p).id(), p.id());
    /// ```
    #[inline]
    pub fn id(&self) -> ProcessId {
        self.ctl().id()
    }

    /// Whether the process has not ended yet. See [`Pid::is_alive`].
    ///
    /// ```
    /// let p = ito::process::spawn(|_: ito::process::Mailbox<()>| async {});
    /// p.on_exit().wait().unwrap();
    /// assert!(!p.erase().is_alive());
    /// ```
    pub fn is_alive(&self) -> bool {
        self.ctl().is_alive()
    }

    /// Kills the process. See [`Pid::kill`].
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// p.erase().kill();
    /// assert_eq!(p.on_exit().wait(), Ok(Exit::Killed));
    /// ```
    pub fn kill(&self) {
        self.ctl().kill();
    }

    /// The process's exit reason, when it ends. See [`Pid::on_exit`].
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let p = process::spawn(|_: Mailbox<()>| async {});
    /// assert_eq!(p.erase().on_exit().wait(), Ok(Exit::Normal));
    /// ```
    pub fn on_exit(&self) -> Future<Exit> {
        on_exit(self.ctl())
    }

    /// The typed handle, if the process receives `M`s.
    ///
    /// ```
    /// let p = ito::process::spawn(|_: ito::process::Mailbox<String>| async {});
    /// assert!(p.erase().downcast::<String>().is_some());
    /// assert!(p.erase().downcast::<u8>().is_none());
    /// ```
    pub fn downcast<M: Send + 'static>(&self) -> Option<Pid<M>> {
        if !self.ctl().as_any().is::<Block<M>>() {
            return None;
        }
        // SAFETY: the block is a `Block<M>` (checked above) and live (we hold a reference);
        // the pointer keeps its allocation's provenance.
        let block = unsafe { BlockRef::retain_raw(self.0.cast::<Block<M>>()) };
        Some(Pid { block })
    }
}

impl<M: Send + 'static> From<Pid<M>> for AnyPid {
    fn from(p: Pid<M>) -> AnyPid {
        let ptr: NonNull<dyn Ctl> = p.block.as_non_null();
        // The reference moves from the `Pid` to the `AnyPid`.
        std::mem::forget(p);
        AnyPid(ptr)
    }
}

impl<M: Send + 'static> From<&Pid<M>> for AnyPid {
    fn from(p: &Pid<M>) -> AnyPid {
        p.erase()
    }
}

impl From<&AnyPid> for AnyPid {
    fn from(p: &AnyPid) -> AnyPid {
        p.clone()
    }
}

impl fmt::Debug for AnyPid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyPid({})", self.id())
    }
}

// By the block's address, as `Pid`'s.
impl PartialEq for AnyPid {
    fn eq(&self, other: &Self) -> bool {
        self.0.cast::<()>() == other.0.cast::<()>()
    }
}

impl Eq for AnyPid {}

impl Hash for AnyPid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.cast::<()>().hash(state);
    }
}

/// A message the process refused because it has ended (or dropped its mailbox); the message
/// is inside.
///
/// ```
/// use ito::process::{self, Mailbox, SendError};
/// let p = process::spawn(|_: Mailbox<&str>| async {});
/// p.on_exit().wait().unwrap();
/// let SendError(msg) = p.send("late").unwrap_err();
/// assert_eq!(msg, "late");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SendError<M>(pub M);

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the process has ended: the message was not delivered")
    }
}

impl<M> Error for SendError<M> {}
