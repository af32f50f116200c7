//! A dropped runtime gives its memory back, and what outlives it (a waker, a task handle, a
//! registered process) stays sound: a wake cancels the task, a handle reads the task's
//! outcome, and names stay with the runtime they were registered on.

use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ito::process::{self, Mailbox};
use ito::{Failure, Runtime};
use support::{thread_names, threads_named};

mod support;

/// The tests of this file count this process's memory and threads: they run one at a time.
static MEASURING: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runtimes created before the first measurement: the allocator's arenas, the task slab's
/// chunks and the thread-stack cache reach their steady size.
const WARM_UP: usize = 500;
/// Runtimes created and dropped one after another. Under AddressSanitizer a tenth: there the
/// churn looks for use after free, and the resident set is not asserted (below).
const RUNTIMES: usize = if cfg!(feature = "sanitizer") {
    WARM_UP + 500
} else {
    10_000
};
/// The most the resident set may grow from the end of the warm-up to the end. A runtime
/// block with its slots, queues and buffers is about 135 KB, so keeping even a hundredth of
/// each of the 9,500 measured runtimes (12 MiB) fails; the allocator's caches, which are
/// warm by then, stay well below it.
const MAX_GROWTH_KIB: u64 = 8 << 10;

/// This process's resident set size, in KiB (`VmRSS` in `/proc/self/status`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS line");
    line.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmRSS value")
}

/// Creates and drops `n` runtimes one after another, each running `each` first.
fn churn(n: usize, each: &mut impl FnMut(&Runtime)) {
    for _ in 0..n {
        let rt = Runtime::builder().workers(1).build().unwrap();
        each(&rt);
        drop(rt);
    }
}

/// Creates and drops 10,000 runtimes; asserts the resident set grew less than
/// [`MAX_GROWTH_KIB`] after the warm-up, and that no thread was left behind. The caller
/// holds [`one_at_a_time`].
fn assert_flat(mut each: impl FnMut(&Runtime)) {
    churn(WARM_UP, &mut each);
    let threads = thread_names().len();
    let timer_threads = threads_named("ito-timer");
    let before = rss_kib();
    churn(RUNTIMES - WARM_UP, &mut each);
    let after = rss_kib();
    let growth = after.saturating_sub(before);
    // AddressSanitizer keeps freed memory in quarantine (256 MB by default) instead of
    // handing it back, so the resident set grows with every free there.
    assert!(
        cfg!(feature = "sanitizer") || growth < MAX_GROWTH_KIB,
        "RSS grew {growth} KiB over {} runtimes ({before} KiB -> {after} KiB)",
        RUNTIMES - WARM_UP
    );
    assert_eq!(
        threads_named("ito-timer"),
        timer_threads,
        "timer threads were joined"
    );
    // Blocking-pool threads exit on their own after the drop, unjoined: wait for them.
    // Fewer is fine: the global runtime's idle threads may retire meanwhile.
    let give_up = std::time::Instant::now() + support::LONG;
    while thread_names().len() > threads {
        assert!(
            std::time::Instant::now() < give_up,
            "{threads} threads before, now {:?}",
            thread_names()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn dropped_runtimes_give_their_memory_back() {
    let _one = one_at_a_time();
    let mut ran = 0usize;
    assert_flat(|rt| {
        assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
        assert_eq!(rt.spawn_blocking(|| 2).wait(), Ok(2));
        // A pool of one queues its second task idle (allocated without a spawn), from
        // outside the runtime and from one of its workers.
        assert_eq!(rt.block_on(pool_of_one()), (Ok(3), Ok(4)));
        assert_eq!(rt.spawn(pool_of_one()).wait(), Ok((Ok(3), Ok(4))));
        ran += 1;
    });
    assert_eq!(ran, RUNTIMES, "every runtime ran its tasks");
}

/// Two tasks through a pool that runs one at a time: the second waits, queued, until the
/// first ends.
async fn pool_of_one() -> (Result<u8, Failure>, Result<u8, Failure>) {
    let pool = ito::sync::Pool::new(1);
    let (go, wait) = ito::sync::oneshot::channel::<()>();
    let a = pool.spawn(async move {
        let _ = wait.await;
        3
    });
    let b = pool.spawn_fn(|| 4);
    assert_eq!(
        pool.queued(),
        1,
        "the second task waits for the first's slot"
    );
    go.send(()).unwrap();
    (a.await, b.await)
}

/// A future that hands its waker out on its first poll and then waits forever.
struct Parked(Arc<Mutex<Option<Waker>>>);

impl StdFuture for Parked {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        *self.0.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Spawns a [`Parked`] task on `rt` and returns its waker once it has polled.
fn parked_task(rt: &Runtime) -> (ito::Task<u8>, Waker) {
    let slot = Arc::new(Mutex::new(None));
    let task = rt.spawn(Parked(slot.clone()));
    loop {
        if let Some(w) = slot.lock().unwrap().take() {
            return (task, w);
        }
        std::thread::yield_now();
    }
}

#[test]
fn runtimes_that_used_timers_give_their_memory_and_timer_threads_back() {
    let _one = one_at_a_time();
    let mut slept = 0usize;
    assert_flat(|rt| {
        let nap = rt.spawn(async {
            ito::time::Sleep::new(Duration::from_micros(100)).await;
            1u8
        });
        assert_eq!(nap.wait(), Ok(1));
        slept += 1;
        // Registered on the runtime's wheel (by one of its workers) and left pending: the
        // drop drops it.
        drop(rt.install(|| ito::sleep(Duration::from_secs(3600))));
    });
    assert_eq!(slept, RUNTIMES, "every runtime slept");
}

#[test]
fn a_waker_woken_after_its_runtime_is_dropped_cancels_the_task() {
    let _one = one_at_a_time();
    let rt = Runtime::builder().workers(1).build().unwrap();
    let (task, waker) = parked_task(&rt);
    let twin = waker.clone();
    drop(rt);
    assert!(
        !task.is_finished(),
        "an idle task is not touched by the drop"
    );
    waker.wake_by_ref();
    assert_eq!(task.wait(), Err(Failure::Cancelled));
    // Later wakes of the finished task do nothing.
    waker.wake();
    twin.wake();
}

/// Runs test `name` again in a child process whose allocator fills freed memory with a
/// pattern (glibc's `MALLOC_PERTURB_`), and asserts that the child passed: a use of a freed
/// runtime block then reads the pattern and crashes or panics, instead of reading what the
/// block held. Returns `true` in the child, which then runs the test's body.
fn in_child_that_poisons_freed_memory(name: &str) -> bool {
    const CHILD: &str = "ITO_TEST_POISONED_CHILD";
    if std::env::var(CHILD).is_ok_and(|v| v == name) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .env("MALLOC_PERTURB_", "165")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} failed in the child ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// A `block_on` on a worker hands out its loop's unblocker in its waker. A waker kept past
/// the wait (as a future that stores the last waker it saw does) and woken after the runtime
/// was dropped and freed finds the loop not suspended, and touches nothing of the runtime.
#[test]
fn a_worker_block_on_waker_woken_after_its_runtime_is_freed_touches_nothing() {
    let _one = one_at_a_time();
    if !in_child_that_poisons_freed_memory(
        "a_worker_block_on_waker_woken_after_its_runtime_is_freed_touches_nothing",
    ) {
        return;
    }
    let rt = Runtime::builder().workers(1).build().unwrap();
    let kept = Arc::new(Mutex::new(None::<Waker>));
    let k = kept.clone();
    rt.spawn_fn(move || {
        ito::block_on(std::future::poll_fn(|cx| {
            *k.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(())
        }))
    })
    .wait()
    .unwrap();
    // No task of `rt` is left: the drop frees its block.
    drop(rt);
    let waker = kept.lock().unwrap().take().expect("the waker was kept");
    waker.wake_by_ref();
    waker.wake();
}

/// An async scope is bound to the runtime that first polls it, and spawns its children there.
/// Polled on elsewhere after that runtime was dropped, it still finds the runtime (its late
/// child is cancelled, as a wake after the drop cancels a task), not freed memory.
#[test]
fn an_async_scope_that_outlives_its_runtime_cancels_its_late_children() {
    let _one = one_at_a_time();
    if !in_child_that_poisons_freed_memory(
        "an_async_scope_that_outlives_its_runtime_cancels_its_late_children",
    ) {
        return;
    }
    let rt = Runtime::builder().workers(1).build().unwrap();
    let gate = ito::Promise::<()>::new();
    let opened = gate.future();
    let mut scope = Box::pin(ito::scope(move |s| async move {
        opened.await.unwrap();
        s.spawn(async { 1u8 }).await
    }));
    // The first poll, inside `rt`, binds the scope to `rt`; no task of `rt` holds it.
    let pending = rt.block_on(std::future::poll_fn(|cx| {
        Poll::Ready(scope.as_mut().poll(cx).is_pending())
    }));
    assert!(pending, "the body waits for the gate");
    drop(rt);
    gate.success(()).unwrap();
    let err = ito::block_on(scope).expect_err("the late child was cancelled");
    assert_eq!(err.failures(), [Failure::Cancelled]);
}

#[test]
fn runtimes_outlived_by_their_tasks_are_freed_with_the_last_waker() {
    let _one = one_at_a_time();
    let mut woken = 0usize;
    let mut left: Option<(ito::Task<u8>, Waker)> = None;
    assert_flat(|rt| {
        // The previous runtime is dropped: its parked task is all that holds its memory.
        if let Some((task, waker)) = left.take() {
            waker.wake();
            assert_eq!(task.wait(), Err(Failure::Cancelled));
            woken += 1;
        }
        left = Some(parked_task(rt));
    });
    assert_eq!(woken, RUNTIMES - 1);
}

#[test]
fn names_of_a_dropped_runtime_are_not_found_from_a_new_one() {
    let _one = one_at_a_time();
    let one = Runtime::builder().workers(1).build().unwrap();
    let (started_tx, started) = std::sync::mpsc::channel();
    let p = one.block_on(async move {
        let p = process::spawn(move |mut mb: Mailbox<u8>| async move {
            started_tx.send(()).unwrap();
            mb.recv().await;
        });
        process::register("outlives-its-runtime", &p).unwrap();
        p
    });
    // Waiting for a message, not queued: the drop leaves the process alive.
    started.recv().unwrap();
    drop(one);
    assert!(p.is_alive(), "the process waits for a message");
    for _ in 0..8 {
        let two = Runtime::builder().workers(1).build().unwrap();
        assert_eq!(
            two.block_on(async { process::whereis::<u8>("outlives-its-runtime") }),
            None
        );
    }
    // The message wakes it on a runtime that is gone: it is cancelled.
    p.send(0).unwrap();
    let _ = p.on_exit().wait();
    assert!(!p.is_alive());
}
