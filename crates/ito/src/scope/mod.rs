//! Structured concurrency: [`scope_fn`] and [`scope`] (tasks that cannot outlive a block),
//! [`race`] and [`first_ok`], [`TaskSet`], and [`CancellationToken`].
//!
//! # Scopes
//!
//! A scope runs a body that spawns child tasks, and does not end before every child has
//! ended. The first child failure cancels the others (an async child is dropped at its next
//! suspension point, a synchronous one sees the cancellation in ito's blocking calls) and
//! is returned; every failure is available in the [`ScopeError`]. A *supervised* scope
//! ([`scope_fn_supervised`], [`scope_supervised`]) lets siblings run on and reports the
//! failures at the end.
//!
//! [`scope_fn`] blocks the caller (without pinning a worker, like
//! [`Task::wait`]), so its children may borrow from the caller's frame, as with
//! `std::thread::scope` or `rayon::scope`. [`scope`] is the async version: `.await`ing it
//! blocks nothing, and for that reason its children must be `'static`. An async scope that
//! lent its children borrowed data would be unsound: a caller can poll it once and then
//! `mem::forget` it, ending the borrow while the children still run (the "scoped task
//! trilemma": concurrency, parallelism and borrowing, pick two). Dropping an async scope
//! before it finished cancels its children.
//!
//! # How it works
//!
//! A scope counts its pending units: the body, plus one per child that has not completed.
//! Each child's cell gets a completion callback that records a failure (and, in a normal
//! scope, cancels the rest) and drops the unit; the unit count reaching zero completes the
//! scope's `done` promise, which the scope waits for. Children are tracked by an internal
//! reference on their cell (`ChildRef`), not by a handle, so the [`Task`]s that `spawn`
//! returns are the caller's alone (they move their results out, and [`Task::abort`] works as
//! usual). The callback looks only at a failure, which stays in the cell while a `Task`
//! moves a success out.
//!
//! Borrowing children (`scope_fn`) are boxed and their lifetime erased to `'static`: that is
//! sound because `scope_fn` returns only after every child's cell completed, and a task's cell
//! completes only after its body (the closure or future, with its borrows) was consumed or
//! dropped.

mod race;
mod task_set;
mod token;

pub use race::{first_ok, race};
pub use task_set::TaskSet;
pub use token::CancellationToken;

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt;
use std::future::Future as StdFuture;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::future::cell::CellHeader;
use crate::runtime::Shared;
use crate::runtime::owners::BlockHold;
use crate::{Failure, Promise, Task};

/// Why a scope failed: the first failure of a child, and all of them.
///
/// ```
/// let r = ito::scope_fn(|s| {
///     s.spawn_fn(|| -> u8 { panic!("disk on fire") });
/// });
/// let err = r.unwrap_err();
/// assert_eq!(err.first(), &ito::Failure::Panic("disk on fire".into()));
/// assert_eq!(err.failures().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct ScopeError {
    failures: Vec<Failure>,
}

impl ScopeError {
    /// The first failure (the one that cancelled the others, in a normal scope).
    ///
    /// ```
    /// let err = ito::scope_fn(|s| { s.spawn_fn(|| Err::<(), _>(()).unwrap()); }).unwrap_err();
    /// assert!(err.first().is_panic());
    /// ```
    pub fn first(&self) -> &Failure {
        &self.failures[0]
    }

    /// Every failure, in the order they happened. Children the scope itself cancelled are
    /// not failures and are not listed.
    ///
    /// ```
    /// let err = ito::scope_fn_supervised(|s| {
    ///     s.spawn_fn(|| -> () { panic!("a") });
    ///     s.spawn_fn(|| -> () { panic!("b") });
    /// }).unwrap_err();
    /// assert_eq!(err.failures().len(), 2);
    /// ```
    pub fn failures(&self) -> &[Failure] {
        &self.failures
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.first())?;
        if self.failures.len() > 1 {
            write!(f, " (and {} more failures)", self.failures.len() - 1)?;
        }
        Ok(())
    }
}

impl Error for ScopeError {}

impl From<ScopeError> for Failure {
    fn from(e: ScopeError) -> Failure {
        e.failures.into_iter().next().unwrap_or(Failure::Cancelled)
    }
}

/// An internal (non-handle) reference on a child task's cell.
pub(crate) struct ChildRef(NonNull<CellHeader>);

// SAFETY: the cell is shared by design; we only use its atomic refcount, its completion
// state and its task's cancellation, all thread-safe.
unsafe impl Send for ChildRef {}
// SAFETY: as above.
unsafe impl Sync for ChildRef {}

impl ChildRef {
    pub(crate) fn new<T>(t: &Task<T>) -> ChildRef {
        let cell = t.cell_ptr();
        // SAFETY: the handle keeps the cell alive.
        unsafe { cell.as_ref() }.inc_ref();
        // Not `NonNull::from(header)`: this pointer may give up the last reference (or hand
        // the task to a queue), which frees the allocation through it.
        ChildRef(cell)
    }

    pub(crate) fn abort(&self) {
        // SAFETY: we hold a reference to the cell.
        unsafe { crate::task::cancel_task_of(self.0) };
    }

    fn is_complete(&self) -> bool {
        // SAFETY: we hold a reference, so the cell is live.
        unsafe { self.0.as_ref() }.is_complete()
    }
}

impl Clone for ChildRef {
    fn clone(&self) -> Self {
        // SAFETY: we hold a reference, so the cell is live.
        unsafe { self.0.as_ref() }.inc_ref();
        ChildRef(self.0)
    }
}

impl Drop for ChildRef {
    fn drop(&mut self) {
        // SAFETY: we own one (internal) reference and give it up.
        unsafe { CellHeader::dec_ref(self.0) };
    }
}

struct Children {
    next_id: u64,
    live: BTreeMap<u64, ChildRef>,
    failures: Vec<Failure>,
    /// Set when the scope cancels its children: their `Cancelled` results are then expected.
    cancelling: bool,
}

struct ScopeShared {
    /// The runtime children are spawned on: the runtime here when the scope was made.
    runtime: &'static Shared,
    supervised: bool,
    token: CancellationToken,
    /// The body plus every child that has not completed.
    pending: AtomicUsize,
    done: Promise<()>,
    children: Mutex<Children>,
    /// An async scope's hold on `runtime` (`runtime/owners.rs`): its future and its handles
    /// may outlive the `Runtime` (a future first polled in `Runtime::block_on`, then polled
    /// elsewhere) and still spawn there. A `scope_fn` needs none: its caller, which runs on
    /// that runtime or holds it, does not return before the scope ends. Declared last, so
    /// that it is let go after everything else here is dropped.
    _hold: Option<BlockHold>,
}

impl ScopeShared {
    /// A scope on the runtime here; `held`: the scope may outlive the caller (an async one).
    fn new(supervised: bool, held: bool) -> Arc<ScopeShared> {
        let runtime = crate::runtime::current();
        let shared = Arc::new(ScopeShared {
            runtime,
            supervised,
            token: CancellationToken::new(),
            pending: AtomicUsize::new(1),
            done: Promise::new(),
            children: Mutex::new(Children {
                next_id: 0,
                live: BTreeMap::new(),
                failures: Vec::new(),
                cancelling: false,
            }),
            _hold: held.then(|| runtime.hold()),
        });
        // Cancelling the token (`s.token().cancel()`) is cancelling the scope. Weak: the
        // token (inside the scope) must not keep the scope alive.
        let weak = Arc::downgrade(&shared);
        shared.token.cancelled().on_complete(move |r| {
            if let (Ok(()), Some(s)) = (r, weak.upgrade()) {
                s.cancel();
            }
        });
        shared
    }

    /// Drops one pending unit; the last one completes `done`.
    fn release(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.done.try_success(());
        }
    }

    /// Takes a pending unit for a child about to be spawned; `false` (and no unit) if the
    /// scope has ended or is cancelled: the child must then not be spawned at all.
    ///
    /// Zero pending units means the scope has ended: only a clone of an async scope's `Scope`
    /// can still spawn then, and a scope never gains children after it ended (they would run
    /// detached, waited for by nobody).
    fn enter(&self) -> bool {
        if self.token.is_cancelled() {
            return false;
        }
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            self.release(); // back to zero; `done` is already complete
            return false;
        }
        true
    }

    /// Tracks a freshly spawned child (whose unit [`enter`](Self::enter) took) until it
    /// completes.
    fn track<T: Send + 'static>(self: &Arc<Self>, child: &Task<T>) {
        let (id, cancelling) = {
            let mut c = self.children.lock().unwrap();
            let id = c.next_id;
            c.next_id += 1;
            c.live.insert(id, ChildRef::new(child));
            (id, c.cancelling)
        };
        // Spawned while (or after) the scope was cancelled: it must not run on. `cancelling`
        // is read under the lock under which `cancel` sets it and takes its list of children,
        // so a child is either on that list or sees the flag (the token alone is not enough:
        // `cancel` cancels it after releasing the lock). The token also covers a user who
        // cancelled it directly.
        if cancelling || self.token.is_cancelled() {
            child.abort();
        }
        let me = self.clone();
        // Only the failure is looked at: the child's `Task` may be moving a success out
        // meanwhile, but a failure stays in the cell (`future::cell`, "Who touches what").
        child.inner().on_complete_raw(move |r| {
            me.child_done(id, r.as_ref().err());
        });
    }

    fn child_done(&self, id: u64, failure: Option<&Failure>) {
        let removed;
        let cancel_now = {
            let mut c = self.children.lock().unwrap();
            removed = c.live.remove(&id);
            match failure {
                // The token is checked too: a child tracked after the token was cancelled
                // directly, but before its callback set `cancelling`, is aborted by `track`.
                Some(Failure::Cancelled) if c.cancelling || self.token.is_cancelled() => false,
                Some(f) => {
                    c.failures.push(f.clone());
                    !self.supervised && c.failures.len() == 1
                }
                None => false,
            }
        };
        drop(removed); // outside the lock: it may free the child's task
        if cancel_now {
            self.cancel();
        }
        self.release();
    }

    /// Cancels every child (and the token); children spawned later are cancelled at once.
    /// Only the first call does anything (the token's callback calls it again).
    fn cancel(&self) {
        let live: Vec<ChildRef> = {
            let mut c = self.children.lock().unwrap();
            if c.cancelling {
                return;
            }
            c.cancelling = true;
            c.live.values().cloned().collect()
        };
        self.token.cancel();
        for child in &live {
            child.abort();
        }
    }

    /// Blocks until every child completed, helping run them. On a cancelled synchronous
    /// task, cancels the children first.
    fn wait_blocking(&self) {
        loop {
            if self.done.is_completed() {
                return;
            }
            // Until the scope is cancelled, our own cancellation interrupts the wait (and
            // then cancels the scope); afterwards we wait for the cancelled children.
            let cancellable = !self.token.is_cancelled();
            if cancellable && crate::is_cancelled() {
                self.cancel();
                continue;
            }
            // Help with the newest child (the likeliest not to have started, as in a
            // depth-first fork-join); if it already completed and only its callback is
            // pending (possibly deferred to a task), park on the scope's promise instead.
            let newest = self
                .children
                .lock()
                .unwrap()
                .live
                .values()
                .next_back()
                .cloned();
            let done;
            let cell = match &newest {
                Some(child) if !child.is_complete() => child.0,
                _ => {
                    done = self.done.future();
                    done.cell_ptr()
                }
            };
            if cancellable {
                let _ = crate::runtime::block_until::block_until(cell, None);
            } else {
                crate::runtime::block_until::block_until_complete(cell);
            }
        }
    }

    fn result<R>(&self, r: R) -> Result<R, ScopeError> {
        let failures = std::mem::take(&mut self.children.lock().unwrap().failures);
        if failures.is_empty() {
            Ok(r)
        } else {
            Err(ScopeError { failures })
        }
    }
}

/// The handle a scope's body uses to spawn children. `'scope` is how long children may run
/// (the scope's extent); `'env` is what they may borrow.
///
/// ```
/// let data = vec![1, 2, 3];
/// let sum = std::sync::atomic::AtomicI32::new(0);
/// ito::scope_fn(|s| {
///     for x in &data {
///         let sum = &sum;
///         s.spawn_fn(move || { sum.fetch_add(*x, std::sync::atomic::Ordering::Relaxed); });
///     }
/// })
/// .unwrap();
/// assert_eq!(sum.into_inner(), 6);
/// ```
pub struct Scope<'scope, 'env: 'scope> {
    shared: Arc<ScopeShared>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    /// Spawns an async child task. It may borrow anything that outlives the scope.
    ///
    /// ```
    /// let name = String::from("ito");
    /// let r = ito::scope_fn(|s| {
    ///     let n = &name;
    ///     s.spawn(async move { n.len() })
    /// });
    /// assert_eq!(r.unwrap().wait(), Ok(3));
    /// ```
    pub fn spawn<F>(&self, fut: F) -> Task<F::Output>
    where
        F: StdFuture + Send + 'scope,
        F::Output: Send + 'static,
    {
        if !self.shared.enter() {
            return Task::completed(Err(Failure::Cancelled));
        }
        let boxed: Pin<Box<dyn StdFuture<Output = F::Output> + Send + 'scope>> = Box::pin(fut);
        // SAFETY: only the lifetime changes. The scope does not end (a `scope_fn` does not
        // return; a `'static` scope has nothing to outlive) before this task's cell completes,
        // and the cell completes only after the body was dropped (module docs).
        let boxed: Pin<Box<dyn StdFuture<Output = F::Output> + Send + 'static>> =
            unsafe { std::mem::transmute(boxed) };
        let child = crate::runtime::spawn_on(self.shared.runtime, boxed);
        self.shared.track(&child);
        child
    }

    /// Spawns a synchronous child task (a closure). It may borrow anything that outlives the
    /// scope, and spawn further children through the scope.
    ///
    /// ```
    /// let mut counts = [0u32; 4];
    /// ito::scope_fn(|s| {
    ///     for (i, c) in counts.iter_mut().enumerate() {
    ///         s.spawn_fn(move || *c = i as u32 * 10);
    ///     }
    /// })
    /// .unwrap();
    /// assert_eq!(counts, [0, 10, 20, 30]);
    /// ```
    pub fn spawn_fn<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'static,
    {
        if !self.shared.enter() {
            return Task::completed(Err(Failure::Cancelled));
        }
        let boxed: Box<dyn FnOnce() -> T + Send + 'scope> = Box::new(f);
        // SAFETY: as in `spawn`: the closure is consumed before its task's cell completes,
        // and the scope outlives that completion.
        let boxed: Box<dyn FnOnce() -> T + Send + 'static> = unsafe { std::mem::transmute(boxed) };
        let child = crate::runtime::spawn_fn_on(self.shared.runtime, boxed);
        self.shared.track(&child);
        child
    }

    /// Cancels every child, running or not; a child spawned from now on is not started (its
    /// [`Task`] fails with [`Failure::Cancelled`] at once). The cancelled children are not
    /// failures.
    ///
    /// ```
    /// let r = ito::scope_fn(|s| {
    ///     s.spawn(async { ito::Future::<()>::never().await });
    ///     s.cancel(); // otherwise the scope would wait forever
    ///     "done"
    /// });
    /// assert_eq!(r.unwrap(), "done");
    /// ```
    pub fn cancel(&self) {
        self.shared.cancel();
    }

    /// The scope's cancellation token: cancelled when the scope cancels its children, so
    /// children can check it (or a [`CancellationToken::child_token`] of it) cooperatively.
    /// Cancelling it cancels the scope, as [`Scope::cancel`] does.
    ///
    /// ```
    /// ito::scope_fn(|s| {
    ///     let t = s.token().clone();
    ///     s.spawn_fn(move || assert!(!t.is_cancelled()));
    /// })
    /// .unwrap();
    /// ```
    pub fn token(&self) -> &CancellationToken {
        &self.shared.token
    }
}

/// An async scope's handle can be cloned into its children, so that they spawn siblings. A
/// child spawned through a clone after the scope has ended is not spawned: its [`Task`] fails
/// with [`Failure::Cancelled`] at once; a scope never gains children after it ended.
///
/// ```
/// let kept = std::sync::Mutex::new(None);
/// let k = &kept;
/// let r = ito::block_on(ito::scope(|s| async move {
///     *k.lock().unwrap() = Some(s.clone());
///     s.spawn(async { 1 }).await
/// }));
/// assert_eq!(r.unwrap(), Ok(1));
/// let late = kept.lock().unwrap().take().unwrap().spawn(async { 2 });
/// assert_eq!(late.wait(), Err(ito::Failure::Cancelled));
/// ```
impl Clone for Scope<'static, 'static> {
    fn clone(&self) -> Self {
        Scope {
            shared: self.shared.clone(),
            _scope: PhantomData,
            _env: PhantomData,
        }
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("supervised", &self.shared.supervised)
            .field("cancelled", &self.shared.token.is_cancelled())
            .finish()
    }
}

fn scope_fn_with<'env, F, R>(supervised: bool, f: F) -> Result<R, ScopeError>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let scope = Scope {
        shared: ScopeShared::new(supervised, false),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let body = catch_unwind(AssertUnwindSafe(|| f(&scope)));
    if body.is_err() {
        scope.shared.cancel();
    }
    scope.shared.release();
    // Children may borrow from this frame: wait for all of them, even when unwinding.
    scope.shared.wait_blocking();
    match body {
        Ok(r) => scope.shared.result(r),
        Err(panic) => resume_unwind(panic),
    }
}

/// Runs `f` with a [`Scope`] whose children may borrow from the caller's frame, and returns
/// when every child has completed. The first child failure cancels the others and is
/// returned in a [`ScopeError`] (with any others that happened).
///
/// It blocks the calling thread; on a worker it first runs children that nobody has started,
/// and otherwise hands the worker's place to another thread, like [`Task::wait`]. If `f`
/// panics, the children are cancelled and waited for, then the panic resumes.
///
/// ```
/// fn sum(v: &[u64]) -> u64 {
///     if v.len() < 1000 {
///         return v.iter().sum();
///     }
///     let (l, r) = v.split_at(v.len() / 2);
///     ito::scope_fn(|s| {
///         let a = s.spawn_fn(|| sum(l));
///         let b = sum(r);
///         a.wait().unwrap() + b
///     })
///     .unwrap()
/// }
/// let v: Vec<u64> = (1..=100_000).collect();
/// assert_eq!(sum(&v), 5_000_050_000);
/// ```
pub fn scope_fn<'env, F, R>(f: F) -> Result<R, ScopeError>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    scope_fn_with(false, f)
}

/// [`scope_fn`] whose children's failures do not cancel their siblings; every failure is
/// reported at the end.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// let finished = AtomicU32::new(0);
/// let r = ito::scope_fn_supervised(|s| {
///     s.spawn_fn(|| -> () { panic!("one bad child") });
///     for _ in 0..3 {
///         s.spawn_fn(|| { finished.fetch_add(1, Ordering::Relaxed); });
///     }
/// });
/// assert_eq!(r.unwrap_err().failures().len(), 1);
/// assert_eq!(finished.load(Ordering::Relaxed), 3);
/// ```
pub fn scope_fn_supervised<'env, F, R>(f: F) -> Result<R, ScopeError>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    scope_fn_with(true, f)
}

/// Cancels the children of an async scope that is dropped before it finished.
struct CancelOnDrop(Option<Arc<ScopeShared>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.cancel();
        }
    }
}

async fn scope_with<F, Fut>(supervised: bool, f: F) -> Result<Fut::Output, ScopeError>
where
    F: FnOnce(Scope<'static, 'static>) -> Fut,
    Fut: StdFuture,
{
    let shared = ScopeShared::new(supervised, true);
    let mut guard = CancelOnDrop(Some(shared.clone()));
    let scope = Scope {
        shared: shared.clone(),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let r = f(scope).await;
    shared.release();
    // `done` only ever succeeds (a `ScopeShared` keeps its promise alive).
    let _ = shared.done.future().await;
    guard.0 = None;
    shared.result(r)
}

/// The async scope: runs the future `f` makes with a [`Scope`], then waits (asynchronously)
/// for every child. The first child failure cancels the others and is returned. Children
/// must be `'static` (see the [module docs](mod@crate::scope) for why); dropping the returned
/// future cancels them.
///
/// ```
/// let total = ito::block_on(ito::scope(|s| async move {
///     let a = s.spawn(async { 20 });
///     let b = s.spawn_fn(|| 22);
///     a.await.unwrap() + b.await.unwrap()
/// }));
/// assert_eq!(total.unwrap(), 42);
/// ```
pub fn scope<F, Fut>(f: F) -> impl StdFuture<Output = Result<Fut::Output, ScopeError>>
where
    F: FnOnce(Scope<'static, 'static>) -> Fut,
    Fut: StdFuture,
{
    scope_with(false, f)
}

/// [`scope`] whose children's failures do not cancel their siblings.
///
/// ```
/// let r = ito::block_on(ito::scope_supervised(|s| async move {
///     s.spawn(async { assert!(false, "child") });
///     s.spawn(async { 1 }).await
/// }));
/// assert_eq!(r.unwrap_err().failures().len(), 1);
/// ```
pub fn scope_supervised<F, Fut>(f: F) -> impl StdFuture<Output = Result<Fut::Output, ScopeError>>
where
    F: FnOnce(Scope<'static, 'static>) -> Fut,
    Fut: StdFuture,
{
    scope_with(true, f)
}
