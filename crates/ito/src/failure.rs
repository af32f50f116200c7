//! [`Failure`]: why a future did not produce a value; [`PanicPayload`]: what a panic left.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// Why a [`Future`](crate::Future) completed without a value.
///
/// A failure is cheap to clone (at most one reference count), so every reader of a failed
/// future gets its own copy. What the failure came from is kept, not just its text:
///
/// - a panic keeps its payload ([`Failure::into_panic`] gives it back, to
///   [`resume_unwind`](std::panic::resume_unwind) it) and its message;
/// - a user error keeps the error ([`Failure::downcast_ref`]).
///
/// **Equality** compares what can be compared without the user's types: failures of the
/// same kind are equal; two panics when their messages are equal; two user errors when they
/// are the same error (a failure and its clones), or both were made by [`Failure::msg`] with
/// the same text. Two distinct typed errors are never equal, even if they display the same:
/// compare them through `downcast_ref`.
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
    /// The task, callback or combinator panicked: the panic's message and payload.
    Panic(PanicPayload),
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

    /// The payload of the panic this failure came from, to resume it with
    /// [`resume_unwind`](std::panic::resume_unwind); hands the failure back if it is not a
    /// panic. See [`PanicPayload::into_payload`] for clones of one failure.
    ///
    /// ```
    /// let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(42u32) }).wait().unwrap_err();
    /// let payload = err.into_panic().unwrap();
    /// assert_eq!(payload.downcast::<u32>().ok().map(|b| *b), Some(42));
    /// assert!(ito::Failure::Timeout.into_panic().is_err());
    /// ```
    pub fn into_panic(self) -> Result<Box<dyn Any + Send + 'static>, Failure> {
        match self {
            Failure::Panic(p) => Ok(p.into_payload()),
            other => Err(other),
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

    /// Turns a caught panic payload into a failure carrying it and its message.
    #[cold]
    pub(crate) fn from_panic(payload: Box<dyn Any + Send>) -> Self {
        Failure::Panic(PanicPayload::new(payload))
    }
}

/// What a panic left: its message, and its payload for whoever wants to resume it.
///
/// Shared by the clones of a [`Failure`] (and of an [`Exit`](crate::process::Exit)): the
/// message is there for every clone; the payload can be taken once
/// ([`into_payload`](Self::into_payload)). It dereferences to the message, compares, hashes
/// and prints as the message, and is made from a message with `"text".into()`.
///
/// ```
/// use ito::{Failure, PanicPayload};
/// match ito::spawn_fn(|| -> u8 { panic!("disk on fire") }).wait() {
///     Err(Failure::Panic(p)) => {
///         assert_eq!(&*p, "disk on fire");
///         assert_eq!(p, PanicPayload::from("disk on fire"));
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone)]
pub struct PanicPayload(Arc<PanicInner>);

struct PanicInner {
    message: Box<str>,
    /// The original payload, until one clone takes it.
    payload: Mutex<Option<Box<dyn Any + Send>>>,
}

impl PanicPayload {
    /// Keeps `payload`, and its message if it is a string (`panic!` makes a `&str` or a
    /// `String`).
    fn new(payload: Box<dyn Any + Send>) -> PanicPayload {
        let message: Box<str> = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).into()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.as_str().into()
        } else {
            "panic with a non-string payload".into()
        };
        PanicPayload(Arc::new(PanicInner {
            message,
            payload: Mutex::new(Some(payload)),
        }))
    }

    /// The panic's message (for a payload that is not a string: a fixed text saying so).
    ///
    /// ```
    /// let p = ito::PanicPayload::from("boom");
    /// assert_eq!(p.message(), "boom");
    /// ```
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The payload, to resume the panic with [`resume_unwind`](std::panic::resume_unwind).
    /// The first clone to call this gets the original payload; later ones (and a payload
    /// made from a message) get the message as a `String`, which `resume_unwind` reports the
    /// same way.
    ///
    /// ```
    /// let err = ito::spawn_fn(|| -> u8 { std::panic::panic_any(7i64) }).wait().unwrap_err();
    /// let (a, b) = match (err.clone(), err) {
    ///     (ito::Failure::Panic(a), ito::Failure::Panic(b)) => (a, b),
    ///     _ => unreachable!(),
    /// };
    /// assert_eq!(a.into_payload().downcast_ref::<i64>(), Some(&7));
    /// let second = b.into_payload();
    /// assert_eq!(second.downcast_ref::<String>().map(String::as_str), Some("panic with a non-string payload"));
    /// ```
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        let taken = self
            .0
            .payload
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        taken.unwrap_or_else(|| Box::new(String::from(self.message())))
    }
}

impl Drop for PanicInner {
    fn drop(&mut self) {
        let payload = self.payload.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = payload.take() {
            drop_payload(p);
        }
    }
}

impl From<&str> for PanicPayload {
    /// A payload that is the message (as a `String`, like `panic!("{}", ..)` makes).
    fn from(message: &str) -> PanicPayload {
        PanicPayload::from(String::from(message))
    }
}

impl From<String> for PanicPayload {
    /// A payload that is the message.
    fn from(message: String) -> PanicPayload {
        PanicPayload::new(Box::new(message))
    }
}

impl From<Arc<str>> for PanicPayload {
    /// A payload that is the message.
    fn from(message: Arc<str>) -> PanicPayload {
        PanicPayload::from(&*message)
    }
}

impl std::ops::Deref for PanicPayload {
    type Target = str;

    /// The message.
    fn deref(&self) -> &str {
        self.message()
    }
}

impl PartialEq for PanicPayload {
    /// Equal messages (payloads of arbitrary types cannot be compared).
    fn eq(&self, other: &Self) -> bool {
        self.message() == other.message()
    }
}

impl Eq for PanicPayload {}

impl Hash for PanicPayload {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.message().hash(state);
    }
}

impl fmt::Debug for PanicPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.message(), f)
    }
}

impl fmt::Display for PanicPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
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
    /// Failures of the same kind are equal; panics when their messages are; user errors when
    /// they are the same error, or both are [`Failure::msg`]s with the same text (see
    /// [`Failure`]).
    ///
    /// ```
    /// use ito::Failure;
    /// let e = Failure::from_error(std::io::Error::other("same"));
    /// assert_eq!(e, e.clone());
    /// assert_ne!(e, Failure::from_error(std::io::Error::other("same")));
    /// assert_ne!(e, Failure::msg("same"));
    /// assert_eq!(Failure::msg("same"), Failure::msg("same"));
    /// ```
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Failure::Panic(a), Failure::Panic(b)) => a == b,
            (Failure::Error(a), Failure::Error(b)) => {
                Arc::ptr_eq(a, b)
                    || matches!(
                        (a.downcast_ref::<Message>(), b.downcast_ref::<Message>()),
                        (Some(x), Some(y)) if x.0 == y.0
                    )
            }
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}
