//! Supervisors: processes that start children, watch them, and restart them when they end
//! (Erlang/OTP's `supervisor`).
//!
//! A supervisor traps exits and links to each child it starts, so a child's end reaches it as
//! a message. What it then does depends on the child's [`Restart`] type and the exit reason,
//! and on the supervisor's [`Strategy`]:
//!
//! | strategy | a child that must be restarted... |
//! |---|---|
//! | [`Strategy::OneForOne`] | is restarted alone |
//! | [`Strategy::OneForAll`] | takes every other child down with it (in reverse start order), and all are started again in order |
//! | [`Strategy::RestForOne`] | takes down the children started after it (in reverse order); it and they are started again in order |
//!
//! Stopping a child is a kill with reason [`Exit::Shutdown`] (its body is dropped, so its
//! destructors run), and the supervisor waits until it has ended before it starts anything:
//! an old child and its replacement never overlap (a registered name is free again).
//!
//! **Intensity.** More than `max_restarts` restarts within `period` (Erlang's defaults: 1 in
//! 5 seconds) means something is wrong that restarting will not fix: the supervisor stops
//! every child (reverse order) and ends with [`Exit::Shutdown`], and so its own supervisor, if
//! any, hears of it.
//!
//! A child whose start function panics counts as a child that ended with that panic.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::call::{CallError, ReplyTo, call};
use super::exit::ExitSignal;
use super::pid::{AnyPid, Pid, ProcessId};
use super::reason::Exit;
use super::receive::Mailbox;
use crate::Failure;

/// How a supervisor restarts its children. See [`Supervisor`].
///
/// ```
/// use ito::process::{Strategy, Supervisor};
/// let sup = Supervisor::new(Strategy::RestForOne).spawn();
/// sup.kill();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// Restart only the child that ended.
    OneForOne,
    /// Restart every child when one ends.
    OneForAll,
    /// Restart the child that ended and those started after it.
    RestForOne,
}

/// When a child is restarted.
///
/// ```
/// use ito::process::{ChildSpec, Restart};
/// let spec = ChildSpec::new("job", || {
///     ito::process::spawn(|_: ito::process::Mailbox<()>| async {})
/// })
/// .restart(Restart::Transient);
/// assert_eq!(spec.name(), "job");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always (the default).
    Permanent,
    /// Only if it ended abnormally: not [`Exit::Normal`], not [`Exit::Shutdown`].
    Transient,
    /// Never; once it has ended it is forgotten.
    Temporary,
}

/// How to start one child: a name, a function that spawns it, and its [`Restart`] type.
///
/// ```
/// use ito::process::{self, Mailbox};
/// use ito::process::ChildSpec;
/// let spec = ChildSpec::new("echo", || {
///     process::spawn(|mut mb: Mailbox<String>| async move {
///         loop {
///             let _ = mb.recv().await;
///         }
///     })
/// });
/// assert_eq!(spec.name(), "echo");
/// ```
#[derive(Clone)]
pub struct ChildSpec {
    name: Arc<str>,
    start: Arc<dyn Fn() -> AnyPid + Send + Sync>,
    restart: Restart,
}

impl ChildSpec {
    /// A permanent child named `name`, started (and restarted) by calling `start`.
    ///
    /// ```
    /// use ito::process::{self, ChildSpec, Mailbox};
    /// let spec = ChildSpec::new("idle", || {
    ///     process::spawn(|mut mb: Mailbox<u8>| async move {
    ///         mb.recv().await;
    ///     })
    /// });
    /// let shown = format!("{spec:?}");
    /// assert_eq!(shown, r#"ChildSpec { name: "idle", restart: Permanent, .. }"#);
    /// ```
    pub fn new<M: Send + 'static>(
        name: impl Into<Arc<str>>,
        start: impl Fn() -> Pid<M> + Send + Sync + 'static,
    ) -> ChildSpec {
        ChildSpec {
            name: name.into(),
            start: Arc::new(move || start().erase()),
            restart: Restart::Permanent,
        }
    }

    /// Sets the restart type.
    ///
    /// ```
    /// use ito::process::{self, ChildSpec, Mailbox, Restart};
    /// let once = ChildSpec::new("once", || process::spawn(|_: Mailbox<()>| async {}))
    ///     .restart(Restart::Temporary);
    /// assert!(format!("{once:?}").contains("Temporary"));
    /// ```
    pub fn restart(mut self, restart: Restart) -> ChildSpec {
        self.restart = restart;
        self
    }

    /// The child's name.
    ///
    /// ```
    /// use ito::process::{self, ChildSpec, Mailbox};
    /// let db = ChildSpec::new(String::from("db"), || process::spawn(|_: Mailbox<()>| async {}));
    /// assert_eq!(db.name(), "db");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

/// A supervisor to be started: its strategy, intensity and children.
///
/// A supervisor is a process that traps exits and links to each child it starts, so a
/// child's end reaches it as a message. What it then does depends on the child's
/// [`Restart`] type and exit reason, and on the supervisor's [`Strategy`]: a child that must
/// be restarted is restarted alone ([`Strategy::OneForOne`]), or takes every other child
/// down with it and all start again in order ([`Strategy::OneForAll`]), or takes down the
/// children started after it, which start again with it ([`Strategy::RestForOne`]).
/// Children are spawned in order; each body runs when a worker gets to it.
///
/// Stopping a child is a kill with reason [`Exit::Shutdown`] (its body is dropped, so its
/// destructors run), last-started first, and the supervisor waits until each has ended
/// before it goes on: an old child and its replacement never overlap (a registered name is
/// free again). A child that never yields to the scheduler cannot be stopped.
///
/// More than `max_restarts` restarts within `period` ([`intensity`](Self::intensity);
/// Erlang's default, 1 in 5 s) means restarting does not help: the supervisor stops every
/// child and ends with [`Exit::Shutdown`], so that its own supervisor, if any, hears of it. A
/// child whose start function panics counts as a child that ended with that panic.
///
/// ```
/// use std::time::Duration;
/// use ito::process::{self, Mailbox};
/// use ito::process::{ChildSpec, Strategy, Supervisor};
/// let worker = || process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
/// let sup = Supervisor::new(Strategy::OneForOne)
///     .intensity(3, Duration::from_secs(1))
///     .child(ChildSpec::new("a", worker))
///     .child(ChildSpec::new("b", worker))
///     .spawn();
/// let t = Duration::from_secs(5);
/// let before = ito::block_on(sup.which_children(t)).unwrap();
/// let a = before[0].pid.clone().unwrap();
/// a.kill(); // "a" crashes...
/// a.on_exit().wait().unwrap(); // (its link signal reached the supervisor before this)
/// let after = ito::block_on(sup.which_children(t)).unwrap();
/// assert_ne!(after[0].pid, before[0].pid); // ... is restarted,
/// assert_eq!(after[1].pid, before[1].pid); // and only "a"
/// sup.stop();
/// assert!(sup.on_exit().wait().unwrap().is_normal());
/// ```
#[derive(Debug)]
pub struct Supervisor {
    strategy: Strategy,
    max_restarts: u32,
    period: Duration,
    children: Vec<ChildSpec>,
}

impl Supervisor {
    /// A supervisor with no children and Erlang's default intensity (1 restart in 5 s).
    ///
    /// ```
    /// use ito::process::{Strategy, Supervisor};
    /// let sup = Supervisor::new(Strategy::OneForAll);
    /// assert_eq!(
    ///     format!("{sup:?}"),
    ///     "Supervisor { strategy: OneForAll, max_restarts: 1, period: 5s, children: [] }"
    /// );
    /// ```
    pub fn new(strategy: Strategy) -> Supervisor {
        Supervisor {
            strategy,
            max_restarts: 1,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// At most `max_restarts` restarts within any `period`; one more and the supervisor gives
    /// up (stops its children and ends with [`Exit::Shutdown`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{self, ChildSpec, Exit, Mailbox, Strategy, Supervisor};
    /// let flaky = || process::spawn(|_: Mailbox<()>| async { Err::<(), _>("cannot start") });
    /// let sup = Supervisor::new(Strategy::OneForOne)
    ///     .intensity(2, Duration::from_secs(60))
    ///     .child(ChildSpec::new("flaky", flaky))
    ///     .spawn();
    /// // The first start and two restarts fail; the third failure is one too many.
    /// assert_eq!(sup.on_exit().wait(), Ok(Exit::Shutdown));
    /// ```
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Supervisor {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a child; children start in the order they are added.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{self, ChildSpec, Mailbox, Strategy, Supervisor};
    /// let idle = || process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// let sup = Supervisor::new(Strategy::RestForOne)
    ///     .child(ChildSpec::new("first", idle))
    ///     .child(ChildSpec::new("second", idle))
    ///     .spawn();
    /// let kids = ito::block_on(sup.which_children(Duration::from_secs(5))).unwrap();
    /// let names: Vec<&str> = kids.iter().map(|c| &*c.name).collect();
    /// assert_eq!(names, ["first", "second"]);
    /// sup.stop();
    /// ```
    pub fn child(mut self, spec: ChildSpec) -> Supervisor {
        self.children.push(spec);
        self
    }

    /// Starts the supervisor (a process) on the current runtime; it starts its children.
    ///
    /// ```
    /// use ito::process::{Pid, Strategy, Supervisor, SupervisorMsg};
    /// let sup: Pid<SupervisorMsg> = Supervisor::new(Strategy::OneForOne).spawn();
    /// assert!(sup.is_alive());
    /// sup.kill();
    /// ```
    pub fn spawn(self) -> Pid<SupervisorMsg> {
        super::spawn(move |mb| supervise(self, mb))
    }
}

/// A message to a supervisor (opaque: use the methods on `Pid<SupervisorMsg>`).
///
/// ```
/// use ito::process::{Exit, Pid, Strategy, Supervisor, SupervisorMsg};
/// fn shut_down(sup: &Pid<SupervisorMsg>) -> Exit {
///     sup.stop();
///     sup.on_exit().wait().unwrap()
/// }
/// assert_eq!(shut_down(&Supervisor::new(Strategy::OneForOne).spawn()), Exit::Normal);
/// ```
pub struct SupervisorMsg(Msg);

enum Msg {
    Exit(ExitSignal),
    WhichChildren(ReplyTo<Vec<ChildInfo>>),
    Stop,
}

impl fmt::Debug for SupervisorMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Msg::Exit(s) => f.debug_tuple("Exit").field(s).finish(),
            Msg::WhichChildren(_) => f.write_str("WhichChildren"),
            Msg::Stop => f.write_str("Stop"),
        }
    }
}

/// One child, as [`which_children`](Pid::which_children) reports it.
///
/// ```
/// use std::time::Duration;
/// use ito::process::{self, ChildSpec, Mailbox, Restart, Strategy, Supervisor};
/// let start = || process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
/// let sup = Supervisor::new(Strategy::OneForOne)
///     .child(ChildSpec::new("job", start).restart(Restart::Transient))
///     .spawn();
/// let info = &ito::block_on(sup.which_children(Duration::from_secs(5))).unwrap()[0];
/// assert_eq!((&*info.name, info.restart), ("job", Restart::Transient));
/// assert!(info.pid.as_ref().is_some_and(|p| p.is_alive()));
/// sup.stop();
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChildInfo {
    /// The child's name.
    pub name: Arc<str>,
    /// The running process, or `None` if it is not running (a transient child that ended
    /// normally, or one being restarted).
    pub pid: Option<AnyPid>,
    /// Its restart type.
    pub restart: Restart,
}

impl Pid<SupervisorMsg> {
    /// The supervisor's children, in start order (Erlang's `which_children`). Fails if the
    /// supervisor has ended or does not answer within `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{Strategy, Supervisor};
    /// let sup = Supervisor::new(Strategy::OneForOne).spawn();
    /// let t = Duration::from_secs(5);
    /// assert!(ito::block_on(sup.which_children(t)).unwrap().is_empty());
    /// sup.stop();
    /// sup.on_exit().wait().unwrap();
    /// assert!(ito::block_on(sup.which_children(t)).is_err());
    /// ```
    pub async fn which_children(
        &self,
        timeout: Duration,
    ) -> Result<Vec<ChildInfo>, CallError<SupervisorMsg>> {
        call(self, |r| SupervisorMsg(Msg::WhichChildren(r)), timeout).await
    }

    /// Asks the supervisor to stop its children (in reverse start order) and end normally.
    /// Returns at once; `on_exit` tells when it is done. Does nothing if it has ended.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{self, ChildSpec, Exit, Mailbox, Strategy, Supervisor};
    /// let worker = || process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// let sup = Supervisor::new(Strategy::OneForOne)
    ///     .child(ChildSpec::new("w", worker))
    ///     .spawn();
    /// let kids = ito::block_on(sup.which_children(Duration::from_secs(5))).unwrap();
    /// sup.stop();
    /// assert_eq!(sup.on_exit().wait(), Ok(Exit::Normal));
    /// let w = kids[0].pid.as_ref().unwrap();
    /// assert_eq!(w.on_exit().wait(), Ok(Exit::Shutdown));
    /// ```
    pub fn stop(&self) {
        let _ = self.send(SupervisorMsg(Msg::Stop));
    }
}

struct Child {
    spec: ChildSpec,
    pid: Option<AnyPid>,
    /// A temporary child that ended: forgotten.
    gone: bool,
}

struct State {
    strategy: Strategy,
    max_restarts: u32,
    period: Duration,
    children: Vec<Child>,
    /// When the recent restarts happened (for the intensity).
    restarts: VecDeque<Instant>,
    /// Children whose start function panicked, to be handled like ended children.
    failed: VecDeque<(usize, Exit)>,
}

/// The supervisor's body.
async fn supervise(sup: Supervisor, mut mb: Mailbox<SupervisorMsg>) -> Exit {
    mb.trap_exits(|sig| SupervisorMsg(Msg::Exit(sig)));
    let mut st = State {
        strategy: sup.strategy,
        max_restarts: sup.max_restarts,
        period: sup.period,
        children: sup
            .children
            .into_iter()
            .map(|spec| Child {
                spec,
                pid: None,
                gone: false,
            })
            .collect(),
        restarts: VecDeque::new(),
        failed: VecDeque::new(),
    };
    for i in 0..st.children.len() {
        st.start(i, &mb);
    }
    loop {
        if let Some((i, reason)) = st.failed.pop_front() {
            // Stale if the child was started again since (by a group restart).
            if st.children[i].pid.is_none() {
                if let Err(end) = st.child_ended(i, reason, &mb).await {
                    return end;
                }
            }
            continue;
        }
        match mb.recv().await.0 {
            Msg::Exit(sig) => {
                // Exit signals from processes that are not current children (one stopped by
                // the supervisor itself, or something else linked to it) are ignored.
                if let Some(i) = st.find(sig.from) {
                    if let Err(end) = st.child_ended(i, sig.reason, &mb).await {
                        return end;
                    }
                }
            }
            Msg::WhichChildren(reply) => reply.reply(st.info()),
            Msg::Stop => {
                st.stop_all().await;
                return Exit::Normal;
            }
        }
    }
}

impl State {
    fn find(&self, id: ProcessId) -> Option<usize> {
        self.children
            .iter()
            .position(|c| c.pid.as_ref().is_some_and(|p| p.id() == id))
    }

    fn info(&self) -> Vec<ChildInfo> {
        self.children
            .iter()
            .filter(|c| !c.gone)
            .map(|c| ChildInfo {
                name: c.spec.name.clone(),
                pid: c.pid.clone(),
                restart: c.spec.restart,
            })
            .collect()
    }

    /// Starts child `i` and links to it; a panicking start is queued as a failure.
    fn start(&mut self, i: usize, mb: &Mailbox<SupervisorMsg>) {
        let start = self.children[i].spec.start.clone();
        match catch_unwind(AssertUnwindSafe(|| start())) {
            Ok(pid) => {
                // If it has already ended, the link delivers its exit signal at once.
                mb.link(&pid);
                self.children[i].pid = Some(pid);
            }
            Err(payload) => {
                let reason = Exit::from(Failure::from_panic(payload));
                self.failed.push_back((i, reason));
            }
        }
    }

    /// Stops child `i` (if running) and waits until it has ended.
    async fn stop_child(&mut self, i: usize) {
        if let Some(pid) = self.children[i].pid.take() {
            pid.ctl().signal(pid.id(), &Exit::Shutdown, true);
            // Its link signal comes later and is ignored (it is no longer a current child).
            let _ = pid.on_exit().await;
        }
    }

    /// Stops every child, last started first.
    async fn stop_all(&mut self) {
        for i in (0..self.children.len()).rev() {
            self.stop_child(i).await;
        }
    }

    /// Counts a restart; `false` if that exceeds the intensity.
    fn note_restart(&mut self) -> bool {
        let now = Instant::now();
        self.restarts.push_back(now);
        while self
            .restarts
            .front()
            .is_some_and(|&t| now.duration_since(t) > self.period)
        {
            self.restarts.pop_front();
        }
        self.restarts.len() <= self.max_restarts as usize
    }

    /// Child `i` ended with `reason`: restart what the strategy says. `Err` with the
    /// supervisor's own exit reason when the intensity is exceeded.
    async fn child_ended(
        &mut self,
        i: usize,
        reason: Exit,
        mb: &Mailbox<SupervisorMsg>,
    ) -> Result<(), Exit> {
        self.children[i].pid = None;
        let restart = match self.children[i].spec.restart {
            Restart::Permanent => true,
            Restart::Transient => !(reason.is_normal() || reason == Exit::Shutdown),
            Restart::Temporary => false,
        };
        if !restart {
            if self.children[i].spec.restart == Restart::Temporary {
                self.children[i].gone = true;
            }
            return Ok(());
        }
        if !self.note_restart() {
            self.stop_all().await;
            return Err(Exit::Shutdown);
        }
        let n = self.children.len();
        let group = match self.strategy {
            Strategy::OneForOne => i..i + 1,
            Strategy::OneForAll => 0..n,
            Strategy::RestForOne => i..n,
        };
        for j in group.clone().rev() {
            if j != i {
                self.stop_child(j).await;
            }
        }
        for j in group {
            let c = &mut self.children[j];
            if c.gone {
                continue;
            }
            if j != i && c.spec.restart == Restart::Temporary {
                // Stopped with the group, never restarted.
                c.gone = true;
                continue;
            }
            self.start(j, mb);
        }
        Ok(())
    }
}
