//! Named spawns: [`named`] and [`Runtime::named`] give a task a name that a trace shows on
//! its runs (`docs/trace.md`).
//!
//! The name is a `&'static str` and lives only in the trace: the spawn's record carries it
//! (the task header does not grow), and the exporter attaches it to the task's runs. When the
//! runtime is not traced, a named spawn costs what a spawn costs.

use std::future::Future as StdFuture;

use super::{Runtime, Shared, inject};
use crate::future::Task;

/// Names the next task spawned through it: `ito::named("conn").spawn(async { .. })`. The
/// name shows on the task's `poll` slices in a trace (their `name` argument); it changes
/// nothing else. The task goes to the current runtime, as with [`spawn`](crate::spawn).
///
/// ```
/// let conn = ito::named("conn").spawn(async { 1 + 1 });
/// assert_eq!(ito::block_on(conn), Ok(2));
/// let crunch = ito::named("crunch").spawn_fn(|| 6 * 7);
/// assert_eq!(crunch.wait(), Ok(42));
/// ```
#[inline]
pub fn named(name: &'static str) -> Named<'static> {
    Named { name, on: None }
}

/// A task name waiting for its task; made by [`named`] or [`Runtime::named`].
///
/// ```
/// let n: ito::Named<'static> = ito::named("worker");
/// assert_eq!(n.name(), "worker");
/// assert_eq!(n.spawn_fn(|| 3).wait(), Ok(3));
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a name spawns nothing until its `spawn` or `spawn_fn` is called"]
pub struct Named<'a> {
    name: &'static str,
    /// The runtime to spawn on; `None`: the current one.
    on: Option<&'a Runtime>,
}

impl Named<'_> {
    /// The name the task will have.
    ///
    /// ```
    /// assert_eq!(ito::named("io").name(), "io");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The runtime the task goes to.
    fn shared(&self) -> &'static Shared {
        match self.on {
            Some(rt) => rt.shared,
            None => super::current(),
        }
    }

    /// Spawns an async task with this name, as [`spawn`](crate::spawn) (or
    /// [`Runtime::spawn`]) does.
    ///
    /// ```
    /// let t = ito::named("fetch").spawn(async { "page" });
    /// assert_eq!(t.wait(), Ok("page"));
    /// ```
    #[inline]
    pub fn spawn<F>(self, fut: F) -> Task<F::Output>
    where
        F: StdFuture + Send + 'static,
        F::Output: Send + 'static,
    {
        inject::spawn_named_on(self.shared(), fut, Some(self.name))
    }

    /// Runs a closure as a task with this name, as [`spawn_fn`](crate::spawn_fn) (or
    /// [`Runtime::spawn_fn`]) does.
    ///
    /// ```
    /// let t = ito::named("sum").spawn_fn(|| (1..=4).sum::<u32>());
    /// assert_eq!(t.wait(), Ok(10));
    /// ```
    #[inline]
    pub fn spawn_fn<F, T>(self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        inject::spawn_fn_named_on(self.shared(), f, Some(self.name))
    }
}

impl Runtime {
    /// Names the next task spawned through the result on this runtime (see [`named`]).
    ///
    /// ```
    /// let rt = ito::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.named("tick").spawn_fn(|| 1).wait(), Ok(1));
    /// assert_eq!(rt.named("tock").spawn(async { 2 }).wait(), Ok(2));
    /// ```
    #[inline]
    pub fn named(&self, name: &'static str) -> Named<'_> {
        Named {
            name,
            on: Some(self),
        }
    }
}
