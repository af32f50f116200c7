//! Export to Chrome's trace-event JSON format, which Perfetto (ui.perfetto.dev) and
//! `chrome://tracing` open. Written by hand: ito has no JSON dependency.
//!
//! One track (`tid`) per thread, named by a `thread_name` metadata event. Runs of tasks,
//! parks, blocks, blocking-pool jobs, stolen join jobs and user spans are complete events
//! (`X`); spawns, wake-ups, steals, timer fires and the rest are thread-scoped instant events
//! (`i`). A flow (`s` to `f`) joins each spawn, and each wake-up, to the task's next run. A
//! task spawned with a name has it on each of its runs, until its address is spawned again.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::event::{Event, FROM_INJECTOR, Kind};

/// An interval open on a track: what it shows, when it started, and its arguments: the task
/// it runs and that task's name.
struct Open {
    name: &'static str,
    start: u64,
    task: Option<u64>,
    label: Option<&'static str>,
}

impl Open {
    /// A slice that runs no task.
    fn state(name: &'static str, start: u64) -> Open {
        Open {
            name,
            start,
            task: None,
            label: None,
        }
    }
}

/// Writes `tracks` (a name and its events, oldest first, per thread) as one JSON document.
pub(crate) fn write(out: &mut impl Write, tracks: &[(String, Vec<Event>)]) -> io::Result<()> {
    let mut w = Writer {
        out,
        first: true,
        line: String::new(),
    };
    w.out
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    w.raw(r#"{"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"ito"}}"#)?;
    for (i, (name, _)) in tracks.iter().enumerate() {
        let tid = i + 1;
        let mut s =
            format!(r#"{{"ph":"M","pid":1,"tid":{tid},"name":"thread_name","args":{{"name":"#);
        escape(&mut s, name);
        s.push_str("}}");
        w.raw(&s)?;
        w.raw(&format!(
            r#"{{"ph":"M","pid":1,"tid":{tid},"name":"thread_sort_index","args":{{"sort_index":{tid}}}}}"#
        ))?;
    }
    // Flows cross threads: walk every event in time order.
    let mut all: Vec<(u64, usize, usize)> = Vec::new();
    for (i, (_, evs)) in tracks.iter().enumerate() {
        all.extend(evs.iter().enumerate().map(|(j, e)| (e.t, i, j)));
    }
    all.sort_unstable();
    let end = all.last().map_or(0, |e| e.0);
    let mut open: Vec<Vec<Open>> = tracks.iter().map(|_| Vec::new()).collect();
    // A task spawned or woken, and not run since: its flow's id and name.
    let mut pending: HashMap<u64, (u64, &'static str)> = HashMap::new();
    // The names of named tasks, by task id, from their spawn until the id's next spawn.
    let mut names: HashMap<u64, &'static str> = HashMap::new();
    let mut next_flow = 1u64;
    for (t, i, j) in all {
        let tid = i + 1;
        let kind = tracks[i].1[j].kind;
        match kind {
            Kind::PollStart { task } | Kind::HelpStart { task } => {
                let name = if matches!(kind, Kind::PollStart { .. }) {
                    "poll"
                } else {
                    "help"
                };
                if let Some((id, flow)) = pending.remove(&task) {
                    w.raw(&format!(
                        r#"{{"ph":"f","bp":"e","pid":1,"tid":{tid},"ts":{},"name":"{flow}","cat":"flow","id":{id}}}"#,
                        Us(t)
                    ))?;
                }
                open[i].push(Open {
                    name,
                    start: t,
                    task: Some(task),
                    label: names.get(&task).copied(),
                });
            }
            Kind::Park { why } => open[i].push(Open::state(why.name(), t)),
            Kind::BlockingStart => open[i].push(Open::state("blocking job", t)),
            Kind::JoinJobStart => open[i].push(Open::state("join job", t)),
            Kind::PollEnd | Kind::Unpark | Kind::BlockingEnd | Kind::JoinJobEnd => {
                if let Some(o) = open[i].pop() {
                    w.complete(tid, &o, t)?;
                }
            }
            Kind::Span { name, start } => w.complete(tid, &Open::state(name, start), t)?,
            Kind::Spawn { task, parent, name } => {
                let mut args = format!(r#"{{"task":"{task:#x}","parent":"{parent:#x}""#);
                match name {
                    Some(name) => {
                        args.push_str(r#","name":"#);
                        escape(&mut args, name);
                        names.insert(task, name);
                    }
                    None => {
                        names.remove(&task);
                    }
                }
                args.push('}');
                w.flow_origin(tid, t, "spawn", &args, next_flow)?;
                pending.insert(task, (next_flow, "spawn"));
                next_flow += 1;
            }
            Kind::Wake { task, by } => {
                let args = format!(r#"{{"task":"{task:#x}","by":"{by:#x}"}}"#);
                w.flow_origin(tid, t, "wake", &args, next_flow)?;
                pending.insert(task, (next_flow, "wake"));
                next_flow += 1;
            }
            Kind::Steal { from, n } => {
                let from = if from == FROM_INJECTOR {
                    "\"injector\"".to_owned()
                } else {
                    from.to_string()
                };
                w.instant(tid, t, "steal", &format!(r#"{{"from":{from},"n":{n}}}"#))?;
            }
            Kind::CompensationStart { slot } => w.instant(
                tid,
                t,
                "compensation start",
                &format!(r#"{{"slot":{slot}}}"#),
            )?,
            Kind::CompensationRetire => w.instant(tid, t, "compensation retire", "{}")?,
            Kind::Suspend => {
                if let Some(o) = open[i].pop() {
                    w.complete(tid, &o, t)?;
                }
                w.instant(tid, t, "task suspended", "{}")?;
            }
            Kind::Resume { task } => {
                w.instant(
                    tid,
                    t,
                    "task resumed",
                    &format!(r#"{{"task":"{task:#x}"}}"#),
                )?;
                open[i].push(Open {
                    name: "poll (resumed)",
                    start: t,
                    task: Some(task),
                    label: names.get(&task).copied(),
                });
            }
            Kind::JoinExpose { n } => {
                w.instant(tid, t, "join expose", &format!(r#"{{"n":{n}}}"#))?;
            }
            Kind::JoinSteal => w.instant(tid, t, "join steal", "{}")?,
            Kind::TimerFire { n } => {
                w.instant(tid, t, "timer fire", &format!(r#"{{"n":{n}}}"#))?;
            }
            Kind::ProcessSpawn { pid } => {
                w.instant(tid, t, "process spawn", &format!(r#"{{"pid":"{pid:#x}"}}"#))?;
            }
            Kind::ProcessExit { pid, normal } => w.instant(
                tid,
                t,
                "process exit",
                &format!(r#"{{"pid":"{pid:#x}","normal":{normal}}}"#),
            )?,
            Kind::User { name } => {
                let mut s = String::from("user: ");
                s.push_str(name);
                w.instant(tid, t, &s, "{}")?;
            }
        }
    }
    // Runs still open when the snapshot was taken end at the last event.
    for (i, stack) in open.iter().enumerate() {
        for o in stack {
            w.complete(i + 1, o, end)?;
        }
    }
    w.out.write_all(b"\n]}\n")
}

/// Nanoseconds shown as the format's microseconds, to the nanosecond.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

struct Writer<'a, W: Write> {
    out: &'a mut W,
    first: bool,
    line: String,
}

impl<W: Write> Writer<'_, W> {
    /// Writes one event object, comma-separated from the previous one.
    fn raw(&mut self, ev: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(ev.as_bytes())
    }

    fn complete(&mut self, tid: usize, o: &Open, end: u64) -> io::Result<()> {
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        let _ = write!(
            s,
            r#"{{"ph":"X","pid":1,"tid":{tid},"ts":{},"dur":{},"name":"#,
            Us(o.start),
            Us(end.saturating_sub(o.start))
        );
        escape(&mut s, o.name);
        if let Some(task) = o.task {
            let _ = write!(s, r#","args":{{"task":"{task:#x}""#);
            if let Some(label) = o.label {
                s.push_str(r#","name":"#);
                escape(&mut s, label);
            }
            s.push('}');
        }
        s.push('}');
        let r = self.raw(&s);
        self.line = s;
        r
    }

    fn instant(&mut self, tid: usize, t: u64, name: &str, args: &str) -> io::Result<()> {
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        let _ = write!(
            s,
            r#"{{"ph":"i","s":"t","pid":1,"tid":{tid},"ts":{},"name":"#,
            Us(t)
        );
        escape(&mut s, name);
        let _ = write!(s, r#","args":{args}}}"#);
        let r = self.raw(&s);
        self.line = s;
        r
    }

    /// An instant event that starts flow `id` (a spawn or a wake-up).
    fn flow_origin(
        &mut self,
        tid: usize,
        t: u64,
        name: &str,
        args: &str,
        id: u64,
    ) -> io::Result<()> {
        self.instant(tid, t, name, args)?;
        self.raw(&format!(
            r#"{{"ph":"s","pid":1,"tid":{tid},"ts":{},"name":"{name}","cat":"flow","id":{id}}}"#,
            Us(t)
        ))
    }
}

/// Appends `s` as a JSON string literal.
pub(crate) fn escape(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::escape;

    #[test]
    fn escape_quotes_controls_and_backslashes() {
        let mut s = String::new();
        escape(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }
}
