//! API hygiene the compiler checks: public types are `Debug` without asking it of what they
//! hold, and handles, channels, locks and their futures are `Send`/`Sync` whenever tokio's
//! counterparts are (so code moved from tokio compiles). The crate's
//! `missing_debug_implementations` lint only asks that some `Debug` impl exist; these
//! instantiate the types with a payload that is not `Debug`, and with one that is `Send` but
//! not `Sync`.

use std::cell::Cell;
use std::fmt::Debug;

/// A payload that is neither `Debug` nor `Clone`.
struct Opaque;

/// `Send` but not `Sync`: where a bound stricter than tokio's shows.
type NotSync = Cell<u8>;

fn is_debug<T: Debug>() {}
fn is_send<T: Send>() {}
fn is_sync<T: Sync>() {}

/// `value` is `Send` (for futures whose type is easier to get from a call than to name).
fn send_value<T: Send>(_: &T) {}

/// The types issue 17 named, and the other handles, as `Debug` whatever they carry. Those
/// that show their value (`TVar`, a shared `Future`, `watch`'s handles, like tokio's `watch`
/// and `Mutex`) need `T: Debug`, and `TVar` `T: Clone` to read it.
#[test]
fn public_types_are_debug_whatever_they_carry() {
    is_debug::<ito::future::Wait<Opaque>>();
    is_debug::<ito::future::WaitRef<'static, Opaque>>();
    is_debug::<ito::Timeout<ito::future::Wait<Opaque>>>();
    is_debug::<ito::process::Recv<'static, Opaque>>();
    is_debug::<ito::process::RecvMatching<'static, Opaque, fn(&Opaque) -> bool>>();
    is_debug::<ito::process::Mailbox<Opaque>>();
    is_debug::<ito::process::Pid<Opaque>>();
    is_debug::<ito::stm::TQueue<Opaque>>();
    is_debug::<ito::stm::TMVar<Opaque>>();
    is_debug::<ito::stm::TVar<u8>>();
    is_debug::<ito::stm::Tx>();
    is_debug::<ito::stm::Atomically<fn(&mut ito::stm::Tx) -> ito::stm::StmResult<()>>>();
    is_debug::<ito::Task<Opaque>>();
    is_debug::<ito::Future<u8>>();
    is_debug::<ito::Promise<Opaque>>();
    is_debug::<ito::TaskSet<Opaque>>();
    is_debug::<ito::channel::Sender<Opaque>>();
    is_debug::<ito::channel::Receiver<Opaque>>();
    is_debug::<ito::sync::broadcast::Sender<Opaque>>();
    is_debug::<ito::sync::broadcast::Receiver<Opaque>>();
    is_debug::<ito::sync::oneshot::Sender<Opaque>>();
    is_debug::<ito::sync::oneshot::Receiver<Opaque>>();
    is_debug::<ito::sync::watch::Sender<u8>>();
    is_debug::<ito::sync::watch::Receiver<u8>>();
    is_debug::<ito::sync::Notify>();
    is_debug::<ito::time::Interval>();
    is_debug::<ito::time::Sleep>();
    is_debug::<ito::Runtime>();
    is_debug::<ito::Builder>();
    is_debug::<ito::process::Exit>();
    is_debug::<ito::process::Supervisor>();
}

/// tokio: `JoinHandle<T>`, `mpsc`, `oneshot` and `broadcast` handles, `Mutex<T>` and its
/// guard are `Send` (and `Sync`) for `T: Send`; so are ito's, and ito's processes.
#[test]
fn handles_and_channels_need_only_send_payloads() {
    is_send::<ito::Task<NotSync>>();
    is_sync::<ito::Task<NotSync>>();
    is_send::<ito::TaskSet<NotSync>>();
    is_send::<ito::channel::Sender<NotSync>>();
    is_sync::<ito::channel::Sender<NotSync>>();
    is_send::<ito::channel::Receiver<NotSync>>();
    is_sync::<ito::channel::Receiver<NotSync>>();
    is_send::<ito::sync::oneshot::Sender<NotSync>>();
    is_sync::<ito::sync::oneshot::Sender<NotSync>>();
    is_send::<ito::sync::oneshot::Receiver<NotSync>>();
    is_sync::<ito::sync::oneshot::Receiver<NotSync>>();
    is_send::<ito::sync::broadcast::Sender<NotSync>>();
    is_sync::<ito::sync::broadcast::Sender<NotSync>>();
    is_send::<ito::sync::broadcast::Receiver<NotSync>>();
    is_sync::<ito::sync::broadcast::Receiver<NotSync>>();
    is_send::<ito::sync::Mutex<NotSync>>();
    is_sync::<ito::sync::Mutex<NotSync>>();
    is_send::<ito::sync::MutexGuard<'static, NotSync>>();
    is_send::<ito::process::Pid<NotSync>>();
    is_sync::<ito::process::Pid<NotSync>>();
    is_send::<ito::process::Mailbox<NotSync>>();
    is_send::<ito::process::ReplyTo<NotSync>>();
    is_send::<ito::Runtime>();
    is_sync::<ito::Runtime>();
    is_send::<ito::sync::Notify>();
    is_sync::<ito::sync::Notify>();
}

/// The futures of operations on those handles can be held across an `.await` in a spawned
/// task (they are `Send`) whenever tokio's are.
#[test]
fn operation_futures_need_only_send_payloads() {
    let (tx, rx) = ito::channel::bounded::<NotSync>(1);
    send_value(&tx.send(Cell::new(1)));
    send_value(&rx.recv());
    let (btx, mut brx) = ito::sync::broadcast::channel::<NotSync>(1);
    send_value(&brx.recv());
    drop(btx);
    let (_otx, orx) = ito::sync::oneshot::channel::<NotSync>();
    send_value(&orx);
    let m = ito::sync::Mutex::new(Cell::new(0u8));
    send_value(&m.lock());
    let n = ito::sync::Notify::new();
    send_value(&n.notified());
    let (_wtx, mut wrx) = ito::sync::watch::channel(0u8);
    send_value(&wrx.changed());
    // A spawned task holding a non-`Sync` value and a lock guard across `.await`s.
    let shared = std::sync::Arc::new(ito::sync::Mutex::new(Cell::new(0u8)));
    let s = shared.clone();
    let t = ito::spawn(async move {
        let guard = s.lock().await;
        let (tx, rx) = ito::sync::oneshot::channel::<NotSync>();
        tx.send(Cell::new(3)).unwrap();
        let got = rx.await.unwrap().get();
        guard.set(got);
    });
    t.wait().unwrap();
    assert_eq!(shared.lock_blocking().unwrap().get(), 3);
}
