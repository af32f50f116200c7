//! What a drawn trace adds up to, in figures the report can print beside the picture: the
//! time each thread spent in each state, when tasks were spawned, how many threads ran tasks
//! on average, and the longest stretch a worker went without running one.

use serde::{Deserialize, Serialize};

use super::load::{State, Timeline, Track};

/// One thread's share of the trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ThreadSummary {
    /// The thread's name (`ito-worker-0`, `ito-comp-3`, ...).
    pub(crate) name: String,
    /// Milliseconds in each state, in [`State::ALL`]'s order: running, compensating,
    /// searching, parked, blocked.
    pub(crate) state_ms: [f64; 5],
    /// Tasks it spawned.
    pub(crate) spawns: u64,
    /// Steals it made.
    pub(crate) steals: u64,
}

/// The longest stretch in which one worker ran no task, between its first and last run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Idle {
    /// The worker's name.
    pub(crate) thread: String,
    /// Where the stretch starts, in milliseconds from the trace's start.
    pub(crate) at_ms: f64,
    /// Its length in milliseconds.
    pub(crate) ms: f64,
}

/// A trace's summary (`NAME.summary.json` of `ito-bench trace record`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// The drawing's title.
    pub(crate) title: String,
    /// The traced `ito-bench` subcommand and its arguments.
    pub(crate) command: Vec<String>,
    /// The commit `ito-bench` was built from.
    #[serde(default)]
    pub(crate) commit: String,
    /// The trace file's size.
    pub(crate) trace_bytes: u64,
    /// From the first timed event to the end of the last, in milliseconds.
    pub(crate) span_ms: f64,
    /// Every thread that recorded something, in the trace's order.
    pub(crate) threads: Vec<ThreadSummary>,
    /// Tasks spawned, on every thread.
    pub(crate) spawns: u64,
    /// Steals, on every thread.
    pub(crate) steals: u64,
    /// The first and the last spawn, in milliseconds from the trace's start.
    pub(crate) spawn_window_ms: Option<(f64, f64)>,
    /// Threads running tasks, averaged over the span (the activity graph's mean).
    pub(crate) mean_running: f64,
    /// The longest stretch a worker went without running a task, between its first and last
    /// run.
    pub(crate) longest_idle: Option<Idle>,
}

impl Summary {
    /// The summary of `t`, drawn under `title`, recorded from `command` into a file of
    /// `trace_bytes` bytes.
    pub(crate) fn of(t: &Timeline, title: &str, command: &[String], trace_bytes: u64) -> Summary {
        let ms = |us: f64| (us - t.start) / 1000.0;
        let span_us = (t.end - t.start).max(0.0);
        let threads: Vec<ThreadSummary> = t
            .tracks
            .iter()
            .map(|tr| {
                let mut state_ms = [0.0; 5];
                for &(a, b, s) in &tr.segments {
                    state_ms[s.index()] += (b - a) / 1000.0;
                }
                ThreadSummary {
                    name: tr.name.clone(),
                    state_ms,
                    spawns: tr.spawns.len() as u64,
                    steals: tr.steals.len() as u64,
                }
            })
            .collect();
        let spawn_times = t.tracks.iter().flat_map(|tr| tr.spawns.iter().copied());
        let spawn_window_ms = spawn_times.fold(None, |w: Option<(f64, f64)>, s| {
            Some(w.map_or((s, s), |(a, b)| (a.min(s), b.max(s))))
        });
        let running_ms: f64 = threads
            .iter()
            .map(|th| {
                State::ALL
                    .iter()
                    .filter(|s| s.is_running())
                    .map(|s| th.state_ms[s.index()])
                    .sum::<f64>()
            })
            .sum();
        let longest_idle = t
            .tracks
            .iter()
            .filter(|tr| tr.name.contains("-worker-"))
            .filter_map(|tr| idle(tr).map(|(at, len)| (tr, at, len)))
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(tr, at, len)| Idle {
                thread: tr.name.clone(),
                at_ms: ms(at),
                ms: len / 1000.0,
            });
        Summary {
            title: title.to_owned(),
            command: command.to_vec(),
            commit: crate::measure::commit(),
            trace_bytes,
            span_ms: span_us / 1000.0,
            spawns: threads.iter().map(|th| th.spawns).sum(),
            steals: threads.iter().map(|th| th.steals).sum(),
            threads,
            spawn_window_ms: spawn_window_ms.map(|(a, b)| (ms(a), ms(b))),
            mean_running: if span_us > 0.0 {
                running_ms * 1000.0 / span_us
            } else {
                0.0
            },
            longest_idle,
        }
    }

    /// The summary of a worker thread named like `ito-worker-N`, in the trace's order.
    pub(crate) fn workers(&self) -> impl Iterator<Item = &ThreadSummary> {
        self.threads.iter().filter(|t| t.name.contains("-worker-"))
    }
}

/// The longest gap between two runs of `track` (start and length, in microseconds).
fn idle(track: &Track) -> Option<(f64, f64)> {
    let mut runs = track.segments.iter().filter(|s| s.2.is_running());
    let mut end = runs.next()?.1;
    let mut best: Option<(f64, f64)> = None;
    for &(a, b, _) in runs {
        if a > end && best.is_none_or(|(_, len)| a - end > len) {
            best = Some((end, a - end));
        }
        end = end.max(b);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_spawns_and_the_longest_idle_stretch_add_up() {
        let worker = Track {
            name: "ito-worker-0".into(),
            segments: vec![
                (0.0, 1000.0, State::Running),
                (1000.0, 1500.0, State::Searching),
                (1500.0, 4000.0, State::Parked),
                (4000.0, 5000.0, State::Running),
                (5000.0, 5200.0, State::Searching),
                (5200.0, 6000.0, State::Running),
            ],
            spawns: vec![100.0, 4500.0],
            steals: vec![4000.0],
        };
        let main = Track {
            name: "main".into(),
            segments: vec![(0.0, 8000.0, State::Blocked)],
            ..Track::default()
        };
        let t = Timeline {
            tracks: vec![worker, main],
            start: 0.0,
            end: 8000.0,
        };
        let s = Summary::of(&t, "t", &["fib".to_owned()], 10);
        assert_eq!(s.spawns, 2);
        assert_eq!(s.steals, 1);
        assert_eq!(s.spawn_window_ms, Some((0.1, 4.5)));
        assert_eq!(s.threads[0].state_ms, [2.8, 0.0, 0.7, 2.5, 0.0]);
        assert_eq!(s.threads[1].state_ms[State::Blocked.index()], 8.0);
        assert!((s.mean_running - 2.8 / 8.0).abs() < 1e-9);
        let idle = s.longest_idle.clone().unwrap();
        assert_eq!(
            (idle.thread.as_str(), idle.at_ms, idle.ms),
            ("ito-worker-0", 1.0, 3.0)
        );
        assert_eq!(s.workers().count(), 1);
    }
}
