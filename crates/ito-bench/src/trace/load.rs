//! Reading an ito trace (Chrome trace-event JSON, as `ito::Runtime::builder().trace(..)`
//! writes it) into one timeline of states per thread.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a thread is doing, as the drawing colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum State {
    /// A worker runs a task or a join job it stole (or a blocking-pool thread runs a job).
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

/// What an `X` event named `name` says about its thread; `None` for slices that say nothing
/// about the scheduler (user spans). A run's state ([`State::Running`] or
/// [`State::Compensating`]) depends on the thread's name, which may come later in the file.
fn slice_of(name: &str) -> Option<Slice> {
    if matches!(name, "poll" | "help" | "blocking job" | "join job") {
        Some(Slice::Run)
    } else if name.starts_with("park: ") {
        Some(Slice::State(State::Parked))
    } else if name.starts_with("blocked: ") {
        Some(Slice::State(State::Blocked))
    } else {
        None
    }
}

/// A slice as read, before the thread's name is known.
#[derive(Clone, Copy, Debug)]
enum Slice {
    /// A run of a task or a job.
    Run,
    /// Any other state.
    State(State),
}

/// The state of a [`Slice`] on a thread named `thread`.
fn state_of(slice: Slice, thread: &str) -> State {
    match slice {
        Slice::Run if thread.contains("-comp-") => State::Compensating,
        Slice::Run => State::Running,
        Slice::State(s) => s,
    }
}

/// Whether a thread of this name is one of the runtime's scheduler threads, which search
/// between runs (and not a thread that called `block_on`, or a blocking-pool thread).
fn searches(thread: &str) -> bool {
    thread.contains("-worker-") || thread.contains("-comp-")
}

/// The fields of a trace event the drawing reads: the others are skipped while parsing, and
/// the names are borrowed from the file's text where they need no unescaping.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow)]
    ph: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Cow<'a, str>,
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

/// What the events of a file add up to, as they are read (a trace of a million processes
/// has ten million events: they are never held all at once).
#[derive(Default)]
struct Sink {
    tids: Vec<u64>,
    tracks: Vec<Track>,
    slices: Vec<Vec<(f64, f64, Slice)>>,
    start: f64,
    end: f64,
}

impl Sink {
    /// The index of thread `tid`'s track, made on first sight.
    fn index(&mut self, tid: u64) -> usize {
        self.tids.iter().position(|&t| t == tid).unwrap_or_else(|| {
            self.tids.push(tid);
            self.tracks.push(Track::default());
            self.slices.push(Vec::new());
            self.tids.len() - 1
        })
    }

    fn add(&mut self, e: RawEvent<'_>) {
        if e.ph == "M" && e.name == "thread_name" {
            let i = self.index(e.tid);
            let name = e.args.and_then(|a| a.name);
            self.tracks[i].name = name.unwrap_or_default();
            return;
        }
        let Some(ts) = e.ts else {
            return;
        };
        let i = self.index(e.tid);
        let dur = e.dur.unwrap_or(0.0);
        self.start = self.start.min(ts);
        self.end = self.end.max(ts + dur);
        match (&*e.ph, &*e.name) {
            ("X", name) => {
                if let Some(s) = slice_of(name) {
                    self.slices[i].push((ts, ts + dur, s));
                }
            }
            ("i", "spawn") => self.tracks[i].spawns.push(ts),
            // A fork-join job taken from another thread's shelf is a steal too (its run is the
            // `join job` slice that follows).
            ("i", "steal" | "join steal") => self.tracks[i].steals.push(ts),
            _ => {}
        }
    }
}

/// The `traceEvents` array, fed to a [`Sink`] one event at a time.
struct Events<'s>(&'s mut Sink);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<RawEvent<'de>>()? {
            self.0.add(e);
        }
        Ok(())
    }
}

/// The trace file's object: `traceEvents` goes to the sink, every other key is skipped.
struct File<'s>(&'s mut Sink);

impl<'de> DeserializeSeed<'de> for File<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for File<'_> {
    /// Whether the object had a `traceEvents` key.
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Chrome trace-event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "traceEvents" {
                map.next_value_seed(Events(&mut *self.0))?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Parses a trace file's text.
pub(crate) fn parse(text: &str) -> Result<Timeline, String> {
    let mut sink = Sink {
        start: f64::INFINITY,
        end: f64::NEG_INFINITY,
        ..Sink::default()
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let found = File(&mut sink)
        .deserialize(&mut de)
        .and_then(|found| de.end().map(|()| found))
        .map_err(|e| format!("not a Chrome trace-event file: {e}"))?;
    if !found {
        return Err("not a Chrome trace-event file: no traceEvents".to_owned());
    }
    if sink.start > sink.end {
        return Err("the trace has no timed events".to_owned());
    }
    let Sink {
        mut tracks,
        slices,
        start,
        end,
        ..
    } = sink;
    for (track, s) in tracks.iter_mut().zip(slices) {
        let mut s: Vec<(f64, f64, State)> = s
            .into_iter()
            .map(|(a, b, k)| (a, b, state_of(k, &track.name)))
            .collect();
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
            {"ph":"X","pid":1,"tid":2,"ts":2.5,"dur":0.5,"name":"my span"},
            {"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"ito-worker-1"}},
            {"ph":"i","s":"t","pid":1,"tid":3,"ts":1.0,"name":"join steal"},
            {"ph":"X","pid":1,"tid":3,"ts":1.0,"dur":3.0,"name":"join job"},
            {"ph":"X","pid":1,"tid":3,"ts":2.0,"dur":1.0,"name":"blocked: join latch"}
        ]}"#;
        let t = parse(text).unwrap();
        assert_eq!((t.start, t.end), (1.0, 5.0));
        assert_eq!(t.tracks.len(), 3);
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
        // A stolen join job runs (green), with what it blocks on inside it.
        assert_eq!(
            t.tracks[2].segments,
            [
                (1.0, 2.0, State::Running),
                (2.0, 3.0, State::Blocked),
                (3.0, 4.0, State::Running)
            ]
        );
        assert_eq!(t.tracks[2].steals, [1.0]);
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"traceEvents":[]}"#).is_err());
        assert!(parse("not json").is_err());
    }
}
