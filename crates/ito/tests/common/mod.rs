//! Helpers shared by the futures test files.
#![allow(dead_code)] // each test file uses its own subset

use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use ito::{Failure, Future};

/// Upper bound for waits that are expected to succeed (only reached if something hangs).
pub(crate) const LONG: Duration = Duration::from_secs(10);

/// Waits for `f`, failing the test instead of hanging.
pub(crate) fn get<T: Clone>(f: &Future<T>) -> Result<T, Failure> {
    f.wait_timeout(LONG)
        .expect("future did not complete in time")
}

/// Keeps the panics these tests provoke on purpose (messages starting with `expected:`) out of
/// the test output.
pub(crate) fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned());
            if msg.is_some_and(|m| m.starts_with("expected:")) {
                return;
            }
            prev(info);
        }));
    });
}

/// The message of a panic payload (`panic!` with a literal or with arguments), or "".
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Returns `Pending` once (waking itself), then `Ready`: one suspension point.
pub(crate) struct YieldOnce(pub(crate) bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
