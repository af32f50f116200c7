//! Directory file descriptors and the bound on how many stay open.
//!
//! A directory's descriptor is open while the directory is read. After that it stays open
//! only as long as some subdirectory that still has to be opened holds it (an
//! `Arc<DirFd>`), so that the subdirectory is opened with `openat(parent, name)` instead of
//! by its whole path. In a depth-first walk those are the directories along the current path
//! that still have unvisited subdirectories: as many as the tree is deep, which can exceed
//! the process's limit (`ulimit -n`, often 1024). So [`FdBudget`] counts open descriptors,
//! and a subdirectory found while the count is at the budget's limit gets no parent
//! descriptor: it is opened by its path (`openat(AT_FDCWD, path)`). Open descriptors are then
//! at most the limit plus one per directory being read at that moment (one per running task).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::process::{Resource, getrlimit};

/// The most directory descriptors kept open for later `openat`s, whatever the rlimit.
const MAX_KEPT: usize = 4096;

/// Counts open directory descriptors against a limit.
#[derive(Debug)]
pub(crate) struct FdBudget {
    open: AtomicUsize,
    limit: usize,
}

impl FdBudget {
    /// A budget of half the soft `RLIMIT_NOFILE` (leaving the rest to everything else),
    /// at most [`MAX_KEPT`] and at least 8.
    pub(crate) fn from_rlimit() -> Arc<FdBudget> {
        let soft = getrlimit(Resource::Nofile)
            .current
            .map_or(MAX_KEPT, |n| usize::try_from(n).unwrap_or(MAX_KEPT));
        Self::with_limit((soft / 2).clamp(8, MAX_KEPT))
    }

    /// A budget keeping at most `limit` descriptors open for later `openat`s.
    pub(crate) fn with_limit(limit: usize) -> Arc<FdBudget> {
        Arc::new(FdBudget {
            open: AtomicUsize::new(0),
            limit,
        })
    }

    /// Whether one more descriptor may be kept open for a subdirectory.
    #[inline]
    pub(crate) fn may_keep(&self) -> bool {
        self.open.load(Ordering::Relaxed) < self.limit
    }

    /// The descriptors open now (for tests).
    #[cfg(test)]
    pub(crate) fn open_now(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// An open directory, counted in its budget until dropped (closed).
#[derive(Debug)]
pub(crate) struct DirFd {
    fd: OwnedFd,
    budget: Arc<FdBudget>,
}

impl DirFd {
    /// Counts `fd` in `budget`.
    pub(crate) fn new(fd: OwnedFd, budget: &Arc<FdBudget>) -> DirFd {
        budget.open.fetch_add(1, Ordering::Relaxed);
        DirFd {
            fd,
            budget: Arc::clone(budget),
        }
    }
}

impl AsFd for DirFd {
    #[inline]
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for DirFd {
    fn drop(&mut self) {
        self.budget.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{CWD, Mode, OFlags, openat};

    #[test]
    fn counts_open_descriptors() {
        let budget = FdBudget::with_limit(1);
        assert!(budget.may_keep());
        let fd = openat(CWD, ".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let d = DirFd::new(fd, &budget);
        assert_eq!(budget.open_now(), 1);
        assert!(!budget.may_keep());
        drop(d);
        assert_eq!(budget.open_now(), 0);
    }

    #[test]
    fn rlimit_budget_is_bounded() {
        let b = FdBudget::from_rlimit();
        assert!((8..=MAX_KEPT).contains(&b.limit));
    }
}
