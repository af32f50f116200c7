//! [`Search`]: a checked [`Config`], run on an ito runtime of its own.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::Config;
use crate::matcher::{NameMatcher, PatternError};
use crate::output::{Batch, Flow, Output, SharedBuf};
use crate::report::Reporter;
use crate::walk::dirfd::FdBudget;
use crate::walk::{Walker, par};

/// A search ready to run.
///
/// ```
/// use ito_find::{Config, Pattern, Search};
/// let dir = std::env::temp_dir().join(format!("ito-find-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("a/b")).unwrap();
/// std::fs::write(dir.join("a/b/notes.txt"), "").unwrap();
///
/// let mut config = Config::new(Pattern::exact("notes.txt"));
/// config.paths = vec![dir.clone().into()];
/// config.workers = 2;
/// let mut out = Vec::new();
/// let outcome = Search::new(config).unwrap().run_into(&mut out, &mut std::io::sink());
/// assert_eq!(outcome.matches, 1);
/// assert_eq!(outcome.exit_code(), 0);
/// assert!(out.ends_with(b"a/b/notes.txt\n"));
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct Search {
    config: Config,
    matcher: NameMatcher,
}

/// What a [`Config`] cannot be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The pattern does not compile.
    Pattern(PatternError),
    /// `workers` is 0.
    NoWorkers,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Pattern(e) => e.fmt(f),
            ConfigError::NoWorkers => f.write_str("the number of workers must be at least 1"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Outcome {
    /// Matches found (at most `max_results`).
    pub matches: u64,
    /// Errors reported (unreadable or vanished directories, loops, write failures).
    pub errors: u64,
    /// Whether the output's reader went away (`EPIPE`) before the search ended.
    pub output_closed: bool,
    /// Directories the walk went into (opened, or failed to open), the search paths
    /// included: fewer than the tree has when `--first` or `--max-results` stopped it.
    pub dirs_read: u64,
}

impl Outcome {
    /// The exit status: 2 if an error was reported, else 0 if something matched, else 1.
    ///
    /// ```
    /// let o = ito_find::Outcome { matches: 3, errors: 0, output_closed: false, dirs_read: 9 };
    /// assert_eq!(o.exit_code(), 0);
    /// assert_eq!(ito_find::Outcome { errors: 1, ..o }.exit_code(), 2);
    /// assert_eq!(ito_find::Outcome { matches: 0, ..o }.exit_code(), 1);
    /// ```
    pub fn exit_code(&self) -> u8 {
        if self.errors > 0 {
            2
        } else if self.matches > 0 {
            0
        } else {
            1
        }
    }
}

impl Search {
    /// Checks `config` and compiles its pattern.
    ///
    /// ```
    /// let mut c = ito_find::Config::new(ito_find::Pattern::exact("x"));
    /// c.workers = 0;
    /// assert_eq!(ito_find::Search::new(c).unwrap_err(), ito_find::ConfigError::NoWorkers);
    /// ```
    pub fn new(config: Config) -> Result<Search, ConfigError> {
        if config.workers == 0 {
            return Err(ConfigError::NoWorkers);
        }
        let matcher = config.pattern.compile().map_err(ConfigError::Pattern)?;
        Ok(Search { config, matcher })
    }

    /// Runs the search, printing to stdout (a line at a time when it is a terminal, in
    /// batches otherwise) and reporting errors on stderr.
    ///
    /// ```no_run
    /// let c = ito_find::Config::new(ito_find::Pattern::exact("Cargo.toml"));
    /// let outcome = ito_find::Search::new(c).unwrap().run();
    /// std::process::exit(outcome.exit_code().into());
    /// ```
    pub fn run(&self) -> Outcome {
        let tty = io::stdout().is_terminal();
        self.run_with(Box::new(io::stdout()), Box::new(io::stderr()), tty)
    }

    /// Runs the search, writing the matches to `out` and the errors to `err`.
    ///
    /// ```
    /// let mut c = ito_find::Config::new(ito_find::Pattern::exact("nothing-has-this-name"));
    /// c.paths = vec!["/nonexistent-ito-find-path".into()];
    /// let (mut out, mut err) = (Vec::new(), Vec::new());
    /// let o = ito_find::Search::new(c).unwrap().run_into(&mut out, &mut err);
    /// assert_eq!((o.matches, o.errors, o.exit_code()), (0, 1, 2));
    /// assert!(String::from_utf8_lossy(&err).contains("/nonexistent-ito-find-path"));
    /// ```
    pub fn run_into(&self, out: &mut Vec<u8>, err: &mut dyn Write) -> Outcome {
        let captured = SharedBuf::default();
        let errors = SharedBuf::default();
        let outcome = self.run_with(Box::new(captured.clone()), Box::new(errors.clone()), false);
        out.extend_from_slice(&captured.take());
        let _ = err.write_all(&errors.take());
        outcome
    }

    /// Runs the search, writing the matches to `out` (each one at once if `flush_each`, else
    /// in batches) and the errors to `err`. Blocks until the search is over.
    ///
    /// ```
    /// let c = ito_find::Config::new(ito_find::Pattern::exact("nothing-has-this-name"));
    /// let o = ito_find::Search::new(c)
    ///     .unwrap()
    ///     .run_with(Box::new(std::io::sink()), Box::new(std::io::sink()), false);
    /// assert_eq!(o.matches, 0);
    /// ```
    pub fn run_with(
        &self,
        out: Box<dyn Write + Send>,
        err: Box<dyn Write + Send>,
        flush_each: bool,
    ) -> Outcome {
        let c = &self.config;
        let terminator = if c.null_separated { 0 } else { b'\n' };
        let walker = Arc::new(Walker {
            matcher: self.matcher.clone(),
            types: c.types,
            max_depth: c.max_depth.unwrap_or(usize::MAX),
            hidden: c.hidden,
            gitignore: c.gitignore,
            follow: c.follow,
            one_file_system: c.one_file_system,
            output: Output::new(out, terminator, flush_each, c.max_results, c.sort),
            report: Reporter::new(err),
            budget: FdBudget::from_rlimit(),
            dirs_read: AtomicU64::new(0),
        });
        let dot = [OsString::from(".")];
        let paths = if c.paths.is_empty() {
            &dot[..]
        } else {
            &c.paths[..]
        };
        let mut batch = Batch::default();
        let mut roots = Vec::new();
        let mut flow = if c.max_results == Some(0) {
            Flow::Stop
        } else {
            Flow::Continue
        };
        for path in paths {
            if flow == Flow::Stop {
                break;
            }
            let (f, job) = walker.root(path, &mut batch);
            flow = f;
            roots.extend(job);
        }
        if walker.output.write(&mut batch, &walker.report) == Flow::Stop {
            flow = Flow::Stop;
        }
        if flow == Flow::Continue && !roots.is_empty() {
            self.walk(&walker, roots);
        }
        let matches = walker.output.finish(&walker.report);
        Outcome {
            matches,
            errors: walker.report.errors(),
            output_closed: walker.output.closed(),
            dirs_read: walker.dirs_read.load(Ordering::Relaxed),
        }
    }

    /// The parallel part: the roots' directories on a runtime of `workers` threads.
    fn walk(&self, walker: &Arc<Walker>, roots: Vec<crate::walk::job::DirJob>) {
        let c = &self.config;
        let rt = match ito::Runtime::builder().workers(c.workers).build() {
            Ok(rt) => rt,
            Err(e) => {
                walker
                    .report
                    .error_message(&format!("cannot start the runtime: {e}"));
                return;
            }
        };
        let permits = c.permits.unwrap_or(4 * c.workers);
        let finished = par::run(&rt, permits, roots, |job, sp| walker.task(job, sp));
        if let Some(msg) = finished.panic {
            walker.report.error_message(&format!(
                "internal error: a search task panicked ({msg}); the search was stopped"
            ));
        }
    }
}
