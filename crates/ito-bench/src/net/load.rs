//! `net load echo`: a one-thread load client.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

/// Arguments of `net load echo`.
#[derive(Args, Debug)]
pub(crate) struct LoadArgs {
    /// The server's address.
    #[arg(long)]
    addr: String,
    /// Connections, all open at once.
    #[arg(long, default_value_t = 1)]
    conns: usize,
    /// Bytes per message.
    #[arg(long, default_value_t = 64)]
    bytes: usize,
    /// How long to send, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Pin the client to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
}

/// The client's result: one JSON line.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LoadResult {
    pub(crate) conns: usize,
    pub(crate) bytes: usize,
    pub(crate) seconds: f64,
    pub(crate) round_trips: u64,
    pub(crate) round_trips_per_s: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
}

/// Runs the client and prints its result.
pub(crate) fn run(args: &LoadArgs) -> ExitCode {
    if let Some(cpu) = args.cpu {
        if let Err(e) = super::pin_to_cpu(cpu) {
            return crate::usage_error(&e);
        }
    }
    if args.conns == 0 || args.bytes == 0 || args.seconds.is_nan() || args.seconds <= 0.0 {
        return crate::usage_error("--conns, --bytes and --seconds must be positive");
    }
    match load_echo(&args.addr, args.conns, args.bytes, args.seconds) {
        Ok(r) => {
            println!("{}", serde_json::to_string(&r).expect("serializes"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ito-bench net load: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `q` quantile of sorted `v`, in microseconds.
fn quantile_us(v: &[u64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i] as f64 / 1000.0
}

/// The client on the calling thread: `conns` connections to `addr`, each sending `bytes` bytes
/// and waiting for them to come back, for `seconds`.
pub(crate) fn load_echo(
    addr: &str,
    conns: usize,
    bytes: usize,
    seconds: f64,
) -> std::io::Result<LoadResult> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let run_for = Duration::from_secs_f64(seconds);
    rt.block_on(async move {
        let mut streams = Vec::with_capacity(conns);
        for _ in 0..conns {
            let s = tokio::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            streams.push(s);
        }
        let start = Instant::now();
        let deadline = start + run_for;
        let tasks: Vec<_> = streams
            .into_iter()
            .map(|mut s| {
                tokio::spawn(async move {
                    let msg = vec![0x5a; bytes];
                    let mut back = vec![0; bytes];
                    let mut lat = Vec::new();
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        s.write_all(&msg).await?;
                        s.read_exact(&mut back).await?;
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok::<_, std::io::Error>(lat)
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.map_err(std::io::Error::other)??);
        }
        let elapsed = start.elapsed().as_secs_f64();
        all.sort_unstable();
        Ok(LoadResult {
            conns,
            bytes,
            seconds: elapsed,
            round_trips: all.len() as u64,
            round_trips_per_s: all.len() as f64 / elapsed,
            p50_us: quantile_us(&all, 0.5),
            p99_us: quantile_us(&all, 0.99),
            p999_us: quantile_us(&all, 0.999),
        })
    })
}
