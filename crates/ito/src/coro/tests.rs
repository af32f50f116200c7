//! Tests of the coroutine layer: suspension counts, panics, destructors on drop, thread
//! affinity, thread-locals, stack reuse, and overflow reports (in a child process).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Counts drops of its values.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn returned<R>(r: Resumed<R>) -> R {
    match r {
        Resumed::Returned(v) => v,
        Resumed::Suspended => panic!("expected a return, got a suspension"),
        Resumed::Panicked(_) => panic!("expected a return, got a panic"),
    }
}

fn suspended<R>(r: Resumed<R>) {
    assert!(matches!(r, Resumed::Suspended), "expected a suspension");
}

#[test]
fn many_coroutines_each_suspend_and_resume_once() {
    // Fewer under AddressSanitizer, whose bookkeeping per stack costs far more than its pages.
    const N: usize = if cfg!(feature = "sanitizer") {
        10_000
    } else {
        100_000
    };
    static BEFORE: AtomicUsize = AtomicUsize::new(0);
    static AFTER: AtomicUsize = AtomicUsize::new(0);
    // Shallow coroutines: the stack size does not change what they touch.
    let pool = StackPool::new(256 * 1024).unwrap();
    let (rss_before, _) = super::measure::rss_and_maps();
    let mut coros: Vec<Coro<usize>> = (0..N)
        .map(|i| {
            Coro::new(&pool, "suspender", move || {
                BEFORE.fetch_add(1, Ordering::Relaxed);
                suspend();
                AFTER.fetch_add(1, Ordering::Relaxed);
                i
            })
            .unwrap()
        })
        .collect();
    for c in &mut coros {
        suspended(c.resume());
    }
    assert_eq!(BEFORE.load(Ordering::Relaxed), N);
    assert_eq!(AFTER.load(Ordering::Relaxed), 0);
    // A shallow suspended coroutine commits about one page of its stack (the budget is
    // 8 KiB per task); a stack committed whole, or in huge pages, would show here.
    let (rss_suspended, _) = super::measure::rss_and_maps();
    let per_coroutine = rss_suspended.saturating_sub(rss_before) / N;
    println!("{N} suspended coroutines: {per_coroutine} bytes of RSS each");
    // AddressSanitizer's shadow memory and fake stacks make RSS meaningless there.
    #[cfg(not(feature = "sanitizer"))]
    assert!(
        per_coroutine <= 8 * 1024,
        "{per_coroutine} bytes of RSS per suspended coroutine"
    );
    for (i, c) in coros.iter_mut().enumerate() {
        assert_eq!(returned(c.resume()), i);
        assert!(c.is_done());
    }
    assert_eq!(AFTER.load(Ordering::Relaxed), N);
}

#[test]
fn a_panic_after_a_suspension_comes_out_of_resume() {
    let pool = StackPool::default();
    let mut c = Coro::new(&pool, "panicker", || -> u8 {
        suspend();
        panic!("boom after resume")
    })
    .unwrap();
    assert_eq!(c.name(), "panicker");
    assert!(!c.is_started());
    suspended(c.resume());
    assert!(c.is_started() && !c.is_done());
    match c.resume() {
        Resumed::Panicked(p) => assert_eq!(p.downcast_ref::<&str>(), Some(&"boom after resume")),
        _ => panic!("expected the panic as a value"),
    }
    assert!(c.is_done());
    // The thread goes on running coroutines.
    let mut next = Coro::new(&pool, "after", || 7).unwrap();
    assert_eq!(returned(next.resume()), 7);
}

#[test]
fn dropping_suspended_coroutines_runs_their_destructors() {
    const N: usize = 1_000;
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    static FINISHED: AtomicUsize = AtomicUsize::new(0);
    fn nest(depth: usize) {
        let _guard = Counted(&DROPS);
        if depth == 0 {
            suspend();
            FINISHED.fetch_add(1, Ordering::Relaxed);
        } else {
            nest(depth - 1);
        }
    }
    let pool = StackPool::default();
    let mut coros: Vec<Coro<()>> = (0..N)
        .map(|_| Coro::new(&pool, "nested", || nest(2)).unwrap())
        .collect();
    for c in &mut coros {
        suspended(c.resume());
    }
    assert_eq!(DROPS.load(Ordering::Relaxed), 0);
    drop(coros);
    assert_eq!(
        DROPS.load(Ordering::Relaxed),
        3 * N,
        "three guards per stack"
    );
    assert_eq!(FINISHED.load(Ordering::Relaxed), 0, "unwound, not resumed");

    // An unstarted coroutine drops its closure and what it captured.
    static CAPTURED: AtomicUsize = AtomicUsize::new(0);
    let counted = Counted(&CAPTURED);
    drop(Coro::new(&pool, "unstarted", move || drop(counted)).unwrap());
    assert_eq!(CAPTURED.load(Ordering::Relaxed), 1);
}

#[test]
fn a_suspended_coroutine_dropped_while_its_resumer_unwinds_runs_its_destructors() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let pool = StackPool::default();
    let outer = std::panic::catch_unwind(|| {
        let mut c = Coro::new(&pool, "dropped-in-unwind", || {
            let _guard = Counted(&DROPS);
            suspend();
        })
        .unwrap();
        suspended(c.resume());
        panic!("the resumer fails")
    });
    assert!(outer.is_err());
    assert_eq!(DROPS.load(Ordering::Relaxed), 1);
}

#[test]
#[should_panic(expected = "resumed after it finished")]
fn resuming_a_finished_coroutine_panics() {
    let mut c = Coro::new(&StackPool::default(), "once", || ()).unwrap();
    returned(c.resume());
    let _ = c.resume();
}

thread_local! {
    static MARK: Cell<u64> = const { Cell::new(0) };
}

#[test]
fn thread_locals_agree_before_and_after_a_suspension() {
    MARK.with(|m| m.set(super::coroutine::thread_number()));
    let pool = StackPool::default();
    let seen = Rc::new(Cell::new((0, 0, 0usize, 0usize)));
    let out = seen.clone();
    let mut c = Coro::new(&pool, "tls", move || {
        let before = (MARK.with(Cell::get), MARK.with(|m| m as *const _ as usize));
        suspend();
        let after = (MARK.with(Cell::get), MARK.with(|m| m as *const _ as usize));
        out.set((before.0, after.0, before.1, after.1));
    })
    .unwrap();
    suspended(c.resume());
    returned(c.resume());
    let (v0, v1, a0, a1) = seen.get();
    assert_eq!(v0, super::coroutine::thread_number());
    assert_eq!((v0, a0), (v1, a1));
}

#[test]
fn nested_coroutines_suspend_to_their_own_resumer() {
    let pool = StackPool::default();
    let log = Rc::new(Cell::new(0u32));
    let l = log.clone();
    let p = pool;
    let mut outer = Coro::new(&pool, "outer", move || {
        let l2 = l.clone();
        let mut inner = Coro::new(&p, "inner", move || {
            l2.set(l2.get() * 10 + 1);
            suspend();
            l2.set(l2.get() * 10 + 3);
        })
        .unwrap();
        suspended(inner.resume());
        assert!(in_coroutine());
        l.set(l.get() * 10 + 2);
        suspend();
        returned(inner.resume());
        l.set(l.get() * 10 + 4);
    })
    .unwrap();
    assert!(!in_coroutine());
    suspended(outer.resume());
    assert_eq!(log.get(), 12);
    returned(outer.resume());
    assert_eq!(log.get(), 1234);
    assert!(!in_coroutine());
}

/// The stack pointer (not a local's address: AddressSanitizer may put locals on a fake stack).
#[inline(never)]
fn stack_pointer() -> usize {
    let sp: usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads a register into a local; no memory is touched.
    unsafe {
        std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above.
    unsafe {
        std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let here = 0u8;
        sp = std::hint::black_box(&here) as *const u8 as usize;
    }
    sp
}

#[test]
fn the_running_stack_is_the_coroutines() {
    let pool = StackPool::default();
    let stack = pool.take().unwrap();
    let (_, low) = stack.guard();
    let expected = low..low + stack.size();
    assert_eq!(running_stack(), None);
    let mut c = Coro::with_stack(stack, "ranged", || {
        let range = running_stack().unwrap();
        suspend();
        assert_eq!(running_stack(), Some(range.clone()));
        (range, stack_pointer())
    });
    suspended(c.resume());
    assert_eq!(running_stack(), None);
    let (range, here) = returned(c.resume());
    assert_eq!(range, expected);
    assert!(range.contains(&here));
}

#[test]
fn a_finished_coroutines_stack_is_reused() {
    let pool = StackPool::default();
    let first = pool.take().unwrap();
    let guard = first.guard();
    assert_eq!(first.size(), pool.size());
    let mut c = Coro::with_stack(first, "first", || 1);
    assert_eq!(returned(c.resume()), 1);
    drop(c);
    assert_eq!(pool.take().unwrap().guard(), guard);
}

#[test]
fn stack_sizes_out_of_range_are_refused() {
    assert!(StackPool::new(0).is_err());
    assert!(StackPool::new(StackPool::MAX_SIZE + 1).is_err());
    let err = StackPool::new(1).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    let pool = StackPool::new(StackPool::MIN_SIZE + 1).unwrap();
    assert_eq!(pool.size() % super::stack::page_size(), 0);
    assert!(pool.size() > StackPool::MIN_SIZE);
}

#[test]
#[should_panic(expected = "outside a coroutine")]
fn suspend_outside_a_coroutine_panics() {
    suspend();
}

/// Set in a child process: which overflow to run.
const CHILD_ENV: &str = "ITO_CORO_OVERFLOW_CHILD";

/// Recurses until the stack runs out (the array keeps each frame large and alive).
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if depth == u64::MAX {
        return frame[0];
    }
    recurse(depth + 1) + std::hint::black_box(frame[1])
}

/// The child side of the overflow tests; does nothing unless run by them.
#[test]
fn overflow_child() {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("coroutine") => {
            let pool = StackPool::new(StackPool::MIN_SIZE).unwrap();
            // Pages given back to the kernel keep the guard page.
            let stack = pool.take().unwrap();
            stack.discard_pages();
            let mut c = Coro::with_stack(stack, "deep-recursion", || recurse(0));
            let _ = c.resume();
        }
        Ok("first-of-chunk") => {
            // The cache hands a chunk's stacks out last first: the chunk's lowest stack comes
            // out last, and its guard was installed by the same batch as the others'.
            let pool = StackPool::new(StackPool::MIN_SIZE).unwrap();
            let mut held: Vec<_> = (0..super::stack::CHUNK)
                .map(|_| pool.take().unwrap())
                .collect();
            let lowest = held.pop().unwrap();
            assert!(held.iter().all(|s| s.guard().0 > lowest.guard().0));
            let mut c = Coro::with_stack(lowest, "first-of-chunk", || recurse(0));
            let _ = c.resume();
        }
        Ok("one-by-one-guard") => {
            super::stack::BATCHED_GUARDS.with(|b| b.set(false));
            let pool = StackPool::new(StackPool::MIN_SIZE).unwrap();
            let mut c = Coro::new(&pool, "one-by-one-guard", || recurse(0)).unwrap();
            let _ = c.resume();
        }
        Ok("mprotect-guard") => {
            super::stack::FORCE_MPROTECT_GUARD.with(|f| f.set(true));
            let pool = StackPool::new(StackPool::MIN_SIZE).unwrap();
            let mut c = Coro::new(&pool, "mprotect-guard", || recurse(0)).unwrap();
            let _ = c.resume();
        }
        Ok("no-alt-stack") => {
            // A thread without an alternate signal stack (as one not made by Rust's runtime
            // may be) gets one on its first resume, so the report can still run.
            let disable = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            // SAFETY: disabling this thread's alternate stack touches no memory.
            let rc = unsafe { libc::sigaltstack(&disable, std::ptr::null_mut()) };
            assert_eq!(rc, 0);
            let pool = StackPool::new(StackPool::MIN_SIZE).unwrap();
            let mut c = Coro::new(&pool, "no-alt-stack", || recurse(0)).unwrap();
            let _ = c.resume();
        }
        Ok("thread") => {
            // A coroutine first, so that our handler is installed in front of Rust's.
            let pool = StackPool::default();
            returned(Coro::new(&pool, "warm-up", || ()).unwrap().resume());
            std::thread::Builder::new()
                .name("plain-thread".into())
                .stack_size(64 * 1024)
                .spawn(|| recurse(0))
                .unwrap()
                .join()
                .unwrap();
        }
        _ => {}
    }
}

/// Runs [`overflow_child`] in a child process, checks that it aborted, and returns its
/// standard error. (A fault that AddressSanitizer reports exits with status 1 instead.)
fn abort_of_child(which: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "coro::tests::overflow_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, which)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if cfg!(feature = "sanitizer") && stderr.contains("AddressSanitizer") {
        assert!(!out.status.success(), "stderr: {stderr}");
        return stderr;
    }
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "status: {:?}, stderr: {stderr}",
        out.status
    );
    stderr
}

/// Checks that the child run `which` reported an overflow of the coroutine `name`.
fn assert_overflow_reported(which: &str, name: &str) {
    let stderr = abort_of_child(which);
    let report = format!("coroutine '{name}' has overflowed its stack");
    assert!(stderr.contains(&report), "stderr: {stderr}");
}

#[test]
fn a_coroutine_stack_overflow_is_reported_by_name_and_aborts() {
    assert_overflow_reported("coroutine", "deep-recursion");
}

#[test]
fn every_stack_of_a_chunk_has_its_guard() {
    assert_overflow_reported("first-of-chunk", "first-of-chunk");
}

#[test]
fn guards_installed_one_by_one_report_overflows() {
    assert_overflow_reported("one-by-one-guard", "one-by-one-guard");
}

#[test]
fn the_older_kernels_guard_page_is_a_protected_mapping_and_reports_overflows() {
    super::stack::FORCE_MPROTECT_GUARD.with(|f| f.set(true));
    let stack = StackPool::default().take().unwrap();
    super::stack::FORCE_MPROTECT_GUARD.with(|f| f.set(false));
    let (low, _) = stack.guard();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps
        .lines()
        .find(|l| l.starts_with(&format!("{low:x}-")))
        .expect("the guard page starts a mapping of its own");
    assert_eq!(line.split_whitespace().nth(1), Some("---p"), "{line}");
    assert_overflow_reported("mprotect-guard", "mprotect-guard");
}

#[test]
fn an_overflow_is_reported_on_a_thread_that_had_no_alternate_signal_stack() {
    assert_overflow_reported("no-alt-stack", "no-alt-stack");
}

#[test]
fn a_thread_stack_overflow_still_reaches_rusts_report() {
    let stderr = abort_of_child("thread");
    // Under AddressSanitizer its own handler, which Rust's runtime defers to, reports it.
    let rust =
        stderr.contains("thread 'plain-thread'") && stderr.contains("has overflowed its stack");
    let asan = cfg!(feature = "sanitizer") && stderr.contains("AddressSanitizer: stack-overflow");
    assert!(rust || asan, "stderr: {stderr}");
    assert!(!stderr.contains("coroutine '"), "stderr: {stderr}");
}
