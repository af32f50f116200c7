//! The runner's tests: children, timeouts, records, setups, the budget and failed series.

use super::*;
use crate::seeds::plan::{Doc, Step};

fn sh_step(script: &str, timeout: Duration, template: Option<Value>) -> Step {
    Step {
        doc: Doc::D000,
        label: "test step".into(),
        program: Program::Path("/bin/sh".into()),
        args: vec!["-c".into(), script.into()],
        parse: Parse::Records,
        timeout,
        estimate: Duration::from_millis(1),
        template,
        series: Some("s".into()),
        needs: Vec::new(),
        provides: None,
        ito_step: false,
        round: 1,
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ito-seeds-run-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// Whether process `pid` is gone (or a zombie: killed, not yet reaped by init).
fn gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

#[test]
fn a_child_that_never_ends_is_killed_with_its_group_and_recorded_as_a_timeout() {
    let dir = temp_dir("hang");
    let pidfile = dir.join("grandchild.pid");
    // A peer that starts a grandchild holding stdout and never ends (like a deadlocked
    // JVM under its run.sh).
    let script = format!("sleep 1000 & echo $! > {}; wait", pidfile.display());
    let template =
        serde_json::json!({"experiment": "fib", "impl": "scala", "style": "await", "ok": false});
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    let step = sh_step(&script, Duration::from_millis(300), Some(template));
    let start = Instant::now();
    let res = runner.run(&step);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the timeout bounded the step"
    );
    assert_eq!(res.outcome, Outcome::Timeout);
    assert_eq!(res.records.len(), 1);
    assert_eq!(res.records[0]["ok"], Value::Bool(false));
    assert_eq!(res.records[0]["error"], Value::from("timeout"));
    assert_eq!(res.records[0]["impl"], Value::from("scala"));
    let pid: u32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let killed = gone(pid);
    if !killed {
        // SAFETY: `kill` has no memory-safety preconditions; `pid` is the sleep this
        // test started (cleaned up before failing).
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
    assert!(killed, "the grandchild {pid} was killed with the group");
    // The series failed: its next step is not run, and stands in as failed.
    let next = runner.run(&sh_step(
        "echo never",
        Duration::from_secs(5),
        Some(serde_json::json!({"experiment": "fib"})),
    ));
    assert!(
        matches!(&next.outcome, Outcome::Skipped(w) if w.starts_with("not run")),
        "{:?}",
        next.outcome
    );
    assert_eq!(next.records[0]["not_run"], Value::Bool(true));
    assert_eq!(next.records[0]["ok"], Value::Bool(false));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_process_outside_the_group_holding_stdout_does_not_hang_the_step() {
    let dir = temp_dir("escape");
    let pidfile = dir.join("daemon.pid");
    // setsid: a new session and group (as a daemon would), out of reach of the kill.
    let script = format!(
        "echo '{{\"experiment\":\"x\",\"ok\":true}}'; setsid sleep 1000 & echo $! > {}; exit 0",
        pidfile.display()
    );
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    let mut step = sh_step(&script, Duration::from_secs(30), None);
    step.series = None;
    let start = Instant::now();
    let res = runner.run(&step);
    let took = start.elapsed();
    if let Ok(pid) = fs::read_to_string(&pidfile)
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
    {
        // SAFETY: `kill` has no memory-safety preconditions; `pid` is the sleep this
        // test started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    assert!(took < Duration::from_secs(15), "the step ended: {took:?}");
    assert_eq!(res.outcome, Outcome::Ok);
    assert_eq!(res.records.len(), 1, "the output before the exit was kept");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn records_skips_and_failures_are_read_from_the_output() {
    let dir = temp_dir("parse");
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    let ok = runner.run(&sh_step(
        r#"echo noise; echo '{"experiment":"x","ok":true}'"#,
        Duration::from_secs(10),
        None,
    ));
    assert_eq!(ok.outcome, Outcome::Ok);
    assert_eq!(ok.records.len(), 1);
    let t = serde_json::json!({"experiment": "chain", "impl": "go"});
    let mut step = sh_step(
        "echo 'skipped: go is not installed'",
        Duration::from_secs(10),
        Some(t.clone()),
    );
    step.series = None;
    let skip = runner.run(&step);
    assert_eq!(skip.outcome, Outcome::Skipped("go is not installed".into()));
    assert_eq!(
        skip.records[0]["skipped"],
        Value::from("go is not installed")
    );
    assert_eq!(skip.records[0]["ok"], Value::Bool(true));
    let mut step = sh_step("exit 3", Duration::from_secs(10), Some(t));
    step.series = None;
    let crash = runner.run(&step);
    assert!(matches!(crash.outcome, Outcome::Failed(_)));
    assert_eq!(crash.records[0]["ok"], Value::Bool(false));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_cutoff_over_the_budget_is_not_run_and_stands_in_as_not_measured() {
    let dir = temp_dir("budget");
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    // The series took a minute a run at cutoff 10: cutoff 5 is predicted over the budget.
    runner.budget.record("s", 10, 60.0);
    let marker = dir.join("ran");
    let t = serde_json::json!({"experiment": "fib", "impl": "tokio", "cutoff": 5});
    let step = sh_step(
        &format!("touch {}", marker.display()),
        Duration::from_secs(10),
        Some(t),
    );
    let res = runner.run(&step);
    assert!(
        matches!(&res.outcome, Outcome::Skipped(w) if w.starts_with(crate::seeds::budget::OVER_BUDGET)),
        "{:?}",
        res.outcome
    );
    assert!(!marker.exists(), "the step did not run");
    let rec = &res.records[0];
    assert_eq!(rec["not_run"], Value::Bool(true));
    assert_eq!(rec["over_budget"], Value::Bool(true));
    assert_eq!(rec["impl"], Value::from("tokio"));
    // Another series runs, and its run is recorded for its own prediction.
    let mut other = step.clone();
    other.series = Some("other".into());
    assert_eq!(runner.run(&other).outcome, Outcome::Ok);
    assert!(marker.exists());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_setup_skips_the_steps_that_need_it() {
    let dir = temp_dir("setup");
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    let mut setup = sh_step(
        "echo 'skipped: mvn is not installed'",
        Duration::from_secs(10),
        None,
    );
    setup.parse = Parse::Setup;
    setup.provides = Some("scala");
    setup.series = None;
    assert!(matches!(runner.run(&setup).outcome, Outcome::Skipped(_)));
    let mut step = sh_step(
        "echo ran",
        Duration::from_secs(10),
        Some(serde_json::json!({"experiment": "fib"})),
    );
    step.needs = vec!["scala"];
    let res = runner.run(&step);
    assert_eq!(res.outcome, Outcome::Skipped("mvn is not installed".into()));
    assert_eq!(
        res.records[0]["skipped"],
        Value::from("mvn is not installed")
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_cutoff_stops_its_series_there_and_finer_but_a_coarser_one_runs_in_a_later_round() {
    let dir = temp_dir("failed-cutoff");
    let mut runner = Runner::new(dir.clone(), PeerPolicy::None);
    let at = |cutoff: u64, script: &str| {
        let t = serde_json::json!({"experiment": "fib", "impl": "ito", "cutoff": cutoff});
        sh_step(script, Duration::from_secs(10), Some(t))
    };
    let ok = r#"echo '{"experiment":"fib","ok":true,"seconds":0.01}'"#;
    assert_eq!(runner.run(&at(20, ok)).outcome, Outcome::Ok);
    assert!(matches!(
        runner.run(&at(10, "exit 3")).outcome,
        Outcome::Failed(_)
    ));
    let finer = runner.run(&at(5, ok));
    assert!(matches!(&finer.outcome, Outcome::Skipped(why) if why.starts_with("not run")));
    assert_eq!(finer.records[0]["not_run"], Value::Bool(true));
    // The next round: the coarser cutoff runs again; the failed one and finer ones do not.
    assert_eq!(runner.run(&at(20, ok)).outcome, Outcome::Ok);
    assert!(matches!(
        runner.run(&at(10, ok)).outcome,
        Outcome::Skipped(_)
    ));
    assert!(matches!(
        runner.run(&at(5, ok)).outcome,
        Outcome::Skipped(_)
    ));
    // A failure at a coarser cutoff moves the line up.
    assert!(matches!(
        runner.run(&at(20, "exit 3")).outcome,
        Outcome::Failed(_)
    ));
    assert!(matches!(
        runner.run(&at(20, ok)).outcome,
        Outcome::Skipped(_)
    ));
    let _ = fs::remove_dir_all(&dir);
}
