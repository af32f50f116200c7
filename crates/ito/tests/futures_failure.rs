//! Integration tests for `Failure`: made from errors and messages, its kinds' `Display` and
//! `Debug`, equality, and panics in tasks.

use std::error::Error;

use ito::Failure;

mod support;
use support::{get, quiet_expected_panics};

// ---------------------------------------------------------------------------------------------
// Failure
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
struct MyError(u32);

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "my error {}", self.0)
    }
}

impl Error for MyError {}

#[test]
fn failure_from_error_and_msg() {
    let f = Failure::from_error(std::io::Error::other("disk full"));
    assert_eq!(f.to_string(), "disk full");
    assert_eq!(
        f.downcast_ref::<std::io::Error>().map(|e| e.kind()),
        Some(std::io::ErrorKind::Other)
    );
    assert!(f.downcast_ref::<MyError>().is_none());
    assert!(f.source().is_some());
    assert!(!f.is_panic());

    let f = Failure::from_error(MyError(7));
    assert_eq!(f.downcast_ref::<MyError>(), Some(&MyError(7)));
    assert_eq!(f.to_string(), "my error 7");
    assert_eq!(f.source().map(|e| e.to_string()), Some("my error 7".into()));
    // A clone shares the same error.
    let g = f.clone();
    assert!(std::ptr::eq(
        f.downcast_ref::<MyError>().unwrap(),
        g.downcast_ref::<MyError>().unwrap()
    ));

    let m = Failure::msg("no route");
    assert_eq!(m.to_string(), "no route");
    assert_eq!(Failure::msg(String::from("owned")).to_string(), "owned");
    assert!(m.downcast_ref::<std::io::Error>().is_none());
    assert!(m.downcast_ref::<MyError>().is_none());
    let dbg = format!("{m:?}");
    assert!(
        dbg.starts_with("Error(") && dbg.contains("no route"),
        "{dbg}"
    );
    let dbg = format!("{:?}", Failure::from_error(MyError(3)));
    assert_eq!(dbg, "Error(MyError(3))");
}

#[test]
fn failure_kinds_display_and_debug() {
    let p = Failure::Panic("boom".into());
    assert!(p.is_panic());
    assert!(p.to_string().contains("boom"), "{p}");
    assert_eq!(format!("{p:?}"), "Panic(\"boom\")");
    assert!(p.downcast_ref::<MyError>().is_none());
    assert!(p.source().is_none());

    let kinds = [
        (Failure::BrokenPromise, "BrokenPromise"),
        (Failure::Cancelled, "Cancelled"),
        (Failure::Timeout, "Timeout"),
        (Failure::NoSuchElement, "NoSuchElement"),
    ];
    let mut shown = Vec::new();
    for (k, name) in &kinds {
        assert_eq!(format!("{k:?}"), *name);
        assert!(!k.is_panic());
        assert!(k.source().is_none());
        assert!(k.downcast_ref::<std::io::Error>().is_none());
        let s = k.to_string();
        assert!(!s.is_empty());
        shown.push(s);
    }
    assert_eq!(Failure::Timeout.to_string(), "timed out");
    assert_eq!(Failure::Cancelled.to_string(), "cancelled");
    shown.sort();
    shown.dedup();
    assert_eq!(shown.len(), kinds.len(), "two kinds display the same");
}

#[test]
fn failure_equality() {
    assert_eq!(Failure::Timeout, Failure::Timeout);
    assert_ne!(Failure::Timeout, Failure::Cancelled);
    assert_ne!(Failure::BrokenPromise, Failure::NoSuchElement);
    assert_eq!(Failure::Panic("a".into()), Failure::Panic("a".into()));
    assert_ne!(Failure::Panic("a".into()), Failure::Panic("b".into()));
    assert_ne!(Failure::Panic("a".into()), Failure::msg("a"));
    assert_eq!(Failure::msg("x"), Failure::msg("x"));
    assert_ne!(Failure::msg("x"), Failure::msg("y"));
    // Typed user errors are equal only to themselves (a failure and its clones), never by
    // their text; compare them through `downcast_ref`.
    assert_ne!(
        Failure::from_error(std::io::Error::other("same")),
        Failure::msg("same")
    );
    assert_ne!(
        Failure::from_error(MyError(1)),
        Failure::from_error(MyError(1))
    );
    let e = Failure::from_error(MyError(1));
    assert_eq!(e.clone(), e);
    assert_eq!(e.downcast_ref::<MyError>().map(|m| m.0), Some(1));
}

#[test]
fn panics_in_tasks_become_panic_failures() {
    quiet_expected_panics();
    let f = ito::spawn_fn(|| -> u8 { panic!("expected: task") });
    assert_eq!(get(f), Err(Failure::Panic("expected: task".into())));
    let g = ito::spawn_fn(|| -> u8 { panic!("expected: task {}", 2) });
    match get(g) {
        Err(Failure::Panic(m)) => assert_eq!(&*m, "expected: task 2"),
        other => panic!("unexpected {other:?}"),
    }
}
