//! `ito-bench` reproduces the experiments of ito's source documents
//! (indexed in `bench/seeds.md`) on ito and on peer runtimes, printing one JSON line per
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
//! ito-bench net serve echo --impl ito|tokio [--addr ADDR] [--workers W] [--style async|process|sync]
//! ito-bench net load echo --addr ADDR [--conns C] [--bytes B] [--seconds S]
//! ito-bench net echo [--conns 1,100,1000] [--impl ito,tokio,go] [--styles async,process,sync]
//!                    [--workers 1] [--idle-conns 10000] [--record]
//! ito-bench trace draw FILE [--out FILE.svg] [--title T]
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

mod block;
mod chain;
mod common;
mod fib;
mod find;
mod futures;
mod join;
mod measure;
mod messaging;
mod net;
mod pool;
mod seeds;
mod stm_bank;
mod trace;
mod watchdog;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    Fib(fib::command::FibArgs),
    /// Per-task cost of each ito style on one worker, against sequential sfib.
    SpawnCost(fib::spawn_cost::SpawnCostArgs),
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
    /// Document 002: its find_par (a task per directory) or find_par_sem, on ito.
    FindPar(find::par::FindParArgs),
    /// Document 001: a chain of N processes passing a number along, with peak memory.
    Chain(chain::ChainArgs),
    /// Processes: one message round trip between two, against tokio mpsc.
    PingPong(messaging::PingPongArgs),
    /// Processes: S senders flood one receiver, against tokio mpsc.
    FanIn(messaging::FanInArgs),
    /// Every experiment of the five documents against their peers: results, plots, report.
    Seeds(seeds::SeedsArgs),
    /// Issue 19: N synchronous tasks each blocking in a sleep, against goroutines and threads.
    Block(block::BlockArgs),
    /// Issue 18: echo servers (ito async, process, sync; tokio; Go) and a load client.
    Net(net::NetArgs),
    /// Issue 20: draw a trace ito recorded (`Builder::trace`, `ITO_TRACE`) as an SVG.
    Trace(trace::TraceArgs),
}

/// The command line, each experiment's `--help` ending with the defaults of its common options
/// (the ones it applies).
fn command_line() -> clap::Command {
    let defaults = [
        ("fib", fib::command::DEFAULTS.help()),
        ("join", join::DEFAULTS.help()),
        ("stm-bank", stm_bank::DEFAULTS.help()),
        ("pool", pool::DEFAULTS.help()),
        ("chain", chain::DEFAULTS.help()),
        ("ping-pong", messaging::DEFAULTS.help()),
        ("fan-in", messaging::DEFAULTS.help()),
    ];
    let cmd = defaults
        .into_iter()
        .fold(Cli::command(), |cmd, (name, help)| {
            cmd.mut_subcommand(name, |sub| sub.after_help(help))
        });
    cmd.mut_subcommand("futures", |futures| {
        let benches: Vec<String> = futures
            .get_subcommands()
            .map(|b| b.get_name().to_owned())
            .collect();
        benches.iter().fold(futures, |f, bench| {
            f.mut_subcommand(bench, |b| b.after_help(futures::defaults_help()))
        })
    })
}

/// Parses the command line; a bad argument is one line on stderr and exit code 2.
fn parse_cli() -> Result<Cli, ExitCode> {
    use clap::error::ErrorKind;
    let parsed = command_line()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    match parsed {
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
        Cmd::Fib(args) => fib::command::command(&args),
        Cmd::SpawnCost(args) => fib::spawn_cost::command(&args),
        Cmd::Join(args) => join::command(&args),
        Cmd::StmBank(args) => stm_bank::command(&args),
        Cmd::Futures(args) => futures::command(&args),
        Cmd::Pool(args) => pool::command(&args),
        Cmd::FindTree(args) => find::tree_command(&args),
        Cmd::Find(args) => find::command(&args),
        Cmd::FindPar(args) => find::par::command(&args),
        Cmd::Chain(args) => chain::command(&args),
        Cmd::PingPong(args) => messaging::ping_pong_command(&args),
        Cmd::FanIn(args) => messaging::fan_in_command(&args),
        Cmd::Seeds(args) => seeds::command(&args),
        Cmd::Block(args) => block::run(&args),
        Cmd::Net(args) => net::command(&args),
        Cmd::Trace(args) => trace::command(&args),
    }
}

/// Reports a bad argument on stderr; exit status 2.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}
