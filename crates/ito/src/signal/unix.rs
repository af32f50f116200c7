//! Unix signals: [`signal`] gives a [`Signal`] that receives each later delivery of one
//! [`SignalKind`] (tokio's `signal::unix`).

use std::fmt;
use std::io;
use std::os::raw::c_int;

use signal_hook::consts as sig;

use super::registry::subscribe;
use crate::sync::{Cancelled, watch};

/// Which signal to listen for: the common ones by name, any other by number
/// ([`from_raw`](Self::from_raw)).
///
/// ```
/// use ito::signal::unix::SignalKind;
/// assert_eq!(SignalKind::terminate().as_raw_value(), 15);
/// assert_eq!(SignalKind::from_raw(15), SignalKind::terminate());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignalKind(c_int);

impl SignalKind {
    /// The signal with this number; [`signal`] refuses numbers that are not signals, and
    /// signals that cannot be handled.
    ///
    /// ```
    /// let usr1 = ito::signal::unix::SignalKind::from_raw(10);
    /// assert_eq!(usr1, ito::signal::unix::SignalKind::user_defined1()); // on Linux
    /// ```
    pub const fn from_raw(signum: c_int) -> SignalKind {
        SignalKind(signum)
    }

    /// The signal's number.
    ///
    /// ```
    /// assert_eq!(ito::signal::unix::SignalKind::interrupt().as_raw_value(), 2);
    /// ```
    pub const fn as_raw_value(self) -> c_int {
        self.0
    }

    /// `SIGINT`: the terminal's interrupt key (Ctrl-C).
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::interrupt();
    /// # drop(k);
    /// ```
    pub const fn interrupt() -> SignalKind {
        SignalKind(sig::SIGINT)
    }

    /// `SIGTERM`: a polite request to stop (what `kill` and service managers send).
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::terminate();
    /// # drop(k);
    /// ```
    pub const fn terminate() -> SignalKind {
        SignalKind(sig::SIGTERM)
    }

    /// `SIGHUP`: the terminal went away; daemons take it as "reload the configuration".
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::hangup();
    /// # drop(k);
    /// ```
    pub const fn hangup() -> SignalKind {
        SignalKind(sig::SIGHUP)
    }

    /// `SIGQUIT`: the terminal's quit key (Ctrl-\\).
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::quit();
    /// # drop(k);
    /// ```
    pub const fn quit() -> SignalKind {
        SignalKind(sig::SIGQUIT)
    }

    /// `SIGUSR1`, which means what the program says it means.
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::user_defined1();
    /// # drop(k);
    /// ```
    pub const fn user_defined1() -> SignalKind {
        SignalKind(sig::SIGUSR1)
    }

    /// `SIGUSR2`, which means what the program says it means.
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::user_defined2();
    /// # drop(k);
    /// ```
    pub const fn user_defined2() -> SignalKind {
        SignalKind(sig::SIGUSR2)
    }

    /// `SIGALRM`: a timer set with `alarm(2)` expired.
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::alarm();
    /// # drop(k);
    /// ```
    pub const fn alarm() -> SignalKind {
        SignalKind(sig::SIGALRM)
    }

    /// `SIGCHLD`: a child process stopped or exited.
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::child();
    /// # drop(k);
    /// ```
    pub const fn child() -> SignalKind {
        SignalKind(sig::SIGCHLD)
    }

    /// `SIGPIPE`: a write to a pipe or socket nobody reads (listening for it replaces the
    /// default action, which kills the process).
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::pipe();
    /// # drop(k);
    /// ```
    pub const fn pipe() -> SignalKind {
        SignalKind(sig::SIGPIPE)
    }

    /// `SIGWINCH`: the terminal changed size.
    ///
    /// ```
    /// let k = ito::signal::unix::SignalKind::window_change();
    /// # drop(k);
    /// ```
    pub const fn window_change() -> SignalKind {
        SignalKind(sig::SIGWINCH)
    }
}

impl From<c_int> for SignalKind {
    /// [`SignalKind::from_raw`].
    fn from(signum: c_int) -> SignalKind {
        SignalKind(signum)
    }
}

impl fmt::Debug for SignalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SignalKind").field(&self.0).finish()
    }
}

/// Listens for `kind`: the returned [`Signal`] receives each delivery from now on.
///
/// The first call for a signal installs ito's handler for it, which stays for the life of
/// the process and replaces the signal's default action: after listening for `SIGINT` or
/// `SIGTERM`, the process no longer dies of them, and the program decides when to exit.
/// Later calls for the same signal only subscribe. Handlers other code installed through
/// signal-hook keep running beside ito's.
///
/// Fails with `ErrorKind::InvalidInput` for a signal that cannot be handled (`SIGKILL`,
/// `SIGSTOP`, `SIGILL`, `SIGFPE`, `SIGSEGV`) or a number that is not a signal.
///
/// ```
/// use ito::signal::unix::{SignalKind, signal};
/// let mut hup = signal(SignalKind::hangup()).unwrap();
/// signal_hook::low_level::raise(SignalKind::hangup().as_raw_value()).unwrap();
/// assert_eq!(ito::block_on(hup.recv()), Some(()));
///
/// let err = signal(SignalKind::from_raw(9)).unwrap_err(); // SIGKILL
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    Ok(Signal {
        kind,
        rx: subscribe(kind.0)?,
    })
}

/// Receives the deliveries of one signal, from [`signal`].
///
/// Every `Signal` of a kind sees each delivery; deliveries that come while nobody calls
/// [`recv`](Self::recv) coalesce into one (the OS coalesces pending signals too), and a
/// `Signal` never sees a delivery from before it was made.
///
/// ```
/// use ito::signal::unix::{SignalKind, signal};
/// let (mut a, mut b) = (
///     signal(SignalKind::user_defined2()).unwrap(),
///     signal(SignalKind::user_defined2()).unwrap(),
/// );
/// signal_hook::low_level::raise(SignalKind::user_defined2().as_raw_value()).unwrap();
/// assert_eq!(ito::block_on(a.recv()), Some(()));
/// assert_eq!(ito::block_on(b.recv()), Some(()));
/// ```
pub struct Signal {
    kind: SignalKind,
    rx: watch::Receiver<()>,
}

impl Signal {
    /// Waits for the next delivery not yet received. `None` would mean that no more can come;
    /// ito's signal thread never stops, so it does not happen.
    ///
    /// Cancel-safe: a delivery is received only when the future returns it.
    ///
    /// ```
    /// use ito::signal::unix::{SignalKind, signal};
    /// let mut quit = signal(SignalKind::quit()).unwrap();
    /// let waiter = ito::spawn(async move { quit.recv().await });
    /// # while !waiter.is_finished() {
    /// signal_hook::low_level::raise(SignalKind::quit().as_raw_value()).unwrap();
    /// # std::thread::sleep(std::time::Duration::from_millis(1));
    /// # }
    /// assert_eq!(waiter.wait(), Ok(Some(())));
    /// ```
    pub async fn recv(&mut self) -> Option<()> {
        self.rx.changed().await.ok()
    }

    /// Waits from plain code for the next delivery not yet received (handing a worker's place
    /// to another thread meanwhile, as [`Future::wait`](crate::Future::wait) does); fails with
    /// [`Cancelled`] if the calling task is cancelled while it waits.
    ///
    /// ```
    /// use ito::signal::unix::{SignalKind, signal};
    /// let mut alarm = signal(SignalKind::alarm()).unwrap();
    /// signal_hook::low_level::raise(SignalKind::alarm().as_raw_value()).unwrap();
    /// assert_eq!(alarm.recv_blocking(), Ok(()));
    /// ```
    pub fn recv_blocking(&mut self) -> Result<(), Cancelled> {
        self.rx.changed_blocking().map_err(|_| Cancelled)
    }

    /// The signal this listens for.
    ///
    /// ```
    /// use ito::signal::unix::{SignalKind, signal};
    /// let s = signal(SignalKind::window_change()).unwrap();
    /// assert_eq!(s.kind(), SignalKind::window_change());
    /// ```
    pub fn kind(&self) -> SignalKind {
        self.kind
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}
