//! `spawn-cost`: the cost of one task of each ito style on one worker, against the
//! sequential `sfib`.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use super::{Impl, Style, Workload, fib_reference, sfib};
use crate::common::timeout_of;
use crate::measure::{self, OnTimeout, Record, Sampler};
use crate::usage_error;

/// Arguments of `spawn-cost`.
#[derive(Args, Debug)]
pub(crate) struct SpawnCostArgs {
    /// Argument of fib (at most 93).
    #[arg(long, default_value_t = 36, value_parser = clap::value_parser!(u64).range(0..=93))]
    n: u64,
    /// Calls with n < cutoff run the sequential sfib (at least 2).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..))]
    cutoff: u64,
    /// Wall-clock limit of the whole command in seconds.
    #[arg(long = "timeout-s", default_value_t = 120.0)]
    timeout_s: f64,
}

/// One line of `spawn-cost`: a fib record plus the sequential baseline and the cost per task.
#[derive(Serialize)]
struct SpawnCostRecord {
    /// The measurement of the task tree (best of three).
    #[serde(flatten)]
    base: Record,
    /// Best of three seconds of `sfib(n)` on the main thread.
    seq_seconds: f64,
    /// `(seconds - seq_seconds) / tasks * 1e9`.
    ns_per_task: Option<f64>,
}

/// `ito-bench spawn-cost`: seq and each ito style on one worker, best of three each.
pub(crate) fn command(args: &SpawnCostArgs) -> ExitCode {
    let timeout = match timeout_of(args.timeout_s) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let (n, cutoff) = (args.n, args.cutoff);
    let expected = fib_reference(n);
    let seq_seconds = (0..3)
        .map(|_| {
            // The argument and the result pass through `black_box`: `sfib` is a pure
            // function, which the compiler may otherwise move out of the timed span.
            let start = Instant::now();
            let r = std::hint::black_box(sfib(std::hint::black_box(n)));
            let seconds = start.elapsed().as_secs_f64();
            assert_eq!(r, expected, "sfib is wrong");
            seconds
        })
        .fold(f64::INFINITY, f64::min);
    let mut all_ok = true;
    for style in [Style::Flat, Style::Wait, Style::Async] {
        let on_timeout: OnTimeout = Box::new(move |_| {
            eprintln!(
                "error: spawn-cost {} ran past {} s",
                style.name(),
                timeout.as_secs_f64()
            );
            std::process::exit(1);
        });
        let sampler = Sampler::start(Some((timeout, on_timeout)));
        let mut best: Option<super::Outcome> = None;
        let measured = Workload::new(Impl::Ito, style, 1).and_then(|w| {
            for _ in 0..3 {
                let o = w.run(n, cutoff)?;
                if best.as_ref().is_none_or(|b| o.seconds < b.seconds) {
                    best = Some(o);
                }
            }
            Ok(())
        });
        let mut base = Record::template("spawn-cost", "ito", style.name(), n, cutoff, 1);
        base.peak_threads = Some(sampler.finish());
        base.rss_bytes = measure::vm_hwm_bytes();
        let mut ns_per_task = None;
        match (measured, best) {
            (Ok(()), Some(o)) => {
                base.result = Some(o.result);
                base.seconds = Some(o.seconds);
                base.tasks = Some(o.tasks);
                base.ok = o.result == expected;
                if !base.ok {
                    base.error = Some(format!("wrong result, expected {expected}"));
                }
                ns_per_task =
                    (o.tasks > 0).then(|| (o.seconds - seq_seconds) / o.tasks as f64 * 1e9);
            }
            (Err(e), _) => base = base.failed(e),
            (Ok(()), None) => unreachable!("three runs"),
        }
        all_ok &= base.ok;
        let rec = SpawnCostRecord {
            base,
            seq_seconds,
            ns_per_task,
        };
        println!(
            "{}",
            serde_json::to_string(&rec).expect("a record always serializes")
        );
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
