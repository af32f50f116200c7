//! [`File`]: an open file whose reads, writes and seeks run on the blocking pool.

use std::fmt;
use std::fs::{File as StdFile, Metadata, Permissions};
use std::io;
use std::path::Path;
use std::sync::Arc;

use super::OpenOptions;
use super::blocking::asyncify;
use super::file_state::Inner;
use crate::sync::Mutex;

/// An open file, used from async code (tokio's `fs::File`).
///
/// It implements `futures_io`'s [`AsyncRead`](futures_io::AsyncRead),
/// [`AsyncWrite`](futures_io::AsyncWrite) and [`AsyncSeek`](futures_io::AsyncSeek) (take
/// `read_to_end`, `write_all`, `seek`, `BufReader` from `futures-util`'s `io` module), and
/// tokio's three traits with the `tokio-io` feature.
///
/// Each operation runs on the runtime's blocking pool, one at a time, through an internal
/// buffer of at most 2 MiB:
///
/// - A **write** copies the bytes into the buffer, starts writing them, and returns at once:
///   the bytes are then in flight. Dropping the write's future, or the `File`, does not stop
///   them. The next operation waits for them first, and [`flush`](futures_io::AsyncWrite::poll_flush)
///   waits for them and reports their error, so **flush before dropping** a file you wrote to
///   (the error of a write nobody flushed is lost). Writes land in the order they were made.
/// - A **read** that finds bytes read ahead returns them; otherwise it reads up to the size
///   asked for into the buffer and returns from it. A read whose future is dropped while its
///   job runs loses nothing: the bytes stay in the buffer for the next read.
/// - A **seek** waits for what is in flight, then seeks. A seek dropped while in flight still
///   moves the position; polled again with the same target, `poll_seek` waits for that seek
///   rather than starting a second one.
///
/// ```
/// use futures_util::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
/// use std::io::SeekFrom;
/// # let path = std::env::temp_dir().join(format!("ito-doc-file-{}", std::process::id()));
/// ito::block_on(async {
///     let mut f = ito::fs::File::options().read(true).write(true).create(true).open(&path).await?;
///     f.write_all(b"hello, file").await?;
///     f.seek(SeekFrom::Start(7)).await?;
///     let mut rest = String::new();
///     f.read_to_string(&mut rest).await?;
///     assert_eq!(rest, "file");
///     std::io::Result::Ok(())
/// })
/// .unwrap();
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub struct File {
    pub(super) std: Arc<StdFile>,
    /// Behind an async lock for the methods that take `&self`; the trait methods take
    /// `&mut self` and reach it with `get_mut`.
    pub(super) inner: Mutex<Inner>,
}

impl File {
    /// Opens a file for reading (`std::fs::File::open`).
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// let missing = std::env::temp_dir().join("ito-doc-no-such-file");
    /// let err = ito::block_on(ito::fs::File::open(missing)).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// ```
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens a file for writing, creating it or truncating it (`std::fs::File::create`).
    ///
    /// ```
    /// use futures_util::io::AsyncWriteExt;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-create-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let mut f = ito::fs::File::create(&path).await?;
    ///     f.write_all(b"new").await?;
    ///     f.flush().await
    /// })
    /// .unwrap();
    /// assert_eq!(std::fs::read(&path).unwrap(), b"new");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates a new file for reading and writing; fails with `AlreadyExists` if it exists
    /// (`std::fs::File::create_new`).
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-create-new-{}", std::process::id()));
    /// ito::block_on(async {
    ///     ito::fs::File::create_new(&path).await?;
    ///     let again = ito::fs::File::create_new(&path).await.unwrap_err();
    ///     assert_eq!(again.kind(), ErrorKind::AlreadyExists);
    ///     std::io::Result::Ok(())
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// New [`OpenOptions`], to open a file in another mode.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("ito-doc-options-{}", std::process::id()));
    /// let opts = ito::fs::File::options().append(true).create(true).clone();
    /// let f = ito::block_on(opts.open(&path)).unwrap();
    /// # drop(f);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    #[must_use]
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Wraps a standard file. Its position is where the standard file's was.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("ito-doc-from-std-{}", std::process::id()));
    /// let std_file = std::fs::File::create(&path).unwrap();
    /// let f = ito::fs::File::from_std(std_file);
    /// # drop(f);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn from_std(std: StdFile) -> File {
        File {
            std: Arc::new(std),
            inner: Mutex::new(Inner::new()),
        }
    }

    /// Waits for what is in flight, then hands back the standard file, positioned where
    /// this `File`'s reader stands (bytes read ahead are given back). Fails with the error of
    /// a write nobody flushed, or of moving the position back.
    ///
    /// ```
    /// use futures_util::io::AsyncWriteExt;
    /// use std::io::Read;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-into-std-{}", std::process::id()));
    /// let mut std_file = ito::block_on(async {
    ///     let mut f = ito::fs::File::options().read(true).write(true).create(true).open(&path).await?;
    ///     f.write_all(b"abc").await?;
    ///     f.into_std().await
    /// })
    /// .unwrap();
    /// let mut rest = String::new();
    /// std_file.read_to_string(&mut rest).unwrap();
    /// assert_eq!(rest, ""); // the position is after the write
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn into_std(mut self) -> io::Result<StdFile> {
        let inner = self.inner.get_mut();
        inner.settle(&self.std).await?;
        if let Some(e) = inner.take_write_err() {
            return Err(e);
        }
        // A `metadata` future dropped while its job runs may still hold the handle: then the
        // caller gets a duplicate of the descriptor, which shares the position.
        match Arc::try_unwrap(self.std) {
            Ok(std) => Ok(std),
            Err(shared) => shared.try_clone(),
        }
    }

    /// Waits for what is in flight, then flushes data and metadata to the disk
    /// (`std::fs::File::sync_all`). Fails with the error of a write not yet reported.
    ///
    /// Cancel-safe in the sense that nothing is lost: dropped, the sync may still run.
    ///
    /// ```
    /// use futures_util::io::AsyncWriteExt;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-sync-all-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let mut f = ito::fs::File::create(&path).await?;
    ///     f.write_all(b"durable").await?;
    ///     f.sync_all().await
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn sync_all(&self) -> io::Result<()> {
        self.flush_inner().await?;
        let std = Arc::clone(&self.std);
        asyncify(move || std.sync_all()).await
    }

    /// As [`sync_all`](Self::sync_all), without the metadata that reading the data does not
    /// need (`std::fs::File::sync_data`).
    ///
    /// ```
    /// use futures_util::io::AsyncWriteExt;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-sync-data-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let mut f = ito::fs::File::create(&path).await?;
    ///     f.write_all(b"data").await?;
    ///     f.sync_data().await
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn sync_data(&self) -> io::Result<()> {
        self.flush_inner().await?;
        let std = Arc::clone(&self.std);
        asyncify(move || std.sync_data()).await
    }

    /// Waits for what is in flight, then truncates or extends the file to `size` bytes; the
    /// position does not move (`std::fs::File::set_len`).
    ///
    /// Not cancel-safe: dropped while its job runs, the length may still change.
    ///
    /// ```
    /// use futures_util::io::AsyncWriteExt;
    /// # let path = std::env::temp_dir().join(format!("ito-doc-set-len-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let mut f = ito::fs::File::create(&path).await?;
    ///     f.write_all(b"0123456789").await?;
    ///     f.set_len(4).await?;
    ///     assert_eq!(f.metadata().await?.len(), 4);
    ///     std::io::Result::Ok(())
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        inner.set_len(&self.std, size).await
    }

    /// The file's metadata (`std::fs::File::metadata`). It does not wait for a write in
    /// flight: [`flush`](futures_io::AsyncWrite::poll_flush) first to see its length.
    ///
    /// Cancel-safe: it changes nothing.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("ito-doc-file-metadata-{}", std::process::id()));
    /// # std::fs::write(&path, b"12345").unwrap();
    /// let meta = ito::block_on(async { ito::fs::File::open(&path).await?.metadata().await }).unwrap();
    /// assert_eq!(meta.len(), 5);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let std = Arc::clone(&self.std);
        asyncify(move || std.metadata()).await
    }

    /// Changes the file's permissions (`std::fs::File::set_permissions`).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("ito-doc-file-perms-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let f = ito::fs::File::create(&path).await?;
    ///     let mut perms = f.metadata().await?.permissions();
    ///     perms.set_readonly(true);
    ///     f.set_permissions(perms).await?;
    ///     assert!(f.metadata().await?.permissions().readonly());
    ///     std::io::Result::Ok(())
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        let std = Arc::clone(&self.std);
        asyncify(move || std.set_permissions(perm)).await
    }

    /// Waits for what is in flight, then opens a second handle on the same file, sharing its
    /// OS position (`std::fs::File::try_clone`). Bytes this handle read ahead stay with it.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("ito-doc-try-clone-{}", std::process::id()));
    /// ito::block_on(async {
    ///     let f = ito::fs::File::create(&path).await?;
    ///     let g = f.try_clone().await?;
    ///     assert_eq!(g.metadata().await?.len(), 0);
    ///     std::io::Result::Ok(())
    /// })
    /// .unwrap();
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn try_clone(&self) -> io::Result<File> {
        {
            let mut inner = self.inner.lock().await;
            std::future::poll_fn(|cx| inner.poll_idle(cx)).await?;
        }
        let std = Arc::clone(&self.std);
        asyncify(move || std.try_clone()).await.map(File::from_std)
    }

    /// Waits for what is in flight and reports a write error not yet reported.
    async fn flush_inner(&self) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        std::future::poll_fn(|cx| inner.poll_flush(cx)).await
    }
}

impl From<StdFile> for File {
    /// [`File::from_std`].
    fn from(std: StdFile) -> File {
        File::from_std(std)
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("std", &self.std)
            .finish_non_exhaustive()
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for File {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.std.as_raw_fd()
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for File {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.std.as_fd()
    }
}
