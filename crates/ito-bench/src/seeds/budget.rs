//! The time budget of a fib series: before the first run of a cutoff, its run time is
//! predicted from the coarser cutoffs the series has measured, and a cutoff predicted to take
//! longer than [`RUN_BUDGET_S`] a run is not run, nor is any finer cutoff of the series.
//!
//! A series runs coarse to fine, and a finer cutoff makes more tasks, so a run never gets
//! cheaper down a series. The prediction is the last measured cutoff's median run time times
//! the growth from the cutoff before it to that one ([`predict`]); with one measured cutoff,
//! times [`FIRST_GROWTH`]. A cutoff not run for the budget is recorded as not run (`"not_run":
//! true`, `"over_budget": true`): the report shows it as not measured, never as a loss. The
//! decision is taken once per cutoff, so a cutoff's runs are all run or none is.

use std::collections::HashMap;

/// Seconds one run of a fib series may be predicted to take. A cell takes five runs (three
/// over [`crate::seeds::analysis::verdict::LONG_RUN_S`]): 20 s a run keeps any cell to about
/// a minute and a half, so that the full run fits in its 15 minutes on 2 cores, while every
/// configuration that document 000 compares at a cutoff some peer finishes stays in.
pub(crate) const RUN_BUDGET_S: f64 = 20.0;

/// The growth of a run's time assumed from a series' first measured cutoff to its next: the
/// growth of fib's task count over five cutoffs (the golden ratio to the fifth, about 11),
/// rounded up.
pub(crate) const FIRST_GROWTH: f64 = 12.0;

/// How the report and `steps.jsonl` name a cutoff not run for the budget (the start of its
/// reason).
pub(crate) const OVER_BUDGET: &str = "over the time budget";

/// The run time of the next cutoff of a series whose measured cutoffs (coarse to fine) took
/// `medians` seconds a run; `None` before any was measured.
pub(crate) fn predict(medians: &[f64]) -> Option<f64> {
    let (&last, before) = medians.split_last()?;
    let growth = match before.last() {
        // A run does not get cheaper down a series: a smaller ratio is noise.
        Some(&prev) if prev > 0.0 => (last / prev).max(1.0),
        _ => FIRST_GROWTH,
    };
    Some(last * growth)
}

/// The run times of every fib series so far, and the cutoffs not run for the budget.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    series: HashMap<String, Series>,
}

/// One series' measurements and decisions.
#[derive(Debug, Default)]
struct Series {
    /// (cutoff, seconds of each of its runs), coarse to fine.
    measured: Vec<(u64, Vec<f64>)>,
    /// The cutoffs decided, with why each is not run (`None`: it runs).
    decided: Vec<(u64, Option<String>)>,
    /// Why the series stopped, once a cutoff was over the budget.
    stopped: Option<String>,
}

impl Budget {
    /// Why the run of `series` at `cutoff` must not run for the budget, if it must not; the
    /// first call for a cutoff decides for every run of it.
    pub(crate) fn over(&mut self, series: &str, cutoff: u64) -> Option<String> {
        let s = self.series.entry(series.to_owned()).or_default();
        if let Some((_, why)) = s.decided.iter().find(|(c, _)| *c == cutoff) {
            return why.clone();
        }
        let why = s.stopped.clone().or_else(|| {
            let medians: Vec<f64> = s
                .measured
                .iter()
                .filter(|(c, _)| *c != cutoff)
                .filter_map(|(_, runs)| median(runs))
                .collect();
            let predicted = predict(&medians)?;
            (predicted > RUN_BUDGET_S).then(|| {
                format!(
                    "{OVER_BUDGET}: a run at cutoff {cutoff} predicted to take {predicted:.0} s, \
                     over {RUN_BUDGET_S:.0} s"
                )
            })
        });
        if why.is_some() {
            s.stopped.clone_from(&why);
        }
        s.decided.push((cutoff, why.clone()));
        why
    }

    /// Records that a run of `series` at `cutoff` took `seconds`.
    pub(crate) fn record(&mut self, series: &str, cutoff: u64, seconds: f64) {
        let s = self.series.entry(series.to_owned()).or_default();
        match s.measured.iter_mut().find(|(c, _)| *c == cutoff) {
            Some((_, runs)) => runs.push(seconds),
            None => s.measured.push((cutoff, vec![seconds])),
        }
    }
}

/// The median of `v`; `None` when empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    crate::seeds::analysis::verdict::quantile(&v, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prediction_is_the_last_time_times_the_last_growth() {
        assert_eq!(predict(&[]), None);
        assert_eq!(predict(&[0.5]), Some(0.5 * FIRST_GROWTH));
        assert_eq!(predict(&[0.5, 2.0]), Some(8.0));
        // Faster at a finer cutoff is noise: no growth, never a shrink.
        assert_eq!(predict(&[2.0, 1.0]), Some(1.0));
    }

    #[test]
    fn a_series_growing_tenfold_a_cutoff_stops_before_the_budget() {
        let mut b = Budget::default();
        let mut ran = Vec::new();
        // 0.03 s at cutoff 40, then ten times as long at each finer cutoff, five runs each.
        let cutoffs = [40u64, 35, 30, 25, 20, 15];
        for (i, &cutoff) in cutoffs.iter().enumerate() {
            let seconds = 0.03 * 10f64.powi(i as i32);
            for _ in 0..5 {
                if b.over("fib tokio/async", cutoff).is_none() {
                    b.record("fib tokio/async", cutoff, seconds);
                    ran.push((cutoff, seconds));
                }
            }
        }
        // 0.03, 0.3 and 3 s ran; 30 s was predicted from 3 x 10 (over the 20 s budget).
        let cut: Vec<u64> = ran.iter().map(|r| r.0).collect();
        assert_eq!(
            cut,
            [40, 40, 40, 40, 40, 35, 35, 35, 35, 35, 30, 30, 30, 30, 30]
        );
        assert!(ran.iter().all(|r| r.1 <= RUN_BUDGET_S));
        let why = b.over("fib tokio/async", 25).unwrap();
        assert!(why.starts_with(OVER_BUDGET), "{why}");
        assert!(why.contains("cutoff 25"), "{why}");
        // Every finer cutoff stays not run, for the reason of the first.
        assert_eq!(b.over("fib tokio/async", 2), Some(why));
        // Another series is decided on its own times.
        b.record("fib ito/async", 40, 0.02);
        assert_eq!(b.over("fib ito/async", 35), None);
    }

    #[test]
    fn a_cutoff_is_decided_once_for_all_its_runs() {
        let mut b = Budget::default();
        b.record("s", 10, 1.0);
        b.record("s", 5, 1.5);
        assert_eq!(b.over("s", 2), None, "1.5 x 1.5 is under the budget");
        // Its first run was far slower than predicted: its other runs still run.
        b.record("s", 2, 60.0);
        assert_eq!(b.over("s", 2), None);
        // The next cutoff is predicted from it.
        assert!(b.over("s", 1).is_some());
    }
}
