//! The report's timelines: the drawings `ito-bench trace record` left in the run's `traces/`
//! directory, each shown in its document's section with what its summary says (when tasks
//! were spawned, how busy the workers were, the longest stretch a worker went without a
//! task), beside the document's own words about its pictures.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use super::plan::Doc;
use super::plan::pictures::{FIND_PROGRAMS, doc_of};
use super::published;
use crate::trace::summary::Summary;

/// One drawn timeline.
pub(crate) struct Timeline {
    /// Its document.
    pub(crate) doc: Doc,
    /// Its name (`002-find-seq`): the files are `NAME.svg`, `NAME.json`, `NAME.summary.json`.
    pub(crate) name: String,
    /// What the trace adds up to.
    pub(crate) summary: Summary,
}

/// The timelines in `dir` (the run's `traces/`), by name; a summary without its drawing is
/// left out.
pub(crate) fn read(dir: &Path) -> Vec<Timeline> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<Timeline> = entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let name = file.strip_suffix(".summary.json")?.to_owned();
            let doc = doc_of(&name)?;
            if !dir.join(format!("{name}.svg")).is_file() {
                return None;
            }
            let text = fs::read_to_string(e.path()).ok()?;
            let summary = serde_json::from_str(text.trim()).ok()?;
            Some(Timeline { doc, name, summary })
        })
        .collect();
    out.sort_by_key(|t| (order(&t.name), t.name.clone()));
    out
}

/// Where a picture goes among its document's: document 002's in the document's order
/// (sequential, a task per directory, the semaphore), the others by name.
fn order(name: &str) -> usize {
    FIND_PROGRAMS
        .iter()
        .position(|(tag, _, _)| name == format!("002-{tag}"))
        .unwrap_or(0)
}

/// How to read a drawing, once per report section that has one.
const HOW_TO_READ: &str = "Each drawing (`ito-bench trace record`, `docs/trace.md`): on top, \
    how many threads run tasks over time; below, one bar per thread, green while it runs a \
    task, blue while a compensation thread runs one, yellow while it searches for work, grey \
    parked, red blocked in a wait; black ticks above a bar are spawns, red ticks below it \
    steals. The key is in each drawing. A traced run is slower than an untraced one (every \
    event reads the clock): the drawings show where time goes, not how long a run takes.";

/// The timelines section of `doc`, if it has any.
pub(crate) fn section(md: &mut String, doc: Doc, all: &[Timeline], dir_name: &str) {
    let mine: Vec<&Timeline> = all.iter().filter(|t| t.doc == doc).collect();
    if mine.is_empty() {
        return;
    }
    let _ = writeln!(md, "### Timelines\n\n{HOW_TO_READ}\n");
    if let Some(words) = published::pictures(doc) {
        let _ = writeln!(md, "> {words}\n");
    }
    if doc == Doc::D002 {
        find_comparison(md, &mine);
    }
    for t in mine {
        let s = &t.summary;
        let _ = writeln!(md, "#### {}\n", s.title);
        let _ = writeln!(md, "![{}]({dir_name}/{}.svg)\n", s.title, t.name);
        let _ = writeln!(
            md,
            "{}\n",
            describe(s, &format!("{dir_name}/{}.json", t.name))
        );
    }
}

/// What one summary says, in a paragraph.
pub(crate) fn describe(s: &Summary, trace: &str) -> String {
    let mut text = format!(
        "`ito-bench {}` (at `{}`): {:.1} ms traced; {} tasks spawned",
        s.command.join(" "),
        s.commit,
        s.span_ms,
        s.spawns
    );
    if let Some((a, b)) = s.spawn_window_ms {
        let _ = write!(
            text,
            " between {a:.1} and {b:.1} ms ({:.0}% to {:.0}% of the span)",
            percent(a, s.span_ms),
            percent(b, s.span_ms)
        );
    }
    let workers: Vec<String> = s
        .workers()
        .map(|w| {
            let [run, comp, search, park, block] = w.state_ms.map(|ms| percent(ms, s.span_ms));
            let mut t = format!(
                "{} runs tasks {:.0}% of the span, searches {search:.0}%, is parked \
                 {park:.0}%",
                w.name,
                run + comp
            );
            if block > 0.5 {
                let _ = write!(t, ", blocked {block:.0}%");
            }
            let _ = write!(t, " ({} spawns, {} steals)", w.spawns, w.steals);
            t
        })
        .collect();
    let others: Vec<&str> = s
        .threads
        .iter()
        .filter(|t| !t.name.contains("-worker-"))
        .map(|t| t.name.as_str())
        .collect();
    let _ = write!(
        text,
        "; {:.2} threads run tasks on average. {}",
        s.mean_running,
        workers.join("; ")
    );
    if !others.is_empty() {
        let _ = write!(text, "; other threads: {}", others.join(", "));
    }
    text.push('.');
    if let Some(idle) = &s.longest_idle {
        let _ = write!(
            text,
            " The longest stretch a worker went without a task: {:.2} ms ({}, from {:.1} ms).",
            idle.ms, idle.thread, idle.at_ms
        );
    }
    let _ = write!(
        text,
        " Trace: `{trace}`, {:.1} MB (not committed).",
        s.trace_bytes as f64 / 1e6
    );
    text
}

/// Document 002's point in figures: how many tasks each program created, and how busy the
/// workers were.
fn find_comparison(md: &mut String, mine: &[&Timeline]) {
    let rows: Vec<(&str, &Summary)> = FIND_PROGRAMS
        .iter()
        .filter_map(|(tag, program, _)| {
            let t = mine.iter().find(|t| t.name == format!("002-{tag}"))?;
            Some((*program, &t.summary))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "| program on ito | tasks spawned | threads running tasks, on average | workers' \
         capacity unused (1 - that average / workers) | longest stretch a worker went without \
         a task |\n|---|---|---|---|---|"
    );
    for (program, s) in rows {
        let workers = s.workers().count() as f64;
        let _ = writeln!(
            md,
            "| `{program}` | {} | {:.2} | {:.0}% | {} |",
            s.spawns,
            s.mean_running,
            percent(workers - s.mean_running, workers).max(0.0),
            s.longest_idle
                .as_ref()
                .map_or("-".to_owned(), |i| format!("{:.2} ms", i.ms))
        );
    }
    md.push('\n');
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}
