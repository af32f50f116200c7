//! The command line of `futures`: one subcommand per benchmark, and the values of its options.

use super::*;

/// Arguments of `futures`.
#[derive(Args, Debug)]
#[command(
    about = "Document 004: the ScalaMeter benchmarks of futures and promises, against peers",
    long_about = "Document 004 (STM-based futures and promises in Scala): its ScalaMeter \
        benchmarks on ito and two peers: shared (futures-rs: a oneshot channel wrapped in \
        Shared, the futures thread pool) and tokio (tokio::sync::oneshot and tokio's \
        runtime, where a single-reader future fits); for philosophers, whose \
        multiTrySuccess neither has, the peer is mutex (forks as try-locked mutexes on the \
        same ito runtime); callbacks also shows ito-inline (ito's on_complete, inline, not \
        compared).\n\n\
        Runs are interleaved: for each parameter value, repetition, impl. One JSON line per \
        run on stdout; a summary (medians, ratios ito/peer) on stderr. Exit status: 0 if \
        every run was right, 1 if one failed, 2 for bad arguments."
)]
pub(crate) struct FuturesArgs {
    #[command(subcommand)]
    pub(super) bench: Bench,
}

/// The benchmarks.
#[derive(Subcommand, Debug)]
pub(super) enum Bench {
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

/// Options every benchmark takes; their defaults are in [`super::defaults_help`] (philosophers:
/// `--repeat` runs of `--rounds` rounds).
pub(super) type Common = crate::common::CommonArgs<FutImpl>;

/// Arguments of `futures or-alt`.
#[derive(Args, Debug)]
pub(super) struct OrAltArgs {
    /// Number(s) of or_alt combinators in the chain (the chain has one more future).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10,20,30,40,50,60,70,80,90,100"
    )]
    pub(super) chain: Vec<usize>,
    /// Which alternative succeeds (all others fail), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "first,last")]
    pub(super) succeed: Vec<Succeed>,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Arguments of `futures read-seq`.
#[derive(Args, Debug)]
pub(super) struct ReadSeqArgs {
    /// Number(s) of reads.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,200,300,400,500,600,700,800,900,1000"
    )]
    pub(super) reads: Vec<usize>,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Arguments of `futures read-concurrent`.
#[derive(Args, Debug)]
pub(super) struct ReadConcurrentArgs {
    /// Number(s) of readers.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60")]
    pub(super) readers: Vec<usize>,
    /// Readers on new OS threads, or tasks on the pool; comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "threads,pool"
    )]
    pub(super) mode: Vec<Mode>,
    /// Time from the last reader's start to the completion (e.g. 1ms, 500us, 0).
    #[arg(long, default_value = "1ms", value_parser = parse_delay)]
    pub(super) delay: Duration,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Arguments of `futures first-completed`.
#[derive(Args, Debug)]
pub(super) struct FirstCompletedArgs {
    /// Number(s) of futures.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60")]
    pub(super) futures: Vec<usize>,
    /// deadline: future i spins until 500+i µs after the first spawn; duration: for 500+i µs
    /// from its own start (see the module documentation).
    #[arg(long, value_enum, default_value = "deadline")]
    pub(super) busy: Busy,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Arguments of `futures callbacks`.
#[derive(Args, Debug)]
pub(super) struct CallbacksArgs {
    /// Number(s) of callbacks.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10,20,30,40,50,60,70,80,90,100"
    )]
    pub(super) count: Vec<usize>,
    /// Delay(s) of the completion, comma-separated: 0 (complete before the callbacks are
    /// attached) or a duration such as 1ms or 500us.
    #[arg(long, value_delimiter = ',', default_value = "0,1ms", value_parser = parse_delay)]
    pub(super) delay: Vec<Duration>,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Arguments of `futures philosophers`.
#[derive(Args, Debug)]
pub(super) struct PhilosophersArgs {
    /// Number(s) of philosophers (and forks), at least 2.
    #[arg(long, value_delimiter = ',', default_value = "3,5,10,20,35,50,65")]
    pub(super) n: Vec<usize>,
    /// Rounds per run (fresh forks each round).
    #[arg(long, default_value_t = 100)]
    pub(super) rounds: usize,
    #[command(flatten)]
    pub(super) common: Common,
}

/// Parses a delay: `0`, or a number with a unit `ns`, `us`, `ms` or `s`.
pub(super) fn parse_delay(s: &str) -> Result<Duration, String> {
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
pub(super) enum FutImpl {
    /// ito::Future / ito::Promise on an ito::Runtime.
    Ito,
    /// futures-rs: Shared over a futures::channel::oneshot, on the futures ThreadPool.
    Shared,
    /// tokio::sync::oneshot on a tokio multi-thread runtime.
    Tokio,
    /// philosophers only: forks as parking_lot mutexes, try-locked in order, on the same
    /// ito::Runtime as ito's philosophers.
    Mutex,
    /// callbacks only, not a peer: ito::Future::on_complete, which runs each callback inline
    /// (on the completing thread) instead of as a pool task like every other series.
    ItoInline,
}

impl FutImpl {
    pub(super) fn name(self) -> &'static str {
        match self {
            FutImpl::Ito => "ito",
            FutImpl::Shared => "shared",
            FutImpl::Tokio => "tokio",
            FutImpl::Mutex => "mutex",
            FutImpl::ItoInline => "ito-inline",
        }
    }
}

/// Which alternative of an or_alt chain succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum Succeed {
    /// The first one (the chain's start).
    First,
    /// The last one added.
    Last,
}

/// Where the readers of `read-concurrent` run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum Mode {
    /// A new OS thread per reader, blocking.
    Threads,
    /// A task per reader on the impl's pool, awaiting.
    Pool,
}

/// How the futures of `first-completed` busy-wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum Busy {
    /// Until 500+i µs after the first spawn.
    Deadline,
    /// For 500+i µs from the task's own start.
    Duration,
}
