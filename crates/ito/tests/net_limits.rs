//! `ito::net` at the descriptor limit: `accept` backs off on `EMFILE` and resumes when
//! descriptors free up (in a child process with a low `RLIMIT_NOFILE`), 10,000 connections
//! held at once, and a burst of connects larger than std's backlog of 128 queued unaccepted.

#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{AsyncReadExt, AsyncWriteExt};
use ito::net::{TcpListener, TcpStream};

mod support;

use support::net::{eventually, in_child, run_child};

fn rlimit() -> libc::rlimit {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid `rlimit` to write to.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    r
}

fn set_soft_limit(n: u64) {
    let r = libc::rlimit {
        rlim_cur: n,
        rlim_max: rlimit().rlim_max,
    };
    // SAFETY: `r` is a valid `rlimit` to read.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, 0);
}

/// A descriptor limit that leaves room for exactly `n` more descriptors: the limit bounds
/// descriptor numbers, and a new descriptor takes the lowest free number.
fn limit_leaving(n: usize) -> u64 {
    use std::os::fd::AsRawFd;
    let probes: Vec<_> = (0..n)
        .map(|_| std::fs::File::open("/dev/null").unwrap())
        .collect();
    probes.iter().map(|f| f.as_raw_fd() as u64).max().unwrap() + 1
}

/// 20 connections wait in the listen queue while the process may open only two more
/// descriptors. `accept` takes two, hits `EMFILE`, and backs off on a timer: its worker goes
/// to sleep (it does not spin). When the two are closed it resumes, and takes the rest as
/// descriptors free up.
#[test]
fn accept_backs_off_on_emfile_and_resumes() {
    in_child("accept_backs_off_on_emfile_and_resumes", || {
        const CLIENTS: usize = 20;
        let rt = ito::Runtime::builder().workers(1).build().unwrap();
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = l.local_addr().unwrap();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // Start every thread the accept loop needs (the timer's included) before the limit.
        rt.block_on(ito::sleep(Duration::from_millis(1))).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        set_soft_limit(limit_leaving(2));
        rt.spawn(async move {
            for _ in 0..CLIENTS {
                let (s, _) = l.accept().await.unwrap();
                tx.send(s).unwrap();
            }
        });
        let first: Vec<_> = (0..2).map(|_| rx.recv().unwrap()).collect();
        // Out of descriptors, the accept loop backs off, and the worker sleeps meanwhile.
        eventually("the worker sleeps while accept backs off", || {
            rt.metrics().sleeping == 1
        });
        assert!(rx.try_recv().is_err(), "accepted past the limit");
        drop(first);
        let mut accepted = 2;
        while accepted < CLIENTS {
            drop(rx.recv().unwrap());
            accepted += 1;
        }
        drop(clients);
    });
}

/// 10,000 connections at once, each with one round trip, all held open until the last is
/// served. The clients run in a child process, so that each side needs about 10,100
/// descriptors: each raises its soft limit to its hard one, and the test is skipped (with a
/// message) where the hard limit is lower.
#[test]
fn ten_thousand_connections_at_once() {
    const CONNS: usize = 10_000;
    let need = CONNS as u64 + 100;
    let hard = rlimit().rlim_max;
    if hard < need {
        eprintln!("skipped: RLIMIT_NOFILE hard limit {hard} < {need}");
        return;
    }
    set_soft_limit(need.max(rlimit().rlim_cur));
    if let Some(addr) = std::env::var_os("ITO_NET_SERVER") {
        return connect_clients(addr.to_str().unwrap(), CONNS);
    }
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    let open = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (o, p) = (open.clone(), peak.clone());
    let addr = rt.block_on(async move {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        ito::spawn(async move {
            while let Ok((mut conn, _)) = l.accept().await {
                let (open, peak) = (o.clone(), p.clone());
                ito::spawn(async move {
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    let mut b = [0; 4];
                    conn.read_exact(&mut b).await.unwrap();
                    conn.write_all(&b).await.unwrap();
                    // Held until the client closes it.
                    assert_eq!(conn.read(&mut b).await.unwrap(), 0);
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        addr
    });
    run_child(
        "ten_thousand_connections_at_once",
        ("ITO_NET_SERVER", &addr.to_string()),
    );
    assert_eq!(
        peak.load(Ordering::SeqCst),
        CONNS,
        "connections open at once"
    );
    eventually("every connection closed", || {
        open.load(Ordering::SeqCst) == 0
    });
}

/// The child's half: `n` connections to `addr`, one round trip each, all held until every
/// one has had its answer.
fn connect_clients(addr: &str, n: usize) {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    let held = rt.block_on(async move {
        let clients: Vec<_> = (0..n as u32)
            .map(|i| {
                ito::spawn(async move {
                    let mut c = TcpStream::connect(addr).await.unwrap();
                    c.write_all(&i.to_le_bytes()).await.unwrap();
                    let mut b = [0; 4];
                    c.read_exact(&mut b).await.unwrap();
                    assert_eq!(u32::from_le_bytes(b), i);
                    Arc::new(c)
                })
            })
            .collect();
        let mut held = Vec::with_capacity(n);
        for c in clients {
            held.push(c.await.unwrap());
        }
        held
    });
    assert_eq!(held.len(), n);
}

/// 1,000 connects to a listener that accepts none of them yet all complete their handshake at
/// once: `bind` asks for the system's largest backlog. With std's 128, the 129th connect's SYN
/// is dropped and retried after 1 s, 3 s, 7 s: past the 5 s given here (a hang guard).
#[test]
fn a_burst_beyond_128_connects_is_queued_not_dropped() {
    const BURST: usize = 1_000;
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if somaxconn < BURST {
        eprintln!("skipped: net.core.somaxconn {somaxconn} < {BURST}");
        return;
    }
    set_soft_limit((BURST as u64 + 100).max(rlimit().rlim_cur));
    let listener = ito::block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let held: Vec<std::net::TcpStream> = (0..BURST)
        .map(|i| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("connect {i} of {BURST}: {e}"))
        })
        .collect();
    assert_eq!(held.len(), BURST);
    drop(listener);
}
