//! Making and removing directories: [`create_dir`], [`create_dir_all`], [`remove_dir`],
//! [`remove_dir_all`]. (Listing one is [`read_dir`](super::read_dir).)
//!
//! Each runs its `std::fs` namesake on the blocking pool. Dropped while its job runs, the
//! operation still completes; the result is lost.

use std::io;
use std::path::Path;

use super::blocking::asyncify;

/// Creates a directory; its parent must exist (`std::fs::create_dir`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-create-dir-{}", std::process::id()));
/// ito::block_on(ito::fs::create_dir(&dir)).unwrap();
/// assert!(dir.is_dir());
/// let again = ito::block_on(ito::fs::create_dir(&dir)).unwrap_err();
/// assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
/// # std::fs::remove_dir(&dir).unwrap();
/// ```
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::create_dir(path)).await
}

/// Creates a directory and every missing parent; succeeds if it already exists
/// (`std::fs::create_dir_all`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-create-dir-all-{}", std::process::id()));
/// ito::block_on(ito::fs::create_dir_all(dir.join("a/b/c"))).unwrap();
/// assert!(dir.join("a/b/c").is_dir());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::create_dir_all(path)).await
}

/// Removes an empty directory; fails if it is not empty (`std::fs::remove_dir`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-remove-dir-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("child")).unwrap();
/// assert!(ito::block_on(ito::fs::remove_dir(&dir)).is_err()); // not empty
/// ito::block_on(ito::fs::remove_dir(dir.join("child"))).unwrap();
/// ito::block_on(ito::fs::remove_dir(&dir)).unwrap();
/// assert!(!dir.exists());
/// ```
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::remove_dir(path)).await
}

/// Removes a directory and everything in it, not following symbolic links
/// (`std::fs::remove_dir_all`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-remove-dir-all-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("a/b")).unwrap();
/// std::fs::write(dir.join("a/b/f"), b"x").unwrap();
/// ito::block_on(ito::fs::remove_dir_all(&dir)).unwrap();
/// assert!(!dir.exists());
/// ```
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::remove_dir_all(path)).await
}
