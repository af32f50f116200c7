//! What each source document (indexed in `bench/seeds.md`) measured and the figures its own
//! text gives: the text the report puts beside our measurements. Every figure here is in the
//! document's text (a talk that gives only plots and words is quoted in its words); what the
//! peers did on this machine comes from the run, never from here.

use super::plan::Doc;

/// One document's side of the report.
pub(crate) struct Published {
    /// The document's title.
    pub(crate) title: &'static str,
    /// What it measured.
    pub(crate) measured: &'static str,
    /// Its published figures (the document's machine), as its text gives them.
    pub(crate) figures: &'static str,
    /// What ito must show.
    pub(crate) target: &'static str,
}

/// What `doc` says about its own timeline pictures, quoted (with a translation where it is not
/// in English); `None` where it shows none.
pub(crate) fn pictures(doc: Doc) -> Option<&'static str> {
    match doc {
        Doc::D002 => Some(
            "The document shows threadscope pictures of the sequential program and of \
             `find_par` on 4 cores, and says of the second: 「水色がスレッド生成、黄緑がスレッドの\
             起動を表している。4コアの場合はスレッドの生成や起動が頻繁に行われていることが画像\
             からわかる。」 (\"Light blue is a thread's creation, yellow-green its start: the \
             picture shows that on 4 cores threads are created and started very often.\") It \
             blames the thread per directory: too fine a grain. Of `find_par_sem` (8 permits, 4 \
             cores): 「水色の線(スレッドの生成)が減っているのがわかる。ただ、問題はGC以外の\
             タイミングでもスレッドの実行が止まっているときがある点である。」 (\"The light-blue \
             lines (thread creations) are fewer. The problem is that threads also stop running \
             at times other than GC\"), which it puts down to threads blocking on the \
             semaphore's `MVar`; it then replaces the `MVar` with an `IORef` \
             (`atomicModifyIORef`). (Document 002, \"スレッドによる並列プログラミング\", 2015.)",
        ),
        _ => None,
    }
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
                worker waits; the pool adds compensation threads up to a limit, then \
                deadlocks).",
            figures: "Scala 2.12.0, JDK 1.8.0_60, a 4-core (8-thread) 2.6 GHz Core i7 MacBook \
                Pro, fib(42): map/flatMap performs steadily from th=35 down to about 20; \
                Await.result peaks at 37, degrades gradually as tasks multiply, and deadlocks \
                (no result, a skull on the plot) from th=31 down, the pool having reached its \
                thread limit (a little over 250 threads on that machine).",
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
            figures: "Elixir 1.3.1 on Erlang/OTP 19 (4 schedulers): 10k 62 ms, 40k 156 ms, \
                100k 438 ms, 400k 1.61 s, 1M 4.34 s (400k and up need `+P 1000000`); Squeak \
                5.0: 40k 382 ms, 400k 3.53 s, and the VM crashes at 700k; Ruby 2.4.0dev \
                Fiber: 40k 23 s, and an error from 50k on.",
            target: "1M and 10M process chains, time and peak memory per process.",
        },
        Doc::D002 => Published {
            title: "Parallel find (Haskell, Parallel and Concurrent Programming in Haskell, ch. 13)",
            measured: "a recursive search for a file name: sequential; one thread per \
                subdirectory (`withAsync`, the first match cancels the rest); bounded by a \
                non-blocking semaphore; the `ParIO` monad.",
            figures: "GHC's `+RTS -s`, a home directory of 66,000 entries (35,000 directories), \
                a name that does not exist, elapsed: sequential 0.73 s (2 MB in use); one \
                thread per directory 1.01 s on 1 core (28 MB: 14x the memory), 0.55 s on 2, \
                0.29 s on 4; bounded by a non-blocking semaphore 0.29 s on 4 (5 MB), with an \
                IORef counter 0.25 s (6 MB); ParIO 0.25 s (6 MB).",
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
            figures: "Perl Coro, `Benchmark::cmpthese`, 100 tasks: async 680/s, async_pool \
                565/s; async 685/s against async_pool limited by a semaphore (8 running) \
                1538/s; resident memory after 10,000 tasks (`ps -o rss`): async 9240 KB, \
                async_pool 9964 KB, limited 2280 KB, channel pool 2304 KB; with a 1 ms sleep in \
                each task: async 388/s, limited pool of 8 292/s, of 50 617/s, channel pool \
                592/s.",
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
            figures: "ScalaMeter on a 64-core server; the talk gives plots and words, no \
                table. orAlt: the first STM version \"by far slower\", the optimized one \"as \
                fast as the native ones\". Sequential reads (completion delayed 1 ms): native \
                \"up to ~ 0.2 ms faster\" and \"nearly constant\", the STM API \"linear\". \
                Concurrent reads: a thread pool \"more than 2 times faster\", native \
                \"slightly faster due the overhead of STM\". First completed: the unoptimized \
                version \"has a bad accuracy especially with much Futures\", native \"nearly \
                always better\", the optimized version \"nearly equal\". Callbacks: native \
                \"again the fastest\", the optimized version equivalent when the completion is \
                delayed.",
            target: "futures and promises that are transactional (readable and completable \
                inside `atomically`) and still as fast as a plain lock-free promise on the fast \
                path.",
        },
    }
}
