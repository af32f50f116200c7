//! One directory still to read, and the chain of directories above it (for `-L`).

use std::ffi::CStr;
use std::sync::Arc;

use super::dirfd::DirFd;
use crate::ignores::Ignores;

/// A directory to read.
pub(crate) struct DirJob {
    /// The directory's path as printed, followed by a NUL (so that it, and its last
    /// component, can be passed to `openat` without copying).
    pub(crate) path: Vec<u8>,
    /// Where the last component starts in `path`.
    pub(crate) name_at: usize,
    /// The open parent directory, if it was kept for us (see `dirfd`): then the directory is
    /// opened with `openat(parent, name)`, else with `openat(AT_FDCWD, path)`.
    pub(crate) parent: Option<Arc<DirFd>>,
    /// 0 for a search path, 1 for its subdirectories, and so on.
    pub(crate) depth: usize,
    /// Open it even if it is a symbolic link (a search path, or a link `-L` follows).
    pub(crate) follow: bool,
    /// `-x`: the device of the search path it was found under.
    pub(crate) root_dev: u64,
    /// `-L`: the directories above it.
    pub(crate) ancestors: Option<Arc<Ancestor>>,
    /// `--gitignore`: the ignore files that apply to its entries' parent (itself excluded).
    pub(crate) ignores: Ignores,
}

impl DirJob {
    /// The path as printed.
    #[inline]
    pub(crate) fn printed(&self) -> &[u8] {
        &self.path[..self.path.len() - 1]
    }

    /// The whole path, NUL-terminated.
    #[inline]
    pub(crate) fn c_path(&self) -> &CStr {
        CStr::from_bytes_with_nul(&self.path).expect("a job's path ends with its only NUL")
    }

    /// The last component, NUL-terminated.
    #[inline]
    pub(crate) fn c_name(&self) -> &CStr {
        CStr::from_bytes_with_nul(&self.path[self.name_at..])
            .expect("a job's path ends with its only NUL")
    }
}

/// A directory above the one being read, identified by device and inode.
#[derive(Debug)]
pub(crate) struct Ancestor {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) parent: Option<Arc<Ancestor>>,
}

impl Ancestor {
    /// Whether `(dev, ino)` is `chain` or one of its ancestors.
    pub(crate) fn contains(chain: &Option<Arc<Ancestor>>, dev: u64, ino: u64) -> bool {
        let mut a = chain.as_deref();
        while let Some(x) = a {
            if x.dev == dev && x.ino == ino {
                return true;
            }
            a = x.parent.as_deref();
        }
        false
    }
}
