//! Runs one step: a child process in its own process group, killed (the whole group) at its
//! timeout, its stdout turned into records and its stderr kept in a log file.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::PeerPolicy;
use super::analysis::is_measured;
use super::budget::Budget;
use super::plan::{Parse, Program, Step};
use crate::measure::CpuTime;

/// How a step ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// It exited with status 0.
    Ok,
    /// It exited otherwise, or could not start.
    Failed(String),
    /// It ran past its timeout and its process group was killed.
    Timeout,
    /// It did not run.
    Skipped(String),
}

impl Outcome {
    /// One line for the progress output and the report.
    pub(crate) fn describe(&self, seconds: f64) -> String {
        match self {
            Outcome::Ok => format!("ok ({seconds:.1} s)"),
            Outcome::Failed(why) => format!("failed: {why} ({seconds:.1} s)"),
            Outcome::Timeout => format!("timeout: killed after {seconds:.1} s"),
            Outcome::Skipped(why) => format!("skipped: {why}"),
        }
    }
}

/// What a step left.
#[derive(Debug)]
pub(crate) struct StepResult {
    /// How it ended.
    pub(crate) outcome: Outcome,
    /// Its records (or the one its template stands in with).
    pub(crate) records: Vec<Value>,
    /// Wall-clock seconds.
    pub(crate) seconds: f64,
}

/// What a child process left.
#[derive(Debug)]
pub(crate) struct ChildRun {
    /// Its stdout.
    pub(crate) stdout: String,
    /// Its exit status; `None` if it was killed at the timeout.
    pub(crate) status: Option<ExitStatus>,
    /// Wall-clock seconds.
    pub(crate) seconds: f64,
    /// CPU time of the child and of the descendants it waited for.
    pub(crate) cpu: CpuTime,
}

/// How long the output is waited for once the child has ended and its group is killed.
const READER_GRACE: Duration = Duration::from_secs(2);

/// Runs `program args` in a new process group with `stderr` appended to `log`, and kills
/// the whole group after `timeout` (and, once the child has exited, whatever it left
/// behind in its group, so that a grandchild holding stdout cannot hang the reader).
pub(crate) fn run_child(
    program: &Path,
    args: &[String],
    envs: &[(&str, &str)],
    log: &Path,
    timeout: Duration,
) -> io::Result<ChildRun> {
    let stderr = OpenOptions::new().create(true).append(true).open(log)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    // Steps run one at a time, and nothing else this process waits for runs meanwhile: the
    // growth of its children's CPU time is this child's.
    let cpu_before = CpuTime::of_children();
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("stdout is piped");
    // The reader appends as it reads, so that what came before can be taken even if a
    // process outside the group (a daemon a peer started) keeps the pipe open.
    let buf = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    {
        let buf = Arc::clone(&buf);
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = out.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]);
            }
            let _ = done_tx.send(());
        });
    }
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(pgid);
                let _ = child.wait();
                break None;
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill_group(pgid);
                let _ = child.wait();
                return Err(e);
            }
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    // Stragglers (a peer script's background job, a grandchild a crashed child left).
    kill_group(pgid);
    let _ = done_rx.recv_timeout(READER_GRACE);
    let stdout =
        String::from_utf8_lossy(&buf.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    Ok(ChildRun {
        stdout,
        status,
        seconds,
        cpu: CpuTime::of_children().since(cpu_before),
    })
}

/// Sends SIGKILL to every process of the group `pgid` (made by `process_group(0)`, so its
/// id is the child's pid; nothing else is in it).
fn kill_group(pgid: i32) {
    // SAFETY: `kill` has no memory-safety preconditions; a negative pid names the process
    // group `-pid`, which is the group this module created for its child (pgid > 0: a real
    // child's pid), so no other process is signalled. ESRCH (group already gone) is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Runs steps in order, remembering failed fib series, the run times of each series (for
/// its time budget) and setup results.
pub(crate) struct Runner {
    logs: PathBuf,
    peers: PeerPolicy,
    /// series -> the label and cutoff of its coarsest step that failed: its steps at that
    /// cutoff and finer ones do not run, in this round or a later one (a series without
    /// cutoffs: none of its steps).
    failed_series: HashMap<String, (String, Option<u64>)>,
    /// The run times of the series, and their cutoffs over the budget.
    budget: Budget,
    /// setup -> why it is not available (absent: not run yet; `None`: available).
    setups: HashMap<&'static str, Option<String>>,
}

impl Runner {
    /// A runner writing the steps' stderr to files in `logs`.
    pub(crate) fn new(logs: PathBuf, peers: PeerPolicy) -> Self {
        Runner {
            logs,
            peers,
            failed_series: HashMap::new(),
            budget: Budget::default(),
            setups: HashMap::new(),
        }
    }

    /// Runs `step` (or skips it), and returns what it left.
    pub(crate) fn run(&mut self, step: &Step) -> StepResult {
        if let Some(why) = self.why_not(step) {
            let records = match (
                &step.template,
                step.series.is_some() && why.starts_with("not run"),
            ) {
                (Some(t), true) => vec![stand_in(t, &why, true)],
                (Some(t), false) => vec![skipped(t, &why)],
                (None, _) => Vec::new(),
            };
            return StepResult {
                outcome: Outcome::Skipped(why),
                records,
                seconds: 0.0,
            };
        }
        let budgeted = budget_key(step);
        if let Some((series, cutoff)) = budgeted {
            if let Some(why) = self.budget.over(series, cutoff) {
                return StepResult {
                    records: step.template.iter().map(|t| over_budget(t, &why)).collect(),
                    outcome: Outcome::Skipped(why),
                    seconds: 0.0,
                };
            }
        }
        let res = self.execute(step);
        if let Some((series, cutoff)) = budgeted {
            let runs = res.records.iter().filter(|r| is_measured(r)).count();
            if runs > 0 {
                self.budget
                    .record(series, cutoff, res.seconds / runs as f64);
            }
        }
        if let Some(key) = step.provides {
            let state = match &res.outcome {
                Outcome::Ok => None,
                Outcome::Skipped(why) => Some(why.clone()),
                other => Some(format!(
                    "setup '{}' {}",
                    step.label,
                    other.describe(res.seconds)
                )),
            };
            self.setups.insert(key, state);
        }
        if let Some(series) = &step.series {
            let failed = res
                .records
                .iter()
                .any(|r| r.get("ok") == Some(&Value::Bool(false)));
            let cutoff = budget_key(step).map(|(_, c)| c);
            let coarser = |(_, had): &(String, Option<u64>)| match (had, cutoff) {
                (Some(had), Some(c)) => c > *had,
                _ => false,
            };
            if failed && self.failed_series.get(series).is_none_or(coarser) {
                self.failed_series
                    .insert(series.clone(), (step.label.clone(), cutoff));
            }
        }
        res
    }

    /// Why `step` must not run, if it must not.
    fn why_not(&self, step: &Step) -> Option<String> {
        for need in &step.needs {
            match self.setups.get(need) {
                Some(None) => {}
                Some(Some(why)) => return Some(why.clone()),
                None => return Some(format!("setup '{need}' did not run")),
            }
        }
        let series = step.series.as_ref()?;
        let (failed_at, failed_cutoff) = self.failed_series.get(series)?;
        let cutoff = budget_key(step).map(|(_, c)| c);
        if let (Some(failed), Some(c)) = (failed_cutoff, cutoff) {
            if c > *failed {
                return None;
            }
        }
        Some(format!("not run: '{failed_at}' failed or timed out"))
    }

    fn execute(&self, step: &Step) -> StepResult {
        let program = match &step.program {
            Program::SelfExe => match std::env::current_exe() {
                Ok(p) => p,
                Err(e) => {
                    return self.failure(step, format!("cannot find this executable: {e}"), 0.0);
                }
            },
            Program::Path(p) => p.clone(),
        };
        let log = self.logs.join(log_name(&step.label));
        let no_build = if self.peers == PeerPolicy::All {
            "0"
        } else {
            "1"
        };
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&log) {
            let _ = writeln!(f, "$ {} {}", program.display(), step.args.join(" "));
        }
        let run = match run_child(
            &program,
            &step.args,
            &[("ITO_PEER_NO_BUILD", no_build)],
            &log,
            step.timeout,
        ) {
            Ok(r) => r,
            Err(e) => {
                return self.failure(step, format!("cannot run {}: {e}", program.display()), 0.0);
            }
        };
        let _ = fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(run.stdout.as_bytes()));
        let outcome = match run.status {
            None => Outcome::Timeout,
            Some(st) if st.success() => Outcome::Ok,
            Some(st) => Outcome::Failed(match st.code() {
                Some(c) => format!("exit status {c}"),
                None => format!("{st}"),
            }),
        };
        let mut res = interpret(step, &run.stdout, outcome, run.seconds);
        // A peer's process that printed one measurement and no CPU time of its own (the
        // Scala fib): the process's CPU time is that measurement's (the JVM's start included).
        if let [rec] = &mut res.records[..] {
            if rec.get("user_s").is_none() && is_measured(rec) {
                rec["user_s"] = Value::from(run.cpu.user_s);
                rec["sys_s"] = Value::from(run.cpu.sys_s);
            }
        }
        res
    }

    fn failure(&self, step: &Step, why: String, seconds: f64) -> StepResult {
        StepResult {
            records: step
                .template
                .iter()
                .map(|t| stand_in(t, &why, false))
                .collect(),
            outcome: Outcome::Failed(why),
            seconds,
        }
    }
}

/// Turns a child's output into records: parsed lines, or the template standing in for a
/// run that left none.
pub(crate) fn interpret(step: &Step, stdout: &str, outcome: Outcome, seconds: f64) -> StepResult {
    let skip_line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("skipped"))
        .map(|r| r.trim_start_matches([':', ' ']).to_owned());
    let mut records: Vec<Value> = match &step.parse {
        Parse::Records => stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .filter(|v| v.get("experiment").is_some_and(Value::is_string))
            .collect(),
        Parse::Setup => Vec::new(),
        Parse::ScalaFib { n, .. } => stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .filter_map(|line| scala_record(step.template.as_ref()?, &line, *n))
            .take(1)
            .collect(),
    };
    let outcome = match (outcome, &skip_line) {
        (Outcome::Ok, Some(why)) => Outcome::Skipped(why.clone()),
        (o, _) => o,
    };
    if let Some(t) = &step.template {
        match &outcome {
            Outcome::Skipped(why) if records.is_empty() => records.push(skipped(t, why)),
            Outcome::Timeout => match records.last_mut() {
                // A child that reported and then hung: the run is not a success.
                Some(last) if last.get("ok") == Some(&Value::Bool(true)) => {
                    last["ok"] = Value::Bool(false);
                    last["error"] = Value::from("timeout after reporting");
                }
                Some(_) => {}
                None => records.push(stand_in(t, "timeout", false)),
            },
            Outcome::Failed(why) if records.is_empty() => records.push(stand_in(t, why, false)),
            Outcome::Ok if records.is_empty() => records.push(stand_in(t, "no output", false)),
            _ => {}
        }
    }
    // A multi-record step (chain, pool, ...) that hung: say so on a record of its own kind.
    if outcome == Outcome::Timeout && step.template.is_none() {
        if let Some(last) = records.last_mut() {
            last["ok"] = Value::Bool(false);
            last["error"] = Value::from("the step timed out after this record");
        }
    }
    StepResult {
        outcome,
        records,
        seconds,
    }
}

/// The Scala peer's line as a fib record.
fn scala_record(template: &Value, line: &Value, n: u64) -> Option<Value> {
    let result = line.get("result")?.as_u64()?;
    let mut rec = template.clone();
    rec["result"] = Value::from(result);
    rec["seconds"] = line.get("seconds")?.clone();
    rec["rss_bytes"] = line.get("rss_bytes").cloned().unwrap_or(Value::Null);
    rec["peak_threads"] = line.get("peak_threads").cloned().unwrap_or(Value::Null);
    rec["tasks"] = Value::from(crate::fib::task_count(n, rec["cutoff"].as_u64()?));
    let ok = result == crate::fib::fib_reference(n);
    rec["ok"] = Value::Bool(ok);
    if !ok {
        rec["error"] = Value::from("wrong result");
    }
    Some(rec)
}

/// The template as a failed run.
fn stand_in(template: &Value, why: &str, not_run: bool) -> Value {
    let mut rec = template.clone();
    rec["ok"] = Value::Bool(false);
    rec["error"] = Value::from(why);
    if not_run {
        rec["not_run"] = Value::Bool(true);
    }
    rec
}

/// The series and cutoff of a step of a fib series (whose runs the budget covers).
fn budget_key(step: &Step) -> Option<(&str, u64)> {
    let cutoff = step.template.as_ref()?.get("cutoff")?.as_u64()?;
    Some((step.series.as_deref()?, cutoff))
}

/// The template as a run not run for the time budget: not measured, and no failure.
fn over_budget(template: &Value, why: &str) -> Value {
    let mut rec = stand_in(template, why, true);
    rec["over_budget"] = Value::Bool(true);
    rec
}

/// The template as a skipped run (a missing toolchain is not a failure).
fn skipped(template: &Value, why: &str) -> Value {
    let mut rec = template.clone();
    rec["ok"] = Value::Bool(true);
    rec["skipped"] = Value::from(why);
    rec
}

/// A file name for a step's log.
fn log_name(label: &str) -> String {
    let mut s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    format!("{}.log", s.trim_matches('-'))
}

#[cfg(test)]
mod tests;
