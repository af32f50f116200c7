//! Micro-measurements of the coroutine layer, printed rather than asserted (run them on a quiet
//! machine): `cargo test -p ito --release --lib coro::measure -- --ignored --nocapture
//! --test-threads=1`.

use std::hint::black_box;
use std::time::Instant;

use super::*;

/// Resident pages and the number of kernel mappings of this process.
pub(super) fn rss_and_maps() -> (usize, usize) {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let resident: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count();
    (resident * super::stack::page_size(), maps)
}

/// Nanoseconds per iteration of `f`, run `n` times.
fn per_op(n: u32, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

#[test]
#[ignore = "a measurement: prints figures, asserts nothing about them"]
fn coroutine_costs() {
    const N: u32 = 1_000_000;
    let pool = StackPool::default();

    // A resume and the matching suspend: one round trip between stacks.
    let mut looping = Coro::new(&pool, "looper", || {
        loop {
            suspend();
        }
    })
    .unwrap();
    let _ = looping.resume();
    let switch = per_op(N, || {
        assert!(matches!(looping.resume(), Resumed::Suspended))
    });

    // Creation from a warm cache, one run to completion, and the stack's return to the cache.
    let create = per_op(N, || {
        let mut c = Coro::new(&pool, "short", || black_box(1)).unwrap();
        assert!(matches!(c.resume(), Resumed::Returned(1)));
    });

    // The same, giving the stack's pages back to the kernel on every return.
    let create_discard = per_op(N / 10, || {
        let stack = pool.take().unwrap();
        stack.discard_pages();
        let mut c = Coro::with_stack(stack, "short", || black_box(1));
        assert!(matches!(c.resume(), Resumed::Returned(1)));
    });

    // A plain call of the same closure, for comparison.
    let call = per_op(N, || assert_eq!(black_box(|| black_box(1))(), 1));

    // Mapping fresh stacks (the cache holds only a few): `take` with an empty cache.
    let fresh: Vec<_> = (0..super::stack::CACHE_CAP)
        .map(|_| pool.take().unwrap())
        .collect();
    let mut held = Vec::with_capacity(100_000);
    let start = Instant::now();
    for _ in 0..100_000 {
        held.push(pool.take().unwrap());
    }
    let map = start.elapsed().as_nanos() as f64 / 100_000.0;
    drop(held);
    drop(fresh);

    println!("round trip (resume + suspend): {switch:.1} ns");
    println!("create + run + release, warm cache: {create:.1} ns (a plain call: {call:.1} ns)");
    println!("create + run + release, pages discarded on each reuse: {create_discard:.1} ns");
    println!("map a fresh stack and guard it: {map:.1} ns");
}

#[test]
#[ignore = "a measurement: prints figures, asserts nothing about them"]
fn suspended_coroutine_memory() {
    const N: usize = 100_000;
    let pool = StackPool::default();
    let (rss0, maps0) = rss_and_maps();
    let mut coros: Vec<Coro<usize>> = (0..N)
        .map(|i| {
            Coro::new(&pool, "shallow", move || {
                suspend();
                i
            })
            .unwrap()
        })
        .collect();
    for c in &mut coros {
        assert!(matches!(c.resume(), Resumed::Suspended));
    }
    let (rss1, maps1) = rss_and_maps();
    let vm_pte = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmPTE"))
        .map(str::to_owned)
        .unwrap_or_default();
    println!(
        "{N} suspended shallow coroutines ({} KiB stacks): RSS +{} bytes each, {} kernel mappings \
         added; {vm_pte} in all",
        pool.size() / 1024,
        (rss1 - rss0) / N,
        maps1 as isize - maps0 as isize
    );
    for (i, c) in coros.iter_mut().enumerate() {
        assert!(matches!(c.resume(), Resumed::Returned(v) if v == i));
    }
}
