//! Drawing a [`Timeline`] in threadscope's layout: an activity graph (how many threads run
//! tasks, averaged over each pixel column, with a grid line per thread) above one bar per
//! thread coloured by state, each named with its shares of the time under its name, with
//! spawn ticks above each bar and steal ticks below it, a time axis at round steps, and the
//! key on one line under the title.
//!
//! Each bar has one rectangle per run of pixel columns in the same state (the state that
//! took most of the column's time), so a million-event trace draws as a few thousand
//! rectangles.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::load::{State, Timeline, Track};

/// Width of the plotting area, in pixel columns.
const COLUMNS: usize = 1200;
/// Left margin, for thread names and their shares of the time.
const LEFT: i32 = 200;
/// Right margin, for the last time label.
const RIGHT: i32 = 40;
/// Height of the activity graph.
const ACTIVITY: i32 = 140;
/// Height of one thread's bar, and of the space between bars (its ticks).
const BAR: i32 = 14;
const ROW: i32 = 34;

fn colour(s: State) -> RGBColor {
    match s {
        State::Running => RGBColor(46, 160, 67),
        State::Compensating => RGBColor(31, 119, 180),
        State::Searching => RGBColor(255, 200, 60),
        State::Parked => RGBColor(215, 215, 215),
        State::Blocked => RGBColor(214, 39, 40),
    }
}

fn label(s: State) -> &'static str {
    match s {
        State::Running => "running a task",
        State::Compensating => "compensation thread running",
        State::Searching => "searching for work",
        State::Parked => "parked",
        State::Blocked => "blocked in a wait",
    }
}

/// The short name of a state, in a thread's shares under its name.
fn short(s: State) -> &'static str {
    match s {
        State::Running | State::Compensating => "run",
        State::Searching => "search",
        State::Parked => "park",
        State::Blocked => "block",
    }
}

/// About how wide `text` is at 12 px sans-serif (the SVG leaves the font to the viewer).
fn text_width(text: &str) -> i32 {
    (text.chars().count() as f64 * 6.0).ceil() as i32
}

/// A step of 1, 2 or 5 times a power of ten that cuts `width` into about 8 intervals.
fn nice_step(width: f64) -> f64 {
    let raw = width / 8.0;
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * pow)
}

/// A time in milliseconds with as many decimals as `step` needs.
fn ms_label(ms: f64, step_ms: f64) -> String {
    let decimals = if step_ms >= 1.0 {
        0
    } else {
        (-step_ms.log10().floor()) as usize
    };
    format!("{ms:.decimals$} ms")
}

/// A thread's shares of the trace's time, for the line under its name: the states that took
/// at least 1% of it.
fn shares(track: &Track, span: f64) -> String {
    let mut by = [0.0; 5];
    for &(a, b, s) in &track.segments {
        by[short_index(s)] += b - a;
    }
    let parts: Vec<String> = [
        State::Running,
        State::Searching,
        State::Parked,
        State::Blocked,
    ]
    .into_iter()
    .map(|s| (s, 100.0 * by[short_index(s)] / span))
    .filter(|&(_, p)| p >= 1.0)
    .map(|(s, p)| format!("{} {p:.0}%", short(s)))
    .collect();
    if parts.is_empty() {
        "no state recorded".to_owned()
    } else {
        parts.join(" · ")
    }
}

/// Running and compensating count as one share: a run.
fn short_index(s: State) -> usize {
    match s {
        State::Compensating => State::Running.index(),
        s => s.index(),
    }
}

/// Time per state in each pixel column of one track.
fn columns(track: &Track, start: f64, width: f64) -> Vec<[f64; 5]> {
    let mut cols = vec![[0.0; 5]; COLUMNS];
    let per = width / COLUMNS as f64;
    for &(from, to, s) in &track.segments {
        let (a, b) = ((from - start) / per, (to - start) / per);
        let first = (a.floor().max(0.0) as usize).min(COLUMNS - 1);
        let last = (b.ceil().max(1.0) as usize).min(COLUMNS);
        for (c, col) in cols.iter_mut().enumerate().take(last).skip(first) {
            let overlap = (b.min(c as f64 + 1.0) - a.max(c as f64)).max(0.0);
            col[s.index()] += overlap * per;
        }
    }
    cols
}

/// The state that took most of a column's time, if any did.
fn dominant(col: &[f64; 5]) -> Option<State> {
    State::ALL
        .iter()
        .copied()
        .filter(|s| col[s.index()] > 0.0)
        .max_by(|a, b| col[a.index()].total_cmp(&col[b.index()]))
}

/// Writes the SVG to `out`.
pub(crate) fn draw(t: &Timeline, title: &str, out: &Path) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw {}: {e}", out.display());
    let width = (t.end - t.start).max(1e-3);
    let per = width / COLUMNS as f64;
    let top = 60;
    let bars_top = top + ACTIVITY + 30;
    let height = bars_top + ROW * t.tracks.len() as i32 + 50;
    let size = ((LEFT + COLUMNS as i32 + RIGHT) as u32, height as u32);
    let root = SVGBackend::new(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let font = ("sans-serif", 12).into_font();
    let small = ("sans-serif", 10).into_font();
    let text = |s: &str, x: i32, y: i32, pos: Pos| {
        Text::new(s.to_owned(), (x, y), TextStyle::from(font.clone()).pos(pos))
    };
    let left_top = Pos::new(HPos::Left, VPos::Top);
    let right_center = Pos::new(HPos::Right, VPos::Center);
    root.draw(&Text::new(
        title.to_owned(),
        (LEFT, 8),
        TextStyle::from(("sans-serif", 16).into_font()).pos(left_top),
    ))
    .map_err(err)?;
    // The key, on one line under the title: a swatch per state, then the two ticks.
    let mut x = LEFT;
    for s in State::ALL {
        root.draw(&Rectangle::new([(x, 34), (x + 12, 46)], colour(s).filled()))
            .map_err(err)?;
        root.draw(&text(label(s), x + 16, 34, left_top))
            .map_err(err)?;
        x += 16 + text_width(label(s)) + 18;
    }
    for (what, col, y0) in [
        ("spawn (above a bar)", BLACK, 34),
        ("steal (below a bar)", RGBColor(214, 39, 40), 41),
    ] {
        root.draw(&PathElement::new(vec![(x, y0), (x, y0 + 5)], col))
            .map_err(err)?;
        root.draw(&text(what, x + 6, 34, left_top)).map_err(err)?;
        x += 6 + text_width(what) + 18;
    }
    // Per-track columns, and the activity: threads running, averaged per column.
    let cols: Vec<Vec<[f64; 5]>> = t
        .tracks
        .iter()
        .map(|tr| columns(tr, t.start, width))
        .collect();
    let activity: Vec<f64> = (0..COLUMNS)
        .map(|c| {
            cols.iter()
                .map(|tc| {
                    State::ALL
                        .iter()
                        .filter(|s| s.is_running())
                        .map(|s| tc[c][s.index()])
                        .sum::<f64>()
                })
                .sum::<f64>()
                / per
        })
        .collect();
    let peak = activity.iter().copied().fold(1.0f64, f64::max).ceil();
    let base = top + ACTIVITY;
    root.draw(&Rectangle::new(
        [(LEFT, top), (LEFT + COLUMNS as i32, base)],
        RGBColor(120, 120, 120).stroke_width(1),
    ))
    .map_err(err)?;
    for (c, a) in activity.iter().enumerate() {
        let h = (a / peak * f64::from(ACTIVITY)).round() as i32;
        if h > 0 {
            let x = LEFT + c as i32;
            root.draw(&Rectangle::new(
                [(x, base - h), (x + 1, base)],
                colour(State::Running).filled(),
            ))
            .map_err(err)?;
        }
    }
    // A grid line and a label at each whole number of threads (up to 8 of them).
    let grid = if peak <= 8.0 {
        1.0
    } else {
        (peak / 4.0).ceil()
    };
    let mut k = 0.0;
    while k <= peak {
        let y = base - (k / peak * f64::from(ACTIVITY)).round() as i32;
        if k > 0.0 && k < peak {
            root.draw(&PathElement::new(
                vec![(LEFT, y), (LEFT + COLUMNS as i32, y)],
                RGBColor(200, 200, 200),
            ))
            .map_err(err)?;
        }
        root.draw(&text(&format!("{k}"), LEFT - 8, y, right_center))
            .map_err(err)?;
        k += grid;
    }
    root.draw(&text(
        "threads running tasks",
        LEFT - 24,
        top + ACTIVITY / 2,
        right_center,
    ))
    .map_err(err)?;
    // One bar per thread.
    for (i, (track, tc)) in t.tracks.iter().zip(&cols).enumerate() {
        let y = bars_top + ROW * i as i32 + (ROW - BAR) / 2;
        root.draw(&text(&track.name, LEFT - 8, y + 2, right_center))
            .map_err(err)?;
        root.draw(&Text::new(
            shares(track, width),
            (LEFT - 8, y + BAR + 2),
            TextStyle::from(small.clone())
                .color(&RGBColor(90, 90, 90))
                .pos(right_center),
        ))
        .map_err(err)?;
        let mut c = 0;
        while c < COLUMNS {
            let s = dominant(&tc[c]);
            let mut e = c + 1;
            while e < COLUMNS && dominant(&tc[e]) == s {
                e += 1;
            }
            if let Some(s) = s {
                root.draw(&Rectangle::new(
                    [(LEFT + c as i32, y), (LEFT + e as i32, y + BAR)],
                    colour(s).filled(),
                ))
                .map_err(err)?;
            }
            c = e;
        }
        let tick = |ts: &[f64], y0: i32, y1: i32, col: RGBColor| -> Result<(), String> {
            let mut seen = vec![false; COLUMNS];
            for &t0 in ts {
                let c = (((t0 - t.start) / per) as usize).min(COLUMNS - 1);
                if !std::mem::replace(&mut seen[c], true) {
                    let x = LEFT + c as i32;
                    root.draw(&PathElement::new(vec![(x, y0), (x, y1)], col))
                        .map_err(err)?;
                }
            }
            Ok(())
        };
        tick(&track.spawns, y - 5, y - 1, BLACK)?;
        tick(
            &track.steals,
            y + BAR + 1,
            y + BAR + 5,
            RGBColor(214, 39, 40),
        )?;
    }
    // The time axis, in milliseconds from the trace's start, at round steps.
    let axis = bars_top + ROW * t.tracks.len() as i32 + 8;
    let step = nice_step(width / 1000.0);
    let mut k = 0.0;
    while k * step <= width / 1000.0 {
        let ms = k * step;
        let x = LEFT + (ms * 1000.0 / per).round() as i32;
        root.draw(&PathElement::new(vec![(x, axis), (x, axis + 5)], BLACK))
            .map_err(err)?;
        root.draw(&text(
            &ms_label(ms, step),
            x,
            axis + 8,
            Pos::new(HPos::Center, VPos::Top),
        ))
        .map_err(err)?;
        k += 1.0;
    }
    root.present().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_takes_the_state_that_took_most_of_its_time() {
        let track = Track {
            segments: vec![(0.0, 0.3, State::Running), (0.3, 1.0, State::Parked)],
            ..Track::default()
        };
        // One column is 1/COLUMNS of the width: make the first column 1.0 wide.
        let cols = columns(&track, 0.0, COLUMNS as f64);
        assert_eq!(dominant(&cols[0]), Some(State::Parked));
        assert_eq!(dominant(&cols[1]), None);
        assert!((cols[0][State::Running.index()] - 0.3).abs() < 1e-9);
    }

    #[test]
    fn the_time_axis_steps_are_round() {
        assert_eq!(nice_step(272.8), 50.0);
        assert_eq!(nice_step(8.0), 1.0);
        assert_eq!(nice_step(1.9), 0.5);
        assert_eq!(ms_label(0.5, 0.5), "0.5 ms");
        assert_eq!(ms_label(100.0, 50.0), "100 ms");
    }

    #[test]
    fn a_threads_shares_count_compensating_as_running() {
        let track = Track {
            segments: vec![
                (0.0, 50.0, State::Compensating),
                (50.0, 99.5, State::Searching),
                (99.5, 100.0, State::Parked),
            ],
            ..Track::default()
        };
        assert_eq!(shares(&track, 100.0), "run 50% · search 50%");
        assert_eq!(shares(&Track::default(), 100.0), "no state recorded");
    }
}
