//! `ito-bench pool`: document 003's coroutine-pool experiments (Perl Coro's `async` versus
//! `async_pool`, a semaphore-limited pool, and a hand-made pool reading closures from a
//! channel), on ito and on tokio.
//!
//! One *run* spawns `--tasks` T tasks that each (after `--sleep-ms` S, if given) count down a
//! latch, and waits until all have: the document's `Coro::Semaphore->new(1 - $tasks)`, `up` in
//! every task, `down` in the caller. The caller (`--caller`; both by default, each reported on
//! its own line) is a task on the runtime, as the document's main coroutine, or the main
//! thread driving the runtime (`Runtime::block_on` for both impls). The modes:
//!
//! - `spawn`: every task is spawned freely (Coro's `async`). ito: `ito::spawn`; tokio:
//!   `tokio::spawn`.
//! - `pool`: at most `--pool-size` P run at a time, the rest wait without blocking the
//!   caller. ito: [`ito::sync::Pool`] (queued tasks are idle tasks, started in spawn order);
//!   tokio has no pool: each task is spawned and first takes a permit of a
//!   `tokio::sync::Semaphore` of P (the usual way to cap concurrency in tokio).
//! - `bounded`: the caller takes a semaphore permit before each spawn and the task returns
//!   it when done (the document's `$limit->down; async_pool { ...; $limit->up }`): back-pressure
//!   on the caller. ito: `Semaphore::acquire_owned`; tokio: `Semaphore::acquire_owned`.
//! - `channel-pool`: P worker tasks read jobs (boxed futures: the async counterpart of the
//!   document's closures) from a bounded channel of capacity P and run them; the caller sends
//!   the T jobs (`my_async_pool`). ito: `ito::channel::bounded`, whose receivers are cloned
//!   into the workers (MPMC); tokio: `tokio::sync::mpsc` with the one receiver shared behind a
//!   `tokio::sync::Mutex` (tokio's channels have a single consumer). The workers live for the
//!   whole measurement.
//!
//! `--style sync` writes the same experiment as plain blocking code, on ito only (the
//! [`ito_sync`] module): the tasks are `spawn_fn` closures (`Pool::spawn_fn` in `pool`) that
//! sleep with `ito::sleep(d).wait()`; the caller, also plain code, takes the bounded mode's
//! permits with `Semaphore::acquire_blocking`, sends channel-pool's jobs (boxed closures) with
//! `send_blocking`, which the workers take with `recv_blocking`, and waits for the count-down
//! with `Latch::wait_blocking` or `Semaphore::acquire_many_blocking`. On a worker these calls
//! suspend the code's stack instead of holding the thread (`docs/coroutines.md`), which the
//! record's `peak_threads` shows. tokio has no such tasks: its synchronous code runs on
//! blocking-pool threads, one OS thread per task (`ito-bench block --impl threads` is that
//! peer), so `--style sync --impl tokio` is refused.
//!
//! A task is what the document's is, a signal (`async { $sem->up }`), with a sleep before it
//! only when `--sleep-ms` asks for one. The count-down is `ito::sync::Latch` for ito and its
//! tokio equivalent (an atomic count and a `tokio::sync::Notify` the last task signals);
//! `--countdown semaphore` uses the document's semaphore instead (no permits at first, one
//! added by each task, all taken at once by the caller), on both. Either way a run ends only
//! once all T tasks have signalled, so a completed run is a checked one (a lost task hangs the
//! run, which the watchdog reports as a failure).
//!
//! Each (impl, mode, T, S, P) runs in its own child process when the command has several, so
//! that its `peak_rss_bytes` (`VmHWM`) is its own: `rss_growth_bytes` is the peak minus the
//! resident size after the runtime started and before the first run (document 003 reports the
//! `ps -o rss` of 10,000 tasks). `runs_per_s` is `--runs` divided by the time of the timed
//! runs (after a few warm-up runs). One JSON line per configuration; a summary on stderr with
//! ito/tokio ratios and the three criteria where the configuration matches them.

use std::future::Future as StdFuture;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, CpuTime, Sampler, Watchdog, dedup};

/// Arguments of `pool`.
#[derive(Args, Debug)]
#[command(
    about = "Document 003: spawn vs pool vs semaphore-bounded vs channel pool, on ito and tokio",
    long_about = "Document 003 (Perl Coro's async vs async_pool): each run spawns --tasks tasks \
        that each count down a latch (after --sleep-ms, if given), and waits for all. Modes: \
        spawn (free spawning), pool (at most --pool-size running, the rest queued: \
        ito::sync::Pool; tokio: a permit taken inside each task), bounded (the caller takes a \
        semaphore permit before each spawn), channel-pool (--pool-size workers reading jobs \
        from a bounded channel). --style sync writes the tasks and the caller as plain blocking \
        code (spawn_fn, wait(), the _blocking calls; ito only). Each configuration runs in its own child process when there \
        are several, so its peak RSS is its own. One JSON line per configuration on stdout; \
        a summary with ito/tokio ratios and the issue's criteria on stderr. Exit status: 0 if \
        every run was complete, 1 if one failed or timed out, 2 for bad arguments."
)]
pub(crate) struct PoolArgs {
    /// Mode(s), comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "spawn,pool,bounded,channel-pool"
    )]
    mode: Vec<Mode>,
    /// Tasks per run, comma-separated for several.
    #[arg(long, value_delimiter = ',', default_value = "100")]
    tasks: Vec<usize>,
    /// Timed runs per configuration.
    #[arg(long, default_value_t = 1000)]
    runs: u32,
    /// Milliseconds each task sleeps before it counts down, comma-separated for several.
    #[arg(long = "sleep-ms", value_delimiter = ',', default_value = "0")]
    sleep_ms: Vec<u64>,
    /// Tasks running at once in `pool`, `bounded` and `channel-pool` (Coro's default
    /// `$Coro::POOL_SIZE` is 8), comma-separated for several.
    #[arg(long = "pool-size", value_delimiter = ',', default_value = "8")]
    pool_size: Vec<usize>,
    /// The common options; their defaults are [`DEFAULTS`] (`--repeat`: each configuration
    /// that many times, interleaved, each in a child process of its own).
    #[command(flatten)]
    pub(crate) common: CommonArgs<PoolImpl>,
    /// How a run counts its tasks down: a latch (`latch`), or document 003's semaphore
    /// (`semaphore`: no permits at first, one added by each task, all taken at once by the
    /// caller).
    #[arg(long, value_enum, default_value = "latch")]
    countdown: Countdown,
    /// Who spawns and waits, comma-separated for several: a task on the runtime, or the main
    /// thread in `block_on` (both by default: they stress different paths, a worker's own
    /// deque and the injector with a parked outside thread).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "task,main")]
    caller: Vec<Caller>,
    /// How the tasks and the caller are written: `async` (futures) or `sync` (plain blocking
    /// code in `spawn_fn` closures; ito only, and then the default `--impl` is `ito`).
    #[arg(long, value_enum, default_value = "async")]
    style: Style,
    /// Run exactly one configuration in this process (what the parent asks a child to do).
    #[arg(long, hide = true)]
    child: bool,
}

/// How the tasks of a run are started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// Spawn every task (Coro's `async`).
    Spawn,
    /// At most `--pool-size` running, the rest queued without blocking the caller.
    Pool,
    /// The caller takes a semaphore permit before each spawn.
    Bounded,
    /// `--pool-size` workers reading jobs from a bounded channel.
    ChannelPool,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Spawn => "spawn",
            Mode::Pool => "pool",
            Mode::Bounded => "bounded",
            Mode::ChannelPool => "channel-pool",
        }
    }
}

/// How the tasks and the caller are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Style {
    /// Futures: `spawn`, `.await`.
    #[default]
    Async,
    /// Plain blocking code: `spawn_fn` closures, `wait()` and the `_blocking` calls.
    Sync,
}

impl Style {
    fn name(self) -> &'static str {
        match self {
            Style::Async => "async",
            Style::Sync => "sync",
        }
    }

    /// Whether this is the default style, which records leave out (older records have no
    /// `style` field and are all async).
    fn is_async(&self) -> bool {
        *self == Style::Async
    }
}

/// How a run's tasks signal that they are done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Countdown {
    /// ito: `ito::sync::Latch`; tokio: an atomic count and a `Notify`.
    Latch,
    /// Document 003's `Coro::Semaphore->new(1 - $tasks)`: a semaphore of no permits, one
    /// added per task, all taken at once by the caller.
    Semaphore,
}

impl Countdown {
    fn name(self) -> &'static str {
        match self {
            Countdown::Latch => "latch",
            Countdown::Semaphore => "semaphore",
        }
    }
}

/// Who spawns the tasks and waits for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Caller {
    /// A task on the runtime (the document's main coroutine is a coroutine too).
    Task,
    /// The main thread, driving the runtime with `block_on`.
    Main,
}

impl Caller {
    fn name(self) -> &'static str {
        match self {
            Caller::Task => "task",
            Caller::Main => "main",
        }
    }
}

/// Which runtime runs the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PoolImpl {
    /// ito, with `ito::sync` and `ito::channel`.
    Ito,
    /// tokio's multi-thread runtime, with `tokio::sync`.
    Tokio,
}

impl PoolImpl {
    fn name(self) -> &'static str {
        match self {
            PoolImpl::Ito => "ito",
            PoolImpl::Tokio => "tokio",
        }
    }
}

/// One configuration's measurement, printed as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct PoolRecord {
    /// Always `"pool"`.
    experiment: String,
    /// `ito` or `tokio`.
    #[serde(rename = "impl")]
    imp: String,
    /// `spawn`, `pool`, `bounded` or `channel-pool`.
    mode: String,
    /// Tasks per run.
    tasks: usize,
    /// Timed runs.
    runs: u32,
    /// Milliseconds each task slept.
    sleep_ms: u64,
    /// Tasks running at once (`null` for `spawn`).
    pool_size: Option<usize>,
    /// Worker threads of the runtime.
    workers: usize,
    /// `task` (a task on the runtime spawns and waits) or `main` (the main thread, in
    /// `block_on`).
    caller: Caller,
    /// `latch` or `semaphore`.
    countdown: Countdown,
    /// `sync` for plain blocking code; absent for `async`.
    #[serde(default, skip_serializing_if = "Style::is_async")]
    style: Style,
    /// Wall-clock seconds of the timed runs.
    seconds: Option<f64>,
    /// CPU time of the process (every thread, the thread sampler's included) over the same
    /// span.
    #[serde(flatten)]
    cpu: Option<CpuTime>,
    /// `runs / seconds`.
    runs_per_s: Option<f64>,
    /// Peak resident set size of the process (`VmHWM`), bytes.
    peak_rss_bytes: Option<u64>,
    /// Resident set size after the runtime started, before the first run, bytes.
    base_rss_bytes: Option<u64>,
    /// `peak_rss_bytes - base_rss_bytes`.
    rss_growth_bytes: Option<u64>,
    /// Most OS threads of the process during the runs (sampler excluded).
    peak_threads: Option<usize>,
    /// With `--sleep-ms`: how much longer than asked the impl's sleep lasts, in microseconds
    /// (the median of sleeps one after another on a runtime of their own, apart from the
    /// runs): the timer's precision, which bounds what a run of sleeping tasks can show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sleep_overshoot_us: Option<f64>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    commit: String,
    /// CPUs available to the process.
    nproc: usize,
    /// Whether every run completed (its count-down took all `tasks` signals).
    ok: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// One configuration.
#[derive(Clone, Copy, Debug)]
struct Config {
    imp: PoolImpl,
    mode: Mode,
    tasks: usize,
    sleep_ms: u64,
    pool_size: usize,
    runs: u32,
    workers: usize,
    caller: Caller,
    countdown: Countdown,
    style: Style,
}

impl Config {
    fn record(&self) -> PoolRecord {
        PoolRecord {
            experiment: "pool".into(),
            imp: self.imp.name().into(),
            mode: self.mode.name().into(),
            tasks: self.tasks,
            runs: self.runs,
            sleep_ms: self.sleep_ms,
            pool_size: (self.mode != Mode::Spawn).then_some(self.pool_size),
            workers: self.workers,
            caller: self.caller,
            countdown: self.countdown,
            style: self.style,
            seconds: None,
            cpu: None,
            runs_per_s: None,
            peak_rss_bytes: None,
            base_rss_bytes: None,
            rss_growth_bytes: None,
            peak_threads: None,
            sleep_overshoot_us: None,
            commit: measure::commit(),
            nproc: measure::nproc(),
            ok: false,
            error: None,
        }
    }

    /// The arguments that make a child process run this configuration alone.
    fn child_args(&self, timeout_s: f64) -> Vec<String> {
        [
            "pool",
            "--child",
            "--impl",
            self.imp.name(),
            "--mode",
            self.mode.name(),
            "--tasks",
            &self.tasks.to_string(),
            "--sleep-ms",
            &self.sleep_ms.to_string(),
            "--pool-size",
            &self.pool_size.to_string(),
            "--runs",
            &self.runs.to_string(),
            "--workers",
            &self.workers.to_string(),
            "--caller",
            self.caller.name(),
            "--countdown",
            self.countdown.name(),
            "--style",
            self.style.name(),
            "--timeout-s",
            &timeout_s.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }

    fn sleep(&self) -> Option<Duration> {
        (self.sleep_ms > 0).then(|| Duration::from_millis(self.sleep_ms))
    }

    /// Warm-up runs before the clock starts.
    fn warmup(&self) -> u32 {
        (self.runs / 10).clamp(1, 20)
    }
}

/// The defaults of the common options.
pub(crate) const DEFAULTS: Defaults<'static, PoolImpl> = Defaults {
    imps: &[PoolImpl::Ito, PoolImpl::Tokio],
    workers: Some(2),
    repeat: 1,
    timeout_s: 120.0,
};

/// `ito-bench pool`.
pub(crate) fn command(args: &PoolArgs) -> ExitCode {
    let c = &args.common;
    let defaults = match args.style {
        Style::Async => DEFAULTS,
        Style::Sync => Defaults {
            imps: &[PoolImpl::Ito],
            ..DEFAULTS
        },
    };
    let s = match c.resolve(defaults) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    if args.style == Style::Sync && s.imps.contains(&PoolImpl::Tokio) {
        return crate::usage_error(
            "--style sync runs ito only: tokio's synchronous code takes an OS thread per task \
             (ito-bench block --impl threads is that peer)",
        );
    }
    let (workers, repeat, timeout) = (s.workers, s.repeat, s.timeout);
    if args.runs == 0 {
        return crate::usage_error("--runs must be at least 1");
    }
    if args.tasks.contains(&0) {
        return crate::usage_error("--tasks must be at least 1");
    }
    if args.pool_size.contains(&0) {
        return crate::usage_error("--pool-size must be at least 1");
    }
    let mut configs = Vec::new();
    for &tasks in &dedup(&args.tasks) {
        for &sleep_ms in &dedup(&args.sleep_ms) {
            let pool_sizes = dedup(&args.pool_size);
            for &pool_size in &pool_sizes {
                for &mode in &dedup(&args.mode) {
                    // spawn takes no pool size: run it once.
                    if mode == Mode::Spawn && pool_size != pool_sizes[0] {
                        continue;
                    }
                    for &caller in &dedup(&args.caller) {
                        for &imp in &s.imps {
                            configs.push(Config {
                                imp,
                                mode,
                                tasks,
                                sleep_ms,
                                pool_size,
                                runs: args.runs,
                                workers,
                                caller,
                                countdown: args.countdown,
                                style: args.style,
                            });
                        }
                    }
                }
            }
        }
    }
    if args.child {
        let [config] = configs[..] else {
            return crate::usage_error("--child runs exactly one configuration");
        };
        let rec = measure_in_process(config, timeout);
        println!(
            "{}",
            serde_json::to_string(&rec).expect("a PoolRecord serializes")
        );
        return if rec.ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    let sink = match c.sink("pool.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let mut records = Vec::new();
    let in_process = configs.len() == 1 && repeat == 1;
    for config in (0..repeat).flat_map(|_| configs.iter().copied()) {
        let rec = if in_process {
            measure_in_process(config, timeout)
        } else {
            measure_in_child(config, timeout)
        };
        sink.emit_line(&serde_json::to_string(&rec).expect("a PoolRecord serializes"));
        records.push(rec);
    }
    summarize(&records);
    if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Runs `config` in a child process of this binary and reads its record.
fn measure_in_child(config: Config, timeout: Duration) -> PoolRecord {
    let failed = |why: String| {
        let mut rec = config.record();
        rec.error = Some(why);
        rec
    };
    let run = match measure::run_child(
        &config.child_args(timeout.as_secs_f64()),
        timeout + KILL_GRACE,
    ) {
        Ok(run) => run,
        Err(e) => return failed(format!("cannot start a child process: {e}")),
    };
    let rec = run
        .stdout
        .lines()
        .find_map(|l| serde_json::from_str::<PoolRecord>(l.trim()).ok());
    match (rec, run.status) {
        (Some(rec), _) => rec,
        (None, None) => failed("timeout".into()),
        (None, Some(status)) => failed(format!("the child exited with {status}")),
    }
}

/// How long past `--timeout-s` the parent waits for a child's own watchdog.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// Measures `config` in this process.
fn measure_in_process(config: Config, timeout: Duration) -> PoolRecord {
    let mut rec = config.record();
    let watchdog = {
        let late = config.record();
        Watchdog::start(timeout, move || {
            let mut late = late;
            late.error = Some("timeout".into());
            println!(
                "{}",
                serde_json::to_string(&late).expect("a PoolRecord serializes")
            );
            std::process::exit(1);
        })
    };
    let outcome = match (config.imp, config.style) {
        (PoolImpl::Ito, Style::Async) => ito_impl::measure(config),
        (PoolImpl::Ito, Style::Sync) => ito_sync::measure(config),
        (PoolImpl::Tokio, Style::Async) => tokio_impl::measure(config),
        (PoolImpl::Tokio, Style::Sync) => unreachable!("refused by the command"),
    };
    watchdog.finish();
    rec.seconds = Some(outcome.seconds);
    rec.cpu = Some(outcome.cpu);
    rec.runs_per_s = Some(f64::from(config.runs) / outcome.seconds);
    rec.peak_rss_bytes = outcome.peak_rss;
    rec.base_rss_bytes = outcome.base_rss;
    rec.rss_growth_bytes = outcome
        .peak_rss
        .zip(outcome.base_rss)
        .map(|(p, b)| p.saturating_sub(b));
    rec.peak_threads = Some(outcome.peak_threads);
    rec.sleep_overshoot_us = outcome.sleep_overshoot_us;
    // Every run ended with its count-down complete, which takes exactly `tasks` signals.
    rec.ok = true;
    rec
}

/// Sleeps timed to measure a timer's overshoot.
const SLEEP_SAMPLES: usize = 20;

/// The median of how much longer than `d` each of `slept` lasted, in microseconds.
fn overshoot_us(slept: &[Duration], d: Duration) -> f64 {
    let mut over: Vec<f64> = slept
        .iter()
        .map(|s| s.saturating_sub(d).as_secs_f64() * 1e6)
        .collect();
    measure::median(&mut over).unwrap_or(f64::NAN)
}

/// What one configuration measured.
#[derive(Clone)]
struct Outcome {
    /// With a sleep: how much longer than asked the impl's sleep lasts (its timer's
    /// precision), measured apart from the runs.
    sleep_overshoot_us: Option<f64>,
    seconds: f64,
    cpu: CpuTime,
    base_rss: Option<u64>,
    peak_rss: Option<u64>,
    peak_threads: usize,
}

/// The timing frame shared by every impl and style: reset the peak RSS and note the base
/// ([`Frame::start`]), warm up, time the runs ([`Frame::clock`]) with the thread sampler on,
/// read the peaks ([`Frame::finish`]).
struct Frame {
    base_rss: Option<u64>,
    sampler: Sampler,
}

impl Frame {
    fn start() -> Frame {
        measure::reset_peak_rss();
        Frame {
            base_rss: measure::vm_rss_bytes(),
            sampler: Sampler::start(None),
        }
    }

    /// The start of the timed runs.
    fn clock() -> (Instant, CpuTime) {
        (Instant::now(), CpuTime::of_self())
    }

    fn finish(self, (start, cpu_before): (Instant, CpuTime)) -> Outcome {
        let seconds = start.elapsed().as_secs_f64();
        Outcome {
            sleep_overshoot_us: None,
            seconds,
            cpu: CpuTime::of_self().since(cpu_before),
            base_rss: self.base_rss,
            peak_rss: measure::vm_hwm_bytes(),
            peak_threads: self.sampler.finish(),
        }
    }
}

/// [`Frame`] around async runs.
async fn timed<F, Fut>(config: Config, mut run: F) -> Outcome
where
    F: FnMut() -> Fut,
    Fut: StdFuture<Output = ()>,
{
    let frame = Frame::start();
    for _ in 0..config.warmup() {
        run().await;
    }
    let clock = Frame::clock();
    for _ in 0..config.runs {
        run().await;
    }
    frame.finish(clock)
}

/// [`Frame`] around blocking runs.
fn timed_blocking(config: Config, mut run: impl FnMut()) -> Outcome {
    let frame = Frame::start();
    for _ in 0..config.warmup() {
        run();
    }
    let clock = Frame::clock();
    for _ in 0..config.runs {
        run();
    }
    frame.finish(clock)
}

/// A job of `channel-pool`: the async counterpart of the document's closures.
type Job = Pin<Box<dyn StdFuture<Output = ()> + Send>>;

mod ito_impl;
mod ito_sync;
mod summary;
mod tokio_impl;

use summary::summarize;
