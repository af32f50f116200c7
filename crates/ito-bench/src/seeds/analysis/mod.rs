//! From records to tables: for each experiment, every (series, configuration) cell (the
//! median, quartiles and count of its runs), and for each peer and configuration the ratio
//! of ito's cost to the peer's and the verdict ([`verdict`]).

use serde_json::Value;

use super::plan::Doc;
use super::schema;
mod groups;
pub(crate) mod verdict;

use groups::*;
use verdict::{Spread, Verdict};

/// One cell of a table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    /// The spread of the successful runs.
    Value(Spread),
    /// Every run failed; the first error.
    Failed(String),
    /// Not run, because a coarser configuration of the series failed.
    NotRun,
    /// Not run, because its runs were predicted to take longer than the time budget
    /// ([`crate::seeds::budget`]): not measured, and no failure.
    OverBudget,
    /// Skipped (a peer's toolchain is missing).
    Skipped(String),
    /// No record.
    Empty,
}

impl Cell {
    /// The value, if the cell has one.
    pub(crate) fn value(&self) -> Option<f64> {
        match self {
            Cell::Value(s) => Some(s.median),
            _ => None,
        }
    }

    /// The spread, if the cell has values.
    pub(crate) fn spread(&self) -> Option<&Spread> {
        match self {
            Cell::Value(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the runs of the cell failed (or were not run after a failure).
    pub(crate) fn failed(&self) -> bool {
        matches!(self, Cell::Failed(_) | Cell::NotRun)
    }
}

/// One experiment's table: series (rows: implementations) by configurations (sizes).
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The document.
    pub(crate) doc: Doc,
    /// A short name, unique in the report (also the plot's key).
    pub(crate) name: String,
    /// What a cell holds, with its unit (`seconds`, `ns per read`, `runs/s`).
    pub(crate) metric: String,
    /// Whether a bigger value is better (throughputs, accuracy).
    pub(crate) higher_better: bool,
    /// What the configurations are (`cutoff`, `N`, `query`).
    pub(crate) config_name: String,
    /// Configurations, in the order of the runs.
    pub(crate) configs: Vec<String>,
    /// Series, ito's first.
    pub(crate) series: Vec<String>,
    /// `cells[series][config]`.
    pub(crate) cells: Vec<Vec<Cell>>,
    /// The ito series the peers are compared with (`None`: a table without comparison).
    pub(crate) ito: Option<String>,
    /// The series compared with ito (`None`: every series but ito's own).
    pub(crate) peers: Option<Vec<String>>,
}

/// ito against one peer at one configuration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Versus {
    /// The configuration.
    pub(crate) config: String,
    /// ito's median cost over the peer's (below 1: ito is cheaper), where both have values.
    pub(crate) ratio: Option<f64>,
    /// The verdict.
    pub(crate) verdict: Verdict,
}

/// ito against one peer over a group's configurations.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    /// The peer's series.
    pub(crate) peer: String,
    /// Per configuration both ran (or one of them failed at).
    pub(crate) configs: Vec<Versus>,
    /// Why the peer did not run at all.
    pub(crate) skipped: Option<String>,
}

impl Comparison {
    /// The configurations where ito is not better (worse, tied, failed, or too few runs).
    pub(crate) fn not_better(&self) -> impl Iterator<Item = &Versus> {
        self.configs.iter().filter(|v| !v.verdict.ito_better())
    }

    /// How many configurations have `verdict`.
    pub(crate) fn count(&self, verdict: Verdict) -> usize {
        self.configs.iter().filter(|v| v.verdict == verdict).count()
    }
}

impl Group {
    /// The cell of `series` at `config`.
    pub(crate) fn cell(&self, series: &str, config: &str) -> &Cell {
        let s = self.series.iter().position(|x| x == series);
        let c = self.configs.iter().position(|x| x == config);
        match (s, c) {
            (Some(s), Some(c)) => &self.cells[s][c],
            _ => &Cell::Empty,
        }
    }

    /// ito against each peer.
    pub(crate) fn comparisons(&self) -> Vec<Comparison> {
        let Some(ito) = &self.ito else {
            return Vec::new();
        };
        let peers: Vec<&String> = match &self.peers {
            Some(p) => p.iter().filter(|p| self.series.contains(p)).collect(),
            // ito's other series (such as `ito-inline`) are shown, not compared.
            None => self
                .series
                .iter()
                .filter(|s| *s != ito && !s.starts_with("ito"))
                .collect(),
        };
        peers
            .into_iter()
            .map(|peer| {
                let mut c = Comparison {
                    peer: peer.clone(),
                    configs: Vec::new(),
                    skipped: None,
                };
                let mut skipped = 0;
                for config in &self.configs {
                    let (i, p) = (self.cell(ito, config), self.cell(peer, config));
                    if let Cell::Skipped(why) = p {
                        skipped += 1;
                        c.skipped.get_or_insert_with(|| why.clone());
                        continue;
                    }
                    let (ratio, verdict) = match (i.spread(), p.spread()) {
                        (Some(is), Some(ps)) => {
                            let r = if self.higher_better {
                                ps.median / is.median
                            } else {
                                is.median / ps.median
                            };
                            (Some(r), verdict::compare(is, ps, self.higher_better))
                        }
                        (Some(_), None) if p.failed() => (None, Verdict::PeerFailed),
                        (None, Some(_)) if i.failed() => (None, Verdict::ItoFailed),
                        _ => continue,
                    };
                    c.configs.push(Versus {
                        config: config.clone(),
                        ratio,
                        verdict,
                    });
                }
                if skipped == 0 || !c.configs.is_empty() {
                    c.skipped = None;
                }
                c
            })
            .collect()
    }
}

/// How to make one group from records.
struct Spec<'a> {
    doc: Doc,
    name: String,
    metric: &'a str,
    higher_better: bool,
    config_name: &'a str,
    config: &'a dyn Fn(&Value) -> Option<String>,
    series: &'a dyn Fn(&Value) -> Option<String>,
    value: &'a dyn Fn(&Value) -> Option<f64>,
    ito: Option<&'a str>,
    peers: Option<&'a [&'a str]>,
}

fn build(records: &[&Value], spec: &Spec) -> Option<Group> {
    let mut configs: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    let mut raw: Vec<(usize, usize, &Value)> = Vec::new();
    for r in records {
        let (Some(c), Some(s)) = ((spec.config)(r), (spec.series)(r)) else {
            continue;
        };
        let ci = configs.iter().position(|x| *x == c).unwrap_or_else(|| {
            configs.push(c);
            configs.len() - 1
        });
        let si = series.iter().position(|x| *x == s).unwrap_or_else(|| {
            series.push(s);
            series.len() - 1
        });
        raw.push((si, ci, r));
    }
    if raw.is_empty() {
        return None;
    }
    let mut cells = vec![vec![Cell::Empty; configs.len()]; series.len()];
    for (si, row) in cells.iter_mut().enumerate() {
        for (ci, cell) in row.iter_mut().enumerate() {
            let runs: Vec<&Value> = raw
                .iter()
                .filter(|(s, c, _)| *s == si && *c == ci)
                .map(|(_, _, r)| *r)
                .collect();
            *cell = aggregate(&runs, spec.value);
        }
    }
    // ito's series first, the others in the order they ran.
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| !series[i].starts_with("ito"));
    let series: Vec<String> = order.iter().map(|&i| series[i].clone()).collect();
    let cells: Vec<Vec<Cell>> = order.iter().map(|&i| cells[i].clone()).collect();
    Some(Group {
        doc: spec.doc,
        name: spec.name.clone(),
        metric: spec.metric.to_owned(),
        higher_better: spec.higher_better,
        config_name: spec.config_name.to_owned(),
        configs,
        series,
        cells,
        ito: spec.ito.map(str::to_owned),
        peers: spec
            .peers
            .map(|p| p.iter().map(|s| s.to_string()).collect()),
    })
}

/// The group of `spec` and, where it compares ito with peers and its records carry CPU
/// time, its CPU-time twin: the same cells, each the user plus system CPU seconds of its runs
/// over the span the group's own value covers.
fn build_with_cpu(records: &[&Value], spec: &Spec) -> Vec<Group> {
    let mut out: Vec<Group> = build(records, spec).into_iter().collect();
    let has_cpu = records.iter().any(|r| r.get("user_s").is_some());
    if spec.ito.is_some() && has_cpu && !out.is_empty() {
        let cpu = Spec {
            doc: spec.doc,
            name: format!("{}: CPU time", spec.name),
            metric: "CPU seconds, user + system, over the same span",
            higher_better: false,
            config_name: spec.config_name,
            config: spec.config,
            series: spec.series,
            value: &cpu_seconds,
            ito: spec.ito,
            peers: spec.peers,
        };
        out.extend(build(records, &cpu));
    }
    out
}

/// User plus system CPU seconds of a record.
pub(super) fn cpu_seconds(r: &Value) -> Option<f64> {
    Some(num(r, "user_s")? + num(r, "sys_s")?)
}

fn aggregate(runs: &[&Value], value: &dyn Fn(&Value) -> Option<f64>) -> Cell {
    if runs.is_empty() {
        return Cell::Empty;
    }
    let measured: Vec<&Value> = runs.iter().copied().filter(|r| is_measured(r)).collect();
    let values: Vec<f64> = measured.iter().filter_map(|r| value(r)).collect();
    // A run is long when the median run's own seconds are.
    let seconds: Vec<f64> = measured.iter().filter_map(|r| num(r, "seconds")).collect();
    let long = Spread::of(&seconds, false).is_some_and(|s| s.median > verdict::LONG_RUN_S);
    if let Some(s) = Spread::of(&values, long) {
        return Cell::Value(s);
    }
    if let Some(r) = runs
        .iter()
        .find(|r| r.get("ok") == Some(&Value::Bool(false)) && !not_run(r))
    {
        return Cell::Failed(str_of(r, "error").unwrap_or("failed").to_owned());
    }
    if runs
        .iter()
        .any(|r| r.get("over_budget") == Some(&Value::Bool(true)))
    {
        return Cell::OverBudget;
    }
    if runs.iter().any(|r| not_run(r)) {
        return Cell::NotRun;
    }
    match runs.iter().find_map(|r| str_of(r, "skipped")) {
        Some(why) => Cell::Skipped(why.to_owned()),
        None => Cell::Empty,
    }
}

fn not_run(r: &Value) -> bool {
    r.get("not_run") == Some(&Value::Bool(true))
}

/// A successful, non-skipped run.
pub(crate) fn is_measured(r: &Value) -> bool {
    r.get("ok") == Some(&Value::Bool(true)) && str_of(r, "skipped").is_none()
}

/// A string field.
pub(crate) fn str_of<'a>(r: &'a Value, k: &str) -> Option<&'a str> {
    r.get(k).and_then(Value::as_str)
}

/// A numeric field.
pub(crate) fn num(r: &Value, k: &str) -> Option<f64> {
    r.get(k).and_then(Value::as_f64)
}

/// An implementation's name with tokio's flavour (`tokio current-thread`).
fn imp_flavor(r: &Value) -> Option<String> {
    let imp = str_of(r, "impl")?;
    Some(match str_of(r, "flavor") {
        Some(f) => format!("{imp} {f}"),
        None => imp.to_owned(),
    })
}

/// `n` as `10k`, `1M`.
pub(crate) fn short_count(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Every group of a run.
pub(crate) struct Analysis {
    /// In document order.
    pub(crate) groups: Vec<Group>,
    /// Records that failed the schema check (left out), with why.
    pub(crate) schema_errors: Vec<(String, String)>,
}

/// The fib pairs: group name, the ito series, its peers.
pub(crate) const FIB_PAIRS: [(&str, &str, &[&str]); 4] = [
    (
        "fib: blocking wait (ito wait, tokio block_in_place, Scala Await.result)",
        "ito wait",
        &["tokio wait", "scala await"],
    ),
    (
        "fib: callbacks (ito flat, Scala map/flatMap)",
        "ito flat",
        &["scala flatmap"],
    ),
    (
        "fib: async/await (ito async, tokio spawn + await)",
        "ito async",
        &["tokio async"],
    ),
    (
        "fib: fork-join (ito join, rayon join)",
        "ito join",
        &["rayon join"],
    ),
];

/// The name of the fib table with every series.
pub(crate) const FIB_ALL: &str = "fib: every style";

impl Analysis {
    /// The groups of `records`.
    pub(crate) fn of(records: &[Value]) -> Analysis {
        let mut schema_errors = Vec::new();
        let good: Vec<&Value> = records
            .iter()
            .filter(|r| {
                let err = str_of(r, "schema_error")
                    .map(str::to_owned)
                    .or_else(|| schema::check(r).err());
                if let Some(e) = err {
                    schema_errors.push((r.to_string(), e));
                    false
                } else {
                    true
                }
            })
            .collect();
        let of = |exp: &str| -> Vec<&Value> {
            good.iter()
                .copied()
                .filter(|r| str_of(r, "experiment") == Some(exp))
                .collect()
        };
        let mut groups = Vec::new();
        fib_groups(&of("fib"), &mut groups);
        join_groups(&of("join"), &mut groups);
        process_groups(&of("chain"), &of("ping-pong"), &of("fan-in"), &mut groups);
        find_groups(&of("find"), &mut groups);
        pool_groups(&of("pool"), &mut groups);
        futures_groups(&of("futures"), &mut groups);
        bank_groups(&of("stm-bank"), &mut groups);
        Analysis {
            groups,
            schema_errors,
        }
    }

    /// The group named `name`.
    pub(crate) fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fib(imp: &str, style: &str, cutoff: u64, seconds: Option<f64>) -> Value {
        let mut r = json!({"experiment": "fib", "impl": imp, "style": style, "n": 30, "cutoff": cutoff,
            "workers": 2, "result": 832040, "seconds": seconds, "tasks": 1, "peak_threads": 3,
            "rss_bytes": 1, "commit": "c", "nproc": 2, "ok": seconds.is_some()});
        if seconds.is_none() {
            r["error"] = json!("timeout");
        }
        r
    }

    #[test]
    fn spreads_ratios_failures_and_verdicts() {
        let mut recs = Vec::new();
        // ito at cutoff 20: five runs 1..5 s; tokio: five runs 7..11 s (apart: better).
        for s in [3.0, 1.0, 5.0, 2.0, 4.0] {
            recs.push(fib("ito", "wait", 20, Some(s)));
            recs.push(fib("tokio", "wait", 20, Some(s + 6.0)));
        }
        // Cutoff 15: overlapping ranges (a tie, though ito's median is lower).
        for (i, t) in [(1.0, 1.5), (2.0, 2.5), (3.0, 3.5), (4.0, 4.5), (5.0, 5.5)] {
            recs.push(fib("ito", "wait", 15, Some(i)));
            recs.push(fib("tokio", "wait", 15, Some(t)));
        }
        // Cutoff 12: one run each (too few for a verdict).
        recs.push(fib("ito", "wait", 12, Some(1.0)));
        recs.push(fib("tokio", "wait", 12, Some(9.0)));
        recs.push(fib("ito", "wait", 10, Some(1.0)));
        recs.push(fib("tokio", "wait", 10, None));
        recs.push(fib("ito", "wait", 5, Some(1.0)));
        let mut nr = fib("tokio", "wait", 5, None);
        nr["not_run"] = json!(true);
        recs.push(nr);
        let mut sk = fib("scala", "await", 20, None);
        sk["ok"] = json!(true);
        sk["skipped"] = json!("mvn is not installed");
        recs.push(sk);
        let a = Analysis::of(&recs);
        assert!(a.schema_errors.is_empty(), "{:?}", a.schema_errors);
        let g = a.group(FIB_PAIRS[0].0).expect("the blocking pair");
        assert_eq!(g.series, ["ito wait", "tokio wait", "scala await"]);
        let s = g.cell("ito wait", "20").spread().unwrap();
        assert_eq!((s.median, s.q1, s.q3, s.runs), (3.0, 2.0, 4.0, 5));
        assert_eq!(g.cell("tokio wait", "10"), &Cell::Failed("timeout".into()));
        assert_eq!(g.cell("tokio wait", "5"), &Cell::NotRun);
        let cs = g.comparisons();
        assert_eq!(cs.len(), 2);
        let verdicts: Vec<(&str, Option<f64>, Verdict)> = cs[0]
            .configs
            .iter()
            .map(|v| (v.config.as_str(), v.ratio, v.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("20", Some(3.0 / 9.0), Verdict::Better),
                ("15", Some(3.0 / 3.5), Verdict::Tie),
                ("12", Some(1.0 / 9.0), Verdict::FewRuns),
                ("10", None, Verdict::PeerFailed),
                ("5", None, Verdict::PeerFailed),
            ]
        );
        let not_better: Vec<&str> = cs[0].not_better().map(|v| v.config.as_str()).collect();
        assert_eq!(not_better, ["15", "12"]);
        assert_eq!(cs[1].skipped.as_deref(), Some("mvn is not installed"));
        assert!(cs[1].configs.is_empty());
    }

    #[test]
    fn a_cell_over_the_time_budget_is_not_measured_and_has_no_verdict() {
        let over = |imp: &str, style: &str, cutoff: u64| {
            let mut r = fib(imp, style, cutoff, None);
            r["error"] = json!("over the time budget: predicted 69 s");
            r["not_run"] = json!(true);
            r["over_budget"] = json!(true);
            r
        };
        let mut recs = Vec::new();
        for i in 0..5 {
            let d = f64::from(i) * 0.01;
            recs.push(fib("ito", "async", 10, Some(1.0 + d)));
            recs.push(fib("tokio", "async", 10, Some(5.0 + d)));
            // The peer over the budget at cutoff 5, ito over it at cutoff 2.
            recs.push(fib("ito", "async", 5, Some(3.0 + d)));
            recs.push(over("tokio", "async", 5));
            recs.push(over("ito", "async", 2));
            recs.push(fib("tokio", "async", 2, None));
        }
        let a = Analysis::of(&recs);
        assert!(a.schema_errors.is_empty(), "{:?}", a.schema_errors);
        let g = a.group(FIB_PAIRS[2].0).expect("the async pair");
        assert_eq!(g.cell("tokio async", "5"), &Cell::OverBudget);
        assert_eq!(g.cell("ito async", "2"), &Cell::OverBudget);
        assert!(!g.cell("ito async", "2").failed());
        // ito's own cell is kept where the peer's is over the budget.
        assert!(g.cell("ito async", "5").spread().is_some());
        let c = &g.comparisons()[0];
        let configs: Vec<&str> = c.configs.iter().map(|v| v.config.as_str()).collect();
        assert_eq!(
            configs,
            ["10"],
            "no verdict where either cell is over the budget"
        );
        assert_eq!(c.configs[0].verdict, Verdict::Better);
    }

    #[test]
    fn scala_is_also_compared_over_each_languages_own_sequential_fib() {
        let mut recs = Vec::new();
        for i in 0..5 {
            let d = f64::from(i) * 0.01;
            recs.push(fib("seq", "seq", 30, Some(1.0 + d)));
            recs.push(fib("scala", "seq", 30, Some(2.0 + d)));
            recs.push(fib("ito", "flat", 20, Some(1.5 + d)));
            recs.push(fib("scala", "flatmap", 20, Some(2.5 + d)));
        }
        let a = Analysis::of(&recs);
        assert!(a.schema_errors.is_empty(), "{:?}", a.schema_errors);
        // The sequential runs are baselines, not series.
        let all = a.group(FIB_ALL).unwrap();
        assert_eq!(all.series, ["ito flat", "scala flatmap"]);
        let raw = &a.group(FIB_PAIRS[1].0).unwrap().comparisons()[0];
        assert_eq!(raw.configs[0].verdict, Verdict::Better);
        // ito: 1.52 / 1.02; Scala: 2.52 / 2.02.
        let name = format!(
            "{}: over each language's own sequential fib",
            FIB_PAIRS[1].0
        );
        let own = &a.group(&name).unwrap().comparisons()[0];
        assert_eq!(own.peer, "scala flatmap");
        assert_eq!(own.configs[0].verdict, Verdict::Worse);
    }

    #[test]
    fn higher_is_better_inverts_the_ratio_and_ito_failures_lose() {
        let bank = |imp: &str, tx: f64, ok: bool| {
            json!({"experiment": "stm-bank", "impl": imp, "threads": 2,
            "accounts": 8, "ops": 10, "rep": 0, "seconds": 1.0, "tx_per_s": tx, "total_ok": true,
            "commit": "c", "nproc": 2, "ok": ok})
        };
        let mut recs = Vec::new();
        for i in 0..5 {
            recs.push(bank("ito", 2e6 + f64::from(i), true));
            recs.push(bank("mutex", 8e6 + f64::from(i), true));
        }
        let a = Analysis::of(&recs);
        let c = &a.group("stm-bank").unwrap().comparisons()[0];
        assert!((c.configs[0].ratio.unwrap() - 4.0).abs() < 1e-3);
        assert_eq!(c.configs[0].verdict, Verdict::Worse);
        let a = Analysis::of(&[bank("ito", 1.0, false), bank("mutex", 8e6, true)]);
        let c = &a.group("stm-bank").unwrap().comparisons()[0];
        assert_eq!(c.configs[0].verdict, Verdict::ItoFailed);
        assert_eq!(c.not_better().count(), 1);
    }
}
