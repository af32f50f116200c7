//! Software transactional memory: [`TVar`]s read and written in [`atomically`] blocks that
//! commit all at once or not at all, with GHC's [`retry`] and [`Tx::or_else`].
//!
//! ```
//! use ito::stm::{atomically, check, TVar};
//!
//! let from = TVar::new(100);
//! let to = TVar::new(0);
//! // A transfer: both writes become visible together, or neither does.
//! atomically(|tx| {
//!     let balance = from.read(tx)?;
//!     check(balance >= 30)?; // not enough money: wait until there is
//!     from.write(tx, balance - 30)?;
//!     to.modify(tx, |b| b + 30)
//! });
//! assert_eq!(from.read_atomic() + to.read_atomic(), 100);
//! ```
//!
//! - A transaction's closure may run several times (when it conflicts with another commit),
//!   so it should do nothing but read and write `TVar`s and compute. Side effects belong after
//!   `atomically` returns.
//! - Reads see one consistent snapshot, even in an attempt that will be thrown away (opacity):
//!   an invariant that holds between variables at every commit holds for everything a
//!   transaction reads.
//! - [`retry`] abandons the attempt and sleeps until a variable it read is written. In a
//!   synchronous [`atomically`] the thread parks (on a worker, handing its place to another
//!   thread, like [`Future::wait`](crate::Future::wait)); [`atomically_async`] suspends the
//!   task instead.
//! - A transaction that keeps losing to others (16 conflicts in a row) runs in *serial mode*:
//!   other transactions defer to it (for up to 10 ms each, so that a serial transaction
//!   waiting for another thread's transaction cannot deadlock). So a long transaction is not
//!   starved by short ones.
//! - `Ok(Err(e))` is a successful transaction: whatever it wrote commits. To give up with an
//!   error and no writes, decide before writing (or return the error from a transaction that
//!   only read).
//! - A retry with a timeout is an `or_else` with a timer: `tx.or_else(|tx| ..., |tx|
//!   ito::sleep(d).read_tx(tx))` ([`Future::read_tx`](crate::Future::read_tx)).
//! - A value replaced in a `TVar` is dropped later, on whichever thread the epoch collector
//!   runs it (a worker hands its share over before it sleeps): its `Drop` must not use the
//!   STM, and should not rely on running promptly.
//! - `atomically` inside a transaction panics: transactions compose by calling functions that
//!   take the `&mut Tx`, not by nesting.
//! - Building blocks: [`TQueue`] (a FIFO queue, unbounded or bounded, GHC's `TQueue` and
//!   `TBQueue`) and [`TMVar`] (a slot that is full or empty, GHC's `TMVar`).
//! - Futures and promises are transactional cells: [`Future::read_tx`](crate::Future::read_tx)
//!   (an empty future retries), [`Promise::try_complete_tx`](crate::Promise::try_complete_tx),
//!   and [`multi_try_success`] completes several promises all at once or not at all.
//!
//! The design (TL2: a global version clock and a versioned lock per variable) and its
//! correctness argument are in `docs/stm.md`.

mod after_commit;
mod cells;
pub(crate) mod global;
mod reclaim;
pub(crate) mod sleepers;
mod tmvar;
mod tqueue;
mod tvar;
pub(crate) mod tx;

use std::cell::Cell;
use std::future::Future as StdFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pub use cells::multi_try_success;
pub use tmvar::TMVar;
pub use tqueue::TQueue;
pub use tvar::TVar;
pub use tx::Tx;

use crate::future::cell::{CellHeader, CellWaiter};
use crate::loom::Ordering;
use global::Global;
use sleepers::{Sleeper, Wake};
use tvar::VarHeader;

/// Why a transaction attempt stops early: it must [`retry`], or it conflicted with another
/// commit and will run again. Propagate it with `?`; only ito makes these.
///
/// ```
/// use ito::stm::{StmError, StmResult, retry};
/// let stopped: StmResult<u8> = retry();
/// let e: StmError = stopped.unwrap_err();
/// assert_eq!(e.to_string(), "the transaction retries");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StmError(Kind);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Retry,
    Conflict,
}

impl std::fmt::Debug for StmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Kind::Retry => f.write_str("StmError(retry)"),
            Kind::Conflict => f.write_str("StmError(conflict)"),
        }
    }
}

impl std::fmt::Display for StmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Kind::Retry => f.write_str("the transaction retries"),
            Kind::Conflict => f.write_str("the transaction conflicted with another commit"),
        }
    }
}

impl std::error::Error for StmError {}

/// What transactional operations return.
///
/// ```
/// use ito::stm::{StmResult, TVar, Tx, atomically};
/// fn take(tx: &mut Tx, stock: &TVar<u32>, n: u32) -> StmResult<bool> {
///     let have = stock.read(tx)?;
///     if have < n {
///         return Ok(false);
///     }
///     stock.write(tx, have - n)?;
///     Ok(true)
/// }
/// let stock = TVar::new(5);
/// assert!(atomically(|tx| take(tx, &stock, 3)));
/// assert!(!atomically(|tx| take(tx, &stock, 3)));
/// ```
pub type StmResult<T> = Result<T, StmError>;

/// Abandons this attempt and waits until a variable the transaction has read is written, then
/// runs the transaction again (GHC's `retry`).
///
/// ```
/// use ito::stm::{atomically, retry, TVar};
/// let slot = TVar::new(None);
/// let s = slot.clone();
/// let t = std::thread::spawn(move || atomically(|tx| s.write(tx, Some(42))));
/// let got = atomically(|tx| match slot.read(tx)? {
///     Some(v) => Ok(v),
///     None => retry(),
/// });
/// assert_eq!(got, 42);
/// t.join().unwrap();
/// ```
pub fn retry<T>() -> StmResult<T> {
    Err(StmError(Kind::Retry))
}

/// [`retry`] unless `cond` holds.
///
/// ```
/// use ito::stm::{atomically, check, TVar};
/// let n = TVar::new(3);
/// atomically(|tx| {
///     let v = n.read(tx)?;
///     check(v > 0)?;
///     n.write(tx, v - 1)
/// });
/// assert_eq!(n.read_atomic(), 2);
/// ```
pub fn check(cond: bool) -> StmResult<()> {
    if cond { Ok(()) } else { retry() }
}

/// Conflicts in a row after which a transaction runs in serial mode.
const SERIAL_AFTER: u32 = 16;

#[cfg(not(loom))]
fn global() -> &'static Global {
    static GLOBAL: Global = Global::new();
    &GLOBAL
}

#[cfg(loom)]
fn global() -> &'static Global {
    unreachable!("loom models build their own `Global`")
}

thread_local! {
    static IN_TX: Cell<bool> = const { Cell::new(false) };
}

/// Replaces whether this thread runs a transaction (a worker loop suspending or resuming: the
/// transaction belongs to the loop's stack). Returns the previous value.
pub(crate) fn swap_in_transaction(in_tx: bool) -> bool {
    IN_TX.with(|t| t.replace(in_tx))
}

/// Marks this thread as running a transaction's closure.
struct NestGuard;

impl NestGuard {
    fn enter() -> NestGuard {
        // Under loom, model threads share the OS thread's thread-locals.
        if cfg!(not(loom)) && IN_TX.with(|t| t.replace(true)) {
            panic!(
                "ito::stm: `atomically` called inside a transaction; pass the `&mut Tx` to \
                 the inner code instead of nesting transactions"
            );
        }
        NestGuard
    }
}

impl Drop for NestGuard {
    fn drop(&mut self) {
        if cfg!(not(loom)) {
            IN_TX.with(|t| t.set(false));
        }
    }
}

/// The serial-mode token, released on drop (also when the transaction panics).
struct Serial(&'static Global);

impl Drop for Serial {
    fn drop(&mut self) {
        self.0.serial.store(false, Ordering::SeqCst);
    }
}

impl Serial {
    fn try_take(g: &'static Global) -> Option<Serial> {
        g.serial
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
            .then_some(Serial(g))
    }
}

/// How long a transaction defers to one in serial mode before it runs anyway. Serial mode is
/// priority, not mutual exclusion: a serial transaction may be waiting, through another thread,
/// for the very transaction that defers to it (`join`, `spawn(..).wait()`), and that must not
/// deadlock.
const SERIAL_PATIENCE: std::time::Duration = std::time::Duration::from_millis(10);

/// Blocks (handing the worker's place on) while another transaction runs in serial mode, for
/// at most [`SERIAL_PATIENCE`]. Returns `true` if it ran out of patience: the caller then
/// commits even while the serial transaction runs.
#[inline]
fn wait_while_serial(g: &'static Global) -> bool {
    g.serial.load(Ordering::Relaxed) && defer_to_serial(g)
}

/// [`wait_while_serial`] once a serial transaction was seen.
#[cold]
fn defer_to_serial(g: &'static Global) -> bool {
    crate::block_in_place(|| {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(20);
        while g.serial.load(Ordering::Relaxed) {
            if start.elapsed() >= SERIAL_PATIENCE {
                return true;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(1));
        }
        false
    })
}

/// A pause after a conflict, longer after each one in a row: the winner is usually in the
/// middle of its commit.
#[inline]
fn backoff(conflicts: u32) {
    #[cfg(not(loom))]
    if conflicts <= 4 {
        for _ in 0..1u32 << conflicts {
            std::hint::spin_loop();
        }
    } else {
        // The winner may have been preempted in its commit: let it run.
        std::thread::yield_now();
    }
    #[cfg(loom)]
    {
        let _ = conflicts;
        loom::thread::yield_now();
    }
}

/// Runs `f` as a transaction and returns its result, running it again as often as it
/// conflicts with other commits, and sleeping in between when it calls [`retry`].
///
/// Callable from any thread or task; on a worker a `retry` sleep hands the worker's place to
/// another thread, as [`Future::wait`](crate::Future::wait) does. Panics if called inside
/// another transaction. A panic in `f` abandons the transaction (nothing it wrote is visible)
/// and propagates.
///
/// ```
/// use ito::stm::{atomically, TVar};
/// let counter = TVar::new(0u64);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             for _ in 0..1000 {
///                 atomically(|tx| counter.modify(tx, |c| c + 1));
///             }
///         });
///     }
/// });
/// assert_eq!(counter.read_atomic(), 4000);
/// ```
pub fn atomically<R>(f: impl FnMut(&mut Tx) -> StmResult<R>) -> R {
    atomically_in(global(), f)
}

pub(crate) fn atomically_in<R>(
    global: &'static Global,
    mut f: impl FnMut(&mut Tx) -> StmResult<R>,
) -> R {
    let nest = NestGuard::enter();
    let mut conflicts = 0u32;
    let mut serial: Option<Serial> = None;
    // Ran out of patience waiting for a serial transaction: commit regardless of the flag.
    let mut impatient = false;
    loop {
        if serial.is_none() && !impatient {
            if conflicts >= SERIAL_AFTER {
                serial = Serial::try_take(global);
            }
            if serial.is_none() {
                impatient = wait_while_serial(global);
            }
        }
        let mut tx = Tx::begin(global, serial.is_some() || impatient);
        let r = f(&mut tx);
        let r = tx.settle(r);
        let kind = match r {
            Ok(v) => match tx.commit() {
                Ok(notify) => {
                    // The transaction is over before any callback of a promise it completed
                    // runs (a callback may start a transaction of its own).
                    drop((tx, serial, nest));
                    notify.run();
                    return v;
                }
                Err(k) => k,
            },
            Err(StmError(k)) => k,
        };
        match kind {
            Kind::Conflict => {
                conflicts += 1;
                backoff(conflicts);
            }
            Kind::Retry => {
                // Sleeping with the serial token would stop every other committer, including
                // the one we wait for.
                serial = None;
                conflicts = 0;
                impatient = false;
                let blocker = crate::runtime::park::Blocker::current();
                sleep_until_changed(tx, Wake::Unblock(blocker.unblocker()), Some(&blocker));
            }
        }
    }
}

/// After a `retry`: registers on every variable `tx` read, and (given a blocker) sleeps
/// until one is written. Returns the sleeper and the variables it is registered on, if it did not
/// sleep (async), or `None` once done.
fn sleep_until_changed(
    tx: Tx,
    wake: Wake,
    park: Option<&crate::runtime::park::Blocker>,
) -> Option<Registration> {
    assert!(
        !tx.log.reads.is_empty() || !tx.log.cell_reads.is_empty(),
        "ito::stm: `retry` in a transaction that read no TVar would wait for ever"
    );
    let sleeper = Sleeper::new(wake);
    let mut vars: Vec<std::ptr::NonNull<VarHeader>> = Vec::new();
    for r in &tx.log.reads {
        if vars.contains(&r.hdr) {
            continue;
        }
        // SAFETY: pinned (through `tx`), so allocated; the reference, if we get one, keeps it
        // alive after we unpin. A variable whose last handle is gone cannot change: skip it.
        let h = unsafe { r.hdr.as_ref() };
        if h.try_inc_ref() {
            h.waiters().register(&sleeper);
            vars.push(r.hdr);
        }
    }
    assert!(
        !vars.is_empty() || !tx.log.cell_reads.is_empty(),
        "ito::stm: `retry` would wait for ever: every TVar the transaction read has been dropped"
    );
    // Then mark each variable WAITERS, but only if it is still as we read it: a commit that
    // changed it since either came first (our CAS fails: run again now) or will see the bit
    // when it locks the variable (and wake us: we are on its list already).
    for r in &tx.log.reads {
        if !vars.contains(&r.hdr) {
            continue;
        }
        // SAFETY: we hold a reference.
        if !unsafe { r.hdr.as_ref() }.mark_waiters(r.word) {
            sleeper.notify();
            break;
        }
    }
    let mut cells = Vec::new();
    for r in &tx.log.cell_reads {
        // SAFETY: the log holds a reference; ours keeps the cell alive after `tx` goes.
        unsafe { r.cell.as_ref() }.inc_ref();
        cells.push((r.cell, cells::register(r.cell, &sleeper)));
    }
    drop(tx); // unpin before sleeping
    // Values this thread replaced should not wait for its next commits to be freed.
    after_commit::flush_retired();
    let reg = Registration {
        sleeper,
        vars,
        cells,
    };
    if let Some(blocker) = park {
        let s = reg.sleeper.clone();
        crate::runtime::park::park_blocked(crate::trace::Why::StmRetry, blocker, move || {
            s.park_until_notified(blocker)
        });
        drop(reg);
        None
    } else {
        Some(reg)
    }
}

/// A sleeper registered on variables; unregisters (and lets the variables go) on drop.
struct Registration {
    sleeper: Arc<Sleeper>,
    vars: Vec<std::ptr::NonNull<VarHeader>>,
    /// Futures read while empty, with our node on each (if it was registered).
    cells: Vec<(
        std::ptr::NonNull<CellHeader>,
        Option<std::ptr::NonNull<CellWaiter>>,
    )>,
}

// SAFETY: the headers and cells are kept alive by the references we hold; they belong to
// `TVar<T>`s and futures with `T: Send + Sync`, and we only touch their wait lists and counts.
unsafe impl Send for Registration {}

impl Drop for Registration {
    fn drop(&mut self) {
        for h in self.vars.drain(..) {
            // SAFETY: we hold a reference.
            unsafe { h.as_ref() }.waiters().unregister(&self.sleeper);
            // SAFETY: the reference taken at registration.
            unsafe { VarHeader::dec_ref(h) };
        }
        for (cell, node) in self.cells.drain(..) {
            if let Some(node) = node {
                cells::unregister(cell, node);
            }
            // SAFETY: the reference taken at registration.
            unsafe { CellHeader::dec_ref(cell) };
        }
    }
}

/// Runs `f` as a transaction from async code: a `retry` suspends the task (no thread
/// sleeps) until a variable the transaction read is written.
///
/// ```
/// use ito::stm::{atomically, atomically_async, retry, TVar};
/// let flag = TVar::new(false);
/// let f = flag.clone();
/// let waiter = ito::spawn(async move {
///     atomically_async(|tx| if f.read(tx)? { Ok("set") } else { retry() }).await
/// });
/// atomically(|tx| flag.write(tx, true));
/// assert_eq!(waiter.wait(), Ok("set"));
/// ```
pub fn atomically_async<F, R>(f: F) -> Atomically<F>
where
    F: FnMut(&mut Tx) -> StmResult<R>,
{
    Atomically {
        f,
        conflicts: 0,
        registration: None,
        deferring: None,
        done: false,
    }
}

/// The future of [`atomically_async`]: the transaction's value when awaited.
///
/// ```
/// use ito::stm::{Atomically, TVar, atomically_async};
/// let n = TVar::new(1);
/// let next: Atomically<_> = atomically_async(|tx| Ok(n.read(tx)? + 1));
/// assert_eq!(ito::block_on(next), 2);
/// ```
#[must_use = "a transaction runs only when awaited"]
pub struct Atomically<F> {
    f: F,
    conflicts: u32,
    registration: Option<Registration>,
    /// Since when this transaction defers to one in serial mode.
    deferring: Option<std::time::Instant>,
    done: bool,
}

impl<F> Unpin for Atomically<F> {}

impl<F> std::fmt::Debug for Atomically<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Atomically")
            .field("conflicts", &self.conflicts)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<F, R> StdFuture for Atomically<F>
where
    F: FnMut(&mut Tx) -> StmResult<R>,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        assert!(!this.done, "`atomically_async` polled after it completed");
        let global = global();
        // Woken (or polled again): stop listening, run again.
        this.registration = None;
        let nest = NestGuard::enter();
        // The serial token lives only inside this poll (never across `Pending`, and a panic
        // here gives it back at once).
        let mut serial: Option<Serial> = None;
        loop {
            if serial.is_none() {
                if this.conflicts >= SERIAL_AFTER {
                    serial = Serial::try_take(global);
                }
                if serial.is_none() && global.serial.load(Ordering::Relaxed) {
                    let since = *this.deferring.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() < SERIAL_PATIENCE {
                        // Someone runs alone: let it, and come back.
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
            }
            let impatient = this
                .deferring
                .is_some_and(|t| t.elapsed() >= SERIAL_PATIENCE);
            let mut tx = Tx::begin(global, serial.is_some() || impatient);
            let r = (this.f)(&mut tx);
            let r = tx.settle(r);
            let kind = match r {
                Ok(v) => match tx.commit() {
                    Ok(notify) => {
                        this.done = true;
                        drop((tx, serial, nest));
                        notify.run();
                        return Poll::Ready(v);
                    }
                    Err(k) => k,
                },
                Err(StmError(k)) => k,
            };
            match kind {
                Kind::Conflict => {
                    this.conflicts += 1;
                    backoff(this.conflicts);
                }
                Kind::Retry => {
                    serial = None;
                    this.conflicts = 0;
                    this.deferring = None;
                    let reg = sleep_until_changed(tx, Wake::Waker(cx.waker().clone()), None)
                        .expect("an async sleeper returns its registration");
                    if reg.sleeper.is_notified() {
                        continue; // something changed already
                    }
                    this.registration = Some(reg);
                    return Poll::Pending;
                }
            }
        }
    }
}
