//! `ito-bench find-tree`: a deterministic tree shaped like a home directory (see the module
//! docs of `find` for its shape).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;

use super::TARGET;

/// Arguments of `find-tree`.
#[derive(Args, Debug)]
#[command(about = "Document 002: make a deterministic tree shaped like a home directory")]
pub(crate) struct FindTreeArgs {
    /// Directories to make (document 002: 35000).
    #[arg(long, default_value_t = 35_000)]
    dirs: usize,
    /// Files to make (document 002: 31000).
    #[arg(long, default_value_t = 31_000)]
    files: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 2)]
    seed: u64,
    /// Where to make it (must not exist, or be an empty directory).
    #[arg(long)]
    out: PathBuf,
}

/// `ito-bench find-tree`.
pub(crate) fn tree_command(args: &FindTreeArgs) -> ExitCode {
    if let Ok(mut d) = fs::read_dir(&args.out) {
        if d.next().is_some() {
            return crate::usage_error(&format!(
                "--out {} exists and is not empty",
                args.out.display()
            ));
        }
    }
    let start = Instant::now();
    match make_tree(&args.out, args.dirs, args.files, args.seed) {
        Ok(entries) => {
            let line = serde_json::json!({
                "experiment": "find-tree",
                "out": args.out.display().to_string(),
                "dirs": args.dirs,
                "files": args.files,
                "seed": args.seed,
                "entries": entries,
                "seconds": start.elapsed().as_secs_f64(),
            });
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "ito-bench: cannot make the tree in {}: {e}",
                args.out.display()
            );
            ExitCode::FAILURE
        }
    }
}

/// xorshift64*: small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const DIR_WORDS: [&str; 16] = [
    "src",
    "lib",
    "node_modules",
    "cache",
    "config",
    "docs",
    "build",
    "share",
    "projects",
    "local",
    "tmp",
    "photos",
    "music",
    "include",
    "test",
    "pkg",
];
const FILE_WORDS: [&str; 12] = [
    "index", "main", "README", "notes", "data", "image", "module", "config", "test", "util",
    "package", "log",
];
const EXTS: [&str; 10] = [
    ".js", ".rs", ".txt", ".md", ".json", ".jpg", ".h", ".py", ".toml", "",
];

/// Makes the tree; returns its number of entries.
pub(super) fn make_tree(out: &Path, dirs: usize, files: usize, seed: u64) -> io::Result<u64> {
    fs::create_dir_all(out)?;
    let mut rng = Rng::new(seed);
    // (path, depth); index 0 is the root.
    let mut all: Vec<(PathBuf, u32)> = vec![(out.to_path_buf(), 0)];
    let top = 48.min(dirs.max(1));
    for i in 0..dirs {
        let parent = if i < top {
            0
        } else {
            let n = all.len();
            match rng.below(100) {
                // Nested chains: one of the last few directories made.
                0..=54 => n - 1 - rng.below(8.min(n - 1)),
                // Anywhere.
                55..=84 => 1 + rng.below(n - 1),
                // Under a top-level directory.
                _ => 1 + rng.below(top),
            }
        };
        let parent = if all[parent].1 >= 40 { 0 } else { parent };
        let hidden = if rng.below(10) == 0 { "." } else { "" };
        let word = DIR_WORDS[rng.below(DIR_WORDS.len())];
        let path = all[parent].0.join(format!("{hidden}{word}-{i:x}"));
        fs::create_dir(&path)?;
        let depth = all[parent].1 + 1;
        all.push((path, depth));
    }
    for i in 0..files {
        // More files near the top: u² is skewed towards early (shallow) directories.
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let dir = ((u * u) * all.len() as f64) as usize;
        let hidden = if rng.below(10) == 0 { "." } else { "" };
        let word = FILE_WORDS[rng.below(FILE_WORDS.len())];
        let ext = EXTS[rng.below(EXTS.len())];
        fs::File::create(
            all[dir.min(all.len() - 1)]
                .0
                .join(format!("{hidden}{word}-{i:x}{ext}")),
        )?;
    }
    fs::File::create(out.join(TARGET))?;
    Ok((dirs + files + 1) as u64)
}

/// Counts the entries below `dir` (not following links).
pub(super) fn count_entries(dir: &Path) -> io::Result<u64> {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d)? {
            let e = e?;
            n += 1;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            }
        }
    }
    Ok(n)
}
