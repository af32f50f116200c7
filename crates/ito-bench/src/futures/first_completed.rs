//! `futures first-completed`: which of F staggered futures "first completed of" reports.

use super::*;

/// Spins until `deadline`.
pub(super) fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The busy-wait of future `i`.
pub(super) fn busy_wait(busy: Busy, t0: Instant, i: usize) {
    let d = Duration::from_micros(500 + i as u64);
    match busy {
        Busy::Deadline => spin_until(t0 + d),
        Busy::Duration => spin_until(Instant::now() + d),
    }
}

/// One repetition of `first-completed`.
pub(super) struct Race {
    /// Seconds from the first spawn to the result.
    pub(super) seconds: f64,
    /// The value of the future "first completed of" returned.
    pub(super) winner: usize,
    /// The future that stamped the earliest end of its busy-wait (taken just before it
    /// completes).
    pub(super) earliest: usize,
}

/// Future `i`'s busy-wait, then the stamp of its end (nanoseconds since `t0`).
pub(super) fn busy_and_stamp(busy: Busy, t0: Instant, i: usize, stamps: &[AtomicU64]) -> usize {
    busy_wait(busy, t0, i);
    stamps[i].store(t0.elapsed().as_nanos() as u64, Ordering::Release);
    i
}

pub(super) fn first_completed_once(pools: &Pools, imp: FutImpl, n: usize, busy: Busy) -> Race {
    let stamps: Arc<[AtomicU64]> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
    let t0 = Instant::now();
    let (seconds, winner) = match imp {
        FutImpl::Ito => {
            let rt = pools.ito();
            let fs: Vec<ito::Future<usize>> = (0..n)
                .map(|i| {
                    let stamps = stamps.clone();
                    rt.spawn_fn(move || busy_and_stamp(busy, t0, i, &stamps))
                        .shared()
                })
                .collect();
            let winner = ito::future::first_completed_of(fs.iter().cloned()).wait();
            let seconds = t0.elapsed().as_secs_f64();
            for f in &fs {
                let _ = f.wait();
            }
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Shared => {
            let pool = pools.shared();
            let rxs: Vec<_> = (0..n)
                .map(|i| {
                    let (tx, rx) = futures::channel::oneshot::channel::<usize>();
                    let stamps = stamps.clone();
                    pool.spawn_ok(async move {
                        let _ = tx.send(busy_and_stamp(busy, t0, i, &stamps));
                    });
                    rx
                })
                .collect();
            let (winner, _, rest) = futures::executor::block_on(select_all(rxs));
            let seconds = t0.elapsed().as_secs_f64();
            futures::executor::block_on(futures::future::join_all(rest));
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Tokio => {
            let rt = pools.tokio();
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let stamps = stamps.clone();
                    rt.spawn(async move { busy_and_stamp(busy, t0, i, &stamps) })
                })
                .collect();
            let (winner, _, rest) = futures::executor::block_on(select_all(handles));
            let seconds = t0.elapsed().as_secs_f64();
            futures::executor::block_on(futures::future::join_all(rest));
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Mutex | FutImpl::ItoInline => {
            unreachable!("checked: mutex and ito-inline fit one benchmark each")
        }
    };
    // Every future has completed (and stamped) by now.
    let earliest = (0..n)
        .min_by_key(|&i| stamps[i].load(Ordering::Acquire))
        .expect("n >= 1");
    Race {
        seconds,
        winner,
        earliest,
    }
}

pub(super) fn first_completed(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    ns: &[usize],
    busy: Busy,
) {
    let busy_name = match busy {
        Busy::Deadline => "deadline",
        Busy::Duration => "duration",
    };
    for &n in ns {
        let templates: Vec<FutRecord> = imps
            .iter()
            .map(|&imp| {
                let mut t = template("first-completed", imp, busy_name.to_owned(), n);
                t.futures = Some(n);
                t.busy = Some(busy_name);
                t.workers = Some(pools.workers);
                t.reps = Some(ctx.repeat);
                t
            })
            .collect();
        // Warm-up.
        for (&imp, t) in imps.iter().zip(&templates) {
            ctx.guarded(t, || first_completed_once(pools, imp, n, busy));
        }
        let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); imps.len()];
        let mut cpus = vec![CpuTime::default(); imps.len()];
        let mut wins = vec![0u32; imps.len()];
        let mut zero_first = vec![0u32; imps.len()];
        let mut faithful = vec![0u32; imps.len()];
        let mut bad_winner = vec![None; imps.len()];
        for _ in 0..ctx.repeat {
            for (k, (&imp, t)) in imps.iter().zip(&templates).enumerate() {
                let (race, cpu) = ctx.timed(t, || first_completed_once(pools, imp, n, busy));
                seconds[k].push(race.seconds);
                cpus[k].user_s += cpu.user_s;
                cpus[k].sys_s += cpu.sys_s;
                if race.winner >= n {
                    bad_winner[k] = Some(race.winner);
                }
                wins[k] += u32::from(race.winner == 0);
                zero_first[k] += u32::from(race.earliest == 0);
                faithful[k] += u32::from(race.winner == race.earliest);
            }
        }
        for (k, mut rec) in templates.into_iter().enumerate() {
            let best = seconds[k].iter().copied().fold(f64::INFINITY, f64::min);
            let median = measure::median(&mut seconds[k]).expect("repeat >= 1");
            rec.seconds = Some(median);
            rec.cpu = Some(cpus[k].per(f64::from(ctx.repeat)));
            rec.seconds_best = Some(best);
            rec.ns_per_item = Some(median / n as f64 * 1e9);
            rec.wins = Some(wins[k]);
            rec.accuracy = Some(f64::from(wins[k]) / f64::from(ctx.repeat));
            rec.zero_first = Some(zero_first[k]);
            rec.faithful = Some(faithful[k]);
            rec.faithfulness = Some(f64::from(faithful[k]) / f64::from(ctx.repeat));
            rec.ok = bad_winner[k].is_none();
            if let Some(w) = bad_winner[k] {
                rec.error = Some(format!("no future {w} was spawned"));
            }
            ctx.emit(rec);
        }
    }
}
