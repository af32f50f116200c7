//! Which steps `seeds` runs, at which sizes, under which timeouts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use serde_json::{Value, json};

use super::PeerPolicy;
use crate::measure::{self, Record};

/// One of the five source documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub(crate) enum Doc {
    /// "Avoid Await.result": fib on futures (and ito's fork-join).
    #[value(name = "000")]
    D000,
    /// spawn/chain: processes with mailboxes (and messaging).
    #[value(name = "001")]
    D001,
    /// Parallel find.
    #[value(name = "002")]
    D002,
    /// Coro thread pools.
    #[value(name = "003")]
    D003,
    /// STM-based futures and promises (and the STM bank).
    #[value(name = "004")]
    D004,
}

impl Doc {
    /// Every document, in order.
    pub(crate) const ALL: [Doc; 5] = [Doc::D000, Doc::D001, Doc::D002, Doc::D003, Doc::D004];

    /// `"000"` to `"004"`.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Doc::D000 => "000",
            Doc::D001 => "001",
            Doc::D002 => "002",
            Doc::D003 => "003",
            Doc::D004 => "004",
        }
    }
}

/// How big the run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// Seconds: every step at a token size (CI).
    Smoke,
    /// Under 3 minutes on 2 cores.
    Quick,
    /// The documents' sizes where they fit in about 20 minutes.
    Full,
}

impl Size {
    /// `smoke`, `quick`, `full`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Size::Smoke => "smoke",
            Size::Quick => "quick",
            Size::Full => "full",
        }
    }
}

/// What `Plan::build` needs to know.
pub(crate) struct Config {
    pub(crate) size: Size,
    pub(crate) peers: PeerPolicy,
    /// Empty: every document.
    pub(crate) only: Vec<Doc>,
    /// The workspace root (bench/peers).
    pub(crate) root: PathBuf,
    /// A scratch directory for the find tree (removed at the end).
    pub(crate) scratch: PathBuf,
    /// `--ito-find`.
    pub(crate) ito_find: Option<PathBuf>,
}

/// The program a step runs.
#[derive(Clone, Debug)]
pub(crate) enum Program {
    /// This executable.
    SelfExe,
    /// Another program (a peer's script, cargo).
    Path(PathBuf),
}

/// How a step's stdout becomes records.
#[derive(Clone, Debug)]
pub(crate) enum Parse {
    /// Every line that is a JSON object with an `experiment` field is a record.
    Records,
    /// A setup step: its output is only logged; a `skipped:` line skips the steps that need it.
    Setup,
    /// The Scala fib peer's one line `{"result","seconds","rss_bytes","peak_threads"}`.
    ScalaFib {
        /// Argument of fib (the result is checked against it).
        n: u64,
    },
}

/// One step: one child process.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The document whose experiment this is.
    pub(crate) doc: Doc,
    /// Shown in the progress and the report.
    pub(crate) label: String,
    /// What runs.
    pub(crate) program: Program,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// How its output is read.
    pub(crate) parse: Parse,
    /// The child's process group is killed after this.
    pub(crate) timeout: Duration,
    /// Expected wall-clock time, for the progress bar's estimate.
    pub(crate) estimate: Duration,
    /// The record a step that leaves none (timeout, crash, skip) stands in with.
    pub(crate) template: Option<Value>,
    /// A fib series: after a failed step, the later steps of the same series are not run.
    pub(crate) series: Option<String>,
    /// Setup steps this one needs (by their `provides`).
    pub(crate) needs: Vec<&'static str>,
    /// What this setup step provides.
    pub(crate) provides: Option<&'static str>,
    /// Whether the step measures ito (a failure of it is a failure of the command).
    pub(crate) ito_step: bool,
}

impl Step {
    fn bench(
        doc: Doc,
        label: impl Into<String>,
        args: &[&str],
        timeout_s: f64,
        est_s: f64,
    ) -> Self {
        Step {
            doc,
            label: label.into(),
            program: Program::SelfExe,
            args: args.iter().map(|s| s.to_string()).collect(),
            parse: Parse::Records,
            // The subcommands keep their own timeouts; this one only catches a hang of the
            // whole child.
            timeout: Duration::from_secs_f64(timeout_s),
            estimate: Duration::from_secs_f64(est_s),
            template: None,
            series: None,
            needs: Vec::new(),
            provides: None,
            ito_step: true,
        }
    }
}

/// The steps of one run.
pub(crate) struct Plan {
    /// In order.
    pub(crate) steps: Vec<Step>,
}

/// Sizes of one [`Size`].
struct Sizes {
    fib_n: u64,
    fib_cutoffs: &'static [u64],
    fib_timeout_s: f64,
    chain_n: &'static [u64],
    chain_big: Option<u64>,
    chain_repeat: u32,
    chain_timeout_s: f64,
    msg_rounds: u64,
    msg_repeat: u32,
    find_dirs: usize,
    find_files: usize,
    find_runs: usize,
    pool_runs: u32,
    pool_sleep_runs: u32,
    pool_big_runs: u32,
    fut_repeat: u32,
    fut_first_repeat: u32,
    fut_rounds: usize,
    join_n: &'static str,
    join_cutoff: Option<&'static str>,
    join_repeat: u32,
    bank_ops: u64,
    bank_repeat: u32,
}

impl Sizes {
    fn of(size: Size) -> Sizes {
        match size {
            Size::Smoke => Sizes {
                fib_n: 20,
                fib_cutoffs: &[15, 5, 2],
                fib_timeout_s: 3.0,
                chain_n: &[1000],
                chain_big: None,
                chain_repeat: 1,
                chain_timeout_s: 30.0,
                msg_rounds: 1000,
                msg_repeat: 1,
                find_dirs: 200,
                find_files: 200,
                find_runs: 1,
                pool_runs: 5,
                pool_sleep_runs: 2,
                pool_big_runs: 1,
                fut_repeat: 1,
                fut_first_repeat: 2,
                fut_rounds: 2,
                join_n: "20,8,10000,6",
                join_cutoff: Some("2,8"),
                join_repeat: 1,
                bank_ops: 10_000,
                bank_repeat: 1,
            },
            Size::Quick => Sizes {
                fib_n: 34,
                fib_cutoffs: &[30, 25, 20, 15, 10, 5, 2],
                fib_timeout_s: 10.0,
                chain_n: &[10_000, 100_000],
                chain_big: None,
                chain_repeat: 1,
                chain_timeout_s: 30.0,
                msg_rounds: 100_000,
                msg_repeat: 3,
                find_dirs: 10_000,
                find_files: 10_000,
                find_runs: 3,
                pool_runs: 200,
                pool_sleep_runs: 10,
                pool_big_runs: 5,
                fut_repeat: 3,
                fut_first_repeat: 20,
                fut_rounds: 20,
                join_n: "34,18,1000000,9",
                join_cutoff: Some("2,8"),
                join_repeat: 1,
                bank_ops: 200_000,
                bank_repeat: 3,
            },
            Size::Full => Sizes {
                fib_n: 40,
                fib_cutoffs: &[40, 35, 30, 25, 20, 15, 10, 5, 2],
                fib_timeout_s: 60.0,
                chain_n: &[10_000, 100_000, 1_000_000],
                chain_big: Some(10_000_000),
                chain_repeat: 3,
                chain_timeout_s: 120.0,
                msg_rounds: 1_000_000,
                msg_repeat: 5,
                find_dirs: 35_000,
                find_files: 31_000,
                find_runs: 11,
                pool_runs: 2000,
                pool_sleep_runs: 100,
                pool_big_runs: 20,
                fut_repeat: 10,
                fut_first_repeat: 100,
                fut_rounds: 100,
                join_n: "40,20,4000000,11",
                join_cutoff: None,
                join_repeat: 3,
                bank_ops: 1_000_000,
                bank_repeat: 5,
            },
        }
    }
}

/// A fib series: implementation, style as given to `fib --style`, and the style it records.
const FIB_SERIES: [(&str, &str); 7] = [
    ("ito", "flat"),
    ("ito", "wait"),
    ("ito", "async"),
    ("ito", "join"),
    ("tokio", "async"),
    ("tokio", "wait"),
    ("rayon", "join"),
];

impl Plan {
    /// The steps for `cfg`.
    pub(crate) fn build(cfg: &Config) -> Plan {
        let s = Sizes::of(cfg.size);
        let workers = measure::nproc();
        let mut steps = Vec::new();
        let wants = |d: Doc| cfg.only.is_empty() || cfg.only.contains(&d);
        let peers = cfg.peers != PeerPolicy::None;
        if wants(Doc::D000) {
            fib_steps(&mut steps, &s, workers, cfg, peers);
            let mut args = vec![
                "join",
                "--workload",
                "fib,tree,sort,nqueens",
                "--n",
                s.join_n,
            ];
            if let Some(c) = s.join_cutoff {
                args.extend(["--cutoff", c]);
            }
            let (w, r) = (workers.to_string(), s.join_repeat.to_string());
            args.extend(["--impl", "ito,rayon,seq", "--workers", &w, "--repeat", &r]);
            args.extend(["--timeout-s", "120"]);
            let est = match cfg.size {
                Size::Smoke => 0.5,
                Size::Quick => 2.0,
                Size::Full => 90.0,
            };
            steps.push(Step::bench(
                Doc::D000,
                "join: fib, tree, sort, nqueens",
                &args,
                600.0,
                est,
            ));
        }
        if wants(Doc::D001) {
            chain_steps(&mut steps, &s, workers, peers);
            let (w, r, rounds) = (
                workers.to_string(),
                s.msg_repeat.to_string(),
                s.msg_rounds.to_string(),
            );
            let common = [
                "--impl",
                "ito,tokio",
                "--workers",
                &w,
                "--repeat",
                &r,
                "--timeout-s",
                "60",
            ];
            let mut pp = vec!["ping-pong", "--rounds", &rounds];
            pp.extend(common);
            steps.push(Step::bench(
                Doc::D001,
                "ping-pong",
                &pp,
                300.0,
                s.msg_rounds as f64 * 1e-6 * 3.0 + 0.1,
            ));
            let mut fi = vec!["fan-in", "--senders", "8", "--messages", &rounds];
            fi.extend(common);
            steps.push(Step::bench(
                Doc::D001,
                "fan-in",
                &fi,
                300.0,
                s.msg_rounds as f64 * 1e-6 * 8.0 + 0.1,
            ));
        }
        if wants(Doc::D002) {
            find_steps(&mut steps, &s, workers, cfg);
        }
        if wants(Doc::D003) {
            pool_steps(&mut steps, &s, workers);
        }
        if wants(Doc::D004) {
            futures_steps(&mut steps, &s, workers);
            let (ops, r) = (s.bank_ops.to_string(), s.bank_repeat.to_string());
            let args = [
                "stm-bank",
                "--threads",
                "1,2",
                "--ops",
                &ops,
                "--repeat",
                &r,
                "--audit",
                "--timeout-s",
                "120",
            ];
            let est = s.bank_ops as f64 * 1e-7 * 6.0 * s.bank_repeat as f64 + 0.1;
            steps.push(Step::bench(
                Doc::D004,
                "stm-bank: ito::stm vs stm crate vs mutex",
                &args,
                600.0,
                est,
            ));
        }
        Plan { steps }
    }

    /// The steps as text (`--dry-run`).
    pub(crate) fn describe(&self) -> String {
        let mut out = String::new();
        let total: f64 = self.steps.iter().map(|s| s.estimate.as_secs_f64()).sum();
        for (i, s) in self.steps.iter().enumerate() {
            let prog = match &s.program {
                Program::SelfExe => "ito-bench".to_owned(),
                Program::Path(p) => p.display().to_string(),
            };
            let _ = writeln!(
                out,
                "{:>3} [{}] {:<44} timeout {:>5.0} s  est {:>6.1} s  {} {}",
                i + 1,
                s.doc.id(),
                s.label,
                s.timeout.as_secs_f64(),
                s.estimate.as_secs_f64(),
                prog,
                s.args.join(" ")
            );
        }
        let _ = writeln!(out, "{} steps, estimated {total:.0} s", self.steps.len());
        out
    }
}

/// Document 000: every fib series at every cutoff, interleaved (for each cutoff, every
/// series), coarse to fine; the Scala peer when Maven and Java are there.
fn fib_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize, cfg: &Config, peers: bool) {
    let n = s.fib_n;
    let ns = n.to_string();
    let t = s.fib_timeout_s;
    let ts = t.to_string();
    // A sequential reference, once.
    let seq_template = Record::template("fib", "seq", "seq", n, n.max(2), 1);
    let mut seq = Step::bench(
        Doc::D000,
        format!("fib({n}) seq"),
        &[
            "fib",
            "--n",
            &ns,
            "--cutoff",
            &n.max(2).to_string(),
            "--impl",
            "seq",
            "--style",
            "wait",
            "--timeout-s",
            &ts,
        ],
        t + 5.0,
        fib_estimate(n, 2),
    );
    seq.template = Some(to_value(&seq_template));
    steps.push(seq);
    let script = cfg.root.join("bench/peers/fib/run.sh");
    if peers {
        let mut build = Step::bench(Doc::D000, "build the Scala peer (Maven)", &[], 600.0, 5.0);
        build.program = Program::Path(script.clone());
        build.args = vec!["build".into()];
        build.parse = Parse::Setup;
        build.provides = Some("scala");
        build.ito_step = false;
        steps.push(build);
    }
    let w = workers.to_string();
    for &cutoff in s.fib_cutoffs {
        let cs = cutoff.to_string();
        for (imp, style) in FIB_SERIES {
            let template = Record::template("fib", imp, style, n, cutoff, workers);
            let mut step = Step::bench(
                Doc::D000,
                format!("fib({n}) {imp}/{style} cutoff {cutoff}"),
                &[
                    "fib",
                    "--n",
                    &ns,
                    "--cutoff",
                    &cs,
                    "--impl",
                    imp,
                    "--style",
                    style,
                    "--workers",
                    &w,
                    "--timeout-s",
                    &ts,
                ],
                t + 5.0,
                fib_estimate(n, cutoff) * if imp == "ito" { 1.0 } else { 2.0 },
            );
            step.template = Some(to_value(&template));
            step.series = Some(format!("fib {imp}/{style}"));
            step.ito_step = imp == "ito";
            steps.push(step);
        }
        if peers {
            for style in ["flatmap", "await"] {
                let template = Record::template("fib", "scala", style, n, cutoff, workers);
                let mut step = Step::bench(
                    Doc::D000,
                    format!("fib({n}) scala/{style} cutoff {cutoff}"),
                    &[],
                    t,
                    0.7 + fib_estimate(n, cutoff) * 4.0,
                );
                step.program = Program::Path(script.clone());
                step.args = vec![style.into(), ns.clone(), cs.clone(), w.clone()];
                step.parse = Parse::ScalaFib { n };
                step.template = Some(to_value(&template));
                step.series = Some(format!("fib scala/{style}"));
                step.needs = vec!["scala"];
                step.ito_step = false;
                steps.push(step);
            }
        }
    }
}

/// A rough time of one fib run, for the estimate: the sequential fib(n) (about 0.35 s for
/// fib(40) on the reference machine) plus 50 ns per task, plus the child's start.
fn fib_estimate(n: u64, cutoff: u64) -> f64 {
    let seq = 0.35 * 1.618f64.powi(n as i32 - 40);
    let tasks = crate::fib::task_count(n, cutoff) as f64;
    0.05 + seq + tasks * 50e-9
}

/// Document 001: the chain at each N, every impl in one step (the subcommand runs each in a
/// child of its own); with `chain_big`, ito and tokio only at that N.
fn chain_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize, peers: bool) {
    let imps = if peers {
        "ito,tokio,go,elixir"
    } else {
        "ito,tokio"
    };
    let (w, r, t) = (
        workers.to_string(),
        s.chain_repeat.to_string(),
        s.chain_timeout_s.to_string(),
    );
    let mut add = |n: u64, imps: &str, label: String| {
        let ns = n.to_string();
        let per = n as f64 * 1e-6;
        // ito, two tokio flavours, go (3 us a process), elixir (5 us a process), starts.
        let est =
            (0.3 + per * (0.5 + 0.5 + 1.0 + if peers { 8.0 } else { 0.0 })) * s.chain_repeat as f64;
        let args = [
            "chain",
            "--n",
            &ns,
            "--impl",
            imps,
            "--workers",
            &w,
            "--repeat",
            &r,
            "--timeout-s",
            &t,
        ];
        let limit = (s.chain_timeout_s + 5.0) * 4.0 * s.chain_repeat as f64;
        steps.push(Step::bench(Doc::D001, label, &args, limit, est));
    };
    for &n in s.chain_n {
        add(n, imps, format!("chain of {n}: {imps}"));
    }
    if let Some(n) = s.chain_big {
        add(n, "ito,tokio", format!("chain of {n}: ito,tokio"));
    }
}

/// Document 002: build ito-find (unless given), make the tree, time the tools.
fn find_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize, cfg: &Config) {
    let ito_find = match &cfg.ito_find {
        Some(p) => p.clone(),
        None => {
            let exe = std::env::current_exe().unwrap_or_default();
            let release = exe
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|d| d == "release");
            let cargo =
                std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from);
            let mut build = Step::bench(Doc::D002, "build ito-find (cargo)", &[], 900.0, 3.0);
            build.program = Program::Path(cargo);
            build.args = ["build", "-p", "ito-find"].map(String::from).to_vec();
            if release {
                build.args.push("--release".into());
            }
            build.parse = Parse::Setup;
            build.provides = Some("ito-find");
            steps.push(build);
            exe.with_file_name("ito-find")
        }
    };
    let tree = cfg.scratch.join("tree");
    let (d, f) = (s.find_dirs.to_string(), s.find_files.to_string());
    let entries = (s.find_dirs + s.find_files) as f64;
    let mut make = Step::bench(
        Doc::D002,
        format!("find: make a {}-entry tree", s.find_dirs + s.find_files),
        &[
            "find-tree",
            "--dirs",
            &d,
            "--files",
            &f,
            "--seed",
            "2",
            "--out",
            &tree.display().to_string(),
        ],
        600.0,
        entries * 100e-6 + 0.1,
    );
    make.parse = Parse::Setup;
    make.provides = Some("tree");
    steps.push(make);
    let (r, w) = (s.find_runs.to_string(), workers.to_string());
    let mut find = Step::bench(
        Doc::D002,
        "find: ito-find vs GNU find vs fd",
        &[
            "find",
            "--tree",
            &tree.display().to_string(),
            "--runs",
            &r,
            "--workers",
            &w,
            "--ito-find",
            &ito_find.display().to_string(),
        ],
        900.0,
        // 2 queries, 3 tools, a warm-up round: about 6 us an entry for the slowest.
        (s.find_runs + 1) as f64 * entries * 6e-6 * 3.0 + 0.2,
    );
    find.needs = if cfg.ito_find.is_some() {
        vec!["tree"]
    } else {
        vec!["ito-find", "tree"]
    };
    steps.push(find);
}

/// Document 003: the four modes with and without the 1 ms sleep (pool sizes 8 and 50), and
/// 10,000 tasks for the memory.
fn pool_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize) {
    let w = workers.to_string();
    let modes = "spawn,pool,bounded,channel-pool";
    let runs = s.pool_runs.to_string();
    let sruns = s.pool_sleep_runs.to_string();
    let bruns = s.pool_big_runs.to_string();
    let configs: [(&str, &str, &str, &str, f64); 3] = [
        // label, tasks, runs, sleep, estimated seconds per configuration
        (
            "pool: 100 tasks",
            "100",
            &runs,
            "0",
            s.pool_runs as f64 * 100e-6 + 0.05,
        ),
        (
            "pool: 100 tasks, 1 ms sleep",
            "100",
            &sruns,
            "1",
            s.pool_sleep_runs as f64 * 8e-3 + 0.05,
        ),
        (
            "pool: 10,000 tasks (memory)",
            "10000",
            &bruns,
            "0",
            s.pool_big_runs as f64 * 10e-3 + 0.05,
        ),
    ];
    for (label, tasks, runs, sleep, per) in configs {
        let sizes = if tasks == "10000" { "8" } else { "8,50" };
        let args = [
            "pool",
            "--mode",
            modes,
            "--tasks",
            tasks,
            "--runs",
            runs,
            "--sleep-ms",
            sleep,
            "--pool-size",
            sizes,
            "--impl",
            "ito,tokio",
            "--workers",
            &w,
            "--timeout-s",
            "120",
        ];
        // 4 modes (2 of them with 2 pool sizes) x 2 impls, each a child process.
        let configs = if tasks == "10000" { 8.0 } else { 12.0 };
        steps.push(Step::bench(Doc::D003, label, &args, 900.0, configs * per));
    }
}

/// Document 004: its six benchmarks.
fn futures_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize) {
    let (w, r, fr, rounds) = (
        workers.to_string(),
        s.fut_repeat.to_string(),
        s.fut_first_repeat.to_string(),
        s.fut_rounds.to_string(),
    );
    let benches: [(&str, &[&str], &str, f64); 6] = [
        ("or-alt", &["--chain", "10,50,100"], &r, 0.05),
        ("read-seq", &["--reads", "100,500,1000"], &r, 0.05),
        ("read-concurrent", &["--readers", "10,30,60"], &r, 0.05),
        ("first-completed", &["--futures", "10,30,60"], &fr, 0.002),
        ("callbacks", &["--count", "10,50,100"], &r, 0.03),
        (
            "philosophers",
            &["--n", "3,20,65", "--rounds", &rounds],
            &r,
            0.01,
        ),
    ];
    for (bench, sizes, repeat, per_rep) in benches {
        let mut args = vec!["futures", bench];
        args.extend_from_slice(sizes);
        args.extend(["--workers", &w, "--repeat", repeat, "--timeout-s", "60"]);
        let reps: f64 = repeat.parse().unwrap_or(1.0);
        steps.push(Step::bench(
            Doc::D004,
            format!("futures {bench}"),
            &args,
            600.0,
            0.1 + reps * per_rep * 3.0,
        ));
    }
}

fn to_value(rec: &Record) -> Value {
    serde_json::to_value(rec).unwrap_or_else(|_| json!({}))
}
