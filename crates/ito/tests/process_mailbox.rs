//! Mailboxes: order per sender, no loss or duplication under concurrent senders, selective
//! receive, sends to ended processes, receives polled with foreign wakers, the size of a
//! process, and document 001's chain.

mod support;

use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use ito::process::{self, Exit, Mailbox, Pid, SendError};
use support::LONG;

/// Waits for a process to end, failing the test instead of hanging.
fn ended<M: Send + 'static>(p: &Pid<M>) -> Exit {
    p.on_exit()
        .wait_timeout(LONG)
        .expect("the process did not end in time")
        .expect("on_exit never fails")
}

#[test]
fn messages_from_one_sender_arrive_in_order() {
    const N: u64 = if cfg!(miri) { 100 } else { 10_000 };
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<u64>| async move {
        for want in 0..N {
            let got = mb.recv().await;
            if got != want {
                tx.send(Err(format!("got {got}, expected {want}"))).unwrap();
                return;
            }
        }
        tx.send(Ok(())).unwrap();
    });
    for i in 0..N {
        p.send(i).unwrap();
    }
    assert_eq!(rx.recv_timeout(LONG).unwrap(), Ok(()));
    assert_eq!(ended(&p), Exit::Normal);
}

/// Eight threads and eight processes send at once; the receiver counts every message and
/// checks each sender's order.
#[test]
fn concurrent_senders_lose_nothing() {
    const SENDERS: usize = 8;
    const PER: u32 = if cfg!(miri) { 20 } else { 20_000 };
    let (tx, rx) = mpsc::channel();
    let receiver = process::spawn(move |mut mb: Mailbox<(usize, u32)>| async move {
        let mut next = [0u32; 2 * SENDERS];
        for _ in 0..2 * SENDERS * PER as usize {
            let (s, seq) = mb.recv().await;
            if seq != next[s] {
                return Err(format!("sender {s}: got #{seq}, expected #{}", next[s]));
            }
            next[s] += 1;
        }
        // Every sender is done by now (the test joined them), nothing more may come.
        tx.send(next).unwrap();
        Ok(())
    });
    let threads: Vec<_> = (0..SENDERS)
        .map(|s| {
            let r = receiver.clone();
            std::thread::spawn(move || {
                for i in 0..PER {
                    r.send((s, i)).unwrap();
                }
            })
        })
        .collect();
    for s in SENDERS..2 * SENDERS {
        let r = receiver.clone();
        process::spawn(move |_: Mailbox<()>| async move {
            for i in 0..PER {
                r.send((s, i)).unwrap();
            }
        });
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(rx.recv_timeout(LONG).unwrap(), [PER; 2 * SENDERS]);
    assert_eq!(ended(&receiver), Exit::Normal);
}

#[test]
fn selective_receive_leaves_the_rest_in_order() {
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<u32>| async move {
        // Wait until all ten are queued, so the first match is picked from the middle.
        let first = mb.recv_matching(|&n| n == 10).await;
        let even = mb.recv_matching(|&n| n % 2 == 0).await;
        // A match that is not there yet: waits, and the scan does not start over.
        let tested = AtomicUsize::new(0);
        let late = mb
            .recv_matching(|&n| {
                tested.fetch_add(1, Ordering::Relaxed);
                n == 100
            })
            .await;
        let mut rest = Vec::new();
        while let Some(n) = mb.try_recv() {
            rest.push(n);
        }
        tx.send((first, even, late, tested.into_inner(), rest))
            .unwrap();
    });
    for n in 1..=10 {
        p.send(n).unwrap();
    }
    // The process may still be waiting for 10 or already waiting for 100.
    std::thread::sleep(Duration::from_millis(5));
    p.send(11).unwrap();
    p.send(100).unwrap();
    let (first, even, late, tested, rest) = rx.recv_timeout(LONG).unwrap();
    assert_eq!((first, even, late), (10, 2, 100));
    // 1, 3..9, 11 and 100 were each tested once.
    assert_eq!(tested, 10);
    assert_eq!(rest, vec![1, 3, 4, 5, 6, 7, 8, 9, 11]);
    assert_eq!(ended(&p), Exit::Normal);
}

#[test]
fn a_send_to_an_ended_process_gives_the_message_back() {
    let p = process::spawn(|_: Mailbox<String>| async {});
    assert_eq!(ended(&p), Exit::Normal);
    assert!(!p.is_alive());
    let SendError(msg) = p.send("late".to_string()).unwrap_err();
    assert_eq!(msg, "late");

    // A process that dropped its mailbox refuses messages too, while it still runs.
    let (tx, rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let q = process::spawn(move |mb: Mailbox<u8>| async move {
        drop(mb);
        tx.send(()).unwrap();
        let _ = go_rx.recv_timeout(LONG);
    });
    rx.recv_timeout(LONG).unwrap();
    assert!(q.is_alive());
    assert_eq!(q.send(3).unwrap_err().0, 3);
    go_tx.send(()).unwrap();
    assert_eq!(ended(&q), Exit::Normal);
}

/// Counts drops of messages.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn messages_left_behind_are_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<()>();
    let p = process::spawn(move |mut mb: Mailbox<Counted>| async move {
        let first = mb.recv().await; // take one into the private list's worth
        drop(first);
        let _ = tx.send(());
        mb.recv_matching(|_| false).await; // skips the rest, keeps them queued; never ends
    });
    for _ in 0..10 {
        p.send(Counted(drops.clone())).unwrap();
    }
    rx.recv_timeout(LONG).unwrap();
    p.kill();
    assert_eq!(ended(&p), Exit::Killed);
    assert_eq!(drops.load(Ordering::SeqCst), 10);
}

#[test]
fn try_recv_and_recv_timeout() {
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<u8>| async move {
        let empty = mb.try_recv();
        let timed_out = mb.recv_timeout(Duration::from_millis(2)).await;
        tx.send(()).unwrap();
        let got = mb.recv_timeout(LONG).await;
        if (empty, timed_out, got) == (None, None, Some(9)) {
            Ok(())
        } else {
            Err(format!("{empty:?} {timed_out:?} {got:?}"))
        }
    });
    rx.recv_timeout(LONG).unwrap();
    p.send(9).unwrap();
    assert_eq!(ended(&p), Exit::Normal);
}

/// Polls the inner future with a waker of its own, which wakes the outer one: what
/// combinators that track their children separately do.
struct OwnWaker<F>(Pin<Box<F>>);

struct Forward(Waker);

impl Wake for Forward {
    fn wake(self: Arc<Self>) {
        self.0.wake_by_ref();
    }
}

impl<F: StdFuture> StdFuture for OwnWaker<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let w = Waker::from(Arc::new(Forward(cx.waker().clone())));
        self.0.as_mut().poll(&mut Context::from_waker(&w))
    }
}

#[test]
fn a_receive_with_its_own_waker_is_woken() {
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<u32>| async move {
        for _ in 0..100 {
            let v = OwnWaker(Box::pin(mb.recv())).await;
            tx.send(v).unwrap();
        }
    });
    for i in 0..100 {
        p.send(i).unwrap();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), i);
    }
    assert_eq!(ended(&p), Exit::Normal);
}

#[test]
fn a_mailbox_moved_into_another_task_still_receives() {
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<u32>| async move {
        let helper = ito::spawn(async move {
            let mut sum = 0;
            for _ in 0..50 {
                sum += mb.recv().await;
            }
            sum
        });
        tx.send(helper.await.unwrap()).unwrap();
    });
    for i in 0..50 {
        p.send(i).unwrap();
        std::thread::yield_now();
    }
    assert_eq!(rx.recv_timeout(LONG).unwrap(), (0..50).sum::<u32>());
    assert_eq!(ended(&p), Exit::Normal);
}

#[test]
fn a_waiting_process_is_small() {
    let next: Option<Pid<u64>> = None;
    let (task, block) = process::process_size(&move |mut mb: Mailbox<u64>| async move {
        let n = mb.recv().await;
        if let Some(p) = &next {
            let _ = p.send(n + 1);
        }
    });
    // Measured: 80 + 40 (the task: 24 header, 8 reference count, 48 body; the block:
    // reference count, mailbox word, waker slot, extras pointer). The slab adds nothing.
    assert!(task <= 80, "process task is {task} bytes");
    assert!(block <= 40, "process block is {block} bytes");
}

/// Ids live in the extras, taken on first use; process memory is reused at once (the slab
/// hands a freed block to the next spawn), and ids must not be.
#[test]
fn ids_are_unique_and_stable_though_memory_is_reused() {
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let p = process::spawn(|mut mb: Mailbox<u8>| async move {
            mb.recv().await;
        });
        let q = p.clone();
        assert_eq!(p, q);
        let id = p.id();
        assert!(seen.insert(id), "id {id} given out twice");
        p.send(0).unwrap();
        assert_eq!(ended(&p), Exit::Normal);
        assert_eq!(q.id(), id, "an id changed when its process ended");
        assert_eq!(process::AnyPid::from(&q).id(), id);
        // Handles compare by identity, without ids.
        let r = process::spawn(|_: Mailbox<u8>| async {});
        assert_ne!(r, p);
        assert_eq!(r, r.clone());
    }
}

#[test]
fn document_001_chain() {
    const N: u64 = if cfg!(miri) { 100 } else { 10_000 };
    let (tx, rx) = mpsc::channel();
    let driver = process::spawn(move |mut mb: Mailbox<u64>| async move {
        let mut next = mb.pid();
        for _ in 0..N {
            let to = next;
            next = process::spawn(move |mut mb: Mailbox<u64>| async move {
                let n = mb.recv().await;
                to.send(n + 1).unwrap();
            });
        }
        next.send(0).unwrap();
        tx.send(mb.recv().await).unwrap();
    });
    assert_eq!(rx.recv_timeout(LONG).unwrap(), N);
    assert_eq!(ended(&driver), Exit::Normal);
}
