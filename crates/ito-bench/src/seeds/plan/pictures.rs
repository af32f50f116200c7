//! The timelines `seeds` draws (`ito-bench trace record`, one step each): document 002's
//! three find programs on the find tree, fib at cutoff 10 in every ito style, and the chain.
//! Their files go to the run's `traces/` directory; the report shows each drawing in its
//! document's section.

use super::*;

/// A picture: its file name (`DOC-...`: the report files it under that document), title,
/// and the traced subcommand.
pub(super) struct Picture {
    pub(super) doc: Doc,
    pub(super) name: String,
    pub(super) title: String,
    pub(super) command: Vec<String>,
}

/// The document a picture named `name` belongs to (its `DOC-` prefix).
pub(crate) fn doc_of(name: &str) -> Option<Doc> {
    Doc::ALL.into_iter().find(|d| {
        name.strip_prefix(d.id())
            .is_some_and(|r| r.starts_with('-'))
    })
}

/// Document 002's programs, each as `find-par --variant V`: its file-name tag, the
/// document's name for it, and the variant.
pub(crate) const FIND_PROGRAMS: [(&str, &str, &str); 3] = [
    ("find-seq", "find_seq", "seq"),
    ("find-par", "find_par", "unbounded"),
    ("find-par-sem", "find_par_sem", "sem"),
];

/// The fib cutoff of the pictures: the finest grain of the overhead target of tracing.
const FIB_CUTOFF: u64 = 10;

/// The pictures of the documents `wants` selects, at size `s`, with `workers` workers; the
/// find pictures walk `tree`.
pub(super) fn pictures(
    s: &Sizes,
    workers: usize,
    tree: &Path,
    wants: impl Fn(Doc) -> bool,
) -> Vec<Picture> {
    let w = workers.to_string();
    let owned = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    if wants(Doc::D000) {
        let (n, c) = (s.picture_fib_n.to_string(), FIB_CUTOFF.to_string());
        for style in ["flat", "wait", "async", "join"] {
            out.push(Picture {
                doc: Doc::D000,
                name: format!("000-fib-{style}"),
                title: format!("fib({n}), cutoff {c}, ito {style}, {w} workers"),
                command: steps::fib_run_args(s.picture_fib_n, FIB_CUTOFF, "ito", style, workers),
            });
        }
    }
    if wants(Doc::D001) {
        let n = s.picture_chain_n.to_string();
        out.push(Picture {
            doc: Doc::D001,
            name: "001-chain".to_owned(),
            title: format!("a chain of {n} processes, ito, {w} workers"),
            command: owned(&[
                "chain",
                "--n",
                &n,
                "--impl",
                "ito",
                "--workers",
                &w,
                "--repeat",
                "1",
            ]),
        });
    }
    if wants(Doc::D002) {
        let tree = tree.display().to_string();
        for (tag, program, variant) in FIND_PROGRAMS {
            out.push(Picture {
                doc: Doc::D002,
                name: format!("002-{tag}"),
                title: format!("{program} on ito: the whole find tree, {w} workers"),
                command: owned(&[
                    "find-par",
                    "--variant",
                    variant,
                    "-j",
                    &w,
                    crate::find::MISSING,
                    &tree,
                ]),
            });
        }
    }
    out
}

/// One step per picture of `pictures`, recording into `dir`; the find pictures need the
/// setup `tree_key` (the tree they walk).
pub(super) fn picture_steps(
    steps: &mut Vec<Step>,
    pictures: Vec<Picture>,
    dir: &Path,
    tree_key: &'static str,
    chain_n: u64,
) {
    let dir = dir.display().to_string();
    for p in pictures {
        let mut args: Vec<String> = ["trace", "record", "--dir", &dir, "--name", &p.name]
            .map(String::from)
            .to_vec();
        args.extend(["--title".to_owned(), p.title.clone(), "--".to_owned()]);
        args.extend(p.command);
        // Recording, writing about 1 KB of trace per chain process, and drawing it.
        let est = match p.doc {
            Doc::D001 => 1.0 + chain_n as f64 * 20e-6,
            _ => 2.0,
        };
        let mut step = Step::bench(p.doc, format!("picture: {}", p.title), &[], 600.0, est);
        step.args = args;
        step.parse = Parse::Setup;
        if p.doc == Doc::D002 {
            step.needs = vec![tree_key];
        }
        steps.push(step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_picture_is_filed_under_its_document() {
        let s = Sizes::of(Size::Smoke);
        let all = pictures(&s, 2, Path::new("/t"), |_| true);
        assert_eq!(all.len(), 4 + 1 + 3);
        for p in &all {
            assert_eq!(doc_of(&p.name), Some(p.doc), "{}", p.name);
        }
        assert_eq!(doc_of("0020-x"), None);
        let only = pictures(&s, 2, Path::new("/t"), |d| d == Doc::D002);
        assert!(only.iter().all(|p| p.doc == Doc::D002) && only.len() == 3);
    }
}
