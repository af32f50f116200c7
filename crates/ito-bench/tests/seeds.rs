//! `ito-bench seeds`: the report generator on recorded results (a fixture from a real
//! `--quick` run), and the JSON schema of every experiment's line (each subcommand run at a
//! tiny size, its lines checked by `seeds --check`), and the README's seeds section against
//! the recorded run it names. The timeout path (a peer that never
//! ends, killed with its process group) is tested in `src/seeds/run.rs`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ito-bench")
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ito-seeds-test-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seeds-results.jsonl")
}

fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The report's ratio format.
fn ratio(r: f64) -> String {
    let p = if r >= 10.0 {
        1
    } else if r >= 0.1 {
        2
    } else {
        3
    };
    format!("{r:.p$}x")
}

fn fib_seconds(recs: &[Value], imp: &str, style: &str, cutoff: u64) -> Option<f64> {
    recs.iter()
        .find(|r| {
            r["experiment"] == "fib"
                && r["impl"] == imp
                && r["style"] == style
                && r["cutoff"] == cutoff
        })
        .and_then(|r| r["seconds"].as_f64())
}

#[test]
fn the_report_of_recorded_results() {
    let out = temp_dir("report");
    let st = Command::new(bin())
        .args(["seeds", "--from"])
        .arg(fixture())
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    let recs = records(&fixture());

    // Every document: its section, its published figures, and its plots, which exist.
    for (doc, published, plots) in [
        (
            "## 000",
            "deadlocks (no result, a skull on the plot) from th=31 down",
            &["fib.svg", "join.svg"][..],
        ),
        ("## 001", "1M 4.34 s", &["chain.svg", "messaging.svg"]),
        ("## 002", "sequential 0.73 s", &["find.svg"]),
        ("## 003", "async 680/s", &["pool.svg"]),
        (
            "## 004",
            "up to ~ 0.2 ms faster",
            &["futures.svg", "stm-bank.svg"],
        ),
    ] {
        assert!(report.contains(doc), "{doc}");
        assert!(report.contains(published), "{published}");
        for plot in plots {
            assert!(report.contains(&format!("]({plot})")), "{plot} linked");
            let svg = fs::read_to_string(out.join(plot)).unwrap();
            assert!(
                svg.starts_with("<svg") || svg.starts_with("<?xml"),
                "{plot}"
            );
            assert!(svg.trim_end().ends_with("</svg>"), "{plot} complete");
        }
    }
    // The fixture's run: tokio's block_in_place and Scala's Await.result deadlocked at cutoff
    // 20 (timeouts), and the finer cutoffs were not run; ito completed everywhere.
    assert!(
        report.contains(
            "| tokio wait | 0.013 (n=1) | 0.024 (n=1) | T/O | not run | not run | not run | not run |"
        ),
        "{report}"
    );
    assert!(report.contains(
        "| scala await | 0.11 (n=1) | 0.19 (n=1) | T/O | not run | not run | not run | not run |"
    ));
    assert!(report.contains("Every ito style completed at every cutoff it ran: **yes**"));
    // The ratio at cutoff 30, recomputed from the fixture, and the failures, per peer.
    let (ito, tokio) = (
        fib_seconds(&recs, "ito", "wait", 30).unwrap(),
        fib_seconds(&recs, "tokio", "wait", 30).unwrap(),
    );
    // One run a cell: too few for a verdict.
    let row = format!("| tokio wait | 30: {} too few runs, ", ratio(ito / tokio));
    assert!(report.contains(&row), "{row}");
    assert!(report.contains(
        "20: better (peer failed), 15: better (peer failed), 10: better (peer failed), \
         5: better (peer failed), 2: better (peer failed)"
    ));
    // The headline counts the verdicts of every comparison, and lists every configuration
    // where ito is not better (here, with one run a cell, every one both ran).
    assert!(report.contains("## Headline: ito against every peer"));
    for exp in [
        "chain: time",
        "chain: peak memory",
        "ping-pong",
        "fan-in",
        "pool: 100 tasks, caller task",
    ] {
        assert!(
            report.contains(&format!("| {exp} | ito |")),
            "{exp} in the headline"
        );
    }
    assert!(report.contains("### Every configuration where ito is not better ("));
    assert!(
        report.lines().any(|l| l.starts_with(
            "| 000 | fib: blocking wait (ito wait, tokio block_in_place, Scala Await.result) \
             | tokio wait | cutoff 30 | "
        ) && l
            .ends_with(&format!("| {} | too few runs |", ratio(ito / tokio)))),
        "{report}"
    );
    assert!(!report.contains("geomean"));
    // The fixture's stm-bank ran with the auditor: shown, but not compared.
    assert!(report.contains("**stm-bank with the auditor: audits per second (not compared)**"));
    assert!(!report.contains("| stm-bank | ito |"));
    // The plot marks the failures and labels its axes with units.
    let shows = |plot: &str, texts: &[&str]| {
        let svg = fs::read_to_string(out.join(plot)).unwrap();
        for text in texts {
            assert!(svg.contains(text), "{plot} shows {text}");
        }
    };
    shows(
        "fib.svg",
        &[
            "X: failed or timed out",
            "computations per second (1/s, log scale)",
            "cutoff",
            "scala await",
            "ito wait",
        ],
    );
    shows(
        "chain.svg",
        &[
            "N, processes in the chain (log scale)",
            "seconds (log scale)",
            "MB (peak RSS) (log scale)",
            "go",
            "elixir",
        ],
    );
    // One CSV per experiment, a header and one row per record.
    let csv = fs::read_to_string(out.join("fib.csv")).unwrap();
    assert!(csv.starts_with("experiment,impl,style,n,cutoff,"));
    let fib_recs = recs.iter().filter(|r| r["experiment"] == "fib").count();
    assert_eq!(csv.lines().count(), fib_recs + 1);
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_bad_results_file_is_a_clear_error() {
    let dir = temp_dir("bad");
    let bad = dir.join("results.jsonl");
    fs::write(&bad, "{\"experiment\":\"fib\"}\nnot json\n").unwrap();
    let out = Command::new(bin())
        .args(["seeds", "--from"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("results.jsonl:2: not a JSON object"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let _ = fs::remove_dir_all(&dir);
}

/// A stand-in for the ito-find binary (built by another package, not available to this
/// package's tests): `ito-find -j W [--first] NAME DIR` as GNU find.
const FAKE_ITO_FIND: &str = r#"#!/bin/sh
first=
while [ $# -gt 2 ]; do
  case "$1" in --first) first=1 ;; -j) shift ;; esac
  shift
done
if [ -n "$first" ]; then exec find "$2" -name "$1" -print -quit; else exec find "$2" -name "$1"; fi
"#;

#[test]
fn every_experiments_lines_match_their_schema() {
    let dir = temp_dir("schema");
    let tree = dir.join("tree");
    let fake = dir.join("ito-find");
    fs::write(&fake, FAKE_ITO_FIND).unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let (tree_s, fake_s) = (tree.display().to_string(), fake.display().to_string());
    let runs: Vec<Vec<&str>> = vec![
        // tokio's blocking style deadlocks even at this size (document 000's point): async only.
        vec![
            "fib",
            "--n",
            "18",
            "--cutoff",
            "5",
            "--style",
            "flat,wait,async,join",
            "--impl",
            "ito,rayon,seq",
            "--workers",
            "2",
        ],
        vec![
            "fib",
            "--n",
            "18",
            "--cutoff",
            "5",
            "--style",
            "async",
            "--impl",
            "tokio",
            "--workers",
            "2",
        ],
        vec![
            "join",
            "--workload",
            "fib,tree,sort,nqueens",
            "--n",
            "16,6,2000,5",
            "--cutoff",
            "4",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "chain",
            "--n",
            "100",
            "--impl",
            "ito,tokio",
            "--workers",
            "2",
        ],
        vec![
            "ping-pong",
            "--rounds",
            "100",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "fan-in",
            "--senders",
            "2",
            "--messages",
            "100",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "pool",
            "--mode",
            "spawn,pool,bounded,channel-pool",
            "--tasks",
            "10",
            "--runs",
            "2",
            "--impl",
            "ito,tokio",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "or-alt",
            "--chain",
            "2",
            "--succeed",
            "first",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "read-seq",
            "--reads",
            "2",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "read-concurrent",
            "--readers",
            "2",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "first-completed",
            "--futures",
            "2",
            "--repeat",
            "2",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "callbacks",
            "--count",
            "2",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "futures",
            "philosophers",
            "--n",
            "3",
            "--rounds",
            "2",
            "--repeat",
            "1",
            "--workers",
            "2",
        ],
        vec![
            "stm-bank",
            "--threads",
            "1",
            "--ops",
            "1000",
            "--repeat",
            "1",
        ],
        vec![
            "find-tree",
            "--dirs",
            "20",
            "--files",
            "20",
            "--out",
            &tree_s,
        ],
        vec![
            "find",
            "--tree",
            &tree_s,
            "--runs",
            "1",
            "--ito-find",
            &fake_s,
        ],
    ];
    let mut all = String::new();
    for args in &runs {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        all.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    let lines = dir.join("lines.jsonl");
    fs::write(&lines, &all).unwrap();
    let check = Command::new(bin())
        .args(["seeds", "--check"])
        .arg(&lines)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    assert!(text.contains(" 0 do not"), "{text}");
    // Every experiment (and every futures benchmark) was checked.
    let recs = records(&lines);
    let seen: BTreeSet<String> = recs
        .iter()
        .filter_map(|r| {
            let e = r["experiment"].as_str()?;
            Some(match r["bench"].as_str() {
                Some(b) => format!("{e} {b}"),
                None => e.to_owned(),
            })
        })
        .collect();
    for e in [
        "fib",
        "join",
        "chain",
        "ping-pong",
        "fan-in",
        "pool",
        "futures or-alt",
        "futures read-seq",
        "futures read-concurrent",
        "futures first-completed",
        "futures callbacks",
        "futures philosophers",
        "stm-bank",
        "find",
    ] {
        assert!(seen.contains(e), "{e} ran: {seen:?}");
    }
    // A line that lost a measured field is caught, with its field.
    let broken: String = all
        .lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(mut v) if v["experiment"] == "chain" && v["ok"] == true => {
                v.as_object_mut().unwrap().remove("seconds");
                v.to_string()
            }
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    fs::write(&lines, broken).unwrap();
    let check = Command::new(bin())
        .args(["seeds", "--check"])
        .arg(&lines)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("missing field 'seconds'"), "{text}");
    let _ = fs::remove_dir_all(&dir);
}

/// The decimal figures of a text (`0.88x`, `1.61`), each once.
fn figures(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for word in text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'x')) {
        let word = word.trim_matches('.');
        let number = word.trim_end_matches('x');
        let decimal = number.split_once('.').is_some_and(|(i, f)| {
            !i.is_empty()
                && !f.is_empty()
                && i.bytes().all(|b| b.is_ascii_digit())
                && f.bytes().all(|b| b.is_ascii_digit())
        });
        if decimal {
            out.insert(word.to_owned());
        }
    }
    out
}

#[test]
fn the_readme_seeds_section_comes_from_the_recorded_run_it_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## Measured: every document")
        .expect("the README has the seeds section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let dir = section
        .split("bench/results/")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("the section names its recorded run");
    let run = root.join("bench/results").join(dir);
    let report = fs::read_to_string(run.join("report.md")).unwrap();
    let results = fs::read_to_string(run.join("results.jsonl")).unwrap();
    // Every row of its tables is a row of that run's report.
    for row in section.lines().filter(|l| l.starts_with("| 0")) {
        assert!(report.contains(row), "not in {dir}/report.md: {row}");
    }
    // Every decimal figure is in that run's report or results.
    for figure in figures(section) {
        let bare = figure.trim_end_matches('x');
        assert!(
            report.contains(&figure) || results.contains(bare),
            "{figure} is in neither {dir}/report.md nor {dir}/results.jsonl"
        );
    }
}
