//! The parallel walk against the sequential reference walker and GNU find on random trees,
//! and the walk's behaviour when the tree changes under it or the first match cancels it.

mod common;

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use ito_find::{Config, FileKind, Pattern, PatternKind, Search, reference};
use proptest::prelude::*;

use common::{join_bytes, make, records, temp};

/// One entry of a random tree: under the `parent`-th directory made so far (modulo their
/// number), a `kind` (0 directory, 1 file, 2 symbolic link) called `name`.
#[derive(Clone, Debug)]
struct Entry {
    parent: usize,
    name: Vec<u8>,
    kind: u8,
}

/// Name pieces: spaces, newlines, a byte that is not UTF-8, a multi-byte character, dots.
const PIECES: [&[u8]; 8] = [
    b"a",
    b"b",
    b" ",
    b"\n",
    b"\xff",
    b".",
    "\u{e9}".as_bytes(),
    b"x",
];

fn entry() -> impl Strategy<Value = Entry> {
    (
        any::<usize>(),
        prop::collection::vec(0..PIECES.len(), 1..4),
        0u8..3,
    )
        .prop_map(|(parent, pieces, kind)| Entry {
            parent,
            name: pieces
                .iter()
                .flat_map(|&i| PIECES[i].iter().copied())
                .collect(),
            kind,
        })
        .prop_filter("not . or ..", |e| e.name != b"." && e.name != b"..")
}

/// Makes the tree; returns the names used (candidates for patterns).
fn build(root: &Path, entries: &[Entry]) -> Vec<Vec<u8>> {
    let mut dirs = vec![root.to_path_buf()];
    let mut names = Vec::new();
    for e in entries {
        let parent = dirs[e.parent % dirs.len()].clone();
        let path = join_bytes(&parent, &e.name);
        if fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        match e.kind {
            0 => {
                fs::create_dir(&path).unwrap();
                dirs.push(path);
            }
            1 => fs::write(&path, b"").unwrap(),
            // Links point to a sibling (maybe missing): never followed without -L.
            _ => symlink("a", &path).unwrap(),
        }
        names.push(e.name.clone());
    }
    names
}

/// The parallel search's matches, sorted.
fn parallel(c: &Config) -> Vec<Vec<u8>> {
    let mut c = c.clone();
    c.null_separated = true;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let o = Search::new(c).unwrap().run_into(&mut out, &mut err);
    assert_eq!(o.errors, 0, "{}", String::from_utf8_lossy(&err));
    let found = records(&out);
    assert_eq!(o.matches, found.len() as u64);
    found
}

/// GNU find's matches for the same search (exact or glob patterns), sorted; `None` if find
/// cannot run here.
fn gnu_find(c: &Config, root: &Path) -> Option<Vec<Vec<u8>>> {
    let mut cmd = Command::new("find");
    cmd.env("LC_ALL", "C").arg(root);
    if let Some(d) = c.max_depth {
        cmd.args(["-maxdepth", &d.to_string()]);
    }
    if !c.hidden {
        // The root (depth 0) is never hidden; its name has no glob characters.
        cmd.args(["(", "!", "-path"]).arg(root);
        cmd.args(["-name", ".*", "-prune", ")", "-o"]);
    }
    let kinds: Vec<&str> = [
        (FileKind::File, "f"),
        (FileKind::Dir, "d"),
        (FileKind::Symlink, "l"),
    ]
    .iter()
    .filter(|(k, _)| c.types != Default::default() && c.types.accepts(Some(*k)))
    .map(|(_, t)| *t)
    .collect();
    cmd.arg("(");
    for (i, t) in kinds.iter().enumerate() {
        if i > 0 {
            cmd.arg("-o");
        }
        cmd.args(["-type", t]);
    }
    if kinds.is_empty() {
        cmd.arg("-true");
    }
    cmd.arg(")");
    cmd.arg(if c.pattern.ignore_case {
        "-iname"
    } else {
        "-name"
    });
    cmd.arg(&c.pattern.text).arg("-print0");
    let out = cmd.output().ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(records(&out.stdout))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Property: on a random tree, the parallel walk (any number of workers and permits)
    /// finds exactly what the sequential reference walker finds, and what GNU find finds.
    #[test]
    fn parallel_matches_reference_and_find(
        entries in prop::collection::vec(entry(), 1..60),
        pick in any::<prop::sample::Index>(),
        kind in 0u8..3,
        ignore_case in any::<bool>(),
        max_depth in prop::option::of(0usize..5),
        types in 0u8..8,
        hidden in any::<bool>(),
        workers in 1usize..4,
        permits in prop::option::of(0usize..4),
    ) {
        let t = temp();
        let names = build(t.path(), &entries);
        let name = pick.get(&names).clone();
        let (text, pkind) = match kind {
            0 => (name, PatternKind::Exact),
            1 => ([b"*".as_slice(), &name[..1], b"*"].concat(), PatternKind::Glob),
            _ => (b"^[ab]".to_vec(), PatternKind::Regex),
        };
        // Case folding only where find's C-locale -iname and ours agree: ASCII patterns.
        let ignore_case = ignore_case && text.is_ascii();
        let mut c = Config::new(Pattern {
            text: OsString::from(std::ffi::OsStr::from_bytes(&text)),
            kind: pkind,
            ignore_case,
        });
        c.paths = vec![t.path().into()];
        c.max_depth = max_depth;
        c.hidden = hidden;
        for (bit, k) in [(1, FileKind::File), (2, FileKind::Dir), (4, FileKind::Symlink)] {
            if types & bit != 0 {
                c.types = c.types.with(k);
            }
        }
        c.workers = workers;
        c.permits = permits;
        if pkind == PatternKind::Glob && String::from_utf8(text.clone()).is_err() {
            // Globs must be UTF-8; the refusal is checked elsewhere.
            return Ok(());
        }
        let par = parallel(&c);
        let seq = reference::matches(&c).unwrap();
        prop_assert_eq!(&par, &seq);
        if pkind != PatternKind::Regex {
            if let Some(found) = gnu_find(&c, t.path()) {
                prop_assert_eq!(&par, &found);
            }
        }
    }
}

/// A sink that runs a hook on its first write (while the walk is still going).
struct Hooked {
    out: Arc<Mutex<Vec<u8>>>,
    hook: Option<Box<dyn FnOnce() + Send>>,
}

impl Write for Hooked {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if let Some(h) = self.hook.take() {
            h();
        }
        self.out.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn directory_removed_during_the_walk_is_reported_and_the_walk_goes_on() {
    // One worker: the root is read to the end (both entries are in the first getdents
    // buffer) before `victim` is opened. The first match, `trigger`, is written at once
    // (flush each) and its write removes `victim`.
    let t = temp();
    make(t.path(), &["trigger", "victim/deeper/x", "other/x"]);
    let victim: PathBuf = t.path().join("victim");
    let mut c = Config::new(Pattern {
        kind: PatternKind::Glob,
        ..Pattern::exact("{trigger,x}")
    });
    c.paths = vec![t.path().into()];
    c.workers = 1;
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = Hooked {
        out: Arc::clone(&out),
        hook: Some(Box::new(move || fs::remove_dir_all(&victim).unwrap())),
    };
    let err = Shared::default();
    let o = Search::new(c)
        .unwrap()
        .run_with(Box::new(sink), Box::new(err.clone()), true);
    let err = String::from_utf8(err.0.lock().unwrap().clone()).unwrap();
    let out = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert_eq!(o.exit_code(), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/victim: No such file or directory"), "{err}");
    // The rest of the tree was still searched.
    let mut got: Vec<&str> = out.lines().collect();
    got.sort_unstable();
    assert_eq!(got.len(), 2, "{out}");
    assert!(
        got[0].ends_with("/other/x") && got[1].ends_with("/trigger"),
        "{out}"
    );
}

#[test]
fn first_match_cancels_the_rest_of_the_walk() {
    // 40 x 40 directories; the only match is at depth 1.
    let t = temp();
    for i in 0..40 {
        for j in 0..40 {
            fs::create_dir_all(t.path().join(format!("d{i}/e{j}"))).unwrap();
        }
    }
    fs::write(t.path().join("needle"), b"").unwrap();
    let mut c = Config::new(Pattern::exact("needle"));
    c.paths = vec![t.path().into()];
    c.max_results = Some(1);
    // One worker: the tasks offered while the root was read cannot start before the match
    // cancels them, so only the root is read.
    c.workers = 1;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let o = Search::new(c.clone()).unwrap().run_into(&mut out, &mut err);
    assert_eq!((o.matches, o.errors, o.dirs_read), (1, 0, 1));
    assert!(out.ends_with(b"/needle\n"));
    // Two workers: the other one may read a few directories before it sees the stop, but
    // far fewer than the tree's 1,641.
    c.workers = 2;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let o = Search::new(c.clone()).unwrap().run_into(&mut out, &mut err);
    assert_eq!((o.matches, o.errors), (1, 0));
    assert!(out.ends_with(b"/needle\n"));
    assert!(o.dirs_read < 1641 / 2, "read {} directories", o.dirs_read);
    // Without the limit every directory is read.
    c.max_results = None;
    let o = Search::new(c)
        .unwrap()
        .run_into(&mut Vec::new(), &mut io::sink());
    assert_eq!(o.dirs_read, 1641);
}

#[test]
fn max_results_under_racing_workers_prints_exactly_n() {
    let t = temp();
    for i in 0..64 {
        for j in 0..8 {
            make(t.path(), &[&format!("d{i}/e{j}/hit")]);
        }
    }
    for n in [1, 5, 100, 511, 512, 600] {
        let mut c = Config::new(Pattern::exact("hit"));
        c.paths = vec![t.path().into()];
        c.workers = 3;
        c.max_results = Some(n);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let o = Search::new(c).unwrap().run_into(&mut out, &mut err);
        let want = n.min(512);
        assert_eq!(o.matches, want);
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count() as u64, want);
    }
}
