//! `ito-bench ping-pong` and `ito-bench fan-in`: the cost of messages between processes,
//! against tokio's unbounded `mpsc` channels.
//!
//! - `ping-pong --rounds N`: two processes pass a number back and forth N times (one round
//!   trip: a send each way, each waking the other). ito: two `ito::process` processes; tokio:
//!   two tasks and two `mpsc::unbounded_channel`s. Reported: nanoseconds per round trip.
//! - `fan-in --senders S --messages N`: S processes each send N messages to one receiver as
//!   fast as they can; the receiver checks that every sender's messages arrive complete and
//!   in order. ito: processes and a mailbox; tokio: tasks and one `mpsc::unbounded_channel`.
//!   Reported: messages per second, from the first spawn to the last message received.
//!
//! ito runs on an `ito::Runtime` of `--workers` workers; tokio on a current-thread runtime and
//! on a multi-thread runtime of `--workers` workers, and the summary compares ito with
//! tokio's best. Runs are interleaved (repetition, impl); one JSON line each.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use ito::process::{self, Mailbox, Pid};
use serde::Serialize;

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, CpuTime, SharedWatchdog, median};

/// Which implementation passes the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum MsgImpl {
    /// `ito::process`.
    Ito,
    /// tokio tasks and `mpsc::unbounded_channel` (current-thread and multi-thread).
    Tokio,
}

/// Options both experiments take.
#[derive(Args, Debug)]
pub(crate) struct Common {
    /// The common options; their defaults are [`DEFAULTS`] (repetitions interleaved).
    #[command(flatten)]
    pub(crate) base: CommonArgs<MsgImpl>,
    /// A note stored in every record (for example, how busy the machine was).
    #[arg(long)]
    note: Option<String>,
}

/// Arguments of `ping-pong`.
#[derive(Args, Debug)]
#[command(about = "Two processes pass a number back and forth: time per round trip, vs tokio mpsc")]
pub(crate) struct PingPongArgs {
    /// Round trips per run.
    #[arg(long, default_value_t = 1_000_000)]
    rounds: u64,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `fan-in`.
#[derive(Args, Debug)]
#[command(about = "S processes flood one receiver: messages per second, vs tokio mpsc")]
pub(crate) struct FanInArgs {
    /// Sending processes.
    #[arg(long, default_value_t = 8)]
    senders: u32,
    /// Messages per sender.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u32,
    #[command(flatten)]
    common: Common,
}

/// One run, printed as one JSON line.
#[derive(Clone, Debug, Serialize)]
struct MsgRecord {
    experiment: &'static str,
    #[serde(rename = "impl")]
    imp: &'static str,
    /// tokio's runtime flavour.
    #[serde(skip_serializing_if = "Option::is_none")]
    flavor: Option<&'static str>,
    workers: usize,
    /// ping-pong: round trips.
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds: Option<u64>,
    /// fan-in: senders.
    #[serde(skip_serializing_if = "Option::is_none")]
    senders: Option<u32>,
    /// fan-in: messages per sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<u32>,
    seconds: f64,
    /// CPU time of the process (every thread; the other runtimes' idle workers included)
    /// during the run, which the run's `seconds` are part of.
    #[serde(flatten)]
    cpu: CpuTime,
    /// ping-pong: nanoseconds per round trip.
    #[serde(skip_serializing_if = "Option::is_none")]
    ns_per_round_trip: Option<f64>,
    /// fan-in: messages received per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    msgs_per_s: Option<f64>,
    commit: String,
    nproc: usize,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// A configuration of one run: the impl, and tokio's flavour.
#[derive(Clone, Copy, PartialEq)]
enum Runner {
    Ito,
    TokioCurrent,
    TokioMulti,
}

impl Runner {
    fn imp(self) -> &'static str {
        match self {
            Runner::Ito => "ito",
            _ => "tokio",
        }
    }
    fn flavor(self) -> Option<&'static str> {
        match self {
            Runner::Ito => None,
            Runner::TokioCurrent => Some("current-thread"),
            Runner::TokioMulti => Some("multi-thread"),
        }
    }
}

/// The runtimes of one command, built once.
struct Runtimes {
    ito: ito::Runtime,
    current: tokio::runtime::Runtime,
    multi: tokio::runtime::Runtime,
    workers: usize,
}

impl Runtimes {
    fn new(workers: usize) -> Result<Self, String> {
        Ok(Runtimes {
            ito: ito::Runtime::builder()
                .workers(workers)
                .build()
                .map_err(|e| format!("cannot start ito: {e}"))?,
            current: tokio::runtime::Builder::new_current_thread()
                .build()
                .map_err(|e| format!("cannot start tokio: {e}"))?,
            multi: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .build()
                .map_err(|e| format!("cannot start tokio: {e}"))?,
            workers,
        })
    }

    /// Runs `fut` on tokio's runtime of `runner` (on a worker for multi-thread).
    fn tokio<T: Send + 'static>(
        &self,
        runner: Runner,
        fut: impl std::future::Future<Output = T> + Send + 'static,
    ) -> T {
        match runner {
            Runner::TokioCurrent => self.current.block_on(fut),
            _ => self
                .multi
                .block_on(self.multi.spawn(fut))
                .expect("the benchmark task panicked"),
        }
    }
}

/// What a command runs with: its runners, runtimes, sink and per-run timeout.
struct Setup {
    runners: Vec<Runner>,
    rts: Runtimes,
    sink: measure::Sink,
    timeout: Duration,
    repeat: u32,
}

/// The defaults of the common options (ping-pong and fan-in).
pub(crate) const DEFAULTS: Defaults<'static, MsgImpl> = Defaults {
    imps: &[MsgImpl::Ito, MsgImpl::Tokio],
    workers: None,
    repeat: 5,
    timeout_s: 120.0,
};

/// Validates the common options and builds the [`Setup`].
fn setup(common: &Common, file: &str) -> Result<Setup, ExitCode> {
    let c = &common.base;
    let s = c.resolve(DEFAULTS).map_err(|e| crate::usage_error(&e))?;
    let sink = c.sink(file).map_err(|e| crate::usage_error(&e))?;
    let mut runners = Vec::new();
    for &imp in &s.imps {
        match imp {
            MsgImpl::Ito => runners.push(Runner::Ito),
            MsgImpl::Tokio => runners.extend([Runner::TokioCurrent, Runner::TokioMulti]),
        }
    }
    let rts = Runtimes::new(s.workers).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    })?;
    Ok(Setup {
        runners,
        rts,
        sink,
        timeout: s.timeout,
        repeat: s.repeat,
    })
}

/// Runs every runner `repeat` times (interleaved), each under the watchdog; emits each
/// record and prints the summary. `run` returns the seconds, or why the run was wrong.
fn run_all(
    experiment: &'static str,
    common: &Common,
    setup: &Setup,
    mut run: impl FnMut(Runner, &Runtimes) -> Result<f64, String>,
    mut fill: impl FnMut(&mut MsgRecord),
) -> ExitCode {
    let Setup {
        runners,
        rts,
        sink,
        timeout,
        repeat,
    } = setup;
    let timeout = *timeout;
    let watchdog = SharedWatchdog::start();
    let mut records: Vec<MsgRecord> = Vec::new();
    for _ in 0..*repeat {
        for &r in runners.iter() {
            watchdog.arm(timeout, move || {
                eprintln!("error: {experiment} ({}) ran past its timeout", r.imp());
                std::process::exit(1);
            });
            let cpu_before = CpuTime::of_self();
            let outcome = run(r, rts);
            let cpu = CpuTime::of_self().since(cpu_before);
            watchdog.disarm();
            let mut rec = MsgRecord {
                experiment,
                imp: r.imp(),
                flavor: r.flavor(),
                workers: if r == Runner::TokioCurrent {
                    1
                } else {
                    rts.workers
                },
                rounds: None,
                senders: None,
                messages: None,
                seconds: 0.0,
                cpu,
                ns_per_round_trip: None,
                msgs_per_s: None,
                commit: measure::commit(),
                nproc: measure::nproc(),
                ok: true,
                error: None,
                note: common.note.clone(),
            };
            match outcome {
                Ok(s) => rec.seconds = s,
                Err(e) => {
                    rec.ok = false;
                    rec.error = Some(e);
                }
            }
            fill(&mut rec);
            sink.emit_line(&serde_json::to_string(&rec).expect("a record serializes"));
            records.push(rec);
        }
    }
    summarize(experiment, &records);
    if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Medians per runner on stderr, and ito against tokio's best flavour.
fn summarize(experiment: &str, records: &[MsgRecord]) {
    let med = |imp: &str, flavor: Option<&str>| {
        let mut v: Vec<f64> = records
            .iter()
            .filter(|r| r.ok && r.imp == imp && r.flavor == flavor)
            .map(|r| r.seconds)
            .collect();
        median(&mut v)
    };
    eprintln!("{experiment}: median seconds");
    let ito = med("ito", None);
    let cur = med("tokio", Some("current-thread"));
    let multi = med("tokio", Some("multi-thread"));
    for (name, m) in [
        ("ito", ito),
        ("tokio current-thread", cur),
        ("tokio multi-thread", multi),
    ] {
        if let Some(m) = m {
            eprintln!("  {name:<22} {m:.4} s");
        }
    }
    let tokio_best = [cur, multi].into_iter().flatten().reduce(f64::min);
    if let (Some(i), Some(t)) = (ito, tokio_best) {
        eprintln!(
            "  ito time / tokio's best {:.3} (target <= 1: {})",
            i / t,
            if i <= t { "met" } else { "not met" }
        );
    }
}

/// `ito-bench ping-pong`.
pub(crate) fn ping_pong_command(args: &PingPongArgs) -> ExitCode {
    if args.rounds == 0 {
        return crate::usage_error("--rounds must be at least 1");
    }
    let setup = match setup(&args.common, "ping-pong.jsonl") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let rounds = args.rounds;
    run_all(
        "ping-pong",
        &args.common,
        &setup,
        |r, rts| match r {
            Runner::Ito => ping_pong_ito(&rts.ito, rounds),
            _ => rts.tokio(r, ping_pong_tokio(rounds)),
        },
        |rec| {
            rec.rounds = Some(rounds);
            rec.ns_per_round_trip = Some(rec.seconds * 1e9 / rounds as f64);
        },
    )
}

/// Ping-pong between two ito processes.
fn ping_pong_ito(rt: &ito::Runtime, rounds: u64) -> Result<f64, String> {
    let done = ito::Promise::new();
    let result = done.future();
    let pinger_of = ito::Promise::<Pid<u64>>::new();
    let pinger_known = pinger_of.future();
    rt.block_on(async move {
        let ponger = process::spawn(move |mut mb: Mailbox<u64>| async move {
            let pinger = pinger_known.await.expect("the pinger is spawned");
            loop {
                let v = mb.recv().await;
                if v == u64::MAX {
                    return;
                }
                let _ = pinger.send(v + 1);
            }
        });
        let pinger = process::spawn(move |mut mb: Mailbox<u64>| async move {
            let start = Instant::now();
            let mut wrong = None;
            for i in 0..rounds {
                ponger.send(i).expect("the ponger is alive");
                let v = mb.recv().await;
                if v != i + 1 && wrong.is_none() {
                    wrong = Some(format!("round {i}: got {v}"));
                }
            }
            let seconds = start.elapsed().as_secs_f64();
            let _ = ponger.send(u64::MAX);
            let _ = done.success(wrong.map_or(Ok(seconds), Err));
        });
        let _ = pinger_of.success(pinger);
    });
    result
        .wait()
        .map_err(|f| format!("the pinger failed: {f}"))?
}

/// Ping-pong between two tokio tasks over two unbounded channels.
async fn ping_pong_tokio(rounds: u64) -> Result<f64, String> {
    use tokio::sync::mpsc::unbounded_channel;
    let (to_pong, mut pong_rx) = unbounded_channel::<u64>();
    let (to_ping, mut ping_rx) = unbounded_channel::<u64>();
    tokio::spawn(async move {
        while let Some(v) = pong_rx.recv().await {
            let _ = to_ping.send(v + 1);
        }
    });
    let start = Instant::now();
    for i in 0..rounds {
        to_pong.send(i).map_err(|_| "the ponger ended")?;
        let v = ping_rx.recv().await.ok_or("the ponger ended")?;
        if v != i + 1 {
            return Err(format!("round {i}: got {v}"));
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// `ito-bench fan-in`.
pub(crate) fn fan_in_command(args: &FanInArgs) -> ExitCode {
    if args.senders == 0 || args.messages == 0 {
        return crate::usage_error("--senders and --messages must be at least 1");
    }
    let setup = match setup(&args.common, "fan-in.jsonl") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (senders, messages) = (args.senders, args.messages);
    run_all(
        "fan-in",
        &args.common,
        &setup,
        |r, rts| match r {
            Runner::Ito => fan_in_ito(&rts.ito, senders, messages),
            _ => rts.tokio(r, fan_in_tokio(senders, messages)),
        },
        |rec| {
            rec.senders = Some(senders);
            rec.messages = Some(messages);
            if rec.seconds > 0.0 {
                rec.msgs_per_s = Some(f64::from(senders) * f64::from(messages) / rec.seconds);
            }
        },
    )
}

/// The receiver's bookkeeping: the next sequence number expected from each sender.
struct Tally {
    next: Vec<u32>,
    left: u64,
    wrong: Option<String>,
}

impl Tally {
    fn new(senders: u32, messages: u32) -> Self {
        Tally {
            next: vec![0; senders as usize],
            left: u64::from(senders) * u64::from(messages),
            wrong: None,
        }
    }

    /// Counts message `m` (sender in the high half, sequence number in the low half).
    #[inline]
    fn count(&mut self, m: u64) {
        let (s, seq) = ((m >> 32) as usize, m as u32);
        match self.next.get_mut(s) {
            Some(n) if *n == seq => *n += 1,
            _ => {
                if self.wrong.is_none() {
                    self.wrong = Some(format!("sender {s}: got #{seq} out of order"));
                }
            }
        }
        self.left -= 1;
    }

    fn verdict(self, start: Instant) -> Result<f64, String> {
        match self.wrong {
            None => Ok(start.elapsed().as_secs_f64()),
            Some(w) => Err(w),
        }
    }
}

/// S ito processes flood one.
fn fan_in_ito(rt: &ito::Runtime, senders: u32, messages: u32) -> Result<f64, String> {
    let done = ito::Promise::new();
    let result = done.future();
    rt.block_on(async move {
        let start = Instant::now();
        let sink = process::spawn(move |mut mb: Mailbox<u64>| async move {
            let mut tally = Tally::new(senders, messages);
            while tally.left > 0 {
                tally.count(mb.recv().await);
            }
            let _ = done.success(tally.verdict(start));
        });
        for s in 0..senders {
            let sink = sink.clone();
            process::spawn(move |_: Mailbox<()>| async move {
                for i in 0..messages {
                    let _ = sink.send(u64::from(s) << 32 | u64::from(i));
                }
            });
        }
    });
    result
        .wait()
        .map_err(|f| format!("the receiver failed: {f}"))?
}

/// S tokio tasks flood one over an unbounded channel.
async fn fan_in_tokio(senders: u32, messages: u32) -> Result<f64, String> {
    let start = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    for s in 0..senders {
        let tx = tx.clone();
        tokio::spawn(async move {
            for i in 0..messages {
                let _ = tx.send(u64::from(s) << 32 | u64::from(i));
            }
        });
    }
    drop(tx);
    let mut tally = Tally::new(senders, messages);
    while tally.left > 0 {
        tally.count(rx.recv().await.ok_or("a sender vanished")?);
    }
    tally.verdict(start)
}
