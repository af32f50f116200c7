//! `ito::signal`: every listener of a signal gets each delivery once, a listener made after a
//! delivery does not see it, `ctrl_c` survives a `SIGINT`, forbidden signals are refused.
//!
//! A binary of its own: the handlers installed here stay for the life of the process. Each
//! test raises its own signals, so that the tests can run in parallel.

use std::io::ErrorKind;

use futures_util::FutureExt;
use ito::signal::unix::{SignalKind, signal};
use signal_hook::low_level::raise;

/// Raises `kind` in this process.
fn send(kind: SignalKind) {
    raise(kind.as_raw_value()).unwrap();
}

/// Waits until every delivery raised before this call has been forwarded: the signal thread
/// forwards in order of arrival, and the signals of one wake-up in increasing number, and
/// each fence here is numbered above the signal it fences.
fn fence(fence: SignalKind) {
    let mut f = signal(fence).unwrap();
    send(fence);
    assert_eq!(ito::block_on(f.recv()), Some(()));
}

#[test]
fn two_listeners_each_get_one_delivery() {
    let usr1 = SignalKind::user_defined1();
    let (mut a, mut b) = (signal(usr1).unwrap(), signal(usr1).unwrap());
    send(usr1);
    assert_eq!(ito::block_on(a.recv()), Some(()));
    assert_eq!(ito::block_on(b.recv()), Some(()));
    fence(SignalKind::user_defined2());
    assert_eq!(a.recv().now_or_never(), None, "a got a second delivery");
    assert_eq!(b.recv().now_or_never(), None, "b got a second delivery");

    // Each later delivery reaches both again, an async waiter and a blocking one.
    let waiter = ito::spawn(async move { a.recv().await });
    send(usr1);
    assert_eq!(waiter.wait(), Ok(Some(())));
    assert_eq!(b.recv_blocking(), Ok(()));
}

#[test]
fn a_listener_made_after_a_delivery_does_not_see_it() {
    let hup = SignalKind::hangup();
    let mut early = signal(hup).unwrap();
    send(hup);
    assert_eq!(ito::block_on(early.recv()), Some(()));
    let mut late = signal(hup).unwrap();
    fence(SignalKind::window_change());
    assert_eq!(late.recv().now_or_never(), None, "late saw an old delivery");
    send(hup);
    assert_eq!(ito::block_on(late.recv()), Some(()));
    assert_eq!(ito::block_on(early.recv()), Some(()));
}

#[test]
fn ctrl_c_completes_on_sigint_and_the_process_survives() {
    let interrupted = ito::signal::ctrl_c();
    send(SignalKind::interrupt());
    ito::block_on(interrupted).unwrap();
    // Again, with a task waiting before the signal comes.
    let waiter = ito::spawn(async { ito::signal::ctrl_c().await.is_ok() });
    // The task may not have registered yet: raise until it has seen one.
    while !waiter.is_finished() {
        send(SignalKind::interrupt());
        std::thread::yield_now();
    }
    assert_eq!(waiter.wait(), Ok(true));
}

#[test]
fn sigterm_reaches_a_synchronous_task() {
    let term = SignalKind::terminate();
    let mut s = signal(term).unwrap();
    let sync_task = ito::spawn_fn(move || s.recv_blocking().is_ok());
    send(term);
    assert_eq!(sync_task.wait(), Ok(true));
}

#[test]
fn registration_is_idempotent_and_refuses_what_cannot_be_handled() {
    for _ in 0..3 {
        let s = signal(SignalKind::quit()).unwrap();
        assert_eq!(s.kind(), SignalKind::quit());
    }
    for forbidden in [
        signal_hook::consts::SIGKILL,
        signal_hook::consts::SIGSTOP,
        signal_hook::consts::SIGSEGV,
        signal_hook::consts::SIGILL,
        signal_hook::consts::SIGFPE,
    ] {
        let err = signal(SignalKind::from_raw(forbidden)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("cannot be listened for"), "{err}");
    }
    for not_a_signal in [0, -1, 128, i32::MAX] {
        let err = signal(SignalKind::from_raw(not_a_signal)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{not_a_signal}");
    }
    // Below signal-hook's limit but above the OS's: the OS refuses it.
    assert!(signal(SignalKind::from_raw(100)).is_err());
}

/// A `Signal` moves into tasks and threads.
#[test]
fn signal_is_send_and_sync() {
    fn send_sync<T: Send + Sync + Unpin>() {}
    send_sync::<ito::signal::unix::Signal>();
    send_sync::<SignalKind>();
}
