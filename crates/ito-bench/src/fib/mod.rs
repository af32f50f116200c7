//! The workloads of experiment 000: a fib tree where every call with `n >= cutoff` forks
//! tasks for `fib(n-1)` and `fib(n-2)` and combines them, and every call below the cutoff
//! runs the sequential [`sfib`] inside a task of its own.

use std::time::Instant;

use clap::ValueEnum;

/// Which runtime computes the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Impl {
    /// This project's runtime.
    Ito,
    /// tokio's multi-thread runtime.
    Tokio,
    /// rayon's fork-join pool (style `join` only).
    Rayon,
    /// Plain `sfib(n)` on the main thread.
    Seq,
}

impl Impl {
    /// The name used on the command line and in records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Ito => "ito",
            Impl::Tokio => "tokio",
            Impl::Rayon => "rayon",
            Impl::Seq => "seq",
        }
    }
}

/// How a task uses the results of its two children.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Style {
    /// Combinators: `zip`/`map`/`flatten` (Scala's map/flatMap).
    Flat,
    /// Blocking wait inside the task (Scala's `Await.result`).
    Wait,
    /// `async` task that `.await`s its children.
    Async,
    /// Fork-join (`ito::join`, `rayon::join`).
    Join,
}

impl Style {
    /// The name used on the command line and in records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Style::Flat => "flat",
            Style::Wait => "wait",
            Style::Async => "async",
            Style::Join => "join",
        }
    }
}

/// The style name a run of `imp` with `style` reports, or why the pair cannot run.
pub(crate) fn effective_style(imp: Impl, style: Style) -> Result<&'static str, String> {
    match (imp, style) {
        (Impl::Seq, _) => Ok("seq"),
        (Impl::Rayon, _) => Ok("join"),
        (Impl::Tokio, Style::Flat | Style::Join) => Err(format!(
            "style {} is not applicable to impl tokio (use wait or async)",
            style.name()
        )),
        (_, s) => Ok(s.name()),
    }
}

/// Sequential fib: the plain recursion a user would write, the leaf work of every
/// implementation and the sequential baseline ("x sequential" is against it). Its argument
/// comes from the command line, so nothing is computed at compile time; it has no
/// `black_box` per call, which would slow every call and make the baseline a handicapped one.
#[inline(never)]
pub(crate) fn sfib(n: u64) -> u64 {
    if n < 2 { n } else { sfib(n - 1) + sfib(n - 2) }
}

/// Iterative fib, the reference the results are checked against.
pub(crate) fn fib_reference(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Number of tasks of the tree: `T(n) = 1` if `n < cutoff`, else `1 + T(n-1) + T(n-2)`.
pub(crate) fn task_count(n: u64, cutoff: u64) -> u64 {
    // t[i] for i = 0..=n, computed bottom-up (cutoff >= 2, so i >= cutoff implies i >= 2).
    let mut t = Vec::with_capacity(n as usize + 1);
    for i in 0..=n {
        let v = if i < cutoff {
            1
        } else {
            1 + t[i as usize - 1] + t[i as usize - 2]
        };
        t.push(v);
    }
    t[n as usize]
}

/// One timed computation.
pub(crate) struct Outcome {
    /// The value computed.
    pub(crate) result: u64,
    /// Wall-clock seconds from spawning the root to having its value.
    pub(crate) seconds: f64,
    /// Tasks created.
    pub(crate) tasks: u64,
}

/// A runtime built once and used for every repetition.
pub(crate) enum Workload {
    /// ito runtime and the style to run on it.
    Ito(with_ito::Runtime, Style),
    /// tokio multi-thread runtime and the style to run on it.
    Tokio(tokio::runtime::Runtime, Style),
    /// rayon pool.
    Rayon(rayon::ThreadPool),
    /// The main thread.
    Seq,
}

impl Workload {
    /// Builds the runtime of `imp` with `workers` threads. The style must be valid for
    /// `imp` (see [`effective_style`]).
    pub(crate) fn new(imp: Impl, style: Style, workers: usize) -> Result<Self, String> {
        Ok(match imp {
            Impl::Ito => Workload::Ito(with_ito::runtime(workers)?, style),
            Impl::Tokio => Workload::Tokio(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .build()
                    .map_err(|e| format!("building the tokio runtime: {e}"))?,
                style,
            ),
            Impl::Rayon => Workload::Rayon(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(workers)
                    .build()
                    .map_err(|e| format!("building the rayon pool: {e}"))?,
            ),
            Impl::Seq => Workload::Seq,
        })
    }

    /// Computes fib(`n`) with `cutoff` and times it.
    pub(crate) fn run(&self, n: u64, cutoff: u64) -> Result<Outcome, String> {
        match self {
            Workload::Ito(rt, style) => with_ito::run(rt, *style, n, cutoff),
            Workload::Tokio(rt, style) => {
                let start = Instant::now();
                let result = rt.block_on(async move {
                    match style {
                        Style::Wait => tokio_wait(n, cutoff).await,
                        _ => tokio_async(n, cutoff).await,
                    }
                });
                let seconds = start.elapsed().as_secs_f64();
                let result = result.map_err(|e| format!("root task failed: {e}"))?;
                Ok(Outcome {
                    result,
                    seconds,
                    tasks: task_count(n, cutoff),
                })
            }
            Workload::Rayon(pool) => {
                let start = Instant::now();
                let result = pool.install(|| rayon_fib(n, cutoff));
                Ok(Outcome {
                    result,
                    seconds: start.elapsed().as_secs_f64(),
                    tasks: task_count(n, cutoff),
                })
            }
            Workload::Seq => {
                // The argument and the result pass through `black_box` (not every call): the
                // compiler may otherwise move the pure `sfib` out of the timed span.
                let start = Instant::now();
                let result = std::hint::black_box(sfib(std::hint::black_box(n)));
                Ok(Outcome {
                    result,
                    seconds: start.elapsed().as_secs_f64(),
                    tasks: 0,
                })
            }
        }
    }
}

/// tokio, `async` style: every call is a task that awaits its children's `JoinHandle`s.
fn tokio_async(n: u64, c: u64) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        if n < c {
            return sfib(n);
        }
        let a = tokio_async(n - 1, c);
        let b = tokio_async(n - 2, c);
        a.await.unwrap() + b.await.unwrap()
    })
}

/// tokio, `wait` style (the `Await.result` analogue): the task blocks its worker on each
/// child with `block_in_place` + `Handle::block_on`.
fn tokio_wait(n: u64, c: u64) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        if n < c {
            return sfib(n);
        }
        let a = tokio_wait(n - 1, c);
        let b = tokio_wait(n - 2, c);
        let block =
            |h| tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(h));
        block(a).unwrap() + block(b).unwrap()
    })
}

/// rayon, `join` style.
fn rayon_fib(n: u64, c: u64) -> u64 {
    if n < c {
        return sfib(n);
    }
    let (a, b) = rayon::join(|| rayon_fib(n - 1, c), || rayon_fib(n - 2, c));
    a + b
}

/// The ito workloads (styles `wait`, `flat` and `async`).
pub(crate) mod command;
pub(crate) mod spawn_cost;
mod with_ito {
    use super::{Outcome, Style, sfib};
    use std::time::Instant;

    pub(crate) use ito::Runtime;

    /// Builds an ito runtime with `workers` workers (traced when `ITO_TRACE` is set).
    pub(super) fn runtime(workers: usize) -> Result<Runtime, String> {
        crate::measure::traced(Runtime::builder().workers(workers))
            .build()
            .map_err(|e| format!("building the ito runtime: {e}"))
    }

    /// `wait` style, the body of the task for fib(`n`): fork two tasks and block on them.
    fn wait_body(n: u64, c: u64) -> u64 {
        if n < c {
            return sfib(n);
        }
        let a = wait_task(n - 1, c);
        let b = wait_task(n - 2, c);
        a.wait().unwrap() + b.wait().unwrap()
    }

    /// `wait` style: the task for fib(`n`).
    fn wait_task(n: u64, c: u64) -> ito::Task<u64> {
        ito::spawn_fn(move || wait_body(n, c))
    }

    /// `flat` style, the body of the task for fib(`n`) with `n >= c`: fork two tasks and
    /// combine them without blocking.
    fn flat_body(n: u64, c: u64) -> ito::Future<u64> {
        let a = flat_task(n - 1, c);
        let b = flat_task(n - 2, c);
        a.zip(&b).map(|(x, y)| x + y)
    }

    /// `flat` style: the task for fib(`n`).
    fn flat_task(n: u64, c: u64) -> ito::Future<u64> {
        if n < c {
            ito::spawn_fn(move || sfib(n)).shared()
        } else {
            ito::spawn_fn(move || flat_body(n, c)).shared().flatten()
        }
    }

    /// `async` style, the body of the task for fib(`n`): fork two tasks and await them.
    async fn async_body(n: u64, c: u64) -> u64 {
        if n < c {
            return sfib(n);
        }
        let a = async_task(n - 1, c);
        let b = async_task(n - 2, c);
        a.await.unwrap() + b.await.unwrap()
    }

    /// `async` style: the task for fib(`n`).
    fn async_task(n: u64, c: u64) -> ito::Task<u64> {
        ito::spawn(async_body(n, c))
    }

    /// `join` style: fork with `ito::join` (no tasks; the tree counts as joins).
    fn join_fib(n: u64, c: u64) -> u64 {
        if n < c {
            return sfib(n);
        }
        let (a, b) = ito::join(|| join_fib(n - 1, c), || join_fib(n - 2, c));
        a + b
    }

    /// Computes fib(`n`) on `rt` in `style`, timing it and counting spawned tasks. The root
    /// task is spawned on `rt` from this (non-worker) thread, which blocks on its value.
    pub(super) fn run(rt: &Runtime, style: Style, n: u64, c: u64) -> Result<Outcome, String> {
        let spawned = rt.metrics().spawned;
        let start = Instant::now();
        let result = match style {
            Style::Wait => rt.spawn_fn(move || wait_body(n, c)).wait(),
            Style::Flat if n < c => rt.spawn_fn(move || sfib(n)).wait(),
            Style::Flat => rt
                .spawn_fn(move || flat_body(n, c))
                .shared()
                .flatten()
                .wait(),
            Style::Async => rt.spawn(async_body(n, c)).wait(),
            Style::Join => Ok(rt.install(move || join_fib(n, c))),
        };
        let seconds = start.elapsed().as_secs_f64();
        let tasks = match style {
            Style::Join => super::task_count(n, c),
            _ => rt.metrics().spawned - spawned,
        };
        let result = result.map_err(|e| format!("root task failed: {e:?}"))?;
        Ok(Outcome {
            result,
            seconds,
            tasks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_and_counts() {
        assert_eq!(fib_reference(0), 0);
        assert_eq!(fib_reference(10), 55);
        assert_eq!(fib_reference(93), 12_200_160_415_121_876_738);
        assert_eq!(sfib(20), fib_reference(20));
        assert_eq!(task_count(5, 10), 1);
        assert_eq!(task_count(10, 10), 3);
        // c = 2: T(n) = 2 fib(n+1) - 1.
        assert_eq!(task_count(20, 2), 2 * fib_reference(21) - 1);
    }

    #[test]
    fn impls_compute_fib() {
        for imp in [Impl::Ito, Impl::Tokio, Impl::Rayon, Impl::Seq] {
            for style in [Style::Flat, Style::Wait, Style::Async, Style::Join] {
                if effective_style(imp, style).is_err() {
                    continue;
                }
                let w = Workload::new(imp, style, 2).unwrap();
                let o = w.run(20, 10).unwrap();
                assert_eq!(o.result, 6765, "{imp:?} {style:?}");
                if imp != Impl::Seq {
                    assert!(o.tasks >= task_count(20, 10), "{imp:?} {style:?}");
                }
            }
        }
    }
}
