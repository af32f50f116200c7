//! `net serve echo`: an echo server that runs until killed.

use std::process::ExitCode;

use clap::Args;

use super::{NetImpl, Style};

/// Bytes each connection reads into at a time (the same for every server).
pub(crate) const BUFFER: usize = 4096;

/// Arguments of `net serve echo`.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Whose server (go: run `bench/peers/net/run.sh` instead).
    #[arg(long = "impl", value_enum)]
    imp: NetImpl,
    /// The address to listen on (port 0: any free port; the line printed names it).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: String,
    /// Worker threads of the runtime.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// What serves one connection on ito (tokio: a task).
    #[arg(long, value_enum, default_value = "async")]
    style: Style,
    /// Pin the server to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
}

/// Announces the address, the line the orchestrator waits for.
fn announce(addr: std::net::SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on {addr}");
    let _ = out.flush();
}

/// Runs the server until the process is killed; returns only on an error.
pub(crate) fn run(args: &ServeArgs) -> ExitCode {
    if let Some(cpu) = args.cpu {
        if let Err(e) = super::pin_to_cpu(cpu) {
            return crate::usage_error(&e);
        }
    }
    let result = match args.imp {
        NetImpl::Ito => serve_ito(args),
        NetImpl::Tokio if args.style == Style::Async => serve_tokio(args),
        NetImpl::Tokio => return crate::usage_error("--style applies to --impl ito only"),
        NetImpl::Go => return crate::usage_error("the Go server is bench/peers/net/run.sh"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ito-bench net serve: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve_ito(args: &ServeArgs) -> std::io::Result<()> {
    let rt = ito::Runtime::builder()
        .workers(args.workers)
        .build()
        .map_err(std::io::Error::other)?;
    let style = args.style;
    let addr = args.addr.clone();
    rt.block_on(async move {
        let l = ito::net::TcpListener::bind(addr.as_str()).await?;
        announce(l.local_addr()?);
        loop {
            let (conn, _) = l.accept().await?;
            conn.set_nodelay(true)?;
            match style {
                Style::Async => drop(ito::spawn(echo_ito(conn))),
                Style::Process => {
                    ito::process::spawn(move |_: ito::process::Mailbox<()>| echo_ito(conn));
                }
                Style::Sync => drop(ito::spawn_fn(move || echo_std(conn))),
            }
        }
    })
}

/// One connection, async.
pub(crate) async fn echo_ito(conn: ito::net::TcpStream) {
    use futures::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0; BUFFER];
    let (mut r, mut w) = (&conn, &conn);
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 || w.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// One connection, synchronous (`std::io`).
fn echo_std(mut conn: ito::net::TcpStream) {
    use std::io::{Read, Write};
    let mut buf = vec![0; BUFFER];
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 || conn.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

fn serve_tokio(args: &ServeArgs) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_io()
        .build()?;
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind(args.addr.as_str()).await?;
        announce(l.local_addr()?);
        loop {
            let (conn, _) = l.accept().await?;
            conn.set_nodelay(true)?;
            tokio::spawn(echo_tokio(conn));
        }
    })
}

/// One connection on tokio.
pub(crate) async fn echo_tokio(mut conn: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0; BUFFER];
    while let Ok(n) = conn.read(&mut buf).await {
        if n == 0 || conn.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
