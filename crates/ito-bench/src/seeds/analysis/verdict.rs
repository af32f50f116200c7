//! The verdict of ito against a peer at one configuration: "better" or "worse" only where
//! the ranges of the two cells' runs (smallest to largest) do not overlap, "tie" where they
//! do, and no verdict where a cell has fewer runs than [`runs_needed`] asks for.
//!
//! Ranges, not interquartile ranges: with five runs a side from one distribution, the two
//! interquartile ranges lie apart in 52 of the 252 equally likely orders of the ten runs
//! (21%), so a true tie reads as a verdict one time in five. The full ranges lie apart in 2
//! of 252 (0.8%): the rank-sum test's most extreme outcome. A verdict by ranges also holds
//! by interquartile ranges.

/// Runs a cell needs for a verdict.
pub(crate) const MIN_RUNS: usize = 5;

/// Runs a cell of long runs (over [`LONG_RUN_S`] each) needs for a verdict.
pub(crate) const MIN_RUNS_LONG: usize = 3;

/// Seconds from which a run counts as long.
pub(crate) const LONG_RUN_S: f64 = 10.0;

/// The runs a cell needs for a verdict: fewer when each run is long.
pub(crate) fn runs_needed(long: bool) -> usize {
    if long { MIN_RUNS_LONG } else { MIN_RUNS }
}

/// The spread of a cell's runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    /// The median.
    pub(crate) median: f64,
    /// The first quartile.
    pub(crate) q1: f64,
    /// The third quartile.
    pub(crate) q3: f64,
    /// The smallest run.
    pub(crate) min: f64,
    /// The largest run.
    pub(crate) max: f64,
    /// How many runs.
    pub(crate) runs: usize,
    /// Whether a run takes over [`LONG_RUN_S`] (the median run).
    pub(crate) long: bool,
}

impl Spread {
    /// The spread of `values` (in any order); `None` when there are none. `long`: whether
    /// each run took over [`LONG_RUN_S`].
    pub(crate) fn of(values: &[f64], long: bool) -> Option<Spread> {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: quantile(&v, 0.5)?,
            q1: quantile(&v, 0.25)?,
            q3: quantile(&v, 0.75)?,
            min: *v.first()?,
            max: *v.last()?,
            runs: v.len(),
            long,
        })
    }

    /// Whether the cell has the runs a verdict needs.
    pub(crate) fn enough(&self) -> bool {
        self.runs >= runs_needed(self.long)
    }
}

/// The `p` quantile of sorted values, interpolated linearly between the two nearest ranks
/// (the usual definition: the median of an even count is the mean of the middle two).
pub(crate) fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let pos = p.clamp(0.0, 1.0) * last as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// ito against a peer at one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// ito's range lies wholly on the better side of the peer's.
    Better,
    /// ito's range lies wholly on the worse side of the peer's.
    Worse,
    /// The ranges overlap.
    Tie,
    /// A cell has fewer runs than a verdict needs.
    FewRuns,
    /// The peer failed (or was not run after a failure) where ito ran.
    PeerFailed,
    /// ito failed (or was not run after a failure) where the peer ran.
    ItoFailed,
}

impl Verdict {
    /// The word the report shows.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Tie => "tie",
            Verdict::FewRuns => "too few runs",
            Verdict::PeerFailed => "better (peer failed)",
            Verdict::ItoFailed => "worse (ito failed)",
        }
    }

    /// Whether ito is better here.
    pub(crate) fn ito_better(self) -> bool {
        matches!(self, Verdict::Better | Verdict::PeerFailed)
    }
}

/// The verdict of ito's cell against the peer's; `higher_better` for throughputs.
pub(crate) fn compare(ito: &Spread, peer: &Spread, higher_better: bool) -> Verdict {
    if !ito.enough() || !peer.enough() {
        return Verdict::FewRuns;
    }
    let (ito_below, ito_above) = (ito.max < peer.min, ito.min > peer.max);
    match (ito_below, ito_above, higher_better) {
        (true, _, false) | (_, true, true) => Verdict::Better,
        (true, _, true) | (_, true, false) => Verdict::Worse,
        _ => Verdict::Tie,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(values: &[f64]) -> Spread {
        Spread::of(values, false).unwrap()
    }

    #[test]
    fn quartiles_interpolate_between_ranks() {
        let s = spread(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.q1, s.median, s.q3, s.runs), (2.0, 3.0, 4.0, 5));
        assert_eq!((s.min, s.max), (1.0, 5.0));
        let s = spread(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((s.q1, s.median, s.q3), (1.75, 2.5, 3.25));
        let s = spread(&[7.0]);
        assert_eq!((s.q1, s.median, s.q3), (7.0, 7.0, 7.0));
        assert_eq!(Spread::of(&[], false), None);
    }

    #[test]
    fn better_and_worse_only_where_the_ranges_do_not_overlap() {
        let fast = spread(&[1.0, 1.1, 1.2, 1.3, 1.4]);
        let slow = spread(&[2.0, 2.1, 2.2, 2.3, 2.4]);
        // Times: lower is better.
        assert_eq!(compare(&fast, &slow, false), Verdict::Better);
        assert_eq!(compare(&slow, &fast, false), Verdict::Worse);
        // Throughputs: higher is better.
        assert_eq!(compare(&fast, &slow, true), Verdict::Worse);
        assert_eq!(compare(&slow, &fast, true), Verdict::Better);
        // The medians differ, but the ranges overlap: a tie either way.
        let wide = spread(&[0.5, 1.0, 1.5, 2.2, 3.0]);
        assert_eq!(compare(&fast, &wide, false), Verdict::Tie);
        assert_eq!(compare(&wide, &fast, true), Verdict::Tie);
        // Ranges that touch overlap.
        let touching = spread(&[1.4, 1.5, 1.6, 1.7, 1.8]);
        assert_eq!(compare(&fast, &touching, false), Verdict::Tie);
        // Interquartile ranges apart, one run of each inside the other's range: a tie.
        let apart = spread(&[1.35, 1.5, 1.6, 1.7, 1.8]);
        let fast_iqr = (fast.q1, fast.q3);
        assert!(fast_iqr.1 < apart.q1, "{fast_iqr:?} {apart:?}");
        assert_eq!(compare(&fast, &apart, false), Verdict::Tie);
    }

    #[test]
    fn too_few_runs_give_no_verdict_and_long_runs_need_three() {
        let four = spread(&[1.0, 1.0, 1.0, 1.0]);
        let slow = spread(&[9.0, 9.0, 9.0, 9.0, 9.0]);
        assert_eq!(compare(&four, &slow, false), Verdict::FewRuns);
        assert_eq!(compare(&slow, &four, false), Verdict::FewRuns);
        let long_fast = Spread::of(&[11.0, 11.0, 11.0], true).unwrap();
        let long_slow = Spread::of(&[20.0, 21.0, 22.0], true).unwrap();
        assert_eq!(compare(&long_fast, &long_slow, false), Verdict::Better);
        let short_three = spread(&[11.0, 11.0, 11.0]);
        assert_eq!(compare(&short_three, &long_slow, false), Verdict::FewRuns);
    }

    #[test]
    fn failures_are_verdicts_of_their_own() {
        assert!(Verdict::PeerFailed.ito_better());
        assert!(Verdict::Better.ito_better());
        for v in [
            Verdict::Worse,
            Verdict::Tie,
            Verdict::FewRuns,
            Verdict::ItoFailed,
        ] {
            assert!(!v.ito_better(), "{v:?}");
        }
    }
}
