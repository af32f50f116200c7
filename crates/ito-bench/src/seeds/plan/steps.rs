//! The steps of each document.

use super::*;
use crate::seeds::analysis::verdict;

/// Document 000: every fib series at every cutoff, interleaved (for each cutoff, every
/// series), coarse to fine; the Scala peer when Maven and Java are there.
pub(super) fn fib_steps(
    steps: &mut Vec<Step>,
    s: &Sizes,
    workers: usize,
    cfg: &Config,
    peers: bool,
) {
    let n = s.fib_n;
    let ns = n.to_string();
    let t = s.fib_timeout_s;
    let ts = t.to_string();
    let runs = s.cell_runs.to_string();
    // The sequential reference.
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
            "--repeat",
            &runs,
            "--timeout-s",
            &ts,
        ],
        (t + 5.0) * f64::from(s.cell_runs),
        fib_estimate(n, n.max(2)) * f64::from(s.cell_runs),
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
        // Scala's own sequential fib: the baseline its styles are divided by.
        for run in 1..=s.cell_runs {
            let template = Record::template("fib", "scala", "seq", n, n.max(2), 1);
            let mut step = Step::bench(
                Doc::D000,
                format!("fib({n}) scala/seq run {run}"),
                &[],
                t,
                0.7 + fib_estimate(n, n.max(2)) * 2.0,
            );
            step.program = Program::Path(script.clone());
            step.args = vec!["seq".into(), ns.clone(), n.max(2).to_string(), "1".into()];
            step.parse = Parse::ScalaFib { n };
            step.template = Some(to_value(&template));
            step.needs = vec!["scala"];
            step.ito_step = false;
            steps.push(step);
        }
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
                    "--repeat",
                    &runs,
                    "--timeout-s",
                    &ts,
                ],
                // The watchdog of the child covers one run; this limit all of them.
                (t + 5.0) * f64::from(s.cell_runs),
                fib_estimate(n, cutoff)
                    * if imp == "ito" { 1.0 } else { 2.0 }
                    * f64::from(s.cell_runs),
            );
            step.template = Some(to_value(&template));
            step.series = Some(format!("fib {imp}/{style}"));
            step.ito_step = imp == "ito";
            steps.push(step);
        }
        if peers {
            // One JVM a run: the peer's script times one computation.
            for (style, run) in ["flatmap", "await"]
                .into_iter()
                .flat_map(|style| (1..=s.cell_runs).map(move |run| (style, run)))
            {
                let template = Record::template("fib", "scala", style, n, cutoff, workers);
                let mut step = Step::bench(
                    Doc::D000,
                    format!("fib({n}) scala/{style} cutoff {cutoff} run {run}"),
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
pub(super) fn fib_estimate(n: u64, cutoff: u64) -> f64 {
    let seq = 0.35 * 1.618f64.powi(n as i32 - 40);
    let tasks = crate::fib::task_count(n, cutoff) as f64;
    0.05 + seq + tasks * 50e-9
}

/// Document 001: the chain at each N, every impl in one step (the subcommand runs each in a
/// child of its own); with `chain_big`, ito and tokio only at that N.
pub(super) fn chain_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize, peers: bool) {
    let imps = if peers {
        "ito,tokio,go,elixir"
    } else {
        "ito,tokio"
    };
    let (w, t) = (workers.to_string(), s.chain_timeout_s.to_string());
    let mut add = |n: u64, imps: &str, repeat: u32, label: String| {
        let r = repeat.to_string();
        let ns = n.to_string();
        let per = n as f64 * 1e-6;
        // ito, two tokio flavours, go (3 us a process), elixir (5 us a process), starts.
        let est =
            (0.3 + per * (0.5 + 0.5 + 1.0 + if peers { 8.0 } else { 0.0 })) * f64::from(repeat);
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
        let limit = (s.chain_timeout_s + 5.0) * 4.0 * f64::from(repeat);
        steps.push(Step::bench(Doc::D001, label, &args, limit, est));
    };
    for &n in s.chain_n {
        add(n, imps, s.cell_runs, format!("chain of {n}: {imps}"));
    }
    if let Some(n) = s.chain_big {
        // Runs of 10M processes are long: fewer runs give a verdict.
        let repeat = s.cell_runs.min(verdict::MIN_RUNS_LONG as u32);
        add(n, "ito,tokio", repeat, format!("chain of {n}: ito,tokio"));
        // Go and Elixir are attempted once (they are not started where their chain could
        // not fit in memory; the record says so).
        if peers {
            add(
                n,
                "go,elixir",
                1,
                format!("chain of {n}: go,elixir, attempted once"),
            );
        }
    }
}

/// Document 002: build ito-find (unless given), make the tree, time the tools at each worker
/// count of the sweep.
pub(super) fn find_steps(steps: &mut Vec<Step>, s: &Sizes, cfg: &Config) {
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
    let entries = (s.find_dirs + s.find_files) as f64;
    let mut trees = vec![(cfg.scratch.join("tree"), "tree")];
    if s.find_on_disk {
        trees.push((cfg.disk_scratch.join("tree"), "disk tree"));
    }
    for (tree, key) in trees {
        steps.push(make_tree(s, &tree, key));
        let r = s.find_runs.to_string();
        // Each step's record is the median of its --runs runs; the cell is over the steps.
        // The document's sweep of worker counts, interleaved.
        for (step, w) in (1..=s.cell_runs)
            .flat_map(|step| s.find_workers.iter().map(move |w| (step, w.to_string())))
        {
            let mut find = Step::bench(
                Doc::D002,
                format!(
                    "find -j {w} ({key}): ito-find, GNU find, fd, find_par, find_par_sem, \
                     {step} of {}",
                    s.cell_runs
                ),
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
                // 2 queries, 5 tools, a warm-up round: about 6 us an entry for the slowest.
                (s.find_runs + 1) as f64 * entries * 6e-6 * 5.0 + 0.2,
            );
            find.needs = if cfg.ito_find.is_some() {
                vec![key]
            } else {
                vec!["ito-find", key]
            };
            steps.push(find);
        }
    }
}

/// The step that makes the find tree at `tree` for the steps that need `key`.
fn make_tree(s: &Sizes, tree: &Path, key: &'static str) -> Step {
    let (d, f) = (s.find_dirs.to_string(), s.find_files.to_string());
    let entries = (s.find_dirs + s.find_files) as f64;
    let mut make = Step::bench(
        Doc::D002,
        format!("find: make a {}-entry {key}", s.find_dirs + s.find_files),
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
    make.provides = Some(key);
    make
}

/// Document 002's tree on tmpfs alone (for its pictures, in a run without measurements).
pub(super) fn tree_steps(steps: &mut Vec<Step>, s: &Sizes, cfg: &Config) {
    steps.push(make_tree(s, &cfg.scratch.join("tree"), "tree"));
}

/// Document 003: the four modes with and without the 1 ms sleep (pool sizes 8 and 50), and
/// 10,000 tasks for the memory.
pub(super) fn pool_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize) {
    let w = workers.to_string();
    let modes = "spawn,pool,bounded,channel-pool";
    let runs = s.pool_runs.to_string();
    let sruns = s.pool_sleep_runs.to_string();
    let bruns = s.pool_big_runs.to_string();
    let cell_runs = s.cell_runs.to_string();
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
            "--repeat",
            &cell_runs,
            "--timeout-s",
            "120",
        ];
        // 4 modes (3 of them with each pool size) x 2 callers x 2 impls, each a child process.
        let configs = if tasks == "10000" { 16.0 } else { 28.0 } * f64::from(s.cell_runs);
        steps.push(Step::bench(
            Doc::D003,
            label,
            &args,
            900.0 * f64::from(s.cell_runs),
            configs * per,
        ));
    }
}

/// Document 004: its six benchmarks.
pub(super) fn futures_steps(steps: &mut Vec<Step>, s: &Sizes, workers: usize) {
    let (w, r, fr, rounds) = (
        workers.to_string(),
        s.cell_runs.to_string(),
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
        // A first-completed line is the accuracy of all its repetitions: one run of the cell.
        let steps_of = if bench == "first-completed" {
            s.cell_runs
        } else {
            1
        };
        for step in 1..=steps_of {
            let label = if steps_of == 1 {
                format!("futures {bench}")
            } else {
                format!("futures {bench}, {step} of {steps_of}")
            };
            steps.push(Step::bench(
                Doc::D004,
                label,
                &args,
                600.0,
                0.1 + reps * per_rep * 3.0,
            ));
        }
    }
}

pub(super) fn to_value(rec: &Record) -> Value {
    serde_json::to_value(rec).unwrap_or_else(|_| json!({}))
}
