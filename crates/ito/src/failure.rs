//! [`Failure`]: why a future did not produce a value.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a [`Future`](crate::Future) completed without a value.
///
/// A failure is cheap to clone (at most one reference count), so every reader of a failed
/// future gets its own copy.
///
/// ```
/// use ito::Failure;
/// let f = ito::spawn_fn(|| -> u32 { panic!("boom") });
/// match f.wait() {
///     Err(Failure::Panic(msg)) => assert_eq!(&*msg, "boom"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Failure {
    /// The task, callback or combinator panicked; the panic's message.
    Panic(Arc<str>),
    /// A user error, from [`Failure::from_error`] or [`Failure::msg`].
    Error(Arc<dyn Error + Send + Sync + 'static>),
    /// Every [`Promise`](crate::Promise) handle was dropped without completing it.
    BrokenPromise,
    /// The computation was cancelled (for example, its runtime shut down before it ran).
    Cancelled,
    /// A timeout ([`Future::with_timeout`](crate::Future::with_timeout),
    /// [`timeout`](crate::timeout)) ran out first.
    Timeout,
    /// The value did not satisfy [`Future::filter`](crate::Future::filter), or
    /// [`Future::failed`](crate::Future::failed) was called on a success, or a collection of
    /// futures was empty where one result was needed.
    NoSuchElement,
}

impl Failure {
    /// Wraps a user error.
    ///
    /// ```
    /// let f = ito::Failure::from_error(std::io::Error::other("disk full"));
    /// assert_eq!(f.to_string(), "disk full");
    /// assert!(f.downcast_ref::<std::io::Error>().is_some());
    /// ```
    pub fn from_error<E: Error + Send + Sync + 'static>(e: E) -> Self {
        Failure::Error(Arc::new(e))
    }

    /// A user error carrying just a message.
    ///
    /// ```
    /// assert_eq!(ito::Failure::msg("no route").to_string(), "no route");
    /// ```
    pub fn msg(message: impl Into<String>) -> Self {
        Failure::Error(Arc::new(Message(message.into())))
    }

    /// The user error inside, if it is an `E`.
    ///
    /// ```
    /// let f = ito::Failure::from_error(std::fmt::Error);
    /// assert!(f.downcast_ref::<std::fmt::Error>().is_some());
    /// assert!(ito::Failure::Timeout.downcast_ref::<std::fmt::Error>().is_none());
    /// ```
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        match self {
            Failure::Error(e) => e.downcast_ref(),
            _ => None,
        }
    }

    /// Whether this is a [`Failure::Panic`].
    ///
    /// ```
    /// assert!(!ito::Failure::Cancelled.is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, Failure::Panic(_))
    }

    /// Turns a caught panic payload into a failure carrying its message.
    #[cold]
    pub(crate) fn from_panic(payload: Box<dyn Any + Send>) -> Self {
        let msg: Arc<str> = if let Some(s) = payload.downcast_ref::<&'static str>() {
            Arc::from(*s)
        } else if let Some(s) = payload.downcast_ref::<String>() {
            Arc::from(s.as_str())
        } else {
            Arc::from("panic with a non-string payload")
        };
        drop_payload(payload);
        Failure::Panic(msg)
    }
}

/// Drops a panic payload without letting a panicking `Drop` of the payload unwind further (a
/// second panic's payload is forgotten rather than dropped, which could panic again).
#[cold]
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(payload)))
    {
        std::mem::forget(again);
    }
}

/// The error type behind [`Failure::msg`].
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Message {}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Panic(m) => write!(f, "panicked: {m}"),
            Failure::Error(e) => fmt::Display::fmt(e, f),
            Failure::BrokenPromise => {
                f.write_str("broken promise: every promise handle was dropped")
            }
            Failure::Cancelled => f.write_str("cancelled"),
            Failure::Timeout => f.write_str("timed out"),
            Failure::NoSuchElement => f.write_str("no such element"),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Panic(m) => f.debug_tuple("Panic").field(m).finish(),
            Failure::Error(e) => f.debug_tuple("Error").field(e).finish(),
            Failure::BrokenPromise => f.write_str("BrokenPromise"),
            Failure::Cancelled => f.write_str("Cancelled"),
            Failure::Timeout => f.write_str("Timeout"),
            Failure::NoSuchElement => f.write_str("NoSuchElement"),
        }
    }
}

impl Error for Failure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Failure::Error(e) => Some(&**e),
            _ => None,
        }
    }
}

impl PartialEq for Failure {
    /// Failures of the same kind are equal; user errors are equal when they are the same
    /// error object or display the same.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Failure::Panic(a), Failure::Panic(b)) => a == b,
            (Failure::Error(a), Failure::Error(b)) => {
                Arc::ptr_eq(a, b) || a.to_string() == b.to_string()
            }
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}
