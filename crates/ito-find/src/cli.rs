//! The command line of `ito-find`.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use crate::config::Config;
use crate::kind::FileKind;
use crate::matcher::{Pattern, PatternKind};
use crate::search::Search;

/// `ito-find [OPTIONS] PATTERN [PATH...]`.
#[derive(Parser, Debug)]
#[command(
    name = "ito-find",
    version,
    about = "Find files by name, in parallel; the first match can stop the search",
    long_about = "Find files by name, in parallel, on the ito runtime: one task per directory, \
        a bounded number of tasks, and --first stops every task at the first match.\n\n\
        PATTERN matches the file name: exactly by default, as a glob with --glob, as a regex \
        (anywhere in the name) with --regex. Hidden files are searched, as find does. \
        Matches are printed as they are found, one per line.\n\n\
        Exit status: 0 if something matched, 1 if nothing matched, 2 if an error occurred \
        (errors are reported on stderr and do not stop the search) or an argument is wrong."
)]
pub struct Cli {
    /// The file name to look for.
    #[arg(value_name = "PATTERN", allow_hyphen_values = false)]
    pub pattern: OsString,
    /// Where to search [default: .]; a path that is a symbolic link is followed.
    #[arg(value_name = "PATH")]
    pub paths: Vec<OsString>,
    /// Read PATTERN as a glob (`*.rs`, `file-?.[ch]`, `{a,b}*`), matching the whole name.
    #[arg(short = 'g', long, conflicts_with = "regex")]
    pub glob: bool,
    /// Read PATTERN as a regular expression matching anywhere in the name.
    #[arg(short = 'E', long)]
    pub regex: bool,
    /// Ignore case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Stop at the first match (--max-results 1).
    #[arg(short = '1', long, conflicts_with = "max_results")]
    pub first: bool,
    /// Stop after N matches.
    #[arg(long, value_name = "N")]
    pub max_results: Option<u64>,
    /// End each match with NUL instead of a newline (for xargs -0).
    #[arg(short = '0', long = "print0")]
    pub null: bool,
    /// Only entries of this type: f (file), d (directory), l (symbolic link); repeatable.
    #[arg(
        short = 't',
        long = "type",
        value_enum,
        value_delimiter = ',',
        value_name = "TYPE"
    )]
    pub types: Vec<TypeArg>,
    /// Look at most N levels down (the PATHs are level 0, their entries level 1).
    #[arg(short = 'd', long, value_name = "N")]
    pub max_depth: Option<usize>,
    /// Search hidden files and directories (the default).
    #[arg(long, overrides_with = "no_hidden")]
    pub hidden: bool,
    /// Skip names that start with a dot, and do not enter such directories.
    #[arg(long, overrides_with = "hidden")]
    pub no_hidden: bool,
    /// Skip what .gitignore files (and .git/info/exclude) ignore, and .git directories.
    #[arg(long)]
    pub gitignore: bool,
    /// Follow symbolic links; a link to one of its own ancestors is reported, not followed.
    #[arg(short = 'L', long)]
    pub follow: bool,
    /// Do not enter directories on other file systems.
    #[arg(short = 'x', long = "one-file-system", visible_aliases = ["xdev", "mount"])]
    pub one_file_system: bool,
    /// Worker threads [default: number of CPUs].
    #[arg(short = 'j', long = "threads", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print the matches sorted, after the whole search (with --max-results: the first N
    /// in order).
    #[arg(long)]
    pub sort: bool,
}

/// A `-t` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TypeArg {
    /// A regular file.
    #[value(name = "f", alias = "file")]
    File,
    /// A directory.
    #[value(name = "d", alias = "dir", alias = "directory")]
    Dir,
    /// A symbolic link.
    #[value(name = "l", alias = "symlink")]
    Symlink,
}

impl Cli {
    /// The search this command line describes.
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = ito_find::cli::Cli::parse_from(["ito-find", "-g", "*.rs", "src", "-t", "f", "-1"]);
    /// let c = cli.config();
    /// assert_eq!(c.pattern.kind, ito_find::PatternKind::Glob);
    /// assert_eq!(c.max_results, Some(1));
    /// assert_eq!(c.paths, vec![std::ffi::OsString::from("src")]);
    /// ```
    pub fn config(&self) -> Config {
        let kind = if self.glob {
            PatternKind::Glob
        } else if self.regex {
            PatternKind::Regex
        } else {
            PatternKind::Exact
        };
        let mut c = Config::new(Pattern {
            text: self.pattern.clone(),
            kind,
            ignore_case: self.ignore_case,
        });
        c.paths = self.paths.clone();
        for t in &self.types {
            c.types = c.types.with(match t {
                TypeArg::File => FileKind::File,
                TypeArg::Dir => FileKind::Dir,
                TypeArg::Symlink => FileKind::Symlink,
            });
        }
        c.max_depth = self.max_depth;
        c.hidden = !self.no_hidden;
        c.gitignore = self.gitignore;
        c.follow = self.follow;
        c.one_file_system = self.one_file_system;
        c.max_results = if self.first {
            Some(1)
        } else {
            self.max_results
        };
        c.sort = self.sort;
        c.null_separated = self.null;
        if let Some(n) = self.threads {
            c.workers = usize::from(n);
        }
        c
    }
}

/// The `ito-find` program: parses the command line, searches, returns the exit status.
/// A bad argument or pattern is one line on stderr and status 2.
pub fn main() -> ExitCode {
    use clap::error::ErrorKind;
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ito-find: {} (see --help)", first_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match Search::new(cli.config()) {
        Ok(search) => ExitCode::from(search.run().exit_code()),
        Err(e) => {
            eprintln!("ito-find: {e}");
            ExitCode::from(2)
        }
    }
}

/// A clap error on one line: its message lines (before the usage, tips and the blank line
/// that ends them) joined, without the `error: ` tag.
fn first_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("tip:"))
        .collect();
    let joined = lines.join(" ");
    match joined.strip_prefix("error: ") {
        Some(rest) => rest.to_owned(),
        None if joined.is_empty() => "invalid arguments".to_owned(),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_map_to_config() {
        let c = Cli::parse_from([
            "ito-find",
            "-E",
            "-i",
            "^a",
            "x",
            "y",
            "-t",
            "f,l",
            "--no-hidden",
            "-L",
            "-x",
            "-j",
            "3",
            "-0",
            "--max-results",
            "5",
            "--gitignore",
            "--sort",
            "-d",
            "2",
        ])
        .config();
        assert_eq!(c.pattern.kind, PatternKind::Regex);
        assert!(c.pattern.ignore_case);
        assert_eq!(c.paths.len(), 2);
        assert!(c.types.accepts(Some(FileKind::Symlink)) && !c.types.accepts(Some(FileKind::Dir)));
        assert!(!c.hidden && c.follow && c.one_file_system && c.gitignore && c.sort);
        assert!(c.null_separated);
        assert_eq!(
            (c.workers, c.max_results, c.max_depth),
            (3, Some(5), Some(2))
        );
    }

    #[test]
    fn bad_arguments_are_refused() {
        for args in [
            &["ito-find"][..],
            &["ito-find", "-g", "-E", "x"],
            &["ito-find", "-1", "--max-results", "2", "x"],
            &["ito-find", "-j", "0", "x"],
            &["ito-find", "-t", "q", "x"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn first_line_strips_the_tag() {
        assert_eq!(first_line("error: bad\n\nUsage: x"), "bad");
        assert_eq!(
            first_line("error: the following were not provided:\n  <PATTERN>\n\nUsage: x"),
            "the following were not provided: <PATTERN>"
        );
    }
}
