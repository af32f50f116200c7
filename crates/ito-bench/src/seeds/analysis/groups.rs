//! The groups (tables) of each experiment: which records, which series, which configurations, which
//! value.

use super::*;

pub(super) fn fib_series(r: &Value) -> Option<String> {
    Some(format!("{} {}", str_of(r, "impl")?, str_of(r, "style")?))
}

/// Keeps only the series of `g` that `keep` accepts; whether two or more are left (a pair).
fn keep_series(g: &mut Group, keep: impl Fn(&str) -> bool) -> bool {
    let kept: Vec<usize> = (0..g.series.len())
        .filter(|&i| keep(&g.series[i]))
        .collect();
    g.series = kept.iter().map(|&i| g.series[i].clone()).collect();
    g.cells = kept.iter().map(|&i| g.cells[i].clone()).collect();
    kept.len() >= 2
}

/// The median seconds of the sequential fib runs of a language (`scala`, or the Rust `seq`).
fn seq_median(recs: &[&Value], imp: &str) -> Option<f64> {
    let runs: Vec<f64> = recs
        .iter()
        .filter(|r| str_of(r, "impl") == Some(imp) && str_of(r, "style") == Some("seq"))
        .filter(|r| is_measured(r))
        .filter_map(|r| num(r, "seconds"))
        .collect();
    Some(verdict::Spread::of(&runs, false)?.median)
}

pub(super) fn fib_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    // The sequential baselines (Rust's, Scala's) are not series of the tables.
    let fib: Vec<&Value> = recs
        .iter()
        .copied()
        .filter(|r| str_of(r, "style") != Some("seq"))
        .collect();
    let cutoff = |r: &Value| Some(r.get("cutoff")?.as_u64()?.to_string());
    let seconds = |r: &Value| num(r, "seconds");
    let spec =
        |name: &str, ito: Option<&'static str>, peers: Option<&'static [&'static str]>| Spec {
            doc: Doc::D000,
            name: name.to_owned(),
            metric: "seconds",
            higher_better: false,
            config_name: "cutoff",
            config: &cutoff,
            series: &fib_series,
            value: &seconds,
            ito,
            peers,
        };
    groups.extend(build(&fib, &spec(FIB_ALL, None, None)));
    // Every style's CPU time, the table the pairs' CPU verdicts read.
    let cpu_all = format!("{FIB_ALL}: CPU time");
    groups.extend(build(
        &fib,
        &Spec {
            metric: "CPU seconds, user + system, over the same span",
            value: &cpu_seconds,
            ..spec(&cpu_all, None, None)
        },
    ));
    for (name, ito, peers) in FIB_PAIRS {
        // The pair's time and CPU time, each with only the pair's series.
        for mut g in build_with_cpu(&fib, &spec(name, Some(ito), Some(peers))) {
            if keep_series(&mut g, |s| s == ito || peers.contains(&s)) {
                groups.push(g);
            }
        }
    }
    // Against Scala, also each language's time over its own sequential fib: a JVM and
    // native code compute the leaves at different speeds.
    let (Some(rust_seq), Some(scala_seq)) = (seq_median(recs, "seq"), seq_median(recs, "scala"))
    else {
        return;
    };
    let over_own_seq = |r: &Value| {
        let own = if str_of(r, "impl") == Some("scala") {
            scala_seq
        } else {
            rust_seq
        };
        Some(num(r, "seconds")? / own)
    };
    for (name, ito, peers) in FIB_PAIRS {
        let scala: Vec<&'static str> = peers
            .iter()
            .copied()
            .filter(|p| p.starts_with("scala"))
            .collect();
        if scala.is_empty() {
            continue;
        }
        let name = format!("{name}: over each language's own sequential fib");
        let spec = Spec {
            metric: "x the language's sequential fib",
            value: &over_own_seq,
            ..spec(&name, Some(ito), Some(peers))
        };
        if let Some(mut g) = build(&fib, &spec) {
            if keep_series(&mut g, |s| s == ito || scala.contains(&s)) {
                g.peers = Some(scala.iter().map(|s| s.to_string()).collect());
                groups.push(g);
            }
        }
    }
}

pub(super) fn join_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    let mut workloads: Vec<&str> = Vec::new();
    for r in recs {
        if let Some(w) = str_of(r, "workload") {
            if !workloads.contains(&w) {
                workloads.push(w);
            }
        }
    }
    for w in workloads {
        let these: Vec<&Value> = recs
            .iter()
            .copied()
            .filter(|r| str_of(r, "workload") == Some(w))
            .collect();
        let n = these
            .first()
            .and_then(|r| r.get("n"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        groups.extend(build_with_cpu(
            &these,
            &Spec {
                doc: Doc::D000,
                name: format!("join: {w}({})", short_count(n)),
                metric: "ms",
                higher_better: false,
                config_name: "cutoff",
                config: &|r| Some(r.get("cutoff")?.as_u64()?.to_string()),
                series: &|r| str_of(r, "impl").map(str::to_owned),
                value: &|r| num(r, "seconds").map(|s| s * 1e3),
                ito: Some("ito"),
                // seq is the baseline in the table, not a peer.
                peers: Some(&["rayon"]),
            },
        ));
    }
}

pub(super) fn process_groups(
    chain: &[&Value],
    ping: &[&Value],
    fan: &[&Value],
    groups: &mut Vec<Group>,
) {
    let n = |r: &Value| Some(short_count(r.get("n")?.as_u64()?));
    groups.extend(build_with_cpu(
        chain,
        &Spec {
            doc: Doc::D001,
            name: "chain: time".into(),
            metric: "seconds",
            higher_better: false,
            config_name: "N",
            config: &n,
            series: &imp_flavor,
            value: &|r| num(r, "seconds"),
            ito: Some("ito"),
            peers: None,
        },
    ));
    groups.extend(build(
        chain,
        &Spec {
            doc: Doc::D001,
            name: "chain: peak memory".into(),
            metric: "MB (peak RSS)",
            higher_better: false,
            config_name: "N",
            config: &n,
            series: &imp_flavor,
            value: &|r| num(r, "rss_bytes").map(|b| b / 1e6),
            ito: Some("ito"),
            peers: None,
        },
    ));
    groups.extend(build_with_cpu(
        ping,
        &Spec {
            doc: Doc::D001,
            name: "ping-pong".into(),
            metric: "ns per round trip",
            higher_better: false,
            config_name: "rounds",
            config: &|r| Some(short_count(r.get("rounds")?.as_u64()?)),
            series: &imp_flavor,
            value: &|r| num(r, "ns_per_round_trip"),
            ito: Some("ito"),
            peers: None,
        },
    ));
    groups.extend(build_with_cpu(
        fan,
        &Spec {
            doc: Doc::D001,
            name: "fan-in".into(),
            metric: "M messages/s",
            higher_better: true,
            config_name: "senders x messages",
            config: &|r| {
                Some(format!(
                    "{} x {}",
                    r.get("senders")?.as_u64()?,
                    short_count(r.get("messages")?.as_u64()?)
                ))
            },
            series: &imp_flavor,
            value: &|r| num(r, "msgs_per_s").map(|m| m / 1e6),
            ito: Some("ito"),
            peers: None,
        },
    ));
}

/// Document 002: a table per query (the whole-tree walk and the first match are different
/// questions), the worker counts across, and each tool's peak memory.
pub(super) fn find_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    let entries = recs
        .first()
        .and_then(|r| r.get("entries"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let workers = |r: &Value| {
        let fs = str_of(r, "filesystem").unwrap_or("tmpfs");
        Some(format!("-j {}, {fs}", r.get("workers")?.as_u64()?))
    };
    for (query, what) in [
        ("missing", "a name that does not exist (the whole tree)"),
        ("first-depth1", "the first match"),
    ] {
        let these: Vec<&Value> = recs
            .iter()
            .copied()
            .filter(|r| str_of(r, "query") == Some(query))
            .collect();
        let name = format!("find: {}-entry tree, {what}", short_count(entries));
        groups.extend(build_with_cpu(
            &these,
            &Spec {
                doc: Doc::D002,
                name: name.clone(),
                metric: "ms (a run: the median of its --runs)",
                higher_better: false,
                config_name: "workers",
                config: &workers,
                series: &|r| str_of(r, "tool").map(str::to_owned),
                value: &|r| num(r, "median_ms"),
                ito: Some("ito-find"),
                peers: None,
            },
        ));
        groups.extend(build(
            &these,
            &Spec {
                doc: Doc::D002,
                name: format!("{name}: peak memory"),
                metric: "MB (peak RSS of the tool's process)",
                higher_better: false,
                config_name: "workers",
                config: &workers,
                series: &|r| str_of(r, "tool").map(str::to_owned),
                value: &|r| num(r, "peak_rss_bytes").map(|b| b / 1e6),
                ito: Some("ito-find"),
                peers: None,
            },
        ));
        groups.extend(build(
            &these,
            &Spec {
                doc: Doc::D002,
                name: format!("{name}: peak threads (not compared)"),
                metric: "threads of the tool's process at most",
                higher_better: false,
                config_name: "workers",
                config: &workers,
                series: &|r| str_of(r, "tool").map(str::to_owned),
                value: &|r| num(r, "peak_threads"),
                ito: None,
                peers: None,
            },
        ));
    }
}

pub(super) fn pool_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    // Each caller is a population of its own: a table per caller.
    let key = |r: &Value| -> Option<(u64, u64, String)> {
        Some((
            r.get("tasks")?.as_u64()?,
            r.get("sleep_ms")?.as_u64()?,
            str_of(r, "caller").unwrap_or("task").to_owned(),
        ))
    };
    let mut kinds: Vec<(u64, u64, String)> = Vec::new();
    for r in recs {
        if let Some(k) = key(r) {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    let mode = |r: &Value| -> Option<String> {
        let m = str_of(r, "mode")?;
        Some(match r.get("pool_size").and_then(Value::as_u64) {
            Some(p) if m != "spawn" => format!("{m}({p})"),
            _ => m.to_owned(),
        })
    };
    for (tasks, sleep, caller) in kinds {
        let these: Vec<&Value> = recs
            .iter()
            .copied()
            .filter(|r| key(r).is_some_and(|k| k == (tasks, sleep, caller.clone())))
            .collect();
        let label = match sleep {
            0 => format!("pool: {tasks} tasks, caller {caller}"),
            // A run of tasks that each sleep 1 ms lasts about as long as the timer makes the
            // sleep last: it measures the timer's precision more than the pool.
            s => format!(
                "pool: {tasks} tasks, {s} ms sleep (timer precision more than the pool), caller {caller}"
            ),
        };
        groups.extend(build_with_cpu(
            &these,
            &Spec {
                doc: Doc::D003,
                name: label.clone(),
                metric: "runs/s",
                higher_better: true,
                config_name: "mode",
                config: &mode,
                series: &|r| str_of(r, "impl").map(str::to_owned),
                value: &|r| num(r, "runs_per_s"),
                ito: Some("ito"),
                peers: None,
            },
        ));
        if tasks >= 10_000 {
            groups.extend(build(
                &these,
                &Spec {
                    doc: Doc::D003,
                    name: format!("{label}: memory"),
                    metric: "MB of RSS growth (peak minus after start-up)",
                    higher_better: false,
                    config_name: "mode",
                    config: &mode,
                    series: &|r| str_of(r, "impl").map(str::to_owned),
                    value: &|r| num(r, "rss_growth_bytes").map(|b| b / 1e6),
                    ito: Some("ito"),
                    peers: None,
                },
            ));
        }
    }
    // The timer's precision, measured apart from the runs: what bounds the sleep tables.
    let slept: Vec<&Value> = recs
        .iter()
        .copied()
        .filter(|r| r.get("sleep_overshoot_us").is_some())
        .collect();
    groups.extend(build(
        &slept,
        &Spec {
            doc: Doc::D003,
            name: "pool: the sleep's overshoot (timer precision, measured apart from the runs)"
                .into(),
            metric: "µs past the sleep asked for (median of 20 sleeps in a row)",
            higher_better: false,
            config_name: "sleep",
            config: &|r| Some(format!("{} ms", r.get("sleep_ms")?.as_u64()?)),
            series: &|r| str_of(r, "impl").map(str::to_owned),
            value: &|r| num(r, "sleep_overshoot_us"),
            ito: Some("ito"),
            peers: None,
        },
    ));
}

/// A futures benchmark: bench, group name, metric, higher better, config name, split (a
/// group per value: the variant), config, value.
pub(crate) struct FutSpec {
    bench: &'static str,
    name: &'static str,
    metric: &'static str,
    higher_better: bool,
    config_name: &'static str,
    split: fn(&Value) -> Option<String>,
    config: fn(&Value) -> Option<String>,
    value: fn(&Value) -> Option<f64>,
}

pub(super) fn no_split(_: &Value) -> Option<String> {
    Some(String::new())
}

/// Document 004's benchmarks.
pub(super) const FUTURES: [FutSpec; 6] = [
    FutSpec {
        bench: "or-alt",
        name: "futures: or-alt chain",
        metric: "ns per chain",
        higher_better: false,
        config_name: "chain length",
        split: |r| Some(format!("{} succeeds", str_of(r, "succeed")?)),
        config: |r| Some(r.get("chain")?.as_u64()?.to_string()),
        value: |r| num(r, "ns_per_item"),
    },
    FutSpec {
        bench: "read-seq",
        name: "futures: sequential reads",
        metric: "ns per read",
        higher_better: false,
        config_name: "reads",
        split: no_split,
        config: |r| Some(r.get("reads")?.as_u64()?.to_string()),
        value: |r| num(r, "ns_per_item"),
    },
    FutSpec {
        bench: "read-concurrent",
        name: "futures: concurrent readers",
        metric: "us from completion to last read",
        higher_better: false,
        config_name: "readers",
        split: |r| Some(format!("on {}", str_of(r, "mode")?)),
        config: |r| Some(r.get("readers")?.as_u64()?.to_string()),
        value: |r| num(r, "after_complete_s").map(|s| s * 1e6),
    },
    FutSpec {
        bench: "first-completed",
        name: "futures: first completed of",
        metric: "accuracy (future 0 wins)",
        higher_better: true,
        config_name: "futures",
        split: no_split,
        config: |r| Some(r.get("futures")?.as_u64()?.to_string()),
        value: |r| num(r, "accuracy"),
    },
    FutSpec {
        bench: "callbacks",
        name: "futures: callbacks",
        metric: "us to the last callback",
        higher_better: false,
        config_name: "callbacks",
        split: |r| {
            Some(match r.get("delay_us")?.as_u64()? {
                0 => "future already complete".to_owned(),
                d => format!("completed after {} ms", d as f64 / 1000.0),
            })
        },
        config: |r| Some(r.get("count")?.as_u64()?.to_string()),
        value: |r| {
            num(r, "after_complete_s")
                .or_else(|| num(r, "seconds"))
                .map(|s| s * 1e6)
        },
    },
    FutSpec {
        bench: "philosophers",
        name: "futures: dining philosophers",
        metric: "ns per philosopher's try",
        higher_better: false,
        config_name: "philosophers",
        split: no_split,
        config: |r| Some(r.get("philosophers")?.as_u64()?.to_string()),
        value: |r| num(r, "ns_per_item"),
    },
];

pub(super) fn futures_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    for f in &FUTURES {
        let these: Vec<&Value> = recs
            .iter()
            .copied()
            .filter(|r| str_of(r, "bench") == Some(f.bench))
            .collect();
        let mut variants: Vec<String> = Vec::new();
        for r in &these {
            if let Some(v) = (f.split)(r) {
                if !variants.contains(&v) {
                    variants.push(v);
                }
            }
        }
        for v in variants {
            let part: Vec<&Value> = these
                .iter()
                .copied()
                .filter(|r| (f.split)(r).as_ref() == Some(&v))
                .collect();
            let name = if v.is_empty() {
                f.name.to_owned()
            } else {
                format!("{}, {v}", f.name)
            };
            groups.extend(build_with_cpu(
                &part,
                &Spec {
                    doc: Doc::D004,
                    name,
                    metric: f.metric,
                    higher_better: f.higher_better,
                    config_name: f.config_name,
                    config: &f.config,
                    series: &|r| str_of(r, "impl").map(str::to_owned),
                    value: &f.value,
                    ito: Some("ito"),
                    peers: None,
                },
            ));
        }
    }
}

/// The stm-bank comparison (runs without the auditor: an auditor's reads change what each
/// implementation does), and the audits per second of the runs with one, beside it.
pub(super) fn bank_groups(recs: &[&Value], groups: &mut Vec<Group>) {
    let (audited, plain): (Vec<&Value>, Vec<&Value>) =
        recs.iter().partition(|r| r.get("audits").is_some());
    groups.extend(build_with_cpu(
        &plain,
        &Spec {
            doc: Doc::D004,
            name: "stm-bank".into(),
            metric: "M transactions/s",
            higher_better: true,
            config_name: "threads",
            config: &|r| Some(r.get("threads")?.as_u64()?.to_string()),
            series: &|r| str_of(r, "impl").map(str::to_owned),
            value: &|r| num(r, "tx_per_s").map(|t| t / 1e6),
            ito: Some("ito"),
            peers: None,
        },
    ));
    groups.extend(build(
        &audited,
        &Spec {
            doc: Doc::D004,
            name: "stm-bank with the auditor: audits per second (not compared)".into(),
            metric: "audits/s",
            higher_better: true,
            config_name: "threads",
            config: &|r| Some(r.get("threads")?.as_u64()?.to_string()),
            series: &|r| str_of(r, "impl").map(str::to_owned),
            value: &|r| Some(num(r, "audits")? / num(r, "seconds")?),
            ito: None,
            peers: None,
        },
    ));
}
