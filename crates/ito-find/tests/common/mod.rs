//! Helpers shared by the integration tests: temporary trees and running the binary.

#![allow(dead_code)] // each test file uses its own part

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary directory whose name does not start with a dot (so `--no-hidden` and
/// `find -name '.*' -prune` treat it as a plain directory).
pub(crate) fn temp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("itofind")
        .tempdir()
        .unwrap()
}

/// Makes the directories and empty files of `spec` under `root`: a path ending in `/` is a
/// directory, anything else a file (its parents are made too).
pub(crate) fn make(root: &Path, spec: &[&str]) {
    for s in spec {
        let p = root.join(s.trim_end_matches('/'));
        if s.ends_with('/') {
            fs::create_dir_all(&p).unwrap();
        } else {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, b"").unwrap();
        }
    }
}

/// The `ito-find` binary.
pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ito-find"))
}

/// Runs `ito-find args` in `dir`.
pub(crate) fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin().current_dir(dir).args(args).output().unwrap()
}

/// The lines of an output, sorted.
pub(crate) fn lines(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(out)
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

/// The NUL-separated records of an output, sorted.
pub(crate) fn records(out: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = out
        .split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    v.sort();
    v
}

/// `root` joined with the raw bytes `name`.
pub(crate) fn join_bytes(root: &Path, name: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(name))
}

/// Whether this process runs as root (permission bits do not stop it).
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
