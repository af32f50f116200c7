//! Synchronous code that blocks in ito's waits suspends with its stack, and the worker goes on
//! (`docs/coroutines.md`): counts of resumptions, the promise chain that used to stall, panics,
//! cancellation, thread-locals and overflow reports.

mod support;

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use ito::{Promise, Runtime};

use support::quiet_expected_panics as quiet;

/// 100,000, or 10,000 under AddressSanitizer, whose bookkeeping per coroutine stack (shadow
/// and fake stacks) costs far more memory than the stack's touched pages.
const MANY: usize = if cfg!(feature = "sanitizer") {
    10_000
} else {
    100_000
};

/// A runtime of two workers; under AddressSanitizer, with 256 KiB task stacks (its bookkeeping
/// grows with the stack size, and these tests suspend thousands of tasks at once).
fn two_workers() -> Runtime {
    let stack = if cfg!(feature = "sanitizer") {
        256 << 10
    } else {
        8 << 20
    };
    Runtime::builder()
        .workers(2)
        .task_stack_size(stack)
        .build()
        .unwrap()
}

/// Threads the runtime may have for `workers` workers with every wait suspending: the workers,
/// and nothing brought in for blocked ones.
fn thread_bound(rt: &Runtime) -> u64 {
    rt.metrics().workers as u64 + 4
}

#[test]
fn a_hundred_thousand_suspended_tasks_each_resume_exactly_once() {
    const N: usize = MANY;
    let rt = two_workers();
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..N).map(|_| AtomicU8::new(0)).collect());
    let mut tasks: Vec<_> = (0..N)
        .map(|i| {
            let runs = runs.clone();
            rt.spawn_fn(move || {
                ito::sleep(Duration::from_millis(100)).wait().unwrap();
                runs[i].fetch_add(1, SeqCst);
            })
        })
        .collect();
    for t in &mut tasks {
        assert_eq!(t.wait_timeout(Duration::from_secs(120)), Some(Ok(())));
    }
    assert!(
        runs.iter().all(|r| r.load(SeqCst) == 1),
        "a task ran twice or never"
    );
    let m = rt.metrics();
    // A task whose timer fired before it parked (its thread preempted meanwhile) does not
    // suspend; nearly all do.
    assert!(m.suspends >= N as u64 / 2, "{m:?}");
    assert!(m.peak_threads <= thread_bound(&rt), "{m:?}");
    assert_eq!(m.compensations, 0, "{m:?}");
}

/// Task `i` waits for a promise that task `i + 1` completes after its own wait; a plain thread
/// completes the last one. Each wait used to hold an OS thread, and past the thread bound the
/// chain stalled. Now every wait suspends.
fn promise_chain(n: usize) {
    let rt = two_workers();
    let promises: Vec<Promise<u64>> = (0..n).map(|_| Promise::new()).collect();
    let mut tasks: Vec<_> = (0..n)
        .map(|i| {
            let mine = promises[i].future();
            let above = (i > 0).then(|| promises[i - 1].clone());
            rt.spawn_fn(move || {
                let v = mine.wait().unwrap();
                if let Some(p) = above {
                    assert!(p.try_success(v + 1));
                }
                v
            })
        })
        .collect();
    let last = promises[n - 1].clone();
    let finisher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        assert!(last.try_success(0));
    });
    assert_eq!(
        tasks[0].wait_timeout(Duration::from_secs(120)),
        Some(Ok(n as u64 - 1))
    );
    finisher.join().unwrap();
    let m = rt.metrics();
    assert!(m.peak_threads <= thread_bound(&rt), "{m:?}");
}

#[test]
fn a_chain_of_a_thousand_waits_on_promises_finishes() {
    promise_chain(1_000);
}

#[test]
fn a_chain_of_a_hundred_thousand_waits_on_promises_finishes() {
    promise_chain(MANY);
}

#[test]
fn a_panic_after_a_resume_is_the_tasks_failure_and_the_worker_survives() {
    quiet();
    let rt = Runtime::builder().workers(1).build().unwrap();
    let t = rt.spawn_fn(|| {
        ito::sleep(Duration::from_millis(5)).wait().unwrap();
        std::panic::panic_any(7u32);
    });
    let err = t.wait().unwrap_err();
    let payload = err.into_panic().expect("a panic");
    assert_eq!(payload.downcast_ref::<u32>(), Some(&7));
    assert!(rt.metrics().suspends >= 1);
    // The only worker still runs tasks, suspending ones too.
    assert_eq!(rt.spawn_fn(|| 1).wait(), Ok(1));
    let t = rt.spawn_fn(|| ito::sleep(Duration::from_millis(1)).wait().map(|_| 2));
    assert_eq!(t.wait(), Ok(Ok(2)));
}

/// Counts its drops.
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn cancelling_a_suspended_task_ends_its_wait_and_runs_its_destructors() {
    quiet();
    let rt = Runtime::builder().workers(1).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let never = Promise::<u32>::new();
    let started = Promise::<()>::new();
    // One task returns the wait's error, the other unwinds on it.
    let tasks: Vec<_> = [false, true]
        .into_iter()
        .map(|unwrap| {
            let guard = Guard(dropped.clone());
            let f = never.future();
            let started = started.clone();
            rt.spawn_fn(move || {
                let _guard = guard;
                let _ = started.try_success(());
                let r = f.wait();
                if unwrap {
                    r.clone().unwrap();
                }
                r
            })
        })
        .collect();
    started.future().wait().unwrap();
    // Both are suspended once the metrics say so.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rt.metrics().suspends < 2 {
        assert!(std::time::Instant::now() < deadline, "{:?}", rt.metrics());
        std::thread::sleep(Duration::from_millis(1));
    }
    for t in &tasks {
        assert!(t.abort());
    }
    for mut t in tasks {
        assert!(t.wait_timeout(Duration::from_secs(10)).is_some());
    }
    assert_eq!(dropped.load(SeqCst), 2, "each task's stack unwound");
    drop(never);
}

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

#[test]
fn a_task_resumes_on_its_thread_with_its_thread_locals() {
    let rt = two_workers();
    let mut tasks: Vec<_> = (0..2_000)
        .map(|i| {
            rt.spawn_fn(move || {
                let thread = std::thread::current().id();
                let slot = SLOT.with(|s| s as *const Cell<usize> as usize);
                SLOT.with(|s| s.set(i));
                ito::sleep(Duration::from_millis(1 + (i % 7) as u64))
                    .wait()
                    .unwrap();
                // Other tasks ran on this thread meanwhile; this is still the same thread,
                // with the same thread-local.
                assert_eq!(std::thread::current().id(), thread);
                assert_eq!(SLOT.with(|s| s as *const Cell<usize> as usize), slot);
            })
        })
        .collect();
    for t in &mut tasks {
        assert_eq!(t.wait_timeout(Duration::from_secs(60)), Some(Ok(())));
    }
}

/// The recommended pattern for mutual exclusion across a wait: an ito lock, whose blocking
/// acquire suspends too (a `std::sync::MutexGuard` held across a wait can deadlock its worker,
/// `docs/coroutines.md`).
#[test]
fn an_ito_lock_held_across_a_wait_does_not_deadlock_its_worker() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let lock = Arc::new(ito::sync::Mutex::new(0u32));
    let mut tasks: Vec<_> = (0..50)
        .map(|_| {
            let lock = lock.clone();
            rt.spawn_fn(move || {
                let mut held = lock.lock_blocking().unwrap();
                let before = *held;
                ito::sleep(Duration::from_millis(1)).wait().unwrap();
                // Nobody else got in while this task was suspended holding the lock.
                assert_eq!(*held, before);
                *held += 1;
            })
        })
        .collect();
    for t in &mut tasks {
        assert_eq!(t.wait_timeout(Duration::from_secs(30)), Some(Ok(())));
    }
    assert_eq!(*lock.lock_blocking().unwrap(), 50);
    assert_eq!(rt.metrics().compensations, 0);
}

/// `wait()` inside an async task's poll suspends too: the worker goes on with other tasks.
#[test]
fn a_wait_inside_an_async_task_suspends() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let gate = Promise::<u32>::new();
    let g = gate.future();
    let waiting = rt.spawn(async move { g.wait() });
    // The only worker is suspended in that poll; it still runs this task.
    let opener = rt.spawn_fn(move || gate.try_success(5));
    assert_eq!(opener.wait(), Ok(true));
    assert_eq!(waiting.wait(), Ok(Ok(5)));
    assert_eq!(rt.metrics().compensations, 0);
}

/// A stack overflow in a task hits its stack's guard page and is reported, naming the worker
/// thread, before the process aborts. Runs in a child process.
#[test]
fn a_task_stack_overflow_is_reported() {
    const CHILD: &str = "ITO_TEST_TASK_OVERFLOW_CHILD";
    if std::env::var(CHILD).is_err() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_task_stack_overflow_is_reported",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("'a task on overflow-test-worker-0' has overflowed its stack"),
            "{stderr}"
        );
        return;
    }
    fn deep(n: u64) -> u64 {
        let pad = std::hint::black_box([n; 64]);
        if n == 0 { 0 } else { deep(n - 1) + pad[3] }
    }
    let rt = Runtime::builder()
        .workers(1)
        .task_stack_size(64 * 1024)
        .thread_name("overflow-test")
        .build()
        .unwrap();
    let r = rt.spawn_fn(|| deep(1 << 20)).wait();
    unreachable!("the overflow aborts the process: {r:?}");
}

#[test]
fn a_task_stack_size_out_of_range_is_refused() {
    let err = Runtime::builder().task_stack_size(100).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("task stack size"), "{err}");
}
