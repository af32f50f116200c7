//! One SVG plot per experiment (plotters' SVG backend; text is laid out with plotters'
//! built-in estimate, so no font is loaded and nothing depends on the machine's fonts).
//!
//! A run that failed or timed out, or that was not run after a coarser one failed, is an X
//! in its series' colour at the bottom of the plot, with a legend entry (document 000 puts
//! a skull there).

use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use super::analysis::{Analysis, Cell, FIB_ALL, Group};
use super::plan::Doc;

/// A written plot.
#[derive(Clone, Debug)]
pub(crate) struct PlotFile {
    /// The document it belongs to.
    pub(crate) doc: Doc,
    /// File name in the output directory.
    pub(crate) file: String,
    /// What it shows.
    pub(crate) title: String,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("plot: {e}")
}

/// The legend text of the failure mark.
pub(crate) const FAILED_LEGEND: &str = "X: failed or timed out";

/// Draws every plot the analysis has data for.
pub(crate) fn draw_all(
    _records: &[Value],
    a: &Analysis,
    out: &Path,
) -> Result<Vec<PlotFile>, String> {
    let mut files = Vec::new();
    let mut add =
        |doc: Doc, file: &str, title: &str, r: Result<bool, String>| -> Result<(), String> {
            if r? {
                files.push(PlotFile {
                    doc,
                    file: file.to_owned(),
                    title: title.to_owned(),
                });
            }
            Ok(())
        };
    add(
        Doc::D000,
        "fib.svg",
        "fib: computations per second against the cutoff",
        fib(a, &out.join("fib.svg")),
    )?;
    let join: Vec<&Group> = a
        .groups
        .iter()
        .filter(|g| g.name.starts_with("join: "))
        .collect();
    add(
        Doc::D000,
        "join.svg",
        "fork-join: time against the cutoff",
        panels(&join, &out.join("join.svg"), Kind::Lines, true),
    )?;
    add(
        Doc::D001,
        "chain.svg",
        "chain: time and peak memory against N",
        chain(a, &out.join("chain.svg")),
    )?;
    let msg: Vec<&Group> = ["ping-pong", "fan-in"]
        .iter()
        .filter_map(|n| a.group(n))
        .collect();
    add(
        Doc::D001,
        "messaging.svg",
        "messages: ping-pong and fan-in",
        panels(&msg, &out.join("messaging.svg"), Kind::Bars, false),
    )?;
    let find: Vec<&Group> = a.groups.iter().filter(|g| g.doc == Doc::D002).collect();
    add(
        Doc::D002,
        "find.svg",
        "find: median time per tool",
        panels(&find, &out.join("find.svg"), Kind::Bars, true),
    )?;
    let pool: Vec<&Group> = a.groups.iter().filter(|g| g.doc == Doc::D003).collect();
    add(
        Doc::D003,
        "pool.svg",
        "pools: runs per second per mode",
        panels(&pool, &out.join("pool.svg"), Kind::Bars, false),
    )?;
    let fut: Vec<&Group> = a
        .groups
        .iter()
        .filter(|g| g.name.starts_with("futures: "))
        .collect();
    add(
        Doc::D004,
        "futures.svg",
        "futures and promises: document 004's benchmarks",
        panels(&fut, &out.join("futures.svg"), Kind::Lines, true),
    )?;
    let bank: Vec<&Group> = a
        .groups
        .iter()
        .filter(|g| g.name.starts_with("stm-bank"))
        .collect();
    add(
        Doc::D004,
        "stm-bank.svg",
        "STM bank: transactions per second",
        panels(&bank, &out.join("stm-bank.svg"), Kind::Bars, false),
    )?;
    Ok(files)
}

/// The values of a group, for an axis range.
fn values(g: &Group) -> impl Iterator<Item = f64> + '_ {
    g.cells
        .iter()
        .flatten()
        .filter_map(Cell::value)
        .filter(|v| v.is_finite())
}

/// A y range that holds `vals` (with room for the legend on top); positive for a log axis.
fn y_range(vals: impl Iterator<Item = f64>, log: bool) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| !log || *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { 0.1..10.0 } else { 0.0..1.0 };
    }
    if log {
        (lo / 8.0)..(hi * 6.0)
    } else {
        0.0..(hi * 1.35).max(f64::MIN_POSITIVE)
    }
}

/// Document 000's plot: computations per second (1 / seconds) against the cutoff, one line
/// per implementation and style, an X where a run failed.
fn fib(a: &Analysis, path: &Path) -> Result<bool, String> {
    let Some(g) = a.group(FIB_ALL) else {
        return Ok(false);
    };
    let cutoffs: Vec<f64> = g
        .configs
        .iter()
        .map(|c| c.parse().unwrap_or(f64::NAN))
        .collect();
    let (xlo, xhi) = min_max(&cutoffs);
    let yr = y_range(values(g).map(|s| 1.0 / s), true);
    let root = SVGBackend::new(path, (1000, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "fib: computations per second against the cutoff (smaller cutoff: more, finer tasks)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((xlo - 1.0)..(xhi + 1.0), yr.clone().log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("cutoff (calls below it run sequentially)")
        .y_desc("computations per second (1/s, log scale)")
        .y_label_formatter(&|v| format_num(*v))
        .draw()
        .map_err(err)?;
    numeric_lines(&mut chart, g, &cutoffs, |s| 1.0 / s, yr.start * 1.3)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// Document 001's plot: time and peak memory against N, both on log axes.
fn chain(a: &Analysis, path: &Path) -> Result<bool, String> {
    let groups: Vec<&Group> = ["chain: time", "chain: peak memory"]
        .iter()
        .filter_map(|n| a.group(n))
        .collect();
    if groups.is_empty() {
        return Ok(false);
    }
    let root = SVGBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((1, groups.len()));
    for (g, area) in groups.iter().zip(&areas) {
        let ns: Vec<f64> = g.configs.iter().map(|c| parse_count(c)).collect();
        let (xlo, xhi) = min_max(&ns);
        let yr = y_range(values(g), true);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{} against N", g.name), ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(
                ((xlo / 2.0)..(xhi * 2.0)).log_scale(),
                yr.clone().log_scale(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("N, processes in the chain (log scale)")
            .y_desc(format!("{} (log scale)", g.metric))
            .x_label_formatter(&|v| format_num(*v))
            .y_label_formatter(&|v| format_num(*v))
            .draw()
            .map_err(err)?;
        numeric_lines(&mut chart, g, &ns, |v| v, yr.start * 1.3)?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// The smallest and largest finite value of `xs`.
fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        })
}

/// One line per series of `g` over a numeric x axis (`xs[i]`: the x of configuration i; `y`
/// maps a cell's value to the plotted one), an X at `bottom` where a cell failed, and the
/// legend.
fn numeric_lines<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    g: &Group,
    xs: &[f64],
    y: impl Fn(f64) -> f64,
    bottom: f64,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let mut any_failed = false;
    let mut failing = 0;
    for (i, s) in g.series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = xs
            .iter()
            .zip(&g.cells[i])
            .filter_map(|(&x, cell)| Some((x, y(cell.value()?))))
            .filter(|(x, _)| x.is_finite())
            .collect();
        let width = if s.starts_with("ito") { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(width)))
            .map_err(err)?
            .label(s.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
        // Each failing series' Xs on a row of their own (log axis: a factor apart), so that
        // two series failing at the same x both show.
        let row = bottom * 1.5f64.powi(failing);
        let fails: Vec<(f64, f64)> = xs
            .iter()
            .zip(&g.cells[i])
            .filter(|(x, cell)| cell.failed() && x.is_finite())
            .map(|(&x, _)| (x, row))
            .collect();
        failing += i32::from(!fails.is_empty());
        any_failed |= !fails.is_empty();
        chart
            .draw_series(fails.iter().map(|&p| Cross::new(p, 7, c.stroke_width(3))))
            .map_err(err)?;
    }
    finish_legend(chart, any_failed, SeriesLabelPosition::UpperLeft)
}

/// The legend (with the X's entry when something failed).
fn finish_legend<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    any_failed: bool,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    X: Ranged,
    Y: Ranged,
    X::ValueType: 'static,
    Y::ValueType: 'static,
{
    if any_failed {
        chart
            .draw_series(std::iter::empty::<Circle<(X::ValueType, Y::ValueType), i32>>())
            .map_err(err)?
            .label(FAILED_LEGEND)
            .legend(|(x, y)| Cross::new((x + 10, y), 6, BLACK.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// How a categorical panel draws its series.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Points joined by lines, over the configurations.
    Lines,
    /// Grouped bars, one group per configuration.
    Bars,
}

/// Categories sit at multiples of this on an integer x axis, so that the axis' key points
/// (multiples of 1, 2 or 5 times a power of ten) fall on them.
const SLOT: i32 = 100;

/// One panel per group (two columns), configurations on the x axis.
fn panels(groups: &[&Group], path: &Path, kind: Kind, log: bool) -> Result<bool, String> {
    if groups.is_empty() {
        return Ok(false);
    }
    let cols = if groups.len() == 1 { 1 } else { 2 };
    let rows = groups.len().div_ceil(cols);
    let root = SVGBackend::new(path, (620 * cols as u32, 440 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((rows, cols));
    for (g, area) in groups.iter().zip(&areas) {
        // Accuracy is a fraction: linear.
        let log = log && !g.metric.starts_with("accuracy");
        panel(area, g, kind, log)?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

fn panel(area: &Area<'_>, g: &Group, kind: Kind, log: bool) -> Result<(), String> {
    let n = g.configs.len() as i32;
    let xr = (-SLOT / 2)..(SLOT * n - SLOT / 2);
    let yr = y_range(values(g), log);
    let configs = g.configs.clone();
    let label = move |v: &i32| -> String {
        if v.rem_euclid(SLOT) == 0 {
            configs
                .get((v / SLOT) as usize)
                .cloned()
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    let better = if g.higher_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let y_desc = if log {
        format!("{} (log scale; {better})", g.metric)
    } else {
        format!("{} ({better})", g.metric)
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&g.name, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70);
    if log {
        let mut chart = builder
            .build_cartesian_2d(xr, yr.clone().log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels((2 * n + 1) as usize)
            .x_label_formatter(&label)
            .y_label_formatter(&|v| format_num(*v))
            .x_desc(&g.config_name)
            .y_desc(y_desc)
            .draw()
            .map_err(err)?;
        draw_categorical(&mut chart, g, kind, yr.start * 1.3, yr.start)?;
    } else {
        let mut chart = builder.build_cartesian_2d(xr, yr.clone()).map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels((2 * n + 1) as usize)
            .x_label_formatter(&label)
            .y_label_formatter(&|v| format_num(*v))
            .x_desc(&g.config_name)
            .y_desc(y_desc)
            .draw()
            .map_err(err)?;
        let bottom = yr.end * 0.02;
        draw_categorical(&mut chart, g, kind, bottom, 0.0)?;
    }
    Ok(())
}

fn draw_categorical<'a, 'b: 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordi32, Y>,
    >,
    g: &Group,
    kind: Kind,
    fail_y: f64,
    base: f64,
) -> Result<(), String> {
    let k = g.series.len().max(1) as i32;
    let width = (SLOT * 8 / 10) / k;
    let mut any_failed = false;
    for (i, s) in g.series.iter().enumerate() {
        let c = color(i);
        let x_of = |ci: usize| -> i32 {
            let centre = ci as i32 * SLOT;
            match kind {
                Kind::Lines => centre,
                Kind::Bars => centre - SLOT * 4 / 10 + width * i as i32 + width / 2,
            }
        };
        let pts: Vec<(i32, f64)> = g.cells[i]
            .iter()
            .enumerate()
            .filter_map(|(ci, cell)| Some((x_of(ci), cell.value()?)))
            .collect();
        let legend =
            move |(x, y): (i32, i32)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled());
        match kind {
            Kind::Lines => {
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(s.as_str())
                    .legend(legend);
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(err)?;
            }
            Kind::Bars => {
                chart
                    .draw_series(pts.iter().map(|&(x, y)| {
                        Rectangle::new(
                            [(x - width / 2 + 1, base), (x + width / 2 - 1, y)],
                            c.filled(),
                        )
                    }))
                    .map_err(err)?
                    .label(s.as_str())
                    .legend(legend);
            }
        }
        let fails: Vec<(i32, f64)> = g.cells[i]
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.failed())
            .map(|(ci, _)| (x_of(ci), fail_y))
            .collect();
        any_failed |= !fails.is_empty();
        chart
            .draw_series(fails.iter().map(|&p| Cross::new(p, 7, c.stroke_width(3))))
            .map_err(err)?;
    }
    finish_legend(chart, any_failed, SeriesLabelPosition::UpperRight)
}

/// `10k` / `1M` / `100` back to a number.
fn parse_count(s: &str) -> f64 {
    let (digits, mult) = match s.as_bytes().last() {
        Some(b'k') => (&s[..s.len() - 1], 1e3),
        Some(b'M') => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    digits.parse::<f64>().map_or(f64::NAN, |d| d * mult)
}

/// A tick label: 3 significant digits, k/M suffixes for big numbers.
pub(crate) fn format_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        trim(format!("{:.3}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.3}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        let digits = (-a.log10()).ceil() as usize + 1;
        trim(format!("{v:.digits$}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_counts() {
        assert_eq!(format_num(2_500_000.0), "2.5M");
        assert_eq!(format_num(25_000.0), "25k");
        assert_eq!(format_num(250.0), "250");
        assert_eq!(format_num(2.5), "2.5");
        assert_eq!(format_num(0.025), "0.025");
        assert_eq!(format_num(0.0), "0");
        assert_eq!(parse_count("10k"), 1e4);
        assert_eq!(parse_count("1M"), 1e6);
        assert_eq!(parse_count("500"), 500.0);
    }
}
