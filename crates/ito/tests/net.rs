//! `ito::net` as a user sees it: echo round trips (async, a synchronous task, a plain thread),
//! UDP, Unix-domain sockets, and a process that waits on its mailbox and a socket at once.

#![cfg(unix)]

use futures::{AsyncReadExt, AsyncWriteExt};
use ito::net::{TcpListener, TcpStream};

mod support;

use support::net::{echo_server, rt};

#[test]
fn async_echo_round_trips() {
    let rt = rt(2);
    let addr = echo_server(&rt);
    rt.block_on(async {
        let mut clients = Vec::new();
        for i in 0..8u8 {
            clients.push(ito::spawn(async move {
                let mut c = TcpStream::connect(addr).await.unwrap();
                for round in 0..50u8 {
                    let msg = [i, round, 7, 9];
                    c.write_all(&msg).await.unwrap();
                    let mut back = [0; 4];
                    c.read_exact(&mut back).await.unwrap();
                    assert_eq!(back, msg);
                }
            }));
        }
        for c in clients {
            c.await.unwrap();
        }
    });
}

/// Synchronous code: `std::io::Read`/`Write` on the same sockets.
mod sync_io {
    use std::io::{Read, Write};
    use std::net::Shutdown;

    use ito::net::{TcpListener, TcpStream};

    /// A `spawn_fn` task serves a connection with std::io, and the client is a plain thread
    /// using std::io on an ito stream, reading and writing at once through `&TcpStream`.
    #[test]
    fn synchronous_task_and_plain_thread_echo() {
        let rt = super::rt(1);
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = l.local_addr().unwrap();
        let server = rt.spawn_fn(move || {
            let (mut conn, _) = ito::block_on(l.accept()).unwrap();
            let mut total = 0;
            let mut buf = [0; 1024];
            loop {
                let n = conn.read(&mut buf).unwrap();
                if n == 0 {
                    return total;
                }
                conn.write_all(&buf[..n]).unwrap();
                total += n;
            }
        });
        let mut c = ito::block_on(TcpStream::connect(addr)).unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut back = vec![0; data.len()];
        std::thread::scope(|s| {
            let c = &c;
            let data = &data;
            // More than the socket buffers hold: the writer must wait for the reader.
            s.spawn(move || {
                let mut w = c;
                w.write_all(data).unwrap();
                c.shutdown(Shutdown::Write).unwrap();
            });
            let mut r = c;
            r.read_exact(&mut back).unwrap();
        });
        assert_eq!(back, data);
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).unwrap(), 0);
        assert_eq!(server.wait(), Ok(data.len()));
    }

    /// More synchronous tasks blocked in reads than the runtime compensates for in normal
    /// operation: the last active thread to block brings in one more, which polls the driver,
    /// so every read still completes.
    #[test]
    fn every_thread_blocked_in_a_read_still_sees_readiness() {
        const CONNS: usize = 12;
        let rt = ito::Runtime::builder()
            .workers(1)
            .max_compensation(2)
            .build()
            .unwrap();
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = l.local_addr().unwrap();
        // Plain std clients: their writes must not need the driver themselves.
        let clients: Vec<_> = (0..CONNS)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let conns: Vec<_> = (0..CONNS)
            .map(|_| rt.block_on(l.accept()).unwrap().0)
            .collect();
        let (tx, rx) = std::sync::mpsc::channel();
        for mut conn in conns {
            let tx = tx.clone();
            drop(rt.spawn_fn(move || {
                let mut b = [0; 1];
                conn.read_exact(&mut b).unwrap();
                conn.write_all(&b).unwrap();
                tx.send(b[0]).unwrap();
            }));
        }
        // Every task blocks in its read before anything is sent.
        std::thread::sleep(std::time::Duration::from_millis(50));
        for (i, mut c) in clients.iter().enumerate() {
            c.write_all(&[i as u8]).unwrap();
        }
        let got: Result<Vec<u8>, _> = (0..CONNS)
            .map(|_| rx.recv_timeout(std::time::Duration::from_secs(10)))
            .collect();
        let Ok(mut got) = got else {
            // Dropping the runtime would wait for its threads, blocked for ever: fail now.
            std::mem::forget(rt);
            panic!("a read never saw its data: no thread polls the driver");
        };
        got.sort_unstable();
        assert_eq!(got, (0..CONNS as u8).collect::<Vec<_>>());
    }

    /// A compensation thread that sleeps in the driver and then retires leaves it to a
    /// sleeper: the worker, which fell asleep on its futex while the compensation thread held
    /// the driver, must see the readiness that arrives after the retirement.
    #[test]
    fn a_compensation_thread_that_retires_from_the_driver_hands_it_on() {
        let rt = ito::Runtime::builder()
            .workers(1)
            .thread_keep_alive(std::time::Duration::from_millis(20))
            .build()
            .unwrap();
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut conn = rt.block_on(l.accept()).unwrap().0;
        let (tx, rx) = std::sync::mpsc::channel();
        drop(rt.spawn_fn(move || {
            let mut b = [0; 1];
            conn.read_exact(&mut b).unwrap();
            tx.send(b[0]).unwrap();
        }));
        // The worker blocks outside ito with the driver started: a compensation thread comes
        // in and sleeps in the driver. The worker comes back and falls asleep beside it; the
        // compensation thread, no longer needed, retires at its next recheck.
        drop(rt.spawn_fn(|| {
            ito::block_in_place(|| std::thread::sleep(std::time::Duration::from_millis(100)))
        }));
        std::thread::sleep(std::time::Duration::from_millis(500));
        client.write_all(&[7]).unwrap();
        let Ok(got) = rx.recv_timeout(std::time::Duration::from_secs(10)) else {
            // Dropping the runtime would wait for its threads, asleep for ever: fail now.
            std::mem::forget(rt);
            panic!("the read never saw its data: no thread polls the driver");
        };
        assert_eq!(got, 7);
    }
}

#[test]
fn udp_send_and_receive() {
    let rt = rt(1);
    rt.block_on(async {
        let a = ito::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = ito::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        // The receiver waits before anything is sent.
        let recv = ito::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0; 64];
            for _ in 0..10 {
                let (n, from) = b.recv_from(&mut buf).await.unwrap();
                assert_eq!(from, aa);
                got.push(buf[..n].to_vec());
            }
            b.connect(aa).await.unwrap();
            b.send(b"done").await.unwrap();
            got
        });
        ito::sleep(std::time::Duration::from_millis(5))
            .await
            .unwrap();
        for i in 0..10u8 {
            a.send_to(&[i; 3], ba).await.unwrap();
        }
        let got = recv.await.unwrap();
        assert_eq!(got, (0..10u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
        a.connect(ba).await.unwrap();
        let mut buf = [0; 8];
        assert_eq!(a.recv(&mut buf).await.unwrap(), 4);
        assert_eq!(&buf[..4], b"done");
    });
}

#[test]
fn unix_stream_echo() {
    let rt = rt(1);
    let dir = std::env::temp_dir().join(format!("ito-net-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("echo.sock");
    let _ = std::fs::remove_file(&path);
    let p = path.clone();
    rt.block_on(async move {
        let l = ito::net::UnixListener::bind(&p).unwrap();
        ito::spawn(async move {
            let (conn, _) = l.accept().await.unwrap();
            let (mut r, mut w) = (&conn, &conn);
            futures::io::copy(&mut r, &mut w).await.unwrap();
        });
        let mut c = ito::net::UnixStream::connect(&p).await.unwrap();
        for i in 0..20u8 {
            c.write_all(&[i; 100]).await.unwrap();
            let mut back = [0; 100];
            c.read_exact(&mut back).await.unwrap();
            assert_eq!(back, [i; 100]);
        }
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A process waits on its mailbox and its socket at once (`futures::select!`): it echoes
/// what the socket sends, writes what the mailbox tells it to, and stops when told.
#[test]
fn a_process_waits_on_its_mailbox_and_a_socket() {
    use futures::FutureExt;
    use ito::process::{self, Mailbox};

    enum Msg {
        Say(Vec<u8>),
        Stop,
    }
    let rt = rt(1);
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (conn, _) = l.accept().await.unwrap();
        let pid = process::spawn(move |mut mb: Mailbox<Msg>| async move {
            let mut conn = conn;
            let mut buf = [0; 64];
            loop {
                futures::select! {
                    msg = mb.recv().fuse() => match msg {
                        Msg::Say(bytes) => conn.write_all(&bytes).await.unwrap(),
                        Msg::Stop => return,
                    },
                    n = conn.read(&mut buf).fuse() => {
                        let n = n.unwrap();
                        if n == 0 {
                            return;
                        }
                        conn.write_all(&buf[..n]).await.unwrap();
                    }
                }
            }
        });
        c.write_all(b"from the socket").await.unwrap();
        let mut back = [0; 15];
        c.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"from the socket");
        pid.send(Msg::Say(b"from the mailbox".to_vec()))
            .ok()
            .unwrap();
        let mut said = [0; 16];
        c.read_exact(&mut said).await.unwrap();
        assert_eq!(&said, b"from the mailbox");
        c.write_all(b"again").await.unwrap();
        let mut again = [0; 5];
        c.read_exact(&mut again).await.unwrap();
        assert_eq!(&again, b"again");
        pid.send(Msg::Stop).ok().unwrap();
        assert_eq!(pid.on_exit().await, Ok(ito::process::Exit::Normal));
        // The process dropped its side: end of file.
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).await.unwrap(), 0);
    });
}
