//! How processes end, and who hears of it: exit reasons, links, trapping exits, monitors,
//! kills (of a process waiting for a message, and of one waiting for something else), and
//! the shutdown of a process's runtime.

mod support;

use std::collections::HashSet;
use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use ito::process::{self, AnyPid, Down, Exit, ExitSignal, IntoExit, Mailbox, Pid};
use support::{LONG, Overheated, quiet_expected_panics};

fn ended<M: Send + 'static>(p: &Pid<M>) -> Exit {
    p.on_exit()
        .wait_timeout(LONG)
        .expect("the process did not end in time")
        .expect("on_exit never fails")
}

/// A process that waits for a message for ever.
fn idle() -> Pid<()> {
    process::spawn(|mut mb: Mailbox<()>| async move {
        loop {
            mb.recv().await;
        }
    })
}

#[test]
fn exit_reasons() {
    quiet_expected_panics();
    let normal = process::spawn(|_: Mailbox<()>| async {});
    let ok = process::spawn(|_: Mailbox<()>| async { Ok::<(), Exit>(()) });
    let user = process::spawn(|_: Mailbox<()>| async { Err::<(), _>("out of coffee") });
    let direct = process::spawn(|_: Mailbox<()>| async { Exit::Shutdown });
    let panicked = process::spawn(|_: Mailbox<()>| async { panic!("expected: boom") });
    let failed = process::spawn(|_: Mailbox<()>| async {
        ito::Future::<u8>::failed(ito::Failure::Timeout).await?;
        Ok::<(), Exit>(())
    });
    assert_eq!(ended(&normal), Exit::Normal);
    assert_eq!(ended(&ok), Exit::Normal);
    assert_eq!(ended(&user), Exit::reason("out of coffee"));
    assert_eq!(ended(&direct), Exit::Shutdown);
    assert_eq!(ended(&panicked), Exit::Panic("expected: boom".into()));
    assert_eq!(ended(&failed), Exit::reason("timed out"));
}

/// Exits keep what they came from: an I/O error returned with `?`, any error through
/// `Box<dyn Error>`, a typed error from a failed future, and a panic's payload, which can be
/// resumed. Typed errors are equal only to themselves (and their clones).
#[test]
fn exit_reasons_keep_typed_errors_and_panic_payloads() {
    quiet_expected_panics();
    let io = process::spawn(|_: Mailbox<()>| async {
        std::fs::File::open("/no/such/file/anywhere")?;
        Ok::<(), std::io::Error>(())
    });
    let boxed = process::spawn(|_: Mailbox<()>| async {
        let _: u8 = "300".parse()?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    let from_future = process::spawn(|_: Mailbox<()>| async {
        ito::Future::<u8>::failed(ito::Failure::from_error(std::fmt::Error)).await?;
        Ok::<(), Exit>(())
    });
    let panicked = process::spawn(|_: Mailbox<()>| async { std::panic::panic_any(17u64) });
    let io = ended(&io);
    let e = io.downcast_ref::<std::io::Error>().expect("the io::Error");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(io, io.clone());
    assert_ne!(io, Exit::reason(io.to_string()));
    assert!(
        ended(&boxed)
            .downcast_ref::<std::num::ParseIntError>()
            .is_some()
    );
    assert!(
        ended(&from_future)
            .downcast_ref::<std::fmt::Error>()
            .is_some()
    );
    match ended(&panicked) {
        Exit::Panic(p) => {
            let payload = p.into_payload();
            assert_eq!(payload.downcast_ref::<u64>(), Some(&17));
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn check(degrees: u32) -> Result<(), Overheated> {
    if degrees > 80 {
        Err(Overheated(degrees))
    } else {
        Ok(())
    }
}

/// The reason a process running `body` ended with, as a trapping linked process, a monitor
/// and `on_exit` each got it.
fn heard<F, Fut>(body: F) -> [Exit; 3]
where
    F: FnOnce(Mailbox<()>) -> Fut + Send + 'static,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: IntoExit,
{
    enum Heard {
        Link(ExitSignal),
        Down(Down),
    }
    let (tx, rx) = mpsc::channel();
    let watcher = process::spawn(move |mut mb: Mailbox<Heard>| async move {
        mb.trap_exits(Heard::Link);
        let child = mb.spawn_link(body);
        mb.monitor(&child, Heard::Down);
        let (mut link, mut down) = (None, None);
        while link.is_none() || down.is_none() {
            match mb.recv().await {
                Heard::Link(sig) => link = Some(sig.reason),
                Heard::Down(d) => down = Some(d.reason),
            }
        }
        tx.send((child, link.unwrap(), down.unwrap())).unwrap();
    });
    let (child, link, down) = rx.recv_timeout(LONG).expect("the watcher heard nothing");
    assert_eq!(ended(&watcher), Exit::Normal);
    [link, down, ended(&child)]
}

/// Whatever error type a body returns, and whether it returns it or uses `?`, its links,
/// monitors and `on_exit` get an exit that gives the error back, with no double wrapping.
#[test]
fn bodies_keep_their_error_type_and_exits_carry_it() {
    let typed = heard(|_| async { Err::<(), _>(Overheated(90)) });
    let typed_q = heard(|_| async {
        check(91)?;
        Ok::<(), Overheated>(())
    });
    let boxed = heard(|_| async {
        check(92)?;
        Ok::<(), Box<dyn Error + Send + Sync>>(())
    });
    let exit = heard(|_| async {
        check(93)?;
        Ok::<(), Exit>(())
    });
    for (exits, degrees) in [(typed, 90), (typed_q, 91), (boxed, 92), (exit, 93)] {
        for e in exits {
            assert!(matches!(e, Exit::Error(_)), "{e:?}");
            assert_eq!(e.downcast_ref::<Overheated>(), Some(&Overheated(degrees)));
            assert_eq!(e.to_string(), format!("overheated at {degrees} degrees"));
        }
    }
    for e in heard(|_| async {
        std::fs::File::open("/no/such/file/anywhere")?;
        Ok::<(), std::io::Error>(())
    }) {
        let io = e.downcast_ref::<std::io::Error>().expect("the io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
    // An `Exit` stays what it is.
    let killed = heard(|_| async { Err::<(), _>(Exit::Killed) });
    let given = heard(|_| async { Err::<(), _>(Exit::from(Overheated(94))) });
    let reason = heard(|_| async { Err::<(), _>(Exit::reason("out of coffee")) });
    for ((k, g), r) in killed.into_iter().zip(given).zip(reason) {
        assert_eq!(k, Exit::Killed);
        assert_eq!(g.downcast_ref::<Overheated>(), Some(&Overheated(94)));
        assert_eq!(r, Exit::reason("out of coffee"));
    }
    // A text is a reason.
    let said = heard(|_| async { Err::<(), _>("out of tea") });
    let formatted = heard(|_| async { Err::<(), _>(format!("out of {}", "milk")) });
    for (s, f) in said.into_iter().zip(formatted) {
        assert_eq!(s, Exit::reason("out of tea"));
        assert_eq!(f, Exit::reason("out of milk"));
        assert!(s.downcast_ref::<Overheated>().is_none());
    }
}

/// A process that does not trap exits dies of a linked process's typed error with that same
/// error, which it passes on as it is.
#[test]
fn a_typed_error_kills_links_with_the_same_error() {
    let parent = process::spawn(|mut mb: Mailbox<()>| async move {
        mb.spawn_link(|_: Mailbox<()>| async { Err::<(), _>(Overheated(95)) });
        mb.recv().await
    });
    assert_eq!(
        ended(&parent).downcast_ref::<Overheated>(),
        Some(&Overheated(95))
    );
}

/// What a boxed or wrapped error holds decides the exit, not the box: a boxed `Failure`
/// keeps its kind, a `Failure` holding a user error gives that error.
#[test]
fn failures_in_boxes_keep_their_kind() {
    let boxed: Box<dyn Error + Send + Sync> = Box::new(ito::Failure::Timeout);
    assert_eq!(Exit::from(boxed), Exit::reason("timed out"));
    let inner = Exit::from(ito::Failure::from_error(Overheated(96)));
    assert_eq!(inner.downcast_ref::<Overheated>(), Some(&Overheated(96)));
    let boxed_str: Box<dyn Error + Send + Sync> = "said in a box".into();
    let e = Exit::from(boxed_str);
    assert!(matches!(e, Exit::Error(_)));
    assert_eq!(e.to_string(), "said in a box");
}

/// Equality and hashing of exits do not go by text: errors are equal only to themselves
/// (and their clones), never to another error or a reason that displays alike.
#[test]
// A panic's payload slot is the only interior mutability in an `Exit`, and neither `Hash`
// nor `Eq` reads it.
#[allow(clippy::mutable_key_type)]
fn exits_compare_by_identity_not_by_text() {
    let a = Exit::from(Overheated(1));
    let b = Exit::from(Overheated(1));
    let io_a = Exit::from(std::io::Error::other("overheated at 1 degrees"));
    let text = Exit::reason("overheated at 1 degrees");
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.to_string(), text.to_string());
    assert_eq!(a, a.clone());
    assert_ne!(a, b);
    assert_ne!(a, io_a);
    assert_ne!(a, text);
    assert_ne!(io_a, text);
    assert_eq!(Exit::from("x"), Exit::reason("x"));
    assert_eq!(Exit::from(String::from("x")), Exit::reason("x"));
    let set: HashSet<Exit> = [a.clone(), a, b, io_a, text.clone(), text].into();
    assert_eq!(set.len(), 4);
}

#[test]
fn a_crash_kills_linked_processes() {
    quiet_expected_panics();
    // a <-> middle <-> c: c crashes, middle dies of it, and so does a.
    let a = idle();
    let c = process::spawn(|mut mb: Mailbox<u8>| async move {
        mb.recv().await;
        panic!("expected: c failed");
    });
    let bystander = idle();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (ca, cc) = (a.clone(), c.clone());
    let middle = process::spawn(move |mut mb: Mailbox<()>| async move {
        mb.link(&ca);
        mb.link(&cc);
        ready_tx.send(()).unwrap();
        mb.recv().await
    });
    ready_rx.recv_timeout(LONG).unwrap();
    c.send(1).unwrap();
    let reason = Exit::Panic("expected: c failed".into());
    assert_eq!(ended(&c), reason);
    assert_eq!(ended(&middle), reason);
    assert_eq!(ended(&a), reason);
    assert!(bystander.is_alive());
    bystander.kill();
    assert_eq!(ended(&bystander), Exit::Killed);
}

#[test]
fn a_normal_exit_does_not_kill_links() {
    let (tx, rx) = mpsc::channel();
    let watcher = process::spawn(move |mut mb: Mailbox<u8>| async move {
        let child = mb.spawn_link(|_: Mailbox<()>| async {});
        let reason = child.on_exit().await.unwrap();
        tx.send(reason).unwrap();
        mb.recv().await; // still alive after the linked child ended normally
    });
    assert_eq!(rx.recv_timeout(LONG).unwrap(), Exit::Normal);
    assert!(watcher.is_alive());
    watcher.send(0).unwrap();
    assert_eq!(ended(&watcher), Exit::Normal);
}

#[test]
fn trapping_exits_turns_signals_into_messages() {
    quiet_expected_panics();
    let (tx, rx) = mpsc::channel();
    let trapper = process::spawn(move |mut mb: Mailbox<ExitSignal>| async move {
        mb.trap_exits(|sig| sig);
        let ok = mb.spawn_link(|_: Mailbox<()>| async {});
        let bad = mb.spawn_link(|_: Mailbox<()>| async { panic!("expected: child") });
        let killed = mb.spawn_link(|mut m: Mailbox<()>| async move { m.recv().await });
        killed.kill();
        let mut got = Vec::new();
        for _ in 0..3 {
            let sig = mb.recv().await;
            got.push((sig.from, sig.reason));
        }
        got.sort_by_key(|s| s.0);
        let mut want = vec![
            (ok.id(), Exit::Normal),
            (bad.id(), Exit::Panic("expected: child".into())),
            (killed.id(), Exit::Killed),
        ];
        want.sort_by_key(|s| s.0);
        tx.send(got == want).unwrap();
        mb.recv().await; // survives all three
    });
    assert!(rx.recv_timeout(LONG).unwrap());
    assert!(trapper.is_alive());
    // A kill cannot be trapped.
    trapper.kill();
    assert_eq!(ended(&trapper), Exit::Killed);
}

#[test]
fn linking_an_ended_process_delivers_its_signal() {
    let dead = process::spawn(|_: Mailbox<()>| async { Err::<(), _>("gone") });
    assert_eq!(ended(&dead), Exit::reason("gone"));
    // Not trapping: dies of it.
    let d = dead.clone();
    let linker = process::spawn(move |mut mb: Mailbox<()>| async move {
        mb.link(&d);
        mb.recv().await
    });
    assert_eq!(ended(&linker), Exit::reason("gone"));
    // Trapping: gets the message.
    let (tx, rx) = mpsc::channel();
    let d = dead.clone();
    let trapper = process::spawn(move |mut mb: Mailbox<ExitSignal>| async move {
        mb.trap_exits(|s| s);
        mb.link(&d);
        tx.send(mb.recv().await).unwrap();
    });
    let sig = rx.recv_timeout(LONG).unwrap();
    assert_eq!((sig.from, sig.reason), (dead.id(), Exit::reason("gone")));
    assert_eq!(ended(&trapper), Exit::Normal);
}

#[test]
fn unlinked_processes_survive_each_other() {
    let worker = idle();
    let w = worker.clone();
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<()>| async move {
        mb.link(&w);
        mb.unlink(&w);
        w.kill();
        tx.send(w.on_exit().await.unwrap()).unwrap();
        mb.recv().await
    });
    assert_eq!(rx.recv_timeout(LONG).unwrap(), Exit::Killed);
    assert!(p.is_alive());
    p.send(()).unwrap();
    assert_eq!(ended(&p), Exit::Normal);
}

#[test]
fn monitors_get_one_down_with_the_reason() {
    quiet_expected_panics();
    let (tx, rx) = mpsc::channel();
    let watcher = process::spawn(move |mut mb: Mailbox<Down>| async move {
        let crasher = process::spawn(|mut m: Mailbox<()>| async move {
            m.recv().await;
            panic!("expected: monitored");
        });
        let r1 = mb.monitor(&crasher, |d| d);
        let r2 = mb.monitor(&crasher, |d| d);
        let cancelled = mb.monitor(&crasher, |d| d);
        assert!(mb.demonitor(cancelled));
        crasher.send(()).unwrap();
        let a = mb.recv().await;
        let b = mb.recv().await;
        // Monitoring an ended process: a Down at once, with the reason it ended with.
        let r3 = mb.monitor(&crasher, |d| d);
        let c = mb.recv().await;
        let nothing_else = mb.recv_timeout(Duration::from_millis(20)).await;
        tx.send((
            [a.monitor, b.monitor, c.monitor] == [r1, r2, r3]
                || [b.monitor, a.monitor, c.monitor] == [r1, r2, r3],
            [a.from, b.from, c.from] == [crasher.id(); 3],
            c.reason,
            nothing_else,
        ))
        .unwrap();
    });
    let (refs_ok, from_ok, reason, nothing_else) = rx.recv_timeout(LONG).unwrap();
    assert!(refs_ok && from_ok);
    assert_eq!(reason, Exit::Panic("expected: monitored".into()));
    assert_eq!(nothing_else, None, "a cancelled monitor fired");
    // Monitors never kill the watcher.
    assert_eq!(ended(&watcher), Exit::Normal);
}

/// Sets its flag when dropped: shows that a killed process's body was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn kill_a_process_waiting_for_a_message() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone());
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |mut mb: Mailbox<()>| async move {
        let _flag = flag;
        tx.send(()).unwrap();
        mb.recv().await;
        unreachable!("a killed process never gets here");
    });
    rx.recv_timeout(LONG).unwrap();
    p.kill();
    assert_eq!(ended(&p), Exit::Killed);
    assert!(dropped.load(Ordering::SeqCst), "the body was not dropped");
    assert!(p.send(()).is_err());
}

#[test]
fn kill_a_process_waiting_for_something_else() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone());
    let (tx, rx) = mpsc::channel();
    let p = process::spawn(move |_: Mailbox<()>| async move {
        let _flag = flag;
        tx.send(()).unwrap();
        ito::Future::<()>::never().await.unwrap(); // not its mailbox
    });
    rx.recv_timeout(LONG).unwrap();
    p.kill();
    assert_eq!(ended(&p), Exit::Killed);
    assert!(dropped.load(Ordering::SeqCst), "the body was not dropped");

    // The same while asleep on a timer, killed through an AnyPid.
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone());
    let (tx, rx) = mpsc::channel();
    let sleeper = process::spawn(move |_: Mailbox<()>| async move {
        let _flag = flag;
        tx.send(()).unwrap();
        ito::sleep(Duration::from_secs(3600)).await.unwrap();
    });
    rx.recv_timeout(LONG).unwrap();
    AnyPid::from(&sleeper).kill();
    assert_eq!(ended(&sleeper), Exit::Killed);
    assert!(dropped.load(Ordering::SeqCst));
}

#[test]
fn a_killed_process_takes_its_links_down_with_killed() {
    let (tx, rx) = mpsc::channel();
    let victim = idle();
    let v = victim.clone();
    let partner = process::spawn(move |mut mb: Mailbox<()>| async move {
        mb.link(&v);
        tx.send(()).unwrap();
        mb.recv().await
    });
    rx.recv_timeout(LONG).unwrap();
    victim.kill();
    assert_eq!(ended(&victim), Exit::Killed);
    assert_eq!(ended(&partner), Exit::Killed);
}

#[test]
fn runtime_shutdown_ends_processes_with_shutdown() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (waiting, blocker) = rt.block_on(async move {
        // Waits in its mailbox when the runtime goes.
        let st = started_tx.clone();
        let waiting = process::spawn(move |mut mb: Mailbox<()>| async move {
            st.send(()).unwrap();
            mb.recv().await
        });
        // Holds the only worker until released.
        let blocker = process::spawn(move |_: Mailbox<()>| async move {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(LONG);
        });
        (waiting, blocker)
    });
    started_rx.recv_timeout(LONG).unwrap();
    started_rx.recv_timeout(LONG).unwrap();
    // Queued behind the blocker: the shutdown cancels it.
    let queued = rt.block_on(async { process::spawn(|_: Mailbox<()>| async {}) });
    let q = queued.clone();
    let releaser = std::thread::spawn(move || {
        let reason = q.on_exit().wait_timeout(LONG);
        release_tx.send(()).unwrap();
        reason
    });
    drop(rt);
    assert_eq!(releaser.join().unwrap(), Some(Ok(Exit::Shutdown)));
    assert_eq!(ended(&blocker), Exit::Normal);
    // Waiting when the runtime shut down: ends at its next wake-up, which finds no runtime.
    assert!(waiting.is_alive());
    assert!(waiting.send(()).is_ok());
    assert_eq!(ended(&waiting), Exit::Shutdown);
}

/// Kills, messages and normal ends race on many processes: every process ends, with the
/// right reason, and every monitor fires once.
#[test]
fn kills_race_messages_and_exits() {
    const N: usize = if cfg!(miri) { 8 } else { 200 };
    let procs: Vec<Pid<u32>> = (0..N)
        .map(|_| {
            process::spawn(|mut mb: Mailbox<u32>| async move { while mb.recv().await != 0 {} })
        })
        .collect();
    let exits: Vec<_> = procs.iter().map(|p| p.on_exit()).collect();
    let flood = {
        let procs = procs.clone();
        std::thread::spawn(move || {
            for round in 1..=20u32 {
                for p in &procs {
                    let _ = p.send(round);
                }
            }
            for p in &procs {
                let _ = p.send(0); // ends it normally, unless it was killed first
            }
        })
    };
    for p in procs.iter().step_by(2) {
        p.kill();
    }
    flood.join().unwrap();
    for (i, e) in exits.iter().enumerate() {
        let reason = e
            .wait_timeout(LONG)
            .expect("a process never ended")
            .unwrap();
        if i % 2 == 0 {
            assert!(
                reason == Exit::Killed || reason == Exit::Normal,
                "{reason:?}"
            );
        } else {
            assert_eq!(reason, Exit::Normal);
        }
    }
}
