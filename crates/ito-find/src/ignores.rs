//! `--gitignore`: the stack of ignore files that applies to a directory.
//!
//! Each directory's `.gitignore` is read through the directory's descriptor when the
//! directory is read, compiled with the `ignore` crate's gitignore matcher, and pushed on
//! its parent's stack (an `Arc` list shared by the subdirectories). An entry is checked from
//! the innermost file outwards; the first file with a matching line decides (`!pattern`
//! re-includes). Above a search path, the `.gitignore` files of its ancestors up to the
//! repository root (the first directory holding `.git`) apply too, and so does that root's
//! `.git/info/exclude`; outside a repository no ancestor file applies. `.git` directories are
//! skipped. The global excludes file (`core.excludesFile`) is not read.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fd::BorrowedFd;
use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;

use crate::report::Reporter;

/// One ignore file on the stack.
#[derive(Debug)]
pub(crate) struct IgnoreLevel {
    gi: Gitignore,
    /// The path from the ignore file's directory to the search path it was found above,
    /// ending in `/`; empty for a file found during the walk.
    prefix: Vec<u8>,
    /// How many bytes of a printed path name that directory (with its separator): the
    /// rest, after `prefix`, is the path the file's patterns are matched against.
    strip: usize,
    parent: Option<Arc<IgnoreLevel>>,
}

/// The ignore files that apply to a directory, innermost first; `None` when there are none.
pub(crate) type Ignores = Option<Arc<IgnoreLevel>>;

/// Whether the entry at `path` (a printed path) is ignored.
pub(crate) fn is_ignored(stack: &Ignores, path: &[u8], is_dir: bool) -> bool {
    let mut level = stack.as_deref();
    let mut joined = Vec::new();
    while let Some(l) = level {
        let rest = path.get(l.strip..).unwrap_or_default();
        let rel = if l.prefix.is_empty() {
            rest
        } else {
            joined.clear();
            joined.extend_from_slice(&l.prefix);
            joined.extend_from_slice(rest);
            &joined[..]
        };
        match l.gi.matched(Path::new(OsStr::from_bytes(rel)), is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => level = l.parent.as_deref(),
        }
    }
    false
}

/// `stack` with the `.gitignore` of the directory open as `dir` (printed as `dir_path`,
/// whose entries' printed paths start after `strip` bytes) pushed on it, if it has one.
pub(crate) fn with_dir(
    stack: &Ignores,
    dir: BorrowedFd<'_>,
    dir_path: &[u8],
    strip: usize,
    report: &Reporter,
) -> Ignores {
    let text = match read_at(dir, ".gitignore") {
        Ok(Some(t)) => t,
        Ok(None) => return stack.clone(),
        Err(e) => {
            let mut p = dir_path.to_vec();
            p.extend_from_slice(b"/.gitignore");
            report.error(&p, &e);
            return stack.clone();
        }
    };
    let from = PathBuf::from(OsStr::from_bytes(dir_path)).join(".gitignore");
    push(stack, &[(from, text)], Vec::new(), strip, report)
}

/// The ignore files above the search path `root` (printed paths below it start after
/// `strip` bytes): its ancestors' `.gitignore` files up to the repository root and that
/// root's `.git/info/exclude`; `None` outside a repository.
pub(crate) fn above_root(root: &[u8], strip: usize, report: &Reporter) -> Ignores {
    let abs = std::fs::canonicalize(OsStr::from_bytes(root)).ok()?;
    // (file, contents, prefix), innermost first.
    let mut files: Vec<(PathBuf, String, Vec<u8>)> = Vec::new();
    let mut repo_found = false;
    for dir in abs.ancestors() {
        let prefix = relative_prefix(&abs, dir);
        if dir != abs {
            let file = dir.join(".gitignore");
            if let Some(text) = read_file(&file, report) {
                files.push((file, text, prefix.clone()));
            }
        }
        if dir.join(".git").exists() {
            let file = dir.join(".git/info/exclude");
            if let Some(text) = read_file(&file, report) {
                files.push((file, text, prefix));
            }
            repo_found = true;
            break;
        }
    }
    if !repo_found {
        return None;
    }
    let mut stack = None;
    for (file, text, prefix) in files.into_iter().rev() {
        stack = push(&stack, &[(file, text)], prefix, strip, report);
    }
    stack
}

/// `stack` with one level made of `files` pushed on it (unchanged if they have no patterns).
fn push(
    stack: &Ignores,
    files: &[(PathBuf, String)],
    prefix: Vec<u8>,
    strip: usize,
    report: &Reporter,
) -> Ignores {
    let mut b = GitignoreBuilder::new(".");
    for (file, text) in files {
        for line in text.lines() {
            if let Err(e) = b.add_line(Some(file.clone()), line) {
                report.error(file.as_os_str().as_bytes(), &e);
            }
        }
    }
    let gi = match b.build() {
        Ok(gi) if !gi.is_empty() => gi,
        Ok(_) => return stack.clone(),
        Err(e) => {
            report.error_message(&format!("cannot compile ignore patterns: {e}"));
            return stack.clone();
        }
    };
    Some(Arc::new(IgnoreLevel {
        gi,
        prefix,
        strip,
        parent: stack.clone(),
    }))
}

/// `abs` relative to its ancestor `dir`, with a trailing `/` (empty if they are equal).
fn relative_prefix(abs: &Path, dir: &Path) -> Vec<u8> {
    match abs.strip_prefix(dir) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            let mut p = rel.as_os_str().as_bytes().to_vec();
            p.push(b'/');
            p
        }
        _ => Vec::new(),
    }
}

/// The contents of `name` in `dir` (lossily UTF-8), `None` if there is no such file.
fn read_at(dir: BorrowedFd<'_>, name: &str) -> Result<Option<String>, std::io::Error> {
    let fd = match openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut bytes = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut bytes)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

fn read_file(path: &Path, report: &Reporter) -> Option<String> {
    match std::fs::read(path) {
        Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            report.error(path.as_os_str().as_bytes(), &e);
            None
        }
    }
}
