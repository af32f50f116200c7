//! The process mailbox (`process/mailbox.rs`) under every interleaving loom finds: a push
//! racing a receiver that finds the queue empty and waits, the waker registered late (after
//! the first wait was armed), kills racing pushes for the waker slot, the process exiting
//! while a claimant holds the slot, and a close racing a push; and the process block's
//! reference count (`BlockRef`): the last of two racing releases frees it, once; and a monitor
//! added while the process ends fires only after its link signals are sent.
//!
//! A waiting receiver parks its loom thread and its waker unparks it, so a lost wake-up is a
//! loom deadlock.

use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::task::{Wake, Waker};

use loom::sync::Arc;
use loom::thread;

use crate::process::{BlockRef, MailboxCore, Node, NodeBox, Take};

/// A waker that unparks one loom thread and counts its wake-ups.
struct ParkWake {
    thread: thread::Thread,
    wakes: StdAtomicUsize,
}

impl Wake for ParkWake {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &StdArc<Self>) {
        self.wakes.fetch_add(1, StdOrdering::SeqCst);
        self.thread.unpark();
    }
}

fn park_waker() -> (StdArc<ParkWake>, Waker) {
    let w = StdArc::new(ParkWake {
        thread: thread::current(),
        wakes: StdAtomicUsize::new(0),
    });
    let waker = Waker::from(w.clone());
    (w, waker)
}

/// A one-way gate: `pass` waits (yielding to loom) until another thread `open`s it.
#[derive(Default)]
struct Gate(loom::sync::atomic::AtomicBool);

impl Gate {
    fn open(&self) {
        self.0.store(true, loom::sync::atomic::Ordering::Release);
    }
    fn pass(&self) {
        while !self.0.load(loom::sync::atomic::Ordering::Acquire) {
            thread::yield_now();
        }
    }
}

/// Frees a taken batch (newest first) and returns its values in arrival order.
fn drain<M>(p: *mut Node<M>) -> Vec<M> {
    let mut out = Vec::new();
    let mut p = p;
    while !p.is_null() {
        // SAFETY: a taken batch belongs to the receiver.
        let node = unsafe { NodeBox::from_raw(p) };
        p = node.next();
        out.push(node.into_value());
    }
    out.reverse();
    out
}

/// The receiver of a process: registers its waker the first time it waits (as the process
/// wrapper does), waits by parking, and returns once it has `want` messages.
fn receive<M>(mb: &MailboxCore<M>, waker: &Waker, want: usize) -> Vec<M> {
    let mut got = Vec::new();
    let mut registered = false;
    loop {
        match mb.take_or_arm() {
            Take::Batch(p) => {
                got.extend(drain(p));
                if got.len() >= want {
                    return got;
                }
                continue;
            }
            Take::Empty => {}
            Take::Gone => panic!("the mailbox closed under the receiver"),
        }
        if !registered {
            registered = true;
            if mb.register(waker) {
                continue; // the wrapper's self-wake: poll again
            }
        }
        thread::park();
    }
}

/// A push races the receiver finding the queue empty and arming its wake-up: the message
/// is received, never lost, whichever comes first.
#[test]
fn loom_mailbox_push_wakes_receiver() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let (registered, m1) = (Arc::new(Gate::default()), mb.clone());
        let r2 = registered.clone();
        let receiver = thread::spawn(move || {
            let (_w, waker) = park_waker();
            assert!(!m1.register(&waker));
            r2.open();
            receive(&m1, &waker, 1)
        });
        registered.pass();
        assert!(mb.push(NodeBox::new(7), || {}).is_ok());
        assert_eq!(receiver.join().unwrap(), vec![7]);
    });
}

/// The waker is registered only after the first wait was armed (a process registers the
/// first time its body returns `Pending`): a push claimed in between woke nothing, and the
/// registration must notice.
#[test]
fn loom_mailbox_late_registration() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let m1 = mb.clone();
        let receiver = thread::spawn(move || {
            let (_w, waker) = park_waker();
            receive(&m1, &waker, 1)
        });
        assert!(mb.push(NodeBox::new(1), || {}).is_ok());
        assert_eq!(receiver.join().unwrap(), vec![1]);
    });
}

/// Two senders (two messages and one): every message arrives exactly once, each sender's in
/// order.
#[test]
fn loom_mailbox_two_senders_keep_order() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let m1 = mb.clone();
        let receiver = thread::spawn(move || {
            let (_w, waker) = park_waker();
            receive(&m1, &waker, 3)
        });
        let m2 = mb.clone();
        let other = thread::spawn(move || assert!(m2.push(NodeBox::new(20), || {}).is_ok()));
        for k in 0..2 {
            assert!(mb.push(NodeBox::new(10 + k), || {}).is_ok());
        }
        other.join().unwrap();
        let got = receiver.join().unwrap();
        let from = |base: u32| -> Vec<u32> {
            got.iter()
                .copied()
                .filter(|v| v / 10 == base / 10)
                .collect()
        };
        assert_eq!(from(10), vec![10, 11]);
        assert_eq!(from(20), vec![20]);
    });
}

/// A kill and a push race for the waker slot while the receiver waits: the receiver is
/// woken for the kill even when the push held the slot (the holder wakes again on its way
/// out), and gets the message.
#[test]
fn loom_mailbox_kill_races_push() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let (registered, m0) = (Arc::new(Gate::default()), mb.clone());
        let r2 = registered.clone();
        // The process: wait for a message, then (like a body blocked on something else
        // that its wrapper keeps polling) wait until it sees the kill.
        let process = thread::spawn(move || {
            let (_w, waker) = park_waker();
            assert!(!m0.register(&waker));
            r2.open();
            let got = receive(&m0, &waker, 1);
            while !m0.is_killed() {
                thread::park();
            }
            got
        });
        registered.pass();
        let m1 = mb.clone();
        let pusher = thread::spawn(move || assert!(m1.push(NodeBox::new(3), || {}).is_ok()));
        assert!(mb.kill(|| {}));
        pusher.join().unwrap();
        assert_eq!(process.join().unwrap(), vec![3]);
    });
}

/// A kill races the registration of the waker (the first time the body waits, here on
/// something other than its mailbox): the process is woken, or sees at registration that it
/// must poll again.
#[test]
fn loom_mailbox_kill_races_registration() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let m0 = mb.clone();
        let process = thread::spawn(move || {
            let (_w, waker) = park_waker();
            if m0.register(&waker) {
                // The wrapper polls again at once, and its poll starts with the kill check.
                assert!(m0.is_killed());
                return;
            }
            while !m0.is_killed() {
                thread::park();
            }
        });
        assert!(mb.kill(|| {}));
        process.join().unwrap();
    });
}

/// The process exits while a claimant may hold the waker slot: the waker is dropped exactly
/// once (by the process, or by the claimant on its way out), never used after.
#[test]
fn loom_mailbox_exit_races_claimant() {
    loom::model(|| {
        let mb = Arc::new(MailboxCore::<u32>::new());
        let (armed, m0) = (Arc::new(Gate::default()), mb.clone());
        let a2 = armed.clone();
        let process = thread::spawn(move || {
            let (w, waker) = park_waker();
            assert!(!m0.register(&waker));
            drop(waker);
            assert!(matches!(m0.take_or_arm(), Take::Empty)); // armed: the push will claim
            a2.open();
            let _ = drain(m0.exit());
            w
        });
        armed.pass();
        // Refused (handed back) if the process has exited.
        let _ = mb.push(NodeBox::new(5), || {});
        let w = process.join().unwrap();
        assert_eq!(StdArc::strong_count(&w), 1, "the slot's waker leaked");
        assert!(!mb.is_alive());
    });
}

/// Counts drops, to check that a message is dropped exactly once.
struct Counted(StdArc<StdAtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, StdOrdering::SeqCst);
    }
}

/// A push races the receiver dropping its mailbox: the message is either handed back to the
/// sender or dropped with the mailbox; exactly once either way.
#[test]
fn loom_mailbox_close_races_push() {
    loom::model(|| {
        let drops = StdArc::new(StdAtomicUsize::new(0));
        let mb = Arc::new(MailboxCore::<Counted>::new());
        let m2 = mb.clone();
        let d2 = drops.clone();
        let pusher = thread::spawn(move || m2.push(NodeBox::new(Counted(d2)), || {}).is_ok());
        let queued = mb.close();
        drop(drain(queued));
        let delivered = pusher.join().unwrap();
        assert_eq!(drops.load(StdOrdering::SeqCst), 1);
        // A refused push got its message back (dropped by the sender above); a delivered one
        // was in the stack the close took.
        let _ = delivered;
        assert!(matches!(mb.take(), Take::Gone));
    });
}

/// Two references to a process block given up at once, one of them right after queueing a
/// message: exactly one release is the last, and it drops the block (whose mailbox drops the
/// message) once.
#[test]
fn loom_block_last_reference_frees_once() {
    loom::model(|| {
        let drops = StdArc::new(StdAtomicUsize::new(0));
        let a = BlockRef::<Counted>::new();
        let b = a.clone();
        let d2 = drops.clone();
        let sender = thread::spawn(move || {
            assert!(b.mailbox.push(NodeBox::new(Counted(d2)), || {}).is_ok());
            drop(b);
        });
        drop(a);
        sender.join().unwrap();
        assert_eq!(
            drops.load(StdOrdering::SeqCst),
            1,
            "the message dropped once"
        );
    });
}

/// A handle monitors a process and is dropped while the process ends (`Block::exited`, run
/// with the process's own reference): the monitor fires exactly once. The handle makes the
/// extras (its monitor is their first use) and gives up its reference right after, so the
/// process can find no extras and then no handle: it must look for extras again after it has
/// seen the handles gone, or the monitor is dropped unfired (`on_exit` broken).
#[test]
fn loom_exit_races_a_monitor_and_the_last_handle() {
    use crate::process::{Exit, MonitorRef, ProcessId};
    loom::model(|| {
        let fired = StdArc::new(StdAtomicUsize::new(0));
        let own = BlockRef::<u8>::new();
        let handle = own.clone();
        let f2 = fired.clone();
        let watcher = thread::spawn(move || {
            let f3 = f2.clone();
            let notify: crate::process::Notify = Box::new(move |_, reason: &Exit| {
                assert_eq!(*reason, Exit::Normal);
                f3.fetch_add(1, StdOrdering::SeqCst);
            });
            let mref = MonitorRef::new(ProcessId::new(1));
            if let Err((notify, reason)) = handle.add_monitor(mref, notify) {
                notify(ProcessId::new(1), &reason);
            }
            drop(handle);
        });
        own.exited(Exit::Normal);
        drop(own);
        watcher.join().unwrap();
        assert_eq!(fired.load(StdOrdering::SeqCst), 1, "the monitor fired once");
    });
}

/// A process ends while a watcher adds a monitor to it (`on_exit` is one): the monitor learns
/// of the end only after the process's linked processes got their exit signals. A supervisor
/// that asks for its children after `on_exit` returned relies on it: its link signal is then
/// already in its mailbox, ahead of the request.
#[test]
fn loom_a_monitor_added_during_the_exit_fires_after_the_link_signals() {
    use crate::process::{AnyPid, Exit, MonitorRef, Pid, ProcessId, link};
    loom::model(|| {
        let own = BlockRef::<u8>::new();
        let linked = BlockRef::<u8>::new();
        link(
            &AnyPid::from(&Pid { block: own.clone() }),
            &AnyPid::from(&Pid {
                block: linked.clone(),
            }),
        );
        let handle = own.clone();
        let ending = thread::spawn(move || {
            handle.exited(Exit::reason("ended"));
        });
        let watched = linked.clone();
        let notify: crate::process::Notify = Box::new(move |_, _: &Exit| {
            // Not trapping exits, the linked process is killed by the signal, which records it.
            assert_eq!(
                watched.kill_reason(),
                Exit::reason("ended"),
                "a monitor fired before a link signal"
            );
        });
        if let Err((notify, reason)) = own.add_monitor(MonitorRef::new(ProcessId::new(1)), notify) {
            notify(ProcessId::new(1), &reason);
        }
        ending.join().unwrap();
    });
}
