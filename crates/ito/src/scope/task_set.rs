//! [`TaskSet`]: tasks whose results come out in completion order.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::{Future as StdFuture, poll_fn};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use crate::future::cell::CompletionCell;
use crate::{Failure, Task};

/// A set of tasks whose results you take in the order they complete. The results move
/// through the set (`T` needs no `Clone`). Dropping the set cancels the tasks still running
/// (as [`cancel_all`](TaskSet::cancel_all) does).
///
/// ```
/// // Three tasks, each waiting for its own signal; they are let go in the order 2, 0, 1.
/// let signals: Vec<ito::Promise<()>> = (0..3).map(|_| ito::Promise::new()).collect();
/// let mut set = ito::TaskSet::new();
/// for (i, signal) in signals.iter().enumerate() {
///     let go = signal.future();
///     set.spawn(async move {
///         go.await.unwrap();
///         i
///     });
/// }
/// let mut order = Vec::new();
/// for i in [2, 0, 1] {
///     signals[i].success(()).unwrap();
///     order.push(set.join_next_blocking().unwrap().unwrap());
/// }
/// assert_eq!(order, [2, 0, 1]);
/// assert!(set.join_next_blocking().is_none());
/// ```
pub struct TaskSet<T> {
    shared: Arc<Mutex<SetState<T>>>,
}

struct SetState<T> {
    next_id: u64,
    /// The running tasks' handles, kept to abort them: their results are read by the
    /// completion callbacks (`track`), never through these.
    live: BTreeMap<u64, Task<T>>,
    ready: VecDeque<Result<T, Failure>>,
    waker: Option<Waker>,
}

impl<T: Send + 'static> TaskSet<T> {
    /// An empty set.
    ///
    /// ```
    /// let set = ito::TaskSet::<u8>::new();
    /// assert!(set.is_empty());
    /// ```
    pub fn new() -> Self {
        TaskSet {
            shared: Arc::new(Mutex::new(SetState {
                next_id: 0,
                live: BTreeMap::new(),
                ready: VecDeque::new(),
                waker: None,
            })),
        }
    }

    /// Spawns an async task into the set (on the current runtime).
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn(async { 1 });
    /// assert_eq!(set.join_next_blocking(), Some(Ok(1)));
    /// ```
    pub fn spawn<F>(&mut self, fut: F)
    where
        F: StdFuture<Output = T> + Send + 'static,
    {
        self.track(crate::spawn(fut));
    }

    /// Spawns a synchronous task (a closure) into the set.
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn_fn(|| 2);
    /// assert_eq!(set.join_next_blocking(), Some(Ok(2)));
    /// ```
    pub fn spawn_fn<F>(&mut self, f: F)
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.track(crate::spawn_fn(f));
    }

    fn track(&mut self, child: Task<T>) {
        let cell = child.inner() as *const CompletionCell<T>;
        let id = {
            let mut s = self.shared.lock().unwrap();
            let id = s.next_id;
            s.next_id += 1;
            s.live.insert(id, child);
            id
        };
        let shared = self.shared.clone();
        let on_done = move |r| {
            let (removed, waker) = {
                let mut s = shared.lock().unwrap();
                s.ready.push_back(r);
                (s.live.remove(&id), s.waker.take())
            };
            drop(removed); // outside the lock: it may free the task
            if let Some(w) = waker {
                w.wake();
            }
        };
        // SAFETY: the handle in `live` keeps the cell alive until the callback removes it
        // (only the callback removes entries; `join_next` and `drop` need `&mut self`, which we
        // hold). The set consumed the task's `Task`, its only reader, and reads the result
        // only here.
        unsafe { (*cell).on_complete_take(on_done) };
    }

    /// The next result in completion order, or `None` once the set is empty.
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn(async { "a" });
    /// let first = ito::block_on(set.join_next());
    /// assert_eq!(first, Some(Ok("a")));
    /// assert_eq!(ito::block_on(set.join_next()), None);
    /// ```
    pub fn join_next(&mut self) -> impl StdFuture<Output = Option<Result<T, Failure>>> + '_ {
        poll_fn(move |cx| {
            let mut s = self.shared.lock().unwrap();
            if let Some(r) = s.ready.pop_front() {
                return Poll::Ready(Some(r));
            }
            if s.live.is_empty() {
                return Poll::Ready(None);
            }
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    /// [`join_next`](TaskSet::join_next), blocking the calling thread (without pinning a worker).
    /// Inside a cancelled synchronous task, returns `Some(Err(Failure::Cancelled))`.
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn_fn(|| 5);
    /// assert_eq!(set.join_next_blocking(), Some(Ok(5)));
    /// assert_eq!(set.join_next_blocking(), None);
    /// ```
    pub fn join_next_blocking(&mut self) -> Option<Result<T, Failure>> {
        crate::runtime::block_on_cancellable(self.join_next())
            .unwrap_or(Some(Err(Failure::Cancelled)))
    }

    /// How many results are still to come (running tasks and results not yet taken).
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn_fn(|| 0);
    /// assert_eq!(set.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let s = self.shared.lock().unwrap();
        s.live.len() + s.ready.len()
    }

    /// Whether no results are to come.
    ///
    /// ```
    /// assert!(ito::TaskSet::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancels every task still running; their results (`Err(Failure::Cancelled)`, or a
    /// value if they finished first) still come out of [`join_next`](TaskSet::join_next).
    ///
    /// ```
    /// let mut set = ito::TaskSet::new();
    /// set.spawn(async { ito::Future::<()>::never().await });
    /// set.cancel_all();
    /// assert_eq!(set.join_next_blocking(), Some(Err(ito::Failure::Cancelled)));
    /// ```
    pub fn cancel_all(&self) {
        abort_live(&self.shared);
    }
}

/// Cancels the set's running tasks; they are taken out under the lock and cancelled outside
/// it (a poisoned lock means a bug already reported; there is nothing left to cancel then).
fn abort_live<T>(shared: &Mutex<SetState<T>>) {
    let live: Vec<_> = match shared.lock() {
        Ok(s) => s.live.values().map(|t| super::ChildRef::new(t)).collect(),
        Err(_) => return,
    };
    for c in &live {
        c.abort();
    }
}

impl<T> Drop for TaskSet<T> {
    fn drop(&mut self) {
        abort_live(&self.shared);
    }
}

impl<T: Send + 'static> Default for TaskSet<T> {
    fn default() -> Self {
        TaskSet::new()
    }
}

impl<T> fmt::Debug for TaskSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared.lock().unwrap();
        f.debug_struct("TaskSet")
            .field("running", &s.live.len())
            .field("ready", &s.ready.len())
            .finish()
    }
}
