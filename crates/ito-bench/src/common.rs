//! The options every experiment shares (`--impl`, `--workers`, `--repeat`, `--timeout-s`,
//! `--record`), flattened into each experiment's arguments, and their checks.

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::measure::{self, Sink, dedup};

/// The options every experiment shares. Each experiment applies its own defaults
/// ([`CommonArgs::resolve`]) and says them in the documentation of its `common` field.
#[derive(Args, Clone, Debug)]
pub(crate) struct CommonArgs<I>
where
    I: ValueEnum + Clone + Send + Sync + 'static,
{
    /// Implementation(s), comma-separated.
    #[arg(long = "impl", value_enum, value_delimiter = ',')]
    pub(crate) imps: Vec<I>,
    /// Worker threads of each runtime [default: number of CPUs].
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Repetitions of each measurement.
    #[arg(long)]
    pub(crate) repeat: Option<u32>,
    /// Wall-clock limit of each measurement in seconds (a run past it is recorded as failed
    /// and the process exits with status 1).
    #[arg(long = "timeout-s")]
    pub(crate) timeout_s: Option<f64>,
    /// Also append the records to bench/results/<experiment>.jsonl of the workspace.
    #[arg(long)]
    pub(crate) record: bool,
}

impl<I> CommonArgs<I>
where
    I: ValueEnum + Clone + Copy + PartialEq + Send + Sync + 'static,
{
    /// The options with `defaults` applied where one was not given, checked (`--workers`
    /// and `--repeat` at least 1, `--timeout-s` positive); the error is a one-line message.
    pub(crate) fn resolve(&self, defaults: Defaults<'_, I>) -> Result<Settings<I>, String> {
        let workers = match self
            .workers
            .or(defaults.workers)
            .unwrap_or_else(measure::nproc)
        {
            0 => return Err("--workers must be at least 1".to_owned()),
            w => w,
        };
        let repeat = match self.repeat.unwrap_or(defaults.repeat) {
            0 => return Err("--repeat must be at least 1".to_owned()),
            r => r,
        };
        let timeout = timeout_of(self.timeout_s.unwrap_or(defaults.timeout_s))?;
        let imps = if self.imps.is_empty() {
            defaults.imps.to_vec()
        } else {
            dedup(&self.imps)
        };
        Ok(Settings {
            imps,
            workers,
            repeat,
            timeout,
        })
    }

    /// A sink printing to stdout and, with `--record`, appending to `bench/results/<file>`.
    pub(crate) fn sink(&self, file: &str) -> Result<Sink, String> {
        measure::results_sink(self.record, file)
    }
}

/// An experiment's defaults of the common options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Defaults<'a, I> {
    /// The implementations run when `--impl` is not given.
    pub(crate) imps: &'a [I],
    /// Worker threads when `--workers` is not given (`None`: the number of CPUs).
    pub(crate) workers: Option<usize>,
    /// Repetitions when `--repeat` is not given.
    pub(crate) repeat: u32,
    /// Seconds when `--timeout-s` is not given.
    pub(crate) timeout_s: f64,
}

impl<I: ValueEnum> Defaults<'_, I> {
    /// The defaults as a line of the experiment's `--help`.
    pub(crate) fn help(&self) -> String {
        let imps: Vec<String> = self
            .imps
            .iter()
            .filter_map(|i| Some(i.to_possible_value()?.get_name().to_owned()))
            .collect();
        let workers = self
            .workers
            .map_or("the number of CPUs".to_owned(), |w| w.to_string());
        format!(
            "Defaults: --impl {}, --workers {workers}, --repeat {}, --timeout-s {}.",
            imps.join(","),
            self.repeat,
            self.timeout_s
        )
    }
}

/// The common options of one run, with the experiment's defaults applied.
#[derive(Clone, Debug)]
pub(crate) struct Settings<I> {
    /// The implementations, each once, in the order given.
    pub(crate) imps: Vec<I>,
    /// Worker threads (at least 1).
    pub(crate) workers: usize,
    /// Repetitions (at least 1).
    pub(crate) repeat: u32,
    /// The wall-clock limit of one measurement.
    pub(crate) timeout: Duration,
}

/// Parses a `--timeout-s` value.
pub(crate) fn timeout_of(seconds: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--timeout-s must be a positive number of seconds, got {seconds}"))
}
