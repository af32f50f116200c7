//! File kinds and the `-t` filter.

use rustix::fs::FileType;

/// The kinds `-t` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file (`-t f`).
    File,
    /// A directory (`-t d`); with `--follow`, also a symbolic link to one.
    Dir,
    /// A symbolic link (`-t l`); with `--follow`, only a broken one.
    Symlink,
}

/// Which kinds match; the empty filter accepts every entry, sockets and devices included.
///
/// ```
/// use ito_find::{FileKind, TypeFilter};
/// let any = TypeFilter::default();
/// assert!(any.accepts(None) && any.accepts(Some(FileKind::Dir)));
/// let files = TypeFilter::default().with(FileKind::File);
/// assert!(files.accepts(Some(FileKind::File)));
/// assert!(!files.accepts(Some(FileKind::Dir)) && !files.accepts(None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeFilter {
    bits: u8,
}

impl TypeFilter {
    /// This filter, also accepting `kind`.
    #[must_use]
    pub fn with(self, kind: FileKind) -> TypeFilter {
        TypeFilter {
            bits: self.bits | bit(kind),
        }
    }

    /// Whether an entry of `kind` (`None`: a socket, fifo or device) passes.
    #[inline]
    pub fn accepts(self, kind: Option<FileKind>) -> bool {
        self.bits == 0 || kind.is_some_and(|k| self.bits & bit(k) != 0)
    }
}

fn bit(kind: FileKind) -> u8 {
    match kind {
        FileKind::File => 1,
        FileKind::Dir => 2,
        FileKind::Symlink => 4,
    }
}

/// The `-t` kind of a `d_type` or `st_mode` file type.
#[inline]
pub(crate) fn kind_of(t: FileType) -> Option<FileKind> {
    match t {
        FileType::RegularFile => Some(FileKind::File),
        FileType::Directory => Some(FileKind::Dir),
        FileType::Symlink => Some(FileKind::Symlink),
        _ => None,
    }
}
