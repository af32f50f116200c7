//! `ito::net` under faults: a peer that resets, half-closes or goes away, an address in use,
//! a slow reader, a read future dropped halfway, and writes to a closed peer in a process
//! that has not ignored `SIGPIPE`.

#![cfg(unix)]

use std::io::ErrorKind;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::task::{Context, Waker};

use futures::{AsyncReadExt, AsyncWriteExt};
use ito::net::{TcpListener, TcpStream, UdpSocket, UnixStream};

mod support;

use support::net::{in_child, pair, rt, serve_echo};

/// Closes `s` with a reset (`SO_LINGER` 0) instead of a FIN.
fn reset(s: std::net::TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is open (owned by `s`), and the option value is a valid
    // `linger` of the size passed.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    drop(s);
}

#[test]
fn a_peer_reset_mid_read_fails_that_connection_only() {
    let rt = rt(1);
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let doomed = std::net::TcpStream::connect(addr).unwrap();
        let (mut victim, _) = l.accept().await.unwrap();
        let (mut healthy_c, mut healthy_s) = pair().await;
        // The victim's server side waits in a read when the reset comes.
        let reader = ito::spawn(async move {
            let mut buf = [0; 16];
            victim.read(&mut buf).await.map_err(|e| e.kind())
        });
        ito::sleep(std::time::Duration::from_millis(20))
            .await
            .unwrap();
        reset(doomed);
        let err = reader.await.unwrap().unwrap_err();
        assert_eq!(err, ErrorKind::ConnectionReset);
        // The other connection still works.
        healthy_c.write_all(b"still here").await.unwrap();
        let mut buf = [0; 10];
        healthy_s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"still here");
    });
}

#[test]
fn a_peer_reset_mid_write_fails_the_writer() {
    let rt = rt(1);
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let doomed = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        // The writer fills the socket buffers (the peer never reads), then waits.
        let writer = ito::spawn(async move {
            let chunk = vec![7u8; 64 * 1024];
            loop {
                if let Err(e) = s.write_all(&chunk).await {
                    return e.kind();
                }
            }
        });
        ito::sleep(std::time::Duration::from_millis(20))
            .await
            .unwrap();
        reset(doomed);
        let err = writer.await.unwrap();
        assert!(
            matches!(err, ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
            "{err}"
        );
    });
}

#[test]
fn a_half_closed_peer_reads_eof_and_can_still_be_written() {
    let rt = rt(1);
    rt.block_on(async {
        let (mut c, mut s) = pair().await;
        c.write_all(b"last words").await.unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
        // EOF again, at once.
        assert_eq!(s.read(&mut [0; 4]).await.unwrap(), 0);
        s.write_all(b"reply").await.unwrap();
        s.close().await.unwrap();
        let mut reply = Vec::new();
        c.read_to_end(&mut reply).await.unwrap();
        assert_eq!(reply, b"reply");
    });
}

#[test]
fn binding_an_address_in_use_is_a_clear_error() {
    let rt = rt(1);
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let err = TcpListener::bind(addr).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse);
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
        let u = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let err = UdpSocket::bind(u.local_addr().unwrap()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse);
        let err = TcpListener::bind("no such host.invalid:80")
            .await
            .unwrap_err();
        assert!(!err.to_string().is_empty());
    });
}

/// One client sends and never reads, so its server task blocks writing the echo; the other
/// connections keep echoing on the one worker.
#[test]
fn a_slow_reader_does_not_delay_other_connections() {
    let rt = rt(1);
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        ito::spawn(serve_echo(l));
        let slow = std::sync::Arc::new(TcpStream::connect(addr).await.unwrap());
        let flood = ito::spawn(async move {
            let chunk = vec![1u8; 64 * 1024];
            let mut sent = 0usize;
            // Far more than the socket buffers of both directions hold.
            while sent < 64 << 20 {
                match futures::FutureExt::now_or_never((&*slow).write(&chunk)) {
                    Some(Ok(n)) => sent += n,
                    Some(Err(e)) => panic!("{e}"),
                    None => return (slow, sent), // blocked: the echo is stuck behind us
                }
                ito::sleep(std::time::Duration::ZERO).await.unwrap();
            }
            (slow, sent)
        });
        let (_slow, sent) = flood.await.unwrap();
        assert!(sent < 64 << 20, "the slow reader's echo never blocked");
        for i in 0..20u8 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            for _ in 0..10 {
                c.write_all(&[i; 32]).await.unwrap();
                let mut back = [0; 32];
                c.read_exact(&mut back).await.unwrap();
                assert_eq!(back, [i; 32]);
            }
        }
    });
}

#[test]
fn a_dropped_read_future_loses_no_bytes() {
    let rt = rt(1);
    rt.block_on(async {
        let (mut c, mut s) = pair().await;
        let noop = &mut Context::from_waker(Waker::noop());
        let mut buf = [0; 8];
        {
            // Nothing has arrived: the read is pending, and is dropped.
            let read = pin!(s.read(&mut buf));
            assert!(read.poll(noop).is_pending());
        }
        {
            let mut peek = [0; 2];
            let p = pin!(s.peek(&mut peek));
            assert!(p.poll(noop).is_pending());
        }
        c.write_all(b"abcdef").await.unwrap();
        let mut got = [0; 6];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abcdef");
        // A read dropped while data waits: it had not been polled, so nothing was taken.
        c.write_all(b"gh").await.unwrap();
        drop(s.read(&mut buf));
        let mut rest = [0; 2];
        s.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"gh");
    });
}

/// With `SIGPIPE` at its default action (which kills the process), writing to a closed peer
/// is an error on both stream kinds, plain or vectored, async or synchronous.
#[test]
fn writing_to_a_closed_peer_is_an_error_not_a_signal() {
    let two = || [std::io::IoSlice::new(b"a"), std::io::IoSlice::new(b"b")];
    in_child("writing_to_a_closed_peer_is_an_error_not_a_signal", || {
        // SAFETY: restores the default action of one signal; no handler runs.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let rt = rt(1);
        rt.block_on(async {
            let (mut c, s) = pair().await;
            drop(s);
            let err = loop {
                if let Err(e) = c.write_all(b"into the void").await {
                    break e;
                }
            };
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
                ),
                "{err}"
            );
            // A vectored write too (std's is `writev`, which raises the signal).
            let err = c.write_vectored(&two()).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
            let (mut a, b) = UnixStream::pair().unwrap();
            drop(b);
            let err = a.write_all(b"x").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
            let err = a.write_vectored(&two()).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
            // And synchronously.
            let err = std::io::Write::write_all(&mut a, b"y").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
            let err = std::io::Write::write_vectored(&mut a, &two()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
        });
    });
}
