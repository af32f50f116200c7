//! What each source document measured and the figures it published, with the peers' figures
//! measured on this project's 2-core development machine (from
//! `bench/seeds.md`): the text the report puts beside our measurements.

use super::plan::Doc;

/// One document's side of the report.
pub(crate) struct Published {
    /// The document's title.
    pub(crate) title: &'static str,
    /// What it measured.
    pub(crate) measured: &'static str,
    /// Its published figures (the document's machine).
    pub(crate) figures: &'static str,
    /// The anchor figures measured here (the peers on the 2-core development machine).
    pub(crate) here: &'static str,
    /// What ito must show.
    pub(crate) target: &'static str,
}

/// The published side of `doc`.
pub(crate) fn of(doc: Doc) -> Published {
    match doc {
        Doc::D000 => Published {
            title: "Avoid Await.result (Scala Future)",
            measured: "fib(42) where every call above a cutoff `th` forks two futures on a \
                work-stealing pool (`ExecutionContext.global`) and below it runs the sequential \
                `sfib`; the cutoff is swept (smaller: more, finer tasks) and the plot shows \
                computations per second for two ways to use a dependency's result: callbacks \
                (`map`/`flatMap`: the worker is released) and blocking (`Await.result`: the \
                worker waits; the pool adds up to about 256 compensation threads, then \
                deadlocks).",
            figures: "Scala 2.12, 4-core MacBook Pro: map/flatMap stays flat from th=35 down to \
                about 20; Await.result peaks at 37, degrades as tasks multiply, and deadlocks \
                (no result, a skull on the plot) from th=31 down.",
            here: "Scala 2.13, JDK 17: map/flatMap 1.45 s at th=30, 4.2 s at th=25, and at th=20 \
                the JVM died creating threads; Await.result could not complete.",
            target: "every style (combinators, blocking `wait()`, `async`/`.await`, fork-join \
                `join`) completes at every cutoff from 40 down to 2, with no deadlock and no \
                thread explosion, and the blocking style costs about the same as the callback \
                style.",
        },
        Doc::D001 => Published {
            title: "spawn/chain (Elixir, Ruby Fiber, Squeak)",
            measured: "N lightweight processes in a chain: each waits for a number in its \
                mailbox and sends number+1 to the next; the last reply goes to the caller. \
                Time and memory against N.",
            figures: "Elixir (4 cores): 10k 62 ms, 40k 156 ms, 100k 438 ms, 400k 1.61 s, \
                1M 4.34 s (needs `+P`); Squeak 40k 382 ms, 400k 3.5 s, crashes at 700k; Ruby \
                Fiber 40k 23 s, fails above 50k.",
            here: "1M processes: Elixir 1.14 5.0 s and 2.7 GB; Go goroutines + channels 3.5 s \
                and 2.8 GB; tokio (current-thread, oneshot) 0.74 s and 440 MB; tokio \
                multi-thread 1.4 s.",
            target: "1M and 10M process chains, time and peak memory per process.",
        },
        Doc::D002 => Published {
            title: "Parallel find (Haskell, Parallel and Concurrent Programming in Haskell, ch. 13)",
            measured: "a recursive search for a file name: sequential; one thread per \
                subdirectory (`withAsync`, the first match cancels the rest); bounded by a \
                non-blocking semaphore; the `ParIO` monad.",
            figures: "a 66,000-entry tree (35,000 directories), a name that does not exist: \
                sequential 0.73 s; one thread per directory 1.01 s on 1 core, 0.55 s on 2, \
                0.29 s on 4 with 14x the memory; bounded by the semaphore 0.29 s and 5 MB; \
                ParIO 0.25 s.",
            here: "(no Haskell peer here; the peers are GNU find and fd on the same tree)",
            target: "a real `find` tool with first-match cancellation and bounded parallelism, \
                faster than GNU find and as fast as `fd` on the same tree.",
        },
        Doc::D003 => Published {
            title: "Coro thread pools (Perl)",
            measured: "`async` (a new coroutine per task) versus `async_pool` (reused idle \
                coroutines), a semaphore capping running tasks, and a hand-made pool of N \
                workers reading closures from a bounded channel: 100 tasks that each `up` a \
                counting semaphore while the caller waits for all; 10,000 tasks and the \
                resident memory; the same with a 1 ms sleep in each task.",
            figures: "async 680 runs/s, async_pool 565/s, limited pool 1538/s; RSS 9.2 MB \
                (async), 2.3 MB (limited); with a 1 ms sleep: async 388/s, pool(8) 292/s, \
                pool(50) 617/s, channel pool 592/s.",
            here: "(Perl Coro is not a peer here; the peer is tokio doing the same)",
            target: "spawn, pooled and bounded execution, semaphores and channels, with the same \
                experiments, and memory that stays flat as tasks grow.",
        },
        Doc::D004 => Published {
            title: "STM-based futures and promises (Scala, Schwarz and Sulzmann)",
            measured: "futures as transactional variables; the ScalaMeter benchmarks: `orAlt` \
                chains of 10..100 (first or last alternative succeeds); sequential reading of \
                one completed future 100..1000 times; concurrent reading by 10..60 threads \
                (new threads vs a pool); first-completed-of 10..60 futures with staggered \
                500+x us busy-waits and the accuracy of which one wins; 10..100 callbacks on \
                a future completing at once or after 1 ms; dining philosophers with \
                `multiTrySuccess`.",
            figures: "the STM version is competitive with the native one after optimization, \
                about 15% slower on sequential reads, and lost first-completed accuracy before \
                optimization (native about 90% correct).",
            here: "(the peers are futures-rs `Shared` oneshots, tokio oneshots, and for the \
                philosophers try-locked mutexes; the STM bank compares ito::stm with the `stm` \
                crate and per-account mutexes)",
            target: "futures and promises that are transactional (readable and completable \
                inside `atomically`) and still as fast as a plain lock-free promise on the fast \
                path.",
        },
    }
}
