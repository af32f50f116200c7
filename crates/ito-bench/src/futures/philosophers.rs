//! `futures philosophers`: the dining philosophers race, all-or-nothing per round.

use super::*;

/// A fork of the `mutex` peer: `None` on the table, `Some(p)` taken by philosopher p.
pub(super) type MutexFork = parking_lot::Mutex<Option<usize>>;

/// Philosopher `p` of `forks.len()` tries once to take forks p and p+1 both: `try_lock`s in
/// index order (the lock order the document says Scala's promises would need), and takes
/// both if both are free, else neither.
pub(super) fn take_both_mutex(forks: &[MutexFork], p: usize) -> bool {
    let q = (p + 1) % forks.len();
    let (lo, hi) = (p.min(q), p.max(q));
    let Some(mut first) = forks[lo].try_lock() else {
        return false;
    };
    if first.is_some() {
        return false;
    }
    let Some(mut second) = forks[hi].try_lock() else {
        return false;
    };
    if second.is_some() {
        return false;
    }
    *first = Some(p);
    *second = Some(p);
    true
}

/// What one round left: who won, and who holds each fork.
pub(super) struct Round {
    /// Seconds from the creation of the forks to the last philosopher's try.
    pub(super) seconds: f64,
    pub(super) won: Vec<bool>,
    pub(super) holder: Vec<Option<usize>>,
}

/// One round: `n` fresh forks and `n` philosopher tasks on the impl's pool, each trying once.
pub(super) fn philosophers_round(pools: &Pools, imp: FutImpl, n: usize) -> Round {
    let latch = Latch::new(n);
    let won: Arc<[AtomicBool]> = (0..n).map(|_| AtomicBool::new(false)).collect();
    match imp {
        FutImpl::Ito => {
            let rt = pools.ito();
            let start = Instant::now();
            let forks: Arc<[ito::Promise<usize>]> = (0..n).map(|_| ito::Promise::new()).collect();
            for p in 0..n {
                let (forks, won, latch) = (forks.clone(), won.clone(), latch.clone());
                drop(rt.spawn_fn(move || {
                    let ate =
                        ito::stm::multi_try_success([(&forks[p], p), (&forks[(p + 1) % n], p)]);
                    won[p].store(ate, Ordering::Relaxed);
                    latch.count_down(true);
                }));
            }
            let (done_at, _) = latch.wait();
            Round {
                seconds: done_at.duration_since(start).as_secs_f64(),
                won: won.iter().map(|w| w.load(Ordering::Relaxed)).collect(),
                // A failed fork (none should be) reads as held by nobody who could hold it.
                holder: forks
                    .iter()
                    .map(|f| f.future().value().map(|v| v.unwrap_or(usize::MAX)))
                    .collect(),
            }
        }
        // The same pool as ito's philosophers: only the taking of the forks differs.
        FutImpl::Mutex => {
            let rt = pools.ito();
            let start = Instant::now();
            let forks: Arc<[MutexFork]> = (0..n).map(|_| parking_lot::Mutex::new(None)).collect();
            for p in 0..n {
                let (forks, won, latch) = (forks.clone(), won.clone(), latch.clone());
                drop(rt.spawn_fn(move || {
                    won[p].store(take_both_mutex(&forks, p), Ordering::Relaxed);
                    latch.count_down(true);
                }));
            }
            let (done_at, _) = latch.wait();
            Round {
                seconds: done_at.duration_since(start).as_secs_f64(),
                won: won.iter().map(|w| w.load(Ordering::Relaxed)).collect(),
                holder: forks.iter().map(|f| *f.lock()).collect(),
            }
        }
        FutImpl::Shared | FutImpl::Tokio | FutImpl::ItoInline => {
            unreachable!("checked: only ito and mutex fit")
        }
    }
}

/// Checks that a round was all-or-nothing: every fork taken belongs to one of its two
/// philosophers, who won and holds both his forks; no two neighbours both won; someone won.
/// With `strict` (ito), also that every loser has a neighbour who won. The unforced losses
/// (losers with no winning neighbour), or what is wrong.
pub(super) fn check_round(
    won: &[bool],
    holder: &[Option<usize>],
    strict: bool,
) -> Result<u64, String> {
    let n = won.len();
    let right = |p: usize| (p + 1) % n;
    let left = |p: usize| (p + n - 1) % n;
    for (f, h) in holder.iter().enumerate() {
        if let &Some(h) = h {
            if h >= n || (h != f && right(h) != f) {
                return Err(format!("fork {f} went to {h}, who does not sit next to it"));
            }
            if !won[h] {
                return Err(format!("fork {f} went to philosopher {h}, who did not eat"));
            }
        }
    }
    let mut unforced = 0;
    for p in 0..n {
        if won[p] {
            if holder[p] != Some(p) || holder[right(p)] != Some(p) {
                return Err(format!("philosopher {p} ate without both his forks"));
            }
            if won[right(p)] {
                return Err(format!("neighbours {p} and {} both ate", right(p)));
            }
        } else if !won[left(p)] && !won[right(p)] {
            if strict {
                return Err(format!("philosopher {p} lost though no neighbour ate"));
            }
            unforced += 1;
        }
    }
    if !won.contains(&true) {
        return Err("nobody ate".to_owned());
    }
    Ok(unforced)
}

/// What a run of `philosophers` measured.
pub(super) struct PhiloRun {
    pub(super) seconds: f64,
    pub(super) rounds_ok: usize,
    pub(super) winners: usize,
    pub(super) unforced: u64,
    /// The first round that was not all-or-nothing, and why.
    pub(super) first_error: Option<String>,
}

pub(super) fn philosophers_once(pools: &Pools, imp: FutImpl, n: usize, rounds: usize) -> PhiloRun {
    let mut run = PhiloRun {
        seconds: 0.0,
        rounds_ok: 0,
        winners: 0,
        unforced: 0,
        first_error: None,
    };
    for r in 0..rounds {
        let round = philosophers_round(pools, imp, n);
        run.seconds += round.seconds;
        run.winners += round.won.iter().filter(|&&w| w).count();
        match check_round(&round.won, &round.holder, imp == FutImpl::Ito) {
            Ok(unforced) => {
                run.rounds_ok += 1;
                run.unforced += unforced;
            }
            Err(e) => {
                run.first_error
                    .get_or_insert_with(|| format!("round {r}: {e}"));
            }
        }
    }
    run
}

pub(super) fn philosophers(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    ns: &[usize],
    rounds: usize,
) {
    let variant = format!("{rounds} rounds");
    for &n in ns {
        let template = |imp| {
            let mut rec = template("philosophers", imp, variant.clone(), n);
            rec.philosophers = Some(n);
            rec.rounds = Some(rounds);
            rec.workers = Some(pools.workers);
            rec
        };
        // Warm-up: one run per impl.
        for &imp in imps {
            ctx.guarded(&template(imp), || philosophers_once(pools, imp, n, rounds));
        }
        for rep in 0..ctx.repeat {
            for &imp in imps {
                let mut rec = template(imp);
                rec.rep = Some(rep);
                let (run, cpu) = ctx.timed(&rec, || philosophers_once(pools, imp, n, rounds));
                rec.seconds = Some(run.seconds);
                rec.cpu = Some(cpu);
                rec.ns_per_item = Some(run.seconds / (rounds * n) as f64 * 1e9);
                rec.rounds_ok = Some(run.rounds_ok);
                rec.winners_per_round = Some(run.winners as f64 / rounds as f64);
                rec.unforced_losses = Some(run.unforced);
                rec.ok = run.rounds_ok == rounds;
                if let Some(e) = run.first_error {
                    rec.error = Some(format!(
                        "{} of {rounds} rounds were not all-or-nothing; first: {e}",
                        rounds - run.rounds_ok
                    ));
                }
                ctx.emit(rec);
            }
        }
    }
}
