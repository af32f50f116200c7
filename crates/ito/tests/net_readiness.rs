//! Readiness and vectored I/O on `ito::net`'s sockets: `readable`/`writable` with
//! `try_read`/`try_write` (streams and owned halves), `try_send`/`try_recv` (UDP), and
//! vectored reads and writes through `futures_io`, `std::io` and (feature `tokio-io`) tokio.

#![cfg(unix)]

use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::io::AsyncRead;
use futures::{AsyncReadExt, AsyncWriteExt};
use ito::net::{UdpSocket, UnixStream};

mod support;

use support::net::{pair, rt};

/// A pause long enough that a waiter which did not really wait would run first.
const DELAY: Duration = Duration::from_millis(50);

/// Reads exactly `n` bytes with `readable` and `try_read`.
macro_rules! try_read_exact {
    ($s:expr, $n:expr) => {{
        let mut got = Vec::new();
        let mut buf = [0; 4096];
        while got.len() < $n {
            $s.readable().await.unwrap();
            match $s.try_read(&mut buf) {
                Ok(0) => panic!("end of file after {} bytes", got.len()),
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        got
    }};
}

/// Reads what one `readable` announced, empties the socket until `try_read` would block, then
/// checks that the next `readable` waits for the writer: it must see the flag the writer sets
/// before it writes. `$w` is the writing end, `$r` the reading end (a stream or a half).
macro_rules! readable_waits_after_would_block {
    ($w:expr, $r:expr) => {{
        let (mut w, r) = ($w, $r);
        w.write_all(b"a").await.unwrap();
        assert_eq!(try_read_exact!(r, 1), b"a");
        let mut buf = [0; 8];
        assert_eq!(
            r.try_read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        let written = Arc::new(AtomicBool::new(false));
        let flag = written.clone();
        let writer = ito::spawn(async move {
            ito::sleep(DELAY).await.unwrap();
            flag.store(true, Ordering::SeqCst);
            w.write_all(b"bc").await.unwrap();
            w
        });
        r.readable().await.unwrap();
        assert!(
            written.load(Ordering::SeqCst),
            "readable returned before the peer wrote"
        );
        assert_eq!(try_read_exact!(r, 2), b"bc");
        writer.await.unwrap();
    }};
}

#[test]
fn tcp_readable_waits_for_the_peer_after_try_read_would_block() {
    rt(2).block_on(async {
        let (c, s) = pair().await;
        readable_waits_after_would_block!(c, s);
    });
}

#[test]
fn unix_readable_waits_for_the_peer_after_try_read_would_block() {
    rt(2).block_on(async {
        let (a, b) = UnixStream::pair().unwrap();
        readable_waits_after_would_block!(a, b);
    });
}

#[test]
fn owned_halves_readable_waits_for_the_peer_after_try_read_would_block() {
    rt(2).block_on(async {
        let (c, s) = pair().await;
        let (_cr, cw) = c.into_split();
        let (sr, _sw) = s.into_split();
        readable_waits_after_would_block!(cw, sr);
    });
}

/// `try_write` until `WouldBlock` fills the socket; `writable` then waits until the peer
/// reads (the reader sets a flag before it starts), and every byte arrives once, in order.
#[test]
fn unix_writable_waits_for_the_reader_after_try_write_fills_the_buffer() {
    rt(2).block_on(async {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.writable().await.unwrap();
        let sent = fill(|buf| a.try_write(buf));
        let reading = Arc::new(AtomicBool::new(false));
        let flag = reading.clone();
        let len = sent.len();
        let reader = ito::spawn(async move {
            ito::sleep(DELAY).await.unwrap();
            flag.store(true, Ordering::SeqCst);
            let mut got = vec![0; len];
            b.read_exact(&mut got).await.unwrap();
            (got, b)
        });
        a.writable().await.unwrap();
        assert!(
            reading.load(Ordering::SeqCst),
            "writable returned before the peer read"
        );
        let (got, _b) = reader.await.unwrap();
        assert!(got == sent, "the bytes arrived changed");
        assert_eq!(a.try_write(b"more").unwrap(), 4);
    });
}

/// The same over TCP and its owned writing half, without the ordering flag: TCP may make room
/// as queued segments leave, before the peer reads.
#[test]
fn tcp_try_write_until_would_block_then_writable_after_the_peer_drains() {
    rt(2).block_on(async {
        let (c, mut s) = pair().await;
        let (_cr, cw) = c.into_split();
        cw.writable().await.unwrap();
        let sent = fill(|buf| cw.try_write(buf));
        let reader = ito::spawn(async move {
            let mut got = vec![0; sent.len()];
            s.read_exact(&mut got).await.unwrap();
            (got, sent, s)
        });
        cw.writable().await.unwrap();
        let (got, sent, _s) = reader.await.unwrap();
        assert!(got == sent, "the bytes arrived changed");
    });
}

/// Writes numbered chunks with `try_write` until it would block; returns every byte written.
/// The socket must have been seen writable.
fn fill(mut try_write: impl FnMut(&[u8]) -> std::io::Result<usize>) -> Vec<u8> {
    let mut sent = Vec::new();
    for i in 0u32.. {
        let chunk: Vec<u8> = (0..4096u32).map(|j| ((i * 7 + j) % 251) as u8).collect();
        match try_write(&chunk) {
            Ok(n) => sent.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(!sent.is_empty());
    sent
}

#[test]
fn udp_try_send_and_try_recv_round_trip() {
    rt(2).block_on(async {
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        a.connect(b.local_addr().unwrap()).await.unwrap();
        b.connect(a.local_addr().unwrap()).await.unwrap();
        let mut buf = [0; 16];
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        a.writable().await.unwrap();
        assert_eq!(a.try_send(b"ping").unwrap(), 4);
        b.readable().await.unwrap();
        assert_eq!(b.try_recv(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );

        // `b` saw a readiness it has cleared since: its next `readable` waits for a new
        // datagram, which it must see the sender's flag before.
        let sent = Arc::new(AtomicBool::new(false));
        let flag = sent.clone();
        let to = b.local_addr().unwrap();
        let sender = ito::spawn(async move {
            ito::sleep(DELAY).await.unwrap();
            flag.store(true, Ordering::SeqCst);
            a.writable().await.unwrap();
            assert_eq!(a.try_send_to(b"pong", to).unwrap(), 4);
            a
        });
        b.readable().await.unwrap();
        assert!(
            sent.load(Ordering::SeqCst),
            "readable returned before the datagram was sent"
        );
        let a = sender.await.unwrap();
        assert_eq!(
            b.try_recv_from(&mut buf).unwrap(),
            (4, a.local_addr().unwrap())
        );
        assert_eq!(&buf[..4], b"pong");
    });
}

/// The slices of one vectored write; a write of only the first (the traits' default) would
/// return 2.
const SLICES: [&[u8]; 4] = [b"ab", b"", b"cde", b"f"];

fn slices() -> Vec<IoSlice<'static>> {
    SLICES.iter().map(|s| IoSlice::new(s)).collect()
}

/// Reads `abcdef`, all of it already arrived, into two slices with one vectored read (the
/// traits' default would fill only the first).
fn read_split(read: impl FnOnce(&mut [IoSliceMut<'_>]) -> std::io::Result<usize>) {
    let (mut x, mut y) = ([0; 4], [0; 4]);
    let n = read(&mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)]).unwrap();
    assert_eq!(n, 6);
    assert_eq!((&x, &y[..2]), (b"abcd", &b"ef"[..]));
}

#[test]
fn async_write_vectored_sends_the_concatenation_in_one_write() {
    rt(2).block_on(async {
        let (mut c, mut s) = pair().await;
        assert_eq!(c.write_vectored(&slices()).await.unwrap(), 6);
        let mut peek = [0; 6];
        while s.peek(&mut peek).await.unwrap() < 6 {}
        // The bytes are there (`peek` saw them), so the first poll completes.
        read_split(|bufs| {
            let mut cx = Context::from_waker(futures::task::noop_waker_ref());
            match Pin::new(&mut s).poll_read_vectored(&mut cx, bufs) {
                Poll::Ready(r) => r,
                Poll::Pending => panic!("the bytes are there"),
            }
        });

        let (mut a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(a.write_vectored(&slices()).await.unwrap(), 6);
        let mut all = [0; 6];
        b.read_exact(&mut all).await.unwrap();
        assert_eq!(&all, b"abcdef");
    });
}

/// Synchronous code: `std::io::Read`/`Write` on the same sockets.
mod sync_io {
    use std::io::{Read, Write};

    use super::{UnixStream, pair, read_split, rt, slices};

    #[test]
    fn sync_write_vectored_sends_the_concatenation_in_one_write() {
        let rt = rt(2);
        let (c, s) = rt.block_on(pair());
        let writer = rt.spawn_fn(move || (&c).write_vectored(&slices()).unwrap());
        assert_eq!(writer.wait(), Ok(6));
        let reader = rt.spawn_fn(move || {
            let mut peek = [0; 6];
            while ito::block_on(s.peek(&mut peek)).unwrap() < 6 {}
            read_split(|bufs| (&s).read_vectored(bufs));
        });
        assert_eq!(reader.wait(), Ok(()));

        let (a, mut b) = UnixStream::pair().unwrap();
        let writer = rt.spawn_fn(move || (&a).write_vectored(&slices()).unwrap());
        assert_eq!(writer.wait(), Ok(6));
        let mut all = [0; 6];
        b.read_exact(&mut all).unwrap();
        assert_eq!(&all, b"abcdef");
    }
}

#[cfg(feature = "tokio-io")]
#[test]
fn tokio_write_vectored_sends_the_concatenation_in_one_write() {
    use tokio::io::{AsyncReadExt as TokioRead, AsyncWrite, AsyncWriteExt as TokioWrite};
    rt(2).block_on(async {
        let (mut c, mut s) = pair().await;
        assert!(c.is_write_vectored());
        assert_eq!(
            TokioWrite::write_vectored(&mut c, &slices()).await.unwrap(),
            6
        );
        let mut all = [0; 6];
        TokioRead::read_exact(&mut s, &mut all).await.unwrap();
        assert_eq!(&all, b"abcdef");

        let (mut a, mut b) = UnixStream::pair().unwrap();
        assert!(a.is_write_vectored());
        assert_eq!(
            TokioWrite::write_vectored(&mut a, &slices()).await.unwrap(),
            6
        );
        TokioRead::read_exact(&mut b, &mut all).await.unwrap();
        assert_eq!(&all, b"abcdef");
    });
}
