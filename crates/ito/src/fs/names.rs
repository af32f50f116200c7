//! Names, links and metadata: [`rename`], [`remove_file`], [`hard_link`], [`read_link`],
//! [`canonicalize`], [`metadata`], [`symlink_metadata`], [`set_permissions`],
//! [`try_exists`].
//!
//! Each runs its `std::fs` namesake on the blocking pool. Dropped while its job runs, the
//! operation still completes (a rename still happens); the result is lost.

use std::fs::{Metadata, Permissions};
use std::io;
use std::path::{Path, PathBuf};

use super::blocking::asyncify;

/// Renames `from` to `to`, replacing `to` if it is a file (`std::fs::rename`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-rename-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("old"), b"x").unwrap();
/// ito::block_on(ito::fs::rename(dir.join("old"), dir.join("new"))).unwrap();
/// assert!(!dir.join("old").exists() && dir.join("new").exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
    asyncify(move || std::fs::rename(from, to)).await
}

/// Removes a file (`std::fs::remove_file`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-remove-file-{}", std::process::id()));
/// std::fs::write(&path, b"x").unwrap();
/// ito::block_on(ito::fs::remove_file(&path)).unwrap();
/// let again = ito::block_on(ito::fs::remove_file(&path)).unwrap_err();
/// assert_eq!(again.kind(), std::io::ErrorKind::NotFound);
/// ```
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::remove_file(path)).await
}

/// Makes `link` a second name of the file `original` (`std::fs::hard_link`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-hard-link-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("a"), b"shared").unwrap();
/// ito::block_on(ito::fs::hard_link(dir.join("a"), dir.join("b"))).unwrap();
/// assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"shared");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (original, link) = (original.as_ref().to_owned(), link.as_ref().to_owned());
    asyncify(move || std::fs::hard_link(original, link)).await
}

/// Where a symbolic link points (`std::fs::read_link`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-read-link-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::os::unix::fs::symlink("target", dir.join("link")).unwrap();
/// let to = ito::block_on(ito::fs::read_link(dir.join("link"))).unwrap();
/// assert_eq!(to, std::path::Path::new("target"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::read_link(path)).await
}

/// The absolute path with every symbolic link, `.` and `..` resolved; the path must exist
/// (`std::fs::canonicalize`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-canonicalize-{}", std::process::id()));
/// # std::fs::create_dir_all(dir.join("sub")).unwrap();
/// let real = ito::block_on(ito::fs::canonicalize(dir.join("sub/.."))).unwrap();
/// assert_eq!(real, std::fs::canonicalize(&dir).unwrap());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::canonicalize(path)).await
}

/// The metadata of what `path` names, following symbolic links (`std::fs::metadata`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-metadata-{}", std::process::id()));
/// std::fs::write(&path, b"four").unwrap();
/// let meta = ito::block_on(ito::fs::metadata(&path)).unwrap();
/// assert!(meta.is_file());
/// assert_eq!(meta.len(), 4);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::metadata(path)).await
}

/// The metadata of `path` itself, not following a symbolic link
/// (`std::fs::symlink_metadata`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-symlink-metadata-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
/// let meta = ito::block_on(ito::fs::symlink_metadata(dir.join("dangling"))).unwrap();
/// assert!(meta.file_type().is_symlink());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::symlink_metadata(path)).await
}

/// Changes the permissions of what `path` names (`std::fs::set_permissions`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-set-permissions-{}", std::process::id()));
/// std::fs::write(&path, b"x").unwrap();
/// let mut perms = std::fs::metadata(&path).unwrap().permissions();
/// perms.set_readonly(true);
/// ito::block_on(ito::fs::set_permissions(&path, perms)).unwrap();
/// assert!(std::fs::metadata(&path).unwrap().permissions().readonly());
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn set_permissions(path: impl AsRef<Path>, perm: Permissions) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::set_permissions(path, perm)).await
}

/// Whether `path` names something, following symbolic links: `Ok(false)` if it does not,
/// an error if that cannot be told (a directory on the way denies access)
/// (`std::fs::exists`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-try-exists-{}", std::process::id()));
/// assert!(!ito::block_on(ito::fs::try_exists(&path)).unwrap());
/// std::fs::write(&path, b"").unwrap();
/// assert!(ito::block_on(ito::fs::try_exists(&path)).unwrap());
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    let path = path.as_ref().to_owned();
    asyncify(move || path.try_exists()).await
}
