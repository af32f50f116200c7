//! The walk: reading one directory, and what each task does.
//!
//! A task gets one directory ([`DirJob`]) and walks it depth first with a stack of its own:
//! each subdirectory it finds is [`offer`](par::Spawner::offer)ed to a new task, and kept on
//! the stack when no permit is free; before each directory it reads, the task offers the
//! bottom of its stack again (the oldest directories, nearest the top of the tree) while
//! permits are free. A directory is opened relative to its parent's
//! descriptor (`openat(parent, name, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`) and read with
//! `getdents64` into a buffer that stays with the thread; the entry's `d_type` decides
//! whether it is a directory, with an `fstatat` only when the file system does not say
//! (`DT_UNKNOWN`) or to see through a link under `-L`. `-x` and `-L` add one `fstat` of each
//! directory opened (its device, and its inode for loop detection).

pub(crate) mod dirfd;
pub(crate) mod job;
pub(crate) mod par;

use std::cell::Cell;
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, RawDir, fstat, openat, statat};

use crate::ignores::{self, Ignores};
use crate::kind::{TypeFilter, kind_of};
use crate::matcher::NameMatcher;
use crate::output::{Batch, Flow, Output};
use crate::report::Reporter;
use dirfd::{DirFd, FdBudget};
use job::{Ancestor, DirJob};
use par::Spawner;

/// Bytes of the per-thread `getdents64` buffer (about a thousand short names per call).
const DENTS_BYTES: usize = 32 * 1024;

thread_local! {
    /// The `getdents64` buffer of this thread, lent to one directory read at a time.
    static DENTS: Cell<Option<Box<[MaybeUninit<u8>]>>> = const { Cell::new(None) };
}

/// Everything the tasks of one search share.
pub(crate) struct Walker {
    pub(crate) matcher: NameMatcher,
    pub(crate) types: TypeFilter,
    /// `usize::MAX` when unlimited.
    pub(crate) max_depth: usize,
    pub(crate) hidden: bool,
    pub(crate) gitignore: bool,
    pub(crate) follow: bool,
    pub(crate) one_file_system: bool,
    pub(crate) output: Output,
    pub(crate) report: Reporter,
    pub(crate) budget: Arc<FdBudget>,
    /// Directories read; each task adds its count when it ends.
    pub(crate) dirs_read: AtomicU64,
}

impl Walker {
    /// Tests a search path itself (depth 0) and returns the job of reading it, if it is a
    /// directory to enter. Runs on the caller's thread, before the walk.
    pub(crate) fn root(&self, path: &OsStr, batch: &mut Batch) -> (Flow, Option<DirJob>) {
        let bytes = path.as_bytes();
        // A search path is followed if it is a link (find -H); a broken one is a link.
        let stat = match statat(CWD, path, AtFlags::empty())
            .or_else(|_| statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW))
        {
            Ok(st) => st,
            Err(e) => {
                self.report.error(bytes, &io::Error::from(e));
                return (Flow::Continue, None);
            }
        };
        let ft = FileType::from_raw_mode(stat.st_mode);
        if self.types.accepts(kind_of(ft)) && self.matcher.is_match(base_name(bytes)) {
            let flow = self.output.emit(batch, b"", bytes, &self.report);
            if flow == Flow::Stop {
                return (flow, None);
            }
        }
        if ft != FileType::Directory || self.max_depth == 0 {
            return (Flow::Continue, None);
        }
        let mut job_path = bytes.to_vec();
        job_path.push(0);
        let ignores = if self.gitignore {
            ignores::above_root(bytes, prefix_len(bytes), &self.report)
        } else {
            None
        };
        let job = DirJob {
            path: job_path,
            name_at: 0,
            parent: None,
            depth: 0,
            follow: true,
            root_dev: stat.st_dev,
            ancestors: None,
            ignores,
        };
        (Flow::Continue, Some(job))
    }

    /// One task: reads `job`'s directory and everything below it that it does not hand to
    /// other tasks.
    pub(crate) fn task(&self, job: DirJob, sp: &Spawner<'_, '_, DirJob>) {
        let mut batch = Batch::default();
        let mut dents = DENTS
            .take()
            .unwrap_or_else(|| Box::new_uninit_slice(DENTS_BYTES));
        let mut stack = VecDeque::from([job]);
        let mut read = 0;
        while let Some(job) = stack.pop_back() {
            if sp.is_cancelled() {
                break;
            }
            // Permits came back since these were stacked: hand out the oldest, the nearest
            // the top of the tree, which hold the most work.
            while let Some(oldest) = stack.pop_front() {
                if let Err(oldest) = sp.offer(oldest) {
                    stack.push_front(oldest);
                    break;
                }
            }
            read += 1;
            if self.read_dir(job, sp, &mut stack, &mut batch, &mut dents) == Flow::Stop {
                sp.cancel();
                break;
            }
        }
        DENTS.set(Some(dents));
        self.dirs_read.fetch_add(read, Ordering::Relaxed);
        if self.output.write(&mut batch, &self.report) == Flow::Stop {
            sp.cancel();
        }
    }

    /// Reads one directory: tests every entry, offers or stacks its subdirectories.
    fn read_dir(
        &self,
        mut job: DirJob,
        sp: &Spawner<'_, '_, DirJob>,
        stack: &mut VecDeque<DirJob>,
        batch: &mut Batch,
        dents: &mut [MaybeUninit<u8>],
    ) -> Flow {
        let fd = match self.open(&job) {
            Ok(fd) => fd,
            Err(e) => {
                self.report.error(job.printed(), &io::Error::from(e));
                return Flow::Continue;
            }
        };
        // Our own descriptor is open: the parent's may close (if no sibling still needs it).
        job.parent = None;
        let mut ancestors = None;
        if self.follow || self.one_file_system {
            let st = match fstat(&fd) {
                Ok(st) => st,
                Err(e) => {
                    self.report.error(job.printed(), &io::Error::from(e));
                    return Flow::Continue;
                }
            };
            if self.one_file_system && st.st_dev != job.root_dev {
                return Flow::Continue;
            }
            if self.follow {
                if Ancestor::contains(&job.ancestors, st.st_dev, st.st_ino) {
                    self.report.error(
                        job.printed(),
                        &"file system loop: a link to one of its own ancestors, not followed",
                    );
                    return Flow::Continue;
                }
                ancestors = Some(Arc::new(Ancestor {
                    dev: st.st_dev,
                    ino: st.st_ino,
                    parent: job.ancestors.take(),
                }));
            }
        }
        let dir = Arc::new(DirFd::new(fd, &self.budget));
        let printed = job.printed();
        let mut prefix = Vec::with_capacity(printed.len() + 1);
        prefix.extend_from_slice(printed);
        if !printed.ends_with(b"/") {
            prefix.push(b'/');
        }
        let ignores: Ignores = if self.gitignore {
            ignores::with_dir(
                &job.ignores,
                dir.as_fd(),
                printed,
                prefix.len(),
                &self.report,
            )
        } else {
            None
        };
        let depth = job.depth + 1;
        let mut entries = RawDir::new(dir.as_fd(), dents);
        let mut scratch = Vec::new();
        while let Some(entry) = entries.next() {
            if sp.is_cancelled() {
                return Flow::Stop;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.report.error(printed, &io::Error::from(e));
                    break;
                }
            };
            let c_name = entry.file_name();
            let name = c_name.to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if (!self.hidden && name.starts_with(b".")) || (self.gitignore && name == b".git") {
                continue;
            }
            let mut ft = entry.file_type();
            if ft == FileType::Unknown {
                match statat(&*dir, c_name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => ft = FileType::from_raw_mode(st.st_mode),
                    Err(e) => {
                        self.report
                            .error(joined(&mut scratch, &prefix, name), &io::Error::from(e));
                        continue;
                    }
                }
            }
            let mut through_link = false;
            if ft == FileType::Symlink && self.follow {
                // A broken link stays a link.
                if let Ok(st) = statat(&*dir, c_name, AtFlags::empty()) {
                    ft = FileType::from_raw_mode(st.st_mode);
                    through_link = ft == FileType::Directory;
                }
            }
            let is_dir = ft == FileType::Directory;
            if ignores.is_some()
                && ignores::is_ignored(&ignores, joined(&mut scratch, &prefix, name), is_dir)
            {
                continue;
            }
            if self.types.accepts(kind_of(ft))
                && self.matcher.is_match(name)
                && self.output.emit(batch, &prefix, name, &self.report) == Flow::Stop
            {
                return Flow::Stop;
            }
            if is_dir && depth < self.max_depth {
                let mut path = Vec::with_capacity(prefix.len() + name.len() + 1);
                path.extend_from_slice(&prefix);
                path.extend_from_slice(name);
                path.push(0);
                let child = DirJob {
                    path,
                    name_at: prefix.len(),
                    parent: self.budget.may_keep().then(|| Arc::clone(&dir)),
                    depth,
                    follow: through_link,
                    root_dev: job.root_dev,
                    ancestors: ancestors.clone(),
                    ignores: ignores.clone(),
                };
                if let Err(child) = sp.offer(child) {
                    stack.push_back(child);
                }
            }
        }
        Flow::Continue
    }

    /// Opens `job`'s directory, relative to its parent's descriptor when it has one.
    fn open(&self, job: &DirJob) -> rustix::io::Result<OwnedFd> {
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !job.follow {
            flags |= OFlags::NOFOLLOW;
        }
        match &job.parent {
            Some(parent) => openat(&**parent, job.c_name(), flags, Mode::empty()),
            None => openat(CWD, job.c_path(), flags, Mode::empty()),
        }
    }
}

/// `prefix` + `name` in `scratch`.
fn joined<'a>(scratch: &'a mut Vec<u8>, prefix: &[u8], name: &[u8]) -> &'a [u8] {
    scratch.clear();
    scratch.extend_from_slice(prefix);
    scratch.extend_from_slice(name);
    scratch
}

/// The length of the prefix of `path`'s entries' printed paths (`path/`, or `path` if it
/// already ends with `/`).
fn prefix_len(path: &[u8]) -> usize {
    path.len() + usize::from(!path.ends_with(b"/"))
}

/// The name `find -name` tests for a search path: its last component, trailing slashes
/// ignored (`/` for the root, `.` for `.`).
pub(crate) fn base_name(path: &[u8]) -> &[u8] {
    let trimmed = match path.iter().rposition(|&b| b != b'/') {
        Some(end) => &path[..=end],
        None => return if path.is_empty() { path } else { b"/" },
    };
    match trimmed.iter().rposition(|&b| b == b'/') {
        Some(slash) => &trimmed[slash + 1..],
        None => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        assert_eq!(base_name(b"."), b".");
        assert_eq!(base_name(b"/"), b"/");
        assert_eq!(base_name(b"//"), b"/");
        assert_eq!(base_name(b"a/b/"), b"b");
        assert_eq!(base_name(b"/x/y"), b"y");
        assert_eq!(base_name(b"y"), b"y");
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix_len(b"/"), 1);
        assert_eq!(prefix_len(b"a"), 2);
        assert_eq!(prefix_len(b"a/"), 2);
    }
}
