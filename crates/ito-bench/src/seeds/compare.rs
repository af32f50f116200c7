//! `--compare`: the verdicts of this run against those of a recorded one, so that a verdict
//! that changed between two runs is flagged instead of read as a result.

use std::fmt::Write as _;

use super::analysis::Analysis;
use super::analysis::verdict::Verdict;

/// A configuration whose verdict differs between the two runs, where at least one of the two
/// is decisive (neither a tie nor too few runs).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Disagreement {
    /// The group (table).
    pub(crate) group: String,
    /// The peer.
    pub(crate) peer: String,
    /// The configuration.
    pub(crate) config: String,
    /// The verdict of the recorded run.
    pub(crate) before: Verdict,
    /// The verdict of this run.
    pub(crate) now: Verdict,
}

/// Whether a verdict says which side is better.
fn decisive(v: Verdict) -> bool {
    !matches!(v, Verdict::Tie | Verdict::FewRuns)
}

/// The configurations both runs compared, and those whose verdicts disagree.
pub(crate) fn disagreements(now: &Analysis, before: &Analysis) -> (usize, Vec<Disagreement>) {
    let mut compared = 0;
    let mut out = Vec::new();
    for g in &now.groups {
        let Some(old) = before.group(&g.name) else {
            continue;
        };
        let old_comparisons = old.comparisons();
        for c in g.comparisons() {
            let Some(oc) = old_comparisons.iter().find(|o| o.peer == c.peer) else {
                continue;
            };
            for v in &c.configs {
                let Some(ov) = oc.configs.iter().find(|o| o.config == v.config) else {
                    continue;
                };
                compared += 1;
                if ov.verdict != v.verdict && (decisive(ov.verdict) || decisive(v.verdict)) {
                    out.push(Disagreement {
                        group: g.name.clone(),
                        peer: c.peer.clone(),
                        config: v.config.clone(),
                        before: ov.verdict,
                        now: v.verdict,
                    });
                }
            }
        }
    }
    (compared, out)
}

/// The report's section on `before` (recorded at `path`).
pub(crate) fn section(md: &mut String, path: &str, now: &Analysis, before: &Analysis) {
    let (compared, diff) = disagreements(now, before);
    let _ = writeln!(
        md,
        "## Verdicts against `{path}`\n\n{compared} configurations were compared in both runs; \
         {} have verdicts that differ where one of them is not a tie (a verdict that flips \
         between runs is noise, not a result).\n",
        diff.len()
    );
    if diff.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "| experiment | peer | configuration | recorded run | this run |\n|---|---|---|---|---|"
    );
    for d in &diff {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            d.group,
            d.peer,
            d.config,
            d.before.word(),
            d.now.word()
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn bank(imp: &str, threads: u64, tx: f64) -> Value {
        json!({"experiment": "stm-bank", "impl": imp, "threads": threads, "accounts": 8,
            "ops": 10, "rep": 0, "seconds": 1.0, "tx_per_s": tx, "total_ok": true,
            "commit": "c", "nproc": 2, "ok": true})
    }

    /// Five runs of ito and of the mutexes at 1 and 2 threads, ito at `ito1` and `ito2`
    /// transactions per second, the mutexes at 5.
    fn run(ito1: f64, ito2: f64) -> Analysis {
        let mut recs = Vec::new();
        for i in 0..5 {
            let d = f64::from(i) * 0.01;
            recs.push(bank("ito", 1, ito1 + d));
            recs.push(bank("mutex", 1, 5.0 + d));
            recs.push(bank("ito", 2, ito2 + d));
            recs.push(bank("mutex", 2, 5.0 + d));
        }
        Analysis::of(&recs)
    }

    #[test]
    fn flipped_verdicts_are_flagged_and_ties_alone_are_not() {
        // 1 thread: worse, then better (flagged); 2 threads: tie, then tie (not flagged).
        let before = run(1.0, 5.0);
        let now = run(9.0, 5.0);
        let (compared, diff) = disagreements(&now, &before);
        assert_eq!(compared, 2);
        assert_eq!(
            diff,
            [Disagreement {
                group: "stm-bank".into(),
                peer: "mutex".into(),
                config: "1".into(),
                before: Verdict::Worse,
                now: Verdict::Better,
            }]
        );
        assert!(disagreements(&now, &now).1.is_empty());
        let mut md = String::new();
        section(&mut md, "old/results.jsonl", &now, &before);
        assert!(
            md.contains("| stm-bank | mutex | 1 | worse | better |"),
            "{md}"
        );
    }
}
