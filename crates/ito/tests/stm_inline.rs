//! Scalars stored inline in the variable (a seqlock over two atomic words, `stm/tvar.rs`)
//! under a concurrent writer, sized for Miri's data-race detector and weak-memory emulation
//! (`cargo +nightly miri test -p ito --test stm_inline`, with `-Zmiri-tree-borrows
//! -Zmiri-permissive-provenance -Zmiri-ignore-leaks` for crossbeam-epoch, and
//! `-Zmiri-many-seeds` for more interleavings). Every value a writer commits is consistent
//! (equal halves, a `bool` and a `char` that agree with the integer), so a torn or stale
//! read, or one from a version other than the one validated, shows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ito::stm::{TVar, atomically};

/// The values commit `k` writes: a `u128` with equal halves, and a `bool` and a `char`
/// derived from `k`.
fn values(k: u64) -> (u128, bool, char) {
    let c = char::from_u32(0x1F600 + (k % 64) as u32).expect("valid char");
    ((u128::from(k) << 64) | u128::from(k), k % 2 == 1, c)
}

#[test]
fn inline_scalars_are_consistent_under_a_concurrent_writer() {
    let commits = if cfg!(miri) { 40 } else { 20_000 };
    let (w, f, c) = values(0);
    let wide = Arc::new(TVar::new(w));
    let flag = Arc::new(TVar::new(f));
    let ch = Arc::new(TVar::new(c));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (wide, flag, ch, done) = (wide.clone(), flag.clone(), ch.clone(), done.clone());
        std::thread::spawn(move || {
            for k in 1..=commits {
                let (w, f, c) = values(k);
                atomically(|tx| {
                    wide.write(tx, w)?;
                    flag.write(tx, f)?;
                    ch.write(tx, c)
                });
            }
            done.store(true, Ordering::Release);
        })
    };
    let mut reads = 0u64;
    // Read at least a few times even if the writer is done first (then the reads see the
    // last commit, which must be as consistent as any).
    while !done.load(Ordering::Acquire) || reads < 5 {
        reads += 1;
        let (w, f, c) = atomically(|tx| Ok((wide.read(tx)?, flag.read(tx)?, ch.read(tx)?)));
        let k = w as u64;
        assert_eq!((w >> 64) as u64, k, "torn u128 in a transaction: {w:#x}");
        assert_eq!((w, f, c), values(k), "a snapshot mixed two commits");
        let w = wide.read_atomic();
        assert_eq!((w >> 64) as u64, w as u64, "torn u128 outside: {w:#x}");
        // A lone `bool` or `char` read is some committed value.
        let f = flag.read_atomic();
        let c = ch.read_atomic();
        assert!(u32::from(c) >= 0x1F600 && u32::from(c) < 0x1F640, "{c:?}");
        let _ = f;
    }
    writer.join().expect("writer");
    assert_eq!(
        (wide.read_atomic(), flag.read_atomic(), ch.read_atomic()),
        values(commits)
    );
}
