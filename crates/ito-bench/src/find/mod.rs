//! Document 002's experiment: `ito-bench find-tree` makes a deterministic tree shaped like a
//! home directory, and `ito-bench find` times `ito-find` against GNU `find` and `fd` on it.
//!
//! **The tree.** `--dirs` directories and `--files` empty files under `--out` (document 002:
//! 35,000 and 31,000, a 66,000-entry home directory; the issue adds a 1,000,000-entry one).
//! A seeded xorshift generator decides everything, so a seed always gives the same tree.
//! Like a home directory it has a few dozen top-level directories, long nested chains
//! (projects, `node_modules`, caches: most new directories go under one of the last few
//! made), hidden directories and files (one name in ten starts with a dot), and files
//! spread unevenly, more of them near the top. One file, [`TARGET`], sits at depth 1: the
//! `--first` query's answer. Nothing is named [`MISSING`].
//!
//! **The runs.** For each of `--runs` rounds, for each query, each tool runs once, in a
//! rotating order, as a child process with stdout piped and counted. Queries:
//!
//! - `missing`: a name that does not exist, so the whole tree is read:
//!   `ito-find -j W NAME DIR`, `find DIR -name NAME`, `fd -u -j W --glob NAME DIR`;
//! - `first-depth1`: [`TARGET`], stopping at the first match:
//!   `ito-find -j W --first NAME DIR`, `find DIR -name NAME -print -quit`,
//!   `fd -u -j W --glob --max-results 1 NAME DIR`.
//!
//! One warm-up run of each (tool, query) comes first (warm cache). Then one JSON line per
//! (tool, query): median and fastest wall-clock milliseconds, and the median's ratio to
//! GNU find's and fd's medians from the same run. `fd` (or Debian's `fdfind`) is skipped
//! with a note when it is not installed. A summary of the targets goes to stderr.

pub(crate) mod par;
mod tree;

use tree::count_entries;
pub(crate) use tree::{FindTreeArgs, tree_command};

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::measure::{self, CpuTime, median};

/// The file at depth 1 that `first-depth1` looks for.
pub(crate) const TARGET: &str = "ito-find-depth1-target";
/// The name nothing in the tree has.
pub(crate) const MISSING: &str = "ito-find-missing-name";

/// Arguments of `find`.
#[derive(Args, Debug)]
#[command(about = "Document 002: time ito-find against GNU find and fd on a tree")]
pub(crate) struct FindArgs {
    /// The tree (made by `find-tree`).
    #[arg(long)]
    tree: PathBuf,
    /// Rounds; each runs every tool on every query once.
    #[arg(long, default_value_t = 11)]
    runs: usize,
    /// ito-find's and fd's worker threads.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// The ito-find binary [default: `ito-find` next to this executable].
    #[arg(long)]
    ito_find: Option<PathBuf>,
    /// Also append the records to bench/results/find.jsonl of the workspace.
    #[arg(long)]
    record: bool,
}

/// One (tool, query) line.
#[derive(Serialize)]
struct FindRecord {
    experiment: &'static str,
    tool: &'static str,
    query: &'static str,
    median_ms: f64,
    min_ms: f64,
    /// The medians of the runs' user and system CPU seconds (of the tool's process).
    #[serde(flatten)]
    cpu: Option<CpuTime>,
    /// The largest peak resident set size of the tool's process over the runs, in bytes
    /// (sampled about every millisecond: a lower bound for runs of a few milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_rss_bytes: Option<u64>,
    /// The most threads the tool's process had at once over the runs (sampled likewise).
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_threads: Option<u64>,
    /// `median_ms` over GNU find's median for the same query.
    ratio_vs_find: f64,
    /// `median_ms` over fd's median; `null` without fd.
    ratio_vs_fd: Option<f64>,
    /// Entries in the tree (directories, files, the target), the tree's root excluded.
    entries: u64,
    workers: usize,
    runs: usize,
    tree: String,
    /// `tmpfs` where the tree is in memory, else `disk`.
    filesystem: &'static str,
    commit: String,
    nproc: usize,
    /// CPU cores that other processes kept busy, on average, during the whole measurement
    /// (the machine's busy time from `/proc/stat` minus this process's and its children's):
    /// 0 on a quiet machine; above 0.1 the numbers are disturbed.
    other_cores: Option<f64>,
    /// Whether every run printed what it should (no line, or one line ending in the target).
    ok: bool,
}

/// A tool and how it runs each query.
struct Tool {
    name: &'static str,
    program: OsString,
    missing: Vec<OsString>,
    first: Vec<OsString>,
}

/// The queries, in the order of [`Tool`]'s argument lists.
const QUERIES: [&str; 2] = ["missing", "first-depth1"];

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// Where `name` is on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// The tools to compare: ito-find, GNU find, and fd if installed.
fn tools(args: &FindArgs) -> Result<Vec<Tool>, String> {
    let ito = match &args.ito_find {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot locate this executable: {e}"))?
            .with_file_name("ito-find"),
    };
    if !ito.is_file() {
        return Err(format!(
            "no ito-find binary at {} (build it: cargo build --release -p ito-find, or pass \
             --ito-find)",
            ito.display()
        ));
    }
    let tree = args.tree.as_os_str();
    let w = args.workers.to_string();
    let with_tree = |mut v: Vec<OsString>, at_end: bool| {
        if at_end {
            v.push(tree.to_owned());
        } else {
            v.insert(0, tree.to_owned());
        }
        v
    };
    let mut tools = vec![
        Tool {
            name: "ito-find",
            program: ito.into_os_string(),
            missing: with_tree(os(&["-j", &w, MISSING]), true),
            first: with_tree(os(&["-j", &w, "--first", TARGET]), true),
        },
        Tool {
            name: "find",
            program: "find".into(),
            missing: with_tree(os(&["-name", MISSING]), false),
            first: with_tree(os(&["-name", TARGET, "-print", "-quit"]), false),
        },
    ];
    match which("fd").or_else(|| which("fdfind")) {
        Some(fd) => tools.push(Tool {
            name: "fd",
            program: fd.into_os_string(),
            missing: with_tree(os(&["-u", "-j", &w, "--glob", MISSING]), true),
            first: with_tree(
                os(&["-u", "-j", &w, "--glob", "--max-results", "1", TARGET]),
                true,
            ),
        }),
        None => eprintln!("note: fd (or fdfind) is not installed: fd skipped, ratio_vs_fd is null"),
    }
    // The document's own programs on ito, shown beside the tools (compared with nobody).
    let me = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    for (name, variant) in [("ito find_par", "unbounded"), ("ito find_par_sem", "sem")] {
        let base = os(&["find-par", "--variant", variant, "-j", &w]);
        let with = |extra: &[&str], target: &str| {
            let mut v = base.clone();
            v.extend(os(extra));
            v.push(target.into());
            v.push(tree.to_owned());
            v
        };
        tools.push(Tool {
            name,
            program: me.clone().into_os_string(),
            missing: with(&[], MISSING),
            first: with(&["--first"], TARGET),
        });
    }
    Ok(tools)
}

/// What one run of a tool left.
struct ToolRun {
    /// Wall-clock milliseconds.
    ms: f64,
    /// Whether it printed what the query should.
    ok: bool,
    /// Its CPU time.
    cpu: CpuTime,
    /// Its peak resident set size in bytes (0: not seen).
    peak_rss: u64,
    /// The most threads it had at once (0: not seen).
    peak_threads: u64,
}

/// Waits for the child `pid` (not waited for yet) and returns its exit status and resource
/// usage: its own, not that of this process's other children.
fn wait_with_rusage(pid: u32) -> io::Result<(ExitStatus, libc::rusage)> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain data for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is a child of this process that nothing has waited for (its `Child`
        // is never waited on), so no other process's status can be taken; `status` and `ru`
        // are valid, writable and live for the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == pid {
            return Ok((ExitStatus::from_raw(status), ru));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A thread that reads the peak resident set size (`VmHWM`) of process `pid` about every
/// millisecond until it exits, and returns the largest. The kernel's own figure for a child
/// (`ru_maxrss`) is no use here: it starts from this process's size at the spawn. So are
/// samples taken before the child has executed `program args` (until then its command line
/// is this process's), which are skipped.
fn sample_peak_rss(
    pid: u32,
    program: &OsString,
    args: &[OsString],
) -> thread::JoinHandle<(u64, u64)> {
    let mut cmdline = Vec::new();
    for arg in std::iter::once(program).chain(args) {
        cmdline.extend_from_slice(arg.as_bytes());
        cmdline.push(0);
    }
    thread::spawn(move || {
        let (status, cmd) = (
            format!("/proc/{pid}/status"),
            format!("/proc/{pid}/cmdline"),
        );
        let (mut peak, mut threads) = (0, 0);
        while let Ok(text) = fs::read_to_string(&status) {
            if fs::read(&cmd).is_ok_and(|c| c == cmdline) {
                let field = |key: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key))
                        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                };
                match field("VmHWM:") {
                    Some(kb) => peak = u64::max(peak, kb * 1024),
                    // A zombie has no memory left to report.
                    None => break,
                }
                threads = u64::max(threads, field("Threads:").unwrap_or(0));
            }
            thread::sleep(Duration::from_millis(1));
        }
        (peak, threads)
    })
}

/// Runs `program args`, one run at a time, and returns what it left.
fn time_one(program: &OsString, args: &[OsString], query: &str) -> io::Result<ToolRun> {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let peak = sample_peak_rss(child.id(), program, args);
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_end(&mut out)?;
    let (status, ru) = wait_with_rusage(child.id())?;
    let (peak_rss, peak_threads) = peak.join().unwrap_or((0, 0));
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let cpu = CpuTime {
        user_s: measure::timeval_s(ru.ru_utime),
        sys_s: measure::timeval_s(ru.ru_stime),
    };

    let lines: Vec<&[u8]> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let ok = match query {
        "missing" => lines.is_empty() && status.code() != Some(2),
        _ => lines.len() == 1 && lines[0].ends_with(TARGET.as_bytes()) && status.success(),
    };
    Ok(ToolRun {
        ms,
        ok,
        cpu,
        peak_rss,
        peak_threads,
    })
}

/// `tmpfs` if `path` is on a tmpfs (the tree is in memory), else `disk`.
fn filesystem(path: &Path) -> &'static str {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return "disk";
    };
    // SAFETY: `statfs` is plain data for which all-zero bytes are a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path that lives for the call, and `st` is a valid,
    // writable `statfs`.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    if rc == 0 && st.f_type == libc::TMPFS_MAGIC {
        "tmpfs"
    } else {
        "disk"
    }
}

/// The medians of the user and of the system times of `runs`.
fn median_cpu(runs: &[CpuTime]) -> Option<CpuTime> {
    let mut user: Vec<f64> = runs.iter().map(|c| c.user_s).collect();
    let mut sys: Vec<f64> = runs.iter().map(|c| c.sys_s).collect();
    Some(CpuTime {
        user_s: median(&mut user)?,
        sys_s: median(&mut sys)?,
    })
}

/// `ito-bench find`.
pub(crate) fn command(args: &FindArgs) -> ExitCode {
    if args.runs == 0 || args.workers == 0 {
        return crate::usage_error("--runs and --workers must be at least 1");
    }
    if !args.tree.join(TARGET).is_file() {
        return crate::usage_error(&format!(
            "{} is not a tree made by `ito-bench find-tree` (no {TARGET} in it)",
            args.tree.display()
        ));
    }
    let sink = match measure::results_sink(args.record, "find.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let tools = match tools(args) {
        Ok(t) => t,
        Err(e) => return crate::usage_error(&e),
    };
    let entries = match count_entries(&args.tree) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("ito-bench: cannot read {}: {e}", args.tree.display());
            return ExitCode::FAILURE;
        }
    };
    let cpu_before = CpuSample::now();
    // times[tool][query], ok[tool][query]
    let mut times = vec![vec![Vec::new(); QUERIES.len()]; tools.len()];
    let mut oks = vec![vec![true; QUERIES.len()]; tools.len()];
    let mut cpus: Vec<Vec<Vec<CpuTime>>> = vec![vec![Vec::new(); QUERIES.len()]; tools.len()];
    let mut peaks = vec![vec![0u64; QUERIES.len()]; tools.len()];
    let mut threads = vec![vec![0u64; QUERIES.len()]; tools.len()];
    for round in 0..=args.runs {
        for (q, query) in QUERIES.iter().enumerate() {
            for k in 0..tools.len() {
                let t = (k + round) % tools.len();
                let tool = &tools[t];
                let argv = if q == 0 { &tool.missing } else { &tool.first };
                match time_one(&tool.program, argv, query) {
                    // Round 0 warms the cache.
                    Ok(run) if round > 0 => {
                        times[t][q].push(run.ms);
                        cpus[t][q].push(run.cpu);
                        peaks[t][q] = peaks[t][q].max(run.peak_rss);
                        threads[t][q] = threads[t][q].max(run.peak_threads);
                        oks[t][q] &= run.ok;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("ito-bench: cannot run {}: {e}", tool.name);
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    let other_cores = cpu_before.and_then(|b| CpuSample::now().map(|a| a.other_cores_since(&b)));
    if let Some(o) = other_cores.filter(|&o| o > 0.1) {
        eprintln!(
            "note: other processes kept {o:.2} cores busy during the measurement: not a quiet \
             machine"
        );
    }
    let medians: Vec<Vec<f64>> = times
        .iter_mut()
        .map(|qs| {
            qs.iter_mut()
                .map(|v| median(v).unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let find_i = tools.iter().position(|t| t.name == "find");
    let fd_i = tools.iter().position(|t| t.name == "fd");
    let mut all_ok = true;
    for (t, tool) in tools.iter().enumerate() {
        for (q, query) in QUERIES.iter().enumerate() {
            let m = medians[t][q];
            let rec = FindRecord {
                experiment: "find",
                tool: tool.name,
                query,
                median_ms: round3(m),
                min_ms: round3(times[t][q].iter().copied().fold(f64::INFINITY, f64::min)),
                cpu: median_cpu(&cpus[t][q]),
                peak_rss_bytes: (peaks[t][q] > 0).then_some(peaks[t][q]),
                peak_threads: (threads[t][q] > 0).then_some(threads[t][q]),
                ratio_vs_find: round3(m / find_i.map_or(f64::NAN, |f| medians[f][q])),
                ratio_vs_fd: fd_i.map(|f| round3(m / medians[f][q])),
                entries,
                workers: args.workers,
                runs: args.runs,
                tree: args.tree.display().to_string(),
                filesystem: filesystem(&args.tree),
                commit: measure::commit(),
                nproc: measure::nproc(),
                other_cores: other_cores.map(round3),
                ok: oks[t][q],
            };
            all_ok &= rec.ok;
            sink.emit_line(&serde_json::to_string(&rec).expect("a FindRecord serializes"));
        }
    }
    summary(&tools, &medians, find_i, fd_i);
    if all_ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("ito-bench: a tool printed something other than expected (ok: false)");
        ExitCode::FAILURE
    }
}

/// The machine's busy CPU time and this process's (children included), in clock ticks.
struct CpuSample {
    at: Instant,
    machine_busy: u64,
    ours: u64,
}

impl CpuSample {
    /// `None` where `/proc` cannot tell.
    fn now() -> Option<CpuSample> {
        let stat = fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...
        let total: u64 = cpu.iter().take(8).sum();
        let idle = cpu.get(3)? + cpu.get(4)?;
        let me = fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name (which may hold spaces): utime is the 14th field of
        // the line, i.e. the 12th after ") ", then stime, cutime, cstime.
        let rest = &me[me.rfind(')')? + 2..];
        let f: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .filter_map(|x| x.parse().ok())
            .collect();
        Some(CpuSample {
            at: Instant::now(),
            machine_busy: total - idle,
            ours: f.iter().sum(),
        })
    }

    /// Cores other processes used on average since `before`.
    fn other_cores_since(&self, before: &CpuSample) -> f64 {
        let ticks = 100.0; // USER_HZ on Linux
        let busy = self.machine_busy.saturating_sub(before.machine_busy) as f64;
        let ours = self.ours.saturating_sub(before.ours) as f64;
        let secs = self.at.duration_since(before.at).as_secs_f64();
        ((busy - ours).max(0.0) / ticks / secs.max(1e-3)).max(0.0)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The targets, on stderr.
fn summary(tools: &[Tool], medians: &[Vec<f64>], find_i: Option<usize>, fd_i: Option<usize>) {
    let ito = 0;
    debug_assert_eq!(tools[ito].name, "ito-find");
    if let Some(f) = find_i {
        let r = medians[ito][0] / medians[f][0];
        eprintln!(
            "missing name: ito-find {:.1} ms, find {:.1} ms: {r:.2}x find (target <= 0.5x): {}",
            medians[ito][0],
            medians[f][0],
            if r <= 0.5 { "met" } else { "MISSED" }
        );
    }
    if let Some(f) = fd_i {
        let r = medians[ito][0] / medians[f][0];
        eprintln!(
            "missing name: fd {:.1} ms: {r:.2}x fd (target <= 0.7x): {}",
            medians[f][0],
            if r <= 0.7 { "met" } else { "MISSED" }
        );
    }
    let first = medians[ito][1];
    eprintln!(
        "--first at depth 1: ito-find {first:.1} ms (target < 20 ms on the 1M tree): {}",
        if first < 20.0 { "met" } else { "MISSED" }
    );
}

#[cfg(test)]
mod tests {
    use super::tree::make_tree;
    use super::*;

    #[test]
    fn trees_are_deterministic_and_complete() {
        let base = std::env::temp_dir().join(format!("ito-bench-tree-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        assert_eq!(make_tree(&a, 300, 200, 7).unwrap(), 501);
        make_tree(&b, 300, 200, 7).unwrap();
        assert_eq!(count_entries(&a).unwrap(), 501);
        let list = |d: &Path| {
            let mut v = Vec::new();
            let mut stack = vec![d.to_path_buf()];
            while let Some(x) = stack.pop() {
                for e in fs::read_dir(&x).unwrap() {
                    let p = e.unwrap().path();
                    v.push(p.strip_prefix(d).unwrap().to_path_buf());
                    if p.is_dir() {
                        stack.push(p);
                    }
                }
            }
            v.sort();
            v
        };
        assert_eq!(list(&a), list(&b));
        assert!(a.join(TARGET).is_file());
        assert!(
            list(&a).iter().any(|p| p.components().count() > 5),
            "some depth"
        );
        fs::remove_dir_all(&base).unwrap();
    }
}
