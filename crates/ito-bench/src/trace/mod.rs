//! `ito-bench trace draw FILE --out FILE.svg`: draws a trace that ito recorded
//! (`ito::Runtime::builder().trace(path)`, or `ITO_TRACE=path`) in threadscope's layout.
//! `ito-bench trace record --dir DIR --name NAME -- SUBCOMMAND ...`: records one of this
//! executable's subcommands and draws it.

mod draw;
mod load;
pub(crate) mod record;
pub(crate) mod summary;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

/// `ito-bench trace ...`.
#[derive(Args, Debug)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    command: TraceCmd,
}

/// What to do with a trace.
#[derive(Subcommand, Debug)]
enum TraceCmd {
    /// Draw a trace as an SVG: an activity graph above one bar per thread, coloured by state.
    Draw(DrawArgs),
    /// Run one of this executable's subcommands (after `--`) traced, then draw the trace and
    /// summarise it: DIR/NAME.json, DIR/NAME.svg, DIR/NAME.summary.json.
    Record(record::RecordArgs),
}

/// `ito-bench trace draw`.
#[derive(Args, Debug)]
struct DrawArgs {
    /// The trace file (Chrome trace-event JSON, as ito writes it).
    file: PathBuf,
    /// Where to write the SVG (default: FILE with `.svg` appended).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The drawing's title (default: the trace file's name).
    #[arg(long)]
    title: Option<String>,
}

/// Runs `ito-bench trace`.
pub(crate) fn command(args: &TraceArgs) -> ExitCode {
    let done = match &args.command {
        TraceCmd::Draw(d) => draw_file(d),
        TraceCmd::Record(r) => record::record(r),
    };
    match done {
        Ok(out) => {
            eprintln!("wrote {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn draw_file(d: &DrawArgs) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(&d.file)
        .map_err(|e| format!("cannot read {}: {e}", d.file.display()))?;
    let timeline = load::parse(&text).map_err(|e| format!("{}: {e}", d.file.display()))?;
    let out = d.out.clone().unwrap_or_else(|| {
        let mut p = d.file.clone().into_os_string();
        p.push(".svg");
        PathBuf::from(p)
    });
    let title = d
        .title
        .clone()
        .unwrap_or_else(|| d.file.display().to_string());
    draw::draw(&timeline, &title, &out)?;
    Ok(out)
}
