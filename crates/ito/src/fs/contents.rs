//! Whole-file contents: [`read`], [`read_to_string`], [`write`](fn@write), [`copy`].
//!
//! Each runs its `std::fs` namesake on the blocking pool. Dropped while its job runs, the
//! operation still completes (a `write` or `copy` still changes the file); the result is lost.

use std::io;
use std::path::Path;

use super::blocking::asyncify;

/// The whole contents of a file (`std::fs::read`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-read-{}", std::process::id()));
/// std::fs::write(&path, b"bytes").unwrap();
/// assert_eq!(ito::block_on(ito::fs::read(&path)).unwrap(), b"bytes");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::read(path)).await
}

/// The whole contents of a file as a string; fails with `InvalidData` if it is not UTF-8
/// (`std::fs::read_to_string`).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-read-to-string-{}", std::process::id()));
/// std::fs::write(&path, "text").unwrap();
/// assert_eq!(ito::block_on(ito::fs::read_to_string(&path)).unwrap(), "text");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let path = path.as_ref().to_owned();
    asyncify(move || std::fs::read_to_string(path)).await
}

/// Writes `contents` as the whole file, creating or truncating it (`std::fs::write`). The
/// bytes are copied, since the write runs on another thread.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("ito-doc-write-{}", std::process::id()));
/// ito::block_on(ito::fs::write(&path, "written")).unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "written");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    let contents = contents.as_ref().to_owned();
    asyncify(move || std::fs::write(path, contents)).await
}

/// Copies the contents and permissions of `from` to `to`, replacing `to`; returns the
/// number of bytes copied (`std::fs::copy`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-copy-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("from"), b"12345").unwrap();
/// let n = ito::block_on(ito::fs::copy(dir.join("from"), dir.join("to"))).unwrap();
/// assert_eq!(n, 5);
/// assert_eq!(std::fs::read(dir.join("to")).unwrap(), b"12345");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
    asyncify(move || std::fs::copy(from, to)).await
}
