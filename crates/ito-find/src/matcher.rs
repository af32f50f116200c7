//! Matching a file name (the last component of a path, as bytes) against the pattern.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;

use globset::{Candidate, GlobBuilder, GlobMatcher};
use regex::bytes::{Regex, RegexBuilder};

/// How the pattern is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PatternKind {
    /// The name must equal the pattern (document 002's search). The default.
    #[default]
    Exact,
    /// A shell glob matched against the whole name (`*`, `?`, `[a-z]`, `{a,b}`), as
    /// `find -name` does.
    Glob,
    /// A regular expression that must match somewhere in the name, as `fd` does; anchor it
    /// with `^...$` to match the whole name.
    Regex,
}

/// A pattern that could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    /// The pattern as given (lossily converted to text).
    pub pattern: String,
    /// Why it was refused (the glob or regex parser's message, on one line).
    pub reason: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad pattern '{}': {}", self.pattern, self.reason)
    }
}

impl std::error::Error for PatternError {}

/// A compiled name pattern.
///
/// ```
/// use ito_find::{NameMatcher, PatternKind};
/// let m = NameMatcher::new(PatternKind::Glob, "*.rs".as_ref(), false).unwrap();
/// assert!(m.is_match(b"main.rs"));
/// assert!(!m.is_match(b"main.c"));
/// let exact = NameMatcher::new(PatternKind::Exact, "Cargo.toml".as_ref(), true).unwrap();
/// assert!(exact.is_match(b"cargo.TOML"));
/// assert!(NameMatcher::new(PatternKind::Regex, "(".as_ref(), false).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct NameMatcher {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    /// Byte equality.
    Exact(Box<[u8]>),
    /// ASCII pattern, ASCII case folding (the name must be the same length).
    ExactAsciiCaseless(Box<[u8]>),
    Glob(GlobMatcher),
    Regex(Regex),
}

impl NameMatcher {
    /// Compiles `pattern`; `ignore_case` folds case (Unicode simple case folding, or ASCII
    /// folding for an exact pattern that is ASCII or not UTF-8).
    ///
    /// A glob or regex pattern must be UTF-8; an exact pattern may be any bytes.
    pub fn new(
        kind: PatternKind,
        pattern: &OsStr,
        ignore_case: bool,
    ) -> Result<NameMatcher, PatternError> {
        let bytes = pattern.as_bytes();
        let error = |reason: String| PatternError {
            pattern: pattern.to_string_lossy().into_owned(),
            reason: one_line(&reason),
        };
        let text = || {
            pattern
                .to_str()
                .ok_or_else(|| error("a glob or regex pattern must be valid UTF-8".to_owned()))
        };
        let inner = match kind {
            PatternKind::Exact if !ignore_case => Inner::Exact(bytes.into()),
            PatternKind::Exact => match pattern.to_str() {
                Some(s) if !s.is_ascii() => {
                    let re = RegexBuilder::new(&format!("^{}$", regex::escape(s)))
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| error(e.to_string()))?;
                    Inner::Regex(re)
                }
                _ => Inner::ExactAsciiCaseless(bytes.into()),
            },
            PatternKind::Glob => {
                let glob = GlobBuilder::new(text()?)
                    .case_insensitive(ignore_case)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| error(e.kind().to_string()))?;
                Inner::Glob(glob.compile_matcher())
            }
            PatternKind::Regex => {
                let re = RegexBuilder::new(text()?)
                    .case_insensitive(ignore_case)
                    .build()
                    .map_err(|e| error(e.to_string()))?;
                Inner::Regex(re)
            }
        };
        Ok(NameMatcher { inner })
    }

    /// Whether `name` (one path component, any bytes) matches.
    #[inline]
    pub fn is_match(&self, name: &[u8]) -> bool {
        match &self.inner {
            Inner::Exact(p) => **p == *name,
            Inner::ExactAsciiCaseless(p) => p.eq_ignore_ascii_case(name),
            Inner::Glob(g) => g.is_match_candidate(&Candidate::from_bytes(name)),
            Inner::Regex(r) => r.is_match(name),
        }
    }
}

/// The pattern of a `Config` before compilation: what the command line gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern's bytes.
    pub text: OsString,
    /// How to read it.
    pub kind: PatternKind,
    /// Whether case is ignored.
    pub ignore_case: bool,
}

impl Pattern {
    /// An exact, case-sensitive pattern.
    ///
    /// ```
    /// let p = ito_find::Pattern::exact("notes.txt");
    /// assert!(p.compile().unwrap().is_match(b"notes.txt"));
    /// ```
    pub fn exact(text: impl Into<OsString>) -> Pattern {
        Pattern {
            text: text.into(),
            kind: PatternKind::Exact,
            ignore_case: false,
        }
    }

    /// Compiles the pattern.
    ///
    /// ```
    /// let mut p = ito_find::Pattern::exact("[");
    /// p.kind = ito_find::PatternKind::Glob;
    /// assert!(p.compile().is_err());
    /// ```
    pub fn compile(&self) -> Result<NameMatcher, PatternError> {
        NameMatcher::new(self.kind, &self.text, self.ignore_case)
    }
}

/// The first line of a (possibly multi-line) parser message, trimmed.
fn one_line(msg: &str) -> String {
    let lines: Vec<&str> = msg
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // regex's messages put the pattern, a caret line and then the reason ("error: ...").
    lines
        .iter()
        .find_map(|l| l.strip_prefix("error: "))
        .or(lines.last().copied())
        .unwrap_or("invalid pattern")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kind: PatternKind, p: &str, ic: bool) -> NameMatcher {
        NameMatcher::new(kind, OsStr::new(p), ic).unwrap()
    }

    #[test]
    fn exact_is_bytewise() {
        let x = m(PatternKind::Exact, "a.txt", false);
        assert!(x.is_match(b"a.txt"));
        assert!(!x.is_match(b"A.txt"));
        assert!(!x.is_match(b"a.txt2"));
        let raw =
            NameMatcher::new(PatternKind::Exact, OsStr::from_bytes(b"\xff\xfe"), false).unwrap();
        assert!(raw.is_match(b"\xff\xfe"));
    }

    #[test]
    fn case_folding() {
        assert!(m(PatternKind::Exact, "ReadMe", true).is_match(b"README"));
        assert!(!m(PatternKind::Exact, "ReadMe", true).is_match(b"README2"));
        assert!(m(PatternKind::Exact, "ÉTÉ", true).is_match("été".as_bytes()));
        assert!(m(PatternKind::Glob, "*.RS", true).is_match(b"lib.rs"));
        assert!(m(PatternKind::Regex, "^lib", true).is_match(b"LIBC"));
        let raw = NameMatcher::new(PatternKind::Exact, OsStr::from_bytes(b"A\xff"), true).unwrap();
        assert!(raw.is_match(b"a\xff"));
    }

    #[test]
    fn glob_matches_whole_name_and_any_bytes() {
        let g = m(PatternKind::Glob, "*.c", false);
        assert!(g.is_match(b"x.c"));
        assert!(!g.is_match(b"x.cc"));
        assert!(g.is_match(b"\xff.c"));
        assert!(m(PatternKind::Glob, "{a,b}*", false).is_match(b"bee"));
        assert!(m(PatternKind::Glob, "x\\*", false).is_match(b"x*"));
    }

    #[test]
    fn regex_searches() {
        let r = m(PatternKind::Regex, "o+b", false);
        assert!(r.is_match(b"foobar"));
        assert!(!r.is_match(b"fbar"));
        assert!(m(PatternKind::Regex, "^\\d+$", false).is_match(b"123"));
    }

    #[test]
    fn bad_patterns_are_one_line_errors() {
        for (kind, p) in [(PatternKind::Regex, "a("), (PatternKind::Glob, "[a")] {
            let e = NameMatcher::new(kind, OsStr::new(p), false).unwrap_err();
            assert!(!e.to_string().contains('\n'), "{e}");
            assert!(e.to_string().contains(p), "{e}");
        }
        let e =
            NameMatcher::new(PatternKind::Regex, OsStr::from_bytes(b"\xff"), false).unwrap_err();
        assert!(e.reason.contains("UTF-8"));
    }
}
