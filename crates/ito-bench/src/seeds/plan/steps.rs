//! The steps of each document.

use super::*;
use crate::seeds::analysis::verdict;

/// Document 000: every fib series at every cutoff, coarse to fine, each run a step of its
/// own; at each cutoff the runs of every series alternate ([`interleave`]), so that ito's
/// and the peers' runs of a configuration see the same load. The sequential reference
/// alternates with the Scala peer's own sequential fib the same way. The Scala peer runs
/// when Maven and Java are there.
pub(super) fn fib_steps(
    steps: &mut Vec<Step>,
    s: &Sizes,
    workers: usize,
    cfg: &Config,
    peers: bool,
) {
    let n = s.fib_n;
    let t = s.fib_timeout_s;
    let script = cfg.root.join("bench/peers/fib/run.sh");
    let fib = FibStep {
        n,
        timeout_s: t,
        workers,
        script: &script,
    };
    let seq_cutoff = n.max(2);
    if peers {
        let mut build = Step::bench(Doc::D000, "build the Scala peer (Maven)", &[], 600.0, 5.0);
        build.program = Program::Path(script.clone());
        build.args = vec!["build".into()];
        build.parse = Parse::Setup;
        build.provides = Some("scala");
        build.ito_step = false;
        steps.push(build);
    }
    // The sequential reference, and Scala's own sequential fib (the baseline its styles are
    // divided by).
    let mut cells = vec![
        (1..=s.cell_runs)
            .map(|run| fib.bench("seq", "wait", seq_cutoff, run))
            .collect(),
    ];
    if peers {
        cells.push(
            (1..=s.cell_runs)
                .map(|run| fib.scala("seq", seq_cutoff, run))
                .collect(),
        );
    }
    steps.extend(interleave(cells));
    for &cutoff in s.fib_cutoffs {
        let mut cells: Vec<Vec<Step>> = FIB_SERIES
            .iter()
            .map(|&(imp, style)| {
                (1..=s.cell_runs)
                    .map(|run| fib.bench(imp, style, cutoff, run))
                    .collect()
            })
            .collect();
        if peers {
            for style in ["flatmap", "await"] {
                cells.push(
                    (1..=s.cell_runs)
                        .map(|run| fib.scala(style, cutoff, run))
                        .collect(),
                );
            }
        }
        steps.extend(interleave(cells));
    }
}

/// The runs of several cells of one configuration, alternating: the first run of every
/// cell, then the second of every cell in the reverse order, then the third in the first
/// order, and so on, so that no cell always runs just after the same one.
pub(super) fn interleave(cells: Vec<Vec<Step>>) -> Vec<Step> {
    let rounds = cells.iter().map(Vec::len).max().unwrap_or(0);
    let mut iters: Vec<_> = cells.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..iters.len()).collect()
        } else {
            (0..iters.len()).rev().collect()
        };
        out.extend(order.into_iter().filter_map(|i| iters[i].next()));
    }
    out
}

/// What every fib step of a run shares.
struct FibStep<'a> {
    n: u64,
    timeout_s: f64,
    workers: usize,
    script: &'a Path,
}

impl FibStep<'_> {
    /// Run `run` of the series `imp`/`style` (this binary's `fib`) at `cutoff`; `seq` (at
    /// cutoff `n`) is the sequential reference, not a series.
    fn bench(&self, imp: &str, style: &str, cutoff: u64, run: u32) -> Step {
        let n = self.n;
        let seq = imp == "seq";
        let (label, template) = if seq {
            (
                format!("fib({n}) seq run {run}"),
                Record::template("fib", "seq", "seq", n, cutoff, 1),
            )
        } else {
            (
                format!("fib({n}) {imp}/{style} cutoff {cutoff} run {run}"),
                Record::template("fib", imp, style, n, cutoff, self.workers),
            )
        };
        let mut step = Step::bench(
            Doc::D000,
            label,
            &[],
            // The watchdog of the child covers the run; this limit a hang of the child.
            self.timeout_s + 5.0,
            fib_estimate(n, cutoff)
                * if imp == "tokio" || imp == "rayon" {
                    2.0
                } else {
                    1.0
                },
        );
        step.args = fib_run_args(n, cutoff, imp, style, self.workers);
        step.args
            .extend(["--timeout-s".to_owned(), self.timeout_s.to_string()]);
        step.template = Some(to_value(&template));
        step.series = (!seq).then(|| format!("fib {imp}/{style}"));
        step.ito_step = seq || imp == "ito";
        step.round = run;
        step
    }

    /// Run `run` of the Scala peer's `style` at `cutoff` (one JVM a run: the peer's script
    /// times one computation); `seq` is its sequential fib, not a series.
    fn scala(&self, style: &str, cutoff: u64, run: u32) -> Step {
        let n = self.n;
        let seq = style == "seq";
        let (label, workers, est) = if seq {
            (
                format!("fib({n}) scala/seq run {run}"),
                1,
                0.7 + fib_estimate(n, cutoff) * 2.0,
            )
        } else {
            (
                format!("fib({n}) scala/{style} cutoff {cutoff} run {run}"),
                self.workers,
                0.7 + fib_estimate(n, cutoff) * 4.0,
            )
        };
        let mut step = Step::bench(Doc::D000, label, &[], self.timeout_s, est);
        step.program = Program::Path(self.script.to_path_buf());
        step.args = vec![
            style.into(),
            n.to_string(),
            cutoff.to_string(),
            workers.to_string(),
        ];
        step.parse = Parse::ScalaFib { n };
        let template = Record::template("fib", "scala", style, n, cutoff, workers);
        step.template = Some(to_value(&template));
        step.series = (!seq).then(|| format!("fib scala/{style}"));
        step.needs = vec!["scala"];
        step.ito_step = false;
        step.round = run;
        step
    }
}

/// The arguments of one run of this binary's `fib`.
pub(super) fn fib_run_args(
    n: u64,
    cutoff: u64,
    imp: &str,
    style: &str,
    workers: usize,
) -> Vec<String> {
    let (n, cutoff, workers) = (n.to_string(), cutoff.to_string(), workers.to_string());
    [
        "fib",
        "--n",
        &n,
        "--cutoff",
        &cutoff,
        "--impl",
        imp,
        "--style",
        style,
        "--workers",
        &workers,
        "--repeat",
        "1",
    ]
    .map(String::from)
    .to_vec()
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
        let limit = (s.chain_timeout_s + 5.0) * 4.0;
        steps.extend(Step::bench(Doc::D001, label, &args, limit, est).one_a_round(repeat));
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
                     round {step} of {}",
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
            find.round = step;
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
        steps.extend(
            Step::bench(Doc::D003, label, &args, 900.0, configs * per).one_a_round(s.cell_runs),
        );
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
        let est = 0.1 + reps * per_rep * 3.0;
        if steps_of == 1 {
            let step = Step::bench(Doc::D004, format!("futures {bench}"), &args, 600.0, est);
            steps.extend(step.one_a_round(s.cell_runs));
        } else {
            for round in 1..=steps_of {
                let label = format!("futures {bench}, round {round} of {steps_of}");
                let mut step = Step::bench(Doc::D004, label, &args, 600.0, est);
                step.round = round;
                steps.push(step);
            }
        }
    }
}

pub(super) fn to_value(rec: &Record) -> Value {
    serde_json::to_value(rec).unwrap_or_else(|_| json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(size: Size, peers: PeerPolicy) -> Plan {
        Plan::build(&config(size, peers))
    }

    fn config(size: Size, peers: PeerPolicy) -> Config {
        Config {
            size,
            peers,
            only: vec![Doc::D000],
            root: PathBuf::from("/repo"),
            scratch: PathBuf::from("/tmp/scratch"),
            disk_scratch: PathBuf::from("/tmp/disk"),
            ito_find: None,
            pictures: PictureSteps::No,
            traces: PathBuf::from("/tmp/traces"),
            fib_n: None,
        }
    }

    /// The labels of the fib steps at `cutoff`, in plan order.
    fn at_cutoff(p: &Plan, cutoff: u64) -> Vec<String> {
        let tag = format!(" cutoff {cutoff} run ");
        p.steps
            .iter()
            .filter(|s| s.label.contains(&tag))
            .map(|s| s.label.clone())
            .collect()
    }

    #[test]
    fn the_runs_of_one_configuration_alternate_ito_and_its_peers() {
        let p = plan(Size::Quick, PeerPolicy::All);
        let runs = Sizes::of(Size::Quick).cell_runs as usize;
        let labels = at_cutoff(&p, 10);
        // Every series (seven of this binary, two Scala styles) has its runs at this cutoff.
        assert_eq!(labels.len(), 9 * runs);
        // ito's blocking style against tokio's and Scala's: one run of each a round, the
        // order reversed every other round.
        let of = |series: &str| -> Vec<usize> {
            labels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(series))
                .map(|(i, _)| i)
                .collect()
        };
        let (ito, tokio, scala) = (of("ito/wait "), of("tokio/wait "), of("scala/await "));
        assert_eq!(ito.len(), runs);
        for round in 0..runs {
            let in_round = |i: usize| i / 9 == round;
            assert!(in_round(ito[round]) && in_round(tokio[round]) && in_round(scala[round]));
            if round % 2 == 0 {
                assert!(ito[round] < tokio[round] && tokio[round] < scala[round]);
            } else {
                assert!(ito[round] > tokio[round] && tokio[round] > scala[round]);
            }
            let want = format!("run {}", round + 1);
            assert!(
                labels[ito[round]].ends_with(&want),
                "{}",
                labels[ito[round]]
            );
        }
        // Each run is a step of its own: one measurement, one child process.
        let step = p
            .steps
            .iter()
            .find(|s| s.label.contains("ito/wait cutoff 10 run 2"))
            .unwrap();
        let repeat = step.args.iter().position(|a| a == "--repeat").unwrap();
        assert_eq!(step.args[repeat + 1], "1");
        assert_eq!(step.series.as_deref(), Some("fib ito/wait"));
        // The sequential references alternate too.
        let seq: Vec<&str> = p
            .steps
            .iter()
            .filter(|s| s.label.contains("seq run "))
            .map(|s| s.label.as_str())
            .take(4)
            .collect();
        assert_eq!(
            seq,
            [
                "fib(34) seq run 1",
                "fib(34) scala/seq run 1",
                "fib(34) scala/seq run 2",
                "fib(34) seq run 2"
            ]
        );
    }

    #[test]
    fn the_plan_runs_in_rounds_of_one_run_of_every_cell_each_step_its_own_process() {
        let p = Plan::build(&Config {
            only: Vec::new(),
            ..config(Size::Full, PeerPolicy::All)
        });
        let runs = Sizes::of(Size::Full).cell_runs;
        let setups = p.steps.iter().take_while(|s| s.provides.is_some()).count();
        assert_eq!(setups, 4, "Scala, ito-find and the two trees come first");
        assert!(p.steps[setups..].iter().all(|s| s.provides.is_none()));
        // Rounds never go back.
        let rounds: Vec<u32> = p.steps[setups..].iter().map(|s| s.round).collect();
        assert!(rounds.windows(2).all(|w| w[0] <= w[1]), "{rounds:?}");
        assert_eq!(rounds.last(), Some(&runs));
        // A cell measured in one invocation (join) has one step a round, of one run.
        let join: Vec<&Step> = p
            .steps
            .iter()
            .filter(|s| s.label.starts_with("join"))
            .collect();
        assert_eq!(join.len(), runs as usize);
        for (i, step) in join.iter().enumerate() {
            assert_eq!(step.round, i as u32 + 1);
            let at = step.args.iter().position(|a| a == "--repeat").unwrap();
            assert_eq!(step.args[at + 1], "1", "{}", step.label);
        }
        // So does every step that repeats: none measures two runs of a cell.
        for step in &p.steps[setups..] {
            if let Some(at) = step.args.iter().position(|a| a == "--repeat") {
                let first = step.label.starts_with("futures first-completed");
                assert!(first || step.args[at + 1] == "1", "{}", step.label);
            }
        }
    }

    #[test]
    fn fib_n_sets_document_000s_argument() {
        let p = Plan::build(&Config {
            fib_n: Some(42),
            ..config(Size::Full, PeerPolicy::None)
        });
        let fib: Vec<&Step> = p
            .steps
            .iter()
            .filter(|s| s.label.starts_with("fib("))
            .collect();
        assert!(!fib.is_empty());
        for step in fib {
            assert!(step.label.starts_with("fib(42) "), "{}", step.label);
            let at = step.args.iter().position(|a| a == "--n").unwrap();
            assert_eq!(step.args[at + 1], "42");
        }
    }

    #[test]
    fn interleaving_takes_every_run_once_and_cells_of_unequal_length_run_out() {
        let step = |label: &str| Step::bench(Doc::D000, label, &[], 1.0, 1.0);
        let cells = vec![
            vec![step("a1"), step("a2"), step("a3")],
            vec![step("b1")],
            vec![step("c1"), step("c2")],
        ];
        let order: Vec<String> = interleave(cells).into_iter().map(|s| s.label).collect();
        assert_eq!(order, ["a1", "b1", "c1", "c2", "a2", "a3"]);
    }
}
