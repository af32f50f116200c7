//! `ito-bench join`: the fork-join experiment of issue 3. Four workloads ([`Workload`]),
//! each written once over the [`Fork`](workloads::Fork) trait and run with `ito::join` on an
//! `ito::Runtime` (entered with `install`), with `rayon::join` on a rayon pool of the same
//! size (entered with `install`), and sequentially on the main thread (`seq`: the same
//! algorithm, the two sides of each "fork" called one after the other).
//!
//! `--cutoff` per workload (the smallest legal value forks at every recursive call):
//!
//! | workload  | the computation is sequential below the cutoff for ...          | finest |
//! |-----------|------------------------------------------------------------------|--------|
//! | `fib`     | calls `fib(m)` with `m < cutoff` (they run `sfib(m)`)            | 2      |
//! | `tree`    | subtrees of height `< cutoff` (a leaf has height 1)              | 2      |
//! | `sort`    | slices to sort, and merges to do, of `< cutoff` elements         | 2      |
//! | `nqueens` | boards with `< cutoff` rows left to fill                         | 1      |
//!
//! See [`workloads`] for the algorithms. Inputs (the tree, the random array and its scratch
//! buffer) are built once per workload before any clock starts; a run's `seconds` covers
//! entering the pool and the computation only. Runs are interleaved: for each workload, for
//! each cutoff, for each repetition, for each impl. One JSON line per run on stdout (and in
//! `bench/results/join.jsonl` with `--record`), then a summary on stderr: per workload and
//! impl the best cutoff (by the fastest of the repetitions) and the finest-grain time, and
//! the criteria.

pub(crate) mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, CpuTime, Sink, Watchdog, dedup};
use workloads::{Input, ItoFork, RayonFork, SeqFork, Workload};

/// Arguments of `join`.
#[derive(Args, Debug)]
#[command(
    about = "Issue 3: fork-join workloads (fib, tree, sort, nqueens) on ito::join, rayon::join and sequentially",
    long_about = "Issue 3: fork-join workloads on ito::join, rayon::join and sequentially.\n\n\
        Every workload is one generic algorithm run with ito::join (on an ito::Runtime entered \
        with install), rayon::join (on a rayon pool entered with install), or seq (the two \
        sides of every fork called in turn on the main thread). Inputs are built before the \
        clock starts. Runs are interleaved: for each workload, cutoff, repetition, impl. One \
        JSON line per run on stdout; a summary (best cutoff, finest-grain time, ratios) on \
        stderr. Exit status: 0 if every run was right, 1 if one failed, 2 for bad arguments."
)]
pub(crate) struct JoinArgs {
    /// Workload(s), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', required = true)]
    workload: Vec<Workload>,
    /// The common options; their defaults are [`DEFAULTS`] (the summary takes the fastest
    /// of the `--repeat` runs).
    #[command(flatten)]
    pub(crate) common: CommonArgs<JoinImpl>,
    /// Problem size: one value for every workload, or one per workload (in --workload order)
    /// [default: fib 42, tree 22, sort 10000000, nqueens 12]
    #[arg(long, value_delimiter = ',', verbatim_doc_comment)]
    n: Vec<u64>,
    /// Cutoff(s), comma-separated, for every workload; the computation is sequential below it:
    ///   fib:     calls fib(m) with m < cutoff run sfib(m)             (finest 2)
    ///   tree:    subtrees of height < cutoff (a leaf is height 1)    (finest 2)
    ///   sort:    slices to sort and merges of < cutoff elements      (finest 2)
    ///   nqueens: boards with < cutoff rows left to fill              (finest 1)
    /// The finest cutoff forks at every recursive call.
    /// [default: fib 2,5,10,15,20,25; tree 2,5,8,11,14,17;
    ///  sort 2,16,256,4096,65536,1048576; nqueens 1,3,5,7,9,11]
    #[arg(long, value_delimiter = ',', verbatim_doc_comment)]
    cutoff: Vec<u64>,
}

/// Which fork-join implementation runs a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum JoinImpl {
    /// `ito::join` on an `ito::Runtime`.
    Ito,
    /// `rayon::join` on a rayon thread pool.
    Rayon,
    /// No fork: both sides in turn on the main thread.
    Seq,
}

impl JoinImpl {
    /// The name used on the command line and in records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            JoinImpl::Ito => "ito",
            JoinImpl::Rayon => "rayon",
            JoinImpl::Seq => "seq",
        }
    }
}

/// One run, printed as one JSON line.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct JoinRecord {
    /// Always `"join"`.
    experiment: &'static str,
    /// `fib`, `tree`, `sort` or `nqueens`.
    workload: &'static str,
    /// `ito`, `rayon` or `seq`.
    #[serde(rename = "impl")]
    imp: &'static str,
    /// Problem size.
    n: u64,
    /// Cutoff (see the module documentation).
    cutoff: u64,
    /// Threads of the runtime or pool (1 for `seq`).
    workers: usize,
    /// Repetition index, from 0.
    rep: u32,
    /// Wall-clock seconds of entering the pool and computing (inputs are built before).
    seconds: Option<f64>,
    /// CPU time of the process (every thread) over the same span.
    #[serde(flatten)]
    cpu: Option<CpuTime>,
    /// fib(n), the tree's sum, the sorted array's checksum, or the number of solutions.
    result: Option<u64>,
    /// Peak resident set size in bytes: of this run where the kernel lets us reset the peak
    /// (`/proc/self/clear_refs`), else of the process so far. Includes the built inputs.
    rss_bytes: Option<u64>,
    /// ito only: second closures of `join` run by another thread than their caller's.
    join_steals: Option<u64>,
    /// ito only: compensation threads started or reactivated during the run (for workers
    /// that slept waiting for a stolen job).
    compensations: Option<u64>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    commit: String,
    /// CPUs available to the process.
    nproc: usize,
    /// Whether the run completed with a verified result.
    ok: bool,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl JoinRecord {
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a JoinRecord always serializes")
    }
}

/// A runtime or pool, built once per impl and reused by every run.
enum Engine {
    Ito(ito::Runtime),
    Rayon(rayon::ThreadPool),
    Seq,
}

impl Engine {
    fn new(imp: JoinImpl, workers: usize) -> Result<Engine, String> {
        Ok(match imp {
            JoinImpl::Ito => Engine::Ito(
                ito::Runtime::builder()
                    .workers(workers)
                    .build()
                    .map_err(|e| format!("building the ito runtime: {e}"))?,
            ),
            JoinImpl::Rayon => Engine::Rayon(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(workers)
                    .build()
                    .map_err(|e| format!("building the rayon pool: {e}"))?,
            ),
            JoinImpl::Seq => Engine::Seq,
        })
    }

    /// Runs `input` once with `cutoff`: the raw value and the seconds it took, and for ito
    /// the join steals and compensations of the run.
    fn run(&self, input: &mut Input, cutoff: u64) -> (u64, f64, Option<(u64, u64)>) {
        match self {
            Engine::Ito(rt) => {
                let before = rt.metrics();
                let start = Instant::now();
                let raw = rt.install(|| input.compute::<ItoFork>(cutoff));
                let seconds = start.elapsed().as_secs_f64();
                let after = rt.metrics();
                let counts = (
                    after.join_steals - before.join_steals,
                    after.compensations - before.compensations,
                );
                (raw, seconds, Some(counts))
            }
            Engine::Rayon(pool) => {
                let start = Instant::now();
                let raw = pool.install(|| input.compute::<RayonFork>(cutoff));
                (raw, start.elapsed().as_secs_f64(), None)
            }
            Engine::Seq => {
                let start = Instant::now();
                let raw = input.compute::<SeqFork>(cutoff);
                (raw, start.elapsed().as_secs_f64(), None)
            }
        }
    }
}

/// One workload to run, with its size and cutoffs.
struct Plan {
    workload: Workload,
    n: u64,
    cutoffs: Vec<u64>,
}

/// The per-workload plans of `args`, or the bad argument.
fn plans(args: &JoinArgs) -> Result<Vec<Plan>, String> {
    let workloads = dedup(&args.workload);
    if !args.n.is_empty() && args.n.len() != 1 && args.n.len() != args.workload.len() {
        return Err(format!(
            "--n takes one value or one per workload ({}), got {}",
            args.workload.len(),
            args.n.len()
        ));
    }
    let cutoffs = dedup(&args.cutoff);
    workloads
        .iter()
        .map(|&w| {
            let i = args.workload.iter().position(|&x| x == w).expect("listed");
            let n = match args.n.len() {
                0 => w.default_n(),
                1 => args.n[0],
                _ => args.n[i],
            };
            let (lo, hi) = w.n_range();
            if !(lo..=hi).contains(&n) {
                return Err(format!(
                    "--n {n} is out of range for {}: {lo}..={hi}",
                    w.name()
                ));
            }
            let cutoffs = if cutoffs.is_empty() {
                w.default_cutoffs()
            } else {
                cutoffs.clone()
            };
            if let Some(&c) = cutoffs.iter().find(|&&c| c < w.finest_cutoff()) {
                return Err(format!(
                    "--cutoff {c} is below the finest cutoff of {}, {}",
                    w.name(),
                    w.finest_cutoff()
                ));
            }
            Ok(Plan {
                workload: w,
                n,
                cutoffs,
            })
        })
        .collect()
}

/// The defaults of the common options.
pub(crate) const DEFAULTS: Defaults<'static, JoinImpl> = Defaults {
    imps: &[JoinImpl::Ito, JoinImpl::Rayon, JoinImpl::Seq],
    workers: None,
    repeat: 3,
    timeout_s: 300.0,
};

/// `ito-bench join`.
pub(crate) fn command(args: &JoinArgs) -> ExitCode {
    let c = &args.common;
    let s = match c.resolve(DEFAULTS) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let (workers, repeat, timeout) = (s.workers, s.repeat, s.timeout);
    let plans = match plans(args) {
        Ok(p) => p,
        Err(e) => return crate::usage_error(&e),
    };
    let jsonl = if c.record {
        match measure::workspace_root() {
            Ok(root) => Some(root.join("bench/results/join.jsonl")),
            Err(e) => return crate::usage_error(&format!("--record: {e}")),
        }
    } else {
        None
    };
    let sink = match Sink::new(jsonl, None::<PathBuf>) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&format!("cannot open output file: {e}")),
    };
    let mut engines = Vec::new();
    for imp in s.imps {
        match Engine::new(imp, workers) {
            Ok(e) => engines.push((imp, e)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }

    let mut records = Vec::new();
    let mut all_ok = true;
    for plan in &plans {
        let mut input = Input::prepare(plan.workload, plan.n);
        for &cutoff in &plan.cutoffs {
            for rep in 0..repeat {
                for (imp, engine) in &engines {
                    let template = JoinRecord {
                        experiment: "join",
                        workload: plan.workload.name(),
                        imp: imp.name(),
                        n: plan.n,
                        cutoff,
                        workers: if *imp == JoinImpl::Seq { 1 } else { workers },
                        rep,
                        seconds: None,
                        cpu: None,
                        result: None,
                        rss_bytes: None,
                        join_steals: None,
                        compensations: None,
                        commit: measure::commit(),
                        nproc: measure::nproc(),
                        ok: false,
                        error: None,
                    };
                    input.reset();
                    measure::reset_peak_rss();
                    let watchdog = {
                        let (mut rec, sink) = (template.clone(), sink.clone());
                        Watchdog::start(timeout, move || {
                            rec.error = Some("timeout".to_owned());
                            rec.rss_bytes = measure::vm_hwm_bytes();
                            sink.emit_line(&rec.to_json());
                            std::process::exit(1);
                        })
                    };
                    let cpu_before = CpuTime::of_self();
                    let (raw, seconds, counts) = engine.run(&mut input, cutoff);
                    let cpu = CpuTime::of_self().since(cpu_before);
                    watchdog.finish();
                    let mut rec = template;
                    rec.join_steals = counts.map(|c| c.0);
                    rec.compensations = counts.map(|c| c.1);
                    rec.rss_bytes = measure::vm_hwm_bytes();
                    let (result, verdict) = input.verify(raw);
                    rec.seconds = Some(seconds);
                    rec.cpu = Some(cpu);
                    rec.result = Some(result);
                    rec.ok = verdict.is_ok();
                    rec.error = verdict.err();
                    all_ok &= rec.ok;
                    sink.emit_line(&rec.to_json());
                    records.push(rec);
                }
            }
        }
    }
    eprint!("{}", summary(&plans, &records, repeat));
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A cutoff and a time in seconds.
type Point = (u64, f64);

/// The fastest correct repetition of each cutoff of one (workload, impl).
fn best_by_cutoff(records: &[JoinRecord], workload: &str, imp: &str) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.ok && r.workload == workload && r.imp == imp)
    {
        let s = r.seconds.expect("an ok record has seconds");
        match out.iter_mut().find(|(c, _)| *c == r.cutoff) {
            Some((_, best)) => *best = best.min(s),
            None => out.push((r.cutoff, s)),
        }
    }
    out
}

/// The human summary printed on stderr at the end.
fn summary(plans: &[Plan], records: &[JoinRecord], repeat: u32) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "join summary (milliseconds, fastest of {repeat} repetitions; finest = smallest cutoff run)"
    );
    let _ = writeln!(
        s,
        "{:<8} {:<6} {:>12} {:<11} {:>12} {:<11} {:>11}",
        "workload", "impl", "finest ms", "(cutoff)", "best ms", "(cutoff)", "finest/best"
    );
    for plan in plans {
        let w = plan.workload.name();
        // (impl, finest, best)
        let mut stats: Vec<(&str, Point, Point)> = Vec::new();
        for imp in ["ito", "rayon", "seq"] {
            let by_cutoff = best_by_cutoff(records, w, imp);
            let Some(&finest) = by_cutoff.iter().min_by_key(|(c, _)| *c) else {
                continue;
            };
            let best = by_cutoff
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("non-empty");
            let _ = writeln!(
                s,
                "{:<8} {:<6} {:>12.3} {:<11} {:>12.3} {:<11} {:>11.3}",
                w,
                imp,
                finest.1 * 1e3,
                format!("(c={})", finest.0),
                best.1 * 1e3,
                format!("(c={})", best.0),
                finest.1 / best.1
            );
            stats.push((imp, finest, best));
        }
        let get = |name: &str| stats.iter().find(|(i, _, _)| *i == name);
        let mut notes = Vec::new();
        if let Some((_, finest, best)) = get("ito") {
            let r = finest.1 / best.1;
            let verdict = if r <= 1.2 { "met" } else { "NOT met" };
            let finest_note = if finest.0 == plan.workload.finest_cutoff() {
                String::new()
            } else {
                format!(
                    " [the finest cutoff of {w} is {}, not run]",
                    plan.workload.finest_cutoff()
                )
            };
            notes.push(format!(
                "ito finest/best {r:.3} (<= 1.2: {verdict}){finest_note}"
            ));
            if let Some((_, _, rbest)) = get("rayon") {
                let r = best.1 / rbest.1;
                let verdict = if r <= 1.0 { "met" } else { "NOT met" };
                notes.push(format!("ito best/rayon best {r:.3} (<= 1: {verdict})"));
            }
            if let Some((_, sfinest, sbest)) = get("seq") {
                let r = finest.1 / sbest.1;
                let crit = if plan.workload == Workload::Fib && finest.0 == 2 {
                    format!(" (<= 2.0: {})", if r <= 2.0 { "met" } else { "NOT met" })
                } else {
                    String::new()
                };
                notes.push(format!("ito finest/seq best {r:.3}{crit}"));
                // The same algorithm at the same grain without forks: the fork overhead alone
                // (1/workers with free forks and perfect scaling).
                if sfinest.0 == finest.0 {
                    notes.push(format!("ito finest/seq finest {:.3}", finest.1 / sfinest.1));
                }
            }
        }
        if !notes.is_empty() {
            let _ = writeln!(s, "  {w} n={}: {}", plan.n, notes.join("; "));
        }
    }
    s
}

#[cfg(test)]
mod alloc_tests {
    //! No workload allocates per fork: a counting global allocator (test builds only), armed
    //! around the timed computation of each workload at its finest grain on a 2-worker ito
    //! runtime. It runs in a child process (this test binary, filtered to one ignored test)
    //! so that other tests' allocations do not count.

    use std::alloc::{GlobalAlloc, Layout, System};
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

    use super::workloads::{Fork, Input, Workload};

    static ARMED: AtomicBool = AtomicBool::new(false);
    static ALLOCS: AtomicU64 = AtomicU64::new(0);
    static FORKS: AtomicU64 = AtomicU64::new(0);
    /// The sizes of the first allocations counted, for the report.
    static SIZES: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

    /// Counts an allocation of `size` bytes if armed.
    fn count(size: usize) {
        if ARMED.load(Relaxed) {
            let i = ALLOCS.fetch_add(1, Relaxed);
            if let Some(slot) = SIZES.get(i as usize) {
                slot.store(size as u64, Relaxed);
            }
        }
    }

    /// `System`, counting allocations while [`ARMED`].
    struct Counting;

    // SAFETY: every method forwards to `System` with the caller's arguments.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count(layout.size());
            // SAFETY: the caller's contract.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count(layout.size());
            // SAFETY: the caller's contract.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count(new_size);
            // SAFETY: the caller's contract.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's contract.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// `ito::join`, counting forks.
    struct CountingIto;

    impl Fork for CountingIto {
        fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
        where
            A: FnOnce() -> RA + Send,
            B: FnOnce() -> RB + Send,
            RA: Send,
            RB: Send,
        {
            FORKS.fetch_add(1, Relaxed);
            ito::join(a, b)
        }
    }

    const CHILD_ENV: &str = "ITO_BENCH_ALLOC_CHILD";

    #[test]
    #[ignore = "run in a child process by no_workload_allocates_per_fork"]
    fn alloc_child() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return;
        }
        let rt = ito::Runtime::builder().workers(2).build().unwrap();
        for (w, n) in [
            (Workload::Fib, 27),
            (Workload::Tree, 20),
            (Workload::Sort, 100_000),
            (Workload::Nqueens, 12),
        ] {
            let mut input = Input::prepare(w, n);
            let c = w.finest_cutoff();
            // Warm-up, so that lazily grown buffers exist.
            input.reset();
            let raw = rt.install(|| input.compute::<CountingIto>(c));
            assert_eq!(input.verify(raw).1, Ok(()), "{} warm-up", w.name());
            // Incidental allocations (a compensation thread starting when a worker sleeps in
            // a join wait) do not recur in every run; allocations per fork would.
            for attempt in 1..=3 {
                if measure_once(&rt, &mut input, w, n, c, attempt) {
                    break;
                }
                assert!(attempt < 3, "{}: allocates in every run", w.name());
            }
        }
    }

    /// One measured run; whether it allocated far less than once per fork.
    fn measure_once(
        rt: &ito::Runtime,
        input: &mut Input,
        w: Workload,
        n: u64,
        c: u64,
        attempt: u32,
    ) -> bool {
        input.reset();
        FORKS.store(0, Relaxed);
        ALLOCS.store(0, Relaxed);
        let before = rt.metrics();
        ARMED.store(true, Relaxed);
        let raw = rt.install(|| input.compute::<CountingIto>(c));
        ARMED.store(false, Relaxed);
        let after = rt.metrics();
        let (allocs, forks) = (ALLOCS.load(Relaxed), FORKS.load(Relaxed));
        let sizes: Vec<u64> = SIZES
            .iter()
            .take(allocs as usize)
            .map(|s| s.load(Relaxed))
            .collect();
        eprintln!(
            "alloc-count {} n={n} cutoff={c} run {attempt}: {allocs} allocations \
             (first sizes {sizes:?}), {forks} forks; ito: {} join steals, \
             {} compensations, {} parks, {} spawned",
            w.name(),
            after.join_steals - before.join_steals,
            after.compensations - before.compensations,
            after.parks - before.parks,
            after.spawned - before.spawned,
        );
        assert_eq!(input.verify(raw).1, Ok(()), "{}", w.name());
        assert!(forks >= 100_000, "{}: only {forks} forks", w.name());
        allocs * 1000 < forks
    }

    #[test]
    fn no_workload_allocates_per_fork() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "join::alloc_tests::alloc_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .output()
            .expect("the test binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        eprint!("{err}");
        assert!(out.status.success(), "child failed: {}", out.status);
        for w in ["fib", "tree", "sort", "nqueens"] {
            assert!(
                err.contains(&format!("alloc-count {w} ")),
                "the child measured {w}"
            );
        }
    }
}
