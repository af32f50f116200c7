//! `ito-bench trace record --dir DIR --name NAME -- SUBCOMMAND ARGS...`: runs one of this
//! executable's subcommands with `ITO_TRACE=DIR/NAME.json`, then draws the trace to
//! `DIR/NAME.svg` and writes what it adds up to in `DIR/NAME.summary.json` ([`Summary`]).
//! `seeds` records its pictures this way, each as one step under the step's timeout.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Args;

use super::summary::Summary;
use super::{draw, load};

/// `ito-bench trace record`.
#[derive(Args, Debug)]
pub(super) struct RecordArgs {
    /// Where the trace (NAME.json), its drawing (NAME.svg) and its summary
    /// (NAME.summary.json) go.
    #[arg(long)]
    dir: PathBuf,
    /// The files' name.
    #[arg(long)]
    name: String,
    /// The drawing's title (default: NAME).
    #[arg(long)]
    title: Option<String>,
    /// The subcommand of this executable to trace, and its arguments (after `--`); it must
    /// build its runtime with `ITO_TRACE` honoured (fib, chain, find-par do). Its standard
    /// output is discarded.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// The three files of a recording named `name` in `dir`: trace, drawing, summary.
pub(crate) fn files(dir: &Path, name: &str) -> [PathBuf; 3] {
    ["json", "svg", "summary.json"].map(|ext| dir.join(format!("{name}.{ext}")))
}

/// Runs `args.command` traced, draws the trace and summarises it; returns the SVG's path.
pub(super) fn record(args: &RecordArgs) -> Result<PathBuf, String> {
    if args.name.is_empty() || args.name.contains('/') {
        return Err(format!(
            "--name {:?}: give a file name without '/'",
            args.name
        ));
    }
    fs::create_dir_all(&args.dir)
        .map_err(|e| format!("cannot create {}: {e}", args.dir.display()))?;
    let [json, svg, summary] = files(&args.dir, &args.name);
    // A trace left by an earlier recording must not be drawn as this one's.
    for f in [&json, &svg, &summary] {
        let _ = fs::remove_file(f);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let status = Command::new(&exe)
        .args(&args.command)
        .env("ITO_TRACE", &json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !status.success() {
        return Err(format!(
            "`ito-bench {}` failed ({status})",
            args.command.join(" ")
        ));
    }
    let text = fs::read_to_string(&json).map_err(|e| {
        format!(
            "`ito-bench {}` left no trace in {} ({e}): does it build its runtime with \
             ITO_TRACE honoured?",
            args.command.join(" "),
            json.display()
        )
    })?;
    let timeline = load::parse(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let title = args.title.clone().unwrap_or_else(|| args.name.clone());
    draw::draw(&timeline, &title, &svg)?;
    let s = Summary::of(&timeline, &title, &args.command, text.len() as u64);
    let line = serde_json::to_string(&s).map_err(|e| e.to_string())?;
    fs::write(&summary, format!("{line}\n"))
        .map_err(|e| format!("cannot write {}: {e}", summary.display()))?;
    println!("{line}");
    Ok(svg)
}
