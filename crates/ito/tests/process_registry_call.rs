//! The registry (names freed when their process ends) and `call` (request and reply on a
//! promise: answers, timeouts, dead servers, dropped requests).

mod support;

use std::sync::mpsc;
use std::time::Duration;

use ito::process::{self, CallError, Exit, Mailbox, Pid, RegisterError, ReplyTo};
use support::LONG;

fn ended<M: Send + 'static>(p: &Pid<M>) -> Exit {
    p.on_exit()
        .wait_timeout(LONG)
        .expect("the process did not end in time")
        .expect("on_exit never fails")
}

fn waiter() -> Pid<u32> {
    process::spawn(|mut mb: Mailbox<u32>| async move {
        mb.recv().await;
    })
}

#[test]
fn names_are_freed_when_their_process_ends() {
    let first = waiter();
    process::register("test-reuse", &first).unwrap();
    let second = waiter();
    assert_eq!(
        process::register("test-reuse", &second),
        Err(RegisterError::Taken(first.id()))
    );
    assert_eq!(process::whereis::<u32>("test-reuse"), Some(first.clone()));
    first.send(1).unwrap();
    assert_eq!(ended(&first), Exit::Normal);
    // The name was forgotten before anyone could learn of the end.
    assert_eq!(process::whereis::<u32>("test-reuse"), None);
    process::register("test-reuse", &second).unwrap();
    assert_eq!(process::whereis::<u32>("test-reuse"), Some(second.clone()));
    second.kill();
    assert_eq!(ended(&second), Exit::Killed);
    assert!(process::whereis_any("test-reuse").is_none());
}

#[test]
fn registry_errors_and_types() {
    let dead = waiter();
    dead.kill();
    ended(&dead);
    assert_eq!(
        process::register("test-dead", &dead),
        Err(RegisterError::NotAlive)
    );
    let p = waiter();
    process::register("test-typed", &p).unwrap();
    process::register("test-typed-2", &p).unwrap(); // a second name
    assert!(process::whereis::<String>("test-typed").is_none());
    assert_eq!(process::whereis_any("test-typed-2").unwrap().id(), p.id());
    assert!(process::unregister("test-typed"));
    assert!(!process::unregister("test-typed"));
    assert!(process::whereis::<u32>("test-typed").is_none());
    // Re-registered to another process, the name is not taken away when `p` ends.
    let q = waiter();
    process::register("test-typed", &q).unwrap();
    p.kill();
    ended(&p);
    assert_eq!(process::whereis::<u32>("test-typed"), Some(q.clone()));
    assert!(process::whereis::<u32>("test-typed-2").is_none());
    q.kill();
    ended(&q);
}

/// A counter server: `Add` adds, `Get` answers, `Hold` keeps the reply slot without
/// answering, `Drop` drops it, `Crash` ends the server.
enum Req {
    Add(u64),
    Get(ReplyTo<u64>),
    Hold(ReplyTo<u64>),
    Drop(ReplyTo<u64>),
    Crash(ReplyTo<u64>),
}

fn counter() -> Pid<Req> {
    process::spawn(|mut mb: Mailbox<Req>| async move {
        let mut n = 0;
        let mut held = Vec::new();
        loop {
            match mb.recv().await {
                Req::Add(k) => n += k,
                Req::Get(r) => r.reply(n),
                Req::Hold(r) => held.push(r),
                Req::Drop(r) => drop(r),
                Req::Crash(_r) => return Err(Exit::reason("crashed mid-call")),
            }
        }
    })
}

#[test]
fn call_answers() {
    let c = counter();
    for k in 1..=10 {
        c.send(Req::Add(k)).unwrap();
    }
    assert!(matches!(
        ito::block_on(process::call(&c, Req::Get, LONG)),
        Ok(55)
    ));
    // From inside another process.
    let (tx, rx) = mpsc::channel();
    let c2 = c.clone();
    process::spawn(move |_: Mailbox<()>| async move {
        tx.send(process::call(&c2, Req::Get, LONG).await).unwrap();
    });
    assert!(matches!(rx.recv_timeout(LONG).unwrap(), Ok(55)));
    c.kill();
    ended(&c);
}

#[test]
fn call_timeout_and_failures() {
    let c = counter();
    let short = Duration::from_millis(10);
    assert!(matches!(
        ito::block_on(process::call(&c, Req::Hold, short)),
        Err(CallError::Timeout)
    ));
    assert!(matches!(
        ito::block_on(process::call(&c, Req::Drop, LONG)),
        Err(CallError::NoReply)
    ));
    // The server ends while the caller waits: no reply, at once (not at the timeout).
    assert!(matches!(
        ito::block_on(process::call(&c, Req::Crash, LONG)),
        Err(CallError::NoReply)
    ));
    assert_eq!(ended(&c), Exit::reason("crashed mid-call"));
    // A dead server: the request comes back.
    match ito::block_on(process::call(&c, Req::Get, LONG)) {
        Err(CallError::NoProc(Req::Get(_))) => {}
        other => panic!("expected NoProc(Get), got {:?}", other.map(|_| ())),
    }
}

/// Names are per runtime: a process registered on one runtime is not found from another, and
/// each runtime may give the same name to a process of its own.
#[test]
fn names_are_per_runtime() {
    let one = ito::Runtime::builder().workers(1).build().unwrap();
    let two = ito::Runtime::builder().workers(1).build().unwrap();
    let p = one.block_on(async {
        let p = process::spawn(|mut mb: Mailbox<u8>| async move {
            mb.recv().await;
        });
        process::register("per-runtime", &p).unwrap();
        p
    });
    assert_eq!(
        one.block_on(async { process::whereis::<u8>("per-runtime") }),
        Some(p.clone())
    );
    assert_eq!(
        two.block_on(async { process::whereis::<u8>("per-runtime") }),
        None,
        "found from another runtime"
    );
    let q = two.block_on(async {
        let q = process::spawn(|mut mb: Mailbox<u8>| async move {
            mb.recv().await;
        });
        process::register("per-runtime", &q).unwrap();
        q
    });
    assert_eq!(
        two.block_on(async { process::whereis::<u8>("per-runtime") }),
        Some(q.clone())
    );
    assert!(!two.block_on(async { process::unregister("no-such-name") }));
    p.send(0).unwrap();
    q.send(0).unwrap();
    assert!(p.on_exit().wait().is_ok());
    assert!(q.on_exit().wait().is_ok());
    assert_eq!(
        one.block_on(async { process::whereis::<u8>("per-runtime") }),
        None,
        "an ended process keeps its name"
    );
}
