//! Functions over collections of futures: Scala's `Future.sequence`, `traverse`,
//! `firstCompletedOf`, `find`-like `first_success_of`, and `foldLeft`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use super::{Future, Promise};
use crate::Failure;
use crate::loom::{AtomicUsize, Ordering};

/// All values in input order, once all succeed; the first failure (in time) otherwise.
///
/// ```
/// let fs: Vec<_> = (0..4).map(|i| ito::spawn_fn(move || i * i).shared()).collect();
/// assert_eq!(ito::future::sequence(fs).wait(), Ok(vec![0, 1, 4, 9]));
/// ```
pub fn sequence<T, I>(futures: I) -> Future<Vec<T>>
where
    T: Clone + Send + Sync + 'static,
    I: IntoIterator<Item = Future<T>>,
{
    let futures: Vec<Future<T>> = futures.into_iter().collect();
    let n = futures.len();
    if n == 0 {
        return Future::successful(Vec::new());
    }
    let p = Promise::new();
    let out = p.future();
    let state = Arc::new(Gather {
        remaining: AtomicUsize::new(n),
        slots: Mutex::new((0..n).map(|_| None).collect()),
        p,
    });
    for (i, f) in futures.iter().enumerate() {
        let st = state.clone();
        f.inner().on_complete_raw(move |r| match r {
            Ok(v) => st.arrive(i, v.clone()),
            Err(e) => {
                st.p.try_failure(e.clone());
            }
        });
    }
    out
}

struct Gather<T> {
    remaining: AtomicUsize,
    slots: Mutex<Vec<Option<T>>>,
    p: Promise<Vec<T>>,
}

impl<T> Gather<T> {
    fn arrive(&self, i: usize, v: T) {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(v);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let slots = std::mem::take(&mut *self.slots.lock().unwrap_or_else(|e| e.into_inner()));
            let all: Option<Vec<T>> = slots.into_iter().collect();
            if let Some(all) = all {
                self.p.try_complete(Ok(all));
            }
        }
    }
}

/// `f` applied to every input, all in flight at once, gathered like [`sequence`].
///
/// ```
/// let f = ito::future::traverse(1..=3, |x| ito::spawn_fn(move || x * 2).shared());
/// assert_eq!(f.wait(), Ok(vec![2, 4, 6]));
/// ```
pub fn traverse<A, B, I, F>(inputs: I, f: F) -> Future<Vec<B>>
where
    B: Clone + Send + Sync + 'static,
    I: IntoIterator<Item = A>,
    F: FnMut(A) -> Future<B>,
{
    sequence(inputs.into_iter().map(f).collect::<Vec<_>>())
}

/// Like [`traverse`], but with at most `limit` of `f`'s futures in flight: `f` is called for
/// the next input only as earlier ones complete. Results are in input order; the first failure
/// stops it (no further inputs are started).
///
/// ```
/// let f = ito::future::traverse_bounded(0..10, 2, |x| ito::spawn_fn(move || x + 1).shared());
/// assert_eq!(f.wait(), Ok((1..=10).collect::<Vec<_>>()));
/// ```
pub fn traverse_bounded<A, B, I, F>(inputs: I, limit: usize, f: F) -> Future<Vec<B>>
where
    A: Send + 'static,
    B: Clone + Send + Sync + 'static,
    I: IntoIterator<Item = A>,
    I::IntoIter: Send + 'static,
    F: FnMut(A) -> Future<B> + Send + 'static,
{
    let p = Promise::new();
    let out = p.future();
    let state = Arc::new(Bounded {
        inner: Mutex::new(BoundedInner {
            next: 0,
            results: Vec::new(),
            in_flight: 0,
            exhausted: false,
            done: false,
            pumping: false,
            repump: false,
        }),
        source: Mutex::new((inputs.into_iter(), f)),
        limit: limit.max(1),
        p,
    });
    Bounded::pump(&state);
    out
}

struct Bounded<I, F, B> {
    inner: Mutex<BoundedInner<B>>,
    /// The inputs and the user's closure. Locked only by the one thread pumping (see
    /// `pumping`), and never together with `inner`: user code (the iterator, `f`, a value's
    /// `clone`) never runs under `inner`, so whatever it completes can re-enter safely.
    source: Mutex<(I, F)>,
    limit: usize,
    p: Promise<Vec<B>>,
}

struct BoundedInner<B> {
    next: usize,
    results: Vec<Option<B>>,
    in_flight: usize,
    exhausted: bool,
    done: bool,
    /// One thread at a time starts inputs; completions that arrive meanwhile (possibly on the
    /// same stack, for futures that complete at once) set `repump` instead of recursing.
    pumping: bool,
    repump: bool,
}

impl<A, B, I, F> Bounded<I, F, B>
where
    A: Send + 'static,
    B: Clone + Send + Sync + 'static,
    I: Iterator<Item = A> + Send + 'static,
    F: FnMut(A) -> Future<B> + Send + 'static,
{
    fn lock(&self) -> std::sync::MutexGuard<'_, BoundedInner<B>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts inputs while fewer than `limit` are in flight; completes when all are done.
    fn pump(this: &Arc<Self>) {
        {
            let mut g = this.lock();
            if g.pumping {
                g.repump = true;
                return;
            }
            g.pumping = true;
        }
        loop {
            let want = {
                let mut g = this.lock();
                g.repump = false;
                !(g.done || g.exhausted || g.in_flight >= this.limit)
            };
            // User code, outside `inner`: the next input, and `f` of it.
            let made = if want {
                let mut src = this.source.lock().unwrap_or_else(|e| e.into_inner());
                let (inputs, f) = &mut *src;
                catch_unwind(AssertUnwindSafe(|| inputs.next().map(f)))
            } else {
                Ok(None)
            };
            match made {
                Ok(Some(fut)) => {
                    let i = {
                        let mut g = this.lock();
                        let i = g.next;
                        g.next += 1;
                        g.results.push(None);
                        g.in_flight += 1;
                        i
                    };
                    let st = this.clone();
                    fut.inner().on_complete_raw(move |r| {
                        match r {
                            Ok(v) => {
                                let v = catch_unwind(AssertUnwindSafe(|| v.clone()));
                                let mut g = st.lock();
                                g.in_flight -= 1;
                                match v {
                                    Ok(v) => g.results[i] = Some(v),
                                    Err(panic) => {
                                        g.done = true;
                                        drop(g);
                                        st.p.try_failure(Failure::from_panic(panic));
                                    }
                                }
                            }
                            Err(e) => {
                                {
                                    let mut g = st.lock();
                                    g.in_flight -= 1;
                                    g.done = true;
                                }
                                st.p.try_failure(e.clone());
                            }
                        }
                        Bounded::pump(&st);
                    });
                }
                Ok(None) if want => {
                    this.lock().exhausted = true;
                }
                Err(panic) => {
                    this.lock().done = true;
                    this.p.try_failure(Failure::from_panic(panic));
                }
                Ok(None) => {
                    let mut g = this.lock();
                    if g.repump {
                        continue;
                    }
                    g.pumping = false;
                    if !g.done && g.exhausted && g.in_flight == 0 {
                        g.done = true;
                        let all: Option<Vec<B>> =
                            std::mem::take(&mut g.results).into_iter().collect();
                        drop(g);
                        if let Some(all) = all {
                            this.p.try_success(all);
                        }
                    }
                    return;
                }
            }
        }
    }
}

/// The result of whichever future completes first, success or failure (Scala's
/// `firstCompletedOf`). Fails with [`Failure::NoSuchElement`] when given no futures.
///
/// ```
/// let fs = vec![ito::Future::<u8>::never(), ito::Future::successful(2)];
/// assert_eq!(ito::future::first_completed_of(fs).wait(), Ok(2));
/// ```
pub fn first_completed_of<T, I>(futures: I) -> Future<T>
where
    T: Clone + Send + Sync + 'static,
    I: IntoIterator<Item = Future<T>>,
{
    let p = Promise::new();
    let out = p.future();
    let mut any = false;
    for f in futures {
        any = true;
        let p = p.clone();
        f.inner().on_complete_raw(move |r| {
            p.try_complete(r.clone());
        });
        if out.is_completed() {
            break;
        }
    }
    if !any {
        p.try_failure(Failure::NoSuchElement);
    }
    out
}

/// The first success among `futures`; if all fail, the last failure. Fails with
/// [`Failure::NoSuchElement`] when given no futures.
///
/// ```
/// let fs = vec![ito::Future::failed(ito::Failure::Timeout), ito::spawn_fn(|| 3).shared()];
/// assert_eq!(ito::future::first_success_of(fs).wait(), Ok(3));
/// ```
pub fn first_success_of<T, I>(futures: I) -> Future<T>
where
    T: Clone + Send + Sync + 'static,
    I: IntoIterator<Item = Future<T>>,
{
    let futures: Vec<Future<T>> = futures.into_iter().collect();
    if futures.is_empty() {
        return Future::failed(Failure::NoSuchElement);
    }
    let p = Promise::new();
    let out = p.future();
    let remaining = Arc::new(AtomicUsize::new(futures.len()));
    for f in &futures {
        let p = p.clone();
        let remaining = remaining.clone();
        f.inner().on_complete_raw(move |r| match r {
            Ok(v) => {
                p.try_success(v.clone());
            }
            Err(e) => {
                if remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    p.try_failure(e.clone());
                }
            }
        });
    }
    out
}

/// Folds the values in input order with `op`, once all succeed; the first failure otherwise
/// (Scala's `foldLeft`).
///
/// ```
/// let fs: Vec<_> = (1..=4).map(|i| ito::spawn_fn(move || i).shared()).collect();
/// assert_eq!(ito::future::fold(fs, 0, |acc, x| acc + x).wait(), Ok(10));
/// ```
pub fn fold<T, R, I, F>(futures: I, zero: R, op: F) -> Future<R>
where
    T: Clone + Send + Sync + 'static,
    R: Send + Sync + 'static,
    I: IntoIterator<Item = Future<T>>,
    F: FnMut(R, T) -> R + Send + 'static,
{
    let mut op = op;
    sequence(futures).map(move |vs| vs.into_iter().fold(zero, &mut op))
}
