//! Measurement plumbing: the JSON record, the peak-thread sampler (which doubles as the
//! in-process watchdog), peak RSS, commit and CPU count, the child-process runner with a
//! wall-clock timeout, and the JSONL / CSV sinks. The watchdogs themselves are in
//! `watchdog.rs`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub(crate) use crate::watchdog::{SharedWatchdog, Watchdog};

/// One measurement, printed as one JSON line (and one CSV row).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Experiment name, e.g. `"fib"`.
    pub(crate) experiment: String,
    /// Implementation: `ito`, `tokio`, `rayon` or `seq`.
    #[serde(rename = "impl")]
    pub(crate) imp: String,
    /// Style actually run (`flat`, `wait`, `async`, `join` or `seq`).
    pub(crate) style: String,
    /// Argument of fib.
    pub(crate) n: u64,
    /// Calls with `n < cutoff` run the sequential `sfib`.
    pub(crate) cutoff: u64,
    /// Worker threads of the runtime (1 for `seq`).
    pub(crate) workers: usize,
    /// Computed value; `null` when the run produced none.
    pub(crate) result: Option<u64>,
    /// Wall-clock seconds of the computation (runtime start-up excluded).
    pub(crate) seconds: Option<f64>,
    /// Tasks created: runtime metrics for ito, the T(n) formula otherwise.
    pub(crate) tasks: Option<u64>,
    /// Maximum number of OS threads of the process during the run (sampler excluded).
    pub(crate) peak_threads: Option<usize>,
    /// Peak resident set size of the process (VmHWM) in bytes.
    pub(crate) rss_bytes: Option<u64>,
    /// User CPU seconds of the process (every thread) during the computation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_s: Option<f64>,
    /// System CPU seconds of the process (every thread) during the computation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sys_s: Option<f64>,
    /// The commit this binary was built from (see [`commit`]).
    pub(crate) commit: String,
    /// Number of CPUs available to the process.
    pub(crate) nproc: usize,
    /// Whether the run completed with the right result.
    pub(crate) ok: bool,
    /// Why the run failed (`"timeout"`, a crash status, a task failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The CSV columns, in the order of the JSON fields.
pub(crate) const CSV_COLUMNS: [&str; 15] = [
    "experiment",
    "impl",
    "style",
    "n",
    "cutoff",
    "workers",
    "result",
    "seconds",
    "tasks",
    "peak_threads",
    "rss_bytes",
    "commit",
    "nproc",
    "ok",
    "error",
];

impl Record {
    /// A record with the identifying fields set and no measurement yet (`ok: false`).
    pub(crate) fn template(
        experiment: &str,
        imp: &str,
        style: &str,
        n: u64,
        cutoff: u64,
        workers: usize,
    ) -> Self {
        Record {
            experiment: experiment.to_owned(),
            imp: imp.to_owned(),
            style: style.to_owned(),
            n,
            cutoff,
            workers,
            result: None,
            seconds: None,
            tasks: None,
            peak_threads: None,
            rss_bytes: None,
            user_s: None,
            sys_s: None,
            commit: commit(),
            nproc: nproc(),
            ok: false,
            error: None,
        }
    }

    /// This record marked as failed with `error`.
    pub(crate) fn failed(mut self, error: impl Into<String>) -> Self {
        self.ok = false;
        self.error = Some(error.into());
        self
    }

    /// The record as one line of JSON.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a Record always serializes")
    }
}

/// User and system CPU time, in seconds (in a record: of the span its `seconds` covers, or
/// as that record's documentation says). Linux measures their sum exactly and splits it
/// between user and system in proportion to scheduler-tick samples, so over spans of a few
/// milliseconds the split is coarse; the report's verdicts use the sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuTime {
    /// User time.
    pub(crate) user_s: f64,
    /// System time.
    pub(crate) sys_s: f64,
}

impl CpuTime {
    /// The CPU time of every thread of this process so far (`getrusage(RUSAGE_SELF)`).
    pub(crate) fn of_self() -> CpuTime {
        rusage(libc::RUSAGE_SELF)
    }

    /// The CPU time of every waited-for child of this process so far
    /// (`getrusage(RUSAGE_CHILDREN)`).
    pub(crate) fn of_children() -> CpuTime {
        rusage(libc::RUSAGE_CHILDREN)
    }

    /// The CPU time from `earlier` to `self`.
    pub(crate) fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_s: (self.user_s - earlier.user_s).max(0.0),
            sys_s: (self.sys_s - earlier.sys_s).max(0.0),
        }
    }

    /// This CPU time divided by `n` (the time of one of `n` operations).
    pub(crate) fn per(self, n: f64) -> CpuTime {
        CpuTime {
            user_s: self.user_s / n,
            sys_s: self.sys_s / n,
        }
    }
}

/// The seconds of a `timeval`.
pub(crate) fn timeval_s(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: `rusage` is plain data for which all-zero bytes are a valid value, and
    // `getrusage` only writes into the struct it is given, which lives for the call.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `who` is RUSAGE_SELF or RUSAGE_CHILDREN and `ru` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return CpuTime::default();
    }
    CpuTime {
        user_s: timeval_s(ru.ru_utime),
        sys_s: timeval_s(ru.ru_stime),
    }
}

/// Number of CPUs available to this process.
pub(crate) fn nproc() -> usize {
    thread::available_parallelism().map_or(1, |n| n.get())
}

/// The commit this binary was built from (`git rev-parse --short HEAD`, `-dirty` when tracked
/// files differed from it, `unknown` without git), embedded by `build.rs`.
pub(crate) fn commit() -> String {
    env!("ITO_BENCH_COMMIT").to_owned()
}

/// Peak resident set size of this process in bytes (`VmHWM` of `/proc/self/status`).
pub(crate) fn vm_hwm_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// Current resident set size of this process in bytes (`VmRSS` of `/proc/self/status`).
pub(crate) fn vm_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// A `kB` line of `/proc/self/status`, in bytes.
fn proc_status_bytes(key: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets the peak resident set size of this process to its current RSS (writes `5` to
/// `/proc/self/clear_refs`); false where the kernel does not allow it.
pub(crate) fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Current number of OS threads of this process (entries of `/proc/self/task`).
pub(crate) fn thread_count() -> usize {
    fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Called by the sampler with the peak thread count so far when the deadline passes.
pub(crate) type OnTimeout = Box<dyn FnOnce(usize) + Send>;

/// A thread that samples the process's thread count about every millisecond and keeps the
/// maximum; with a deadline it also acts as the watchdog of an in-process run.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicUsize>,
    /// Peak `VmPTE` (page tables) in bytes.
    peak_page_tables: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

/// What a [`Sampler`] saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peaks {
    /// Peak OS thread count (sampler excluded).
    pub(crate) threads: usize,
    /// Peak page-table memory of the process (`VmPTE`), in bytes: not part of the resident
    /// set, and about a page per coroutine stack mapped 8 MiB apart.
    pub(crate) page_table_bytes: u64,
}

/// Page-table memory of this process in bytes (`VmPTE` of `/proc/self/status`).
pub(crate) fn vm_pte_bytes() -> Option<u64> {
    proc_status_bytes("VmPTE:")
}

impl Sampler {
    /// Starts sampling the thread count. If `deadline` is given and the run is still going
    /// after its duration, the callback is called (from the sampler thread) with the peak so
    /// far.
    pub(crate) fn start(deadline: Option<(Duration, OnTimeout)>) -> Self {
        Self::sample(deadline, false)
    }

    /// Starts sampling the thread count and the page tables (one more read of
    /// `/proc/self/status` per sample, so only where the page tables are reported).
    pub(crate) fn start_with_page_tables() -> Self {
        Self::sample(None, true)
    }

    fn sample(deadline: Option<(Duration, OnTimeout)>, page_tables: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicUsize::new(thread_count()));
        let peak_page_tables = Arc::new(AtomicU64::new(vm_pte_bytes().unwrap_or(0)));
        let handle = {
            let (stop, peak, tables) = (
                Arc::clone(&stop),
                Arc::clone(&peak),
                Arc::clone(&peak_page_tables),
            );
            thread::Builder::new()
                .name("ito-bench-sampler".into())
                .spawn(move || {
                    let start = Instant::now();
                    let mut deadline = deadline;
                    while !stop.load(Ordering::Acquire) {
                        // The sampler itself is one of the entries.
                        peak.fetch_max(thread_count().saturating_sub(1), Ordering::AcqRel);
                        if page_tables {
                            tables.fetch_max(vm_pte_bytes().unwrap_or(0), Ordering::AcqRel);
                        }
                        if deadline
                            .as_ref()
                            .is_some_and(|(d, _)| start.elapsed() >= *d)
                        {
                            let (_, on_timeout) = deadline.take().expect("checked above");
                            on_timeout(peak.load(Ordering::Acquire));
                        }
                        thread::sleep(Duration::from_millis(1));
                    }
                })
                .expect("spawning the sampler thread")
        };
        Sampler {
            stop,
            peak,
            peak_page_tables,
            handle: Some(handle),
        }
    }

    /// Stops sampling and returns the peak thread count (sampler excluded).
    pub(crate) fn finish(self) -> usize {
        self.finish_peaks().threads
    }

    /// Stops sampling and returns every peak; the page tables are read only at the start and
    /// the end unless [`start_with_page_tables`](Self::start_with_page_tables) sampled them.
    pub(crate) fn finish_peaks(mut self) -> Peaks {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.peak.fetch_max(thread_count(), Ordering::AcqRel);
        self.peak_page_tables
            .fetch_max(vm_pte_bytes().unwrap_or(0), Ordering::AcqRel);
        Peaks {
            threads: self.peak.load(Ordering::Acquire),
            page_table_bytes: self.peak_page_tables.load(Ordering::Acquire),
        }
    }
}

/// What a child process left behind.
pub(crate) struct ChildRun {
    /// Everything it wrote to stdout.
    pub(crate) stdout: String,
    /// Its exit status, or `None` when it ran past the timeout and was killed.
    pub(crate) status: Option<ExitStatus>,
}

impl ChildRun {
    /// The first line of stdout that parses as a `T` (other lines are ignored).
    pub(crate) fn line<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.stdout
            .lines()
            .find_map(|l| serde_json::from_str(l.trim()).ok())
    }
}

/// Runs this executable with `args` (stderr inherited), killing it after `timeout`.
pub(crate) fn run_child(args: &[String], timeout: Duration) -> io::Result<ChildRun> {
    run_program(&std::env::current_exe()?, args, timeout)
}

/// What a peer script of `bench/peers/` did.
pub(crate) enum PeerRun {
    /// It printed `skipped: REASON` (its toolchain is missing).
    Skipped(String),
    /// It ran (or was killed at the timeout: `status` is `None`).
    Ran(ChildRun),
}

/// Runs `bash bench/peers/SCRIPT ARGS...` of the workspace (stderr inherited), killing it
/// after `timeout`. A peer script prints one JSON line, or a line starting with `skipped` when
/// its toolchain is missing; the error is a one-line message.
pub(crate) fn run_peer_script(
    script: &str,
    args: &[String],
    timeout: Duration,
) -> Result<PeerRun, String> {
    let root = workspace_root().map_err(|e| format!("cannot find the workspace: {e}"))?;
    let path = root.join("bench/peers").join(script);
    let mut full = vec![path.display().to_string()];
    full.extend_from_slice(args);
    let run = run_program(Path::new("bash"), &full, timeout)
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let skipped = run
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("skipped"))
        .map(|reason| reason.trim_start_matches([':', ' ']).to_string());
    Ok(match skipped {
        Some(reason) => PeerRun::Skipped(reason),
        None => PeerRun::Ran(run),
    })
}

/// Runs `program` with `args` (stderr inherited), killing it after `timeout`.
fn run_program(program: &Path, args: &[String], timeout: Duration) -> io::Result<ChildRun> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut out = child.stdout.take().expect("stdout is piped");
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stdout = reader.join().unwrap_or_default();
    Ok(ChildRun { stdout, status })
}

/// The records in a child's stdout (lines that are not records are ignored).
pub(crate) fn parse_records(stdout: &str) -> Vec<Record> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l.trim()).ok())
        .collect()
}

/// The workspace root: the nearest ancestor of the working directory whose `Cargo.toml`
/// has a `[workspace]` table.
pub(crate) fn workspace_root() -> io::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    for dir in cwd.ancestors() {
        let manifest = dir.join("Cargo.toml");
        if let Ok(f) = File::open(&manifest) {
            let is_ws = BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.trim() == "[workspace]");
            if is_ws {
                return Ok(dir.to_path_buf());
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no Cargo.toml with [workspace] above {}", cwd.display()),
    ))
}

/// Where records go besides stdout: a JSONL file (`--record`) and a CSV file (`--csv`).
/// Files are opened in append mode per record so that the sink can be cloned into the
/// watchdog and a killed run still leaves complete lines.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sink {
    jsonl: Option<PathBuf>,
    csv: Option<PathBuf>,
}

impl Sink {
    /// A sink appending to `jsonl` and writing a fresh CSV (header included) to `csv`.
    pub(crate) fn new(jsonl: Option<PathBuf>, csv: Option<PathBuf>) -> io::Result<Self> {
        if let Some(p) = &jsonl {
            if let Some(dir) = p.parent() {
                fs::create_dir_all(dir)?;
            }
            OpenOptions::new().create(true).append(true).open(p)?;
        }
        if let Some(p) = &csv {
            let mut f = File::create(p)?;
            writeln!(f, "{}", CSV_COLUMNS.join(","))?;
        }
        Ok(Sink { jsonl, csv })
    }

    /// Prints the record to stdout and appends it to the files.
    pub(crate) fn emit(&self, rec: &Record) {
        self.emit_line(&rec.to_json());
        if let Some(p) = &self.csv {
            if let Err(e) = append_line(p, &csv_row(rec)) {
                eprintln!("ito-bench: cannot append to {}: {e}", p.display());
            }
        }
    }
}

impl Sink {
    /// Prints one JSON line to stdout and appends it to the JSONL file (not to the CSV file,
    /// whose columns are those of [`Record`]).
    pub(crate) fn emit_line(&self, line: &str) {
        let mut stdout = io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
        if let Some(p) = &self.jsonl {
            if let Err(e) = append_line(p, line) {
                eprintln!("ito-bench: cannot append to {}: {e}", p.display());
            }
        }
    }
}

fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().append(true).open(path)?;
    writeln!(f, "{line}")
}

/// The record as a CSV row with the columns of [`CSV_COLUMNS`]; `null` becomes empty.
pub(crate) fn csv_row(rec: &Record) -> String {
    let value = serde_json::to_value(rec).expect("a Record always serializes");
    CSV_COLUMNS
        .iter()
        .map(|col| match value.get(col) {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => csv_field(s),
            Some(v) => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Order-preserving de-duplication of a comma list.
pub(crate) fn dedup<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for &x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// A sink printing to stdout and, with `record`, appending to `bench/results/<file>` of the
/// workspace; the error is a one-line message for a usage error.
pub(crate) fn results_sink(record: bool, file: &str) -> Result<Sink, String> {
    let jsonl = if record {
        let root = workspace_root().map_err(|e| format!("--record: {e}"))?;
        Some(root.join("bench/results").join(file))
    } else {
        None
    };
    Sink::new(jsonl, None).map_err(|e| format!("cannot open output file: {e}"))
}

/// The median of `v` (sorted in place; the mean of the two middle values for an even
/// length), or `None` if it is empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// `builder`, traced to the file `ITO_TRACE` names when it is set: the fib, chain and
/// find-par experiments honour it for the runtimes they build, as ito does for its global
/// runtime, so that tracing's cost can be measured on them and `seeds` can draw them
/// (`docs/trace.md`).
pub(crate) fn traced(builder: ito::Builder) -> ito::Builder {
    match std::env::var_os("ITO_TRACE") {
        Some(path) => builder.trace(path),
        None => builder,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_row_matches_columns() {
        let mut r = Record::template("fib", "ito", "wait", 30, 15, 2).failed("a, \"b\"");
        r.seconds = Some(0.5);
        let row = csv_row(&r);
        assert!(row.starts_with("fib,ito,wait,30,15,2,,0.5,,,,"), "{row}");
        assert!(row.ends_with(",false,\"a, \"\"b\"\"\""), "{row}");
    }

    #[test]
    fn record_round_trips() {
        let r = Record::template("fib", "tokio", "async", 30, 15, 2);
        let back = parse_records(&format!("noise\n{}\n", r.to_json()));
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].imp, "tokio");
        assert!(r.to_json().contains("\"impl\":\"tokio\""));
        assert!(!r.to_json().contains("error"));
    }

    #[test]
    fn sampler_sees_threads() {
        let s = Sampler::start(None);
        let hs: Vec<_> = (0..4)
            .map(|_| thread::spawn(|| thread::sleep(Duration::from_millis(30))))
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert!(s.finish() >= 5);
        assert!(vm_hwm_bytes().unwrap() > 0);
    }

    #[test]
    #[ignore = "helper that run_child_kills_on_timeout runs as a child"]
    fn helper_sleeps() {
        thread::sleep(Duration::from_secs(30));
    }

    #[test]
    fn run_child_kills_on_timeout() {
        let args = ["--ignored", "--exact", "measure::tests::helper_sleeps"].map(String::from);
        let start = Instant::now();
        let run = run_child(&args, Duration::from_millis(300)).unwrap();
        assert!(run.status.is_none());
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
