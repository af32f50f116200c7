//! [`race`] and [`first_ok`]: the first result wins, the losers are cancelled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::future::promise::UniqueWriter;
use crate::{Failure, Task};

/// Which results may win.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wins {
    Any,
    Success,
}

struct Race<T> {
    out: UniqueWriter<T>,
    wins: Wins,
    /// The contenders, until the winner (or the last failure) takes them to cancel the rest.
    /// Their results are read by the completion callbacks (`start`), never through these.
    handles: Mutex<Option<Vec<Task<T>>>>,
    winner: AtomicUsize,
    /// Contenders that have not failed yet (for `first_ok`).
    alive: AtomicUsize,
}

impl<T: Send + 'static> Race<T> {
    fn start(futures: Vec<Task<T>>, wins: Wins) -> Task<T> {
        let (out, result) = UniqueWriter::new();
        if futures.is_empty() {
            let _ = out.try_failure(Failure::NoSuchElement);
            return result;
        }
        let race = Arc::new(Race {
            out,
            wins,
            handles: Mutex::new(None),
            winner: AtomicUsize::new(usize::MAX),
            alive: AtomicUsize::new(futures.len()),
        });
        for (i, f) in futures.iter().enumerate() {
            let r = race.clone();
            // SAFETY: the race consumed the contender's `Task`, its only reader, and reads
            // the result only here; the `Task` is kept just to abort it.
            unsafe { f.inner().on_complete_take(move |v| r.finished(i, v)) };
        }
        *race.handles.lock().unwrap() = Some(futures);
        if race.out.is_completed() {
            // A contender finished during registration, before the handles were stored.
            race.cancel_losers();
        }
        result
    }

    fn finished(&self, i: usize, v: Result<T, Failure>) {
        let wins = match v {
            Ok(_) => true,
            Err(_) if self.wins == Wins::Any => true,
            Err(_) => self.alive.fetch_sub(1, Ordering::AcqRel) == 1, // the last failure
        };
        if wins && self.out.try_complete(v) {
            self.winner.store(i, Ordering::Release);
            self.cancel_losers();
        }
    }

    fn cancel_losers(&self) {
        let Some(handles) = self.handles.lock().unwrap().take() else {
            return; // not stored yet (the registrar will do it) or done already
        };
        let winner = self.winner.load(Ordering::Acquire);
        for (i, h) in handles.into_iter().enumerate() {
            if i != winner {
                h.abort();
            }
        }
    }
}

/// The result of whichever of `a` and `b` completes first, success or failure; the other is
/// cancelled ([`Task::abort`]). The result moves through: `T` needs no `Clone`. Aborting the
/// returned `Task` does not cancel the contenders (it is a race's result, not a task's).
///
/// ```
/// use std::time::Duration;
/// let fast = ito::spawn(async { "fast" });
/// let slow = ito::spawn(async {
///     ito::sleep(Duration::from_secs(60)).await.unwrap();
///     "slow"
/// });
/// assert_eq!(ito::race(fast, slow).wait(), Ok("fast"));
/// ```
pub fn race<T>(a: Task<T>, b: Task<T>) -> Task<T>
where
    T: Send + 'static,
{
    Race::start(vec![a, b], Wins::Any)
}

/// The first *successful* result of `futures`; the others are then cancelled. If every one
/// fails, the last failure; if there are none, [`Failure::NoSuchElement`].
///
/// ```
/// let attempts = vec![
///     ito::spawn_fn(|| -> u32 { panic!("mirror 1 is down") }),
///     ito::spawn_fn(|| 7),
/// ];
/// assert_eq!(ito::first_ok(attempts).wait(), Ok(7));
/// let none: Vec<ito::Task<u32>> = Vec::new();
/// assert_eq!(ito::first_ok(none).wait(), Err(ito::Failure::NoSuchElement));
/// ```
pub fn first_ok<T, I>(futures: I) -> Task<T>
where
    T: Send + 'static,
    I: IntoIterator<Item = Task<T>>,
{
    Race::start(futures.into_iter().collect(), Wins::Success)
}
