//! What to search for and how: everything the command line can say.

use std::ffi::OsString;

use crate::kind::TypeFilter;
use crate::matcher::Pattern;

/// One search. Build it with [`Config::new`] and set the fields; [`Search::new`] checks it.
///
/// ```
/// use ito_find::{Config, FileKind, Pattern};
/// let mut c = Config::new(Pattern::exact("Cargo.toml"));
/// c.paths = vec![".".into()];
/// c.types = c.types.with(FileKind::File);
/// c.max_depth = Some(3);
/// c.max_results = Some(1); // --first
/// assert!(ito_find::Search::new(c).is_ok());
/// ```
///
/// [`Search::new`]: crate::Search::new
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The name pattern.
    pub pattern: Pattern,
    /// Where to search (`.` when empty). A path that names a symbolic link is followed, as
    /// `find -H` and `fd` do.
    pub paths: Vec<OsString>,
    /// Which kinds of entries may match (`-t`).
    pub types: TypeFilter,
    /// Entries deeper than this are not looked at; the paths themselves are at depth 0, their
    /// entries at depth 1 (`find -maxdepth`).
    pub max_depth: Option<usize>,
    /// Whether names starting with `.` are searched (and hidden directories entered). `true`
    /// by default, as in `find`.
    pub hidden: bool,
    /// Whether `.gitignore` files (and `.git/info/exclude`) are respected, and `.git`
    /// directories skipped.
    pub gitignore: bool,
    /// Whether symbolic links are followed (`-L`); a link back to one of its own ancestor
    /// directories is reported, not followed.
    pub follow: bool,
    /// Whether to stay on the file systems of the paths (`-x`): a mount point can match but
    /// is not entered.
    pub one_file_system: bool,
    /// Stop after this many matches; `Some(1)` is `--first`. With [`sort`](Self::sort), the
    /// whole tree is searched and the first matches in sorted order are printed.
    pub max_results: Option<u64>,
    /// Print the matches sorted (byte order) once the search is over, instead of as found.
    pub sort: bool,
    /// End each match with NUL instead of a newline (`-0`).
    pub null_separated: bool,
    /// Worker threads of the runtime (`-j`); at least 1.
    pub workers: usize,
    /// How many tasks may exist at once beyond the roots (document 002's semaphore); `None`:
    /// four per worker, the document's choice.
    pub permits: Option<usize>,
}

impl Config {
    /// The defaults: search `.` for `pattern`, hidden files included, every kind, no depth or
    /// result limit, one worker per CPU.
    ///
    /// ```
    /// let c = ito_find::Config::new(ito_find::Pattern::exact("x"));
    /// assert!(c.hidden && !c.follow && c.max_results.is_none());
    /// ```
    pub fn new(pattern: Pattern) -> Config {
        Config {
            pattern,
            paths: Vec::new(),
            types: TypeFilter::default(),
            max_depth: None,
            hidden: true,
            gitignore: false,
            follow: false,
            one_file_system: false,
            max_results: None,
            sort: false,
            null_separated: false,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            permits: None,
        }
    }
}
