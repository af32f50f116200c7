//! Derived futures in every way a source can get its result ([`Mode`]), and a probe for
//! futures of any type: shared by the `futures_*.rs` tests of combinators and callbacks.

use std::thread;
use std::time::Duration;

use ito::{Failure, Future, Promise};

use super::{get, quiet_expected_panics};

/// The failure a closure that panicked with `msg` gives.
pub(crate) fn panic_failure(msg: &str) -> Failure {
    Failure::Panic(msg.into())
}

/// How the source future of a combinator gets its result.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// `Future::from_result`: complete before the combinator is registered.
    Constant,
    /// A promise completed before the combinator is registered.
    CompletedPromise,
    /// A promise completed on this thread after the combinator is registered.
    Later,
    /// A promise completed from another thread after the combinator is registered.
    OtherThread,
}

pub(crate) const MODES: [Mode; 4] = [
    Mode::Constant,
    Mode::CompletedPromise,
    Mode::Later,
    Mode::OtherThread,
];

/// Builds a derived future with `build` on a source that gets `src` as described by `mode`,
/// and returns the derived future's result.
pub(crate) fn derive_in<T, U>(
    mode: Mode,
    src: Result<T, Failure>,
    build: &dyn Fn(&Future<T>) -> Future<U>,
) -> Result<U, Failure>
where
    T: Clone + Send + Sync + 'static,
    U: Clone + Send + Sync + 'static,
{
    match mode {
        Mode::Constant => {
            let f = Future::from_result(src);
            get(&build(&f))
        }
        Mode::CompletedPromise => {
            let p = Promise::new();
            p.complete(src).expect("fresh promise");
            let f = p.future();
            get(&build(&f))
        }
        Mode::Later => {
            let p = Promise::new();
            let f = p.future();
            let d = build(&f);
            p.complete(src).expect("fresh promise");
            get(&d)
        }
        Mode::OtherThread => {
            let p = Promise::new();
            let f = p.future();
            let d = build(&f);
            let h = thread::spawn(move || {
                thread::sleep(Duration::from_millis(2));
                p.complete(src).is_ok()
            });
            let r = get(&d);
            assert!(h.join().unwrap());
            r
        }
    }
}

/// Asserts that `build` on a source with result `src` gives `expected`, in every [`Mode`].
pub(crate) fn check<T, U>(
    src: Result<T, Failure>,
    build: impl Fn(&Future<T>) -> Future<U>,
    expected: Result<U, Failure>,
) where
    T: Clone + Send + Sync + 'static,
    U: Clone + Send + Sync + PartialEq + std::fmt::Debug + 'static,
{
    quiet_expected_panics();
    for mode in MODES {
        let got = derive_in(mode, src.clone(), &build);
        assert_eq!(got, expected, "mode {mode:?}");
    }
}

/// A future of some type whose result can be probed without knowing the type.
pub(crate) trait Probe {
    /// Waits up to `d`: `None` if still pending, else the result without its value.
    fn probe(&self, d: Duration) -> Option<Result<(), Failure>>;
    /// Whether the future is complete.
    fn done(&self) -> bool;
}

impl<U: Clone> Probe for Future<U> {
    fn probe(&self, d: Duration) -> Option<Result<(), Failure>> {
        self.wait_timeout(d).map(|r| r.map(|_| ()))
    }
    fn done(&self) -> bool {
        self.is_completed()
    }
}
