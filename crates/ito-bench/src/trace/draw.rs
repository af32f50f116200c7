//! Drawing a [`Timeline`] in threadscope's layout: an activity graph (how many threads run
//! tasks, averaged over each pixel column) above one bar per thread coloured by state, with
//! spawn ticks above each bar and steal ticks below it, a time axis, and the legend on top.
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
/// Left margin, for thread names.
const LEFT: i32 = 170;
const RIGHT: i32 = 20;
/// Height of the activity graph.
const ACTIVITY: i32 = 140;
/// Height of one thread's bar, and of the space between bars (its ticks).
const BAR: i32 = 14;
const ROW: i32 = 26;

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
        State::Running => "running",
        State::Compensating => "compensating (a compensation thread runs)",
        State::Searching => "searching",
        State::Parked => "parked",
        State::Blocked => "blocked in a wait",
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
    // The legend, on one line under the title.
    let mut x = LEFT;
    for s in State::ALL {
        root.draw(&Rectangle::new([(x, 34), (x + 12, 46)], colour(s).filled()))
            .map_err(err)?;
        root.draw(&text(label(s), x + 16, 34, left_top))
            .map_err(err)?;
        x += 30 + 7 * label(s).len() as i32;
    }
    root.draw(&text(
        "| spawn (above a bar)   | steal (below)",
        x,
        34,
        left_top,
    ))
    .map_err(err)?;
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
    root.draw(&text(
        "threads running tasks",
        LEFT - 8,
        top + 10,
        right_center,
    ))
    .map_err(err)?;
    root.draw(&text(&format!("{peak}"), LEFT - 8, top, right_center))
        .map_err(err)?;
    root.draw(&text("0", LEFT - 8, base, right_center))
        .map_err(err)?;
    // One bar per thread.
    for (i, (track, tc)) in t.tracks.iter().zip(&cols).enumerate() {
        let y = bars_top + ROW * i as i32 + (ROW - BAR) / 2;
        root.draw(&text(&track.name, LEFT - 8, y + BAR / 2, right_center))
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
    // The time axis, in milliseconds from the trace's start.
    let axis = bars_top + ROW * t.tracks.len() as i32 + 8;
    for k in 0..=10 {
        let x = LEFT + (COLUMNS as i32) * k / 10;
        let ms = width * f64::from(k) / 10.0 / 1000.0;
        root.draw(&PathElement::new(vec![(x, axis), (x, axis + 5)], BLACK))
            .map_err(err)?;
        root.draw(&text(
            &format!("{ms:.3} ms"),
            x,
            axis + 8,
            Pos::new(HPos::Center, VPos::Top),
        ))
        .map_err(err)?;
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
}
