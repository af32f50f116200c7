//! Which steps `seeds` runs, at which sizes, under which timeouts.
//!
//! Every step runs one run of each cell it measures, in a child process of its own, and the
//! plan runs in rounds ([`in_rounds`]): the setups first, then one run of every cell, then
//! the second run of every cell, and so on. So a cell's runs are minutes apart, in separate
//! processes: its spread holds the machine's slow drifts and whatever a process draws at its
//! start (memory layout, thread placement), which runs seconds apart in one process would
//! share and hide. Within a round, the runs of one configuration alternate between ito and
//! its peers, so that both see the same load: where each implementation's run is a step of
//! its own (fib, and the Scala peer's one JVM a run) the plan alternates them
//! ([`steps::interleave`]); every other experiment measures all its implementations in one
//! invocation, which alternates them itself.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use serde_json::{Value, json};

use super::PeerPolicy;
use crate::measure::{self, Record};

pub(crate) mod pictures;
mod sizes;
mod steps;

use sizes::*;
use steps::*;

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
    /// The documents' sizes where they fit in 15 minutes on 2 cores (with the fib series'
    /// time budget, [`crate::seeds::budget`]).
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
    /// A scratch directory for the find tree, on tmpfs where there is one (removed at the
    /// end).
    pub(crate) scratch: PathBuf,
    /// A scratch directory on disk for the second find tree (removed at the end).
    pub(crate) disk_scratch: PathBuf,
    /// `--ito-find`.
    pub(crate) ito_find: Option<PathBuf>,
    /// Which steps run: the measurements, the timelines (`traces/` of the run's output), or
    /// both.
    pub(crate) pictures: PictureSteps,
    /// Where the timelines go.
    pub(crate) traces: PathBuf,
    /// `--fib-n`: fib's argument in document 000 instead of the size's.
    pub(crate) fib_n: Option<u64>,
}

/// Which steps of a run go in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PictureSteps {
    /// The measurements only.
    No,
    /// The measurements, then the timelines.
    Yes,
    /// The timelines only (and the setups they need: the find tree).
    Only,
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
    /// The round the step runs in ([`in_rounds`]); setups run before every round.
    pub(crate) round: u32,
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
            round: 1,
        }
    }

    /// This step, which measures `--repeat runs` runs of each of its cells, as `runs` steps
    /// of one run each, one a round.
    fn one_a_round(self, runs: u32) -> impl Iterator<Item = Step> {
        let at = self.args.iter().position(|a| a == "--repeat");
        (1..=runs).map(move |round| {
            let mut step = self.clone();
            if let Some(at) = at {
                step.args[at + 1] = "1".into();
            }
            if runs > 1 {
                step.label = format!("{}, round {round} of {runs}", self.label);
            }
            step.estimate = self.estimate / runs;
            step.round = round;
            step
        })
    }
}

/// The steps in rounds: the setups (in plan order), then every step of round 1, then of
/// round 2, and so on, each round in plan order.
fn in_rounds(steps: Vec<Step>) -> Vec<Step> {
    let (mut out, mut runs): (Vec<Step>, Vec<Step>) =
        steps.into_iter().partition(|s| s.provides.is_some());
    runs.sort_by_key(|s| s.round);
    out.extend(runs);
    out
}

/// The steps of one run.
pub(crate) struct Plan {
    /// In order.
    pub(crate) steps: Vec<Step>,
}

impl Plan {
    /// The steps for `cfg`.
    pub(crate) fn build(cfg: &Config) -> Plan {
        let mut s = Sizes::of(cfg.size);
        if let Some(n) = cfg.fib_n {
            s.fib_n = n;
        }
        let workers = measure::nproc();
        let mut steps = Vec::new();
        let wants = |d: Doc| cfg.only.is_empty() || cfg.only.contains(&d);
        if cfg.pictures != PictureSteps::Only {
            let mut measured = Vec::new();
            measure_steps(&mut measured, cfg, &s, workers);
            steps = in_rounds(measured);
        } else if wants(Doc::D002) {
            tree_steps(&mut steps, &s, cfg);
        }
        if cfg.pictures != PictureSteps::No {
            let tree = cfg.scratch.join("tree");
            let all = pictures::pictures(&s, workers, &tree, wants);
            pictures::picture_steps(&mut steps, all, &cfg.traces, "tree", s.picture_chain_n);
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

/// The measurement steps of every document `cfg` selects.
fn measure_steps(steps: &mut Vec<Step>, cfg: &Config, s: &Sizes, workers: usize) {
    let wants = |d: Doc| cfg.only.is_empty() || cfg.only.contains(&d);
    let peers = cfg.peers != PeerPolicy::None;
    if wants(Doc::D000) {
        fib_steps(steps, s, workers, cfg, peers);
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
        let (w, r) = (workers.to_string(), s.cell_runs.to_string());
        args.extend(["--impl", "ito,rayon,seq", "--workers", &w, "--repeat", &r]);
        args.extend(["--timeout-s", "120"]);
        let est = match cfg.size {
            Size::Smoke => 0.5,
            Size::Quick => 2.0,
            Size::Full => 90.0,
        };
        steps.extend(
            Step::bench(
                Doc::D000,
                "join: fib, tree, sort, nqueens",
                &args,
                600.0,
                est,
            )
            .one_a_round(s.cell_runs),
        );
    }
    if wants(Doc::D001) {
        chain_steps(steps, s, workers, peers);
        let (w, r, rounds) = (
            workers.to_string(),
            s.cell_runs.to_string(),
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
        let mut fi = vec!["fan-in", "--senders", "8", "--messages", &rounds];
        fi.extend(common);
        // Seconds a message, for the estimate.
        for (label, args, per) in [("ping-pong", pp, 3e-6), ("fan-in", fi, 8e-6)] {
            let est = s.msg_rounds as f64 * per + 0.1;
            let step = Step::bench(Doc::D001, label, &args, 300.0, est);
            steps.extend(step.one_a_round(s.cell_runs));
        }
    }
    if wants(Doc::D002) {
        find_steps(steps, s, cfg);
    }
    if wants(Doc::D003) {
        pool_steps(steps, s, workers);
    }
    if wants(Doc::D004) {
        futures_steps(steps, s, workers);
        // The comparison runs without the auditor (its reads change what each
        // implementation does); one run with it reports the audits per second beside.
        let (ops, r) = (s.bank_ops.to_string(), s.cell_runs.to_string());
        for (label, audit, repeat) in [
            ("stm-bank: ito::stm vs stm crate vs mutex", false, &r),
            (
                "stm-bank with the auditor (audits per second)",
                true,
                &"1".to_owned(),
            ),
        ] {
            let mut args = vec![
                "stm-bank",
                "--threads",
                "1,2",
                "--ops",
                &ops,
                "--repeat",
                repeat,
                "--timeout-s",
                "120",
            ];
            if audit {
                args.push("--audit");
            }
            let reps: u32 = repeat.parse().unwrap_or(1);
            let est = s.bank_ops as f64 * 1e-7 * 6.0 * f64::from(reps) + 0.1;
            steps.extend(Step::bench(Doc::D004, label, &args, 600.0, est).one_a_round(reps));
        }
    }
}
