//! What one traced event says: a timestamp and a [`Kind`].

/// Why a thread parked or blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// A worker found no work anywhere (`park/sleep.rs`).
    NoWork,
    /// A retired compensation thread waits to be reactivated or to exit.
    Retired,
    /// A worker blocked in `Future::wait` (or another wait on a completion cell).
    Wait,
    /// A worker blocked on the latch of a join job another thread runs.
    JoinLatch,
    /// A worker blocked in a nested `block_on`.
    BlockOn,
    /// A worker blocked in an STM `retry`.
    StmRetry,
    /// A worker running a `block_in_place` closure.
    BlockInPlace,
}

impl Why {
    /// The name the exporter shows.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Why::NoWork => "park: no work",
            Why::Retired => "park: retired",
            Why::Wait => "blocked: wait",
            Why::JoinLatch => "blocked: join latch",
            Why::BlockOn => "blocked: block_on",
            Why::StmRetry => "blocked: stm retry",
            Why::BlockInPlace => "blocked: block_in_place",
        }
    }
}

/// Where stolen work came from, when it was not another thread's slot.
pub(crate) const FROM_INJECTOR: u64 = u64::MAX;

/// What happened. Task ids are task header addresses (unique among live tasks; an address
/// is reused only after its task ended); `0` is "no task" (outside any poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A worker starts running a task taken from a queue (one per `Metrics::polled`).
    PollStart { task: u64 },
    /// A waiter starts running the task it waits for, inline (`Metrics::helped`).
    HelpStart { task: u64 },
    /// The run started by the latest unmatched `PollStart` or `HelpStart` returned.
    PollEnd,
    /// A task was spawned by the task `parent` (one per `Metrics::spawned`), with the name
    /// it was given (`ito::named`), if any.
    Spawn {
        task: u64,
        parent: u64,
        name: Option<&'static str>,
    },
    /// A task was woken by the task `by`.
    Wake { task: u64, by: u64 },
    /// `n` tasks were stolen from slot `from` (or [`FROM_INJECTOR`]).
    Steal { from: u64, n: u64 },
    /// The thread parks (one per `Metrics::parks` for `NoWork` and `Retired`) or blocks.
    Park { why: Why },
    /// The park or block started by the latest unmatched `Park` ended.
    Unpark,
    /// The task running on this thread blocked in one of ito's waits and suspended with its
    /// stack (one per `Metrics::suspends`); the thread goes on with other tasks. Ends the run
    /// started by the latest unmatched `PollStart`, `HelpStart` or `Resume`.
    Suspend,
    /// The suspended `task` resumed on this thread: its run goes on until the next `PollEnd`
    /// (or `Suspend`).
    Resume { task: u64 },
    /// A compensation thread was started or reactivated on slot `slot`.
    CompensationStart { slot: u64 },
    /// This compensation thread retired (it parks in the spare list).
    CompensationRetire,
    /// A blocking-pool job starts.
    BlockingStart,
    /// The blocking-pool job ended.
    BlockingEnd,
    /// `n` join jobs of this thread were exposed on its shelf.
    JoinExpose { n: u64 },
    /// This thread took another thread's join job (one per `Metrics::join_steals`).
    JoinSteal,
    /// This thread starts running the join job it took (the next event after `JoinSteal`).
    JoinJobStart,
    /// The join job started by the latest unmatched `JoinJobStart` is done.
    JoinJobEnd,
    /// The timer thread fired `n` timers' callbacks, which it runs next.
    TimerFire { n: u64 },
    /// A process was spawned; `pid` is its block's address.
    ProcessSpawn { pid: u64 },
    /// A process ended, normally (its body returned `()` or `Ok(())`) or not.
    ProcessExit { pid: u64, normal: bool },
    /// A user event (`trace::event`).
    User { name: &'static str },
    /// A user span (`trace::span`) that started at `start` ended now. One record at the
    /// end, so a span may end on another thread than the one it started on (an async task
    /// that moved).
    Span { name: &'static str, start: u64 },
}

/// One event as the exporter reads it: nanoseconds since the recorder started, and what
/// happened (decoded from its records, `trace/raw.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub(crate) t: u64,
    pub(crate) kind: Kind,
}
