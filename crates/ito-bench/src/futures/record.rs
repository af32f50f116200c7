//! The JSON line of a `futures` run.

use super::*;

/// One run (or, for `first-completed`, one configuration's repetitions), as one JSON line.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct FutRecord {
    /// Always `"futures"`.
    pub(super) experiment: &'static str,
    /// `or-alt`, `read-seq`, `read-concurrent`, `first-completed`, `callbacks` or
    /// `philosophers`.
    pub(super) bench: &'static str,
    /// `ito`, `shared`, `tokio` or `mutex`.
    #[serde(rename = "impl")]
    pub(super) imp: &'static str,
    /// or-alt: or_alt combinators in the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) chain: Option<usize>,
    /// or-alt: `first` or `last`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) succeed: Option<&'static str>,
    /// read-seq: reads per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reads: Option<usize>,
    /// read-concurrent: readers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) readers: Option<usize>,
    /// read-concurrent: `threads` or `pool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mode: Option<&'static str>,
    /// first-completed: futures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) futures: Option<usize>,
    /// first-completed: `deadline` or `duration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) busy: Option<&'static str>,
    /// callbacks: callbacks attached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) count: Option<usize>,
    /// philosophers: philosophers (and forks) per round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) philosophers: Option<usize>,
    /// philosophers: rounds of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rounds: Option<usize>,
    /// read-concurrent, callbacks: delay of the completion in µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) delay_us: Option<u64>,
    /// Threads of the impl's pool, where the benchmark uses one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) workers: Option<usize>,
    /// Repetition index, from 0 (not for first-completed, whose line covers `reps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rep: Option<u32>,
    /// Micro benchmarks: operations timed together (`seconds` is their mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) batch: Option<u64>,
    /// Seconds of one operation (first-completed: the median of the repetitions;
    /// philosophers: all the rounds of the run).
    pub(super) seconds: Option<f64>,
    /// `seconds` divided by the parameter (per or_alt, read, reader, future or callback;
    /// philosophers: per philosopher's try, `rounds * philosophers` of them), in nanoseconds.
    pub(super) ns_per_item: Option<f64>,
    /// CPU time of the process (every thread) over the span of `seconds` (micro
    /// benchmarks: per operation; first-completed: the mean of the repetitions).
    #[serde(flatten)]
    pub(super) cpu: Option<CpuTime>,
    /// read-concurrent, callbacks with a delay: seconds from the completion to the last
    /// read or callback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) after_complete_s: Option<f64>,
    /// first-completed: repetitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reps: Option<u32>,
    /// first-completed: the fastest repetition's seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) seconds_best: Option<f64>,
    /// first-completed: repetitions won by future 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wins: Option<u32>,
    /// first-completed: `wins / reps` (the document's accuracy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) accuracy: Option<f64>,
    /// first-completed: repetitions in which future 0 was the first to end its busy-wait
    /// (each future stamps the end just before it completes): what the machine allowed,
    /// whatever "first completed of" then reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) zero_first: Option<u32>,
    /// first-completed: repetitions in which the winner was the future that ended its
    /// busy-wait first: what "first completed of" is responsible for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) faithful: Option<u32>,
    /// first-completed: `faithful / reps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) faithfulness: Option<f64>,
    /// philosophers: rounds that were all-or-nothing (see the module documentation); the
    /// run is ok only if this is `rounds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rounds_ok: Option<usize>,
    /// philosophers: the mean number of philosophers who ate in a round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) winners_per_round: Option<f64>,
    /// philosophers: losers neither of whose neighbours won, over all the rounds (a try that
    /// failed though no fork of the loser was taken for good; always 0 for ito).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) unforced_losses: Option<u64>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    pub(super) commit: String,
    /// CPUs available to the process.
    pub(super) nproc: usize,
    /// Whether every operation produced the right value.
    pub(super) ok: bool,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
    /// For the summary: the variant (succeed, mode, busy, delay) as text.
    #[serde(skip)]
    pub(super) variant: String,
    /// For the summary: the size parameter.
    #[serde(skip)]
    pub(super) param: usize,
}

impl FutRecord {
    pub(super) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a FutRecord always serializes")
    }
}
