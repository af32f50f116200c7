//! Supervisors: each strategy, each restart type, the restart intensity, and stopping.

mod support;

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use ito::process::{
    self, AnyPid, ChildInfo, ChildSpec, Exit, Mailbox, Pid, Restart, Strategy, Supervisor,
    SupervisorMsg,
};
use support::{LONG, Overheated, quiet_expected_panics};

fn ended(p: &AnyPid) -> Exit {
    p.on_exit()
        .wait_timeout(LONG)
        .expect("the process did not end in time")
        .expect("on_exit never fails")
}

/// What a test child reports: started, or its body was dropped (stopped).
#[derive(Debug, PartialEq, Eq)]
enum Event {
    Started(&'static str),
    Dropped(&'static str),
}

/// Reports `Dropped` when the child's body goes.
struct OnDrop(&'static str, Sender<Event>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.1.send(Event::Dropped(self.0));
    }
}

/// A child that reports its start and the drop of its body, and otherwise waits. A message
/// `"exit"` makes it end normally, `"fail"` with a reason.
fn child(
    name: &'static str,
    events: &Sender<Event>,
) -> impl Fn() -> Pid<&'static str> + Send + Sync + 'static {
    let events = events.clone();
    move || {
        let tx = events.clone();
        process::spawn(move |mut mb: Mailbox<&'static str>| async move {
            let _guard = OnDrop(name, tx.clone());
            tx.send(Event::Started(name)).unwrap();
            loop {
                match mb.recv().await {
                    "exit" => return Ok(()),
                    "fail" => return Err(Exit::reason("asked to fail")),
                    _ => {}
                }
            }
        })
    }
}

fn next(events: &Receiver<Event>) -> Event {
    events.recv_timeout(LONG).expect("no event in time")
}

/// The next events are the starts of `names`, in any order: a supervisor spawns its children
/// in order, but each body runs when a worker gets to it.
fn started(events: &Receiver<Event>, names: &[&'static str]) {
    let mut got: Vec<Event> = (0..names.len()).map(|_| next(events)).collect();
    let mut want: Vec<Event> = names.iter().map(|n| Event::Started(n)).collect();
    let key = |e: &Event| format!("{e:?}");
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want);
}

fn children(sup: &Pid<SupervisorMsg>) -> Vec<ChildInfo> {
    ito::block_on(sup.which_children(LONG)).expect("which_children")
}

fn pid_of(kids: &[ChildInfo], name: &str) -> Option<AnyPid> {
    kids.iter()
        .find(|c| &*c.name == name)
        .and_then(|c| c.pid.clone())
}

/// Starts a supervisor of a, b, c (permanent) and waits for their starts.
fn abc(strategy: Strategy) -> (Pid<SupervisorMsg>, Receiver<Event>, Vec<ChildInfo>) {
    let (tx, rx) = mpsc::channel();
    let sup = Supervisor::new(strategy)
        .intensity(10, Duration::from_secs(60))
        .child(ChildSpec::new("a", child("a", &tx)))
        .child(ChildSpec::new("b", child("b", &tx)))
        .child(ChildSpec::new("c", child("c", &tx)))
        .spawn();
    started(&rx, &["a", "b", "c"]);
    let kids = children(&sup);
    assert_eq!(kids.len(), 3);
    assert!(kids.iter().all(|k| k.pid.is_some()));
    (sup, rx, kids)
}

/// Stops the supervisor and checks that it ended normally and that nothing else happened.
fn finish(sup: Pid<SupervisorMsg>, rx: Receiver<Event>, running: &[&'static str]) {
    sup.stop();
    assert_eq!(ended(&sup.erase()), Exit::Normal);
    // Stopped last-started first.
    for name in running.iter().rev() {
        assert_eq!(next(&rx), Event::Dropped(name));
    }
    assert!(rx.try_recv().is_err(), "unexpected events");
}

#[test]
fn one_for_one_restarts_only_the_child_that_ended() {
    let (sup, rx, before) = abc(Strategy::OneForOne);
    pid_of(&before, "b").unwrap().kill();
    assert_eq!(next(&rx), Event::Dropped("b"));
    assert_eq!(next(&rx), Event::Started("b"));
    let after = children(&sup);
    assert_eq!(pid_of(&after, "a"), pid_of(&before, "a"));
    assert_ne!(pid_of(&after, "b"), pid_of(&before, "b"));
    assert_eq!(pid_of(&after, "c"), pid_of(&before, "c"));
    finish(sup, rx, &["a", "b", "c"]);
}

#[test]
fn one_for_all_restarts_every_child() {
    let (sup, rx, before) = abc(Strategy::OneForAll);
    let b = pid_of(&before, "b").unwrap();
    b.kill();
    assert_eq!(next(&rx), Event::Dropped("b"));
    // The others are stopped last-started first (each one gone before the next is stopped),
    // then all start again.
    assert_eq!(next(&rx), Event::Dropped("c"));
    assert_eq!(next(&rx), Event::Dropped("a"));
    started(&rx, &["a", "b", "c"]);
    assert_eq!(ended(&pid_of(&before, "a").unwrap()), Exit::Shutdown);
    assert_eq!(ended(&b), Exit::Killed);
    assert_eq!(ended(&pid_of(&before, "c").unwrap()), Exit::Shutdown);
    let after = children(&sup);
    for name in ["a", "b", "c"] {
        assert_ne!(pid_of(&after, name), pid_of(&before, name));
    }
    finish(sup, rx, &["a", "b", "c"]);
}

#[test]
fn rest_for_one_restarts_the_child_and_those_after_it() {
    let (sup, rx, before) = abc(Strategy::RestForOne);
    pid_of(&before, "b").unwrap().kill();
    assert_eq!(next(&rx), Event::Dropped("b"));
    assert_eq!(next(&rx), Event::Dropped("c"));
    started(&rx, &["b", "c"]);
    let after = children(&sup);
    assert_eq!(pid_of(&after, "a"), pid_of(&before, "a"));
    assert_ne!(pid_of(&after, "b"), pid_of(&before, "b"));
    assert_ne!(pid_of(&after, "c"), pid_of(&before, "c"));
    finish(sup, rx, &["a", "b", "c"]);
}

#[test]
fn restart_types() {
    let (tx, rx) = mpsc::channel();
    let sup = Supervisor::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(ChildSpec::new("perm", child("perm", &tx)))
        .child(ChildSpec::new("trans", child("trans", &tx)).restart(Restart::Transient))
        .child(ChildSpec::new("temp", child("temp", &tx)).restart(Restart::Temporary))
        .spawn();
    started(&rx, &["perm", "trans", "temp"]);
    let kids = children(&sup);
    let send = |name: &str, msg: &'static str| {
        pid_of(&kids, name)
            .unwrap()
            .downcast::<&'static str>()
            .unwrap()
            .send(msg)
            .unwrap();
    };
    // A permanent child is restarted even after a normal exit.
    send("perm", "exit");
    assert_eq!(next(&rx), Event::Dropped("perm"));
    assert_eq!(next(&rx), Event::Started("perm"));
    // A transient child: restarted after a failure...
    send("trans", "fail");
    assert_eq!(next(&rx), Event::Dropped("trans"));
    assert_eq!(next(&rx), Event::Started("trans"));
    // ... not after a normal exit.
    let trans = pid_of(&children(&sup), "trans").unwrap();
    trans
        .downcast::<&'static str>()
        .unwrap()
        .send("exit")
        .unwrap();
    assert_eq!(next(&rx), Event::Dropped("trans"));
    // A temporary child: never restarted, and forgotten.
    send("temp", "fail");
    assert_eq!(next(&rx), Event::Dropped("temp"));
    // Once they have ended, the supervisor has their link signals (sent before `on_exit`
    // completes), ahead of the next request.
    assert_eq!(ended(&trans), Exit::Normal);
    assert_eq!(
        ended(&pid_of(&kids, "temp").unwrap()),
        Exit::reason("asked to fail")
    );
    let now = children(&sup);
    let names: Vec<&str> = now.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["perm", "trans"]);
    assert!(
        pid_of(&now, "trans").is_none(),
        "a transient child restarted after a normal exit: {now:?}, trans was {trans:?}"
    );
    assert_eq!(now[1].restart, Restart::Transient);
    finish(sup, rx, &["perm"]);
}

#[test]
fn a_child_that_always_fails_exhausts_the_intensity() {
    quiet_expected_panics();
    let (tx, rx) = mpsc::channel();
    let (steady_tx, steady_rx) = mpsc::channel();
    let sup = Supervisor::new(Strategy::OneForOne)
        .intensity(3, Duration::from_secs(60))
        .child(ChildSpec::new("steady", move || {
            let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
            steady_tx.send(p.clone()).unwrap();
            p
        }))
        .child(ChildSpec::new("crasher", move || {
            let tx = tx.clone();
            process::spawn(move |_: Mailbox<()>| async move {
                tx.send(()).unwrap();
                panic!("expected: always fails");
            })
        }))
        .spawn();
    // Started once, restarted three times; the fourth failure is one too many.
    assert_eq!(ended(&sup.erase()), Exit::Shutdown);
    assert_eq!(rx.try_iter().count(), 4);
    // The other child was stopped when the supervisor gave up (and never restarted).
    let steady = steady_rx.recv_timeout(LONG).unwrap();
    assert_eq!(ended(&steady.erase()), Exit::Shutdown);
    assert!(steady_rx.try_recv().is_err());
}

#[test]
fn a_panicking_start_counts_as_a_failure() {
    quiet_expected_panics();
    let (tx, rx) = mpsc::channel::<Event>();
    let sup = Supervisor::new(Strategy::OneForOne)
        .intensity(2, Duration::from_secs(60))
        .child(ChildSpec::new("broken", move || -> Pid<()> {
            tx.send(Event::Started("broken")).unwrap();
            panic!("expected: cannot start");
        }))
        .spawn();
    assert_eq!(ended(&sup.erase()), Exit::Shutdown);
    assert_eq!(rx.try_iter().count(), 3);
}

#[test]
fn supervisors_nest() {
    let (tx, rx) = mpsc::channel();
    let inner_tx = tx.clone();
    let top = Supervisor::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(ChildSpec::new("inner", move || {
            Supervisor::new(Strategy::OneForOne)
                .child(ChildSpec::new("leaf", child("leaf", &inner_tx)))
                .spawn()
        }))
        .spawn();
    assert_eq!(next(&rx), Event::Started("leaf"));
    let inner = pid_of(&children(&top), "inner").unwrap();
    // Killing the inner supervisor takes its child down (a link) and the top one restarts
    // it, which starts a new leaf.
    inner.kill();
    // The old leaf dies of the link signal while the new inner supervisor starts a new one:
    // in either order.
    let mut two = [next(&rx), next(&rx)];
    two.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(two, [Event::Dropped("leaf"), Event::Started("leaf")]);
    top.stop();
    assert_eq!(ended(&top.erase()), Exit::Normal);
    assert_eq!(next(&rx), Event::Dropped("leaf"));
    drop(tx);
}

/// A child whose body returns `Result<(), Overheated>` fails with that error: its supervisor
/// treats it as abnormal (a transient child is restarted), and the exit it and the child's
/// monitors get gives the error back.
#[test]
fn a_child_that_returns_its_own_error_type_is_restarted() {
    let (tx, rx) = mpsc::channel();
    let sup = Supervisor::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(
            ChildSpec::new("thermostat", move || {
                let tx = tx.clone();
                process::spawn(move |mut mb: Mailbox<u32>| async move {
                    tx.send(()).unwrap();
                    let degrees = mb.recv().await;
                    if degrees > 80 {
                        return Err(Overheated(degrees));
                    }
                    Ok(())
                })
            })
            .restart(Restart::Transient),
        )
        .spawn();
    rx.recv_timeout(LONG).expect("started");
    let first = pid_of(&children(&sup), "thermostat").unwrap();
    let exit = first.on_exit();
    first.downcast::<u32>().unwrap().send(90).unwrap();
    rx.recv_timeout(LONG)
        .expect("restarted after a typed error");
    let reason = exit.wait_timeout(LONG).unwrap().unwrap();
    assert_eq!(reason.downcast_ref::<Overheated>(), Some(&Overheated(90)));
    // A normal end of a transient child is not restarted.
    let second = pid_of(&children(&sup), "thermostat").unwrap();
    second.downcast::<u32>().unwrap().send(20).unwrap();
    assert_eq!(ended(&second), Exit::Normal);
    assert!(pid_of(&children(&sup), "thermostat").is_none());
    assert!(rx.try_recv().is_err(), "restarted after a normal end");
    sup.stop();
    assert_eq!(ended(&sup.erase()), Exit::Normal);
}
