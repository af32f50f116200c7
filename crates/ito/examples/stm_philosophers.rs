//! Dining philosophers with STM: each fork is a `TVar<Option<usize>>` (`None` on the table,
//! `Some(p)` in philosopher `p`'s hand), and a philosopher picks up both forks in one
//! transaction, or waits (`retry`) until both are free. Nobody ever holds one fork and waits
//! for the other, so there is no deadlock, without any lock ordering.
//!
//! The philosophers are ito tasks (`atomically_async`: a waiting philosopher suspends, it
//! does not block a worker). An observer thread keeps taking snapshots of all the forks and
//! checks that every philosopher holds both of his forks or neither; each philosopher checks,
//! while eating, that both forks are his.
//!
//! ```text
//! cargo run --release -p ito --example stm_philosophers
//! ```

// TODO(multi_try_success): add the second version from the Scala STM futures paper (seed
// 004, "philosopherRace"): each round starts with fresh forks that are promises, and a
// philosopher eats in that round iff `ito::stm::multi_try_success(...)` completes both of his
// fork promises at once (all or none; a neighbour who completed one of them first wins).
// Check that no fork is completed by two philosophers and that winners are never
// neighbours. Needs `ito::stm::multi_try_success`, which is being written on another branch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ito::stm::{TVar, atomically, atomically_async, check};

/// What a run did.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) philosophers: usize,
    pub(crate) rounds: usize,
    /// Meals per philosopher.
    pub(crate) meals: Vec<usize>,
    /// Meals during which a philosopher did not hold both of his forks.
    pub(crate) bad_meals: usize,
    /// The most philosophers seen eating at once.
    pub(crate) max_eating: usize,
    /// Fork snapshots the observer took.
    pub(crate) snapshots: u64,
    /// Snapshots in which someone held exactly one fork.
    pub(crate) half_held: u64,
    pub(crate) elapsed: Duration,
}

type Fork = TVar<Option<usize>>;

/// `n` philosophers, each eating `rounds` times.
pub(crate) fn run(n: usize, rounds: usize) -> Report {
    assert!(n >= 2);
    let forks: Arc<Vec<Fork>> = Arc::new((0..n).map(|_| TVar::new(None)).collect());
    let eating = Arc::new(AtomicUsize::new(0));
    let max_eating = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let began = Instant::now();

    let observer = {
        let (forks, done) = (forks.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut snapshots, mut half_held) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                let holders: Vec<Option<usize>> =
                    atomically(|tx| forks.iter().map(|f| f.read(tx)).collect());
                snapshots += 1;
                // Philosopher p's forks are p (left) and p + 1 (right).
                let broken = (0..n).any(|p| {
                    let left = holders[p] == Some(p);
                    let right = holders[(p + 1) % n] == Some(p);
                    left != right
                });
                half_held += u64::from(broken);
            }
            (snapshots, half_held)
        })
    };

    let philosophers: Vec<_> = (0..n)
        .map(|p| {
            let (forks, eating, max_eating) = (forks.clone(), eating.clone(), max_eating.clone());
            ito::spawn(async move {
                let (left, right) = (&forks[p], &forks[(p + 1) % n]);
                let (mut meals, mut bad) = (0, 0);
                for _ in 0..rounds {
                    // Both forks at once, or wait until both are on the table.
                    atomically_async(|tx| {
                        check(left.read(tx)?.is_none() && right.read(tx)?.is_none())?;
                        left.write(tx, Some(p))?;
                        right.write(tx, Some(p))
                    })
                    .await;
                    let now = eating.fetch_add(1, Ordering::SeqCst) + 1;
                    max_eating.fetch_max(now, Ordering::Relaxed);
                    if left.read_atomic() != Some(p) || right.read_atomic() != Some(p) {
                        bad += 1;
                    }
                    for _ in 0..200 {
                        std::hint::spin_loop(); // eat
                    }
                    meals += 1;
                    eating.fetch_sub(1, Ordering::SeqCst);
                    atomically_async(|tx| {
                        left.write(tx, None)?;
                        right.write(tx, None)
                    })
                    .await;
                }
                (meals, bad)
            })
        })
        .collect();

    let results: Vec<(usize, usize)> = philosophers
        .iter()
        .map(|f| f.wait().expect("a philosopher failed"))
        .collect();
    let elapsed = began.elapsed();
    done.store(true, Ordering::Relaxed);
    let (snapshots, half_held) = observer.join().unwrap();
    Report {
        philosophers: n,
        rounds,
        meals: results.iter().map(|r| r.0).collect(),
        bad_meals: results.iter().map(|r| r.1).sum(),
        max_eating: max_eating.load(Ordering::Relaxed),
        snapshots,
        half_held,
        elapsed,
    }
}

fn main() {
    for (n, rounds) in [(5, 2000), (64, 200)] {
        let r = run(n, rounds);
        println!(
            "{} philosophers x {} rounds: {} meals in {:.1?}, no deadlock",
            r.philosophers,
            r.rounds,
            r.meals.iter().sum::<usize>(),
            r.elapsed
        );
        println!(
            "  every philosopher ate {} times: {}",
            r.rounds,
            r.meals.iter().all(|&m| m == r.rounds)
        );
        println!(
            "  meals without both forks in hand: {}; most eating at once: {} (at most {})",
            r.bad_meals,
            r.max_eating,
            r.philosophers / 2
        );
        println!(
            "  observer: {} snapshots of all forks, {} with someone holding just one fork",
            r.snapshots, r.half_held
        );
        assert!(r.meals.iter().all(|&m| m == r.rounds));
        assert_eq!((r.bad_meals, r.half_held), (0, 0));
        assert!(r.max_eating <= r.philosophers / 2);
    }
}
