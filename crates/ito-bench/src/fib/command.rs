//! The command line of `fib` (document 000: fib(n) forking two tasks per call above a
//! cutoff): one measurement in this process, or several (impls, styles, `--sweep`) each in a
//! child process of this binary under a wall-clock limit.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::{Impl, Style, Workload, effective_style, fib_reference};
use crate::common::{CommonArgs, Defaults, Settings};
use crate::measure::{self, CpuTime, OnTimeout, Record, Sampler, Sink};
use crate::usage_error;

/// The cutoffs of `--sweep`, coarse to fine.
const SWEEP_CUTOFFS: [u64; 9] = [40, 35, 30, 25, 20, 15, 10, 5, 2];

/// How long past `--timeout-s` the parent waits for a child's own watchdog before killing it.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// The wall-clock limit of one measurement when `--timeout-s` is not given.
const DEFAULT_TIMEOUT_S: f64 = 120.0;

/// Arguments of `fib`.
#[derive(Args, Debug)]
pub(crate) struct FibArgs {
    /// Argument of fib (at most 93, the largest that fits in u64).
    #[arg(long, default_value_t = 42, value_parser = clap::value_parser!(u64).range(0..=93))]
    n: u64,
    /// Calls with n < cutoff run the sequential sfib (at least 2).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(2..))]
    cutoff: u64,
    /// Style(s), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "wait")]
    style: Vec<Style>,
    /// Run cutoffs 40, 35, 30, 25, 20, 15, 10, 5, 2, each in a child process.
    #[arg(long)]
    sweep: bool,
    /// Also write the records to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// The common options; their defaults are [`DEFAULTS`].
    #[command(flatten)]
    pub(crate) common: CommonArgs<Impl>,
}

/// The defaults of the common options.
pub(crate) const DEFAULTS: Defaults<'static, Impl> = Defaults {
    imps: &[Impl::Ito],
    workers: None,
    repeat: 1,
    timeout_s: DEFAULT_TIMEOUT_S,
};

/// `ito-bench fib`.
pub(crate) fn command(args: &FibArgs) -> ExitCode {
    let c = &args.common;
    let settings = match c.resolve(DEFAULTS) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    let jsonl = if c.record {
        match measure::workspace_root() {
            Ok(root) => Some(root.join("bench/results/fib.jsonl")),
            Err(e) => return usage_error(&format!("--record: {e}")),
        }
    } else {
        None
    };
    let sink = match Sink::new(jsonl, args.csv.clone()) {
        Ok(s) => s,
        Err(e) => return usage_error(&format!("cannot open output file: {e}")),
    };
    if !args.sweep && settings.imps.len() == 1 && args.style.len() == 1 {
        let imp = settings.imps[0];
        fib_in_process(args, &settings, imp, args.style[0], &sink)
    } else {
        fib_in_children(args, &settings, &sink)
    }
}

/// Runs `--repeat` measurements of one impl and style in this process.
fn fib_in_process(
    args: &FibArgs,
    settings: &Settings<Impl>,
    imp: Impl,
    style: Style,
    sink: &Sink,
) -> ExitCode {
    let timeout = settings.timeout;
    let style_name = match effective_style(imp, style) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    let workers = if imp == Impl::Seq {
        1
    } else {
        settings.workers
    };
    let (n, cutoff) = (args.n, args.cutoff);
    let template = Record::template("fib", imp.name(), style_name, n, cutoff, workers);
    let workload = match Workload::new(imp, style, workers) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let expected = fib_reference(n);
    for _ in 0..settings.repeat {
        let on_timeout: OnTimeout = {
            let (template, sink) = (template.clone(), sink.clone());
            Box::new(move |peak| {
                let mut rec = template.failed("timeout");
                rec.peak_threads = Some(peak);
                rec.rss_bytes = measure::vm_hwm_bytes();
                sink.emit(&rec);
                std::process::exit(1);
            })
        };
        let sampler = Sampler::start(Some((timeout, on_timeout)));
        let cpu_before = CpuTime::of_self();
        let outcome = workload.run(n, cutoff);
        let cpu = CpuTime::of_self().since(cpu_before);
        let peak = sampler.finish();
        let mut rec = template.clone();
        match outcome {
            Ok(o) => {
                rec.result = Some(o.result);
                rec.seconds = Some(o.seconds);
                rec.user_s = Some(cpu.user_s);
                rec.sys_s = Some(cpu.sys_s);
                rec.tasks = Some(o.tasks);
                rec.ok = o.result == expected;
                if !rec.ok {
                    rec.error = Some(format!("wrong result, expected {expected}"));
                }
            }
            Err(e) => rec = rec.failed(e),
        }
        rec.peak_threads = Some(peak);
        rec.rss_bytes = measure::vm_hwm_bytes();
        sink.emit(&rec);
        if !rec.ok {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Runs every applicable impl/style pair (and with `--sweep` every cutoff), each repetition
/// in its own child process under a wall-clock limit.
fn fib_in_children(args: &FibArgs, settings: &Settings<Impl>, sink: &Sink) -> ExitCode {
    let timeout_s = settings.timeout.as_secs_f64();
    let mut pairs: Vec<(Impl, Style, &str)> = Vec::new();
    for &imp in &settings.imps {
        for &style in &args.style {
            match effective_style(imp, style) {
                Ok(name) if !pairs.iter().any(|&(i, _, s)| i == imp && s == name) => {
                    pairs.push((imp, style, name));
                }
                Ok(_) => {}
                Err(e) => eprintln!("note: skipping {}/{}: {e}", imp.name(), style.name()),
            }
        }
    }
    if pairs.is_empty() {
        return usage_error("no applicable impl/style combination");
    }
    let cutoffs = if args.sweep {
        SWEEP_CUTOFFS.to_vec()
    } else {
        vec![args.cutoff]
    };
    let mut all_ok = true;
    for &(imp, style, style_name) in &pairs {
        let workers = if imp == Impl::Seq {
            1
        } else {
            settings.workers
        };
        for &cutoff in &cutoffs {
            for _ in 0..settings.repeat {
                let child_args: Vec<String> = [
                    "fib",
                    "--n",
                    &args.n.to_string(),
                    "--cutoff",
                    &cutoff.to_string(),
                    "--impl",
                    imp.name(),
                    "--style",
                    style.name(),
                    "--workers",
                    &workers.to_string(),
                    "--timeout-s",
                    &timeout_s.to_string(),
                ]
                .map(String::from)
                .to_vec();
                let template =
                    Record::template("fib", imp.name(), style_name, args.n, cutoff, workers);
                for rec in child_records(&child_args, settings.timeout + KILL_GRACE, template) {
                    all_ok &= rec.ok;
                    sink.emit(&rec);
                }
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one child measurement and turns what it left into records; `template` stands in
/// for a child that timed out or crashed before printing one.
fn child_records(child_args: &[String], limit: Duration, template: Record) -> Vec<Record> {
    let run = match measure::run_child(child_args, limit) {
        Ok(run) => run,
        Err(e) => return vec![template.failed(format!("cannot start child: {e}"))],
    };
    let mut recs = measure::parse_records(&run.stdout);
    let problem = match run.status {
        None => Some("timeout".to_owned()),
        Some(st) if !st.success() => Some(format!("crashed ({st})")),
        Some(_) => None,
    };
    match (recs.last_mut(), problem) {
        (None, None) => recs.push(template.failed("no output")),
        (None, Some(p)) => recs.push(template.failed(p)),
        // A child that printed a good record and then hung or died (e.g. at shutdown).
        (Some(last), Some(p)) if last.ok => {
            last.ok = false;
            last.error = Some(format!("{p} after reporting"));
        }
        (Some(_), _) => {}
    }
    recs
}
