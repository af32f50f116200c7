//! `Failure` keeps what it came from: a panic's payload, to resume it, and a destructor of
//! that payload which panics is contained.

mod support;

use ito::Failure;
use support::quiet_expected_panics;

/// A panic's payload survives the failure (and its clones): the first `into_panic` gets the
/// original payload, which `resume_unwind` resumes; later clones get the message.
#[test]
fn a_panic_payload_is_kept_and_resumed() {
    quiet_expected_panics();
    let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(42u32) })
        .wait()
        .unwrap_err();
    let copy = err.clone();
    assert_eq!(err, copy);
    let payload = err.into_panic().unwrap();
    let resumed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        std::panic::resume_unwind(payload)
    }));
    let again = resumed.unwrap_err();
    assert_eq!(again.downcast_ref::<u32>(), Some(&42));
    let second = copy.into_panic().unwrap();
    assert_eq!(
        second.downcast_ref::<String>().map(String::as_str),
        Some("panic with a non-string payload")
    );
    // A string panic: the payload is the original `&str`, the message is there too.
    let err = ito::spawn_fn(|| -> u8 { panic!("expected: text") })
        .wait()
        .unwrap_err();
    match &err {
        Failure::Panic(p) => assert_eq!(p.message(), "expected: text"),
        other => panic!("unexpected {other:?}"),
    }
    let payload = err.into_panic().unwrap();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"expected: text"));
    assert_eq!(
        Failure::Cancelled.into_panic().unwrap_err(),
        Failure::Cancelled
    );
}

/// A payload whose destructor panics is dropped with the failure without unwinding out of it.
#[test]
fn a_payload_with_a_panicking_drop_is_contained() {
    quiet_expected_panics();
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("expected: bomb drop");
        }
    }
    let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(Bomb) })
        .wait()
        .unwrap_err();
    assert!(err.is_panic());
    drop(err);
}
