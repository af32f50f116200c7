//! The summary on stderr: medians per impl and the ratios ito/peer.

use super::*;

/// The human summary printed on stderr at the end.
pub(super) fn summary(
    bench: &str,
    records: &[FutRecord],
    imps: &[FutImpl],
    workers: usize,
    repeat: u32,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let first_completed = bench == "first-completed";
    let philosophers = bench == "philosophers";
    let what = if first_completed {
        "median µs to the first result over {repeat} repetitions, accuracy = future 0 won"
    } else if philosophers {
        "median µs for all the rounds of a run over {repeat} runs, win = mean winners per round"
    } else {
        "median µs per operation over {repeat} runs"
    };
    let _ = writeln!(
        s,
        "futures {bench} summary ({}; ito/peer < 1: ito is faster)",
        what.replace("{repeat}", &repeat.to_string())
    );
    let mut header = format!("{:<10} {:>6}", "variant", "n");
    for imp in imps {
        let _ = write!(header, " {:>11}", format!("{} µs", imp.name()));
    }
    for imp in imps.iter().skip(1) {
        if imps[0] == FutImpl::Ito {
            let _ = write!(header, " {:>10}", format!("ito/{}", imp.name()));
        }
    }
    if first_completed {
        for imp in imps {
            let _ = write!(header, " {:>10}", format!("acc {}", imp.name()));
        }
    }
    if philosophers {
        for imp in imps {
            let _ = write!(header, " {:>10}", format!("win {}", imp.name()));
        }
    }
    let _ = writeln!(s, "{header}");
    // Keys in the order the records came.
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in records {
        let k = (r.variant.clone(), r.param);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // The median of one field over the successful runs of a (variant, param, impl).
    let median_of = |variant: &str,
                     param: usize,
                     imp: FutImpl,
                     field: fn(&FutRecord) -> Option<f64>|
     -> Option<f64> {
        let mut v: Vec<f64> = records
            .iter()
            .filter(|r| r.ok && r.variant == variant && r.param == param && r.imp == imp.name())
            .filter_map(field)
            .collect();
        measure::median(&mut v)
    };
    let of_runs = |variant: &str, param: usize, imp: FutImpl| -> Vec<&FutRecord> {
        records
            .iter()
            .filter(|r| r.variant == variant && r.param == param && r.imp == imp.name())
            .collect()
    };
    let accuracy_of = |variant: &str, param: usize, imp: FutImpl| -> Option<f64> {
        records
            .iter()
            .find(|r| r.variant == variant && r.param == param && r.imp == imp.name())
            .and_then(|r| r.accuracy)
    };
    for (variant, param) in &keys {
        let meds: Vec<Option<f64>> = imps
            .iter()
            .map(|&i| median_of(variant, *param, i, |r| r.seconds))
            .collect();
        let mut line = medians_line(variant, *param, &meds, imps[0] == FutImpl::Ito);
        if first_completed {
            for &imp in imps {
                let _ = match accuracy_of(variant, *param, imp) {
                    Some(a) => write!(line, " {:>10.2}", a),
                    None => write!(line, " {:>10}", "-"),
                };
            }
        }
        if philosophers {
            for &imp in imps {
                let runs = of_runs(variant, *param, imp);
                let wins: Vec<f64> = runs.iter().filter_map(|r| r.winners_per_round).collect();
                let _ = if wins.is_empty() {
                    write!(line, " {:>10}", "-")
                } else {
                    write!(
                        line,
                        " {:>10.2}",
                        wins.iter().sum::<f64>() / wins.len() as f64
                    )
                };
            }
        }
        let _ = writeln!(s, "{line}");
    }
    if philosophers {
        let _ = writeln!(
            s,
            "all-or-nothing rounds / rounds, and unforced losses (a loser with no winning \
             neighbour) per round, over every run:"
        );
        for (variant, param) in &keys {
            let mut line = format!("{variant:<10} {param:>6}");
            for &imp in imps {
                let runs = of_runs(variant, *param, imp);
                let ok: usize = runs.iter().filter_map(|r| r.rounds_ok).sum();
                let rounds: usize = runs.iter().filter_map(|r| r.rounds).sum();
                let unforced: u64 = runs.iter().filter_map(|r| r.unforced_losses).sum();
                let cell = format!(
                    "{} {ok}/{rounds} {:.2}",
                    imp.name(),
                    unforced as f64 / rounds.max(1) as f64
                );
                let _ = write!(line, "  {cell:<24}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    if records.iter().any(|r| r.after_complete_s.is_some()) {
        let _ = writeln!(
            s,
            "from the completion to the last read or callback (median µs; the wake-ups):"
        );
        for (variant, param) in &keys {
            let meds: Vec<Option<f64>> = imps
                .iter()
                .map(|&i| median_of(variant, *param, i, |r| r.after_complete_s))
                .collect();
            if meds.iter().all(Option::is_none) {
                continue;
            }
            let line = medians_line(variant, *param, &meds, imps[0] == FutImpl::Ito);
            let _ = writeln!(s, "{line}");
        }
    }
    if first_completed {
        let _ = writeln!(
            s,
            "accuracy / 0-first / faithful (fractions of the repetitions: future 0 won / future 0 \
             ended its busy-wait first, the machine's doing / the winner ended its busy-wait \
             first, first-completed's doing):"
        );
        for (variant, param) in &keys {
            let mut line = format!("{variant:<10} {param:>6}");
            for &imp in imps {
                let rec = records
                    .iter()
                    .find(|r| &r.variant == variant && r.param == *param && r.imp == imp.name());
                let cell = match rec {
                    Some(r) => {
                        let reps = f64::from(r.reps.unwrap_or(1).max(1));
                        format!(
                            "{} {:.2}/{:.2}/{:.2}",
                            imp.name(),
                            r.accuracy.unwrap_or(f64::NAN),
                            f64::from(r.zero_first.unwrap_or(0)) / reps,
                            r.faithfulness.unwrap_or(f64::NAN)
                        )
                    }
                    None => format!("{} -", imp.name()),
                };
                let _ = write!(line, "  {cell:<22}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    if first_completed && imps.contains(&FutImpl::Ito) {
        let at60 = keys
            .iter()
            .find(|(_, p)| *p == 60)
            .and_then(|(v, p)| accuracy_of(v, *p, FutImpl::Ito));
        match at60 {
            Some(a) if workers == 2 => {
                let verdict = if a >= 0.95 { "met" } else { "NOT met" };
                let _ = writeln!(
                    s,
                    "  ito accuracy at 60 futures on 2 workers: {a:.2} (>= 0.95: {verdict})"
                );
            }
            Some(a) => {
                let _ = writeln!(
                    s,
                    "  ito accuracy at 60 futures on {workers} workers: {a:.2} (the issue's \
                     criterion is for 2 workers)"
                );
            }
            None => {}
        }
    }
    s
}

/// The start of a summary line: the variant and parameter, each implementation's median in
/// µs (`-` where it has none), and, when ito's comes first, its ratio to each other one.
fn medians_line(variant: &str, param: usize, meds: &[Option<f64>], ito_first: bool) -> String {
    use std::fmt::Write as _;
    let mut line = format!("{variant:<10} {param:>6}");
    for m in meds {
        let _ = match m {
            Some(v) => write!(line, " {:>11.3}", v * 1e6),
            None => write!(line, " {:>11}", "-"),
        };
    }
    if ito_first {
        for m in meds.iter().skip(1) {
            let _ = match (meds[0], m) {
                (Some(a), Some(b)) => write!(line, " {:>10.3}", a / b),
                _ => write!(line, " {:>10}", "-"),
            };
        }
    }
    line
}
