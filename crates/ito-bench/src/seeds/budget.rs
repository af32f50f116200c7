//! The time budget of a fib series: before the first run of a cutoff, its run time is
//! predicted from the coarser cutoffs the series has measured, and a cutoff predicted to take
//! longer than [`RUN_BUDGET_S`] a run is not run, nor is any finer cutoff of the series.
//!
//! A series runs coarse to fine, and a finer cutoff makes more tasks, so a run never gets
//! cheaper down a series. The prediction ([`predict`]) is the larger of two:
//!
//! - the last measured cutoff's median run time times the growth from the cutoff before it
//!   to that one (with one measured cutoff, times [`FIRST_GROWTH`]);
//! - the task count's growth: the series' cheapest run is the work, the rest of the last run
//!   is the cost of its tasks, and fib's task count grows by the golden ratio a cutoff. The
//!   measured growth alone reads a noisy pair of runs; where the coarser run was slow, it
//!   predicted a third of what the next cutoff then took.
//!
//! A cutoff not run for the budget is recorded as not run (`"not_run": true`,
//! `"over_budget": true`): the report shows it as not measured, never as a loss. The decision
//! is taken once per cutoff, in the first round, so a cutoff's runs are all run or none is.

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

/// The growth of fib's task count from one cutoff to the next finer one.
const TASK_GROWTH: f64 = 1.618_033_988_749_895;

/// The run time at cutoff `next` of a series whose measured cutoffs (coarse to fine) took
/// `medians` (cutoff, seconds) a run; `None` before any was measured.
pub(crate) fn predict(medians: &[(u64, f64)], next: u64) -> Option<f64> {
    let (&(at, last), before) = medians.split_last()?;
    let growth = match before.last() {
        // A run does not get cheaper down a series: a smaller ratio is noise.
        Some(&(_, prev)) if prev > 0.0 => (last / prev).max(1.0),
        _ => FIRST_GROWTH,
    };
    let work = medians.iter().map(|m| m.1).fold(last, f64::min);
    let steps = i32::try_from(at.saturating_sub(next)).unwrap_or(i32::MAX);
    let by_tasks = work + (last - work) * TASK_GROWTH.powi(steps);
    Some((last * growth).max(by_tasks))
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
            let medians: Vec<(u64, f64)> = s
                .measured
                .iter()
                .filter(|(c, _)| *c != cutoff)
                .filter_map(|(c, runs)| Some((*c, median(runs)?)))
                .collect();
            let predicted = predict(&medians, cutoff)?;
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
        assert_eq!(predict(&[], 5), None);
        assert_eq!(predict(&[(10, 0.5)], 5), Some(0.5 * FIRST_GROWTH));
        assert_eq!(predict(&[(35, 0.5), (30, 2.0)], 29), Some(8.0));
        // Faster at a finer cutoff is noise: no growth, never a shrink.
        assert_eq!(predict(&[(35, 2.0), (30, 1.0)], 29), Some(1.0));
    }

    #[test]
    fn the_cost_of_the_tasks_grows_with_their_count_even_where_one_growth_looked_small() {
        // Seen: 0.11 s of work, 0.6 s at cutoff 15, 3.07 s at 10; cutoff 5 then took 34-41 s.
        let measured = [(20, 0.11), (15, 0.6), (10, 3.07)];
        let p = predict(&measured, 5).unwrap();
        let tasks = 0.11 + (3.07 - 0.11) * TASK_GROWTH.powi(5);
        assert!((p - tasks).abs() < 1e-9, "{p}");
        assert!(p > RUN_BUDGET_S && 3.07 * (3.07 / 0.6) < RUN_BUDGET_S);
        // Where the work dominates, a finer cutoff is predicted to cost about the same.
        let p = predict(&[(40, 0.14), (35, 0.12), (30, 0.11)], 25).unwrap();
        assert!((0.11..0.12).contains(&p), "{p}");
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
