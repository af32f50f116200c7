//! The receiving end: [`Mailbox<M>`], its private FIFO list, and the receive futures.
//!
//! Messages wait in two places: the shared stack of the mailbox core (`mailbox.rs`), where
//! senders push, and the mailbox's private list, in arrival order, where the receiver keeps
//! what it took from the stack and has not consumed. A receive looks at the private list
//! first; when it runs out it takes the whole stack at once (one CAS), reverses it and
//! appends it. A selective receive ([`Mailbox::recv_matching`]) leaves what it skips in the
//! private list, in order, and remembers how far it looked, so each message is tested once
//! per receive.

use std::future::Future as StdFuture;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::block::BlockRef;
use super::exit::{self, Down, ExitSignal, MonitorRef};
use super::mailbox::{Node, NodeBox, Take, free_list, reverse};
use super::pid::{AnyPid, Pid, ProcessId};
use super::reason::IntoExit;

/// A process's mailbox: how it receives its messages, and how it links, monitors and traps
/// exits. Each process gets its own from [`spawn`](super::spawn).
///
/// Receiving needs `&mut self`: one receive at a time. The mailbox closes when the process
/// ends or drops it; later sends fail and hand their message back. A mailbox may be moved
/// into another task of the process's own (receives there are woken too); if the process
/// ends meanwhile, that task keeps what the mailbox had already taken and receives nothing
/// more.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let (tx, rx) = std::sync::mpsc::channel();
/// let adder = process::spawn(move |mut mb: Mailbox<u64>| async move {
///     let mut sum = 0;
///     for _ in 0..3 {
///         sum += mb.recv().await;
///     }
///     tx.send(sum).unwrap();
/// });
/// for i in 1..=3 {
///     adder.send(i).unwrap();
/// }
/// assert_eq!(rx.recv().unwrap(), 6);
/// ```
pub struct Mailbox<M> {
    pub(crate) block: BlockRef<M>,
    /// The private list, oldest first; only this mailbox touches it.
    head: *mut Node<M>,
    _not_clone: PhantomData<Box<M>>,
}

// SAFETY: the private list is owned by the mailbox (its messages are `Send`); the block is
// shared by design. (No `'static` bound here: async bodies holding a mailbox of borrowed
// `'static` data must stay `Send` after the compiler erases their lifetimes.)
unsafe impl<M: Send> Send for Mailbox<M> {}
// SAFETY: `&Mailbox` methods never touch the private list (receiving takes `&mut self`).
unsafe impl<M: Send> Sync for Mailbox<M> {}

impl<M: Send + 'static> Mailbox<M> {
    pub(crate) fn new(block: BlockRef<M>) -> Self {
        Mailbox {
            block,
            head: ptr::null_mut(),
            _not_clone: PhantomData,
        }
    }

    /// Waits for the next message, in arrival order.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<&str>| async move {
    ///     assert_eq!(mb.recv().await, "first");
    ///     assert_eq!(mb.recv().await, "second");
    /// });
    /// p.send("first").unwrap();
    /// p.send("second").unwrap();
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn recv(&mut self) -> Recv<'_, M> {
        Recv { mb: self }
    }

    /// The next message if one is queued, without waiting.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<u8>| async move {
    ///     assert_eq!(mb.try_recv(), None);
    /// });
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn try_recv(&mut self) -> Option<M> {
        if let Some(v) = self.pop() {
            return Some(v);
        }
        match self.block.mailbox.take() {
            Take::Batch(p) => {
                self.append(ptr::null_mut(), p);
                self.pop()
            }
            Take::Empty | Take::Gone => None,
        }
    }

    /// The next message, or `None` if none comes within `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<u8>| async move {
    ///     assert_eq!(mb.recv_timeout(Duration::from_millis(5)).await, None);
    /// });
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Option<M> {
        crate::timeout(timeout, self.recv()).await.ok()
    }

    /// Waits for the first message, in arrival order, for which `pred` is true (Erlang's
    /// selective `receive`). Messages it passes over stay queued, in order, for later
    /// receives. Each message is tested at most once per call. To bound the wait, wrap it in
    /// [`ito::timeout`](crate::timeout).
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<u32>| async move {
    ///     assert_eq!(mb.recv_matching(|&n| n > 10).await, 42);
    ///     assert_eq!(mb.recv().await, 1);
    ///     assert_eq!(mb.recv().await, 2);
    /// });
    /// for n in [1, 2, 42] {
    ///     p.send(n).unwrap();
    /// }
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn recv_matching<P: FnMut(&M) -> bool>(&mut self, pred: P) -> RecvMatching<'_, M, P> {
        RecvMatching {
            mb: self,
            pred,
            scanned: ptr::null_mut(),
            armed: false,
        }
    }

    /// This process's own address.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<u8>| async move {
    ///     mb.pid().send(5).unwrap();
    ///     assert_eq!(mb.recv().await, 5);
    /// });
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn pid(&self) -> Pid<M> {
        Pid {
            block: self.block.clone(),
        }
    }

    /// This process's id (as [`Pid::id`](super::Pid::id)).
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let p = process::spawn(move |mb: Mailbox<()>| async move { tx.send(mb.id()).unwrap() });
    /// assert_eq!(rx.recv().unwrap(), p.id());
    /// ```
    pub fn id(&self) -> ProcessId {
        self.block.id()
    }

    /// Links this process with `other`: when either ends, the other gets an exit signal
    /// (the [module docs](crate::process) say what it does). Linking a process that has ended
    /// delivers its exit signal at once.
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let worker = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// let w = worker.clone();
    /// let boss = process::spawn(move |mut mb: Mailbox<()>| async move {
    ///     mb.link(&w);
    ///     mb.recv().await
    /// });
    /// worker.kill();
    /// assert_eq!(boss.on_exit().wait(), Ok(Exit::Killed));
    /// ```
    pub fn link(&self, other: impl Into<AnyPid>) {
        exit::link(&self.pid().erase(), &other.into());
    }

    /// Removes the link with `other`, if any.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let worker = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
    /// let w = worker.clone();
    /// let boss = process::spawn(move |mut mb: Mailbox<()>| async move {
    ///     mb.link(&w);
    ///     mb.unlink(&w);
    ///     w.kill();
    ///     w.on_exit().await.unwrap();
    ///     mb.recv().await // still alive
    /// });
    /// assert!(boss.is_alive());
    /// # boss.send(()).unwrap();
    /// # boss.on_exit().wait().unwrap();
    /// ```
    pub fn unlink(&self, other: impl Into<AnyPid>) {
        exit::unlink(&self.pid().erase(), &other.into());
    }

    /// Spawns a process linked to this one (Erlang's `spawn_link`).
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let parent = process::spawn(|mut mb: Mailbox<()>| async move {
    ///     mb.spawn_link(|_: Mailbox<()>| async { panic!("child failed") });
    ///     mb.recv().await
    /// });
    /// assert_eq!(parent.on_exit().wait(), Ok(Exit::Panic("child failed".into())));
    /// ```
    pub fn spawn_link<N, F, Fut>(&self, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Mailbox<N>) -> Fut,
        Fut: StdFuture + Send + 'static,
        Fut::Output: IntoExit,
    {
        let child = super::spawn(f);
        self.link(&child);
        child
    }

    /// Traps exits: exit signals from linked processes no longer kill this process; each
    /// arrives as the message `map(signal)` instead (a [`kill`](Pid::kill) still kills).
    ///
    /// ```
    /// use ito::process::{self, Exit, ExitSignal, Mailbox};
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// process::spawn(move |mut mb: Mailbox<Option<ExitSignal>>| async move {
    ///     mb.trap_exits(Some);
    ///     let child = mb.spawn_link(|_: Mailbox<()>| async { Err::<(), _>("gave up") });
    ///     let sig = mb.recv().await.unwrap();
    ///     tx.send((sig.from == child.id(), sig.reason)).unwrap();
    /// });
    /// assert_eq!(rx.recv().unwrap(), (true, Exit::reason("gave up")));
    /// ```
    pub fn trap_exits(&self, map: impl Fn(ExitSignal) -> M + Send + Sync + 'static) {
        self.block.set_trap(Some(Arc::new(map)));
    }

    /// Stops trapping exits: exit signals kill this process again (unless normal).
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let p = process::spawn(|mut mb: Mailbox<()>| async move {
    ///     mb.trap_exits(|_| ());
    ///     mb.stop_trapping_exits();
    ///     mb.spawn_link(|_: Mailbox<()>| async { Err::<(), _>("bye") });
    ///     mb.recv().await
    /// });
    /// assert_eq!(p.on_exit().wait(), Ok(Exit::reason("bye")));
    /// ```
    pub fn stop_trapping_exits(&self) {
        self.block.set_trap(None);
    }

    /// Monitors `target`: when it ends (at once if it has), this process receives
    /// `map(down)` with the reason. Returns the monitor's reference, found again in the
    /// [`Down`]. A process may monitor another several times; each monitor fires once.
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// process::spawn(move |mut mb: Mailbox<Exit>| async move {
    ///     let short = process::spawn(|_: Mailbox<()>| async {});
    ///     mb.monitor(&short, |down| down.reason);
    ///     tx.send(mb.recv().await).unwrap();
    /// });
    /// assert_eq!(rx.recv().unwrap(), Exit::Normal);
    /// ```
    pub fn monitor(
        &self,
        target: impl Into<AnyPid>,
        map: impl FnOnce(Down) -> M + Send + 'static,
    ) -> MonitorRef {
        let target = target.into();
        let mref = MonitorRef::new(target.id());
        let me = self.pid();
        let notify: exit::Notify = Box::new(move |from, reason| {
            let down = Down {
                monitor: mref,
                from,
                reason: reason.clone(),
            };
            let _ = me.send(map(down));
        });
        self.block.add_watching(mref, target.clone());
        if let Err((notify, reason)) = target.ctl().add_monitor(mref, notify) {
            let _ = self.block.take_watching(mref);
            notify(target.id(), &reason);
        }
        mref
    }

    /// Cancels a monitor this process made. `true` if it was still active (no [`Down`] from
    /// it will come); `false` if it had fired (its `Down` may be queued) or was cancelled.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|mb: Mailbox<()>| async move {
    ///     let other = process::spawn(|mut m: Mailbox<()>| async move { m.recv().await });
    ///     let r = mb.monitor(&other, |_| ());
    ///     assert!(mb.demonitor(r));
    ///     other.kill();
    /// });
    /// assert!(p.on_exit().wait().unwrap().is_normal());
    /// ```
    pub fn demonitor(&self, mref: MonitorRef) -> bool {
        match self.block.take_watching(mref) {
            Some(target) => target.ctl().remove_monitor(mref),
            None => false,
        }
    }

    // ----- the private list -----

    /// Pops the oldest message of the private list.
    #[inline]
    fn pop(&mut self) -> Option<M> {
        if self.head.is_null() {
            return None;
        }
        // SAFETY: the private list and its nodes are ours.
        let node = unsafe { NodeBox::from_raw(self.head) };
        self.head = node.next();
        Some(node.into_value())
    }

    /// Appends a taken stack (newest first), in arrival order, after `tail` (null: the list
    /// is empty). Returns the new tail.
    #[inline]
    fn append(&mut self, tail: *mut Node<M>, stack: *mut Node<M>) -> *mut Node<M> {
        // SAFETY: a taken stack is ours (the CAS that took it removed it from the word).
        let (first, last) = unsafe { reverse(stack) };
        if tail.is_null() {
            debug_assert!(self.head.is_null());
            self.head = first;
        } else {
            // SAFETY: `tail` is the last node of our private list.
            unsafe { (*tail).next = first };
        }
        last
    }

    /// Before waiting: if `cx`'s waker is not the one a wake-up reaches (this is not the
    /// process's own task, or a combinator gave this receive a waker of its own), leave it
    /// where claimants look.
    fn prepare_wait(&self, cx: &Context<'_>) {
        let block = &*self.block;
        if super::run::is_own_waker(block, cx.waker()) {
            if let Some(x) = block.extras_if_any() {
                x.clear_recv_waker();
            }
        } else {
            block.extras().set_recv_waker(cx.waker());
        }
    }

    /// Takes what senders pushed, appending it after `tail`, or arms the wake-up if nothing
    /// came. Returns the new tail, or `None` when armed (or the mailbox is gone).
    fn refill_or_arm(&mut self, tail: *mut Node<M>, cx: &Context<'_>) -> Option<*mut Node<M>> {
        if let Take::Batch(p) = self.block.mailbox.take() {
            return Some(self.append(tail, p));
        }
        self.prepare_wait(cx);
        match self.block.mailbox.take_or_arm() {
            Take::Batch(p) => Some(self.append(tail, p)),
            Take::Empty | Take::Gone => None,
        }
    }
}

impl<M> Drop for Mailbox<M> {
    fn drop(&mut self) {
        let queued = self.block.mailbox.close();
        // SAFETY: `close` handed the queued nodes over; the private list is ours.
        unsafe {
            free_list(queued);
            free_list(self.head);
        }
    }
}

impl<M: Send + 'static> std::fmt::Debug for Mailbox<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mailbox({})", self.block.id())
    }
}

/// The future of [`Mailbox::recv`]: the next message.
///
/// Dropping it while it waits (a timeout) may leave the mailbox's wake-up armed: the next
/// message then wakes the process once for nothing.
///
/// ```
/// use ito::process::{self, Mailbox, Recv};
/// let (tx, rx) = std::sync::mpsc::channel();
/// let p = process::spawn(move |mut mb: Mailbox<u8>| async move {
///     let next: Recv<'_, u8> = mb.recv();
///     tx.send(next.await).unwrap();
/// });
/// p.send(7).unwrap();
/// assert_eq!(rx.recv().unwrap(), 7);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a, M> {
    mb: &'a mut Mailbox<M>,
}

impl<M: Send + 'static> StdFuture for Recv<'_, M> {
    type Output = M;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<M> {
        let mb = &mut *self.get_mut().mb;
        if let Some(v) = mb.pop() {
            return Poll::Ready(v);
        }
        match mb.refill_or_arm(ptr::null_mut(), cx) {
            Some(_) => Poll::Ready(mb.pop().expect("a taken batch is never empty")),
            None => Poll::Pending,
        }
    }
}

/// The future of [`Mailbox::recv_matching`]: the first message that matches.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let (tx, rx) = std::sync::mpsc::channel();
/// let p = process::spawn(move |mut mb: Mailbox<i32>| async move {
///     let negative = mb.recv_matching(|n| *n < 0);
///     let first = negative.await;
///     tx.send((first, mb.recv().await)).unwrap();
/// });
/// p.send(1).unwrap();
/// p.send(-2).unwrap();
/// assert_eq!(rx.recv().unwrap(), (-2, 1)); // 1 stayed queued
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RecvMatching<'a, M, P> {
    mb: &'a mut Mailbox<M>,
    pred: P,
    /// The last node of the private list already tested (null: none).
    scanned: *mut Node<M>,
    armed: bool,
}

// SAFETY: `scanned` points into the mailbox's private list, which this future borrows
// mutably; the predicate moves with it.
unsafe impl<M: Send, P: Send> Send for RecvMatching<'_, M, P> {}

// Nothing is structurally pinned: the predicate is only called through `&mut`.
impl<M, P> Unpin for RecvMatching<'_, M, P> {}

impl<M: Send + 'static, P: FnMut(&M) -> bool> StdFuture for RecvMatching<'_, M, P> {
    type Output = M;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<M> {
        let this = self.get_mut();
        loop {
            let mut prev = this.scanned;
            let mut cur = if prev.is_null() {
                this.mb.head
            } else {
                // SAFETY: `scanned` is a live node of the private list (we only unlink the
                // node we return, and we stop then).
                unsafe { (*prev).next }
            };
            while !cur.is_null() {
                // SAFETY: a live node of our private list.
                if (this.pred)(unsafe { &(*cur).value }) {
                    // SAFETY: as above; unlinking it makes it ours.
                    let node = unsafe { NodeBox::from_raw(cur) };
                    if prev.is_null() {
                        this.mb.head = node.next();
                    } else {
                        // SAFETY: `prev` is the live node before `cur`.
                        unsafe { (*prev).next = node.next() };
                    }
                    this.scanned = prev;
                    if this.armed {
                        this.armed = false;
                        this.mb.block.mailbox.disarm();
                    }
                    return Poll::Ready(node.into_value());
                }
                prev = cur;
                // SAFETY: as above.
                cur = unsafe { (*cur).next };
            }
            this.scanned = prev;
            match this.mb.refill_or_arm(prev, cx) {
                Some(_) => this.armed = false,
                None => {
                    this.armed = true;
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<M, P> Drop for RecvMatching<'_, M, P> {
    fn drop(&mut self) {
        if self.armed {
            self.mb.block.mailbox.disarm();
        }
    }
}

impl<M: Send + 'static> std::fmt::Debug for Recv<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Recv").field(&*self.mb).finish()
    }
}

impl<M: Send + 'static, P> std::fmt::Debug for RecvMatching<'_, M, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvMatching")
            .field("mailbox", &*self.mb)
            .field("scanned", &!self.scanned.is_null())
            .finish_non_exhaustive()
    }
}
