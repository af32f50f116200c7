//! A suspended loop resumes only on its home thread. These tests check that no wait on that
//! thread, and no shutdown, ends up waiting for a loop the thread itself must resume.
//!
//! A failing test leaks its runtime (`mem::forget`): dropping it would hang on the very loop
//! the test found stuck.

use std::sync::mpsc;
use std::time::Duration;

use ito::{Promise, Runtime};

/// How long a test waits for what must happen before it calls it a deadlock.
const PATIENCE: Duration = Duration::from_secs(10);

/// Starts task L on the only worker of `rt`: it suspends on `first`, then completes `second`
/// with one more than it got. Returns once L has started (it suspends before the worker runs
/// anything else).
fn suspend_a_relay(rt: &Runtime, first: &Promise<u32>, second: &Promise<u32>) -> ito::Task<bool> {
    let (started_tx, started_rx) = mpsc::channel();
    let f1 = first.future();
    let p2 = second.clone();
    let relay = rt.spawn_fn(move || {
        started_tx.send(()).unwrap();
        let v = f1.wait().unwrap();
        p2.try_success(v + 1)
    });
    started_rx.recv().unwrap();
    relay
}

fn expect_or_leak<T: std::fmt::Debug + PartialEq>(
    rt: Runtime,
    got: Option<T>,
    want: T,
    what: &str,
) {
    if got.as_ref() != Some(&want) {
        std::mem::forget(rt);
        panic!("{what}: got {got:?}, want Some({want:?})");
    }
}

/// A task on the worker where L is suspended wakes L, then waits for L inside a `join`: that
/// wait blocks the thread (a join is in progress), and L can only resume on that thread.
#[test]
fn a_wait_inside_a_join_for_a_loop_suspended_on_the_same_worker_finishes() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let first = Promise::<u32>::new();
    let second = Promise::<u32>::new();
    let relay = suspend_a_relay(&rt, &first, &second);
    let f2 = second.future();
    let mut waiter = rt.spawn_fn(move || {
        ito::join(
            move || {
                assert!(first.try_success(1));
                f2.wait().unwrap()
            },
            || (),
        )
        .0
    });
    let got = waiter.wait_timeout(PATIENCE);
    expect_or_leak(rt, got, Ok(2), "the waiter inside a join");
    assert_eq!(relay.wait(), Ok(true));
}

/// The same with an ito lock: L holds it across its wait; a task on the same worker takes it
/// from inside a `join`.
#[test]
fn an_ito_lock_taken_inside_a_join_from_a_loop_suspended_on_the_same_worker_is_granted() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let lock = std::sync::Arc::new(ito::sync::Mutex::new(0u32));
    let gate = Promise::<()>::new();
    let (held_tx, held_rx) = mpsc::channel();
    let g = gate.future();
    let l2 = lock.clone();
    let holder = rt.spawn_fn(move || {
        let mut held = l2.lock_blocking().unwrap();
        held_tx.send(()).unwrap();
        g.wait().unwrap();
        *held += 1;
    });
    held_rx.recv().unwrap();
    let mut taker = rt.spawn_fn(move || {
        ito::join(
            move || {
                assert!(gate.try_success(()));
                *lock.lock_blocking().unwrap()
            },
            || (),
        )
        .0
    });
    let got = taker.wait_timeout(PATIENCE);
    expect_or_leak(rt, got, Ok(1), "the lock taker inside a join");
    assert_eq!(holder.wait(), Ok(()));
}

/// At shutdown a worker's loop returns while another of its loops is suspended, waiting for a
/// task that sits in the worker's LIFO slot. The trampoline waits for the suspended loop
/// before the worker drains (cancels) that slot, and shutdown's sweep cannot reach it.
#[test]
fn dropping_a_runtime_whose_suspended_loop_waits_for_its_lifo_task_returns() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let gate = Promise::<()>::new();
    let g = gate.future();
    let (polled_tx, polled_rx) = mpsc::channel();
    // T: an async task parked on `gate`.
    let t = rt.spawn(async move {
        polled_tx.send(()).unwrap();
        let _ = g.await;
    });
    polled_rx.recv().unwrap();
    // L: suspends waiting for T.
    let (started_tx, started_rx) = mpsc::channel();
    let waiter = rt.spawn_fn(move || {
        started_tx.send(()).unwrap();
        let _ = t.wait();
    });
    started_rx.recv().unwrap();
    // S: wakes T (into this worker's LIFO slot), then stays in its task until shutdown has
    // begun. It learns that from Q, a queued task whose body shutdown drops unrun.
    let (woke_tx, woke_rx) = mpsc::channel();
    let (swept_tx, swept_rx) = mpsc::channel::<()>();
    let _s = rt.spawn_fn(move || {
        assert!(gate.try_success(()));
        woke_tx.send(()).unwrap();
        let _ = swept_rx.recv_timeout(PATIENCE);
    });
    woke_rx.recv().unwrap();
    struct OnDrop(mpsc::Sender<()>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let sentinel = OnDrop(swept_tx);
    let _q = rt.spawn_fn(move || drop(sentinel));
    let (dropped_tx, dropped_rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(rt);
        dropped_tx.send(()).unwrap();
    });
    assert!(
        dropped_rx.recv_timeout(PATIENCE).is_ok(),
        "Runtime::drop did not return"
    );
    drop(waiter);
}

/// `Runtime::block_on` of runtime B called by a task of runtime A suspends A's loop. The
/// runtime that `ito::spawn_fn` targets belongs to the suspended code, not to the thread: the
/// next task A's worker runs must still spawn onto A.
#[test]
fn a_cross_runtime_block_on_that_suspends_leaves_the_next_task_spawning_at_home() {
    let a = Runtime::builder()
        .workers(1)
        .thread_name("home")
        .build()
        .unwrap();
    let b = std::sync::Arc::new(
        Runtime::builder()
            .workers(1)
            .thread_name("other")
            .build()
            .unwrap(),
    );
    let gate = Promise::<()>::new();
    let g = gate.future();
    let (started_tx, started_rx) = mpsc::channel();
    let b2 = b.clone();
    let inside = a.spawn_fn(move || {
        started_tx.send(()).unwrap();
        b2.block_on(g).unwrap();
    });
    started_rx.recv().unwrap();
    let mut spawner = a.spawn_fn(|| {
        let child = ito::spawn_fn(|| std::thread::current().name().map(String::from));
        child.wait().unwrap()
    });
    let got = spawner.wait_timeout(PATIENCE);
    assert!(gate.try_success(()));
    assert_eq!(inside.wait(), Ok(()));
    let name = got
        .expect("the spawner finished")
        .unwrap()
        .unwrap_or_default();
    assert!(
        name.starts_with("home"),
        "a task of runtime A spawned onto the thread {name:?}"
    );
}

fn spin_until(flag: &std::sync::atomic::AtomicBool) -> bool {
    let start = std::time::Instant::now();
    while !flag.load(std::sync::atomic::Ordering::SeqCst) {
        if start.elapsed() > PATIENCE {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

#[derive(Default)]
struct Flags {
    j_started: std::sync::atomic::AtomicBool,
    x_in_a: std::sync::atomic::AtomicBool,
    y_started: std::sync::atomic::AtomicBool,
}

/// A join's owner O waits for its job J, stolen by worker T. J suspends T's loop, and T's
/// next loop runs task X, whose own join exposes job Y on T's shelf. O's leapfrogging takes
/// from T's shelf only jobs that descend from J (a job exposed there while J's latch is
/// unset), and so runs Y, which is unrelated to J, buried under O's join. Y waits for what O
/// does after its join: O can never get there.
#[test]
fn a_join_owner_does_not_leapfrog_into_work_its_suspended_thief_exposed_afterwards() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering::SeqCst;
    let rt = Runtime::builder().workers(2).build().unwrap();
    let flags = Arc::new(Flags::default());
    let p1 = Promise::<()>::new();
    let after_o = Promise::<()>::new();
    let (o_thread_tx, o_thread_rx) = mpsc::channel();
    let (y_thread_tx, y_thread_rx) = mpsc::channel();
    let (f, p1f, ao) = (flags.clone(), p1.future(), after_o.clone());
    let mut o = rt.spawn_fn(move || {
        o_thread_tx.send(std::thread::current().id()).unwrap();
        let f2 = f.clone();
        ito::join(
            move || assert!(spin_until(&f2.x_in_a)),
            move || {
                f.j_started.store(true, SeqCst);
                p1f.wait().unwrap();
            },
        );
        ao.try_success(())
    });
    assert!(spin_until(&flags.j_started));
    let (f, aof) = (flags.clone(), after_o.future());
    let mut x = rt.spawn_fn(move || {
        let f2 = f.clone();
        ito::join(
            move || {
                f2.x_in_a.store(true, SeqCst);
                assert!(spin_until(&f2.y_started));
            },
            move || {
                y_thread_tx.send(std::thread::current().id()).unwrap();
                f.y_started.store(true, SeqCst);
                aof.wait().unwrap();
            },
        );
    });
    assert!(spin_until(&flags.y_started));
    assert!(p1.try_success(()));
    let o_done = o.wait_timeout(PATIENCE);
    let x_done = x.wait_timeout(PATIENCE);
    let o_thread = o_thread_rx.recv().unwrap();
    let y_thread = y_thread_rx.recv().unwrap();
    if o_done != Some(Ok(true)) || x_done != Some(Ok(())) {
        std::mem::forget(rt);
        panic!(
            "deadlock: O {o_done:?}, X {x_done:?}; Y ran on O's thread: {}",
            o_thread == y_thread
        );
    }
    assert_ne!(o_thread, y_thread, "Y ran buried under O's join");
}
