//! Files and directories for async code: `std::fs` run on the blocking pool, as tokio's
//! `fs` does.
//!
//! The OS has no readiness for regular files (epoll refuses them: they count as always
//! ready, and a read still waits for the disk), so every
//! call here is a job on the runtime's [blocking pool](crate::spawn_blocking): the task that
//! awaits it costs no worker while the job runs, and the pool thread that runs it is a
//! thread of its own. The free functions ([`read`], [`write`](fn@write), [`metadata`], ...) mirror
//! their `std::fs` namesakes, one job each. [`read_dir`] reads entries in batches. A
//! [`File`] keeps one operation in flight with an internal buffer and implements
//! `futures_io`'s `AsyncRead`, `AsyncWrite` and `AsyncSeek` (and tokio's with the
//! `tokio-io` feature); its documentation says what a dropped read, write or seek does.
//!
//! Errors are `std::io::Error`s as `std::fs` gives them, so `?` works as with `std::fs`.
//! A job that never runs (the runtime is shutting down) fails with `ErrorKind::Other`.
//! `docs/fs-and-signals.md` has the design.
//!
//! ```
//! use futures_util::io::{AsyncReadExt, AsyncWriteExt};
//! # let dir = std::env::temp_dir().join(format!("ito-doc-fs-{}", std::process::id()));
//! ito::block_on(async {
//!     ito::fs::create_dir_all(&dir).await?;
//!     let mut f = ito::fs::File::create(dir.join("greeting")).await?;
//!     f.write_all(b"hello").await?;
//!     f.flush().await?; // a write is in flight until flushed
//!     let mut text = String::new();
//!     ito::fs::File::open(dir.join("greeting")).await?.read_to_string(&mut text).await?;
//!     assert_eq!(text, "hello");
//!     ito::fs::remove_dir_all(&dir).await
//! })
//! .unwrap();
//! ```

mod blocking;
mod buf;
mod contents;
mod dirs;
mod file;
mod file_io;
mod file_state;
mod names;
mod open_options;
mod read_dir;

pub use contents::{copy, read, read_to_string, write};
pub use dirs::{create_dir, create_dir_all, remove_dir, remove_dir_all};
pub use file::File;
pub use names::{
    canonicalize, hard_link, metadata, read_link, remove_file, rename, set_permissions,
    symlink_metadata, try_exists,
};
pub use open_options::OpenOptions;
pub use read_dir::{DirEntry, ReadDir, read_dir};
