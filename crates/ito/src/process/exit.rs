//! Why processes end, and who hears about it: exit reasons, exit signals, links, monitors.
//!
//! Erlang's rules, with typed mailboxes:
//!
//! - A process ends with an [`Exit`] reason: [`Exit::Normal`] when its body returns `()`
//!   (or `Ok(())`), [`Exit::Panic`] with the message when it panics, [`Exit::Killed`] when it is
//!   killed, [`Exit::Shutdown`] when a supervisor (or the runtime's shutdown) stops it, or the
//!   program's own reason ([`Exit::Reason`] or [`Exit::Error`], from a body that returns
//!   `Err(..)` or an [`Exit`]).
//! - When it ends, every process **linked** to it gets an *exit signal* with that reason. A
//!   process that does not trap exits dies of it with the same reason, unless the reason is
//!   [`Exit::Normal`] (ignored). A process that traps exits
//!   ([`Mailbox::trap_exits`](super::Mailbox::trap_exits)) gets the signal as a message instead.
//! - [`kill`](super::Pid::kill) cannot be trapped: the process ends with [`Exit::Killed`], and
//!   its links get `Killed` (which linked processes *can* trap).
//! - Every **monitor** of it gets one [`Down`] message with the reason (monitors are one-way
//!   and never kill the watcher). [`Pid::on_exit`](super::Pid::on_exit) is a monitor for code
//!   outside processes: a future of the reason.
//! - Links and monitors made after the process ended still fire, at once, with the reason it
//!   ended with.
//!
//! ## Where the state lives
//!
//! A process that never links, monitors, traps exits or registers a name has no state for
//! any of this: its block holds a null pointer. The first of those operations allocates an
//! [`Extras`] (one `Mutex` around the lists below), installed with one CAS and freed with the
//! block. Nothing here is on the message path except one pointer load by a claimant (see
//! `mailbox.rs`), for the receive waker of the rare receive polled with a foreign waker.
//!
//! Who touches what (all under the `Mutex`, and no user code ever runs under it):
//! - `exited`: set once by the process as it ends; read by whoever links, monitors or
//!   registers (to answer at once with the reason).
//! - `links`, `monitors`, `names`: added by whoever links, monitors or registers; taken by the
//!   process as it ends (and then notified outside the lock).
//! - `watching` (monitors this process holds on others): the process; cancelled as it ends.
//! - `trap`: the process; read (cloned) by senders of exit signals.
//! - `kill_reason`: the first fatal exit signal; read by the process when it sees `KILLED`.
//! - `recv_waker` (+ its flag outside the lock): the process's receiver; taken by claimants.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::Waker;

use super::block::{Block, Ctl};
use super::pid::{AnyPid, ProcessId};
use super::reason::Exit;
use super::registry::Name;
use crate::loom::{AtomicBool, Mutex, MutexGuard, Ordering};

/// An exit signal delivered as a message to a process that traps exits: a linked process
/// ended (or a supervisor-style signal was sent).
///
/// ```
/// use ito::process::{self, Exit, ExitSignal, Mailbox};
/// let (tx, rx) = std::sync::mpsc::channel();
/// let watcher = process::spawn(move |mut mb: Mailbox<ExitSignal>| async move {
///     mb.trap_exits(|sig| sig);
///     let doomed = mb.spawn_link(|_: Mailbox<()>| async { Err::<(), _>("boom") });
///     let sig = mb.recv().await;
///     tx.send((sig.from == doomed.id(), sig.reason)).unwrap();
/// });
/// assert_eq!(rx.recv().unwrap(), (true, Exit::reason("boom")));
/// # watcher.on_exit().wait().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExitSignal {
    /// The process that ended.
    pub from: ProcessId,
    /// Why it ended.
    pub reason: Exit,
}

/// The message a monitor delivers when the monitored process ends.
///
/// ```
/// use ito::process::{self, Down, Exit, Mailbox};
/// let (tx, rx) = std::sync::mpsc::channel();
/// process::spawn(move |mut mb: Mailbox<Down>| async move {
///     let worker = process::spawn(|_: Mailbox<()>| async { panic!("worker crashed") });
///     let r = mb.monitor(&worker, |down| down);
///     let down = mb.recv().await;
///     tx.send((down.monitor == r, down.reason)).unwrap();
/// });
/// assert_eq!(rx.recv().unwrap(), (true, Exit::Panic("worker crashed".into())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Down {
    /// The monitor that fired (what [`Mailbox::monitor`](super::Mailbox::monitor) returned).
    pub monitor: MonitorRef,
    /// The process that ended.
    pub from: ProcessId,
    /// Why it ended.
    pub reason: Exit,
}

/// Names one monitor, for [`Mailbox::demonitor`](super::Mailbox::demonitor) and to tell
/// [`Down`] messages apart.
///
/// ```
/// use ito::process::{self, Mailbox};
/// process::spawn(|mb: Mailbox<()>| async move {
///     let other = process::spawn(|mut m: Mailbox<()>| async move { m.recv().await });
///     let r = mb.monitor(&other, |_| ());
///     assert_eq!(r.target(), other.id());
///     assert!(mb.demonitor(r));
///     assert!(!mb.demonitor(r));
///     other.kill();
/// }).on_exit().wait().unwrap();
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MonitorRef {
    id: u64,
    target: ProcessId,
}

impl MonitorRef {
    pub(crate) fn new(target: ProcessId) -> MonitorRef {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        MonitorRef {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            target,
        }
    }

    /// The monitored process.
    ///
    /// ```
    /// use ito::process::{self, Down, Mailbox};
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// process::spawn(move |mut mb: Mailbox<Down>| async move {
    ///     let short = process::spawn(|_: Mailbox<()>| async {});
    ///     let r = mb.monitor(&short, |down| down);
    ///     tx.send(mb.recv().await.from == r.target()).unwrap();
    /// });
    /// assert!(rx.recv().unwrap());
    /// ```
    pub fn target(&self) -> ProcessId {
        self.target
    }
}

/// What a monitor does when the process ends (sends a [`Down`], completes a promise).
pub(crate) type Notify = Box<dyn FnOnce(ProcessId, &Exit) + Send>;

/// The part of a process that exists only once it links, monitors, traps, is named or is
/// asked for its id.
pub(crate) struct Extras<M> {
    /// The process's id, given out when the extras are made (`Block::id`).
    id: ProcessId,
    /// Set while `recv_waker` holds a waker (read by claimants without the lock).
    has_recv_waker: AtomicBool,
    inner: Mutex<ExtrasInner<M>>,
}

/// A trap-exits conversion: exit signal to message.
type Trap<M> = Arc<dyn Fn(ExitSignal) -> M + Send + Sync>;

pub(crate) struct ExtrasInner<M> {
    exited: Option<Exit>,
    /// Set from `exited` until the ending thread has sent every link signal: a monitor added
    /// meanwhile (`on_exit` included) waits in `monitors` for the ending thread, so that it
    /// never learns of the end before the links do.
    signalling_links: bool,
    kill_reason: Option<Exit>,
    trap: Option<Trap<M>>,
    links: Vec<AnyPid>,
    monitors: Vec<(MonitorRef, Notify)>,
    watching: Vec<(MonitorRef, AnyPid)>,
    names: Vec<Name>,
    recv_waker: Option<Waker>,
}

impl<M> Extras<M> {
    pub(crate) fn new(exited: Option<Exit>) -> Self {
        Extras {
            id: super::block::next_id(),
            has_recv_waker: AtomicBool::new(false),
            inner: Mutex::new(ExtrasInner {
                exited,
                signalling_links: false,
                kill_reason: None,
                trap: None,
                links: Vec::new(),
                monitors: Vec::new(),
                watching: Vec::new(),
                names: Vec::new(),
                recv_waker: None,
            }),
        }
    }

    /// The process's id.
    pub(crate) fn id(&self) -> ProcessId {
        self.id
    }

    fn lock(&self) -> MutexGuard<'_, ExtrasInner<M>> {
        // Nothing panics while holding the lock but allocation failure; the lists stay
        // consistent either way.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The claimant's hook: wakes the waker a receive left here, if any.
    pub(crate) fn wake_recv_waker(&self) {
        if self.has_recv_waker.load(Ordering::Acquire) {
            let w = {
                let mut g = self.lock();
                self.has_recv_waker.store(false, Ordering::Relaxed);
                g.recv_waker.take()
            };
            if let Some(w) = w {
                w.wake();
            }
        }
    }

    /// The receiver waits with a waker that is not the process's: keep it for claimants.
    pub(crate) fn set_recv_waker(&self, waker: &Waker) {
        let old = {
            let mut g = self.lock();
            let same = g.recv_waker.as_ref().is_some_and(|w| w.will_wake(waker));
            let old = if same {
                None
            } else {
                g.recv_waker.replace(waker.clone())
            };
            self.has_recv_waker.store(true, Ordering::Release);
            old
        };
        drop(old);
    }

    /// The receiver waits with the process's own waker: a stale foreign waker can go.
    pub(crate) fn clear_recv_waker(&self) {
        if self.has_recv_waker.load(Ordering::Relaxed) {
            let old = {
                let mut g = self.lock();
                self.has_recv_waker.store(false, Ordering::Relaxed);
                g.recv_waker.take()
            };
            drop(old);
        }
    }
}

/// Runs a notification that may call user code (a monitor's or a trap's conversion),
/// containing its panic: one bad closure must not stop the other notifications.
fn contained(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        crate::failure::drop_payload(payload);
    }
}

impl<M: Send + 'static> Block<M> {
    /// An untrappable kill with the default reason (`Killed`): no state needed.
    pub(crate) fn kill(&self) {
        self.mailbox.kill(|| self.wake_foreign());
    }

    /// An exit signal: from a linked process that ended (`untrappable == false`), or a kill
    /// (`untrappable == true`, with the reason the process will end with).
    pub(crate) fn signal(&self, from: ProcessId, reason: &Exit, untrappable: bool) {
        if untrappable && *reason == Exit::Killed {
            self.kill();
            return;
        }
        let x = self.extras();
        let trap = {
            let mut g = x.lock();
            if g.exited.is_some() {
                return;
            }
            match &g.trap {
                Some(t) if !untrappable => Some(t.clone()),
                _ => {
                    if !untrappable && reason.is_normal() {
                        return;
                    }
                    g.kill_reason.get_or_insert_with(|| reason.clone());
                    None
                }
            }
        };
        match trap {
            Some(t) => {
                let sig = ExitSignal {
                    from,
                    reason: reason.clone(),
                };
                contained(|| {
                    // A process that ends meanwhile refuses it: nothing is lost that anyone
                    // could still receive.
                    let _ = self.send_internal(t(sig));
                });
            }
            None => {
                self.mailbox.kill(|| self.wake_foreign());
            }
        }
    }

    /// The reason a killed process ends with (what the first fatal signal carried).
    pub(crate) fn kill_reason(&self) -> Exit {
        self.extras_if_any()
            .and_then(|x| x.lock().kill_reason.take())
            .unwrap_or(Exit::Killed)
    }

    /// Adds `other` to this process's links; if this process has ended, its reason.
    pub(crate) fn add_link(&self, other: &AnyPid) -> Result<(), Exit> {
        let x = self.extras();
        let mut g = x.lock();
        if let Some(r) = &g.exited {
            return Err(r.clone());
        }
        if !g.links.iter().any(|l| l.id() == other.id()) {
            g.links.push(other.clone());
        }
        Ok(())
    }

    /// Removes the link to `other`, if any.
    pub(crate) fn remove_link(&self, other: ProcessId) {
        if let Some(x) = self.extras_if_any() {
            let removed = {
                let mut g = x.lock();
                g.links
                    .iter()
                    .position(|l| l.id() == other)
                    .map(|i| g.links.swap_remove(i))
            };
            drop(removed); // outside the lock: it may be the last handle of that process
        }
    }

    /// Adds a monitor; if this process has ended, hands the notification back with the reason.
    pub(crate) fn add_monitor(
        &self,
        mref: MonitorRef,
        notify: Notify,
    ) -> Result<(), (Notify, Exit)> {
        let x = self.extras();
        let mut g = x.lock();
        if let Some(r) = g.exited.as_ref().filter(|_| !g.signalling_links) {
            return Err((notify, r.clone()));
        }
        g.monitors.push((mref, notify));
        Ok(())
    }

    /// Removes a monitor of this process; whether it was there.
    pub(crate) fn remove_monitor(&self, mref: MonitorRef) -> bool {
        let Some(x) = self.extras_if_any() else {
            return false;
        };
        let removed = {
            let mut g = x.lock();
            g.monitors
                .iter()
                .position(|(r, _)| *r == mref)
                .map(|i| g.monitors.swap_remove(i))
        };
        removed.is_some()
    }

    /// Records a name under which the registry lists this process; `false` if it has ended.
    pub(crate) fn add_name(&self, name: &Name) -> bool {
        let x = self.extras();
        let mut g = x.lock();
        if g.exited.is_some() {
            return false;
        }
        if !g.names.contains(name) {
            g.names.push(name.clone());
        }
        true
    }

    /// This process starts (or stops) trapping exits.
    pub(crate) fn set_trap(&self, trap: Option<Trap<M>>) {
        let old = std::mem::replace(&mut self.extras().lock().trap, trap);
        drop(old);
    }

    /// This process monitors `target`: remembered so that the monitor goes when it ends.
    pub(crate) fn add_watching(&self, mref: MonitorRef, target: AnyPid) {
        self.extras().lock().watching.push((mref, target));
    }

    /// Forgets a monitor this process holds; the target, if it was found.
    pub(crate) fn take_watching(&self, mref: MonitorRef) -> Option<AnyPid> {
        let x = self.extras_if_any()?;
        let mut g = x.lock();
        let i = g.watching.iter().position(|(r, _)| *r == mref)?;
        Some(g.watching.swap_remove(i).1)
    }

    /// The process has ended (its body is dropped): close the mailbox for good, drop what is
    /// queued, and tell the registry, links and monitors, in that order: a supervisor that
    /// restarts the process on its link signal finds the name free, and whoever learns of
    /// the end from a monitor (or `on_exit`) knows that the link signals are already sent.
    pub(crate) fn exited(&self, reason: Exit) {
        let queued = self.mailbox.exit();
        // SAFETY: `exit` handed the queued nodes over to us.
        unsafe { super::mailbox::free_list(queued) };
        let Some(x) = self.extras_or_install_exited(&reason) else {
            return;
        };
        let (links, watching, names, trap, waker) = {
            let mut g = x.lock();
            g.exited = Some(reason.clone());
            g.signalling_links = true;
            g.kill_reason = None;
            (
                std::mem::take(&mut g.links),
                std::mem::take(&mut g.watching),
                std::mem::take(&mut g.names),
                g.trap.take(),
                g.recv_waker.take(),
            )
        };
        drop((trap, waker));
        let me = self.id();
        for name in names {
            super::registry::forget(&name, me);
        }
        for (mref, target) in watching {
            target.ctl().remove_monitor(mref);
        }
        for l in links {
            l.ctl().remove_link(me);
            l.ctl().signal(me, &reason, false);
        }
        // The monitors last, those added while the links were signalled included.
        let monitors = {
            let mut g = x.lock();
            g.signalling_links = false;
            std::mem::take(&mut g.monitors)
        };
        for (_, notify) in monitors {
            contained(|| notify(me, &reason));
        }
    }

    /// At exit: the extras, or `None` when nobody can ever ask about this process. If it has
    /// none yet but handles to it exist, installs some with the reason already recorded, so
    /// that later links and monitors learn it.
    fn extras_or_install_exited(&self, reason: &Exit) -> Option<&Extras<M>> {
        if let Some(x) = self.extras_if_any() {
            return Some(x);
        }
        // The process's own reference is the one we hold (its mailbox went with its body).
        // If it is the only one, no handle exists and none can be made (handles are only
        // cloned from handles): nobody will ever link, monitor or name this process. But a
        // handle may have made extras (and monitored through them) after the load above and
        // been dropped since: the `Acquire` load that sees it gone makes everything it did
        // visible, so look again (not looking misses that monitor, and `on_exit` breaks).
        if self.ref_count() == 1 {
            return self.extras_if_any();
        }
        // Installed: recorded, and there were no links, monitors or names to notify. Found
        // some made meanwhile: the caller notifies through them.
        self.install_extras(Extras::new(Some(reason.clone()))).err()
    }
}

impl<M: Send + 'static> Ctl for Block<M> {
    fn id(&self) -> ProcessId {
        Block::id(self)
    }
    fn is_alive(&self) -> bool {
        self.mailbox.is_alive()
    }
    fn signal(&self, from: ProcessId, reason: &Exit, untrappable: bool) {
        Block::signal(self, from, reason, untrappable)
    }
    fn kill(&self) {
        Block::kill(self)
    }
    fn add_link(&self, other: &AnyPid) -> Result<(), Exit> {
        Block::add_link(self, other)
    }
    fn remove_link(&self, other: ProcessId) {
        Block::remove_link(self, other)
    }
    fn add_monitor(&self, mref: MonitorRef, notify: Notify) -> Result<(), (Notify, Exit)> {
        Block::add_monitor(self, mref, notify)
    }
    fn remove_monitor(&self, mref: MonitorRef) -> bool {
        Block::remove_monitor(self, mref)
    }
    fn add_name(&self, name: &Name) -> bool {
        Block::add_name(self, name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn retain(&self) {
        Block::retain(self)
    }
    fn release_fn(&self) -> unsafe fn(std::ptr::NonNull<()>) {
        /// Gives up a reference on a `Block<M>` at `p`.
        ///
        /// # Safety
        /// As `Block::release`.
        unsafe fn release<M>(p: std::ptr::NonNull<()>) {
            // SAFETY: forwarded; `p` is the block's address with its provenance.
            unsafe { Block::<M>::release(p.cast()) }
        }
        release::<M>
    }
}

/// Links two processes (both directions). A process that has already ended sends its exit
/// signal to the other at once, as if it had ended just after the link.
pub(crate) fn link(a: &AnyPid, b: &AnyPid) {
    if a.id() == b.id() {
        return;
    }
    if let Err(reason) = a.ctl().add_link(b) {
        // `a` has ended (its links were notified without `b`): `b` gets the signal now.
        b.ctl().signal(a.id(), &reason, false);
        return;
    }
    if let Err(reason) = b.ctl().add_link(a) {
        a.ctl().remove_link(b.id());
        a.ctl().signal(b.id(), &reason, false);
        return;
    }
    // `a` may have ended between the two halves: its exit signalled `b` (it found `b` in its
    // links; its mailbox says EXITED before it takes them), but `b`'s half, added after,
    // would point at a dead process for ever.
    if !a.is_alive() {
        b.ctl().remove_link(a.id());
    }
}

/// Removes the link between two processes, both directions.
pub(crate) fn unlink(a: &AnyPid, b: &AnyPid) {
    a.ctl().remove_link(b.id());
    b.ctl().remove_link(a.id());
}
