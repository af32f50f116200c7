//! `net echo`: each server in its own process against the same one-thread client, one after
//! the other; then idle connections held to it, for memory per connection and idle CPU.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::load::LoadResult;
use super::{NetImpl, Style};
use crate::measure;

/// Arguments of `net echo`.
#[derive(Args, Debug)]
pub(crate) struct EchoArgs {
    /// Connections of each load run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    conns: Vec<usize>,
    /// Servers, comma-separated (go: skipped without Go).
    #[arg(
        long = "impl",
        value_enum,
        value_delimiter = ',',
        default_value = "ito,tokio,go"
    )]
    imps: Vec<NetImpl>,
    /// ito's styles, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "async,process,sync"
    )]
    styles: Vec<Style>,
    /// Worker threads of each server (GOMAXPROCS for Go).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Bytes per message.
    #[arg(long, default_value_t = 64)]
    bytes: usize,
    /// Seconds of each load run.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Idle connections held to each server for the memory and idle-CPU figures (0: skip).
    #[arg(long = "idle-conns", default_value_t = 10_000)]
    idle_conns: usize,
    /// Also append the records to bench/results/net.jsonl of the workspace.
    #[arg(long)]
    record: bool,
    /// A note stored in every record (for example, how busy the machine was).
    #[arg(long)]
    note: Option<String>,
}

/// A server process, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` with its stdout piped, pinned to `cpu` if given, until it prints `listening on
/// ADDR` (`Ok(Some)`) or `skipped...` (`Ok(None)`), for at most 5 minutes (Go builds first).
fn start(mut cmd: Command, cpu: Option<usize>) -> Result<Option<Server>, String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    if let Some(cpu) = cpu {
        // SAFETY: between fork and exec the closure makes one system call and allocates
        // nothing (its error message is built only on failure).
        unsafe {
            cmd.pre_exec(move || super::pin_to_cpu(cpu).map_err(std::io::Error::other));
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let out = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(out).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut server = Server {
        child,
        addr: String::new(),
    };
    loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(l) if l.starts_with("skipped") => {
                eprintln!("ito-bench net echo: {l}");
                return Ok(None);
            }
            Ok(l) => {
                if let Some(addr) = l.strip_prefix("listening on ") {
                    server.addr = addr.trim().to_owned();
                    return Ok(Some(server));
                }
            }
            Err(_) => return Err("the server never said where it listens".into()),
        }
    }
}

/// The command that starts `imp`'s server with `style` on `workers` workers.
fn server_command(imp: NetImpl, style: Style, workers: usize) -> Result<Command, String> {
    Ok(match imp {
        NetImpl::Go => {
            let root = measure::workspace_root().map_err(|e| e.to_string())?;
            let mut c = Command::new("bash");
            c.arg(root.join("bench/peers/net/run.sh"))
                .arg("127.0.0.1:0")
                .arg(workers.to_string());
            c
        }
        _ => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let mut c = Command::new(exe);
            c.args(["net", "serve", "echo", "--addr", "127.0.0.1:0"])
                .args(["--impl", if imp == NetImpl::Ito { "ito" } else { "tokio" }])
                .args(["--workers", &workers.to_string()])
                .args(["--style", style_name(style)]);
            c
        }
    })
}

fn style_name(s: Style) -> &'static str {
    match s {
        Style::Async => "async",
        Style::Process => "process",
        Style::Sync => "sync",
    }
}

/// A `/proc/PID/status` field in bytes.
fn status_bytes(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// User plus system CPU ticks of process `pid` so far.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted from `state` (field 3) here.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Raises this process's descriptor limit to its hard limit.
fn raise_descriptor_limit() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid `rlimit` for both calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// How long one idle connection may take to connect and make its round trip.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Holds `n` connections to `server`, each after one round trip (so each has touched its
/// buffer), and measures the server's resident memory and its CPU ticks over 2 s.
fn idle(server: &Server, n: usize, bytes: usize) -> Result<serde_json::Value, String> {
    let pid = server.child.id();
    let before = status_bytes(pid, "VmRSS:").ok_or("cannot read the server's VmRSS")?;
    let mut held = Vec::with_capacity(n);
    let msg = vec![0x5a; bytes];
    let mut back = vec![0; bytes];
    for i in 0..n {
        let addr: std::net::SocketAddr = server.addr.parse().map_err(|e| format!("{e}"))?;
        // A server that cannot serve this many connections (ito's sync style holds a thread
        // per blocked connection, up to its bound) fails the run instead of hanging it.
        let mut c = std::net::TcpStream::connect_timeout(&addr, IDLE_TIMEOUT)
            .map_err(|e| format!("idle connection {i}: {e}"))?;
        c.set_read_timeout(Some(IDLE_TIMEOUT))
            .and_then(|()| c.set_write_timeout(Some(IDLE_TIMEOUT)))
            .map_err(|e| format!("idle connection {i}: {e}"))?;
        c.write_all(&msg)
            .and_then(|()| c.read_exact(&mut back))
            .map_err(|e| format!("idle connection {i}: {e}"))?;
        held.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = status_bytes(pid, "VmRSS:").ok_or("cannot read the server's VmRSS")?;
    let t0 = cpu_ticks(pid).ok_or("cannot read the server's CPU time")?;
    std::thread::sleep(Duration::from_secs(2));
    let t1 = cpu_ticks(pid).ok_or("cannot read the server's CPU time")?;
    drop(held);
    Ok(json!({
        "idle_conns": n,
        "rss_before_bytes": before,
        "rss_after_bytes": after,
        "bytes_per_conn": after.saturating_sub(before) as f64 / n as f64,
        "idle_cpu_ticks_2s": t1 - t0,
    }))
}

/// Runs every server against the client.
pub(crate) fn run(args: &EchoArgs) -> ExitCode {
    let sink = match measure::results_sink(args.record, "net.jsonl") {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    raise_descriptor_limit();
    let two_cpus = measure::nproc() >= 2;
    let (server_cpu, client_cpu) = if two_cpus {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let mut failed = false;
    let runs: Vec<(NetImpl, Style)> = measure::dedup(&args.imps)
        .into_iter()
        .flat_map(|imp| match imp {
            NetImpl::Ito => measure::dedup(&args.styles)
                .into_iter()
                .map(|s| (imp, s))
                .collect::<Vec<_>>(),
            _ => vec![(imp, Style::Async)],
        })
        .collect();
    for (imp, style) in runs {
        let label = match imp {
            NetImpl::Ito => style_name(style),
            NetImpl::Tokio => "task",
            NetImpl::Go => "goroutine",
        };
        let base = json!({
            "experiment": "net-echo",
            "impl": imp,
            "style": label,
            "workers": args.workers,
            "commit": measure::commit(),
            "note": args.note,
        });
        let server =
            match server_command(imp, style, args.workers).and_then(|cmd| start(cmd, server_cpu)) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    eprintln!("ito-bench net echo: {imp:?} {label}: {e}");
                    failed = true;
                    continue;
                }
            };
        for &conns in &args.conns {
            let mut cli = vec![
                "net".to_string(),
                "load".into(),
                "echo".into(),
                "--addr".into(),
                server.addr.clone(),
                "--conns".into(),
                conns.to_string(),
                "--bytes".into(),
                args.bytes.to_string(),
                "--seconds".into(),
                args.seconds.to_string(),
            ];
            if let Some(cpu) = client_cpu {
                cli.extend(["--cpu".into(), cpu.to_string()]);
            }
            let limit = Duration::from_secs_f64(args.seconds + 120.0);
            let result = measure::run_child(&cli, limit)
                .ok()
                .and_then(|r| r.line::<LoadResult>());
            let mut rec = base.clone();
            match result {
                Some(r) => {
                    let fields = serde_json::to_value(r).expect("serializes");
                    rec.as_object_mut()
                        .expect("an object")
                        .extend(fields.as_object().expect("an object").clone());
                }
                None => {
                    failed = true;
                    rec["conns"] = json!(conns);
                    rec["error"] = json!("the load client failed or timed out");
                }
            }
            sink.emit_line(&rec.to_string());
        }
        if args.idle_conns > 0 {
            let mut rec = base.clone();
            rec["experiment"] = json!("net-idle");
            match idle(&server, args.idle_conns, args.bytes) {
                Ok(v) => rec
                    .as_object_mut()
                    .expect("an object")
                    .extend(v.as_object().expect("an object").clone()),
                Err(e) => {
                    failed = true;
                    rec["error"] = json!(e);
                }
            }
            sink.emit_line(&rec.to_string());
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
