//! # ito-find — a parallel `find` on ito
//!
//! Document 002's recursive search for a file name, as a real command: one ito task per
//! directory, a bounded number of tasks (a permit that is not free means the directory is
//! walked inline), and the first match stopping every task (`--first`). Directories are read
//! through descriptors relative to their parent (`openat` + `getdents64`), matches are
//! printed as bytes, a line at a time, never interleaved.
//!
//! The binary is `ito-find [OPTIONS] PATTERN [PATH...]` (see [`cli::Cli`]); the library runs
//! the same search in-process:
//!
//! ```
//! use ito_find::{Config, FileKind, Pattern, PatternKind, Search};
//! let dir = std::env::temp_dir().join(format!("ito-find-lib-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("src/bin")).unwrap();
//! std::fs::write(dir.join("src/lib.rs"), "").unwrap();
//! std::fs::write(dir.join("src/bin/main.rs"), "").unwrap();
//!
//! let mut c = Config::new(Pattern { kind: PatternKind::Glob, ..Pattern::exact("*.rs") });
//! c.paths = vec![dir.clone().into()];
//! c.types = c.types.with(FileKind::File);
//! c.sort = true;
//! let mut out = Vec::new();
//! let outcome = Search::new(c).unwrap().run_into(&mut out, &mut std::io::stderr());
//! assert_eq!(outcome.matches, 2);
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.ends_with("src/bin/main.rs\n") || text.ends_with("src/lib.rs\n"));
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! `docs/find.md` describes the design (the walk, descriptors, output, cancellation,
//! bounded parallelism) and the measurements against GNU find and fd.

#![warn(missing_docs)]

pub mod cli;
mod config;
mod ignores;
mod kind;
mod matcher;
mod output;
pub mod reference;
mod report;
mod search;
mod walk;

pub use config::Config;
pub use kind::{FileKind, TypeFilter};
pub use matcher::{NameMatcher, Pattern, PatternError, PatternKind};
pub use search::{ConfigError, Outcome, Search};
