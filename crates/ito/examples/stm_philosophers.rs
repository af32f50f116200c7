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
//! A second version, `run_race`, is the philosopher race of the Scala STM futures paper
//! (seed 004): every round starts with fresh forks that are `Promise`s, and all philosophers
//! race for them at once; a philosopher eats in that round iff `ito::stm::multi_try_success`
//! completes both of his fork promises (all or none). Checked every round: each fork went to
//! one of its two philosophers, every winner got both his forks, no two neighbours both won,
//! and every loser has a neighbour who won (he lost to someone).
//!
//! ```text
//! cargo run --release -p ito --example stm_philosophers
//! ```

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
        .into_iter()
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

/// What a philosopher race did.
#[derive(Debug)]
pub(crate) struct RaceReport {
    pub(crate) philosophers: usize,
    pub(crate) rounds: usize,
    /// Winners over all rounds, and the fewest and most in one round.
    pub(crate) winners: usize,
    pub(crate) min_winners: usize,
    pub(crate) max_winners: usize,
    /// Rounds that broke one of the checks (see the module docs).
    pub(crate) bad_rounds: usize,
    pub(crate) elapsed: Duration,
}

/// `n` philosophers (ito tasks) race for `n` fresh promise forks, `rounds` times.
pub(crate) fn run_race(n: usize, rounds: usize) -> RaceReport {
    assert!(n >= 2);
    let began = Instant::now();
    let mut r = RaceReport {
        philosophers: n,
        rounds,
        winners: 0,
        min_winners: usize::MAX,
        max_winners: 0,
        bad_rounds: 0,
        elapsed: Duration::ZERO,
    };
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut order: Vec<usize> = (0..n).collect();
    for _ in 0..rounds {
        let forks: Arc<Vec<ito::Promise<usize>>> =
            Arc::new((0..n).map(|_| ito::Promise::new()).collect());
        // Start the philosophers in a random order, so the race has different winners.
        for i in (1..n).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(i, (rng % (i as u64 + 1)) as usize);
        }
        let mut tries: Vec<(usize, ito::Task<bool>)> = order
            .iter()
            .map(|&p| {
                let forks = forks.clone();
                let try_both = ito::spawn_fn(move || {
                    ito::stm::multi_try_success([(&forks[p], p), (&forks[(p + 1) % n], p)])
                });
                (p, try_both)
            })
            .collect();
        tries.sort_by_key(|t| t.0);
        let won: Vec<bool> = tries
            .into_iter()
            .map(|t| t.1.wait().expect("a philosopher failed"))
            .collect();
        // Who took each fork (a fork both neighbours lost stays on the table).
        let holder: Vec<Option<usize>> = forks
            .iter()
            .map(|f| f.future().value().map(|v| v.expect("a fork failed")))
            .collect();
        let right = |p: usize| (p + 1) % n;
        let left_neighbour = |p: usize| (p + n - 1) % n;
        let ok = (0..n).all(|f| holder[f].is_none_or(|h| (h == f || right(h) == f) && won[h]))
            && (0..n).all(|p| {
                if won[p] {
                    holder[p] == Some(p) && holder[right(p)] == Some(p) && !won[right(p)]
                } else {
                    won[left_neighbour(p)] || won[right(p)]
                }
            });
        let winners = won.iter().filter(|&&w| w).count();
        r.bad_rounds += usize::from(!ok || winners == 0);
        r.winners += winners;
        r.min_winners = r.min_winners.min(winners);
        r.max_winners = r.max_winners.max(winners);
    }
    r.elapsed = began.elapsed();
    r
}

fn main() {
    println!("-- forks as TVars: each philosopher takes both at once or waits --");
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
            "  meals without both forks in hand: {}; most eating at once: {} (n/2 = {}, and one \
             per worker at most)",
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
    println!("-- forks as promises: a race per round, won with multi_try_success --");
    for (n, rounds) in [(5, 1000), (65, 100)] {
        let r = run_race(n, rounds);
        println!(
            "{} philosophers x {} rounds in {:.1?}: {} winners ({:.1} a round, {}..={})",
            r.philosophers,
            r.rounds,
            r.elapsed,
            r.winners,
            r.winners as f64 / r.rounds as f64,
            r.min_winners,
            r.max_winners
        );
        println!(
            "  rounds where a fork was shared, a winner lacked a fork, neighbours both won, or \
             a loser had no winning neighbour: {}",
            r.bad_rounds
        );
        assert_eq!(r.bad_rounds, 0);
    }
}
