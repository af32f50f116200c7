//! [`read_dir`]: a directory's entries, fetched in batches on the blocking pool.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs::{FileType, Metadata};
use std::future::Future as StdFuture;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::blocking::{asyncify, lost, run};
use crate::sync::oneshot;

/// How many entries one blocking job reads (tokio reads 32): enough to pay for the trip to
/// the blocking pool, few enough that the first entries come soon.
const BATCH: usize = 32;

/// The entries of the directory at `path` (`std::fs::read_dir`), as a [`ReadDir`].
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-read-dir-{}", std::process::id()));
/// # std::fs::create_dir_all(dir.join("sub")).unwrap();
/// # std::fs::write(dir.join("a.txt"), b"a").unwrap();
/// let names = ito::block_on(async {
///     let mut entries = ito::fs::read_dir(&dir).await?;
///     let mut names = Vec::new();
///     while let Some(entry) = entries.next_entry().await? {
///         names.push(entry.file_name());
///     }
///     names.sort();
///     std::io::Result::Ok(names)
/// })
/// .unwrap();
/// assert_eq!(names, ["a.txt", "sub"]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let path = path.as_ref().to_owned();
    let std = asyncify(move || std::fs::read_dir(path)).await?;
    Ok(ReadDir {
        state: State::Idle(Batch {
            entries: VecDeque::new(),
            rest: Some(std),
        }),
    })
}

/// A directory's entries, from [`read_dir`]: [`next_entry`](Self::next_entry), or a
/// [`Stream`](futures_core::Stream) of `io::Result<DirEntry>`.
///
/// Entries are read 32 at a time on the blocking pool; the order is the OS's.
///
/// ```
/// use futures_util::StreamExt;
/// # let dir = std::env::temp_dir().join(format!("ito-doc-read-dir-stream-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # std::fs::write(dir.join("only"), b"").unwrap();
/// let entries: Vec<_> = ito::block_on(async {
///     ito::fs::read_dir(&dir).await.unwrap().collect::<Vec<_>>().await
/// });
/// assert_eq!(entries.len(), 1);
/// assert_eq!(entries[0].as_ref().unwrap().file_name(), "only");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct ReadDir {
    state: State,
}

struct Batch {
    entries: VecDeque<io::Result<DirEntry>>,
    /// The directory stream; `None` once it ended.
    rest: Option<std::fs::ReadDir>,
}

enum State {
    Idle(Batch),
    Busy(oneshot::Receiver<Batch>),
}

impl ReadDir {
    /// The next entry, or `None` after the last.
    ///
    /// Cancel-safe: a batch being read when the future is dropped is kept for the next call.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-next-entry-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let mut entries = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// assert!(ito::block_on(entries.next_entry()).unwrap().is_none()); // empty
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        std::future::poll_fn(|cx| self.poll_next_entry(cx)).await
    }

    /// Polls for the next entry: what [`next_entry`](Self::next_entry) does, for a
    /// hand-written future.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-poll-next-entry-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let mut entries = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// let next = ito::block_on(std::future::poll_fn(|cx| entries.poll_next_entry(cx)));
    /// assert!(next.unwrap().is_none());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn poll_next_entry(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        loop {
            match &mut self.state {
                State::Idle(batch) => {
                    if let Some(entry) = batch.entries.pop_front() {
                        return Poll::Ready(entry.map(Some));
                    }
                    let Some(mut rest) = batch.rest.take() else {
                        return Poll::Ready(Ok(None));
                    };
                    self.state = State::Busy(run(move || {
                        let entries: VecDeque<_> = rest
                            .by_ref()
                            .take(BATCH)
                            .map(|e| e.map(|std| DirEntry { std: Arc::new(std) }))
                            .collect();
                        let ended = entries.len() < BATCH;
                        Batch {
                            entries,
                            rest: (!ended).then_some(rest),
                        }
                    }));
                }
                State::Busy(rx) => {
                    let res = ready!(Pin::new(rx).poll(cx));
                    match res {
                        Ok(batch) => self.state = State::Idle(batch),
                        Err(_) => {
                            self.state = State::Idle(Batch {
                                entries: VecDeque::new(),
                                rest: None,
                            });
                            return Poll::Ready(Err(lost()));
                        }
                    }
                }
            }
        }
    }
}

impl futures_core::Stream for ReadDir {
    type Item = io::Result<DirEntry>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .poll_next_entry(cx)
            .map(|res| res.transpose())
    }
}

impl fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (buffered, busy) = match &self.state {
            State::Idle(b) => (b.entries.len(), false),
            State::Busy(_) => (0, true),
        };
        f.debug_struct("ReadDir")
            .field("buffered", &buffered)
            .field("reading", &busy)
            .finish()
    }
}

/// One entry of a [`ReadDir`] (`std::fs::DirEntry`).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ito-doc-dir-entry-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # std::fs::write(dir.join("f"), b"123").unwrap();
/// ito::block_on(async {
///     let entry = ito::fs::read_dir(&dir).await?.next_entry().await?.unwrap();
///     assert_eq!(entry.path(), dir.join("f"));
///     assert!(entry.file_type().await?.is_file());
///     assert_eq!(entry.metadata().await?.len(), 3);
///     std::io::Result::Ok(())
/// })
/// .unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct DirEntry {
    std: Arc<std::fs::DirEntry>,
}

impl DirEntry {
    /// The entry's full path: the directory's path joined with the entry's name.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-entry-path-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// # std::fs::write(dir.join("p"), b"").unwrap();
    /// let mut rd = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// let entry = ito::block_on(rd.next_entry()).unwrap().unwrap();
    /// assert_eq!(entry.path(), dir.join("p"));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn path(&self) -> PathBuf {
        self.std.path()
    }

    /// The entry's name, without its directory.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-entry-name-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// # std::fs::write(dir.join("n"), b"").unwrap();
    /// let mut rd = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// assert_eq!(ito::block_on(rd.next_entry()).unwrap().unwrap().file_name(), "n");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn file_name(&self) -> OsString {
        self.std.file_name()
    }

    /// The entry's metadata, not following a symbolic link (`std::fs::DirEntry::metadata`).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-entry-meta-{}", std::process::id()));
    /// # std::fs::create_dir_all(dir.join("d")).unwrap();
    /// let mut rd = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// let entry = ito::block_on(rd.next_entry()).unwrap().unwrap();
    /// assert!(ito::block_on(entry.metadata()).unwrap().is_dir());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let std = Arc::clone(&self.std);
        asyncify(move || std.metadata()).await
    }

    /// The entry's file type, not following a symbolic link (`std::fs::DirEntry::file_type`;
    /// most platforms answer it from the directory listing itself).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("ito-doc-entry-type-{}", std::process::id()));
    /// # std::fs::create_dir_all(dir.join("d")).unwrap();
    /// let mut rd = ito::block_on(ito::fs::read_dir(&dir)).unwrap();
    /// let entry = ito::block_on(rd.next_entry()).unwrap().unwrap();
    /// assert!(ito::block_on(entry.file_type()).unwrap().is_dir());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub async fn file_type(&self) -> io::Result<FileType> {
        let std = Arc::clone(&self.std);
        asyncify(move || std.file_type()).await
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DirEntry").field(&self.path()).finish()
    }
}
