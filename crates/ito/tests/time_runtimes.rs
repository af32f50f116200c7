//! Each runtime owns its timer wheel and thread: timers fire on the thread of the runtime
//! they were registered on, a dropped runtime joins its timer thread and drops its pending
//! timers, and code outside every runtime uses the global runtime's.
#![cfg(target_os = "linux")]

mod support;

use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use ito::time::Sleep;
use ito::{Failure, Runtime};
use support::{LONG, threads_named};

/// The tests count this process's `ito-timer` threads: one at a time.
static COUNTING: Mutex<()> = Mutex::new(());

fn counting() -> std::sync::MutexGuard<'static, ()> {
    COUNTING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits (at most [`LONG`]) until `n` threads are named `ito-timer`.
fn await_timer_threads(n: usize) {
    let give_up = Instant::now() + LONG;
    while threads_named("ito-timer") != n {
        assert!(
            Instant::now() < give_up,
            "{} ito-timer threads, not {n}",
            threads_named("ito-timer")
        );
        thread::yield_now();
    }
}

/// A waker that records the thread that wakes it.
struct WokenOn(Mutex<Option<ThreadId>>);

impl Wake for WokenOn {
    fn wake(self: Arc<Self>) {
        *self.0.lock().unwrap() = Some(thread::current().id());
    }
}

/// Registers a short `Sleep` where it is called (first poll), waits until it fires, and
/// returns the thread that woke it.
fn sleep_fired_on() -> ThreadId {
    let woken = Arc::new(WokenOn(Mutex::new(None)));
    let waker = Waker::from(woken.clone());
    let mut sleep = std::pin::pin!(Sleep::new(Duration::from_millis(1)));
    let mut cx = Context::from_waker(&waker);
    assert!(sleep.as_mut().poll(&mut cx).is_pending());
    let give_up = Instant::now() + LONG;
    loop {
        if let Some(id) = *woken.0.lock().unwrap() {
            return id;
        }
        assert!(Instant::now() < give_up, "the timer did not fire");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn timers_fire_on_the_thread_of_the_runtime_they_were_registered_on() {
    let _one = counting();
    let a = Runtime::builder().workers(1).build().unwrap();
    let b = Runtime::builder().workers(1).build().unwrap();
    let outside = sleep_fired_on();
    let on_a = a.spawn_fn(sleep_fired_on).wait().unwrap();
    let on_b = b.spawn_fn(sleep_fired_on).wait().unwrap();
    let entered_a = a.block_on(async { sleep_fired_on() });
    assert_ne!(on_a, on_b, "each runtime has its own timer thread");
    assert_ne!(on_a, outside);
    assert_ne!(on_b, outside);
    assert_eq!(
        on_a, entered_a,
        "a thread in `block_on` uses the entered runtime's"
    );
    // Outside every runtime, and on the global runtime, one driver: the process's.
    let global = ito::spawn_fn(sleep_fired_on).wait().unwrap();
    assert_eq!(global, outside);
}

#[test]
fn dropping_a_runtime_joins_its_timer_thread_and_spares_the_others_timers() {
    let _one = counting();
    // The process's driver may start here; start it first so that the counts below move
    // only with the two runtimes.
    ito::sleep(Duration::from_millis(1)).wait().unwrap();
    let base = threads_named("ito-timer");
    let a = Runtime::builder().workers(1).build().unwrap();
    let b = Runtime::builder().workers(1).build().unwrap();
    let kept = Arc::new(());
    let k = kept.clone();
    let sleeper = a.spawn(async move {
        let _k = k;
        Sleep::new(Duration::from_secs(3600)).await;
        1u8
    });
    let shared = a.install(|| ito::sleep(Duration::from_secs(3600)));
    await_timer_threads(base + 1);
    let (go, started) = std::sync::mpsc::channel();
    let other = b.spawn(async move {
        go.send(()).unwrap();
        Sleep::new(Duration::from_millis(50)).await;
        2u8
    });
    started.recv().unwrap();
    await_timer_threads(base + 2);
    drop(a);
    assert_eq!(
        threads_named("ito-timer"),
        base + 1,
        "a's timer thread was joined"
    );
    // The sleeping task, woken by the drop of its timer, is cancelled; what it held is
    // released; a shared sleep fails as cancelled.
    assert_eq!(sleeper.wait(), Err(Failure::Cancelled));
    assert_eq!(Arc::strong_count(&kept), 1, "the task's future was dropped");
    assert_eq!(shared.wait(), Err(Failure::Cancelled));
    assert_eq!(other.wait(), Ok(2), "b's timer still fires");
    drop(b);
    assert_eq!(threads_named("ito-timer"), base);
}

#[test]
fn a_sleep_moved_off_a_dropped_runtime_registers_again_where_it_is_polled() {
    let _one = counting();
    let a = Runtime::builder().workers(1).build().unwrap();
    let b = Runtime::builder().workers(1).build().unwrap();
    // Registered on a's wheel by a's worker, then handed out.
    let sleep = a
        .spawn_fn(|| {
            let mut sleep = Box::pin(Sleep::new(Duration::from_millis(30)));
            let waker = Waker::noop();
            assert!(
                sleep
                    .as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_pending()
            );
            sleep
        })
        .wait()
        .unwrap();
    let deadline = sleep.deadline();
    drop(a);
    // Its entry went with a's wheel: polled on b, it registers on b's and fires on time.
    assert_eq!(b.block_on(ito::timeout(LONG, sleep)), Ok(()));
    assert!(Instant::now() >= deadline);
}

#[test]
fn a_timer_registered_after_its_runtime_was_dropped_fires_on_the_process_driver() {
    let _one = counting();
    ito::sleep(Duration::from_millis(1)).wait().unwrap();
    let base = threads_named("ito-timer");
    let rt = Runtime::builder().workers(1).build().unwrap();
    let (go, dropped) = std::sync::mpsc::channel::<()>();
    let (running, started) = std::sync::mpsc::channel::<()>();
    // A blocking-pool thread outlives the drop (it is not joined) and still counts as the
    // runtime's: its timer finds the runtime's driver stopped.
    let job = rt.spawn_blocking(move || {
        running.send(()).unwrap();
        dropped.recv().unwrap();
        ito::sleep(Duration::from_millis(5)).wait()
    });
    started.recv().unwrap();
    drop(rt);
    go.send(()).unwrap();
    assert_eq!(job.wait(), Ok(Ok(())));
    assert_eq!(
        threads_named("ito-timer"),
        base,
        "no timer thread for a dropped runtime"
    );
}
