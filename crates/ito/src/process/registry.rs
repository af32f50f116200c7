//! The process registry: names for processes ([`register`], [`whereis`], [`unregister`]).
//!
//! Names are per runtime, as they are per node in Erlang: a name registered by code running on
//! one runtime (a task of it, or a thread inside its `block_on`; elsewhere, the global runtime)
//! is found only from that runtime. One map from (runtime, name) to [`AnyPid`] behind a mutex
//! (registration is rare; lookups are a hash and a clone). A process also remembers its names (in its extras), and forgets them
//! in the registry as it ends, before its links and monitors hear of it: a supervisor that
//! restarts it finds the name free.
//!
//! Lock order: the registry, then a process's extras (in [`register`]); a process that ends
//! takes its names under its own lock and releases it before it takes the registry's.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::pid::{AnyPid, Pid, ProcessId};

/// A registered name: the runtime it was registered on (its number, never reused, unlike
/// the address of a freed runtime) and the name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Name {
    runtime: u64,
    name: Arc<str>,
}

impl Name {
    /// `name` on the runtime the calling code runs on.
    fn here(name: Arc<str>) -> Name {
        Name {
            runtime: crate::runtime::current().id,
            name,
        }
    }
}

fn table() -> MutexGuard<'static, HashMap<Name, AnyPid>> {
    static TABLE: OnceLock<Mutex<HashMap<Name, AnyPid>>> = OnceLock::new();
    TABLE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Why [`register`] refused a name.
///
/// ```
/// use ito::process::{self, Mailbox, RegisterError};
/// let p = process::spawn(|_: Mailbox<()>| async {});
/// p.on_exit().wait().unwrap();
/// assert_eq!(process::register("doc-dead", &p), Err(RegisterError::NotAlive));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// Another live process has this name.
    Taken(ProcessId),
    /// The process has ended.
    NotAlive,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::Taken(id) => write!(f, "the name is taken by process {id}"),
            RegisterError::NotAlive => f.write_str("the process has ended"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// Gives `pid` the name `name` until the process ends (or [`unregister`]). A process may
/// have several names; a name, one process.
///
/// ```
/// use ito::process::{self, Mailbox, RegisterError};
/// let p = process::spawn(|mut mb: Mailbox<u8>| async move { mb.recv().await; });
/// process::register("doc-logger", &p).unwrap();
/// let q = process::spawn(|_: Mailbox<u8>| async {});
/// assert_eq!(process::register("doc-logger", &q), Err(RegisterError::Taken(p.id())));
/// process::whereis::<u8>("doc-logger").unwrap().send(1).unwrap();
/// p.on_exit().wait().unwrap();
/// assert!(process::whereis::<u8>("doc-logger").is_none());
/// ```
pub fn register<M: Send + 'static>(
    name: impl Into<Arc<str>>,
    pid: &Pid<M>,
) -> Result<(), RegisterError> {
    let name = Name::here(name.into());
    let mut t = table();
    if let Some(holder) = t.get(&name) {
        if holder.is_alive() {
            return Err(RegisterError::Taken(holder.id()));
        }
        // Its process ended and is about to remove it: the name is free.
    }
    let any = pid.erase();
    if !any.ctl().add_name(&name) {
        return Err(RegisterError::NotAlive);
    }
    t.insert(name, any);
    Ok(())
}

/// The process named `name`, if it is alive and receives `M`s.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let p = process::spawn(|mut mb: Mailbox<String>| async move { mb.recv().await; });
/// process::register("doc-whereis", &p).unwrap();
/// assert_eq!(process::whereis::<String>("doc-whereis"), Some(p.clone()));
/// assert_eq!(process::whereis::<u8>("doc-whereis"), None); // another message type
/// p.kill();
/// ```
pub fn whereis<M: Send + 'static>(name: &str) -> Option<Pid<M>> {
    whereis_any(name)?.downcast()
}

/// The process named `name`, of any message type, if it is alive.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
/// process::register("doc-whereis-any", &p).unwrap();
/// assert_eq!(process::whereis_any("doc-whereis-any").map(|a| a.id()), Some(p.id()));
/// p.kill();
/// ```
pub fn whereis_any(name: &str) -> Option<AnyPid> {
    let name = Name::here(name.into());
    table().get(&name).filter(|p| p.is_alive()).cloned()
}

/// Removes the name `name`; whether it was registered.
///
/// ```
/// use ito::process::{self, Mailbox};
/// let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
/// process::register("doc-unregister", &p).unwrap();
/// assert!(process::unregister("doc-unregister"));
/// assert!(!process::unregister("doc-unregister"));
/// p.kill();
/// ```
pub fn unregister(name: &str) -> bool {
    let name = Name::here(name.into());
    let removed = table().remove(&name);
    removed.is_some()
}

/// A process that ends forgets `name`, if the name is still its own.
pub(crate) fn forget(name: &Name, id: ProcessId) {
    let removed = {
        let mut t = table();
        match t.get(name) {
            Some(p) if p.id() == id => t.remove(name),
            _ => None,
        }
    };
    drop(removed); // outside the lock: it may be the last handle of the block
}
