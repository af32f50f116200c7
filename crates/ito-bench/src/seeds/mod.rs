//! `ito-bench seeds`: every experiment of the five source documents
//! (indexed in `bench/seeds.md`) in one command, against their peers, with plots and a
//! report.
//!
//! ```text
//! ito-bench seeds [--quick | --smoke] [--out DIR] [--peers all|built|none] [--only 000,...]
//!                 [--ito-find PATH] [--pictures auto|yes|no|only] [--dry-run]
//!                 [--compare OLD/results.jsonl]
//! ito-bench seeds --from DIR/results.jsonl [--out DIR] [--compare OLD/results.jsonl]
//! ```
//!
//! The steps ([`plan`]) run one at a time, each as a child process in its own process group
//! ([`run`]): this binary's own subcommands (`fib`, `chain`, `find`, `pool`, `futures`, ...)
//! and the peers' scripts in `bench/peers/` (the Scala fib of document 000). A step past its
//! timeout has its whole process group killed and is recorded as failed (`"error":
//! "timeout"`): a deadlocking `Await.result` run never hangs the command. In a fib series
//! (one implementation and style across the cutoffs, coarse to fine), the cutoffs after a
//! failure are not run and are recorded as failed (`"not_run": true`), as the document
//! marks every cutoff from the first deadlock on; a cutoff predicted to take longer a run
//! than the series' time budget is not run either ([`budget`]), and is recorded as not
//! measured (`"over_budget": true`), never as a failure. Each fib run is a step of its own,
//! and the runs of one configuration alternate between ito and its peers
//! ([`plan`]), so that both see the same drift of the machine's load.
//!
//! Every JSON line the steps print is checked against its experiment's schema
//! ([`schema`]), annotated with the commit, `nproc`, the CPU model and the date
//! ([`collect`]), and appended to `DIR/results.jsonl` as it comes. At the end: one CSV per
//! experiment ([`csv`]), one SVG plot per experiment ([`plot`]) and `DIR/report.md`
//! ([`report`]): for each document, what it measured, its published figures
//! ([`published`]), ours beside them (each cell's median, interquartile range, run count and range,
//! wall time and CPU time), the ratio to each peer and the verdict at each configuration
//! ([`analysis`]); with `--compare`, the verdicts that differ from a recorded run's
//! ([`compare`]). `docs/benchmarks.md` says how a verdict is reached.
//!
//! The timelines (`--pictures`; by default in a full run only): after the measurements, one
//! step per picture ([`plan::pictures`]) runs `ito-bench trace record`, which traces one run
//! (`ITO_TRACE`) into `DIR/traces/NAME.json` and draws it to `DIR/traces/NAME.svg` with its
//! figures in `NAME.summary.json`: document 002's three find programs on the find tree, fib
//! at cutoff 10 in every ito style, the chain. The report shows each drawing in its
//! document's section with what its summary says ([`timelines`]). The traces are large (a
//! million-process chain's is about 900 MB): `DIR/traces/.gitignore` keeps them out of git.
//! `--pictures only` runs only the timelines (and the find tree they walk), into
//! `bench/results/<date>-<commit>-pictures/` by default.
//!
//! `--quick` is meant to finish in under 3 minutes on a 2-core machine, the full run in under
//! 15; `--smoke` takes seconds (CI). `--peers built` never builds a peer (no
//! download: the Scala peer needs Maven Central the first time), `--peers none` runs none.
//! Exit status: 0 when every ito measurement succeeded (peers may fail: that is what some
//! documents show), 1 when one did not or the output could not be written, 2 for bad
//! arguments.

mod analysis;
mod budget;
mod collect;
mod compare;
mod csv;
mod plan;
mod plot;
mod published;
mod report;
mod run;
pub(crate) mod schema;
mod timelines;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::measure;
use collect::Environment;
use plan::{Plan, Size};
use run::{Outcome, StepResult};

/// The directory of the run's output that holds its timelines.
const TRACES: &str = "traces";

/// Arguments of `seeds`.
#[derive(Args, Debug)]
#[command(
    about = "Every experiment of the five documents, against their peers, with plots and a report",
    long_about = "Runs every experiment of the five source documents (fib and fork-join: 000; \
        the process chain and messages: 001; find: 002; pools: 003; futures, promises and \
        STM: 004) on ito and its peers, each step a child process under a timeout (a \
        deadlocked peer is killed and shown as failed), with a progress bar. Writes \
        results.jsonl (every measurement with commit, nproc, CPU model and date), one CSV \
        and one SVG plot per experiment, the scheduler's timelines (traces/, in a full run \
        or with --pictures) and report.md to --out [default: \
        bench/results/<date>-<commit>[-quick]/ of the workspace]. Exit status: 0 when every \
        ito measurement succeeded, 1 otherwise, 2 for bad arguments."
)]
pub(crate) struct SeedsArgs {
    /// Small sizes: under 3 minutes on a 2-core machine.
    #[arg(long, conflicts_with = "smoke")]
    quick: bool,
    /// Tiny sizes and short timeouts (a few seconds; for CI): every step, no meaningful figures.
    #[arg(long)]
    smoke: bool,
    /// Output directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Which peers run: all (building them when their toolchain is installed), built (only
    /// those already built: never downloads), none.
    #[arg(long, value_enum, default_value = "all")]
    peers: PeerPolicy,
    /// Only these documents, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<plan::Doc>,
    /// The ito-find binary [default: built with cargo next to this executable].
    #[arg(long)]
    ito_find: Option<PathBuf>,
    /// Draw the timelines (`traces/` of the output: document 002's three find programs, fib
    /// at cutoff 10 in every ito style, the chain): auto (in a full run only), yes, no, or
    /// only (no measurements).
    #[arg(long, value_enum, default_value = "auto")]
    pictures: Pictures,
    /// fib's argument in document 000 [default: 40 in a full run, 34 in a quick one, 20 in
    /// a smoke one]. The document ran fib(42): `--fib-n 42` runs it so, about 2.6 times the
    /// work of fib(40) in every fib cell, past the full run's 15 minutes on 2 cores.
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=50))]
    fib_n: Option<u64>,
    /// Print the steps with their timeouts and exit.
    #[arg(long)]
    dry_run: bool,
    /// Run nothing: write the CSVs, plots and report of a recorded results.jsonl.
    #[arg(long, conflicts_with_all = ["quick", "smoke", "dry_run", "only", "ito_find", "pictures"])]
    from: Option<PathBuf>,
    /// Compare every verdict with those of a recorded run's results.jsonl: the report lists
    /// the configurations whose verdicts differ [default for a quick or full run: the last
    /// one recorded in bench/results at the same size].
    #[arg(long, conflicts_with_all = ["dry_run"])]
    compare: Option<PathBuf>,
    /// Run nothing: check every JSON line of a file (records of any ito-bench experiment)
    /// against its experiment's schema; exit status 1 if one does not match.
    #[arg(long, conflicts_with_all = ["quick", "smoke", "dry_run", "only", "ito_find", "from", "out", "pictures"])]
    check: Option<PathBuf>,
}

/// `--pictures`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Pictures {
    /// In a full run only.
    Auto,
    /// After the measurements.
    Yes,
    /// None.
    No,
    /// The timelines alone.
    Only,
}

/// Which peers `seeds` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PeerPolicy {
    /// Every peer whose toolchain is installed, building it if needed.
    All,
    /// Only peers that need no build step that could download (`ITO_PEER_NO_BUILD=1`).
    Built,
    /// No external peer (the in-process peers, tokio, rayon, futures-rs, still run).
    None,
}

/// `ito-bench seeds`.
pub(crate) fn command(args: &SeedsArgs) -> ExitCode {
    if let Some(from) = &args.from {
        return render_command(from, args.out.as_deref(), args.compare.as_deref());
    }
    if let Some(file) = &args.check {
        return check_command(file);
    }
    let size = if args.smoke {
        Size::Smoke
    } else if args.quick {
        Size::Quick
    } else {
        Size::Full
    };
    let root = match measure::workspace_root() {
        Ok(r) => r,
        Err(e) => {
            return crate::usage_error(&format!(
                "seeds must run inside the ito workspace (bench/peers, bench/results): {e}"
            ));
        }
    };
    let env = Environment::detect(size.name());
    let out = args.out.clone().unwrap_or_else(|| {
        let suffix = match (size, args.pictures) {
            (Size::Full, Pictures::Only) => "-pictures".to_owned(),
            (s, Pictures::Only) => format!("-{}-pictures", s.name()),
            (Size::Full, _) => String::new(),
            (s, _) => format!("-{}", s.name()),
        };
        root.join("bench/results")
            .join(format!("{}-{}{suffix}", env.day(), env.commit))
    });
    let scratch = scratch_dir();
    // The workspace's build directory: on disk wherever the checkout is.
    let disk_scratch = root
        .join("target")
        .join(format!("ito-seeds-{}", std::process::id()));
    let cfg = plan::Config {
        size,
        peers: args.peers,
        only: args.only.clone(),
        root: root.clone(),
        scratch: scratch.clone(),
        disk_scratch: disk_scratch.clone(),
        ito_find: args.ito_find.clone(),
        pictures: match (args.pictures, size) {
            (Pictures::Auto, Size::Full) | (Pictures::Yes, _) => plan::PictureSteps::Yes,
            (Pictures::Auto | Pictures::No, _) => plan::PictureSteps::No,
            (Pictures::Only, _) => plan::PictureSteps::Only,
        },
        traces: out.join(TRACES),
        fib_n: args.fib_n,
    };
    let plan = Plan::build(&cfg);
    if args.dry_run {
        print!("{}", plan.describe());
        return ExitCode::SUCCESS;
    }
    if let Err(e) = fs::create_dir_all(out.join("logs")) {
        return crate::usage_error(&format!("cannot create {}: {e}", out.display()));
    }
    if cfg.pictures != plan::PictureSteps::No {
        // The traces are large and can be made again; their drawings and summaries are kept.
        let ignore = cfg.traces.join(".gitignore");
        let made = fs::create_dir_all(&cfg.traces)
            .and_then(|()| fs::write(&ignore, "*.json\n!*.summary.json\n"));
        if let Err(e) = made {
            return crate::usage_error(&format!("cannot create {}: {e}", ignore.display()));
        }
    }
    // Without --compare, a quick or full run is compared with the last one recorded at its
    // size, so that a verdict that flipped since is flagged.
    let compare = args.compare.clone().or_else(|| match (size, cfg.pictures) {
        (Size::Smoke, _) | (_, plan::PictureSteps::Only) => None,
        _ => last_recorded(&root.join("bench/results"), size, &out),
    });
    if let Some(p) = &compare {
        eprintln!("seeds: verdicts compared with {}", p.display());
    }
    let code = match run_plan(&plan, &env, &out, args.peers, compare.as_deref()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ito-bench seeds: {e}");
            ExitCode::FAILURE
        }
    };
    let _ = fs::remove_dir_all(&scratch);
    let _ = fs::remove_dir_all(&disk_scratch);
    code
}

/// The results.jsonl of the newest run recorded in `results` at `size` (a directory named
/// `<date>-<commit>` for a full run, `<date>-<commit>-quick` for a quick one), other than `out`.
fn last_recorded(results: &Path, size: Size, out: &Path) -> Option<PathBuf> {
    let quick = size == Size::Quick;
    fs::read_dir(results)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|dir| dir != out && dir.join("results.jsonl").is_file())
        .filter(|dir| {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            let is_quick = name.ends_with("-quick");
            is_quick == quick && !name.ends_with("-smoke") && !name.ends_with("-pictures")
        })
        .max_by_key(|dir| {
            fs::metadata(dir.join("results.jsonl"))
                .and_then(|m| m.modified())
                .ok()
        })
        .map(|dir| dir.join("results.jsonl"))
}

/// Where the find tree goes: tmpfs (`/dev/shm`) where there is one, because making and
/// removing 66,000 entries on a busy disk takes longer than the whole quick run's find
/// experiment (the tools are timed on a warm cache either way).
fn scratch_dir() -> PathBuf {
    let name = format!("ito-seeds-{}", std::process::id());
    let shm = Path::new("/dev/shm");
    let writable = shm.is_dir()
        && fs::create_dir(shm.join(&name))
            .and_then(|()| fs::remove_dir(shm.join(&name)))
            .is_ok();
    if writable {
        shm.join(name)
    } else {
        std::env::temp_dir().join(name)
    }
}

/// Runs every step, then writes the CSVs, plots and report.
fn run_plan(
    plan: &Plan,
    env: &Environment,
    out: &Path,
    peers: PeerPolicy,
    compare: Option<&Path>,
) -> Result<ExitCode, String> {
    let results_path = out.join("results.jsonl");
    let mut results = fs::File::create(&results_path)
        .map_err(|e| format!("cannot create {}: {e}", results_path.display()))?;
    let started = Instant::now();
    let bar = progress_bar(plan);
    let mut runner = run::Runner::new(out.join("logs"), peers);
    let mut all = Vec::new();
    let mut steps = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        bar.set_message(step.label.clone());
        let res = runner.run(step);
        let line = format!(
            "[{:>3}/{}] {:<48} {}",
            i + 1,
            plan.steps.len(),
            step.label,
            res.outcome.describe(res.seconds)
        );
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
        for rec in &res.records {
            let rec = env.annotate(rec.clone(), step.doc);
            writeln!(results, "{rec}")
                .map_err(|e| format!("cannot write {}: {e}", results_path.display()))?;
            all.push(rec);
        }
        steps.push(StepSummary::of(step, &res));
        bar.inc(step.estimate.as_millis() as u64);
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    eprintln!(
        "seeds: {} steps, {} measurements in {:.0} s; writing {}",
        plan.steps.len(),
        all.len(),
        elapsed.as_secs_f64(),
        out.display()
    );
    write_steps(&steps, elapsed.as_secs_f64(), out)?;
    render(&all, out, Some((&steps, elapsed.as_secs_f64())), compare)?;
    eprintln!("seeds: report: {}", out.join("report.md").display());
    let ito_failed: Vec<&StepSummary> = steps.iter().filter(|s| s.ito_failed).collect();
    if ito_failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for s in &ito_failed {
            eprintln!("seeds: an ito measurement failed in step '{}'", s.label);
        }
        Ok(ExitCode::FAILURE)
    }
}

/// The progress bar: its length is the sum of the steps' estimated milliseconds, so that its
/// ETA weighs long steps as long.
fn progress_bar(plan: &Plan) -> ProgressBar {
    let total: u64 = plan
        .steps
        .iter()
        .map(|s| s.estimate.as_millis() as u64)
        .sum();
    let bar = ProgressBar::new(total.max(1));
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{wide_bar}] {percent:>3}% eta {eta} {msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    bar.set_style(style);
    bar
}

/// What the report says about one step (a line of `steps.jsonl`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct StepSummary {
    /// The step's label.
    pub(crate) label: String,
    /// `ok`, `failed: ...`, `timeout after S s`, `skipped: ...`.
    pub(crate) outcome: String,
    /// Whether one of its ito records failed.
    pub(crate) ito_failed: bool,
}

impl StepSummary {
    fn of(step: &plan::Step, res: &StepResult) -> Self {
        let ito_failed = res.records.iter().any(|r| {
            let imp = r
                .get("impl")
                .or_else(|| r.get("tool"))
                .and_then(Value::as_str);
            // A cutoff over the time budget was not run: it did not fail.
            let over_budget = r.get("over_budget") == Some(&Value::Bool(true));
            imp.is_some_and(|i| i.starts_with("ito"))
                && r.get("ok") == Some(&Value::Bool(false))
                && !over_budget
        }) || (matches!(res.outcome, Outcome::Failed(_) | Outcome::Timeout)
            && step.ito_step);
        StepSummary {
            label: step.label.clone(),
            outcome: res.outcome.describe(res.seconds),
            ito_failed,
        }
    }
}

/// `--check`: every line that is a JSON object with an `experiment` field must match its
/// schema (other lines, such as `find-tree`'s, are not records and are ignored).
fn check_command(file: &Path) -> ExitCode {
    let text = match fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => return crate::usage_error(&format!("cannot read {}: {e}", file.display())),
    };
    let (mut good, mut bad) = (0, 0);
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if v.get("experiment")
            .and_then(Value::as_str)
            .is_none_or(|e| e == "find-tree")
        {
            continue;
        }
        match schema::check(&v) {
            Ok(()) => good += 1,
            Err(e) => {
                bad += 1;
                println!("{}:{}: {e}", file.display(), i + 1);
            }
        }
    }
    println!("{good} records match their schema, {bad} do not");
    if bad == 0 && good > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Writes `steps.jsonl`: one line per step, then `{"total_seconds": S}`, so that `--from`
/// can show the steps again.
fn write_steps(steps: &[StepSummary], seconds: f64, out: &Path) -> Result<(), String> {
    let mut text = String::new();
    for s in steps {
        text.push_str(&serde_json::to_string(s).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    text.push_str(&serde_json::json!({ "total_seconds": seconds }).to_string());
    text.push('\n');
    let path = out.join("steps.jsonl");
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads the `steps.jsonl` beside a results.jsonl, if there is one.
fn read_steps(results: &Path) -> Option<(Vec<StepSummary>, f64)> {
    let text = fs::read_to_string(results.with_file_name("steps.jsonl")).ok()?;
    let mut steps = Vec::new();
    let mut total = None;
    for line in text.lines() {
        if let Ok(s) = serde_json::from_str::<StepSummary>(line) {
            steps.push(s);
        } else if let Ok(v) = serde_json::from_str::<Value>(line) {
            total = v.get("total_seconds").and_then(Value::as_f64);
        }
    }
    Some((steps, total?))
}

/// `--from`: reads a results.jsonl and writes the CSVs, plots and report beside it (or to
/// `out`).
fn render_command(from: &Path, out: Option<&Path>, compare: Option<&Path>) -> ExitCode {
    let records = match read_results(from) {
        Ok(r) => r,
        Err(e) => return crate::usage_error(&e),
    };
    let out = out
        .map(Path::to_path_buf)
        .or_else(|| from.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    if let Err(e) = fs::create_dir_all(&out) {
        return crate::usage_error(&format!("cannot create {}: {e}", out.display()));
    }
    let steps = read_steps(from);
    match render(
        &records,
        &out,
        steps.as_ref().map(|(s, t)| (s.as_slice(), *t)),
        compare,
    ) {
        Ok(()) => {
            eprintln!("seeds: report: {}", out.join("report.md").display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ito-bench seeds: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The records of a results.jsonl; the error is a one-line message.
fn read_results(path: &Path) -> Result<Vec<Value>, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => records.push(v),
            _ => return Err(format!("{}:{}: not a JSON object", path.display(), i + 1)),
        }
    }
    Ok(records)
}

/// Writes the CSVs, the plots and the report of `records` to `out`; with `compare`, the
/// report also lists the verdicts that differ from that recorded run's.
fn render(
    records: &[Value],
    out: &Path,
    steps: Option<(&[StepSummary], f64)>,
    compare: Option<&Path>,
) -> Result<(), String> {
    csv::write_all(records, out)?;
    let analysis = analysis::Analysis::of(records);
    let before = match compare {
        Some(p) => Some((
            p.display().to_string(),
            analysis::Analysis::of(&read_results(p)?),
        )),
        None => None,
    };
    let plots = plot::draw_all(records, &analysis, out)?;
    let timelines = timelines::read(&out.join(TRACES));
    let md = report::render(
        records,
        &analysis,
        &plots,
        (&timelines, TRACES),
        steps,
        before.as_ref().map(|(p, a)| (p.as_str(), a)),
    );
    let path = out.join("report.md");
    fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ito_cutoff_over_the_time_budget_is_no_failure_of_the_command() {
        let step = plan::Step {
            doc: plan::Doc::D000,
            label: "fib(40) ito/flat cutoff 2 run 1".into(),
            program: plan::Program::SelfExe,
            args: Vec::new(),
            parse: plan::Parse::Records,
            timeout: std::time::Duration::from_secs(1),
            estimate: std::time::Duration::from_secs(1),
            template: None,
            series: Some("fib ito/flat".into()),
            needs: Vec::new(),
            provides: None,
            ito_step: true,
            round: 1,
        };
        let rec = |over_budget: bool| {
            serde_json::json!({"experiment": "fib", "impl": "ito", "ok": false,
                "not_run": true, "over_budget": over_budget})
        };
        let res = |over_budget: bool| StepResult {
            outcome: Outcome::Skipped("why".into()),
            records: vec![rec(over_budget)],
            seconds: 0.0,
        };
        assert!(!StepSummary::of(&step, &res(true)).ito_failed);
        // Not run after a failure of its series: that failure is ito's.
        assert!(StepSummary::of(&step, &res(false)).ito_failed);
    }

    #[test]
    fn the_last_recorded_run_is_of_the_same_size_and_not_this_one() {
        let results = std::env::temp_dir().join(format!("ito-seeds-last-{}", std::process::id()));
        let _ = fs::remove_dir_all(&results);
        for dir in [
            "2026-01-01-aaa",
            "2026-01-02-bbb-quick",
            "2026-01-03-ccc-smoke",
            "2026-01-03-eee-pictures",
            "empty",
        ] {
            fs::create_dir_all(results.join(dir)).unwrap();
            if dir != "empty" {
                fs::write(results.join(dir).join("results.jsonl"), "").unwrap();
            }
        }
        let out = results.join("2026-01-04-ddd");
        assert_eq!(
            last_recorded(&results, Size::Full, &out),
            Some(results.join("2026-01-01-aaa/results.jsonl"))
        );
        assert_eq!(
            last_recorded(&results, Size::Quick, &out),
            Some(results.join("2026-01-02-bbb-quick/results.jsonl"))
        );
        let this = results.join("2026-01-01-aaa");
        assert_eq!(last_recorded(&results, Size::Full, &this), None);
        let _ = fs::remove_dir_all(&results);
    }
}
