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
//!   `parking_lot::Mutex<Option<usize>>`, tasks on the same `ito::Runtime` as ito's.
//! - `ito-inline`: `callbacks` only, shown beside and compared with nobody: ito's own
//!   callbacks, which run inline instead of as pool tasks (see there).
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
//!   are timed, the delay would hide them). ito: `wait()`; `shared`: `Shared::peek` (the
//!   cheapest read futures-rs has: no clone). tokio does not fit (one reader).
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
//!   delay; the clock runs until the last callback ran (an atomic count-down). Neither peer
//!   has callbacks, so on every side a callback is a task spawned on the impl's pool that
//!   awaits the future and then runs (which is what Scala's `onComplete` does: it schedules
//!   the callback on the execution context): ito `rt.spawn` awaiting a clone of the
//!   `ito::Future`, the peers a `Shared` clone. `ito-inline` is ito's own
//!   [`ito::Future::on_complete`], which runs each callback inline (on the attaching thread
//!   when the future is complete, else on the completing thread): less work than a task, so
//!   it is shown beside and compared with nobody.
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
//!   neither (no waiting: one try, like `multiTrySuccess`); tasks on the same `ito::Runtime`
//!   as ito's philosophers, so that only the taking of the forks differs. After each round (not timed) every fork is read and the round
//!   is checked to be all-or-nothing: every fork taken belongs to one of its two
//!   philosophers, who won and holds both his forks; no two neighbours both won; at least
//!   one won. For ito also: every loser has a neighbour who won (`multi_try_success` fails
//!   only when a fork is taken). A `mutex` loser may have none: `try_lock` fails on a fork a
//!   neighbour holds for a moment before giving it back (`unforced_losses` counts them).
//!   One JSON line per run (all the rounds of one N, one impl): `seconds` for all the
//!   rounds, `ns_per_item` per philosopher's try, `rounds_ok` (must equal `rounds`; else
//!   the process exits with status 1), `winners_per_round` (the mean) and
//!   `unforced_losses`. The time includes spawning N tasks a round on the one pool both use.
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

use crate::common::Defaults;
use crate::measure::{self, CpuTime, SharedWatchdog, Sink, dedup};

/// A timed batch of a micro benchmark lasts at least this long.
const SAMPLE_TARGET: Duration = Duration::from_millis(2);

/// The largest batch of a micro benchmark.
const MAX_BATCH: u64 = 1 << 22;

/// Repetitions of each configuration when `--repeat` is not given (first-completed: races).
const DEFAULT_REPEAT: u32 = 20;

/// Races of first-completed when `--repeat` is not given.
const FIRST_COMPLETED_REPEAT: u32 = 50;

/// The wall-clock limit of a run when `--timeout-s` is not given.
const DEFAULT_TIMEOUT_S: f64 = 60.0;

/// The defaults of the common options, as a line of each benchmark's `--help`.
pub(crate) fn defaults_help() -> String {
    format!(
        "Defaults: --impl every impl that fits the benchmark, --workers the number of CPUs, \
         --repeat {DEFAULT_REPEAT} (first-completed {FIRST_COMPLETED_REPEAT}), --timeout-s \
         {DEFAULT_TIMEOUT_S}."
    )
}

/// The value every future of these benchmarks completes with.
const VALUE: u64 = 42;

mod args;
mod callbacks;
mod first_completed;
mod latch;
mod micro;
mod or_alt;
mod peers;
mod philosophers;
mod read_concurrent;
mod record;
mod summary;
#[cfg(test)]
mod tests;

pub(crate) use args::FuturesArgs;
use args::*;
use callbacks::*;
use first_completed::*;
use latch::*;
use micro::*;
use or_alt::*;
use peers::*;
use philosophers::*;
use read_concurrent::*;
use record::*;
use summary::*;

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
                FutImpl::Ito | FutImpl::Mutex => {
                    if p.ito.is_some() {
                        continue;
                    }
                    p.ito = Some(
                        ito::Runtime::builder()
                            .workers(workers)
                            .build()
                            .map_err(|e| format!("building the ito runtime: {e}"))?,
                    );
                }
                // Runs its callbacks on the completing thread: no pool.
                FutImpl::ItoInline => {}
                FutImpl::Shared => {
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

    /// [`guarded`](Self::guarded), with the CPU time of the process (every thread) that `f`
    /// took.
    fn timed<R>(&self, template: &FutRecord, f: impl FnOnce() -> R) -> (R, CpuTime) {
        let before = CpuTime::of_self();
        let r = self.guarded(template, f);
        (r, CpuTime::of_self().since(before))
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
        Bench::Callbacks(_) => &[
            FutImpl::Ito,
            FutImpl::Shared,
            FutImpl::Tokio,
            FutImpl::ItoInline,
        ],
        Bench::ReadSeq(_) => &[FutImpl::Ito, FutImpl::Shared],
        Bench::ReadConcurrent(a) if !a.mode.contains(&Mode::Pool) => {
            &[FutImpl::Ito, FutImpl::Shared]
        }
        _ => &[FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio],
    };
    let default_repeat = match &args.bench {
        Bench::FirstCompleted(_) => FIRST_COMPLETED_REPEAT,
        _ => DEFAULT_REPEAT,
    };
    let s = match common.resolve(Defaults {
        imps: fits,
        workers: None,
        repeat: default_repeat,
        timeout_s: DEFAULT_TIMEOUT_S,
    }) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let (workers, repeat, timeout) = (s.workers, s.repeat, s.timeout);
    let imps = s.imps;
    if let Some(bad) = imps.iter().find(|i| !fits.contains(i)) {
        let why = match &args.bench {
            Bench::Philosophers(_) => {
                "neither futures-rs nor tokio completes several futures at once; the peer is mutex"
            }
            _ if *bad == FutImpl::Mutex => "mutex is the peer of philosophers only",
            _ if *bad == FutImpl::ItoInline => "ito-inline is a series of callbacks only",
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
    let sink = match common.sink("futures.jsonl") {
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
