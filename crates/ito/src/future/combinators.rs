//! Callbacks and combinators on [`Future`]: Scala's `Future` API, in Rust names.
//!
//! Every combinator registers one callback on the source cell and returns a new future backed
//! by a promise that the callback completes. A panic in a user closure becomes a
//! [`Failure::Panic`] of the returned future; it never escapes into the completing thread.

use std::sync::Arc;

use super::derived::{self, guard};
use super::{Future, Promise};
use crate::Failure;
use crate::loom::{AtomicUsize, Ordering};

impl<T: Clone + Send + Sync + 'static> Future<T> {
    /// Calls `f` with the result when it is available (Scala's `onComplete`).
    ///
    /// `f` runs on the thread that completes the future, or right away on this thread if it
    /// already has. A panic in `f` is caught (and reported by the panic hook).
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// ito::spawn_fn(|| 5).shared().on_complete(move |r| tx.send(r).unwrap());
    /// assert_eq!(rx.recv().unwrap(), Ok(5));
    /// ```
    pub fn on_complete(&self, f: impl FnOnce(Result<T, Failure>) + Send + 'static) {
        self.inner().on_complete_raw(move |r| {
            let r = r.clone();
            let _ = guard(move || f(r));
        });
    }

    /// Calls `f` with the value if the future succeeds.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// ito::Future::successful(1).on_success(move |v| tx.send(v).unwrap());
    /// assert_eq!(rx.recv().unwrap(), 1);
    /// ```
    pub fn on_success(&self, f: impl FnOnce(T) + Send + 'static) {
        self.inner().on_complete_raw(move |r| {
            if let Ok(v) = r {
                let v = v.clone();
                let _ = guard(move || f(v));
            }
        });
    }

    /// Calls `f` with the failure if the future fails.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// ito::Future::<u8>::failed(ito::Failure::Timeout).on_failure(move |e| tx.send(e).unwrap());
    /// assert_eq!(rx.recv().unwrap(), ito::Failure::Timeout);
    /// ```
    pub fn on_failure(&self, f: impl FnOnce(Failure) + Send + 'static) {
        self.inner().on_complete_raw(move |r| {
            if let Err(e) = r {
                let e = e.clone();
                let _ = guard(move || f(e));
            }
        });
    }

    /// A future of `f` applied to the value; failures pass through.
    ///
    /// ```
    /// assert_eq!(ito::Future::successful(2).map(|x| x * 10).wait(), Ok(20));
    /// ```
    pub fn map<U, F>(&self, f: F) -> Future<U>
    where
        U: Send + Sync + 'static,
        F: FnOnce(T) -> U + Send + 'static,
    {
        derived::map(self, move |r| match r {
            Ok(v) => Ok(f(v.clone())),
            Err(e) => Err(e.clone()),
        })
    }

    /// A future of the future that `f` returns for the value (Scala's `flatMap`).
    ///
    /// ```
    /// let f = ito::Future::successful(3).flat_map(|x| ito::spawn_fn(move || x + 1).shared());
    /// assert_eq!(f.wait(), Ok(4));
    /// ```
    pub fn flat_map<U, F>(&self, f: F) -> Future<U>
    where
        U: Clone + Send + Sync + 'static,
        F: FnOnce(T) -> Future<U> + Send + 'static,
    {
        derived::flat(self, move |r| match r {
            Ok(v) => Ok(f(v.clone())),
            Err(e) => Err(e.clone()),
        })
    }

    /// Keeps the value if `pred` holds, else fails with [`Failure::NoSuchElement`].
    ///
    /// ```
    /// let even = |x: &i32| x % 2 == 0;
    /// assert_eq!(ito::Future::successful(4).filter(even).wait(), Ok(4));
    /// assert_eq!(ito::Future::successful(3).filter(even).wait(), Err(ito::Failure::NoSuchElement));
    /// ```
    pub fn filter<F>(&self, pred: F) -> Future<T>
    where
        F: FnOnce(&T) -> bool + Send + 'static,
    {
        derived::map(self, move |r| match r {
            Ok(v) if pred(v) => Ok(v.clone()),
            Ok(_) => Err(Failure::NoSuchElement),
            Err(e) => Err(e.clone()),
        })
    }

    /// Replaces a failure with the value `f` makes from it (Scala's `recover`, total). For a
    /// partial recovery use [`transform`](Self::transform).
    ///
    /// ```
    /// let f = ito::Future::<i32>::failed(ito::Failure::Timeout).recover(|_| -1);
    /// assert_eq!(f.wait(), Ok(-1));
    /// ```
    pub fn recover<F>(&self, f: F) -> Future<T>
    where
        F: FnOnce(Failure) -> T + Send + 'static,
    {
        derived::map(self, move |r| match r {
            Ok(v) => Ok(v.clone()),
            Err(e) => Ok(f(e.clone())),
        })
    }

    /// Replaces a failure with the result of the future `f` makes from it.
    ///
    /// ```
    /// let f = ito::Future::<i32>::failed(ito::Failure::Timeout)
    ///     .recover_with(|_| ito::spawn_fn(|| 7).shared());
    /// assert_eq!(f.wait(), Ok(7));
    /// ```
    pub fn recover_with<F>(&self, f: F) -> Future<T>
    where
        F: FnOnce(Failure) -> Future<T> + Send + 'static,
    {
        derived::flat(self, move |r| match r {
            Ok(v) => Ok(Future::successful(v.clone())),
            Err(e) => Ok(f(e.clone())),
        })
    }

    /// This future's value, or if it fails, `other`'s value; if both fail, this one's
    /// failure (Scala's `fallbackTo`).
    ///
    /// ```
    /// let bad = ito::Future::<u8>::failed(ito::Failure::msg("primary down"));
    /// assert_eq!(bad.fallback_to(&ito::Future::successful(2)).wait(), Ok(2));
    /// ```
    pub fn fallback_to(&self, other: &Future<T>) -> Future<T> {
        let other = other.clone();
        derived::flat(self, move |r| match r {
            Ok(v) => Ok(Future::successful(v.clone())),
            Err(e) => {
                let first = e.clone();
                Ok(derived::map(&other, move |r2| match r2 {
                    Ok(v) => Ok(v.clone()),
                    Err(_) => Err(first),
                }))
            }
        })
    }

    /// The first *success* of this future and `other`, whichever comes first; if both fail,
    /// this one's failure (document 004's `orAlt`). Unlike
    /// [`fallback_to`](Self::fallback_to) it does not prefer either side.
    ///
    /// ```
    /// let slow = ito::Future::<u8>::never();
    /// assert_eq!(slow.or_alt(&ito::Future::successful(1)).wait(), Ok(1));
    /// ```
    pub fn or_alt(&self, other: &Future<T>) -> Future<T> {
        let p = Promise::new();
        let out = p.future();
        // Our failure, kept until we know whether `other` fails too. (Holding a handle on
        // `self` instead would make a cycle through our own waiter list.)
        let state = Arc::new(OrAlt {
            failures: AtomicUsize::new(0),
            mine: std::sync::Mutex::new(None),
        });
        let p2 = p.clone();
        let s2 = state.clone();
        self.inner().on_complete_raw(move |r| match r {
            Ok(v) => {
                p.try_success(v.clone());
            }
            Err(e) => {
                *state.mine.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                if state.failures.fetch_add(1, Ordering::AcqRel) == 1 {
                    p.try_failure(e.clone());
                }
            }
        });
        other.inner().on_complete_raw(move |r| match r {
            Ok(v) => {
                p2.try_success(v.clone());
            }
            Err(e) => {
                if s2.failures.fetch_add(1, Ordering::AcqRel) == 1 {
                    let mine = s2.mine.lock().unwrap_or_else(|e| e.into_inner()).take();
                    p2.try_failure(mine.unwrap_or_else(|| e.clone()));
                }
            }
        });
        out
    }

    /// Both values as a pair, once both succeed; the first failure otherwise.
    ///
    /// ```
    /// let a = ito::spawn_fn(|| 1).shared();
    /// let b = ito::spawn_fn(|| "one").shared();
    /// assert_eq!(a.zip(&b).wait(), Ok((1, "one")));
    /// ```
    pub fn zip<U>(&self, other: &Future<U>) -> Future<(T, U)>
    where
        U: Clone + Send + Sync + 'static,
    {
        self.zip_with(other, |a, b| (a, b))
    }

    /// `f` of both values, once both succeed; the first failure otherwise.
    ///
    /// ```
    /// let a = ito::spawn_fn(|| 20).shared();
    /// let b = ito::spawn_fn(|| 22).shared();
    /// assert_eq!(a.zip_with(&b, |x, y| x + y).wait(), Ok(42));
    /// ```
    pub fn zip_with<U, R, F>(&self, other: &Future<U>, f: F) -> Future<R>
    where
        U: Clone + Send + Sync + 'static,
        R: Send + Sync + 'static,
        F: FnOnce(T, U) -> R + Send + 'static,
    {
        derived::zip(self, other, f)
    }

    /// A future of `f` applied to the whole result (Scala's `transform`).
    ///
    /// ```
    /// let f = ito::Future::<i32>::failed(ito::Failure::Timeout)
    ///     .transform(|r| r.or_else(|e| if e == ito::Failure::Timeout { Ok(0) } else { Err(e) }));
    /// assert_eq!(f.wait(), Ok(0));
    /// ```
    pub fn transform<U, F>(&self, f: F) -> Future<U>
    where
        U: Send + Sync + 'static,
        F: FnOnce(Result<T, Failure>) -> Result<U, Failure> + Send + 'static,
    {
        derived::map(self, move |r| f(r.clone()))
    }

    /// A future of the future `f` makes from the whole result (Scala's `transformWith`).
    ///
    /// ```
    /// let f = ito::Future::successful(1).transform_with(|r| ito::Future::successful(r.is_ok()));
    /// assert_eq!(f.wait(), Ok(true));
    /// ```
    pub fn transform_with<U, F>(&self, f: F) -> Future<U>
    where
        U: Clone + Send + Sync + 'static,
        F: FnOnce(Result<T, Failure>) -> Future<U> + Send + 'static,
    {
        derived::flat(self, move |r| Ok(f(r.clone())))
    }

    /// Runs the side effect `f` on the result, then completes with the same result (Scala's
    /// `andThen`): chained `and_then`s run in order. A panic in `f` is ignored.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let f = ito::Future::successful(1).and_then(move |r| tx.send(r.clone()).unwrap());
    /// assert_eq!(f.wait(), Ok(1));
    /// assert_eq!(rx.recv().unwrap(), Ok(1));
    /// ```
    pub fn and_then<F>(&self, f: F) -> Future<T>
    where
        F: FnOnce(&Result<T, Failure>) + Send + 'static,
    {
        derived::map(self, move |r| {
            let _ = guard(|| f(r));
            r.clone()
        })
    }

    /// A future of this one's failure; fails with [`Failure::NoSuchElement`] if this one
    /// succeeds (Scala's `failed` projection; the name `failed` is taken by the constructor
    /// [`Future::failed`]).
    ///
    /// ```
    /// let f = ito::Future::<u8>::failed(ito::Failure::Timeout).failure();
    /// assert_eq!(f.wait(), Ok(ito::Failure::Timeout));
    /// ```
    pub fn failure(&self) -> Future<Failure> {
        derived::map(self, |r| match r {
            Ok(_) => Err(Failure::NoSuchElement),
            Err(e) => Ok(e.clone()),
        })
    }
}

impl<T: Clone + Send + Sync + 'static> Future<Future<T>> {
    /// The result of the inner future.
    ///
    /// ```
    /// let nested = ito::spawn_fn(|| ito::spawn_fn(|| 9).shared()).shared();
    /// assert_eq!(nested.flatten().wait(), Ok(9));
    /// ```
    pub fn flatten(&self) -> Future<T> {
        derived::flat(self, |r| match r {
            Ok(inner) => Ok(inner.clone()),
            Err(e) => Err(e.clone()),
        })
    }
}

struct OrAlt {
    failures: AtomicUsize,
    mine: std::sync::Mutex<Option<Failure>>,
}
