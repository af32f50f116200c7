//! [`OpenOptions`]: how to open a [`File`](super::File).

use std::io;
use std::path::Path;

use super::File;
use super::blocking::asyncify;

/// Options for opening a file (`std::fs::OpenOptions`, whose meaning each method keeps);
/// [`open`](Self::open) runs on the blocking pool.
///
/// ```
/// use futures_util::io::AsyncWriteExt;
/// # let path = std::env::temp_dir().join(format!("ito-doc-open-options-{}", std::process::id()));
/// ito::block_on(async {
///     let mut log = ito::fs::OpenOptions::new().append(true).create(true).open(&path).await?;
///     log.write_all(b"one line\n").await?;
///     log.flush().await
/// })
/// .unwrap();
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions(std::fs::OpenOptions);

impl OpenOptions {
    /// Options with every mode off: set at least one of read, write or append.
    ///
    /// ```
    /// let opts = ito::fs::OpenOptions::new();
    /// # drop(opts);
    /// ```
    #[must_use]
    pub fn new() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Opens for reading.
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.read(true);
    /// ```
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.0.read(read);
        self
    }

    /// Opens for writing.
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.write(true);
    /// ```
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.0.write(write);
        self
    }

    /// Opens for appending: every write goes to the end of the file.
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.append(true);
    /// ```
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.0.append(append);
        self
    }

    /// Truncates an existing file to length 0 (needs write).
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.write(true).truncate(true);
    /// ```
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.0.truncate(truncate);
        self
    }

    /// Creates the file if it does not exist (needs write or append).
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.write(true).create(true);
    /// ```
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.0.create(create);
        self
    }

    /// Creates the file, failing with `AlreadyExists` if it exists (needs write or append).
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.write(true).create_new(true);
    /// ```
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.0.create_new(create_new);
        self
    }

    /// The permission bits a created file gets, before the umask (Unix only).
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.write(true).create(true).mode(0o600);
    /// ```
    #[cfg(unix)]
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        std::os::unix::fs::OpenOptionsExt::mode(&mut self.0, mode);
        self
    }

    /// Extra flags for `open(2)`, such as `O_NOFOLLOW` (Unix only).
    ///
    /// ```
    /// let mut opts = ito::fs::OpenOptions::new();
    /// opts.read(true).custom_flags(0);
    /// ```
    #[cfg(unix)]
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut self.0, flags);
        self
    }

    /// Opens `path` with these options, on the blocking pool.
    ///
    /// Cancel-safe in that nothing leaks: dropped while its job runs, the file may still be
    /// created, and the opened handle is closed.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// let err = ito::block_on(ito::fs::OpenOptions::new().open("x")).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidInput); // no mode chosen
    /// ```
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let opts = self.0.clone();
        let path = path.as_ref().to_owned();
        asyncify(move || opts.open(path)).await.map(File::from_std)
    }
}

impl Default for OpenOptions {
    /// [`OpenOptions::new`].
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

impl From<std::fs::OpenOptions> for OpenOptions {
    /// Keeps every option of the standard `OpenOptions`, the platform ones included.
    fn from(std: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions(std)
    }
}
