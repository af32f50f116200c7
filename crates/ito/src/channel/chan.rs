//! The channel itself: a buffer and two FIFO wait lists under one mutex (Go's `hchan`).
//!
//! # Who touches what
//!
//! Everything in [`State`] is guarded by the mutex: the buffer, the `closed` flag, the waiting
//! senders (each node holds the value it wants to send) and the waiting receivers (each node
//! has an empty slot). `senders` / `receivers` (the handle counts) are atomics touched by
//! `clone` and `drop` of the handles; the last one of either kind closes the channel.
//!
//! # Invariants (under the lock)
//!
//! - receivers wait only while the buffer is empty and no sender waits;
//! - senders wait only while the buffer holds `cap` values or more and no receiver waits
//!   (so for a rendezvous channel, `cap == 0`, a sender always waits unless a receiver does);
//! - once `closed` is set nobody is queued: `close` dequeues everyone, and nothing queues
//!   after it.
//!
//! # Hand-off
//!
//! A value goes to the oldest waiting receiver directly (written into its node, which is
//! dequeued and woken), else into the buffer; a receive takes the oldest buffered value and
//! moves the oldest waiting sender's value into the freed place (waking that sender), or, with
//! nothing buffered, takes the value from the oldest waiting sender directly. That direct
//! take is the rendezvous: a sender on a `bounded(0)` channel completes only once a receiver
//! has its value in hand.
//!
//! # Cancel safety
//!
//! A send future dropped while queued leaves the queue (its value is dropped with it; the
//! blocking `send_blocking` takes it back instead and returns it in the error). A receive
//! future dropped after a value was handed to it, but before it returned it, gives the value
//! to the next waiting receiver, or puts it back at the front of the buffer (which may then
//! hold one value more than `cap`, briefly): a value accepted by the channel is never lost
//! while a receiver exists.
//!
//! # Why a lock and not a lock-free queue
//!
//! Every operation that finds something to do changes two things at once (the buffer and a
//! waiter, or a waiter and the closed flag), and the rendezvous has no buffer at all, so a
//! lock-free buffer (crossbeam's `ArrayQueue`, `SegQueue`) would still need a lock, or a
//! second protocol, for the waiters, and closing would race with pushes (a value pushed just
//! after a receiver saw "closed and empty" would be lost). One short critical section per
//! operation gives exact FIFO hand-off, close semantics and cancel safety with nothing to
//! model but the lock; uncontended it costs one lock and one unlock (two atomic operations,
//! about what one lock-free push costs). This is the design of Go's channels and of `flume`.

use std::collections::VecDeque;

use super::error::{SendError, TryRecvError, TrySendError};
use crate::loom::{AtomicUsize, Mutex, MutexGuard};
use crate::sync::wait_list::{Phase, WaitList, Waiter, WakeList};
use std::task::{Context, Poll};

use super::RecvError;

/// A channel shared by its senders and receivers.
pub(crate) struct Chan<T> {
    state: Mutex<State<T>>,
    /// Buffer capacity: `usize::MAX` for an unbounded channel, 0 for a rendezvous.
    cap: usize,
    /// `Sender` handles alive.
    pub(crate) senders: AtomicUsize,
    /// `Receiver` handles alive.
    pub(crate) receivers: AtomicUsize,
}

/// What a waiter wants or was given: a sender's value (taken by the receiver it goes to), or
/// a receiver's empty slot (filled by the sender). `closed`: dequeued by `close`.
pub(crate) struct Slot<T> {
    value: Option<T>,
    closed: bool,
}

impl<T> Slot<T> {
    fn empty() -> Self {
        Slot {
            value: None,
            closed: false,
        }
    }
}

struct State<T> {
    buf: VecDeque<T>,
    closed: bool,
    senders: WaitList<Slot<T>>,
    receivers: WaitList<Slot<T>>,
}

impl<T> Chan<T> {
    /// A channel with one sender and one receiver handle.
    pub(crate) fn new(cap: Option<usize>) -> Self {
        let cap = cap.unwrap_or(usize::MAX);
        Chan {
            state: Mutex::new(State {
                // A bounded buffer never grows past `cap` (+1, see the module docs), so
                // allocate it once; an unbounded one grows as needed.
                buf: VecDeque::with_capacity(if cap == usize::MAX { 0 } else { cap }),
                closed: false,
                senders: WaitList::new(),
                receivers: WaitList::new(),
            }),
            cap,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
        }
    }

    #[inline]
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing in a critical section panics (no user code runs under the lock), so the
        // state is consistent even if a thread was unwound while holding it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The capacity (`None`: unbounded).
    pub(crate) fn capacity(&self) -> Option<usize> {
        (self.cap != usize::MAX).then_some(self.cap)
    }

    /// Values buffered.
    pub(crate) fn len(&self) -> usize {
        self.lock().buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(crate) fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        let mut wakes = WakeList::new();
        let r = self.lock().send_now(self.cap, v, &mut wakes);
        wakes.wake_all();
        r
    }

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut wakes = WakeList::new();
        let r = self.lock().recv_now(self.cap, &mut wakes);
        wakes.wake_all();
        r
    }

    /// Closes the channel; `false` if it already was.
    pub(crate) fn close(&self) -> bool {
        let mut wakes = WakeList::new();
        let closed = self.lock().close(&mut wakes);
        wakes.wake_all();
        closed
    }

    /// The last receiver is gone: close, and drop what is buffered (outside the lock: a
    /// value's destructor is user code).
    pub(crate) fn close_and_drain(&self) {
        let mut wakes = WakeList::new();
        let drained = {
            let mut st = self.lock();
            st.close(&mut wakes);
            std::mem::take(&mut st.buf)
        };
        wakes.wake_all();
        drop(drained);
    }
}

impl<T> State<T> {
    /// Sends `v` if that needs no waiting: to the oldest waiting receiver, else into the
    /// buffer.
    fn send_now(&mut self, cap: usize, v: T, wakes: &mut WakeList) -> Result<(), TrySendError<T>> {
        if self.closed {
            return Err(TrySendError::Closed(v));
        }
        let v = match self.hand_to_receiver(v, wakes) {
            Ok(()) => return Ok(()),
            Err(v) => v,
        };
        if self.buf.len() < cap {
            self.buf.push_back(v);
            return Ok(());
        }
        Err(TrySendError::Full(v))
    }

    /// Gives `v` to the oldest waiting receiver; hands it back if none waits.
    fn hand_to_receiver(&mut self, v: T, wakes: &mut WakeList) -> Result<(), T> {
        let Some(r) = self.receivers.pop_front() else {
            return Err(v);
        };
        // SAFETY: a node of this list, dequeued just now under the lock we hold; its future
        // cannot free it before it takes the lock.
        unsafe {
            self.receivers.with(r, |f| {
                f.payload.value = Some(v);
                wakes.push(f.take_waker());
            })
        };
        Ok(())
    }

    /// Receives if that needs no waiting: the oldest buffered value (refilling the buffer
    /// from waiting senders), else the oldest waiting sender's value.
    fn recv_now(&mut self, cap: usize, wakes: &mut WakeList) -> Result<T, TryRecvError> {
        if let Some(v) = self.buf.pop_front() {
            while self.buf.len() < cap {
                match self.take_from_sender(wakes) {
                    Some(s) => self.buf.push_back(s),
                    None => break,
                }
            }
            return Ok(v);
        }
        if let Some(v) = self.take_from_sender(wakes) {
            return Ok(v);
        }
        Err(if self.closed {
            TryRecvError::Closed
        } else {
            TryRecvError::Empty
        })
    }

    /// Takes the oldest waiting sender's value, completing its send.
    fn take_from_sender(&mut self, wakes: &mut WakeList) -> Option<T> {
        let s = self.senders.pop_front()?;
        // SAFETY: as in `hand_to_receiver`.
        let v = unsafe {
            self.senders.with(s, |f| {
                wakes.push(f.take_waker());
                f.payload.value.take()
            })
        };
        debug_assert!(v.is_some(), "a waiting sender without a value");
        v
    }

    /// Sets `closed` and dequeues every waiter (marked closed); `false` if already closed.
    fn close(&mut self, wakes: &mut WakeList) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        for list in [&mut self.receivers, &mut self.senders] {
            while let Some(node) = list.pop_front() {
                // SAFETY: as in `hand_to_receiver`.
                unsafe {
                    list.with(node, |f| {
                        f.payload.closed = true;
                        wakes.push(f.take_waker());
                    })
                };
            }
        }
        true
    }
}

/// The waiting part of a send, without the reference to the channel (shared by the send
/// future and `send_blocking`).
pub(crate) struct RawSend<T> {
    node: Waiter<Slot<T>>,
    /// The value until it is sent or queued (then it is in the node).
    value: Option<T>,
    phase: Phase,
}

impl<T> RawSend<T> {
    pub(crate) fn new(v: T) -> Self {
        RawSend {
            node: Waiter::new(Slot::empty()),
            value: Some(v),
            phase: Phase::Start,
        }
    }

    /// Polls the send. The node must not move while queued (callers are pinned futures).
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        let mut wakes = WakeList::new();
        let r = {
            let mut st = chan.lock();
            match self.phase {
                Phase::Start => {
                    let v = self
                        .value
                        .take()
                        .expect("a send's value is there until sent");
                    match st.send_now(chan.cap, v, &mut wakes) {
                        Ok(()) => Poll::Ready(Ok(())),
                        Err(TrySendError::Closed(v)) => Poll::Ready(Err(SendError(v))),
                        Err(TrySendError::Full(v)) => {
                            let node = self.node.ptr();
                            // SAFETY: our node, pinned in its future, which removes it under
                            // this lock before it is freed; registered with this channel only.
                            unsafe {
                                st.senders.with(node, |f| {
                                    f.payload.value = Some(v);
                                    f.set_waker(cx.waker());
                                });
                                st.senders.push_back(node);
                            }
                            self.phase = Phase::Queued;
                            Poll::Pending
                        }
                    }
                }
                Phase::Queued => {
                    // SAFETY: our node; we hold the channel's lock.
                    unsafe {
                        st.senders.with(self.node.ptr(), |f| {
                            if f.is_queued() {
                                f.set_waker(cx.waker());
                                Poll::Pending
                            } else if f.payload.closed {
                                let v = f
                                    .payload
                                    .value
                                    .take()
                                    .expect("a failed send keeps its value");
                                Poll::Ready(Err(SendError(v)))
                            } else {
                                Poll::Ready(Ok(()))
                            }
                        })
                    }
                }
                Phase::Done => panic!("channel: a send polled after it completed"),
            }
        };
        wakes.wake_all();
        if r.is_ready() {
            self.phase = Phase::Done;
        }
        r
    }

    /// Gives up: leaves the queue. Returns the value if it was not sent (`None` if a receiver
    /// took it).
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) -> Option<T> {
        match self.phase {
            Phase::Start => self.value.take(),
            Phase::Done => None,
            Phase::Queued => {
                self.phase = Phase::Done;
                let mut st = chan.lock();
                let node = self.node.ptr();
                // SAFETY: our node, registered with this channel; we hold its lock. Removed or
                // dequeued, its value (if any) is still ours.
                unsafe {
                    st.senders.remove(node);
                    st.senders.with(node, |f| f.payload.value.take())
                }
            }
        }
    }
}

/// The waiting part of a receive, without the reference to the channel (shared by the receive
/// future, `recv_blocking` and the receiver's `Stream`).
pub(crate) struct RawRecv<T> {
    node: Waiter<Slot<T>>,
    phase: Phase,
}

impl<T> RawRecv<T> {
    pub(crate) fn new() -> Self {
        RawRecv {
            node: Waiter::new(Slot::empty()),
            phase: Phase::Start,
        }
    }

    /// Polls the receive. The node must not move while queued.
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, RecvError>> {
        let mut wakes = WakeList::new();
        let r = {
            let mut st = chan.lock();
            match self.phase {
                Phase::Start => match st.recv_now(chan.cap, &mut wakes) {
                    Ok(v) => Poll::Ready(Ok(v)),
                    Err(TryRecvError::Closed) => Poll::Ready(Err(RecvError::Closed)),
                    Err(TryRecvError::Empty) => {
                        let node = self.node.ptr();
                        // SAFETY: as for `RawSend::poll`.
                        unsafe {
                            st.receivers.with(node, |f| {
                                f.payload = Slot::empty();
                                f.set_waker(cx.waker());
                            });
                            st.receivers.push_back(node);
                        }
                        self.phase = Phase::Queued;
                        Poll::Pending
                    }
                },
                Phase::Queued => {
                    // SAFETY: our node; we hold the channel's lock.
                    let r = unsafe {
                        st.receivers.with(self.node.ptr(), |f| {
                            if f.is_queued() {
                                f.set_waker(cx.waker());
                                Poll::Pending
                            } else {
                                Poll::Ready(f.payload.value.take())
                            }
                        })
                    };
                    match r {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(Some(v)) => Poll::Ready(Ok(v)),
                        // Dequeued by `close`. A value may have come back into the buffer
                        // since (a receive dropped after it was handed one): drain first.
                        Poll::Ready(None) => Poll::Ready(
                            st.recv_now(chan.cap, &mut wakes)
                                .map_err(|_| RecvError::Closed),
                        ),
                    }
                }
                Phase::Done => panic!("channel: a receive polled after it completed"),
            }
        };
        wakes.wake_all();
        if r.is_ready() {
            self.phase = Phase::Done;
        }
        r
    }

    /// Makes a finished receive ready for the next one (the receiver's `Stream`).
    pub(crate) fn rearm(&mut self) {
        debug_assert_eq!(self.phase, Phase::Done);
        self.phase = Phase::Start;
    }

    /// Gives up: leaves the queue; a value handed to this receiver but not returned goes to
    /// the next waiting receiver, or back to the front of the buffer.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) {
        if self.phase != Phase::Queued {
            return;
        }
        self.phase = Phase::Done;
        let mut wakes = WakeList::new();
        {
            let mut st = chan.lock();
            let node = self.node.ptr();
            // SAFETY: our node, registered with this channel; we hold its lock.
            let handed = unsafe {
                if st.receivers.remove(node) {
                    None
                } else {
                    st.receivers.with(node, |f| f.payload.value.take())
                }
            };
            if let Some(v) = handed {
                if let Err(v) = st.hand_to_receiver(v, &mut wakes) {
                    st.buf.push_front(v);
                }
            }
        }
        wakes.wake_all();
    }
}
