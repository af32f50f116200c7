//! `net busy`: how long a connection waits for a worker whose run queue never empties, and
//! what the worker's looks at the I/O driver cost it, at several event intervals.
//!
//! One process per run set. The server is a runtime with one worker (ito's, or tokio's
//! multi-thread runtime with one worker) running `--busy` tasks that each spin `--busy-us`
//! and spawn their successor, so the worker never runs out of tasks and never parks: the
//! only way readiness reaches the echo task is the worker's look at the driver every
//! `event_interval` tasks. The client, on the main thread, is `net load`'s: one connection
//! sending `--bytes` and waiting for them to come back, for `--seconds`. Each run reports the
//! round trips' rate and quantiles and the busy tasks finished per second. The runs of one
//! round go through the implementations and intervals in one order, the next round in the
//! reverse order. The server's threads run on CPU 0 and the client on CPU 1.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::NetImpl;
use super::load::{LoadResult, load_echo};
use super::serve::{echo_ito, echo_tokio};

/// Arguments of `net busy`.
#[derive(Args, Debug)]
pub(crate) struct BusyArgs {
    /// Servers, comma-separated (ito, tokio).
    #[arg(
        long = "impl",
        value_enum,
        value_delimiter = ',',
        default_value = "ito,tokio"
    )]
    imps: Vec<NetImpl>,
    /// Tasks between two looks at the I/O driver, comma-separated.
    #[arg(
        long = "event-interval",
        value_delimiter = ',',
        default_value = "7,31,61,127,255"
    )]
    intervals: Vec<u32>,
    /// Busy tasks kept in the worker's queue.
    #[arg(long, default_value_t = 2)]
    busy: usize,
    /// Microseconds each busy task spins.
    #[arg(long = "busy-us", default_value_t = 2.0)]
    busy_us: f64,
    /// Bytes per message.
    #[arg(long, default_value_t = 64)]
    bytes: usize,
    /// Seconds of each run.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Rounds (each runs every implementation at every interval once).
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

/// One run's result: one JSON line.
#[derive(Debug, Serialize)]
struct Sample {
    experiment: &'static str,
    imp: NetImpl,
    event_interval: u32,
    round: usize,
    busy_per_s: f64,
    #[serde(flatten)]
    load: LoadResult,
}

/// Runs `ito-bench net busy`.
pub(crate) fn run(args: &BusyArgs) -> ExitCode {
    if args.imps.contains(&NetImpl::Go) {
        return crate::usage_error("net busy: --impl takes ito and tokio");
    }
    if args.intervals.contains(&0) {
        return crate::usage_error("net busy: --event-interval must be at least 1");
    }
    if args.busy == 0 || args.bytes == 0 || !(args.busy_us > 0.0 && args.seconds > 0.0) {
        return crate::usage_error(
            "net busy: --busy, --busy-us, --bytes, --seconds must be positive",
        );
    }
    let mut plan: Vec<(NetImpl, u32)> = args
        .imps
        .iter()
        .flat_map(|&i| args.intervals.iter().map(move |&e| (i, e)))
        .collect();
    let mut samples = Vec::new();
    let two_cpus = crate::measure::nproc() >= 2;
    for round in 0..args.repeat {
        for &(imp, interval) in &plan {
            match run_one(args, imp, interval, two_cpus) {
                Ok((busy_per_s, load)) => {
                    let s = Sample {
                        experiment: "net-busy",
                        imp,
                        event_interval: interval,
                        round,
                        busy_per_s,
                        load,
                    };
                    println!("{}", serde_json::to_string(&s).expect("serializes"));
                    samples.push(s);
                }
                Err(e) => {
                    eprintln!("ito-bench net busy: {imp:?} at {interval}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        plan.reverse();
    }
    summarise(&samples);
    ExitCode::SUCCESS
}

/// Prints, per implementation and interval, the medians and ranges of the runs.
fn summarise(samples: &[Sample]) {
    eprintln!(
        "impl   interval  round trips/s (min-max)     p50 us   p99 us   busy tasks/s (min-max)"
    );
    let mut keys: Vec<(NetImpl, u32)> = samples.iter().map(|s| (s.imp, s.event_interval)).collect();
    keys.sort_by_key(|&(i, e)| (i as u8, e));
    keys.dedup();
    for (imp, e) in keys {
        let of = |f: &dyn Fn(&Sample) -> f64| {
            let mut v: Vec<f64> = samples
                .iter()
                .filter(|s| s.imp == imp && s.event_interval == e)
                .map(f)
                .collect();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[0], v[v.len() - 1])
        };
        let rt = of(&|s| s.load.round_trips_per_s);
        let p50 = of(&|s| s.load.p50_us);
        let p99 = of(&|s| s.load.p99_us);
        let busy = of(&|s| s.busy_per_s);
        eprintln!(
            "{:<6} {:>8}  {:>8.0} ({:.0}-{:.0})  {:>8.1} {:>8.1}   {:>9.0} ({:.0}-{:.0})",
            format!("{imp:?}").to_lowercase(),
            e,
            rt.0,
            rt.1,
            rt.2,
            p50.0,
            p99.0,
            busy.0,
            busy.1,
            busy.2
        );
    }
}

/// Spins for `d` (a busy task's work).
fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// What the busy tasks share: their count of finished tasks, and the flag that ends them.
#[derive(Clone)]
struct Busy {
    spin: Duration,
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Busy {
    fn new(us: f64) -> Busy {
        Busy {
            spin: Duration::from_secs_f64(us / 1e6),
            done: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Runs the client against `addr` and counts the busy tasks finished meanwhile.
    fn measure(&self, addr: &str, a: &BusyArgs) -> std::io::Result<(f64, LoadResult)> {
        let (d0, t0) = (self.done.load(Ordering::Relaxed), Instant::now());
        let load = load_echo(addr, 1, a.bytes, a.seconds)?;
        let busy = (self.done.load(Ordering::Relaxed) - d0) as f64 / t0.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        Ok((busy, load))
    }
}

/// A busy task on ito: spins, counts, spawns its successor.
fn busy_ito(b: Busy) {
    drop(ito::spawn(async move {
        spin_for(b.spin);
        b.done.fetch_add(1, Ordering::Relaxed);
        if !b.stop.load(Ordering::Relaxed) {
            busy_ito(b);
        }
    }));
}

/// A busy task on tokio: the same.
fn busy_tokio(b: Busy) {
    drop(tokio::spawn(async move {
        spin_for(b.spin);
        b.done.fetch_add(1, Ordering::Relaxed);
        if !b.stop.load(Ordering::Relaxed) {
            busy_tokio(b);
        }
    }));
}

/// Pins the threads started from now on to CPU 0 (the server's worker) and returns a guard
/// that moves the calling thread (the client) to CPU 1. Apart, the client cannot run on the
/// worker's CPU in the middle of the worker's send, which would hand the worker its next
/// request without a wait, whatever the interval. `two`: the machine has two CPUs or more
/// (counted before any pinning: the count follows the calling thread's affinity).
fn pin_apart(two: bool) -> Result<impl FnOnce() -> Result<(), String>, String> {
    if two {
        super::pin_to_cpu(0)?;
    }
    Ok(move || if two { super::pin_to_cpu(1) } else { Ok(()) })
}

fn run_one(
    a: &BusyArgs,
    imp: NetImpl,
    interval: u32,
    two_cpus: bool,
) -> std::io::Result<(f64, LoadResult)> {
    let busy = Busy::new(a.busy_us);
    let client_cpu = pin_apart(two_cpus).map_err(std::io::Error::other)?;
    match imp {
        NetImpl::Ito => {
            let rt = ito::Runtime::builder()
                .workers(1)
                .event_interval(interval)
                .build()?;
            let l = rt.block_on(ito::net::TcpListener::bind("127.0.0.1:0"))?;
            let addr = l.local_addr()?.to_string();
            let b = busy.clone();
            let n = a.busy;
            rt.block_on(async move {
                for _ in 0..n {
                    busy_ito(b.clone());
                }
            });
            drop(rt.spawn(async move {
                while let Ok((c, _)) = l.accept().await {
                    let _ = c.set_nodelay(true);
                    drop(ito::spawn(echo_ito(c)));
                }
            }));
            client_cpu().map_err(std::io::Error::other)?;
            busy.measure(&addr, a)
        }
        NetImpl::Tokio => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .event_interval(interval)
                .enable_io()
                .build()?;
            let l = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
            let addr = l.local_addr()?.to_string();
            let b = busy.clone();
            let n = a.busy;
            rt.block_on(async move {
                for _ in 0..n {
                    busy_tokio(b.clone());
                }
            });
            rt.spawn(async move {
                while let Ok((c, _)) = l.accept().await {
                    let _ = c.set_nodelay(true);
                    tokio::spawn(echo_tokio(c));
                }
            });
            client_cpu().map_err(std::io::Error::other)?;
            let r = busy.measure(&addr, a);
            rt.shutdown_background();
            r
        }
        NetImpl::Go => unreachable!("checked in run"),
    }
}
