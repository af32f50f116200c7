//! `ito-bench futures <bench>`: document 004's ScalaMeter benchmarks of futures and promises
//! (Schwarz and Sulzmann, "STM-Based Futures and Promises in Scala"), on ito and its peers.
//!
//! # The implementations
//!
//! - `ito`: `ito::Promise` / `ito::Future`; tasks on an `ito::Runtime` of `--workers`
//!   workers.
//! - `shared`: the futures-rs way to get a future that many can read: a
//!   `futures::channel::oneshot` whose receiver is wrapped in `futures::future::Shared`; tasks
//!   on a `futures::executor::ThreadPool` of `--workers` threads; a plain thread blocks with
//!   `futures::executor::block_on`.
//! - `tokio`: `tokio::sync::oneshot` and a multi-thread tokio runtime of `--workers` workers.
//!   A tokio oneshot has one reader, so tokio runs only where that fits, or where the
//!   receiver can be wrapped in `Shared` without making it the `shared` peer again (pool
//!   mode, on tokio's own scheduler).
//! - `mutex`: the peer of `philosophers` only (see there): forks are
//!   `parking_lot::Mutex<Option<usize>>`, tasks on the same `futures::executor::ThreadPool`
//!   of `--workers` threads as `shared`.
//!
//! Failures are `ito::Failure::NoSuchElement` for ito (no allocation) and a unit error type
//! for the peers.
//!
//! # The benchmarks (document 004's, in its order)
//!
//! - `or-alt --chain C --succeed first|last`: "calculation of alternatives". The document
//!   builds `f = Future(42); for 1..=C: f = orAlt(f, fail())` and reads `f`; `last` fails
//!   every alternative but the last. One operation = creating the C+1 completed alternatives,
//!   the C `or_alt` combinators, and reading the result. ito: `Future::successful` /
//!   `Future::failed` and [`ito::Future::or_alt`], read with `wait()`. `shared`: each
//!   alternative is a `Shared` oneshot receiver (sent before use); `or_alt(a, b)` is
//!   `select_ok([a, b])` (the first *success* of the two, which is what `orAlt` is) mapped to
//!   the value, boxed and made `Shared` again, so that every intermediate result is, like
//!   ito's, a future that many could read; the result is read with `now_or_never`. `tokio`:
//!   the same `select_ok` chain over tokio oneshot receivers, but boxed without `Shared`
//!   (single-reader intermediates: less work than ito does). The futures-rs chain is lazy:
//!   its work happens when the result is read; ito's combinators run their callbacks as they
//!   are attached. The clock covers both.
//! - `read-seq --reads N`: "sequential reading": one completed future read N times in a row
//!   (the document delays its completion by 1 ms and times everything; here only the reads
//!   are timed, the delay would hide them). ito: `wait()`; `shared`: `clone()` +
//!   `now_or_never()` (the cheapest read futures-rs has). tokio does not fit (one reader).
//! - `read-concurrent --readers R --mode threads|pool [--delay 1ms]`: R readers wait for one
//!   future that a separate completer thread completes `--delay` after every reader has
//!   started. `threads`: a new OS thread per reader (ito `wait()`, `shared` `block_on`);
//!   `pool`: a task per reader on the impl's pool, awaiting the future (ito `rt.spawn` +
//!   `.await`; `shared`: `ThreadPool::spawn_ok` awaiting a `Shared` clone; `tokio`:
//!   `Runtime::spawn` awaiting a `Shared` clone of a tokio oneshot receiver). `seconds` runs
//!   from the first reader's creation to the last read; `after_complete_s` from the
//!   completion to the last read (the wake-up of R sleeping readers).
//! - `first-completed --futures F [--busy deadline|duration]`: F futures on the pool, future
//!   i busy-waits 500+i µs then completes with i; the result of "first completed of" them
//!   (ito [`ito::future::first_completed_of`]; peers `futures::future::select_all` over the
//!   oneshot receivers or tokio `JoinHandle`s) should be future 0. `seconds` is from the
//!   first spawn to the result; `accuracy` the fraction of `--repeat` repetitions (one JSON
//!   line per F and impl) in which future 0 won (the document's metric). Each future also
//!   stamps the end of its busy-wait just before it completes, which splits a miss in two:
//!   `zero_first` counts the repetitions in which future 0 did end first (a worker
//!   preempted by another process in the middle of future 0's wait makes it lose: the
//!   machine's doing), and `faithful` those in which the winner is the future that ended
//!   first (what "first completed of" answers for). `select_all` polls its futures in index
//!   order when it wakes, so when several have completed by then it reports the lowest
//!   index, not the first to complete: this favours future 0 in the peers' `accuracy` and
//!   shows up in their `faithful`. See below for the busy-wait.
//! - `callbacks --count N --delay 0|1ms`: "appending of multiple callbacks": N callbacks on a
//!   future that is already complete (`0`) or that a completer thread completes after the
//!   delay; the clock runs until the last callback ran (an atomic count-down). ito:
//!   [`ito::Future::on_complete`] (runs inline, on the attaching thread when the future is
//!   complete, else on the completing thread). Neither peer has callbacks: a callback is a
//!   task spawned on the pool that awaits a `Shared` clone and then runs (which is what
//!   Scala's `onComplete` does: it schedules the callback on the execution context).
//! - `philosophers --n N --rounds R`: the dining philosophers race. Each round: N fresh
//!   forks, and N philosopher tasks on the pool, philosopher p trying once to take forks p
//!   and p+1 (mod N) both at once; the round ends when every philosopher has tried (a
//!   count-down latch; the time of a round is from the creation of its forks to the last
//!   try). ito: the forks are `ito::Promise<usize>` and a philosopher calls
//!   [`ito::stm::multi_try_success`] on his two (the document's `multiTrySuccess`, which
//!   completes every promise or none), tasks on the `ito::Runtime` (`spawn_fn`). Neither
//!   futures-rs nor tokio can complete several futures at once (a oneshot `send` is one
//!   future, and two sends are two separate moments), so a futures peer cannot take both
//!   forks or neither. The peer is therefore `mutex`, what the document says Scala's
//!   promises would need instead ("locks ... and some order function to lock and unlock in
//!   proper order"): each fork is a `parking_lot::Mutex<Option<usize>>`, and a philosopher
//!   `try_lock`s his two forks in index order and, if both are free, takes both, else
//!   neither (no waiting: one try, like `multiTrySuccess`); tasks on a
//!   `futures::executor::ThreadPool` of `--workers` threads, the pool of the `shared` peer
//!   in the other benchmarks. After each round (not timed) every fork is read and the round
//!   is checked to be all-or-nothing: every fork taken belongs to one of its two
//!   philosophers, who won and holds both his forks; no two neighbours both won; at least
//!   one won. For ito also: every loser has a neighbour who won (`multi_try_success` fails
//!   only when a fork is taken). A `mutex` loser may have none: `try_lock` fails on a fork a
//!   neighbour holds for a moment before giving it back (`unforced_losses` counts them).
//!   One JSON line per run (all the rounds of one N, one impl): `seconds` for all the
//!   rounds, `ns_per_item` per philosopher's try, `rounds_ok` (must equal `rounds`; else
//!   the process exits with status 1), `winners_per_round` (the mean) and
//!   `unforced_losses`. The time includes spawning N tasks a round on the impl's pool, so
//!   the two differ by their pools as well as by how they take the forks.
//!
//! A run past `--timeout-s` is reported and ends the process with status 1; the deadline is
//! kept by one watchdog thread for the whole command (armed and disarmed around each run
//! without a wake-up), because a thread started per run competes with a race of a few
//! hundred microseconds on a 2-core machine (it cost ito's first-completed accuracy 20-30
//! points when it did).
//!
//! Micro benchmarks (`or-alt`, `read-seq`) time a batch of operations that lasts at least
//! [`SAMPLE_TARGET`] (the batch size is calibrated once per configuration, which is also the
//! warm-up) and report the mean time per operation; the others time single operations and
//! report one line per operation. Runs are interleaved: for each parameter value, for each
//! repetition, for each impl. The summary on stderr gives the median per impl and the
//! ratios ito/peer (below 1: ito is faster).
//!
//! # The busy-wait of `first-completed`, and why the default is `deadline`
//!
//! The document ran its 10..60 futures on a 64-core server: every future had a core, started
//! at once (the spawn loop's order, future 0 first), and future i finished 500+i µs after its
//! start, so future 0 was the first to finish by 1 µs and the benchmark measured whether
//! `first` reports it. On `--workers 2` only two futures run at a time; with a busy-wait of
//! 500+i µs *from the task's start* (`--busy duration`, the document's code taken
//! literally), the winner is decided by which two tasks the pool starts first (its queue
//! order), and the others run 500 µs each long after the race is over. With the default,
//! `--busy deadline`, future i busy-waits until `t0 + 500 + i µs`, t0 being the instant
//! before the first spawn: each future finishes when it would have on a machine with a core
//! per future, provided it starts before its deadline (future 0 does, unless the pool leaves
//! it queued for 500 µs behind other work), and futures started after their deadline
//! complete at once. That keeps the document's question (does "first completed" report
//! the future that completed first, when they complete 1 µs apart?) answerable on two cores,
//! and every impl runs the same tasks on a pool of the same size.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use futures::FutureExt;
use futures::future::{BoxFuture, Either, Shared, select_all, select_ok};
use serde::Serialize;

use crate::measure::{self, SharedWatchdog, Sink, dedup};

/// A timed batch of a micro benchmark lasts at least this long.
const SAMPLE_TARGET: Duration = Duration::from_millis(2);

/// The largest batch of a micro benchmark.
const MAX_BATCH: u64 = 1 << 22;

/// The value every future of these benchmarks completes with.
const VALUE: u64 = 42;

/// Arguments of `futures`.
#[derive(Args, Debug)]
#[command(
    about = "Document 004: the ScalaMeter benchmarks of futures and promises, against peers",
    long_about = "Document 004 (STM-based futures and promises in Scala): its ScalaMeter \
        benchmarks on ito and two peers: shared (futures-rs: a oneshot channel wrapped in \
        Shared, the futures thread pool) and tokio (tokio::sync::oneshot and tokio's \
        runtime, where a single-reader future fits); for philosophers, whose \
        multiTrySuccess neither has, the peer is mutex (forks as try-locked mutexes on the \
        futures thread pool).\n\n\
        Runs are interleaved: for each parameter value, repetition, impl. One JSON line per \
        run on stdout; a summary (medians, ratios ito/peer) on stderr. Exit status: 0 if \
        every run was right, 1 if one failed, 2 for bad arguments."
)]
pub(crate) struct FuturesArgs {
    #[command(subcommand)]
    bench: Bench,
}

/// The benchmarks.
#[derive(Subcommand, Debug)]
enum Bench {
    /// Chains of or_alt over completed futures, where the first or the last one succeeds.
    OrAlt(OrAltArgs),
    /// One completed future read N times in a row.
    ReadSeq(ReadSeqArgs),
    /// R readers (new threads, or tasks on the pool) wait for one future.
    ReadConcurrent(ReadConcurrentArgs),
    /// The first completed of F futures that busy-wait 500+i µs: time and accuracy.
    FirstCompleted(FirstCompletedArgs),
    /// N callbacks on a future that completes at once or after a delay.
    Callbacks(CallbacksArgs),
    /// Dining philosophers: each round, N philosophers race once for fresh forks, taking both
    /// or neither (ito: multi_try_success on promise forks; peer: try-locked mutexes).
    Philosophers(PhilosophersArgs),
}

/// Options every benchmark takes.
#[derive(Args, Debug)]
struct Common {
    /// Implementation(s), comma-separated [default: every impl that fits the benchmark]
    #[arg(long = "impl", value_enum, value_delimiter = ',')]
    imps: Vec<FutImpl>,
    /// Worker threads of each impl's pool [default: number of CPUs]
    #[arg(long)]
    workers: Option<usize>,
    /// Repetitions of each configuration [default: 20; first-completed 50; philosophers 20
    /// runs of --rounds rounds]
    #[arg(long)]
    repeat: Option<u32>,
    /// Wall-clock limit of each run in seconds (a run past it is recorded as failed and the
    /// process exits with status 1).
    #[arg(long = "timeout-s", default_value_t = 60.0)]
    timeout_s: f64,
    /// Also append the records to bench/results/futures.jsonl of the workspace.
    #[arg(long)]
    record: bool,
}

/// Arguments of `futures or-alt`.
#[derive(Args, Debug)]
struct OrAltArgs {
    /// Number(s) of or_alt combinators in the chain (the chain has one more future).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10,20,30,40,50,60,70,80,90,100"
    )]
    chain: Vec<usize>,
    /// Which alternative succeeds (all others fail), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "first,last")]
    succeed: Vec<Succeed>,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `futures read-seq`.
#[derive(Args, Debug)]
struct ReadSeqArgs {
    /// Number(s) of reads.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,200,300,400,500,600,700,800,900,1000"
    )]
    reads: Vec<usize>,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `futures read-concurrent`.
#[derive(Args, Debug)]
struct ReadConcurrentArgs {
    /// Number(s) of readers.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60")]
    readers: Vec<usize>,
    /// Readers on new OS threads, or tasks on the pool; comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "threads,pool"
    )]
    mode: Vec<Mode>,
    /// Time from the last reader's start to the completion (e.g. 1ms, 500us, 0).
    #[arg(long, default_value = "1ms", value_parser = parse_delay)]
    delay: Duration,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `futures first-completed`.
#[derive(Args, Debug)]
struct FirstCompletedArgs {
    /// Number(s) of futures.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60")]
    futures: Vec<usize>,
    /// deadline: future i spins until 500+i µs after the first spawn; duration: for 500+i µs
    /// from its own start (see the module documentation).
    #[arg(long, value_enum, default_value = "deadline")]
    busy: Busy,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `futures callbacks`.
#[derive(Args, Debug)]
struct CallbacksArgs {
    /// Number(s) of callbacks.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10,20,30,40,50,60,70,80,90,100"
    )]
    count: Vec<usize>,
    /// Delay(s) of the completion, comma-separated: 0 (complete before the callbacks are
    /// attached) or a duration such as 1ms or 500us.
    #[arg(long, value_delimiter = ',', default_value = "0,1ms", value_parser = parse_delay)]
    delay: Vec<Duration>,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `futures philosophers`.
#[derive(Args, Debug)]
struct PhilosophersArgs {
    /// Number(s) of philosophers (and forks), at least 2.
    #[arg(long, value_delimiter = ',', default_value = "3,5,10,20,35,50,65")]
    n: Vec<usize>,
    /// Rounds per run (fresh forks each round).
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    #[command(flatten)]
    common: Common,
}

/// Parses a delay: `0`, or a number with a unit `ns`, `us`, `ms` or `s`.
fn parse_delay(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let (num, scale) = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
    ]
    .iter()
    .find_map(|(unit, scale)| s.strip_suffix(unit).map(|n| (n, *scale)))
    .ok_or_else(|| format!("`{s}` needs a unit: ns, us, ms or s (or is 0)"))?;
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration"))?;
    Duration::try_from_secs_f64(v * scale).map_err(|_| format!("`{s}` is not a duration"))
}

/// An implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FutImpl {
    /// ito::Future / ito::Promise on an ito::Runtime.
    Ito,
    /// futures-rs: Shared over a futures::channel::oneshot, on the futures ThreadPool.
    Shared,
    /// tokio::sync::oneshot on a tokio multi-thread runtime.
    Tokio,
    /// philosophers only: forks as parking_lot mutexes, try-locked in order, on the futures
    /// ThreadPool.
    Mutex,
}

impl FutImpl {
    fn name(self) -> &'static str {
        match self {
            FutImpl::Ito => "ito",
            FutImpl::Shared => "shared",
            FutImpl::Tokio => "tokio",
            FutImpl::Mutex => "mutex",
        }
    }
}

/// Which alternative of an or_alt chain succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Succeed {
    /// The first one (the chain's start).
    First,
    /// The last one added.
    Last,
}

/// Where the readers of `read-concurrent` run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A new OS thread per reader, blocking.
    Threads,
    /// A task per reader on the impl's pool, awaiting.
    Pool,
}

/// How the futures of `first-completed` busy-wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Busy {
    /// Until 500+i µs after the first spawn.
    Deadline,
    /// For 500+i µs from the task's own start.
    Duration,
}

/// One run (or, for `first-completed`, one configuration's repetitions), as one JSON line.
#[derive(Clone, Debug, Default, Serialize)]
struct FutRecord {
    /// Always `"futures"`.
    experiment: &'static str,
    /// `or-alt`, `read-seq`, `read-concurrent`, `first-completed`, `callbacks` or
    /// `philosophers`.
    bench: &'static str,
    /// `ito`, `shared`, `tokio` or `mutex`.
    #[serde(rename = "impl")]
    imp: &'static str,
    /// or-alt: or_alt combinators in the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    chain: Option<usize>,
    /// or-alt: `first` or `last`.
    #[serde(skip_serializing_if = "Option::is_none")]
    succeed: Option<&'static str>,
    /// read-seq: reads per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    reads: Option<usize>,
    /// read-concurrent: readers.
    #[serde(skip_serializing_if = "Option::is_none")]
    readers: Option<usize>,
    /// read-concurrent: `threads` or `pool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'static str>,
    /// first-completed: futures.
    #[serde(skip_serializing_if = "Option::is_none")]
    futures: Option<usize>,
    /// first-completed: `deadline` or `duration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    busy: Option<&'static str>,
    /// callbacks: callbacks attached.
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<usize>,
    /// philosophers: philosophers (and forks) per round.
    #[serde(skip_serializing_if = "Option::is_none")]
    philosophers: Option<usize>,
    /// philosophers: rounds of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds: Option<usize>,
    /// read-concurrent, callbacks: delay of the completion in µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_us: Option<u64>,
    /// Threads of the impl's pool, where the benchmark uses one.
    #[serde(skip_serializing_if = "Option::is_none")]
    workers: Option<usize>,
    /// Repetition index, from 0 (not for first-completed, whose line covers `reps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    rep: Option<u32>,
    /// Micro benchmarks: operations timed together (`seconds` is their mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    batch: Option<u64>,
    /// Seconds of one operation (first-completed: the median of the repetitions;
    /// philosophers: all the rounds of the run).
    seconds: Option<f64>,
    /// `seconds` divided by the parameter (per or_alt, read, reader, future or callback;
    /// philosophers: per philosopher's try, `rounds * philosophers` of them), in nanoseconds.
    ns_per_item: Option<f64>,
    /// read-concurrent, callbacks with a delay: seconds from the completion to the last
    /// read or callback.
    #[serde(skip_serializing_if = "Option::is_none")]
    after_complete_s: Option<f64>,
    /// first-completed: repetitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    reps: Option<u32>,
    /// first-completed: the fastest repetition's seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds_best: Option<f64>,
    /// first-completed: repetitions won by future 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    wins: Option<u32>,
    /// first-completed: `wins / reps` (the document's accuracy).
    #[serde(skip_serializing_if = "Option::is_none")]
    accuracy: Option<f64>,
    /// first-completed: repetitions in which future 0 was the first to end its busy-wait
    /// (each future stamps the end just before it completes): what the machine allowed,
    /// whatever "first completed of" then reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    zero_first: Option<u32>,
    /// first-completed: repetitions in which the winner was the future that ended its
    /// busy-wait first: what "first completed of" is responsible for.
    #[serde(skip_serializing_if = "Option::is_none")]
    faithful: Option<u32>,
    /// first-completed: `faithful / reps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    faithfulness: Option<f64>,
    /// philosophers: rounds that were all-or-nothing (see the module documentation); the
    /// run is ok only if this is `rounds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds_ok: Option<usize>,
    /// philosophers: the mean number of philosophers who ate in a round.
    #[serde(skip_serializing_if = "Option::is_none")]
    winners_per_round: Option<f64>,
    /// philosophers: losers neither of whose neighbours won, over all the rounds (a try that
    /// failed though no fork of the loser was taken for good; always 0 for ito).
    #[serde(skip_serializing_if = "Option::is_none")]
    unforced_losses: Option<u64>,
    /// `git rev-parse --short HEAD`, or `"unknown"`.
    commit: String,
    /// CPUs available to the process.
    nproc: usize,
    /// Whether every operation produced the right value.
    ok: bool,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// For the summary: the variant (succeed, mode, busy, delay) as text.
    #[serde(skip)]
    variant: String,
    /// For the summary: the size parameter.
    #[serde(skip)]
    param: usize,
}

impl FutRecord {
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a FutRecord always serializes")
    }
}

/// The pools of the impls that run, built once.
struct Pools {
    workers: usize,
    ito: Option<ito::Runtime>,
    shared: Option<futures::executor::ThreadPool>,
    tokio: Option<tokio::runtime::Runtime>,
}

impl Pools {
    fn new(imps: &[FutImpl], workers: usize) -> Result<Pools, String> {
        let mut p = Pools {
            workers,
            ito: None,
            shared: None,
            tokio: None,
        };
        for imp in imps {
            match imp {
                FutImpl::Ito => {
                    p.ito = Some(
                        ito::Runtime::builder()
                            .workers(workers)
                            .build()
                            .map_err(|e| format!("building the ito runtime: {e}"))?,
                    );
                }
                FutImpl::Shared | FutImpl::Mutex => {
                    if p.shared.is_some() {
                        continue;
                    }
                    p.shared = Some(
                        futures::executor::ThreadPool::builder()
                            .pool_size(workers)
                            .create()
                            .map_err(|e| format!("building the futures thread pool: {e}"))?,
                    );
                }
                FutImpl::Tokio => {
                    p.tokio = Some(
                        tokio::runtime::Builder::new_multi_thread()
                            .worker_threads(workers)
                            .build()
                            .map_err(|e| format!("building the tokio runtime: {e}"))?,
                    );
                }
            }
        }
        Ok(p)
    }

    fn ito(&self) -> &ito::Runtime {
        self.ito.as_ref().expect("the ito runtime was built")
    }

    fn shared(&self) -> &futures::executor::ThreadPool {
        self.shared.as_ref().expect("the futures pool was built")
    }

    fn tokio(&self) -> &tokio::runtime::Runtime {
        self.tokio.as_ref().expect("the tokio runtime was built")
    }
}

/// What every benchmark shares: the sink, the limit of a run, the records so far.
struct Ctx {
    sink: Sink,
    watchdog: SharedWatchdog,
    timeout: Duration,
    repeat: u32,
    records: Vec<FutRecord>,
    all_ok: bool,
}

impl Ctx {
    /// Runs `f` under the per-run watchdog: past the limit, `template` is emitted as a
    /// timeout and the process exits with status 1.
    fn guarded<R>(&self, template: &FutRecord, f: impl FnOnce() -> R) -> R {
        let (mut rec, sink) = (template.clone(), self.sink.clone());
        self.watchdog.arm(self.timeout, move || {
            rec.ok = false;
            rec.error = Some("timeout".to_owned());
            sink.emit_line(&rec.to_json());
            std::process::exit(1);
        });
        let r = f();
        self.watchdog.disarm();
        r
    }

    fn emit(&mut self, rec: FutRecord) {
        self.all_ok &= rec.ok;
        self.sink.emit_line(&rec.to_json());
        self.records.push(rec);
    }
}

/// A record with the identifying fields of a run set.
fn template(bench: &'static str, imp: FutImpl, variant: String, param: usize) -> FutRecord {
    FutRecord {
        experiment: "futures",
        bench,
        imp: imp.name(),
        commit: measure::commit(),
        nproc: measure::nproc(),
        variant,
        param,
        ..FutRecord::default()
    }
}

/// `ito-bench futures`.
pub(crate) fn command(args: &FuturesArgs) -> ExitCode {
    let (name, common) = match &args.bench {
        Bench::OrAlt(a) => ("or-alt", &a.common),
        Bench::ReadSeq(a) => ("read-seq", &a.common),
        Bench::ReadConcurrent(a) => ("read-concurrent", &a.common),
        Bench::FirstCompleted(a) => ("first-completed", &a.common),
        Bench::Callbacks(a) => ("callbacks", &a.common),
        Bench::Philosophers(a) => ("philosophers", &a.common),
    };
    let fits: &[FutImpl] = match &args.bench {
        Bench::Philosophers(_) => &[FutImpl::Ito, FutImpl::Mutex],
        Bench::ReadSeq(_) => &[FutImpl::Ito, FutImpl::Shared],
        Bench::ReadConcurrent(a) if !a.mode.contains(&Mode::Pool) => {
            &[FutImpl::Ito, FutImpl::Shared]
        }
        _ => &[FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio],
    };
    let imps = if common.imps.is_empty() {
        fits.to_vec()
    } else {
        dedup(&common.imps)
    };
    if let Some(bad) = imps.iter().find(|i| !fits.contains(i)) {
        let why = match &args.bench {
            Bench::Philosophers(_) => {
                "neither futures-rs nor tokio completes several futures at once; the peer is mutex"
            }
            _ if *bad == FutImpl::Mutex => "mutex is the peer of philosophers only",
            Bench::ReadConcurrent(_) => {
                "a tokio oneshot has one reader; tokio runs in --mode pool only"
            }
            _ => "a tokio oneshot has one reader",
        };
        return crate::usage_error(&format!(
            "{name}: --impl {} does not fit ({why})",
            bad.name()
        ));
    }
    let workers = common.workers.unwrap_or_else(measure::nproc);
    if workers == 0 {
        return crate::usage_error("--workers must be at least 1");
    }
    let repeat = common.repeat.unwrap_or(match &args.bench {
        Bench::FirstCompleted(_) => 50,
        _ => 20,
    });
    if repeat == 0 {
        return crate::usage_error("--repeat must be at least 1");
    }
    let timeout = match crate::timeout_of(common.timeout_s) {
        Ok(t) => t,
        Err(e) => return crate::usage_error(&e),
    };
    let zero_param = match &args.bench {
        Bench::OrAlt(a) => a.chain.contains(&0).then_some("--chain"),
        Bench::ReadSeq(a) => a.reads.contains(&0).then_some("--reads"),
        Bench::ReadConcurrent(a) => a.readers.contains(&0).then_some("--readers"),
        Bench::FirstCompleted(a) => a.futures.contains(&0).then_some("--futures"),
        Bench::Callbacks(a) => a.count.contains(&0).then_some("--count"),
        Bench::Philosophers(_) => None,
    };
    if let Some(flag) = zero_param {
        return crate::usage_error(&format!("{flag} values must be at least 1"));
    }
    if let Bench::Philosophers(a) = &args.bench {
        if a.n.iter().any(|&n| n < 2) {
            return crate::usage_error(
                "--n values must be at least 2 (a philosopher needs two forks)",
            );
        }
        if a.rounds == 0 {
            return crate::usage_error("--rounds must be at least 1");
        }
    }
    let sink = match measure::results_sink(common.record, "futures.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    // The micro benchmarks use no pool.
    let pooled: &[FutImpl] = match &args.bench {
        Bench::OrAlt(_) | Bench::ReadSeq(_) => &[],
        _ => &imps,
    };
    let pools = match Pools::new(pooled, workers) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ctx = Ctx {
        sink,
        watchdog: SharedWatchdog::start(),
        timeout,
        repeat,
        records: Vec::new(),
        all_ok: true,
    };
    match &args.bench {
        Bench::OrAlt(a) => or_alt(&mut ctx, &imps, &dedup(&a.chain), &dedup(&a.succeed)),
        Bench::ReadSeq(a) => read_seq(&mut ctx, &imps, &dedup(&a.reads)),
        Bench::ReadConcurrent(a) => read_concurrent(
            &mut ctx,
            &pools,
            &imps,
            &dedup(&a.readers),
            &dedup(&a.mode),
            a.delay,
        ),
        Bench::FirstCompleted(a) => {
            first_completed(&mut ctx, &pools, &imps, &dedup(&a.futures), a.busy)
        }
        Bench::Callbacks(a) => {
            callbacks(&mut ctx, &pools, &imps, &dedup(&a.count), &dedup(&a.delay))
        }
        Bench::Philosophers(a) => philosophers(&mut ctx, &pools, &imps, &dedup(&a.n), a.rounds),
    }
    eprint!("{}", summary(name, &ctx.records, &imps, workers, repeat));
    if ctx.all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------------------------------------
// Micro benchmarks: calibrated batches.

/// Runs `op` `batch` times: the mean seconds per operation, and whether every result was
/// right.
fn timed_batch(batch: u64, op: &mut dyn FnMut() -> bool) -> (f64, bool) {
    let mut ok = true;
    let start = Instant::now();
    for _ in 0..batch {
        ok &= op();
    }
    (start.elapsed().as_secs_f64() / batch as f64, ok)
}

/// The batch size that makes a timed batch last at least [`SAMPLE_TARGET`] (also the warm-up).
fn calibrate(op: &mut dyn FnMut() -> bool) -> u64 {
    let mut batch = 1;
    loop {
        let (per_op, _) = timed_batch(batch, op);
        if per_op * batch as f64 >= SAMPLE_TARGET.as_secs_f64() || batch >= MAX_BATCH {
            return batch;
        }
        batch *= 2;
    }
}

/// Calibrates each impl's operation, then runs the interleaved repetitions, emitting one
/// record per timed batch. `items` divides `seconds` into `ns_per_item`.
fn micro(
    ctx: &mut Ctx,
    templates: Vec<FutRecord>,
    mut ops: Vec<Box<dyn FnMut() -> bool + '_>>,
    items: usize,
) {
    let batches: Vec<u64> = ops
        .iter_mut()
        .zip(&templates)
        .map(|(op, t)| ctx.guarded(t, || calibrate(&mut **op)))
        .collect();
    for rep in 0..ctx.repeat {
        for ((op, t), &batch) in ops.iter_mut().zip(&templates).zip(&batches) {
            let mut rec = t.clone();
            rec.rep = Some(rep);
            rec.batch = Some(batch);
            let (seconds, ok) = ctx.guarded(&rec, || timed_batch(batch, &mut **op));
            rec.seconds = Some(seconds);
            rec.ns_per_item = Some(seconds / items as f64 * 1e9);
            rec.ok = ok;
            if !ok {
                rec.error = Some(format!("a result was not {VALUE}"));
            }
            ctx.emit(rec);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Peer plumbing.

/// The peers' failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fail;

/// A peer future's result.
type PeerRes = Result<u64, Fail>;

/// A futures-rs oneshot receiver as a future of [`PeerRes`] (a dropped sender is a failure).
type SharedLeaf = Shared<
    futures::future::Map<
        futures::channel::oneshot::Receiver<PeerRes>,
        fn(Result<PeerRes, futures::channel::oneshot::Canceled>) -> PeerRes,
    >,
>;

/// A multi-reader or_alt result of the `shared` peer.
type SharedChain = Shared<BoxFuture<'static, PeerRes>>;

/// A tokio oneshot receiver as a future of [`PeerRes`].
type TokioLeaf = futures::future::Map<
    tokio::sync::oneshot::Receiver<PeerRes>,
    fn(Result<PeerRes, tokio::sync::oneshot::error::RecvError>) -> PeerRes,
>;

fn flatten_canceled(r: Result<PeerRes, futures::channel::oneshot::Canceled>) -> PeerRes {
    r.unwrap_or(Err(Fail))
}

fn flatten_recv(r: Result<PeerRes, tokio::sync::oneshot::error::RecvError>) -> PeerRes {
    r.unwrap_or(Err(Fail))
}

/// A completed `shared` future.
fn shared_completed(r: PeerRes) -> SharedLeaf {
    let (tx, rx) = futures::channel::oneshot::channel();
    let _ = tx.send(r);
    let f: fn(_) -> _ = flatten_canceled;
    rx.map(f).shared()
}

/// A completed tokio oneshot receiver.
fn tokio_completed(r: PeerRes) -> TokioLeaf {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _ = tx.send(r);
    let f: fn(_) -> _ = flatten_recv;
    rx.map(f)
}

/// `or_alt` for futures-rs: the first success of `a` and `b`, as a new `Shared` future.
fn shared_or_alt<A, B>(a: A, b: B) -> SharedChain
where
    A: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
    B: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
{
    select_ok([Either::Left(a), Either::Right(b)])
        .map(|r| r.map(|(v, _rest)| v))
        .boxed()
        .shared()
}

/// `or_alt` over tokio oneshots: the first success of `a` and `b`, single-reader.
fn tokio_or_alt<A, B>(a: A, b: B) -> BoxFuture<'static, PeerRes>
where
    A: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
    B: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
{
    select_ok([Either::Left(a), Either::Right(b)])
        .map(|r| r.map(|(v, _rest)| v))
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// or-alt

/// The result of alternative `i` of a chain of `chain` or_alts.
fn alternative_succeeds(i: usize, chain: usize, succeed: Succeed) -> bool {
    match succeed {
        Succeed::First => i == 0,
        Succeed::Last => i == chain,
    }
}

fn or_alt_ito(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| {
        if alternative_succeeds(i, chain, succeed) {
            ito::Future::successful(VALUE)
        } else {
            ito::Future::failed(ito::Failure::NoSuchElement)
        }
    };
    let mut f = alt(0);
    for i in 1..=chain {
        f = f.or_alt(&alt(i));
    }
    black_box(f.wait()) == Ok(VALUE)
}

fn peer_alt(i: usize, chain: usize, succeed: Succeed) -> PeerRes {
    if alternative_succeeds(i, chain, succeed) {
        Ok(VALUE)
    } else {
        Err(Fail)
    }
}

fn or_alt_shared(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| shared_completed(peer_alt(i, chain, succeed));
    let mut f = shared_or_alt(alt(0), alt(1));
    for i in 2..=chain {
        f = shared_or_alt(f, alt(i));
    }
    black_box(f.now_or_never()) == Some(Ok(VALUE))
}

fn or_alt_tokio(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| tokio_completed(peer_alt(i, chain, succeed));
    let mut f = tokio_or_alt(alt(0), alt(1));
    for i in 2..=chain {
        f = tokio_or_alt(f, alt(i));
    }
    black_box(f.now_or_never()) == Some(Ok(VALUE))
}

fn or_alt(ctx: &mut Ctx, imps: &[FutImpl], chains: &[usize], succeeds: &[Succeed]) {
    for &chain in chains {
        for &succeed in succeeds {
            let name = match succeed {
                Succeed::First => "first",
                Succeed::Last => "last",
            };
            let mut templates = Vec::new();
            let mut ops: Vec<Box<dyn FnMut() -> bool>> = Vec::new();
            for &imp in imps {
                let mut t = template("or-alt", imp, name.to_owned(), chain);
                t.chain = Some(chain);
                t.succeed = Some(name);
                templates.push(t);
                ops.push(match imp {
                    FutImpl::Ito => Box::new(move || or_alt_ito(chain, succeed)),
                    FutImpl::Shared => Box::new(move || or_alt_shared(chain, succeed)),
                    FutImpl::Tokio => Box::new(move || or_alt_tokio(chain, succeed)),
                    FutImpl::Mutex => {
                        unreachable!("checked: mutex is the peer of philosophers only")
                    }
                });
            }
            micro(ctx, templates, ops, chain);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// read-seq

fn read_seq(ctx: &mut Ctx, imps: &[FutImpl], reads: &[usize]) {
    // One completed future per impl, read by every operation.
    let ito_future = {
        let p = ito::Promise::new();
        let f = p.future();
        p.try_success(VALUE);
        f
    };
    let shared_future = {
        let (tx, rx) = futures::channel::oneshot::channel::<u64>();
        let _ = tx.send(VALUE);
        let s = rx.shared();
        // The first poll moves the value from the channel into the Shared.
        assert_eq!(s.clone().now_or_never(), Some(Ok(VALUE)));
        s
    };
    for &n in reads {
        let mut templates = Vec::new();
        let mut ops: Vec<Box<dyn FnMut() -> bool + '_>> = Vec::new();
        for &imp in imps {
            let mut t = template("read-seq", imp, String::new(), n);
            t.reads = Some(n);
            templates.push(t);
            match imp {
                FutImpl::Ito => {
                    let f = &ito_future;
                    ops.push(Box::new(move || {
                        let mut sum = 0u64;
                        for _ in 0..n {
                            sum += black_box(f).wait().unwrap_or(0);
                        }
                        sum == VALUE * n as u64
                    }));
                }
                FutImpl::Shared => {
                    let s = &shared_future;
                    ops.push(Box::new(move || {
                        let mut sum = 0u64;
                        for _ in 0..n {
                            sum += match black_box(s).clone().now_or_never() {
                                Some(Ok(v)) => v,
                                _ => 0,
                            };
                        }
                        sum == VALUE * n as u64
                    }));
                }
                FutImpl::Tokio => unreachable!("checked: tokio does not fit read-seq"),
                FutImpl::Mutex => unreachable!("checked: mutex is the peer of philosophers only"),
            }
        }
        micro(ctx, templates, ops, n);
    }
}

// ---------------------------------------------------------------------------------------------
// A count-down latch that remembers when it reached zero.

struct Latch {
    left: AtomicUsize,
    wrong: AtomicBool,
    done_at: Mutex<Option<Instant>>,
    cv: Condvar,
}

impl Latch {
    fn new(n: usize) -> Arc<Latch> {
        Arc::new(Latch {
            left: AtomicUsize::new(n),
            wrong: AtomicBool::new(false),
            done_at: Mutex::new(None),
            cv: Condvar::new(),
        })
    }

    /// One reader or callback is done; `right` says whether it saw [`VALUE`].
    fn count_down(&self, right: bool) {
        if !right {
            self.wrong.store(true, Ordering::Relaxed);
        }
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let now = Instant::now();
            *self.done_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            self.cv.notify_all();
        }
    }

    /// Waits for zero: when it was reached, and whether everyone saw the right value.
    fn wait(&self) -> (Instant, bool) {
        let mut g = self.done_at.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(at) = *g {
                return (at, !self.wrong.load(Ordering::Relaxed));
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What a run with a completer measured.
struct Timed {
    seconds: f64,
    after_complete: Option<f64>,
    ok: bool,
}

// ---------------------------------------------------------------------------------------------
// read-concurrent

/// The writing end of each impl's future.
enum Completer {
    Ito(ito::Promise<u64>),
    Shared(futures::channel::oneshot::Sender<u64>),
    Tokio(tokio::sync::oneshot::Sender<u64>),
}

impl Completer {
    fn complete(self) {
        match self {
            Completer::Ito(p) => {
                p.try_success(VALUE);
            }
            Completer::Shared(tx) => {
                let _ = tx.send(VALUE);
            }
            Completer::Tokio(tx) => {
                let _ = tx.send(VALUE);
            }
        }
    }
}

/// A thread that waits until `started` reaches `readers`, sleeps `delay`, completes, and
/// returns the instant of the completion.
fn completer_thread(
    completer: Completer,
    started: Arc<AtomicUsize>,
    readers: usize,
    delay: Duration,
) -> thread::JoinHandle<Instant> {
    thread::spawn(move || {
        while started.load(Ordering::Acquire) < readers {
            thread::yield_now();
        }
        if !delay.is_zero() {
            thread::sleep(delay);
        }
        let at = Instant::now();
        completer.complete();
        at
    })
}

fn read_concurrent_once(
    pools: &Pools,
    imp: FutImpl,
    mode: Mode,
    readers: usize,
    delay: Duration,
) -> Timed {
    let latch = Latch::new(readers);
    let started = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut threads = Vec::new();
    let mut ito_tasks = Vec::new();
    let completer = match imp {
        FutImpl::Ito => {
            let p = ito::Promise::new();
            let f = p.future();
            let completer = completer_thread(Completer::Ito(p), started.clone(), readers, delay);
            for _ in 0..readers {
                let (f, latch, started) = (f.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => threads.push(thread::spawn(move || {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(f.wait() == Ok(VALUE));
                    })),
                    Mode::Pool => ito_tasks.push(pools.ito().spawn(async move {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(f.await == Ok(VALUE));
                    })),
                }
            }
            completer
        }
        FutImpl::Shared => {
            let (tx, rx) = futures::channel::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer =
                completer_thread(Completer::Shared(tx), started.clone(), readers, delay);
            for _ in 0..readers {
                let (s, latch, started) = (s.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => threads.push(thread::spawn(move || {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(futures::executor::block_on(s) == Ok(VALUE));
                    })),
                    Mode::Pool => pools.shared().spawn_ok(async move {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(s.await == Ok(VALUE));
                    }),
                }
            }
            completer
        }
        FutImpl::Tokio => {
            let (tx, rx) = tokio::sync::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer_thread(Completer::Tokio(tx), started.clone(), readers, delay);
            for _ in 0..readers {
                let (s, latch, started) = (s.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => unreachable!("tokio runs in pool mode only"),
                    Mode::Pool => {
                        pools.tokio().spawn(async move {
                            started.fetch_add(1, Ordering::AcqRel);
                            latch.count_down(s.await == Ok(VALUE));
                        });
                    }
                }
            }
            completer
        }
        FutImpl::Mutex => unreachable!("checked: mutex is the peer of philosophers only"),
    };
    let (done_at, ok) = latch.wait();
    let completed_at = completer.join().expect("the completer panicked");
    for t in threads {
        t.join().expect("a reader panicked");
    }
    drop(ito_tasks);
    Timed {
        seconds: done_at.duration_since(start).as_secs_f64(),
        after_complete: Some(
            done_at
                .saturating_duration_since(completed_at)
                .as_secs_f64(),
        ),
        ok,
    }
}

fn read_concurrent(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    readers: &[usize],
    modes: &[Mode],
    delay: Duration,
) {
    let tokio_skipped = imps.contains(&FutImpl::Tokio) && modes.contains(&Mode::Threads);
    if tokio_skipped {
        eprintln!("note: tokio runs in pool mode only (a tokio oneshot has one reader)");
    }
    for &r in readers {
        for &mode in modes {
            let name = match mode {
                Mode::Threads => "threads",
                Mode::Pool => "pool",
            };
            let imps: Vec<FutImpl> = imps
                .iter()
                .copied()
                .filter(|&i| !(i == FutImpl::Tokio && mode == Mode::Threads))
                .collect();
            let template = |imp| {
                let mut rec = template("read-concurrent", imp, name.to_owned(), r);
                rec.readers = Some(r);
                rec.mode = Some(name);
                rec.delay_us = Some(delay.as_micros() as u64);
                rec.workers = (mode == Mode::Pool).then_some(pools.workers);
                rec
            };
            // Warm-up: one run per impl (threads, pool wake-ups, allocator).
            for &imp in &imps {
                ctx.guarded(&template(imp), || {
                    read_concurrent_once(pools, imp, mode, r, delay)
                });
            }
            for rep in 0..ctx.repeat {
                for &imp in &imps {
                    let mut rec = template(imp);
                    rec.rep = Some(rep);
                    let timed =
                        ctx.guarded(&rec, || read_concurrent_once(pools, imp, mode, r, delay));
                    fill_timed(&mut rec, &timed, r);
                    ctx.emit(rec);
                }
            }
        }
    }
}

fn fill_timed(rec: &mut FutRecord, timed: &Timed, items: usize) {
    rec.seconds = Some(timed.seconds);
    rec.ns_per_item = Some(timed.seconds / items as f64 * 1e9);
    rec.after_complete_s = timed.after_complete;
    rec.ok = timed.ok;
    if !timed.ok {
        rec.error = Some(format!("a reader did not see {VALUE}"));
    }
}

// ---------------------------------------------------------------------------------------------
// first-completed

/// Spins until `deadline`.
fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The busy-wait of future `i`.
fn busy_wait(busy: Busy, t0: Instant, i: usize) {
    let d = Duration::from_micros(500 + i as u64);
    match busy {
        Busy::Deadline => spin_until(t0 + d),
        Busy::Duration => spin_until(Instant::now() + d),
    }
}

/// One repetition of `first-completed`.
struct Race {
    /// Seconds from the first spawn to the result.
    seconds: f64,
    /// The value of the future "first completed of" returned.
    winner: usize,
    /// The future that stamped the earliest end of its busy-wait (taken just before it
    /// completes).
    earliest: usize,
}

/// Future `i`'s busy-wait, then the stamp of its end (nanoseconds since `t0`).
fn busy_and_stamp(busy: Busy, t0: Instant, i: usize, stamps: &[AtomicU64]) -> usize {
    busy_wait(busy, t0, i);
    stamps[i].store(t0.elapsed().as_nanos() as u64, Ordering::Release);
    i
}

fn first_completed_once(pools: &Pools, imp: FutImpl, n: usize, busy: Busy) -> Race {
    let stamps: Arc<[AtomicU64]> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
    let t0 = Instant::now();
    let (seconds, winner) = match imp {
        FutImpl::Ito => {
            let rt = pools.ito();
            let fs: Vec<ito::Future<usize>> = (0..n)
                .map(|i| {
                    let stamps = stamps.clone();
                    rt.spawn_fn(move || busy_and_stamp(busy, t0, i, &stamps))
                })
                .collect();
            let winner = ito::future::first_completed_of(fs.iter().cloned()).wait();
            let seconds = t0.elapsed().as_secs_f64();
            for f in &fs {
                let _ = f.wait();
            }
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Shared => {
            let pool = pools.shared();
            let rxs: Vec<_> = (0..n)
                .map(|i| {
                    let (tx, rx) = futures::channel::oneshot::channel::<usize>();
                    let stamps = stamps.clone();
                    pool.spawn_ok(async move {
                        let _ = tx.send(busy_and_stamp(busy, t0, i, &stamps));
                    });
                    rx
                })
                .collect();
            let (winner, _, rest) = futures::executor::block_on(select_all(rxs));
            let seconds = t0.elapsed().as_secs_f64();
            futures::executor::block_on(futures::future::join_all(rest));
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Tokio => {
            let rt = pools.tokio();
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let stamps = stamps.clone();
                    rt.spawn(async move { busy_and_stamp(busy, t0, i, &stamps) })
                })
                .collect();
            let (winner, _, rest) = futures::executor::block_on(select_all(handles));
            let seconds = t0.elapsed().as_secs_f64();
            futures::executor::block_on(futures::future::join_all(rest));
            (seconds, winner.unwrap_or(usize::MAX))
        }
        FutImpl::Mutex => unreachable!("checked: mutex is the peer of philosophers only"),
    };
    // Every future has completed (and stamped) by now.
    let earliest = (0..n)
        .min_by_key(|&i| stamps[i].load(Ordering::Acquire))
        .expect("n >= 1");
    Race {
        seconds,
        winner,
        earliest,
    }
}

fn first_completed(ctx: &mut Ctx, pools: &Pools, imps: &[FutImpl], ns: &[usize], busy: Busy) {
    let busy_name = match busy {
        Busy::Deadline => "deadline",
        Busy::Duration => "duration",
    };
    for &n in ns {
        let templates: Vec<FutRecord> = imps
            .iter()
            .map(|&imp| {
                let mut t = template("first-completed", imp, busy_name.to_owned(), n);
                t.futures = Some(n);
                t.busy = Some(busy_name);
                t.workers = Some(pools.workers);
                t.reps = Some(ctx.repeat);
                t
            })
            .collect();
        // Warm-up.
        for (&imp, t) in imps.iter().zip(&templates) {
            ctx.guarded(t, || first_completed_once(pools, imp, n, busy));
        }
        let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); imps.len()];
        let mut wins = vec![0u32; imps.len()];
        let mut zero_first = vec![0u32; imps.len()];
        let mut faithful = vec![0u32; imps.len()];
        let mut bad_winner = vec![None; imps.len()];
        for _ in 0..ctx.repeat {
            for (k, (&imp, t)) in imps.iter().zip(&templates).enumerate() {
                let race = ctx.guarded(t, || first_completed_once(pools, imp, n, busy));
                seconds[k].push(race.seconds);
                if race.winner >= n {
                    bad_winner[k] = Some(race.winner);
                }
                wins[k] += u32::from(race.winner == 0);
                zero_first[k] += u32::from(race.earliest == 0);
                faithful[k] += u32::from(race.winner == race.earliest);
            }
        }
        for (k, mut rec) in templates.into_iter().enumerate() {
            let best = seconds[k].iter().copied().fold(f64::INFINITY, f64::min);
            let median = measure::median(&mut seconds[k]).expect("repeat >= 1");
            rec.seconds = Some(median);
            rec.seconds_best = Some(best);
            rec.ns_per_item = Some(median / n as f64 * 1e9);
            rec.wins = Some(wins[k]);
            rec.accuracy = Some(f64::from(wins[k]) / f64::from(ctx.repeat));
            rec.zero_first = Some(zero_first[k]);
            rec.faithful = Some(faithful[k]);
            rec.faithfulness = Some(f64::from(faithful[k]) / f64::from(ctx.repeat));
            rec.ok = bad_winner[k].is_none();
            if let Some(w) = bad_winner[k] {
                rec.error = Some(format!("no future {w} was spawned"));
            }
            ctx.emit(rec);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// callbacks

fn callbacks_once(pools: &Pools, imp: FutImpl, n: usize, delay: Duration) -> Timed {
    let latch = Latch::new(n);
    // Completed before the clock starts (delay 0), or by a thread after `delay`.
    let completer = |c: Completer| {
        if delay.is_zero() {
            c.complete();
            None
        } else {
            Some(thread::spawn(move || {
                thread::sleep(delay);
                let at = Instant::now();
                c.complete();
                at
            }))
        }
    };
    let (start, completer) = match imp {
        FutImpl::Ito => {
            let p = ito::Promise::new();
            let f = p.future();
            let completer = completer(Completer::Ito(p));
            let start = Instant::now();
            for _ in 0..n {
                let latch = latch.clone();
                f.on_complete(move |r| latch.count_down(r == Ok(VALUE)));
            }
            (start, completer)
        }
        FutImpl::Shared => {
            let (tx, rx) = futures::channel::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer(Completer::Shared(tx));
            let start = Instant::now();
            for _ in 0..n {
                let (s, latch) = (s.clone(), latch.clone());
                pools.shared().spawn_ok(async move {
                    latch.count_down(s.await == Ok(VALUE));
                });
            }
            (start, completer)
        }
        FutImpl::Tokio => {
            let (tx, rx) = tokio::sync::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer(Completer::Tokio(tx));
            let start = Instant::now();
            for _ in 0..n {
                let (s, latch) = (s.clone(), latch.clone());
                pools.tokio().spawn(async move {
                    latch.count_down(s.await == Ok(VALUE));
                });
            }
            (start, completer)
        }
        FutImpl::Mutex => unreachable!("checked: mutex is the peer of philosophers only"),
    };
    let (done_at, ok) = latch.wait();
    let completed_at = completer.map(|c| c.join().expect("the completer panicked"));
    Timed {
        seconds: done_at.duration_since(start).as_secs_f64(),
        after_complete: completed_at.map(|at| done_at.saturating_duration_since(at).as_secs_f64()),
        ok,
    }
}

fn callbacks(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    counts: &[usize],
    delays: &[Duration],
) {
    for &n in counts {
        for &delay in delays {
            let name = format!("{}us", delay.as_micros());
            let template = |imp| {
                let mut rec = template("callbacks", imp, name.clone(), n);
                rec.count = Some(n);
                rec.delay_us = Some(delay.as_micros() as u64);
                rec.workers = (imp != FutImpl::Ito).then_some(pools.workers);
                rec
            };
            for &imp in imps {
                ctx.guarded(&template(imp), || callbacks_once(pools, imp, n, delay));
            }
            for rep in 0..ctx.repeat {
                for &imp in imps {
                    let mut rec = template(imp);
                    rec.rep = Some(rep);
                    let timed = ctx.guarded(&rec, || callbacks_once(pools, imp, n, delay));
                    fill_timed(&mut rec, &timed, n);
                    ctx.emit(rec);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// philosophers

/// A fork of the `mutex` peer: `None` on the table, `Some(p)` taken by philosopher p.
type MutexFork = parking_lot::Mutex<Option<usize>>;

/// Philosopher `p` of `forks.len()` tries once to take forks p and p+1 both: `try_lock`s in
/// index order (the lock order the document says Scala's promises would need), and takes
/// both if both are free, else neither.
fn take_both_mutex(forks: &[MutexFork], p: usize) -> bool {
    let q = (p + 1) % forks.len();
    let (lo, hi) = (p.min(q), p.max(q));
    let Some(mut first) = forks[lo].try_lock() else {
        return false;
    };
    if first.is_some() {
        return false;
    }
    let Some(mut second) = forks[hi].try_lock() else {
        return false;
    };
    if second.is_some() {
        return false;
    }
    *first = Some(p);
    *second = Some(p);
    true
}

/// What one round left: who won, and who holds each fork.
struct Round {
    /// Seconds from the creation of the forks to the last philosopher's try.
    seconds: f64,
    won: Vec<bool>,
    holder: Vec<Option<usize>>,
}

/// One round: `n` fresh forks and `n` philosopher tasks on the impl's pool, each trying once.
fn philosophers_round(pools: &Pools, imp: FutImpl, n: usize) -> Round {
    let latch = Latch::new(n);
    let won: Arc<[AtomicBool]> = (0..n).map(|_| AtomicBool::new(false)).collect();
    match imp {
        FutImpl::Ito => {
            let rt = pools.ito();
            let start = Instant::now();
            let forks: Arc<[ito::Promise<usize>]> = (0..n).map(|_| ito::Promise::new()).collect();
            for p in 0..n {
                let (forks, won, latch) = (forks.clone(), won.clone(), latch.clone());
                drop(rt.spawn_fn(move || {
                    let ate =
                        ito::stm::multi_try_success([(&forks[p], p), (&forks[(p + 1) % n], p)]);
                    won[p].store(ate, Ordering::Relaxed);
                    latch.count_down(true);
                }));
            }
            let (done_at, _) = latch.wait();
            Round {
                seconds: done_at.duration_since(start).as_secs_f64(),
                won: won.iter().map(|w| w.load(Ordering::Relaxed)).collect(),
                // A failed fork (none should be) reads as held by nobody who could hold it.
                holder: forks
                    .iter()
                    .map(|f| f.future().value().map(|v| v.unwrap_or(usize::MAX)))
                    .collect(),
            }
        }
        FutImpl::Mutex => {
            let pool = pools.shared();
            let start = Instant::now();
            let forks: Arc<[MutexFork]> = (0..n).map(|_| parking_lot::Mutex::new(None)).collect();
            for p in 0..n {
                let (forks, won, latch) = (forks.clone(), won.clone(), latch.clone());
                pool.spawn_ok(async move {
                    won[p].store(take_both_mutex(&forks, p), Ordering::Relaxed);
                    latch.count_down(true);
                });
            }
            let (done_at, _) = latch.wait();
            Round {
                seconds: done_at.duration_since(start).as_secs_f64(),
                won: won.iter().map(|w| w.load(Ordering::Relaxed)).collect(),
                holder: forks.iter().map(|f| *f.lock()).collect(),
            }
        }
        FutImpl::Shared | FutImpl::Tokio => unreachable!("checked: only ito and mutex fit"),
    }
}

/// Checks that a round was all-or-nothing: every fork taken belongs to one of its two
/// philosophers, who won and holds both his forks; no two neighbours both won; someone won.
/// With `strict` (ito), also that every loser has a neighbour who won. The unforced losses
/// (losers with no winning neighbour), or what is wrong.
fn check_round(won: &[bool], holder: &[Option<usize>], strict: bool) -> Result<u64, String> {
    let n = won.len();
    let right = |p: usize| (p + 1) % n;
    let left = |p: usize| (p + n - 1) % n;
    for (f, h) in holder.iter().enumerate() {
        if let &Some(h) = h {
            if h >= n || (h != f && right(h) != f) {
                return Err(format!("fork {f} went to {h}, who does not sit next to it"));
            }
            if !won[h] {
                return Err(format!("fork {f} went to philosopher {h}, who did not eat"));
            }
        }
    }
    let mut unforced = 0;
    for p in 0..n {
        if won[p] {
            if holder[p] != Some(p) || holder[right(p)] != Some(p) {
                return Err(format!("philosopher {p} ate without both his forks"));
            }
            if won[right(p)] {
                return Err(format!("neighbours {p} and {} both ate", right(p)));
            }
        } else if !won[left(p)] && !won[right(p)] {
            if strict {
                return Err(format!("philosopher {p} lost though no neighbour ate"));
            }
            unforced += 1;
        }
    }
    if !won.contains(&true) {
        return Err("nobody ate".to_owned());
    }
    Ok(unforced)
}

/// What a run of `philosophers` measured.
struct PhiloRun {
    seconds: f64,
    rounds_ok: usize,
    winners: usize,
    unforced: u64,
    /// The first round that was not all-or-nothing, and why.
    first_error: Option<String>,
}

fn philosophers_once(pools: &Pools, imp: FutImpl, n: usize, rounds: usize) -> PhiloRun {
    let mut run = PhiloRun {
        seconds: 0.0,
        rounds_ok: 0,
        winners: 0,
        unforced: 0,
        first_error: None,
    };
    for r in 0..rounds {
        let round = philosophers_round(pools, imp, n);
        run.seconds += round.seconds;
        run.winners += round.won.iter().filter(|&&w| w).count();
        match check_round(&round.won, &round.holder, imp == FutImpl::Ito) {
            Ok(unforced) => {
                run.rounds_ok += 1;
                run.unforced += unforced;
            }
            Err(e) => {
                run.first_error
                    .get_or_insert_with(|| format!("round {r}: {e}"));
            }
        }
    }
    run
}

fn philosophers(ctx: &mut Ctx, pools: &Pools, imps: &[FutImpl], ns: &[usize], rounds: usize) {
    let variant = format!("{rounds} rounds");
    for &n in ns {
        let template = |imp| {
            let mut rec = template("philosophers", imp, variant.clone(), n);
            rec.philosophers = Some(n);
            rec.rounds = Some(rounds);
            rec.workers = Some(pools.workers);
            rec
        };
        // Warm-up: one run per impl.
        for &imp in imps {
            ctx.guarded(&template(imp), || philosophers_once(pools, imp, n, rounds));
        }
        for rep in 0..ctx.repeat {
            for &imp in imps {
                let mut rec = template(imp);
                rec.rep = Some(rep);
                let run = ctx.guarded(&rec, || philosophers_once(pools, imp, n, rounds));
                rec.seconds = Some(run.seconds);
                rec.ns_per_item = Some(run.seconds / (rounds * n) as f64 * 1e9);
                rec.rounds_ok = Some(run.rounds_ok);
                rec.winners_per_round = Some(run.winners as f64 / rounds as f64);
                rec.unforced_losses = Some(run.unforced);
                rec.ok = run.rounds_ok == rounds;
                if let Some(e) = run.first_error {
                    rec.error = Some(format!(
                        "{} of {rounds} rounds were not all-or-nothing; first: {e}",
                        rounds - run.rounds_ok
                    ));
                }
                ctx.emit(rec);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Summary

/// The human summary printed on stderr at the end.
fn summary(
    bench: &str,
    records: &[FutRecord],
    imps: &[FutImpl],
    workers: usize,
    repeat: u32,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let first_completed = bench == "first-completed";
    let philosophers = bench == "philosophers";
    let what = if first_completed {
        "median µs to the first result over {repeat} repetitions, accuracy = future 0 won"
    } else if philosophers {
        "median µs for all the rounds of a run over {repeat} runs, win = mean winners per round"
    } else {
        "median µs per operation over {repeat} runs"
    };
    let _ = writeln!(
        s,
        "futures {bench} summary ({}; ito/peer < 1: ito is faster)",
        what.replace("{repeat}", &repeat.to_string())
    );
    let mut header = format!("{:<10} {:>6}", "variant", "n");
    for imp in imps {
        let _ = write!(header, " {:>11}", format!("{} µs", imp.name()));
    }
    for imp in imps.iter().skip(1) {
        if imps[0] == FutImpl::Ito {
            let _ = write!(header, " {:>10}", format!("ito/{}", imp.name()));
        }
    }
    if first_completed {
        for imp in imps {
            let _ = write!(header, " {:>10}", format!("acc {}", imp.name()));
        }
    }
    if philosophers {
        for imp in imps {
            let _ = write!(header, " {:>10}", format!("win {}", imp.name()));
        }
    }
    let _ = writeln!(s, "{header}");
    // Keys in the order the records came.
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in records {
        let k = (r.variant.clone(), r.param);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let median_of = |variant: &str, param: usize, imp: FutImpl| -> Option<f64> {
        let mut v: Vec<f64> = records
            .iter()
            .filter(|r| r.ok && r.variant == variant && r.param == param && r.imp == imp.name())
            .filter_map(|r| r.seconds)
            .collect();
        measure::median(&mut v)
    };
    let of_runs = |variant: &str, param: usize, imp: FutImpl| -> Vec<&FutRecord> {
        records
            .iter()
            .filter(|r| r.variant == variant && r.param == param && r.imp == imp.name())
            .collect()
    };
    let accuracy_of = |variant: &str, param: usize, imp: FutImpl| -> Option<f64> {
        records
            .iter()
            .find(|r| r.variant == variant && r.param == param && r.imp == imp.name())
            .and_then(|r| r.accuracy)
    };
    for (variant, param) in &keys {
        let meds: Vec<Option<f64>> = imps
            .iter()
            .map(|&i| median_of(variant, *param, i))
            .collect();
        let mut line = format!("{variant:<10} {param:>6}");
        for m in &meds {
            let _ = match m {
                Some(v) => write!(line, " {:>11.3}", v * 1e6),
                None => write!(line, " {:>11}", "-"),
            };
        }
        if imps[0] == FutImpl::Ito {
            for m in meds.iter().skip(1) {
                let _ = match (meds[0], m) {
                    (Some(a), Some(b)) => write!(line, " {:>10.3}", a / b),
                    _ => write!(line, " {:>10}", "-"),
                };
            }
        }
        if first_completed {
            for &imp in imps {
                let _ = match accuracy_of(variant, *param, imp) {
                    Some(a) => write!(line, " {:>10.2}", a),
                    None => write!(line, " {:>10}", "-"),
                };
            }
        }
        if philosophers {
            for &imp in imps {
                let runs = of_runs(variant, *param, imp);
                let wins: Vec<f64> = runs.iter().filter_map(|r| r.winners_per_round).collect();
                let _ = if wins.is_empty() {
                    write!(line, " {:>10}", "-")
                } else {
                    write!(
                        line,
                        " {:>10.2}",
                        wins.iter().sum::<f64>() / wins.len() as f64
                    )
                };
            }
        }
        let _ = writeln!(s, "{line}");
    }
    if philosophers {
        let _ = writeln!(
            s,
            "all-or-nothing rounds / rounds, and unforced losses (a loser with no winning \
             neighbour) per round, over every run:"
        );
        for (variant, param) in &keys {
            let mut line = format!("{variant:<10} {param:>6}");
            for &imp in imps {
                let runs = of_runs(variant, *param, imp);
                let ok: usize = runs.iter().filter_map(|r| r.rounds_ok).sum();
                let rounds: usize = runs.iter().filter_map(|r| r.rounds).sum();
                let unforced: u64 = runs.iter().filter_map(|r| r.unforced_losses).sum();
                let cell = format!(
                    "{} {ok}/{rounds} {:.2}",
                    imp.name(),
                    unforced as f64 / rounds.max(1) as f64
                );
                let _ = write!(line, "  {cell:<24}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    if records.iter().any(|r| r.after_complete_s.is_some()) {
        let _ = writeln!(
            s,
            "from the completion to the last read or callback (median µs; the wake-ups):"
        );
        let after_of = |variant: &str, param: usize, imp: FutImpl| -> Option<f64> {
            let mut v: Vec<f64> = records
                .iter()
                .filter(|r| r.ok && r.variant == variant && r.param == param && r.imp == imp.name())
                .filter_map(|r| r.after_complete_s)
                .collect();
            measure::median(&mut v)
        };
        for (variant, param) in &keys {
            let meds: Vec<Option<f64>> =
                imps.iter().map(|&i| after_of(variant, *param, i)).collect();
            if meds.iter().all(Option::is_none) {
                continue;
            }
            let mut line = format!("{variant:<10} {param:>6}");
            for m in &meds {
                let _ = match m {
                    Some(v) => write!(line, " {:>11.3}", v * 1e6),
                    None => write!(line, " {:>11}", "-"),
                };
            }
            if imps[0] == FutImpl::Ito {
                for m in meds.iter().skip(1) {
                    let _ = match (meds[0], m) {
                        (Some(a), Some(b)) => write!(line, " {:>10.3}", a / b),
                        _ => write!(line, " {:>10}", "-"),
                    };
                }
            }
            let _ = writeln!(s, "{line}");
        }
    }
    if first_completed {
        let _ = writeln!(
            s,
            "accuracy / 0-first / faithful (fractions of the repetitions: future 0 won / future 0 \
             ended its busy-wait first, the machine's doing / the winner ended its busy-wait \
             first, first-completed's doing):"
        );
        for (variant, param) in &keys {
            let mut line = format!("{variant:<10} {param:>6}");
            for &imp in imps {
                let rec = records
                    .iter()
                    .find(|r| &r.variant == variant && r.param == *param && r.imp == imp.name());
                let cell = match rec {
                    Some(r) => {
                        let reps = f64::from(r.reps.unwrap_or(1).max(1));
                        format!(
                            "{} {:.2}/{:.2}/{:.2}",
                            imp.name(),
                            r.accuracy.unwrap_or(f64::NAN),
                            f64::from(r.zero_first.unwrap_or(0)) / reps,
                            r.faithfulness.unwrap_or(f64::NAN)
                        )
                    }
                    None => format!("{} -", imp.name()),
                };
                let _ = write!(line, "  {cell:<22}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    if first_completed && imps.contains(&FutImpl::Ito) {
        let at60 = keys
            .iter()
            .find(|(_, p)| *p == 60)
            .and_then(|(v, p)| accuracy_of(v, *p, FutImpl::Ito));
        match at60 {
            Some(a) if workers == 2 => {
                let verdict = if a >= 0.95 { "met" } else { "NOT met" };
                let _ = writeln!(
                    s,
                    "  ito accuracy at 60 futures on 2 workers: {a:.2} (>= 0.95: {verdict})"
                );
            }
            Some(a) => {
                let _ = writeln!(
                    s,
                    "  ito accuracy at 60 futures on {workers} workers: {a:.2} (the issue's \
                     criterion is for 2 workers)"
                );
            }
            None => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_parse() {
        assert_eq!(parse_delay("0"), Ok(Duration::ZERO));
        assert_eq!(parse_delay("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_delay("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_delay("2s"), Ok(Duration::from_secs(2)));
        assert!(parse_delay("5").is_err());
        assert!(parse_delay("-1ms").is_err());
        assert!(parse_delay("xms").is_err());
    }

    #[test]
    fn every_or_alt_chain_reads_the_successful_alternative() {
        for succeed in [Succeed::First, Succeed::Last] {
            for chain in [1, 2, 10] {
                assert!(or_alt_ito(chain, succeed), "ito {chain} {succeed:?}");
                assert!(or_alt_shared(chain, succeed), "shared {chain} {succeed:?}");
                assert!(or_alt_tokio(chain, succeed), "tokio {chain} {succeed:?}");
            }
        }
    }

    #[test]
    fn first_completed_finds_the_first_on_every_impl() {
        let imps = [FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio];
        let pools = Pools::new(&imps, 2).unwrap();
        for imp in imps {
            for busy in [Busy::Deadline, Busy::Duration] {
                let race = first_completed_once(&pools, imp, 4, busy);
                assert!(race.winner < 4, "{imp:?}");
                assert!(race.earliest < 4, "{imp:?}");
                assert!(race.seconds >= 500e-6, "{imp:?}: {}", race.seconds);
            }
        }
    }

    #[test]
    fn check_round_finds_what_is_not_all_or_nothing() {
        let (t, f) = (true, false);
        // 5 philosophers: 0 and 2 ate (forks 0, 1 and 2, 3), fork 4 is on the table.
        let holder = [Some(0), Some(0), Some(2), Some(2), None];
        assert_eq!(check_round(&[t, f, t, f, f], &holder, true), Ok(0));
        // 0 alone ate: 3 lost with no winning neighbour (forks 3 and 4 on the table).
        let alone = [Some(0), Some(0), None, None, None];
        assert_eq!(check_round(&[t, f, f, f, f], &alone, false), Ok(2));
        assert!(check_round(&[t, f, f, f, f], &alone, true).is_err());
        // A fork taken by a loser, a winner with one fork, a fork with a stranger, neighbours
        // who both ate, nobody who ate.
        let half = [Some(0), Some(0), Some(2), None, None];
        assert!(check_round(&[t, f, f, f, f], &half, false).is_err());
        assert!(check_round(&[t, f, t, f, f], &half, false).is_err());
        let stranger = [Some(0), Some(0), Some(4), None, None];
        assert!(check_round(&[t, f, f, f, t], &stranger, false).is_err());
        let both = [Some(0), Some(1), Some(1), None, None];
        assert!(check_round(&[t, t, f, f, f], &both, false).is_err());
        assert!(check_round(&[f; 5], &[None; 5], false).is_err());
    }

    #[test]
    fn philosopher_rounds_are_all_or_nothing_on_both_impls() {
        let imps = [FutImpl::Ito, FutImpl::Mutex];
        let pools = Pools::new(&imps, 2).unwrap();
        for imp in imps {
            for n in [2, 3, 7] {
                let run = philosophers_once(&pools, imp, n, 20);
                assert_eq!(run.rounds_ok, 20, "{imp:?} {n}: {:?}", run.first_error);
                assert!(
                    run.winners >= 20 && run.winners <= 20 * (n / 2),
                    "{imp:?} {n}"
                );
                assert!(run.seconds > 0.0);
            }
        }
    }

    #[test]
    fn a_mutex_philosopher_takes_both_forks_or_neither() {
        let fresh =
            || -> Vec<MutexFork> { (0..3).map(|_| parking_lot::Mutex::new(None)).collect() };
        let forks = fresh();
        assert!(take_both_mutex(&forks, 2)); // forks 2 and 0
        assert!(!take_both_mutex(&forks, 0)); // fork 0 is taken: fork 1 stays
        assert!(!take_both_mutex(&forks, 1)); // fork 2 is taken: fork 1 stays
        assert_eq!(
            forks.iter().map(|f| *f.lock()).collect::<Vec<_>>(),
            [Some(2), None, Some(2)]
        );
        // A fork locked for a moment by a neighbour: the try fails, and takes nothing.
        let forks = fresh();
        let held = forks[1].lock();
        assert!(!take_both_mutex(&forks, 0));
        drop(held);
        assert_eq!(
            forks.iter().map(|f| *f.lock()).collect::<Vec<_>>(),
            [None; 3]
        );
        assert!(take_both_mutex(&forks, 0));
    }

    #[test]
    fn concurrent_readers_and_callbacks_all_see_the_value() {
        let imps = [FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio];
        let pools = Pools::new(&imps, 2).unwrap();
        for imp in imps {
            let modes: &[Mode] = if imp == FutImpl::Tokio {
                &[Mode::Pool]
            } else {
                &[Mode::Threads, Mode::Pool]
            };
            for &mode in modes {
                let t = read_concurrent_once(&pools, imp, mode, 5, Duration::from_micros(100));
                assert!(t.ok, "{imp:?} {mode:?}");
                assert!(t.seconds >= 100e-6);
            }
            for delay in [Duration::ZERO, Duration::from_micros(100)] {
                let t = callbacks_once(&pools, imp, 7, delay);
                assert!(t.ok, "{imp:?} {delay:?}");
                assert_eq!(t.after_complete.is_some(), !delay.is_zero());
            }
        }
    }
}
