//! `ito-bench block`: issue 19's experiment. N synchronous tasks each block in a sleep of D
//! milliseconds; the ideal wall time is D. It shows what a blocking call inside a task costs:
//! a thread (compensation), or a parked goroutine or coroutine.
//!
//! - `ito`: `Runtime::spawn_fn(|| ito::sleep(d).wait())` on a runtime of `--workers` workers,
//!   spawned and waited for from the main thread (outside the runtime).
//! - `go`: `bench/peers/block/` (N goroutines in `time.Sleep`, `GOMAXPROCS=--workers`), run by
//!   its `run.sh`, which prints a JSON line, or a `skipped` line when Go is missing.
//! - `threads`: one OS thread per task (64 KiB stacks), each in `std::thread::sleep`: the
//!   naive peer. It stops at the system's thread limits (`kernel.pid_max`,
//!   `vm.max_map_count`, `ulimit -u`); the record then says how many threads it got.
//!
//! Every run is a child process of its own, so `rss_bytes` (`VmHWM`) is the run's alone;
//! `bytes_per_task` is `(rss_bytes - baseline_rss_bytes) / tasks`, the baseline being the
//! resident set before the first spawn. `peak_threads` is the process's OS thread count, sampled
//! about every millisecond (`/proc/self/task` for ito and threads, not counting the sampler;
//! `Threads:` of `/proc/self/status` for Go, read by one more goroutine), and so is `VmPTE`, the
//! page tables, which the resident set does not count (a stack mapped 8 MiB from the next costs
//! one page-table page of its own). The clock runs from the first spawn to the last task's end.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, PeerRun, Sampler, dedup};

/// Arguments of `block`.
#[derive(Args, Debug)]
#[command(
    about = "Issue 19: N synchronous tasks each blocking in a sleep (ito, Go, threads)",
    long_about = "Issue 19: N synchronous tasks, each blocking in a sleep of --sleep-ms; the \
        ideal time is the sleep. Impls: ito (spawn_fn + sleep(..).wait()), go \
        (bench/peers/block/run.sh; skipped without Go), threads (one OS thread per task). Each \
        run is a child process; one JSON line per run with seconds, peak RSS per task and peak \
        OS threads; a summary on stderr. Exit status: 0 if every run finished every task, 1 \
        otherwise, 2 for bad arguments."
)]
pub(crate) struct BlockArgs {
    /// Number(s) of tasks, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100000")]
    tasks: Vec<u64>,
    /// How long each task sleeps, in milliseconds.
    #[arg(long = "sleep-ms", default_value_t = 100)]
    sleep_ms: u64,
    /// The common options; their defaults are [`DEFAULTS`].
    #[command(flatten)]
    common: CommonArgs<BlockImpl>,
    /// ito's task stack size in KiB (`Builder::task_stack_size`; default: the runtime's, 8 MiB).
    #[arg(long = "task-stack-kib")]
    task_stack_kib: Option<usize>,
    /// A note stored in every record (for example, how busy the machine was).
    #[arg(long)]
    note: Option<String>,
    /// Internal: run one measurement in this process (`--impl` one of ito, threads).
    #[arg(long, hide = true)]
    child: bool,
}

/// Which implementation runs the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BlockImpl {
    /// `spawn_fn` tasks blocking in `ito::sleep(..).wait()`.
    Ito,
    /// Goroutines in `time.Sleep` (`bench/peers/block/block.go`).
    Go,
    /// One OS thread per task in `std::thread::sleep`.
    Threads,
}

impl BlockImpl {
    fn name(self) -> &'static str {
        match self {
            BlockImpl::Ito => "ito",
            BlockImpl::Go => "go",
            BlockImpl::Threads => "threads",
        }
    }
}

/// One run, printed as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BlockRecord {
    /// Always `"block"`.
    experiment: String,
    /// `ito`, `go` or `threads`.
    #[serde(rename = "impl")]
    imp: String,
    /// Tasks started.
    tasks: u64,
    /// Each task's sleep in milliseconds (the ideal wall time).
    sleep_ms: u64,
    /// ito's workers, Go's GOMAXPROCS; absent for threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workers: Option<usize>,
    /// Tasks that finished their sleep (must equal `tasks`).
    #[serde(default)]
    completed: Option<u64>,
    /// Seconds from the first spawn to the last task's end.
    #[serde(default)]
    seconds: Option<f64>,
    /// Peak resident set of the run's process (`VmHWM`), in bytes.
    #[serde(default)]
    rss_bytes: Option<u64>,
    /// Resident set before the first spawn, in bytes.
    #[serde(default)]
    baseline_rss_bytes: Option<u64>,
    /// `(rss_bytes - baseline_rss_bytes) / tasks`.
    #[serde(default)]
    bytes_per_task: Option<f64>,
    /// Peak number of OS threads of the process.
    #[serde(default)]
    peak_threads: Option<u64>,
    /// Page-table memory (`VmPTE`) at its peak less before the first spawn, per task, in bytes:
    /// memory the resident set does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    page_table_bytes_per_task: Option<f64>,
    /// ito's task stack size in bytes when `--task-stack-kib` set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_stack_bytes: Option<usize>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    #[serde(default)]
    commit: String,
    /// CPUs available.
    #[serde(default)]
    nproc: usize,
    /// Whether every task finished (or the impl was skipped).
    ok: bool,
    /// Why the impl did not run (Go is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// `--note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl BlockRecord {
    fn template(imp: BlockImpl, tasks: u64, sleep_ms: u64, workers: usize) -> Self {
        BlockRecord {
            experiment: "block".into(),
            imp: imp.name().into(),
            tasks,
            sleep_ms,
            workers: (imp != BlockImpl::Threads).then_some(workers),
            completed: None,
            seconds: None,
            rss_bytes: None,
            baseline_rss_bytes: None,
            bytes_per_task: None,
            peak_threads: None,
            page_table_bytes_per_task: None,
            task_stack_bytes: None,
            commit: measure::commit(),
            nproc: measure::nproc(),
            ok: false,
            skipped: None,
            error: None,
            note: None,
        }
    }

    fn failed(mut self, error: impl Into<String>) -> Self {
        self.ok = false;
        self.error = Some(error.into());
        self
    }

    /// Fills in what the process measured and judges the run.
    fn measured(mut self, m: PeerLine) -> Self {
        self.completed = Some(m.completed);
        self.seconds = Some(m.seconds);
        self.rss_bytes = Some(m.rss_bytes);
        self.baseline_rss_bytes = Some(m.baseline_rss_bytes);
        self.bytes_per_task =
            Some(m.rss_bytes.saturating_sub(m.baseline_rss_bytes) as f64 / self.tasks as f64);
        self.peak_threads = Some(m.peak_threads);
        self.page_table_bytes_per_task = m.peak_page_table_bytes.map(|peak| {
            peak.saturating_sub(m.baseline_page_table_bytes.unwrap_or(0)) as f64 / self.tasks as f64
        });
        self.ok = m.completed == self.tasks;
        if !self.ok && self.error.is_none() {
            self.error = Some(format!("{} of {} tasks finished", m.completed, self.tasks));
        }
        self
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a BlockRecord always serializes")
    }
}

/// What one process measured: the Go peer's line, and what an in-process run produces.
#[derive(Deserialize)]
struct PeerLine {
    completed: u64,
    seconds: f64,
    rss_bytes: u64,
    baseline_rss_bytes: u64,
    peak_threads: u64,
    /// Peak `VmPTE`, in bytes (absent from an older peer's line).
    #[serde(default)]
    peak_page_table_bytes: Option<u64>,
    /// `VmPTE` before the first spawn, in bytes.
    #[serde(default)]
    baseline_page_table_bytes: Option<u64>,
}

/// The defaults of the common options.
const DEFAULTS: Defaults<'static, BlockImpl> = Defaults {
    imps: &[BlockImpl::Ito, BlockImpl::Go, BlockImpl::Threads],
    workers: None,
    repeat: 1,
    timeout_s: 300.0,
};

/// `ito-bench block`.
pub(crate) fn run(args: &BlockArgs) -> ExitCode {
    let s = match args.common.resolve(DEFAULTS) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let (workers, timeout) = (s.workers, s.timeout);
    if args.tasks.contains(&0) {
        return crate::usage_error("--tasks must be at least 1");
    }
    let (Some(&first_imp), Some(&first_n)) = (s.imps.first(), args.tasks.first()) else {
        return crate::usage_error("--impl and --tasks need at least one value");
    };
    let sleep = Duration::from_millis(args.sleep_ms);
    let Some(stack) = args
        .task_stack_kib
        .map_or(Some(None), |k| k.checked_mul(1024).map(Some))
    else {
        return crate::usage_error("--task-stack-kib is too large");
    };
    if args.child {
        let mut rec = BlockRecord::template(first_imp, first_n, args.sleep_ms, workers);
        let mut builder = ito::Runtime::builder().workers(workers);
        if let Some(bytes) = stack.filter(|_| first_imp == BlockImpl::Ito) {
            builder = builder.task_stack_size(bytes);
            rec.task_stack_bytes = Some(bytes);
        }
        let rec = match first_imp {
            // The runtime starts before the baseline and the clock.
            BlockImpl::Ito => match builder.build() {
                Ok(rt) => in_process(rec, || ito_tasks(&rt, first_n, sleep)),
                Err(e) => rec.failed(format!("cannot start the runtime: {e}")),
            },
            BlockImpl::Threads => in_process(rec, || thread_tasks(first_n, sleep)),
            BlockImpl::Go => return crate::usage_error("--child runs ito or threads only"),
        };
        println!("{}", rec.to_json());
        return if rec.ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let sink = match args.common.sink("block.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let mut records = Vec::new();
    for _ in 0..s.repeat {
        for &n in &dedup(&args.tasks) {
            for &imp in &s.imps {
                let template = BlockRecord::template(imp, n, args.sleep_ms, workers);
                let mut rec = match imp {
                    BlockImpl::Go => go_peer(template, workers, timeout),
                    _ => child(template, workers, args.task_stack_kib, timeout),
                };
                rec.note = args.note.clone();
                sink.emit_line(&rec.to_json());
                records.push(rec);
            }
        }
    }
    summary(&records, workers);
    if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one ito or threads measurement in a child process of this binary.
fn child(
    template: BlockRecord,
    workers: usize,
    task_stack_kib: Option<usize>,
    timeout: Duration,
) -> BlockRecord {
    let mut args: Vec<String> = [
        "block",
        "--child",
        "--impl",
        &template.imp,
        "--tasks",
        &template.tasks.to_string(),
        "--sleep-ms",
        &template.sleep_ms.to_string(),
        "--workers",
        &workers.to_string(),
    ]
    .map(String::from)
    .to_vec();
    if let Some(kib) = task_stack_kib {
        args.extend(["--task-stack-kib".into(), kib.to_string()]);
    }
    let run = match measure::run_child(&args, timeout) {
        Ok(run) => run,
        Err(e) => return template.failed(format!("cannot start child: {e}")),
    };
    match (run.line::<BlockRecord>(), run.status) {
        (Some(rec), Some(_)) => rec,
        (_, None) => template.failed("timeout"),
        (None, Some(st)) => template.failed(format!("child printed no record ({st})")),
    }
}

/// Runs `bench/peers/block/run.sh N SLEEP_MS WORKERS`.
fn go_peer(template: BlockRecord, workers: usize, timeout: Duration) -> BlockRecord {
    let args = [
        template.tasks.to_string(),
        template.sleep_ms.to_string(),
        workers.to_string(),
    ];
    let run = match measure::run_peer_script("block/run.sh", &args, timeout) {
        Ok(PeerRun::Ran(run)) => run,
        Ok(PeerRun::Skipped(reason)) => {
            let mut rec = template;
            rec.ok = true;
            rec.skipped = Some(reason);
            return rec;
        }
        Err(e) => return template.failed(e),
    };
    let Some(status) = run.status else {
        return template.failed("timeout");
    };
    match run.line::<PeerLine>() {
        Some(line) if status.success() => template.measured(line),
        _ => template.failed(format!("block/run.sh printed no result ({status})")),
    }
}

/// Measures `tasks` (which returns how many tasks finished, or why it could not run them) in
/// this process: baseline RSS, wall time, peak RSS and peak threads.
fn in_process(template: BlockRecord, tasks: impl FnOnce() -> (u64, Option<String>)) -> BlockRecord {
    let baseline = measure::vm_rss_bytes().unwrap_or(0);
    let baseline_page_tables = measure::vm_pte_bytes();
    let sampler = Sampler::start_with_page_tables();
    let start = Instant::now();
    let (completed, error) = tasks();
    let seconds = start.elapsed().as_secs_f64();
    let peaks = sampler.finish_peaks();
    let mut rec = template;
    rec.error = error;
    rec.measured(PeerLine {
        completed,
        seconds,
        rss_bytes: measure::vm_hwm_bytes().unwrap_or(0),
        baseline_rss_bytes: baseline,
        peak_threads: peaks.threads as u64,
        peak_page_table_bytes: baseline_page_tables.map(|_| peaks.page_table_bytes),
        baseline_page_table_bytes: baseline_page_tables,
    })
}

/// `n` `spawn_fn` tasks on `rt`, each blocking in `ito::sleep(d).wait()`; returns how many
/// finished.
///
/// The caller waits for all of them on one latch, as the Go peer waits on one `WaitGroup`
/// (waiting on each task's handle in turn would make the main thread park and wake once per
/// task, which the peer does not do).
fn ito_tasks(rt: &ito::Runtime, n: u64, d: Duration) -> (u64, Option<String>) {
    let done = Arc::new(AtomicU64::new(0));
    let Ok(count) = usize::try_from(n) else {
        return (
            0,
            Some(format!("{n} tasks do not fit in this machine's usize")),
        );
    };
    let all = Arc::new(ito::sync::Latch::new(count));
    for _ in 0..n {
        let (done, all) = (Arc::clone(&done), Arc::clone(&all));
        // Detached: the latch, not the task's handle, says when it is done.
        drop(rt.spawn_fn(move || {
            if ito::sleep(d).wait().is_ok() {
                done.fetch_add(1, Ordering::Relaxed);
            }
            all.count_down();
        }));
    }
    let error = all.wait_blocking().err().map(|e| format!("waiting: {e}"));
    let done = done.load(Ordering::Relaxed);
    let error = error.or_else(|| (done < n).then(|| format!("{} tasks failed", n - done)));
    (done, error)
}

/// `n` OS threads (64 KiB stacks) each in `std::thread::sleep(d)`; returns how many finished,
/// and why spawning stopped if it did.
fn thread_tasks(n: u64, d: Duration) -> (u64, Option<String>) {
    let done = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    let mut error = None;
    for i in 0..n {
        let done = Arc::clone(&done);
        let spawned = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                std::thread::sleep(d);
                done.fetch_add(1, Ordering::Relaxed);
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                error = Some(format!("spawned {i} threads, then: {e}"));
                break;
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    (done.load(Ordering::Relaxed), error)
}

/// The summary on stderr: per task count, each impl's median over its complete runs with the
/// range, and issue 19's targets judged on the medians.
fn summary(records: &[BlockRecord], workers: usize) {
    let ns: Vec<u64> = records.iter().map(|r| r.tasks).collect();
    for n in dedup(&ns) {
        let stacks = records
            .iter()
            .find_map(|r| r.task_stack_bytes)
            .map_or(String::new(), |b| {
                format!(" (ito's task stacks {} KiB)", b / 1024)
            });
        eprintln!("block tasks={n}{stacks}:");
        let runs = |imp: &str| -> Vec<&BlockRecord> {
            records
                .iter()
                .filter(|r| r.imp == imp && r.tasks == n && r.ok && r.skipped.is_none())
                .collect()
        };
        let stat = |imp: &str, f: fn(&BlockRecord) -> Option<f64>| -> Option<Stat> {
            let mut v: Vec<f64> = runs(imp).into_iter().filter_map(f).collect();
            let median = measure::median(&mut v)?;
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            Some(Stat {
                median,
                lo,
                hi,
                runs: v.len(),
            })
        };
        for imp in ["ito", "go", "threads"] {
            if let Some(t) = stat(imp, |r| r.seconds) {
                let bytes = stat(imp, |r| r.bytes_per_task).map_or(f64::NAN, |s| s.median);
                let tables = stat(imp, |r| r.page_table_bytes_per_task)
                    .map_or(String::new(), |s| {
                        format!(" + {:.0} of page tables", s.median)
                    });
                let threads =
                    stat(imp, |r| r.peak_threads.map(|t| t as f64)).map_or(f64::NAN, |s| s.hi);
                eprintln!(
                    "  {imp:<7} median {:.3} s [{:.3}-{:.3}] of {} runs, {bytes:.0} bytes/task \
                     resident{tables}, {threads:.0} OS threads at peak",
                    t.median, t.lo, t.hi, t.runs
                );
            } else if let Some(r) = records.iter().find(|r| r.imp == imp && r.tasks == n) {
                let why = r
                    .skipped
                    .as_deref()
                    .or(r.error.as_deref())
                    .unwrap_or("failed");
                eprintln!("  {imp:<7} no complete run: {why}");
            }
        }
        if let Some(i) = stat("ito", |r| r.seconds) {
            let b = stat("ito", |r| r.bytes_per_task).map_or(f64::MAX, |s| s.median);
            let t = stat("ito", |r| r.peak_threads.map(|t| t as f64)).map_or(f64::MAX, |s| s.hi);
            let go = stat("go", |r| r.seconds);
            let met = |ok: bool| if ok { "met" } else { "not met" };
            eprintln!(
                "  issue 19's targets: time <= Go's ({}), <= {} OS threads ({t:.0}: {}), <= 8 KiB \
                 resident per task ({b:.0} bytes: {})",
                go.map_or("no Go run".to_string(), |g| format!(
                    "medians {:.3} vs {:.3} s: {}",
                    i.median,
                    g.median,
                    met(i.median <= g.median)
                )),
                workers + 4,
                met(t <= workers as f64 + 4.0),
                met(b <= 8192.0)
            );
        }
    }
}

/// A median over runs and their range.
struct Stat {
    median: f64,
    lo: f64,
    hi: f64,
    runs: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_in_process_impl_counts_every_task() {
        let d = Duration::from_millis(1);
        let rec = in_process(BlockRecord::template(BlockImpl::Threads, 20, 1, 2), || {
            thread_tasks(20, d)
        });
        assert!(rec.ok, "{rec:?}");
        assert_eq!(rec.completed, Some(20));
        assert!(rec.peak_threads.unwrap() >= 1);

        let rt = ito::Runtime::builder().workers(1).build().unwrap();
        let rec = in_process(BlockRecord::template(BlockImpl::Ito, 20, 1, 1), || {
            ito_tasks(&rt, 20, d)
        });
        assert!(rec.ok, "{rec:?}");
        assert_eq!(rec.completed, Some(20));
        assert!(rec.page_table_bytes_per_task.is_some(), "{rec:?}");
    }

    #[test]
    fn a_run_that_did_not_finish_every_task_fails() {
        let line = PeerLine {
            completed: 9,
            seconds: 0.1,
            rss_bytes: 2000,
            baseline_rss_bytes: 1000,
            peak_threads: 3,
            peak_page_table_bytes: Some(1500),
            baseline_page_table_bytes: Some(500),
        };
        let rec = BlockRecord::template(BlockImpl::Go, 10, 100, 2).measured(line);
        assert!(!rec.ok);
        assert_eq!(rec.error.as_deref(), Some("9 of 10 tasks finished"));
        assert_eq!(rec.bytes_per_task, Some(100.0));
        assert_eq!(rec.page_table_bytes_per_task, Some(100.0));
    }
}
