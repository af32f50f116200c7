//! `ito-bench net`: issue 18's echo experiment.
//!
//! - `net serve echo --impl ito|tokio --addr ADDR --workers W [--style async|process|sync]`
//!   runs an echo server until killed and prints `listening on ADDR` once it accepts
//!   (`serve.rs`). One connection is an async task, a process, or a synchronous task using
//!   `std::io` (ito), or a tokio task; each reads into a 4 KiB buffer and writes back what it
//!   read.
//! - `net load echo --addr ADDR --conns C --bytes B --seconds S` is a one-thread load client
//!   (a tokio current-thread runtime, the same for every server): C connections, each sending
//!   B bytes and waiting for them to come back, for S seconds; one JSON line with
//!   `round_trips_per_s`, `p50_us`, `p99_us`, `p999_us` (`load.rs`).
//! - `net echo --conns 1,100,1000 --impl ito,tokio,go` runs each server as its own process
//!   against the same client, one after the other, then holds `--idle-conns` idle connections
//!   to it and reports its resident memory per connection and the CPU ticks it used over 2 s
//!   (`echo.rs`). Go's server is `bench/peers/net/` (goroutine per connection), skipped
//!   without Go.
//!
//! - `net busy --event-interval 7,31,61,127,255` serves one connection from a runtime whose one
//!   worker never runs out of tasks, in-process, for ito and tokio at each interval (`busy.rs`).
//!
//! With `--cpu N` a server or client pins itself (and the threads it starts) to CPU N; `net
//! echo` pins the server to CPU 0 and the client to CPU 1 when there are two CPUs.

mod busy;
mod echo;
mod load;
mod serve;

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

/// Arguments of `net`.
#[derive(Args, Debug)]
#[command(about = "Issue 18: echo servers on ito (async, process, sync), tokio and Go")]
pub(crate) struct NetArgs {
    #[command(subcommand)]
    cmd: NetCmd,
}

#[derive(Subcommand, Debug)]
enum NetCmd {
    /// Runs an echo server until killed.
    Serve {
        #[command(subcommand)]
        what: ServeWhat,
    },
    /// A one-thread load client against an echo server.
    Load {
        #[command(subcommand)]
        what: LoadWhat,
    },
    /// Every server against the same client, one after the other.
    Echo(echo::EchoArgs),
    /// Round trips to a server whose one worker never runs out of tasks, at several
    /// `event_interval`s.
    Busy(busy::BusyArgs),
}

#[derive(Subcommand, Debug)]
enum ServeWhat {
    /// The echo server.
    Echo(serve::ServeArgs),
}

#[derive(Subcommand, Debug)]
enum LoadWhat {
    /// Round trips of `--bytes` bytes on each connection.
    Echo(load::LoadArgs),
}

/// Whose server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NetImpl {
    Ito,
    Tokio,
    Go,
}

/// What serves one connection on ito.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Style {
    /// An async task.
    Async,
    /// A process (`ito::process::spawn`).
    Process,
    /// A synchronous task (`spawn_fn`) using `std::io::Read`/`Write`.
    Sync,
}

/// Runs `ito-bench net ...`.
pub(crate) fn command(args: &NetArgs) -> ExitCode {
    match &args.cmd {
        NetCmd::Serve {
            what: ServeWhat::Echo(a),
        } => serve::run(a),
        NetCmd::Load {
            what: LoadWhat::Echo(a),
        } => load::run(a),
        NetCmd::Echo(a) => echo::run(a),
        NetCmd::Busy(a) => busy::run(a),
    }
}

/// Pins this thread, and the threads it starts from now on, to CPU `cpu`.
pub(crate) fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    // SAFETY: `cpu_set_t` is plain data, for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(format!("--cpu {cpu}: no such CPU"));
    }
    // SAFETY: `cpu` is within the set (checked above), and `set` is a valid set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid set of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(format!("--cpu {cpu}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
