//! `report.md`: the run, a headline (every configuration where ito is not better than a
//! peer), then for each document what it measured, its published figures, ours beside them
//! (median, interquartile range, run count and range of every cell), the ratio to each peer and the
//! verdict at each configuration, and the plots.

use std::fmt::Write as _;

use serde_json::Value;

use super::StepSummary;
use super::analysis::verdict::{self, Verdict};
use super::analysis::{Analysis, Cell, FIB_ALL, Group, is_measured, num, str_of};
use super::plan::Doc;
use super::plot::{PlotFile, format_num};
use super::timelines::{self, Timeline};
use super::{budget, compare, published};

/// The report of `records`; `steps` (with the run's seconds) when they were just run.
pub(crate) fn render(
    records: &[Value],
    a: &Analysis,
    plots: &[PlotFile],
    timelines: (&[Timeline], &str),
    steps: Option<(&[StepSummary], f64)>,
    compare: Option<(&str, &Analysis)>,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# ito-bench seeds: the five documents' experiments\n");
    run_header(&mut md, records, steps.map(|s| s.1));
    let _ = writeln!(
        md,
        "A cell is the median of its runs, with the interquartile range (first to third \
         quartile), the run count and the range (smallest to largest run): `median (q1-q3, \
         n=runs) [min-max]`. Ratios are ito's median cost over the peer's (time, or the \
         inverse of a throughput or an accuracy): below 1, ito is cheaper. The verdict at a \
         configuration is *better* or *worse* only where the two ranges do not overlap, *tie* \
         where they do (the interquartile ranges of five runs from one distribution lie apart \
         one time in five; the ranges one time in 126), and *too few runs* where a \
         cell has fewer than {} runs ({} for runs over {} s). *T/O*: no result within the \
         timeout; *failed*: a crash or a wrong result; *not run*: a coarser cutoff of the same \
         series had already failed (as in document 000's plot); *{}*: not run, because a \
         run was predicted to take over {} s from the coarser cutoffs of the same series \
         (not measured: no verdict); *skipped*: the peer's toolchain is not installed. \
         Compare within this run only.\n",
        verdict::MIN_RUNS,
        verdict::MIN_RUNS_LONG,
        verdict::LONG_RUN_S,
        budget::OVER_BUDGET,
        budget::RUN_BUDGET_S
    );
    headline(&mut md, a);
    if let Some((path, before)) = compare {
        compare::section(&mut md, path, a, before);
    }
    for doc in Doc::ALL {
        document(&mut md, doc, a, plots, records);
        timelines::section(&mut md, doc, timelines.0, timelines.1);
    }
    if let Some((steps, _)) = steps {
        let _ = writeln!(md, "## Steps\n\n| step | outcome |\n|---|---|");
        for s in steps {
            let _ = writeln!(md, "| {} | {} |", s.label, s.outcome);
        }
        md.push('\n');
    }
    if !a.schema_errors.is_empty() {
        let _ = writeln!(md, "## Lines left out (schema errors)\n");
        for (line, e) in &a.schema_errors {
            let _ = writeln!(md, "- {e}: `{line}`");
        }
        md.push('\n');
    }
    md
}

fn run_header(md: &mut String, records: &[Value], seconds: Option<f64>) {
    let first = records.first();
    let field = |k: &str| {
        first
            .and_then(|r| r.get(k))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned())
    };
    let loads: Vec<f64> = records.iter().filter_map(|r| num(r, "loadavg")).collect();
    let load = if loads.is_empty() {
        "not recorded".to_owned()
    } else {
        let lo = loads.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.1} to {hi:.1}")
    };
    let _ = writeln!(
        md,
        "Commit `{}`, {} CPUs ({}), started {}, sizes: {}{}. Load average (1 min) while \
         measuring: {load}. {} measurements.\n",
        field("commit"),
        field("nproc"),
        field("cpu"),
        field("date"),
        field("seeds"),
        seconds.map_or(String::new(), |s| format!(", {s:.0} s in all")),
        records.len()
    );
}

/// Formats a ratio: `0.52x`.
fn ratio(r: f64) -> String {
    if !r.is_finite() {
        return "-".to_owned();
    }
    let p = if r >= 10.0 {
        1
    } else if r >= 0.1 {
        2
    } else {
        3
    };
    format!("{r:.p$}x")
}

/// The headline: for each comparison, at how many configurations ito is better, worse,
/// tied; then every configuration where ito is not better.
fn headline(md: &mut String, a: &Analysis) {
    let _ = writeln!(
        md,
        "## Headline: ito against every peer\n\n| doc | experiment | ito | peer | better | \
         worse | tie | too few runs |\n|---|---|---|---|---|---|---|---|"
    );
    let mut not_better = Vec::new();
    for g in &a.groups {
        let Some(ito) = &g.ito else { continue };
        for c in g.comparisons() {
            if let Some(why) = &c.skipped {
                let _ = writeln!(
                    md,
                    "| {} | {} | {ito} | {} | peer skipped: {why} | | | |",
                    g.doc.id(),
                    g.name,
                    c.peer
                );
                continue;
            }
            let better = c.count(Verdict::Better) + c.count(Verdict::PeerFailed);
            let worse = c.count(Verdict::Worse) + c.count(Verdict::ItoFailed);
            let _ = writeln!(
                md,
                "| {} | {} | {ito} | {} | {better} | {worse} | {} | {} |",
                g.doc.id(),
                g.name,
                c.peer,
                c.count(Verdict::Tie),
                c.count(Verdict::FewRuns)
            );
            for v in c.not_better() {
                not_better.push(format!(
                    "| {} | {} | {} | {} {} | {} | {} | {} | {} |",
                    g.doc.id(),
                    g.name,
                    c.peer,
                    g.config_name,
                    v.config,
                    cell_text(g.cell(ito, &v.config)),
                    cell_text(g.cell(&c.peer, &v.config)),
                    v.ratio.map_or("-".to_owned(), ratio),
                    v.verdict.word()
                ));
            }
        }
    }
    let _ = writeln!(
        md,
        "\n### Every configuration where ito is not better ({})\n",
        not_better.len()
    );
    if not_better.is_empty() {
        let _ = writeln!(md, "None.\n");
        return;
    }
    let _ = writeln!(
        md,
        "| doc | experiment | peer | configuration | ito | peer | ito/peer | verdict |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for row in not_better {
        let _ = writeln!(md, "{row}");
    }
    md.push('\n');
}

/// A cell as text.
fn cell_text(c: &Cell) -> String {
    match c {
        Cell::Value(s) if s.runs == 1 => format!("{} (n=1)", format_num(s.median)),
        Cell::Value(s) => format!(
            "{} ({}-{}, n={}) [{}-{}]",
            format_num(s.median),
            format_num(s.q1),
            format_num(s.q3),
            s.runs,
            format_num(s.min),
            format_num(s.max)
        ),
        Cell::Failed(e) if e.contains("timeout") => "T/O".to_owned(),
        Cell::Failed(_) => "failed".to_owned(),
        Cell::NotRun => "not run".to_owned(),
        Cell::OverBudget => budget::OVER_BUDGET.to_owned(),
        Cell::Skipped(_) => "skipped".to_owned(),
        Cell::Empty => String::new(),
    }
}

/// A group's table: series by configurations.
fn table(md: &mut String, g: &Group) {
    let _ = writeln!(
        md,
        "**{}** ({}; {} across)\n",
        g.name, g.metric, g.config_name
    );
    let _ = write!(md, "| |");
    for c in &g.configs {
        let _ = write!(md, " {c} |");
    }
    let _ = write!(md, "\n|---|");
    for _ in &g.configs {
        let _ = write!(md, "---|");
    }
    md.push('\n');
    for (s, row) in g.series.iter().zip(&g.cells) {
        let _ = write!(md, "| {s} |");
        for c in row {
            let _ = write!(md, " {} |", cell_text(c));
        }
        md.push('\n');
    }
    let failures: Vec<String> = g
        .series
        .iter()
        .zip(&g.cells)
        .flat_map(|(s, row)| {
            row.iter()
                .zip(&g.configs)
                .filter_map(move |(c, cfg)| match c {
                    Cell::Failed(e) => Some(format!("{s} at {cfg}: {e}")),
                    _ => None,
                })
        })
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(md, "\nFailures: {}.", failures.join("; "));
    }
    let skipped: Vec<String> = g
        .series
        .iter()
        .zip(&g.cells)
        .filter_map(|(s, row)| {
            row.iter().find_map(|c| match c {
                Cell::Skipped(why) => Some(format!("{s} ({why})")),
                _ => None,
            })
        })
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(md, "\nSkipped: {}.", skipped.join("; "));
    }
    md.push('\n');
}

/// A group's comparisons: per peer, the ratio and the verdict at each configuration.
fn comparisons(md: &mut String, g: &Group) {
    let cs = g.comparisons();
    if cs.is_empty() {
        return;
    }
    let ito = g.ito.as_deref().unwrap_or("ito");
    let _ = writeln!(
        md,
        "| {ito} / peer | {}: ratio, verdict |\n|---|---|",
        g.config_name
    );
    for c in &cs {
        let per: Vec<String> = c
            .configs
            .iter()
            .map(|v| match v.ratio {
                Some(r) => format!("{}: {} {}", v.config, ratio(r), v.verdict.word()),
                None => format!("{}: {}", v.config, v.verdict.word()),
            })
            .collect();
        let text = match (&c.skipped, per.is_empty()) {
            (Some(why), _) => format!("peer skipped: {why}"),
            (None, true) => "-".to_owned(),
            (None, false) => per.join(", "),
        };
        let _ = writeln!(md, "| {} | {text} |", c.peer);
    }
    md.push('\n');
}

fn document(md: &mut String, doc: Doc, a: &Analysis, plots: &[PlotFile], records: &[Value]) {
    let p = published::of(doc);
    let _ = writeln!(md, "## {} — {}\n", doc.id(), p.title);
    let _ = writeln!(md, "- **What it measured.** {}", p.measured);
    let _ = writeln!(md, "- **Published.** {}", p.figures);
    let _ = writeln!(
        md,
        "- **Peers measured in this run.** {}",
        peers_measured(doc, a)
    );
    let _ = writeln!(md, "- **What ito must show.** {}\n", p.target);
    let groups: Vec<&Group> = a.groups.iter().filter(|g| g.doc == doc).collect();
    if groups.is_empty() {
        let _ = writeln!(md, "Not run.\n");
        return;
    }
    let _ = writeln!(md, "### Ours\n");
    for g in &groups {
        // A fib pair repeats rows of a table of every style (same metric, no comparison):
        // only its comparisons.
        let repeated = g.name.starts_with("fib: ")
            && g.ito.is_some()
            && groups
                .iter()
                .any(|o| o.name.starts_with("fib: ") && o.ito.is_none() && o.metric == g.metric);
        if !repeated {
            table(md, g);
        }
        if g.name == FIB_ALL {
            fib_notes(md, g, records);
        }
        if g.ito.is_some() {
            if repeated {
                let _ = writeln!(md, "**{}**\n", g.name);
            }
            comparisons(md, g);
        }
    }
    doc_notes(md, doc, records);
    for plot in plots.iter().filter(|p| p.doc == doc) {
        let _ = writeln!(md, "![{}]({})\n", plot.title, plot.file);
    }
}

/// The peers of `doc`'s comparisons that have at least one measured cell in this run.
fn peers_measured(doc: Doc, a: &Analysis) -> String {
    let mut peers: Vec<&str> = Vec::new();
    for g in a.groups.iter().filter(|g| g.doc == doc) {
        for c in g.comparisons() {
            let measured = g
                .configs
                .iter()
                .any(|cfg| g.cell(&c.peer, cfg).value().is_some());
            if measured && !peers.iter().any(|p| *p == c.peer) {
                peers.push(g.series.iter().find(|s| **s == c.peer).map_or("", |s| s));
            }
        }
    }
    if peers.is_empty() {
        "none (see the tables: skipped or failed)".to_owned()
    } else {
        format!(
            "{} (their figures are in the tables below).",
            peers.join(", ")
        )
    }
}

/// Document 000's own question: did every ito style complete at every cutoff, and with how
/// many threads at most?
fn fib_notes(md: &mut String, g: &Group, records: &[Value]) {
    let ito_rows: Vec<(&String, &Vec<Cell>)> = g
        .series
        .iter()
        .zip(&g.cells)
        .filter(|(s, _)| s.starts_with("ito"))
        .collect();
    if ito_rows.is_empty() {
        return;
    }
    // A cutoff over the time budget was not run: it neither completed nor failed.
    let complete = ito_rows.iter().all(|(_, row)| {
        row.iter()
            .all(|c| c.value().is_some() || *c == Cell::OverBudget)
    });
    let over: Vec<String> = ito_rows
        .iter()
        .flat_map(|(s, row)| {
            row.iter()
                .zip(&g.configs)
                .filter(|(c, _)| **c == Cell::OverBudget)
                .map(move |(_, cfg)| format!("{s} at {cfg}"))
        })
        .collect();
    let peak = |imp: &str| {
        records
            .iter()
            .filter(|r| str_of(r, "experiment") == Some("fib") && str_of(r, "impl") == Some(imp))
            .filter_map(|r| r.get("peak_threads").and_then(Value::as_u64))
            .max()
    };
    let over = if over.is_empty() {
        String::new()
    } else {
        format!(" (not run, {}: {})", budget::OVER_BUDGET, over.join(", "))
    };
    let _ = writeln!(
        md,
        "Every ito style completed at every cutoff it ran: **{}**{over}. Peak OS threads of a \
         run: ito {}, tokio {}, Scala {}.\n",
        if complete { "yes" } else { "no" },
        peak("ito").map_or("-".to_owned(), |p| p.to_string()),
        peak("tokio").map_or("-".to_owned(), |p| p.to_string()),
        peak("scala").map_or("-".to_owned(), |p| p.to_string()),
    );
    // The sequential baselines: Rust's plain recursion (`seq`) and Scala's `sfib`.
    let seq = |imp: &str| {
        let runs: Vec<&Value> = records
            .iter()
            .filter(|r| {
                str_of(r, "experiment") == Some("fib")
                    && str_of(r, "impl") == Some(imp)
                    && str_of(r, "style") == Some("seq")
                    && is_measured(r)
            })
            .collect();
        let seconds: Vec<f64> = runs.iter().filter_map(|r| num(r, "seconds")).collect();
        let n = runs
            .first()
            .and_then(|r| r.get("n"))
            .and_then(Value::as_u64);
        Some((n?, verdict::Spread::of(&seconds, false)?))
    };
    for (imp, language) in [("seq", "Rust"), ("scala", "Scala")] {
        if let Some((n, s)) = seq(imp) {
            let _ = writeln!(
                md,
                "{language}'s sequential fib({n}), the plain recursion (the baseline of \
                 \"x sequential\"): {} s.\n",
                cell_text(&Cell::Value(s))
            );
        }
    }
}

/// Per-document facts that are not a ratio.
fn doc_notes(md: &mut String, doc: Doc, records: &[Value]) {
    let of = |exp: &'static str| {
        records
            .iter()
            .filter(move |r| str_of(r, "experiment") == Some(exp) && is_measured(r))
    };
    match doc {
        Doc::D001 => {
            if let Some(r) = of("chain")
                .filter(|r| str_of(r, "impl") == Some("ito"))
                .max_by_key(|r| r.get("n").and_then(Value::as_u64))
            {
                let _ = writeln!(
                    md,
                    "ito's largest chain: {} processes, {} bytes of peak RSS per process.\n",
                    r.get("n").and_then(Value::as_u64).unwrap_or(0),
                    num(r, "bytes_per_process").map_or("-".to_owned(), |b| format!("{b:.0}"))
                );
            }
        }
        Doc::D002 => {
            if let Some(r) = of("find").next() {
                let _ = writeln!(
                    md,
                    "The tree: `{}`, {} entries, made by `ito-bench find-tree` (warm cache: one \
                     unmeasured round first). Other processes kept {} cores busy on average \
                     during the measurement.\n",
                    str_of(r, "tree").unwrap_or("?"),
                    r.get("entries").and_then(Value::as_u64).unwrap_or(0),
                    num(r, "other_cores").map_or("?".to_owned(), |c| format!("{c:.2}"))
                );
            }
        }
        Doc::D004 => {
            let phil: Vec<&Value> = of("futures")
                .filter(|r| str_of(r, "bench") == Some("philosophers"))
                .collect();
            if !phil.is_empty() {
                let all_ok = phil.iter().all(|r| {
                    r.get("rounds_ok").and_then(Value::as_u64)
                        == r.get("rounds").and_then(Value::as_u64)
                });
                let _ = writeln!(
                    md,
                    "Dining philosophers: every round all-or-nothing for every implementation: **{}**.\n",
                    if all_ok { "yes" } else { "no" }
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_over_the_time_budget_says_so_in_the_table_and_the_key() {
        let rec = |imp: &str, cutoff: u64, seconds: Option<f64>| {
            let mut r = serde_json::json!({"experiment": "fib", "impl": imp, "style": "async",
                "n": 30, "cutoff": cutoff, "workers": 2, "result": 832040, "seconds": seconds,
                "tasks": 1, "peak_threads": 3, "rss_bytes": 1, "commit": "c", "nproc": 2,
                "ok": seconds.is_some()});
            if seconds.is_none() {
                r["error"] = serde_json::json!("over the time budget: predicted 69 s");
                r["not_run"] = serde_json::json!(true);
                r["over_budget"] = serde_json::json!(true);
            }
            r
        };
        let recs: Vec<Value> = (0..5)
            .flat_map(|i| {
                [
                    rec("ito", 5, Some(1.0 + f64::from(i))),
                    rec("tokio", 5, None),
                    rec("ito", 2, None),
                ]
            })
            .collect();
        let a = Analysis::of(&recs);
        let md = render(&recs, &a, &[], (&[], ""), None, None);
        let row = md
            .lines()
            .find(|l| l.starts_with("| tokio async |"))
            .expect("the peer's row");
        assert!(row.contains(budget::OVER_BUDGET), "{row}");
        assert!(
            !row.contains("failed") && !row.contains("not run |"),
            "{row}"
        );
        assert!(md.contains(&format!("*{}*: not run", budget::OVER_BUDGET)));
        // ito's own cutoff over the budget is neither completed nor failed.
        assert!(
            md.contains(&format!(
                "completed at every cutoff it ran: **yes** (not run, {}: ito async at 2)",
                budget::OVER_BUDGET
            )),
            "{md}"
        );
        // Not a loss: the headline counts no verdict for it.
        assert!(md.contains("| 0 | 0 | 0 | 0 |"), "{md}");
    }

    #[test]
    fn ratios_are_formatted() {
        assert_eq!(ratio(0.5), "0.50x");
        assert_eq!(ratio(0.05), "0.050x");
        assert_eq!(ratio(12.34), "12.3x");
        assert_eq!(ratio(f64::NAN), "-");
    }
}
