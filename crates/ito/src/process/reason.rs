//! [`Exit`]: why a process ended, and [`IntoExit`]: what a process body may return.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::{Failure, PanicPayload};

/// Why a process ended.
///
/// A body that returns `Err(e)` ends with `Exit::from(e)`: a text becomes an
/// [`Exit::Reason`], any error (`?` included) is kept as it is in an [`Exit::Error`], which
/// [`Exit::downcast_ref`] opens, and an `Exit` stays itself (see the `From` impl below).
///
/// Equality is not by text where types are involved: kinds are equal; panics when their
/// messages are; [`Exit::Reason`]s when their texts are (like Erlang's atoms); [`Exit::Error`]s
/// only when they are the same error (an exit and its clones), as for [`Failure`], so two
/// distinct errors that display alike differ, and an error never equals a reason. `Hash`
/// agrees.
///
/// ```
/// use ito::process::{self, Exit};
/// let p = process::spawn(|_mb: process::Mailbox<()>| async { Err::<(), _>(Exit::reason("bad config")) });
/// assert_eq!(p.on_exit().wait(), Ok(Exit::reason("bad config")));
/// let io = Exit::from(std::io::Error::other("bad config"));
/// assert_ne!(io, Exit::reason("bad config"));
/// assert_ne!(io, Exit::from(std::io::Error::other("bad config")));
/// assert_eq!(io, io.clone());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Exit {
    /// The body returned `()` or `Ok(())`. Links ignore it (unless they trap exits).
    Normal,
    /// The body panicked: the panic's message and payload (the payload can be taken once,
    /// to resume the panic: [`PanicPayload::into_payload`]).
    Panic(PanicPayload),
    /// [`kill`](super::Pid::kill)ed, or linked to a process that was.
    Killed,
    /// Stopped by its supervisor or by the shutdown of its runtime.
    Shutdown,
    /// A reason of the program's own, as a text: [`Exit::reason`], or a body that returned
    /// `Err(text)`.
    Reason(Arc<str>),
    /// An error of the program's own, kept as it is: a body that returned `Err(e)` (or used
    /// `?`) with any `E: Error + Send + Sync`, or a `Box<dyn Error + Send + Sync>`.
    /// [`Exit::downcast_ref`] finds it.
    Error(Arc<dyn Error + Send + Sync + 'static>),
}

impl Exit {
    /// A user reason.
    ///
    /// ```
    /// assert_eq!(ito::process::Exit::reason("lost connection").to_string(), "lost connection");
    /// ```
    pub fn reason(msg: impl Into<Arc<str>>) -> Exit {
        Exit::Reason(msg.into())
    }

    /// A typed user error, kept as it is ([`downcast_ref`](Self::downcast_ref) finds it); the
    /// same as `Exit::from(e)`, named like [`Failure::from_error`] for `map_err`. A body
    /// returning `Result<(), E>` needs neither: `Err(e)` is converted for it.
    ///
    /// ```
    /// use ito::process::{self, Exit, Mailbox};
    /// #[derive(Debug)]
    /// struct Overheated(u32);
    /// impl std::fmt::Display for Overheated {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         write!(f, "overheated at {} degrees", self.0)
    ///     }
    /// }
    /// impl std::error::Error for Overheated {}
    /// let p = process::spawn(|_: Mailbox<()>| async {
    ///     Err::<(), _>(Exit::from_error(Overheated(90)))
    /// });
    /// let reason = p.on_exit().wait().unwrap();
    /// assert_eq!(reason.downcast_ref::<Overheated>().map(|e| e.0), Some(90));
    /// ```
    pub fn from_error<E: Error + Send + Sync + 'static>(e: E) -> Exit {
        Exit::from(e)
    }

    /// The user error inside, if this is an [`Exit::Error`] holding an `E`.
    ///
    /// ```
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|_: Mailbox<()>| async {
    ///     std::fs::File::open("/no/such/file")?; // `?` on an io::Error
    ///     Ok::<(), std::io::Error>(())
    /// });
    /// let reason = p.on_exit().wait().unwrap();
    /// let e = reason.downcast_ref::<std::io::Error>().unwrap();
    /// assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        match self {
            Exit::Error(e) => e.downcast_ref(),
            _ => None,
        }
    }

    /// Whether this is [`Exit::Normal`].
    ///
    /// ```
    /// assert!(ito::process::Exit::Normal.is_normal());
    /// assert!(!ito::process::Exit::Killed.is_normal());
    /// ```
    pub fn is_normal(&self) -> bool {
        matches!(self, Exit::Normal)
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Normal => f.write_str("normal"),
            Exit::Panic(m) => write!(f, "panicked: {m}"),
            Exit::Killed => f.write_str("killed"),
            Exit::Shutdown => f.write_str("shutdown"),
            Exit::Reason(m) => f.write_str(m),
            Exit::Error(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl fmt::Debug for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Normal => f.write_str("Normal"),
            Exit::Panic(m) => f.debug_tuple("Panic").field(m).finish(),
            Exit::Killed => f.write_str("Killed"),
            Exit::Shutdown => f.write_str("Shutdown"),
            Exit::Reason(m) => f.debug_tuple("Reason").field(m).finish(),
            Exit::Error(e) => f.debug_tuple("Error").field(e).finish(),
        }
    }
}

impl PartialEq for Exit {
    fn eq(&self, other: &Exit) -> bool {
        match (self, other) {
            (Exit::Panic(a), Exit::Panic(b)) => a == b,
            (Exit::Reason(a), Exit::Reason(b)) => a == b,
            (Exit::Error(a), Exit::Error(b)) => Arc::ptr_eq(a, b),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Eq for Exit {}

impl Hash for Exit {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Exit::Panic(p) => p.hash(state),
            Exit::Reason(m) => m.hash(state),
            // Equal errors are the same object: hash its address.
            Exit::Error(e) => Arc::as_ptr(e).cast::<()>().hash(state),
            Exit::Normal | Exit::Killed | Exit::Shutdown => {}
        }
    }
}

// `Exit` itself must never implement `Error`: this impl would then overlap the standard
// library's `From<T> for T` (anyhow's error type stays out of `Error` for the same reason).
impl<E> From<E> for Exit
where
    E: Into<Box<dyn Error + Send + Sync + 'static>> + 'static,
{
    /// Whatever `?` turns into a `Box<dyn Error + Send + Sync>` becomes an exit, so `?` works
    /// on any error in a body that returns `Result<(), Exit>`, and a body may return
    /// `Result<(), E>` with the error type it already has:
    ///
    /// - a text (`&'static str`, `String`, `Cow<'static, str>`) becomes an [`Exit::Reason`];
    /// - a [`Failure`] keeps its kind: a panic stays a panic (payload included), a user error
    ///   stays that error ([`Exit::Error`]), any other failure becomes a reason with its
    ///   message;
    /// - any other error (an `E: Error + Send + Sync`, or a `Box<dyn Error + Send + Sync>`) is
    ///   kept as it is, in an [`Exit::Error`] ([`Exit::downcast_ref`] finds it).
    ///
    /// ```
    /// use ito::{Failure, process::Exit};
    /// assert_eq!(Exit::from("no disk"), Exit::reason("no disk"));
    /// let e = Exit::from(Failure::from_error(std::fmt::Error));
    /// assert!(e.downcast_ref::<std::fmt::Error>().is_some());
    /// assert_eq!(Exit::from(Failure::Timeout), Exit::reason("timed out"));
    /// ```
    fn from(e: E) -> Exit {
        match as_text(e) {
            Ok(text) => Exit::Reason(text),
            Err(e) => match e.into().downcast::<Failure>() {
                Ok(f) => from_failure(*f),
                Err(e) => Exit::Error(Arc::from(e)),
            },
        }
    }
}

/// `e` as a text if its type is one of the standard library's owned or static strings, else
/// `e` back. The types are told apart by `TypeId`, since a second `From` impl for them
/// beside the blanket one would break coherence (see [`Exit`]'s `From` impl).
fn as_text<E: 'static>(e: E) -> Result<Arc<str>, E> {
    let mut slot = Some(e);
    let any: &mut dyn Any = &mut slot;
    let text: Option<Arc<str>> = if let Some(s) = any.downcast_mut::<Option<&'static str>>() {
        s.take().map(Arc::from)
    } else if let Some(s) = any.downcast_mut::<Option<String>>() {
        s.take().map(Arc::from)
    } else if let Some(s) = any.downcast_mut::<Option<Cow<'static, str>>>() {
        s.take().map(Arc::from)
    } else {
        None
    };
    match text {
        Some(text) => Ok(text),
        None => Err(slot.expect("only a text is taken out of the slot")),
    }
}

fn from_failure(f: Failure) -> Exit {
    match f {
        Failure::Panic(m) => Exit::Panic(m),
        Failure::Error(e) => Exit::Error(e),
        other => Exit::Reason(other.to_string().into()),
    }
}

/// What a process body may return: `()`, an [`Exit`], `Result<(), E>` with `E: Into<Exit>`,
/// or nothing at all (`!`: a body that loops for ever).
///
/// `E: Into<Exit>` takes the error types a body already has: the program's own
/// `E: Error + Send + Sync`, an [`io::Error`](std::io::Error), a
/// `Box<dyn Error + Send + Sync>`, a [`Failure`], a text, or an [`Exit`] itself (kept, not
/// wrapped). So `?` works in a body whatever its error type.
///
/// ```
/// use ito::process::{self, Exit, Mailbox};
/// #[derive(Debug, PartialEq)]
/// struct NoDisk(u32);
/// impl std::fmt::Display for NoDisk {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "disk {} is gone", self.0)
///     }
/// }
/// impl std::error::Error for NoDisk {}
///
/// let ok = process::spawn(|_: Mailbox<()>| async {});
/// let said = process::spawn(|_: Mailbox<()>| async { Err::<(), _>("no disk") });
/// let typed = process::spawn(|_: Mailbox<()>| async { Err::<(), _>(NoDisk(2)) });
/// assert_eq!(ok.on_exit().wait(), Ok(Exit::Normal));
/// assert_eq!(said.on_exit().wait(), Ok(Exit::reason("no disk")));
/// let reason = typed.on_exit().wait().unwrap();
/// assert_eq!(reason.downcast_ref::<NoDisk>(), Some(&NoDisk(2)));
/// ```
pub trait IntoExit {
    /// The exit reason.
    fn into_exit(self) -> Exit;
}

impl IntoExit for () {
    fn into_exit(self) -> Exit {
        Exit::Normal
    }
}

impl IntoExit for Exit {
    fn into_exit(self) -> Exit {
        self
    }
}

/// Names the never type `!` on stable Rust (the output type of `fn() -> !`).
trait FnOutput {
    type Output;
}

impl<R> FnOutput for fn() -> R {
    type Output = R;
}

/// `!`: the output of a body that never returns (an endless receive loop, or one that can only
/// panic). Since edition 2024 that is the type such an async block gets.
type Never = <fn() -> ! as FnOutput>::Output;

// The alias is private but what it names, `!`, is public: nothing private leaks.
#[allow(private_interfaces, private_bounds)]
impl IntoExit for Never {
    fn into_exit(self) -> Exit {
        self
    }
}

impl<E: Into<Exit>> IntoExit for Result<(), E> {
    fn into_exit(self) -> Exit {
        match self {
            Ok(()) => Exit::Normal,
            Err(e) => e.into(),
        }
    }
}
