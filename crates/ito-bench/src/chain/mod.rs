//! `ito-bench chain`: document 001's spawn chain (*Programming Elixir*, "the overhead of
//! processes"). N processes in a chain; each waits for a number and sends number + 1 to the
//! next; the caller sends 0 to the first and waits for the last's answer, which must be N.
//!
//! - `ito`: `ito::process`: a driver process spawns the N processes (each holding the
//!   [`Pid`] of the next), sends 0 and receives the result, on an `ito::Runtime` of
//!   `--workers` workers.
//! - `tokio`: the same with tokio tasks and `tokio::sync::oneshot` channels (each task holds
//!   its receiver and the next one's sender), once on a current-thread runtime and once on a
//!   multi-thread runtime of `--workers` workers (the driver is a task there too); the
//!   summary takes tokio's best.
//! - `go`, `elixir`: `bench/peers/chain/` (goroutines and channels; Elixir processes), run by
//!   its `run.sh`, which prints a JSON line, or a `skipped` line when the toolchain is
//!   missing.
//!
//! Every measurement runs in a child process of its own, so that `rss_bytes` (the peak
//! resident set of that process, `VmHWM`) is the run's alone; `bytes_per_process` is
//! `rss_bytes / n`, the runtime and the binary included. The clock runs from the first spawn
//! to the arrival of the result.

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use ito::process::{self, Mailbox, Pid};
use serde::{Deserialize, Serialize};

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, CpuTime, dedup};

/// Arguments of `chain`.
#[derive(Args, Debug)]
#[command(
    about = "Document 001: a chain of N processes passing a number along",
    long_about = "Document 001 (spawn/chain from Programming Elixir): N processes, each \
        waiting for a number and sending number+1 to the next; the result must equal N. \
        Impls: ito (ito::process), tokio (tasks + oneshot channels; current-thread and \
        multi-thread runtimes), go and elixir (bench/peers/chain/run.sh; skipped when the \
        toolchain is missing). Each run is a child process; one JSON line per run with \
        seconds and peak RSS; a summary on stderr. Exit status: 0 if every run was right, 1 \
        if one failed, 2 for bad arguments."
)]
pub(crate) struct ChainArgs {
    /// Chain length(s), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000000")]
    n: Vec<u64>,
    /// The common options; their defaults are [`DEFAULTS`].
    #[command(flatten)]
    pub(crate) common: CommonArgs<ChainImpl>,
    /// A note stored in every record (for example, how busy the machine was).
    #[arg(long)]
    note: Option<String>,
    /// Internal: run one measurement in this process (`--impl` one of ito, tokio).
    #[arg(long, hide = true)]
    child: bool,
    /// Internal, with `--child` and tokio: the runtime flavour.
    #[arg(long, hide = true, value_enum)]
    flavor: Option<Flavor>,
}

/// Which implementation runs the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ChainImpl {
    /// `ito::process`.
    Ito,
    /// tokio tasks and oneshot channels.
    Tokio,
    /// Goroutines and channels (`bench/peers/chain/chain.go`).
    Go,
    /// Elixir processes (`bench/peers/chain/chain.exs`).
    Elixir,
}

impl ChainImpl {
    fn name(self) -> &'static str {
        match self {
            ChainImpl::Ito => "ito",
            ChainImpl::Tokio => "tokio",
            ChainImpl::Go => "go",
            ChainImpl::Elixir => "elixir",
        }
    }
}

/// A tokio runtime flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Flavor {
    /// `Builder::new_current_thread`.
    CurrentThread,
    /// `Builder::new_multi_thread` with `--workers` workers.
    MultiThread,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current-thread",
            Flavor::MultiThread => "multi-thread",
        }
    }
}

/// One run, printed as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ChainRecord {
    /// Always `"chain"`.
    experiment: String,
    /// `ito`, `tokio`, `go` or `elixir`.
    #[serde(rename = "impl")]
    imp: String,
    /// tokio's runtime flavour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flavor: Option<String>,
    /// Processes in the chain.
    n: u64,
    /// Worker threads (ito, tokio multi-thread); 1 for tokio current-thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workers: Option<usize>,
    /// The number that came out of the chain (must equal `n`).
    #[serde(default)]
    result: Option<u64>,
    /// Seconds from the first spawn to the result.
    #[serde(default)]
    seconds: Option<f64>,
    /// CPU time of the whole process that ran the chain (its start included).
    #[serde(flatten)]
    cpu: Option<CpuTime>,
    /// CPU time (user plus system) of the ito run alone, from the first spawn to the result:
    /// without the process's start, and without the trace's export when the runtime drops
    /// (`ITO_TRACE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_cpu_s: Option<f64>,
    /// Peak resident set of the run's process (VmHWM), in bytes.
    #[serde(default)]
    rss_bytes: Option<u64>,
    /// Resident set just before the first spawn (runtime started), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    baseline_rss_bytes: Option<u64>,
    /// `rss_bytes / n`.
    #[serde(default)]
    bytes_per_process: Option<f64>,
    /// `(rss_bytes - baseline_rss_bytes) / n`: without the runtime and the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    net_bytes_per_process: Option<f64>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    #[serde(default)]
    commit: String,
    /// CPUs available.
    #[serde(default)]
    nproc: usize,
    /// Whether the run completed with the right result (or was skipped).
    ok: bool,
    /// Why the impl did not run (its toolchain is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// `--note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl ChainRecord {
    fn template(imp: &str, flavor: Option<Flavor>, n: u64, workers: Option<usize>) -> Self {
        ChainRecord {
            experiment: "chain".into(),
            imp: imp.into(),
            flavor: flavor.map(|f| f.name().into()),
            n,
            workers,
            result: None,
            seconds: None,
            cpu: None,
            run_cpu_s: None,
            rss_bytes: None,
            baseline_rss_bytes: None,
            bytes_per_process: None,
            net_bytes_per_process: None,
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

    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a ChainRecord always serializes")
    }
}

/// The resident set of this process now (`VmRSS`), in bytes.
pub(crate) fn vm_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The defaults of the common options.
pub(crate) const DEFAULTS: Defaults<'static, ChainImpl> = Defaults {
    imps: &[ChainImpl::Ito, ChainImpl::Tokio],
    workers: None,
    repeat: 1,
    timeout_s: 300.0,
};

/// `ito-bench chain`.
pub(crate) fn command(args: &ChainArgs) -> ExitCode {
    let c = &args.common;
    let s = match c.resolve(DEFAULTS) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let (workers, repeat, timeout) = (s.workers, s.repeat, s.timeout);
    if args.n.contains(&0) {
        return crate::usage_error("--n must be at least 1");
    }
    if args.child {
        return child(args, workers);
    }
    let sink = match c.sink("chain.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let imps = s.imps;
    let ns = dedup(&args.n);
    let mut records = Vec::new();
    for _ in 0..repeat {
        for &n in &ns {
            for &imp in &imps {
                // Every run is a process of its own: its CPU time is that of the whole
                // process (runtime or VM start included), the same for every impl.
                let with_cpu = |run: &dyn Fn() -> ChainRecord| {
                    let before = CpuTime::of_children();
                    let mut rec = run();
                    if rec.skipped.is_none() {
                        rec.cpu = Some(CpuTime::of_children().since(before));
                    }
                    rec
                };
                let runs: Vec<ChainRecord> = match imp {
                    ChainImpl::Ito => vec![with_cpu(&|| run_child(imp, None, n, workers, timeout))],
                    ChainImpl::Tokio => [Flavor::CurrentThread, Flavor::MultiThread]
                        .into_iter()
                        .map(|f| with_cpu(&|| run_child(imp, Some(f), n, workers, timeout)))
                        .collect(),
                    ChainImpl::Go | ChainImpl::Elixir => {
                        vec![with_cpu(&|| run_peer(imp, n, workers, timeout))]
                    }
                };
                for mut rec in runs {
                    rec.note = args.note.clone();
                    sink.emit_line(&rec.to_json());
                    records.push(rec);
                }
            }
        }
    }
    summary(&records, &ns);
    if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one measurement of ito or tokio in a child process of this binary.
fn run_child(
    imp: ChainImpl,
    flavor: Option<Flavor>,
    n: u64,
    workers: usize,
    timeout: Duration,
) -> ChainRecord {
    let w = match flavor {
        Some(Flavor::CurrentThread) => 1,
        _ => workers,
    };
    let template = ChainRecord::template(imp.name(), flavor, n, Some(w));
    let mut child_args: Vec<String> = [
        "chain",
        "--child",
        "--impl",
        imp.name(),
        "--n",
        &n.to_string(),
        "--workers",
        &workers.to_string(),
    ]
    .map(String::from)
    .to_vec();
    if let Some(f) = flavor {
        child_args.extend(["--flavor".to_string(), f.name().to_string()]);
    }
    let run = match measure::run_child(&child_args, timeout) {
        Ok(run) => run,
        Err(e) => return template.failed(format!("cannot start child: {e}")),
    };
    let rec = run
        .stdout
        .lines()
        .find_map(|l| serde_json::from_str::<ChainRecord>(l.trim()).ok());
    match (rec, run.status) {
        (Some(rec), Some(st)) if st.success() => rec,
        (Some(rec), Some(st)) => rec.failed(format!("child exited with {st}")),
        (_, None) => template.failed("timeout"),
        (None, Some(st)) => template.failed(format!("child printed no record ({st})")),
    }
}

/// The memory a peer's process (a goroutine, an Erlang process) is assumed to take, to
/// decide whether its chain can fit: a guard, not a measurement.
const PEER_BYTES_PER_PROCESS: u64 = 4096;

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `--child`: one measurement in this process, one JSON line on stdout.
fn child(args: &ChainArgs, workers: usize) -> ExitCode {
    let (Some(&imp), Some(&n)) = (args.common.imps.first(), args.n.first()) else {
        return crate::usage_error("--child needs --impl and --n");
    };
    let flavor = match (imp, args.flavor) {
        (ChainImpl::Tokio, None) => Flavor::CurrentThread,
        (_, f) => f.unwrap_or(Flavor::MultiThread),
    };
    let (flavor_rec, w) = match imp {
        ChainImpl::Ito => (None, workers),
        ChainImpl::Tokio if flavor == Flavor::CurrentThread => (Some(flavor), 1),
        ChainImpl::Tokio => (Some(flavor), workers),
        _ => return crate::usage_error("--child runs ito or tokio only"),
    };
    let mut rec = ChainRecord::template(imp.name(), flavor_rec, n, Some(w));
    let outcome = match imp {
        ChainImpl::Ito => run_ito(n, workers),
        _ => run_tokio(n, flavor, workers),
    };
    match outcome {
        Ok(o) => {
            rec.result = Some(o.result);
            rec.seconds = Some(o.seconds);
            rec.run_cpu_s = o.cpu.map(|c| c.user_s + c.sys_s);
            rec.baseline_rss_bytes = o.baseline;
            rec.ok = o.result == n;
            if !rec.ok {
                rec.error = Some(format!("wrong result, expected {n}"));
            }
        }
        Err(e) => rec = rec.failed(e),
    }
    rec.rss_bytes = measure::vm_hwm_bytes();
    rec.bytes_per_process = rec.rss_bytes.map(|b| b as f64 / n as f64);
    rec.net_bytes_per_process = match (rec.rss_bytes, rec.baseline_rss_bytes) {
        (Some(peak), Some(base)) => Some(peak.saturating_sub(base) as f64 / n as f64),
        _ => None,
    };
    println!("{}", rec.to_json());
    if rec.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What one run measured.
struct Outcome {
    result: u64,
    seconds: f64,
    baseline: Option<u64>,
    /// The CPU time of the run (ito only).
    cpu: Option<CpuTime>,
}

/// The chain on `ito::process`.
fn run_ito(n: u64, workers: usize) -> Result<Outcome, String> {
    let rt = crate::measure::traced(ito::Runtime::builder().workers(workers))
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let baseline = vm_rss_bytes();
    let done = ito::Promise::new();
    let answer = done.future();
    let cpu_before = CpuTime::of_self();
    let start = Instant::now();
    rt.block_on(async move {
        // The driver is a process too (Elixir's caller is): it spawns the chain from a
        // worker and receives the last process's answer.
        process::spawn(move |mut mb: Mailbox<u64>| async move {
            let mut next: Pid<u64> = mb.pid();
            for _ in 0..n {
                let to = next;
                next = process::spawn(move |mut mb: Mailbox<u64>| async move {
                    let v = mb.recv().await;
                    let _ = to.send(v + 1);
                });
            }
            next.send(0).expect("the first process is waiting");
            let result = mb.recv().await;
            let _ = done.success(result);
        })
    });
    let result = answer
        .wait()
        .map_err(|f| format!("the driver failed: {f}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = CpuTime::of_self().since(cpu_before);
    Ok(Outcome {
        result,
        seconds,
        baseline,
        cpu: Some(cpu),
    })
}

/// The chain on tokio tasks and oneshot channels.
fn run_tokio(n: u64, flavor: Flavor, workers: usize) -> Result<Outcome, String> {
    use tokio::sync::oneshot;
    async fn chain(n: u64) -> u64 {
        let (result_tx, result_rx) = oneshot::channel::<u64>();
        let mut to = result_tx;
        for _ in 0..n {
            let (tx, rx) = oneshot::channel::<u64>();
            let next = to;
            tokio::spawn(async move {
                let v = rx.await.expect("the previous task sends");
                let _ = next.send(v + 1);
            });
            to = tx;
        }
        to.send(0).expect("the first task is waiting");
        result_rx.await.expect("the last task sends")
    }
    let rt = match flavor {
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread().build(),
        Flavor::MultiThread => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .build(),
    }
    .map_err(|e| format!("cannot start tokio: {e}"))?;
    let baseline = vm_rss_bytes();
    let start = Instant::now();
    let result = match flavor {
        Flavor::CurrentThread => rt.block_on(chain(n)),
        // The driver on a worker, like ito's.
        Flavor::MultiThread => rt
            .block_on(rt.spawn(chain(n)))
            .map_err(|e| format!("the driver failed: {e}"))?,
    };
    let seconds = start.elapsed().as_secs_f64();
    Ok(Outcome {
        result,
        seconds,
        baseline,
        cpu: None,
    })
}

/// Runs `bench/peers/chain/run.sh <impl> <n>`.
fn run_peer(imp: ChainImpl, n: u64, workers: usize, timeout: Duration) -> ChainRecord {
    let template = ChainRecord::template(imp.name(), None, n, Some(workers));
    // A peer whose chain could not fit in memory is not started: on a shared machine the
    // kernel's out-of-memory killer could pick another process than the peer.
    let needs = n.saturating_mul(PEER_BYTES_PER_PROCESS);
    if let Some(available) = mem_available_bytes().filter(|&a| needs > a / 10 * 8) {
        let mut rec = template;
        rec.ok = true;
        rec.skipped = Some(format!(
            "not started: {n} processes at {PEER_BYTES_PER_PROCESS} bytes each need {:.1} GB, \
             more than 80% of the {:.1} GB available",
            needs as f64 / 1e9,
            available as f64 / 1e9
        ));
        return rec;
    }
    let script: PathBuf = match measure::workspace_root() {
        Ok(root) => root.join("bench/peers/chain/run.sh"),
        Err(e) => return template.failed(format!("cannot find the workspace: {e}")),
    };
    let child = Command::new("bash")
        .arg(&script)
        .arg(imp.name())
        .arg(n.to_string())
        .arg(workers.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return template.failed(format!("cannot run {}: {e}", script.display())),
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return template.failed(format!("waiting for {}: {e}", script.display())),
        }
    };
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        use std::io::Read;
        let _ = so.read_to_string(&mut out);
    }
    let Some(status) = status else {
        return template.failed("timeout");
    };
    if let Some(reason) = out.lines().find_map(|l| l.trim().strip_prefix("skipped")) {
        let mut rec = template;
        rec.ok = true;
        rec.skipped = Some(reason.trim_start_matches([':', ' ']).to_string());
        return rec;
    }
    let parsed = out
        .lines()
        .find_map(|l| serde_json::from_str::<PeerLine>(l.trim()).ok());
    match parsed {
        Some(p) if status.success() => {
            let mut rec = template;
            rec.result = Some(p.result);
            rec.seconds = Some(p.seconds);
            rec.rss_bytes = Some(p.rss_bytes);
            rec.bytes_per_process = Some(p.rss_bytes as f64 / n as f64);
            rec.ok = p.result == n;
            if !rec.ok {
                rec.error = Some(format!("wrong result, expected {n}"));
            }
            rec
        }
        _ => template.failed(format!("{} printed no result ({status})", script.display())),
    }
}

/// What `run.sh` prints for one run.
#[derive(Deserialize)]
struct PeerLine {
    result: u64,
    seconds: f64,
    rss_bytes: u64,
}

/// The summary on stderr: per n, the best of each impl, and the criteria.
fn summary(records: &[ChainRecord], ns: &[u64]) {
    let best = |imp: &str, n: u64| {
        records
            .iter()
            .filter(|r| r.imp == imp && r.n == n && r.ok && r.skipped.is_none())
            .filter_map(|r| Some((r.seconds?, r.rss_bytes?, r.flavor.clone())))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    for &n in ns {
        eprintln!("chain n={n}:");
        for imp in ["ito", "tokio", "go", "elixir"] {
            if let Some((s, rss, flavor)) = best(imp, n) {
                eprintln!(
                    "  {imp:<6} best {s:.3} s{}, peak RSS {:.0} MB ({:.0} bytes/process)",
                    flavor.map(|f| format!(" ({f})")).unwrap_or_default(),
                    rss as f64 / 1e6,
                    rss as f64 / n as f64
                );
            }
        }
        if let (Some(i), Some(t)) = (best("ito", n), best("tokio", n)) {
            eprintln!("  ito/tokio time {:.3}", i.0 / t.0);
            let per = i.1 as f64 / n as f64;
            if n == 1_000_000 {
                eprintln!(
                    "  the issue's targets at 1M: time <= 0.35x tokio's best ({}), <= 300 bytes \
                     of peak RSS per process ({per:.0}: {})",
                    if i.0 / t.0 <= 0.35 { "met" } else { "not met" },
                    if per <= 300.0 { "met" } else { "not met" }
                );
            }
        }
        if let (10_000_000, Some(i)) = (n, best("ito", n)) {
            eprintln!(
                "  the issue's target at 10M: finishes under 3 GB ({:.2} GB: {})",
                i.1 as f64 / 1e9,
                if i.1 < 3_000_000_000 {
                    "met"
                } else {
                    "not met"
                }
            );
        }
    }
}
