//! [`Exit`]: why a process ended, and [`IntoExit`]: what a process body may return.

use std::error::Error;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::{Failure, PanicPayload};

/// Why a process ended.
///
/// Equality: kinds are equal; panics when their messages are; [`Exit::Reason`]s when their
/// texts are; [`Exit::Error`]s when they are the same error (an exit and its clones), as
/// for [`Failure`].
///
/// ```
/// use ito::process::{self, Exit};
/// let p = process::spawn(|_mb: process::Mailbox<()>| async { Err::<(), _>(Exit::reason("bad config")) });
/// assert_eq!(p.on_exit().wait(), Ok(Exit::reason("bad config")));
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
    /// A reason of the program's own: the body returned `Err(reason)` with a text.
    Reason(Arc<str>),
    /// A typed error of the program's own: the body returned `Err(e)` with an
    /// [`io::Error`](std::io::Error) or a `Box<dyn Error + Send + Sync>` (so `?` works on any
    /// error), or an [`Exit::from_error`]. [`Exit::downcast_ref`] finds it.
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

    /// A typed user error, kept as it is ([`downcast_ref`](Self::downcast_ref) finds it).
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
        Exit::Error(Arc::new(e))
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

impl From<std::io::Error> for Exit {
    /// An [`Exit::Error`] holding it, so `?` on an I/O error works in a body that returns
    /// `Result<(), io::Error>`.
    fn from(e: std::io::Error) -> Exit {
        Exit::from_error(e)
    }
}

impl From<Box<dyn Error + Send + Sync + 'static>> for Exit {
    /// An [`Exit::Error`] holding the boxed error, so a body that returns
    /// `Result<(), Box<dyn Error + Send + Sync>>` can use `?` on any error and keep it.
    ///
    /// ```
    /// use std::error::Error;
    /// use ito::process::{self, Mailbox};
    /// let p = process::spawn(|_: Mailbox<()>| async {
    ///     let n: u8 = "300".parse()?;
    ///     println!("{n}");
    ///     Ok::<(), Box<dyn Error + Send + Sync>>(())
    /// });
    /// let reason = p.on_exit().wait().unwrap();
    /// assert!(reason.downcast_ref::<std::num::ParseIntError>().is_some());
    /// ```
    fn from(e: Box<dyn Error + Send + Sync + 'static>) -> Exit {
        Exit::Error(Arc::from(e))
    }
}

impl From<&str> for Exit {
    /// A user reason.
    fn from(msg: &str) -> Exit {
        Exit::Reason(msg.into())
    }
}

impl From<String> for Exit {
    /// A user reason.
    fn from(msg: String) -> Exit {
        Exit::Reason(msg.into())
    }
}

impl From<Failure> for Exit {
    /// A panic stays a panic (payload included); a user error stays that error
    /// ([`Exit::Error`]); any other failure becomes a user reason with its message. So a body
    /// can use `?` on futures.
    ///
    /// ```
    /// use ito::{Failure, process::Exit};
    /// let e = Exit::from(Failure::from_error(std::fmt::Error));
    /// assert!(e.downcast_ref::<std::fmt::Error>().is_some());
    /// assert_eq!(Exit::from(Failure::Timeout), Exit::reason("timed out"));
    /// ```
    fn from(f: Failure) -> Exit {
        match f {
            Failure::Panic(m) => Exit::Panic(m),
            Failure::Error(e) => Exit::Error(e),
            other => Exit::Reason(other.to_string().into()),
        }
    }
}

/// What a process body may return: `()`, an [`Exit`], `Result<(), E>` with `E: Into<Exit>`
/// (a text, an [`Exit`], a [`Failure`], an [`io::Error`](std::io::Error), or a
/// `Box<dyn Error + Send + Sync>`, into which `?` converts any error), or nothing at all (`!`:
/// a body that loops for ever).
///
/// ```
/// use ito::process::{self, Exit, Mailbox};
/// let ok = process::spawn(|_: Mailbox<()>| async {});
/// let failed = process::spawn(|_: Mailbox<()>| async { Err::<(), _>("no disk") });
/// assert_eq!(ok.on_exit().wait(), Ok(Exit::Normal));
/// assert_eq!(failed.on_exit().wait(), Ok(Exit::reason("no disk")));
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
