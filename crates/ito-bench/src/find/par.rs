//! `ito-bench find-par`: document 002's programs written on ito, for the `find` experiment
//! to time beside the tools and for `seeds` to draw. `--variant seq` is its `find_seq`: the
//! whole walk in one task, every subdirectory walked inline. `--variant unbounded` is the document's
//! `find_par`: every subdirectory gets a task of its own (`withAsync` per directory).
//! `--variant sem` is its `find_par_sem`: a subdirectory gets a task only if a permit of a
//! non-blocking semaphore of 4 per worker is free (`tryWaitNBSem`), and is walked inline
//! otherwise. Both print every entry named NAME, one path a line, and with `--first` cancel the
//! walk at the first (the document's `withAsync` cancels the siblings). Symbolic links are not
//! followed. Unlike `ito-find`, nothing else is done (no ignore files, no error report): these
//! are the document's programs, not a tool. With `ITO_TRACE=FILE` in the environment, the
//! runtime's timeline is written to FILE (`docs/trace.md`).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::{Args, ValueEnum};
use ito::Scope;
use ito::sync::Semaphore;

/// Arguments of `find-par`.
#[derive(Args, Debug)]
#[command(
    about = "Document 002: its find_seq, find_par (a task per directory) or find_par_sem, on ito"
)]
pub(crate) struct FindParArgs {
    /// Which of the document's programs.
    #[arg(long, value_enum)]
    variant: Variant,
    /// Worker threads of the ito runtime.
    #[arg(short = 'j', long = "workers", default_value_t = 2)]
    workers: usize,
    /// Stop at the first match.
    #[arg(long)]
    first: bool,
    /// The file name to look for.
    name: OsString,
    /// Where to search.
    dir: PathBuf,
}

/// Document 002's thread-based programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Variant {
    /// `find_seq`: one task walks everything.
    Seq,
    /// `find_par`: a task per subdirectory.
    Unbounded,
    /// `find_par_sem`: a task per subdirectory while a permit (4 per worker) is free.
    Sem,
}

/// What every task of a walk shares.
struct Walk {
    name: OsString,
    first: bool,
    /// Which subdirectories get a task of their own.
    fork: Fork,
    /// Stdout, and whether a match was printed (with `--first`, no second one is).
    out: Mutex<(io::BufWriter<io::Stdout>, bool)>,
}

/// Which subdirectories get a task of their own.
enum Fork {
    /// None: `find_seq`.
    Never,
    /// Every one: `find_par`.
    Always,
    /// Those that get a permit: `find_par_sem`.
    WithPermit(Semaphore),
}

/// `ito-bench find-par`.
pub(crate) fn command(args: &FindParArgs) -> ExitCode {
    if args.workers == 0 {
        return crate::usage_error("--workers must be at least 1");
    }
    let rt = match crate::measure::traced(ito::Runtime::builder().workers(args.workers)).build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: building the ito runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let walk = Walk {
        name: args.name.clone(),
        first: args.first,
        fork: match args.variant {
            Variant::Seq => Fork::Never,
            Variant::Unbounded => Fork::Always,
            Variant::Sem => Fork::WithPermit(Semaphore::new(4 * args.workers)),
        },
        out: Mutex::new((io::BufWriter::new(io::stdout()), false)),
    };
    let walk = &walk;
    let dir = args.dir.clone();
    // On a worker of `rt`, so that the scope's children are its tasks.
    let ended = rt.install(move || ito::scope_fn(|scope| visit(scope, walk, dir)));
    let flushed = walk.out.lock().unwrap_or_else(|e| e.into_inner()).0.flush();
    match (ended, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("error: the walk failed: {e}");
            ExitCode::FAILURE
        }
        (_, Err(e)) => {
            eprintln!("error: writing the matches: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Walks `dir`: prints the entries named like the target, and gives each subdirectory a task
/// of its own (as `walk.fork` says) or walks it here.
fn visit<'scope, 'env>(scope: &'scope Scope<'scope, 'env>, walk: &'env Walk, dir: PathBuf) {
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        if scope.token().is_cancelled() {
            return;
        }
        let path = entry.path();
        if entry.file_name() == walk.name && !print(walk, &path) {
            scope.cancel();
            return;
        }
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match &walk.fork {
            Fork::Never => visit(scope, walk, path),
            Fork::Always => drop(scope.spawn_fn(move || visit(scope, walk, path))),
            Fork::WithPermit(permits) => match permits.try_acquire() {
                Ok(permit) => drop(scope.spawn_fn(move || {
                    let _permit = permit;
                    visit(scope, walk, path)
                })),
                Err(_) => visit(scope, walk, path),
            },
        }
    }
}

/// Prints a match (with `--first`, unless one was: of tasks that find one at the same moment,
/// one prints); whether the walk goes on (not with `--first`, nor once stdout is closed).
fn print(walk: &Walk, path: &Path) -> bool {
    let mut out = walk.out.lock().unwrap_or_else(|e| e.into_inner());
    let (w, printed) = &mut *out;
    if walk.first && *printed {
        return false;
    }
    *printed = true;
    let written = w
        .write_all(path.as_os_str().as_bytes())
        .and_then(|()| w.write_all(b"\n"));
    written.is_ok() && !walk.first
}
