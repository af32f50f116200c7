//! The summary on stderr of `pool`.

use super::*;

/// The runs per second a run of sleeping tasks would reach if every round of at most
/// `pool_size` tasks (all of them in `spawn`) took exactly the sleep: `None` without a sleep.
/// Docs call `runs_per_s` over it the fraction of the ideal rate.
fn ideal_runs_per_s(r: &PoolRecord) -> Option<f64> {
    let rounds = r.tasks.div_ceil(r.pool_size.unwrap_or(r.tasks));
    (r.sleep_ms > 0).then(|| 1000.0 / (rounds as f64 * r.sleep_ms as f64))
}

/// What the timer lets a run reach, as a fraction of the ideal rate, `" (timer allows N%)"`:
/// a round lasts at least the sleep plus the timer's overshoot (`sleep_overshoot_us`).
fn timer_allows(r: &PoolRecord) -> String {
    r.sleep_overshoot_us.map_or(String::new(), |o| {
        let sleep_us = r.sleep_ms as f64 * 1000.0;
        format!(" (timer allows {:.1}%)", 100.0 * sleep_us / (sleep_us + o))
    })
}

/// The summary on stderr: every configuration's throughput, its fraction of the ideal rate
/// with a sleep, ito/tokio ratios, and the issues' criteria where a configuration matches one.
pub(super) fn summarize(records: &[PoolRecord]) {
    eprintln!("pool: runs/s (ito/tokio) and peak RSS growth");
    let tokio_of = |r: &PoolRecord| {
        records.iter().find(|t| {
            t.imp == "tokio"
                && t.mode == r.mode
                && t.tasks == r.tasks
                && t.sleep_ms == r.sleep_ms
                && t.pool_size == r.pool_size
                && t.caller == r.caller
                && t.countdown == r.countdown
                && t.style == r.style
        })
    };
    for r in records {
        let ratio = (r.imp == "ito")
            .then(|| tokio_of(r))
            .flatten()
            .and_then(|t| Some(r.runs_per_s? / t.runs_per_s?))
            .map_or(String::new(), |x| format!("  ito/tokio {x:.2}"));
        let ideal = ideal_runs_per_s(r)
            .zip(r.runs_per_s)
            .map_or(String::new(), |(i, x)| {
                format!("  {:.1}% of ideal{}", 100.0 * x / i, timer_allows(r))
            });
        eprintln!(
            "  {:5} {:5} {:12} {:4} tasks {:6} sleep {:2} ms pool {:>4}: {:>10} runs/s, rss +{:>6} KiB, {:>3} threads{ideal}{ratio}{}",
            r.imp,
            r.style.name(),
            r.mode,
            r.caller.name(),
            r.tasks,
            r.sleep_ms,
            r.pool_size.map_or("-".into(), |p| p.to_string()),
            r.runs_per_s.map_or("-".into(), |x| if x < 100.0 {
                format!("{x:.2}")
            } else {
                format!("{x:.0}")
            }),
            r.rss_growth_bytes
                .map_or("-".into(), |b| (b / 1024).to_string()),
            r.peak_threads.map_or("-".into(), |t| t.to_string()),
            r.error
                .as_deref()
                .map_or(String::new(), |e| format!("  FAILED: {e}")),
        );
    }
    let ito = records.iter().filter(|r| r.imp == "ito" && r.ok);
    for r in ito {
        if r.mode == "spawn" && r.tasks == 100 && r.sleep_ms == 0 {
            if let Some(x) = tokio_of(r).and_then(|t| Some(r.runs_per_s? / t.runs_per_s?)) {
                let met = if x >= 3.0 { "met" } else { "NOT met" };
                eprintln!(
                    "  criterion 1, 100 tasks, spawn, caller {}: ito/tokio {x:.2} (target 3): {met}",
                    r.caller.name()
                );
            }
        }
        if r.mode == "pool" && r.tasks == 100 && r.sleep_ms == 1 && r.pool_size == Some(50) {
            let x = r.runs_per_s.unwrap_or(0.0);
            let met = if x >= 400.0 { "met" } else { "NOT met" };
            eprintln!(
                "  criterion 2, 100 tasks, 1 ms, pool 50, caller {}: {x:.0} runs/s (target 400): {met}",
                r.caller.name()
            );
        }
        if r.tasks == 10_000 && r.sleep_ms == 1 && r.style == Style::Sync {
            let fraction = ideal_runs_per_s(r)
                .zip(r.runs_per_s)
                .map_or(0.0, |(i, x)| x / i);
            let threads = r.peak_threads.unwrap_or(usize::MAX);
            let met = if fraction >= 0.9 && threads <= r.workers + 4 {
                "met"
            } else {
                "NOT met"
            };
            eprintln!(
                "  issue 19, 10,000 blocking tasks, 1 ms, {} {}, caller {}: {:.1}% of ideal (target 90){}, {threads} OS threads (target <= {}): {met}",
                r.mode,
                r.pool_size.map_or("-".into(), |p| p.to_string()),
                r.caller.name(),
                100.0 * fraction,
                timer_allows(r),
                r.workers + 4
            );
        }
        if r.tasks == 10_000 {
            if let Some(b) = r.rss_growth_bytes {
                let met = if b < 4 << 20 { "met" } else { "NOT met" };
                eprintln!(
                    "  criterion 3, 10,000 tasks, {}, caller {}: RSS +{:.2} MiB (target < 4 MiB): {met}",
                    r.mode,
                    r.caller.name(),
                    b as f64 / f64::from(1 << 20)
                );
            }
        }
    }
}
