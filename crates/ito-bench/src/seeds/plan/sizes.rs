//! The sizes of each [`Size`] of a run.

use super::*;

/// The runs of a cell in a quick or full run.
const MIN_RUNS: u32 = crate::seeds::analysis::verdict::MIN_RUNS as u32;

/// Sizes of one [`Size`].
pub(super) struct Sizes {
    /// Runs of every cell (each configuration of each implementation): the runs a verdict
    /// needs ([`crate::seeds::analysis::verdict::MIN_RUNS`]), except in a smoke run.
    pub(super) cell_runs: u32,
    pub(super) fib_n: u64,
    pub(super) fib_cutoffs: &'static [u64],
    pub(super) fib_timeout_s: f64,
    pub(super) chain_n: &'static [u64],
    pub(super) chain_big: Option<u64>,
    pub(super) chain_timeout_s: f64,
    pub(super) msg_rounds: u64,
    pub(super) find_dirs: usize,
    pub(super) find_files: usize,
    pub(super) find_runs: usize,
    /// The worker counts (`-j`) of the tools that take one.
    pub(super) find_workers: &'static [usize],
    /// Whether the tools also search a tree on disk (besides the one on tmpfs).
    pub(super) find_on_disk: bool,
    pub(super) pool_runs: u32,
    /// Timed runs of a configuration with the 1 ms sleep: each run waits out at least one
    /// timer, so fewer runs than `pool_runs` measure the timer's precision that table shows.
    pub(super) pool_sleep_runs: u32,
    pub(super) pool_big_runs: u32,
    pub(super) fut_first_repeat: u32,
    pub(super) fut_rounds: usize,
    pub(super) join_n: &'static str,
    pub(super) join_cutoff: Option<&'static str>,
    pub(super) bank_ops: u64,
    /// fib's argument in the timelines (at cutoff 10): smaller than `fib_n`, because every
    /// task adds some 400 bytes to the trace.
    pub(super) picture_fib_n: u64,
    /// The chain's length in its timeline.
    pub(super) picture_chain_n: u64,
}

impl Sizes {
    pub(super) fn of(size: Size) -> Sizes {
        match size {
            Size::Smoke => Sizes {
                cell_runs: 1,
                fib_n: 20,
                fib_cutoffs: &[15, 5, 2],
                fib_timeout_s: 3.0,
                chain_n: &[1000],
                chain_big: None,
                chain_timeout_s: 30.0,
                msg_rounds: 1000,
                find_dirs: 200,
                find_files: 200,
                find_runs: 1,
                find_workers: &[2],
                find_on_disk: false,
                pool_runs: 5,
                pool_sleep_runs: 2,
                pool_big_runs: 1,
                fut_first_repeat: 2,
                fut_rounds: 2,
                join_n: "20,8,10000,6",
                join_cutoff: Some("2,8"),
                bank_ops: 10_000,
                picture_fib_n: 16,
                picture_chain_n: 1000,
            },
            Size::Quick => Sizes {
                cell_runs: MIN_RUNS,
                fib_n: 34,
                fib_cutoffs: &[30, 25, 20, 15, 10, 5, 2],
                fib_timeout_s: 10.0,
                chain_n: &[10_000, 100_000],
                chain_big: None,
                chain_timeout_s: 30.0,
                msg_rounds: 100_000,
                find_dirs: 10_000,
                find_files: 10_000,
                find_runs: 3,
                find_workers: &[1, 2, 4],
                find_on_disk: false,
                pool_runs: 200,
                pool_sleep_runs: 10,
                pool_big_runs: 5,
                fut_first_repeat: 20,
                fut_rounds: 20,
                join_n: "34,18,1000000,9",
                join_cutoff: Some("2,8"),
                bank_ops: 200_000,
                picture_fib_n: 30,
                picture_chain_n: 100_000,
            },
            Size::Full => Sizes {
                cell_runs: MIN_RUNS,
                fib_n: 40,
                fib_cutoffs: &[40, 35, 30, 25, 20, 15, 10, 5, 2],
                fib_timeout_s: 60.0,
                chain_n: &[10_000, 100_000, 1_000_000],
                chain_big: Some(10_000_000),
                chain_timeout_s: 120.0,
                msg_rounds: 1_000_000,
                find_dirs: 35_000,
                find_files: 31_000,
                find_runs: 5,
                find_workers: &[1, 2, 4],
                find_on_disk: true,
                pool_runs: 2000,
                pool_sleep_runs: 20,
                pool_big_runs: 20,
                fut_first_repeat: 100,
                fut_rounds: 100,
                join_n: "40,20,4000000,11",
                join_cutoff: None,
                bank_ops: 1_000_000,
                picture_fib_n: 32,
                picture_chain_n: 1_000_000,
            },
        }
    }
}

/// A fib series: implementation, style as given to `fib --style`, and the style it records.
pub(super) const FIB_SERIES: [(&str, &str); 7] = [
    ("ito", "flat"),
    ("ito", "wait"),
    ("ito", "async"),
    ("ito", "join"),
    ("tokio", "async"),
    ("tokio", "wait"),
    ("rayon", "join"),
];
