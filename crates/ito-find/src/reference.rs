//! A sequential reference walker: plain `std::fs::read_dir` recursion, document 002's
//! `find_seq`, kept as simple as possible so that the parallel walk can be checked against
//! it (the tests compare the two on random trees).
//!
//! It supports the pattern, `types`, `max_depth` and `hidden`; it refuses a config that uses
//! `follow`, `gitignore`, `one_file_system` or `max_results`. Directories it cannot read are
//! skipped.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::config::Config;
use crate::kind::FileKind;
use crate::walk::base_name;

/// Every path the search described by `config` matches, sorted.
///
/// ```
/// use ito_find::{Config, Pattern};
/// let dir = std::env::temp_dir().join(format!("ito-find-ref-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("x/y")).unwrap();
/// let mut c = Config::new(Pattern::exact("y"));
/// c.paths = vec![dir.clone().into()];
/// let found = ito_find::reference::matches(&c).unwrap();
/// assert_eq!(found, vec![format!("{}/x/y", dir.display()).into_bytes()]);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn matches(config: &Config) -> io::Result<Vec<Vec<u8>>> {
    if config.follow || config.gitignore || config.one_file_system || config.max_results.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the reference walker supports only the pattern, types, max_depth and hidden",
        ));
    }
    let matcher = config
        .pattern
        .compile()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let max_depth = config.max_depth.unwrap_or(usize::MAX);
    let mut found = Vec::new();
    let dot = [".".into()];
    let paths = if config.paths.is_empty() {
        &dot[..]
    } else {
        &config.paths[..]
    };
    for root in paths {
        let Ok(meta) = fs::metadata(root).or_else(|_| fs::symlink_metadata(root)) else {
            continue;
        };
        let root = root.as_bytes();
        let kind = kind_of(&meta.file_type());
        if config.types.accepts(kind) && matcher.is_match(base_name(root)) {
            found.push(root.to_vec());
        }
        if meta.is_dir() && max_depth > 0 {
            let mut visit = |name: &[u8], path: &[u8], kind| {
                if config.types.accepts(kind) && matcher.is_match(name) {
                    found.push(path.to_vec());
                }
            };
            walk(root, 1, max_depth, config.hidden, &mut visit);
        }
    }
    found.sort();
    Ok(found)
}

/// Called with each entry's name, path and kind.
type Visit<'a> = dyn FnMut(&[u8], &[u8], Option<FileKind>) + 'a;

/// Visits the entries of `dir` (at `depth`) and, recursively, of its subdirectories.
fn walk(dir: &[u8], depth: usize, max_depth: usize, hidden: bool, visit: &mut Visit<'_>) {
    let Ok(entries) = fs::read_dir(Path::new(OsStr::from_bytes(dir))) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_bytes();
        if !hidden && name.starts_with(b".") {
            continue;
        }
        let Ok(ft) = entry.file_type() else { continue };
        let mut path = dir.to_vec();
        if !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        visit(name, &path, kind_of(&ft));
        if ft.is_dir() && depth < max_depth {
            walk(&path, depth + 1, max_depth, hidden, visit);
        }
    }
}

fn kind_of(ft: &fs::FileType) -> Option<FileKind> {
    if ft.is_file() {
        Some(FileKind::File)
    } else if ft.is_dir() {
        Some(FileKind::Dir)
    } else if ft.is_symlink() {
        Some(FileKind::Symlink)
    } else {
        None
    }
}
