//! Reading an ito trace (Chrome trace-event JSON, as `ito::Runtime::builder().trace(..)`
//! writes it) into one timeline of states per thread.

use serde::Deserialize;

/// What a thread is doing, as the drawing colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum State {
    /// A worker runs a task (or a blocking-pool thread runs a job).
    Running,
    /// A compensation thread runs a task.
    Compensating,
    /// A runtime thread between runs, neither parked nor blocked: looking for work.
    Searching,
    /// Parked for lack of work (or retired).
    Parked,
    /// Blocked in a wait (`wait`, a join latch, `block_on`, an STM retry).
    Blocked,
}

impl State {
    /// Every state, in the order the drawing lists them.
    pub(crate) const ALL: [State; 5] = [
        State::Running,
        State::Compensating,
        State::Searching,
        State::Parked,
        State::Blocked,
    ];

    /// The state's index in [`State::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Whether a thread in this state runs a task.
    pub(crate) fn is_running(self) -> bool {
        matches!(self, State::Running | State::Compensating)
    }
}

/// One thread's track: its name, its states as non-overlapping segments in time order, and
/// the instants of its spawns and steals (microseconds from the trace's start).
#[derive(Debug, Default)]
pub(crate) struct Track {
    pub(crate) name: String,
    pub(crate) segments: Vec<(f64, f64, State)>,
    pub(crate) spawns: Vec<f64>,
    pub(crate) steals: Vec<f64>,
}

/// A whole trace: its tracks, by thread id, and its time span.
#[derive(Debug)]
pub(crate) struct Timeline {
    pub(crate) tracks: Vec<Track>,
    pub(crate) start: f64,
    pub(crate) end: f64,
}

/// The state an `X` event named `name` puts its thread in, on a thread named `thread`;
/// `None` for slices that say nothing about the scheduler (user spans).
fn state_of(name: &str, thread: &str) -> Option<State> {
    if name == "poll" || name == "help" || name == "blocking job" {
        Some(if thread.contains("-comp-") {
            State::Compensating
        } else {
            State::Running
        })
    } else if name.starts_with("park: ") {
        Some(State::Parked)
    } else if name.starts_with("blocked: ") {
        Some(State::Blocked)
    } else {
        None
    }
}

/// Whether a thread of this name is one of the runtime's scheduler threads, which search
/// between runs (and not a thread that called `block_on`, or a blocking-pool thread).
fn searches(thread: &str) -> bool {
    thread.contains("-worker-") || thread.contains("-comp-")
}

/// The fields of a trace event the drawing reads (the others are skipped while parsing, so
/// a large trace is not held as a tree of JSON values).
#[derive(Deserialize)]
struct RawEvent {
    ph: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    tid: u64,
    ts: Option<f64>,
    dur: Option<f64>,
    args: Option<RawArgs>,
}

/// A metadata event's arguments: a thread's name.
#[derive(Deserialize)]
struct RawArgs {
    name: Option<String>,
}

/// A trace file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTrace {
    trace_events: Vec<RawEvent>,
}

/// Parses a trace file's text.
pub(crate) fn parse(text: &str) -> Result<Timeline, String> {
    let doc: RawTrace =
        serde_json::from_str(text).map_err(|e| format!("not a Chrome trace-event file: {e}"))?;
    let events = doc.trace_events;
    let mut tids: Vec<u64> = Vec::new();
    let mut tracks: Vec<Track> = Vec::new();
    let mut slices: Vec<Vec<(f64, f64, State)>> = Vec::new();
    let mut index = |tid: u64, tracks: &mut Vec<Track>, slices: &mut Vec<Vec<_>>| {
        tids.iter().position(|&t| t == tid).unwrap_or_else(|| {
            tids.push(tid);
            tracks.push(Track::default());
            slices.push(Vec::new());
            tids.len() - 1
        })
    };
    // Names first: a slice's state depends on its thread's name.
    for e in &events {
        if e.ph == "M" && e.name == "thread_name" {
            let i = index(e.tid, &mut tracks, &mut slices);
            let name = e.args.as_ref().and_then(|a| a.name.clone());
            tracks[i].name = name.unwrap_or_default();
        }
    }
    let (mut start, mut end) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in &events {
        let Some(ts) = e.ts else {
            continue;
        };
        let i = index(e.tid, &mut tracks, &mut slices);
        let dur = e.dur.unwrap_or(0.0);
        start = start.min(ts);
        end = end.max(ts + dur);
        match (e.ph.as_str(), e.name.as_str()) {
            ("X", name) => {
                if let Some(s) = state_of(name, &tracks[i].name) {
                    slices[i].push((ts, ts + dur, s));
                }
            }
            ("i", "spawn") => tracks[i].spawns.push(ts),
            ("i", "steal") => tracks[i].steals.push(ts),
            _ => {}
        }
    }
    if start > end {
        return Err("the trace has no timed events".to_owned());
    }
    for (track, mut s) in tracks.iter_mut().zip(slices) {
        track.segments = flatten(&mut s, searches(&track.name));
    }
    // Every thread gets its bar, one that recorded nothing timed too: an idle worker is part of
    // the picture.
    Ok(Timeline { tracks, start, end })
}

/// Turns one thread's properly nested slices into non-overlapping segments, the innermost
/// slice's state winning; with `search`, the gaps between its first and last slice are
/// [`State::Searching`].
pub(crate) fn flatten(slices: &mut [(f64, f64, State)], search: bool) -> Vec<(f64, f64, State)> {
    // Outer slices first where two start together.
    slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut out: Vec<(f64, f64, State)> = Vec::new();
    let mut emit = |from: f64, to: f64, s: State| {
        if to > from {
            out.push((from, to, s));
        }
    };
    let mut stack: Vec<(f64, State)> = Vec::new();
    let mut cur = slices.first().map_or(0.0, |s| s.0);
    for &(from, to, s) in slices.iter() {
        while let Some(&(top_end, top)) = stack.last() {
            if top_end > from {
                break;
            }
            emit(cur, top_end, top);
            cur = cur.max(top_end);
            stack.pop();
        }
        match stack.last() {
            Some(&(_, top)) => emit(cur, from, top),
            None if search => emit(cur, from, State::Searching),
            None => {}
        }
        cur = from;
        stack.push((to, s));
    }
    while let Some((top_end, top)) = stack.pop() {
        emit(cur, top_end, top);
        cur = cur.max(top_end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_slices_flatten_innermost_first_and_gaps_are_searching() {
        let mut s = vec![
            (0.0, 10.0, State::Running),
            (2.0, 5.0, State::Blocked),
            (12.0, 20.0, State::Parked),
        ];
        let flat = flatten(&mut s, true);
        assert_eq!(
            flat,
            [
                (0.0, 2.0, State::Running),
                (2.0, 5.0, State::Blocked),
                (5.0, 10.0, State::Running),
                (10.0, 12.0, State::Searching),
                (12.0, 20.0, State::Parked),
            ]
        );
        let mut s = vec![(0.0, 1.0, State::Running), (3.0, 4.0, State::Running)];
        assert_eq!(flatten(&mut s, false).len(), 2);
    }

    #[test]
    fn a_trace_parses_into_tracks() {
        let text = r#"{"traceEvents":[
            {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"ito-worker-0"}},
            {"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"ito-comp-3"}},
            {"ph":"X","pid":1,"tid":1,"ts":1.0,"dur":2.0,"name":"poll"},
            {"ph":"X","pid":1,"tid":1,"ts":4.0,"dur":1.0,"name":"park: no work"},
            {"ph":"i","s":"t","pid":1,"tid":1,"ts":1.5,"name":"spawn"},
            {"ph":"X","pid":1,"tid":2,"ts":2.0,"dur":2.0,"name":"poll"},
            {"ph":"i","s":"t","pid":1,"tid":2,"ts":2.0,"name":"steal"},
            {"ph":"X","pid":1,"tid":2,"ts":2.5,"dur":0.5,"name":"my span"}
        ]}"#;
        let t = parse(text).unwrap();
        assert_eq!((t.start, t.end), (1.0, 5.0));
        assert_eq!(t.tracks.len(), 2);
        assert_eq!(
            t.tracks[0].segments,
            [
                (1.0, 3.0, State::Running),
                (3.0, 4.0, State::Searching),
                (4.0, 5.0, State::Parked)
            ]
        );
        assert_eq!(t.tracks[0].spawns, [1.5]);
        assert_eq!(t.tracks[1].segments, [(2.0, 4.0, State::Compensating)]);
        assert_eq!(t.tracks[1].steals, [2.0]);
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"traceEvents":[]}"#).is_err());
        assert!(parse("not json").is_err());
    }
}
