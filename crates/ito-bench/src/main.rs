//! `ito-bench` reproduces the experiments of ito's source documents
//! (`shared/design/experiments.md`) on ito and on peer runtimes, printing one JSON line per
//! measurement.
//!
//! ```text
//! ito-bench fib --n 42 --cutoff 20 --style flat|wait|async|join [--impl ito|tokio|rayon|seq]
//!               [--workers W] [--repeat R] [--sweep] [--csv PATH] [--timeout-s S] [--record]
//! ito-bench spawn-cost [--n 36] [--cutoff 10]
//! ito-bench join --workload fib,tree,sort,nqueens [--impl ito,rayon,seq] [--n N[,N...]]
//!                [--cutoff C[,C...]] [--workers W] [--repeat R] [--timeout-s S] [--record]
//! ito-bench stm-bank [--threads T[,T...]] [--accounts 1024] [--ops N] [--impl ito,stm-crate,mutex]
//!                    [--repeat R] [--audit] [--timeout-s S] [--record]
//! ito-bench futures or-alt|read-seq|read-concurrent|first-completed|callbacks
//!                   [--impl ito,shared,tokio] [<bench's own options>] [--workers W] [--repeat R]
//!                   [--timeout-s S] [--record]
//! ito-bench pool [--mode spawn,pool,bounded,channel-pool] [--tasks T] [--runs R] [--sleep-ms S]
//!                [--pool-size P] [--impl ito,tokio] [--workers 2] [--timeout-s S] [--record]
//! ito-bench find-tree --dirs D --files F --seed S --out DIR
//! ito-bench find --tree DIR [--runs R] [--workers W] [--ito-find PATH] [--record]
//! ito-bench chain --n N[,N...] [--impl ito,tokio,go,elixir] [--workers W] [--repeat R] [--record]
//! ito-bench ping-pong --rounds N [--impl ito,tokio] [--workers W] [--repeat R] [--record]
//! ito-bench fan-in --senders S --messages N [--impl ito,tokio] [--workers W] [--repeat R] [--record]
//! ito-bench seeds [--quick | --smoke] [--out DIR] [--peers all|built|none] [--only 000,...]
//!                 [--from RESULTS.jsonl]
//! ```
//!
//! `seeds` (module [`seeds`]) runs all of the above for the five documents, each step a child
//! process under a timeout, and writes results.jsonl, CSVs, SVG plots and report.md.
//!
//! `join` (issue 3, module [`join`]), `stm-bank` (the STM issue, module [`stm_bank`]) and
//! `futures` (document 004's benchmarks, module [`futures`]) run their impls side by
//! side in this process, interleaved, and end with a summary on stderr.
//!
//! A single `fib` measurement runs in this process; `--sweep` (cutoffs 40 down to 2) and
//! comma lists of impls or styles run every measurement in a child process of this binary,
//! so that each reports its own peak RSS and a deadlocked run is killed after `--timeout-s`
//! instead of hanging the sweep. Exit status: 0 when every measurement is right, 1 when one
//! failed (wrong result, timeout, crash), 2 for bad arguments.

mod chain;
mod fib;
mod find;
mod futures;
mod join;
mod measure;
mod messaging;
mod pool;
mod seeds;
mod stm_bank;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};

use fib::{Impl, Style, Workload, effective_style, fib_reference, sfib};
use measure::{OnTimeout, Record, Sampler, Sink};
use serde::Serialize;

/// The cutoffs of `--sweep`, coarse to fine.
const SWEEP_CUTOFFS: [u64; 9] = [40, 35, 30, 25, 20, 15, 10, 5, 2];

/// How long past `--timeout-s` the parent waits for a child's own watchdog before killing it.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// Command line.
#[derive(Parser, Debug)]
#[command(
    name = "ito-bench",
    version,
    about = "Benchmarks ito against peer runtimes"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
enum Cmd {
    /// Experiment 000: fib(n) forking two tasks per call above a cutoff.
    Fib(FibArgs),
    /// Per-task cost of each ito style on one worker, against sequential sfib.
    SpawnCost(SpawnCostArgs),
    /// Issue 3: fork-join workloads on ito::join, rayon::join and sequentially.
    Join(join::JoinArgs),
    /// STM issue: random transfers between accounts on ito::stm, the stm crate and mutexes.
    StmBank(stm_bank::StmBankArgs),
    /// Document 004: the ScalaMeter benchmarks of futures and promises, against peers.
    Futures(futures::FuturesArgs),
    /// Document 003: spawn vs pool vs semaphore-bounded vs channel pool, against tokio.
    Pool(pool::PoolArgs),
    /// Document 002: make a deterministic tree shaped like a home directory.
    FindTree(find::FindTreeArgs),
    /// Document 002: ito-find against GNU find and fd on a tree.
    Find(find::FindArgs),
    /// Document 001: a chain of N processes passing a number along, with peak memory.
    Chain(chain::ChainArgs),
    /// Processes: one message round trip between two, against tokio mpsc.
    PingPong(messaging::PingPongArgs),
    /// Processes: S senders flood one receiver, against tokio mpsc.
    FanIn(messaging::FanInArgs),
    /// Every experiment of the five documents against their peers: results, plots, report.
    Seeds(seeds::SeedsArgs),
}

/// Arguments of `fib`.
#[derive(Args, Debug)]
struct FibArgs {
    /// Argument of fib (at most 93, the largest that fits in u64).
    #[arg(long, default_value_t = 42, value_parser = clap::value_parser!(u64).range(0..=93))]
    n: u64,
    /// Calls with n < cutoff run the sequential sfib (at least 2).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(2..))]
    cutoff: u64,
    /// Style(s), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "wait")]
    style: Vec<Style>,
    /// Implementation(s), comma-separated.
    #[arg(
        long = "impl",
        value_enum,
        value_delimiter = ',',
        default_value = "ito"
    )]
    imps: Vec<Impl>,
    /// Worker threads [default: number of CPUs].
    #[arg(long)]
    workers: Option<usize>,
    /// Repetitions of each measurement.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Run cutoffs 40, 35, 30, 25, 20, 15, 10, 5, 2, each in a child process.
    #[arg(long)]
    sweep: bool,
    /// Also write the records to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Wall-clock limit of each measurement in seconds.
    #[arg(long = "timeout-s", default_value_t = 120.0)]
    timeout_s: f64,
    /// Also append the records to bench/results/fib.jsonl of the workspace.
    #[arg(long)]
    record: bool,
}

/// Arguments of `spawn-cost`.
#[derive(Args, Debug)]
struct SpawnCostArgs {
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

/// Parses the command line; a bad argument is one line on stderr and exit code 2.
fn parse_cli() -> Result<Cli, ExitCode> {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            Err(ExitCode::SUCCESS)
        }
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("ito-bench: {}", first.trim_start_matches("error: "));
            Err(ExitCode::from(2))
        }
    }
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Cmd::Fib(args) => fib_command(&args),
        Cmd::SpawnCost(args) => spawn_cost_command(&args),
        Cmd::Join(args) => join::command(&args),
        Cmd::StmBank(args) => stm_bank::command(&args),
        Cmd::Futures(args) => futures::command(&args),
        Cmd::Pool(args) => pool::command(&args),
        Cmd::FindTree(args) => find::tree_command(&args),
        Cmd::Find(args) => find::command(&args),
        Cmd::Chain(args) => chain::command(&args),
        Cmd::PingPong(args) => messaging::ping_pong_command(&args),
        Cmd::FanIn(args) => messaging::fan_in_command(&args),
        Cmd::Seeds(args) => seeds::command(&args),
    }
}

/// Reports a bad argument on stderr; exit status 2.
fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Parses a `--timeout-s` value.
fn timeout_of(seconds: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--timeout-s must be a positive number of seconds, got {seconds}"))
}

/// `ito-bench fib`.
fn fib_command(args: &FibArgs) -> ExitCode {
    let workers = args.workers.unwrap_or_else(measure::nproc);
    if workers == 0 {
        return usage_error("--workers must be at least 1");
    }
    if args.repeat == 0 {
        return usage_error("--repeat must be at least 1");
    }
    let timeout = match timeout_of(args.timeout_s) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let jsonl = if args.record {
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
    if !args.sweep && args.imps.len() == 1 && args.style.len() == 1 {
        fib_in_process(args, args.imps[0], args.style[0], workers, timeout, &sink)
    } else {
        fib_in_children(args, workers, timeout, &sink)
    }
}

/// Runs `--repeat` measurements of one impl and style in this process.
fn fib_in_process(
    args: &FibArgs,
    imp: Impl,
    style: Style,
    workers: usize,
    timeout: Duration,
    sink: &Sink,
) -> ExitCode {
    let style_name = match effective_style(imp, style) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    let workers = if imp == Impl::Seq { 1 } else { workers };
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
    for _ in 0..args.repeat {
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
        let outcome = workload.run(n, cutoff);
        let peak = sampler.finish();
        let mut rec = template.clone();
        match outcome {
            Ok(o) => {
                rec.result = Some(o.result);
                rec.seconds = Some(o.seconds);
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
fn fib_in_children(args: &FibArgs, workers: usize, timeout: Duration, sink: &Sink) -> ExitCode {
    let mut pairs: Vec<(Impl, Style, &str)> = Vec::new();
    for &imp in &args.imps {
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
        let workers = if imp == Impl::Seq { 1 } else { workers };
        for &cutoff in &cutoffs {
            for _ in 0..args.repeat {
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
                    &args.timeout_s.to_string(),
                ]
                .map(String::from)
                .to_vec();
                let template =
                    Record::template("fib", imp.name(), style_name, args.n, cutoff, workers);
                for rec in child_records(&child_args, timeout + KILL_GRACE, template) {
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
fn spawn_cost_command(args: &SpawnCostArgs) -> ExitCode {
    let timeout = match timeout_of(args.timeout_s) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let (n, cutoff) = (args.n, args.cutoff);
    let expected = fib_reference(n);
    let seq_seconds = (0..3)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(sfib(n), expected, "sfib is wrong");
            start.elapsed().as_secs_f64()
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
        let mut best: Option<fib::Outcome> = None;
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
