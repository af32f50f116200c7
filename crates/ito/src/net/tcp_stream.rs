//! [`TcpStream`]: a TCP connection.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;

use super::addr::{ToSocketAddrs, each_addr, resolve};
use super::split::{OwnedReadHalf, OwnedWriteHalf};
use super::stream::{self, stream_traits};
use crate::io::{Direction, Evented};

/// A TCP connection, registered with the current runtime's I/O driver.
///
/// Read and write it with the runtime-neutral `futures_io::AsyncRead` and `AsyncWrite` (take
/// `read_exact`, `write_all`, `copy` and `BufReader` from `futures-util`), with tokio's traits
/// under the `tokio-io` feature, or synchronously with `std::io::Read` and `Write`, from a
/// synchronous task, a process or a plain thread: a synchronous read waits the way
/// [`Future::wait`](crate::Future::wait) does, never in a blocking system call on a worker.
/// `&TcpStream` implements them all too, so one task may read while another writes. Vectored
/// reads and writes make one system call for all their slices. As in tokio,
/// [`TcpStream::readable`] and [`TcpStream::writable`] wait for readiness, and
/// [`TcpStream::try_read`] and [`TcpStream::try_write`] move bytes without waiting.
///
/// Cancel safety of the async traits: a `poll_read` or `poll_write` that returns `Pending`
/// has consumed nothing, so `futures-util`'s `read` and `write` are cancel safe; its
/// `read_exact` and `write_all` are not (what they moved before the drop is lost to the
/// caller).
///
/// Writing to a peer that has closed is an error (`BrokenPipe` or `ConnectionReset`), never a
/// `SIGPIPE`.
///
/// ```
/// use std::io::{Read, Write};
/// # ito::block_on(async {
/// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = l.local_addr()?;
/// // A synchronous task serves the connection with std::io.
/// let server = ito::spawn_fn(move || {
///     let (mut conn, _) = ito::block_on(l.accept()).unwrap();
///     let mut buf = [0; 4];
///     conn.read_exact(&mut buf).unwrap();
///     conn.write_all(&buf).unwrap();
/// });
/// let mut c = ito::net::TcpStream::connect(addr).await?;
/// futures::AsyncWriteExt::write_all(&mut c, b"ping").await?;
/// let mut back = [0; 4];
/// futures::AsyncReadExt::read_exact(&mut c, &mut back).await?;
/// assert_eq!(&back, b"ping");
/// server.await.unwrap();
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct TcpStream {
    pub(super) io: Evented<mio::net::TcpStream>,
}

stream_traits!(TcpStream, |s| &s.io, read);
stream_traits!(TcpStream, |s| &s.io, write);

impl TcpStream {
    /// Connects to `addr`. A name is resolved on the blocking pool, never on a worker; each
    /// address it resolves to is tried in turn, and the error of the last names it.
    ///
    /// Cancel safety: cancel safe; a connection in progress when the future is dropped is
    /// closed.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let port = l.local_addr()?.port();
    /// let s = ito::net::TcpStream::connect(("localhost", port)).await?;
    /// assert_eq!(s.peer_addr()?.port(), port);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let addrs = resolve(&addr).await?;
        each_addr("connect to", addrs, |a| async move {
            let s = TcpStream::from_mio(mio::net::TcpStream::connect(a)?)?;
            stream::finish_connect(&s.io, |s| s.take_error(), |s| s.peer_addr().map(drop)).await?;
            Ok(s)
        })
        .await
    }

    /// Takes over a connected std stream (it is switched to non-blocking mode).
    ///
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let std = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let s = ito::net::TcpStream::from_std(std).unwrap();
    /// assert_eq!(s.peer_addr().unwrap(), l.local_addr().unwrap());
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::from_mio(mio::net::TcpStream::from_std(stream))
    }

    pub(super) fn from_mio(s: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: Evented::new(s)?,
        })
    }

    /// Reads what has arrived into `buf` without taking it off the socket: the next read
    /// returns it again. Waits until something has arrived; `Ok(0)` at end of file.
    ///
    /// Cancel safety: cancel safe (it consumes nothing).
    ///
    /// ```
    /// use futures::{AsyncReadExt, AsyncWriteExt};
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (mut s, _) = l.accept().await?;
    /// c.write_all(b"hi").await?;
    /// let mut buf = [0; 2];
    /// assert_eq!(s.peek(&mut buf).await?, 2);
    /// s.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.io(Direction::Read, |s| s.peek(buf)).await
    }

    /// Waits until the stream is readable: data has arrived, the peer has closed, or the
    /// connection is in error. Pair it with [`TcpStream::try_read`]. It may return when a read
    /// would still block (another reader took the data first); `try_read` then returns
    /// `WouldBlock` and clears the readiness, so the next `readable` waits for new data. It
    /// never fails; it returns `io::Result`, as tokio's does, so `readable().await?` ports
    /// unchanged.
    ///
    /// Cancel safety: cancel safe (it consumes nothing).
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// use std::io::ErrorKind;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// c.write_all(b"hi").await?;
    /// let mut buf = [0; 8];
    /// let n = loop {
    ///     s.readable().await?;
    ///     match s.try_read(&mut buf) {
    ///         Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
    ///         r => break r?,
    ///     }
    /// };
    /// assert_eq!(&buf[..n], b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.ready(Direction::Read).await;
        Ok(())
    }

    /// Reads what has arrived into `buf` without waiting: `Ok(0)` at end of file,
    /// [`io::ErrorKind::WouldBlock`] if nothing has. After `WouldBlock` the readiness it saw is
    /// cleared, so [`TcpStream::readable`] waits until more data arrives.
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// use std::io::ErrorKind;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// let mut buf = [0; 8];
    /// assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    /// c.write_all(b"x").await?;
    /// s.readable().await?;
    /// assert_eq!(s.try_read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        stream::try_read(&self.io, buf)
    }

    /// Waits until the stream is writable: there is room in the send buffer, or the
    /// connection is closed or in error. Pair it with [`TcpStream::try_write`]; as with
    /// [`TcpStream::readable`], a write may still block, and `try_write` then clears the
    /// readiness. It never fails; it returns `io::Result`, as tokio's does.
    ///
    /// Cancel safety: cancel safe (it sends nothing).
    ///
    /// ```
    /// use futures::AsyncReadExt;
    /// use std::io::ErrorKind;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (mut s, _) = l.accept().await?;
    /// let n = loop {
    ///     c.writable().await?;
    ///     match c.try_write(b"hello") {
    ///         Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
    ///         r => break r?,
    ///     }
    /// };
    /// let mut buf = vec![0; n];
    /// s.read_exact(&mut buf).await?;
    /// assert_eq!(buf, &b"hello"[..n]);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.ready(Direction::Write).await;
        Ok(())
    }

    /// Writes from `buf` without waiting; returns the bytes written, or
    /// [`io::ErrorKind::WouldBlock`] if the send buffer is full. After `WouldBlock` the
    /// readiness it saw is cleared, so [`TcpStream::writable`] waits until the peer has read
    /// enough to make room.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// c.writable().await?;
    /// assert_eq!(c.try_write(b"abc")?, 3);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        stream::try_write(&self.io, buf)
    }

    /// Shuts down the reading half, the writing half, or both. After `Shutdown::Write` the
    /// peer reads end of file, and this side can still read what the peer sends.
    ///
    /// ```
    /// use futures::AsyncReadExt;
    /// use std::net::Shutdown;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (mut s, _) = l.accept().await?;
    /// c.shutdown(Shutdown::Write)?;
    /// let mut rest = Vec::new();
    /// assert_eq!(s.read_to_end(&mut rest).await?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        stream::shutdown(&self.io, how)
    }

    /// Sets `TCP_NODELAY`: small writes go out at once instead of waiting to be coalesced
    /// (Nagle's algorithm).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// c.set_nodelay(true)?;
    /// assert!(c.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.source().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set (see [`TcpStream::set_nodelay`]).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// c.set_nodelay(false)?;
    /// assert!(!c.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.source().nodelay()
    }

    /// The address of the peer.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// assert_eq!(c.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }

    /// The address of this end.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// assert_eq!(c.local_addr()?, s.peer_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// Splits the stream into a reading half and a writing half that can move to different
    /// tasks. Dropping the writing half shuts down the writing direction (the peer reads end
    /// of file); the socket closes when both halves are dropped.
    ///
    /// ```
    /// use futures::{AsyncReadExt, AsyncWriteExt};
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// let (mut r, mut w) = s.into_split();
    /// let echo = ito::spawn(async move { futures::io::copy(&mut r, &mut w).await.unwrap() });
    /// let (mut cr, mut cw) = c.into_split();
    /// cw.write_all(b"abc").await?;
    /// drop(cw); // end of file for the echo, which then ends and drops its writer
    /// let mut back = Vec::new();
    /// cr.read_to_end(&mut back).await?;
    /// assert_eq!(back, b"abc");
    /// assert_eq!(echo.await, Ok(3));
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let s = Arc::new(self);
        (OwnedReadHalf::new(s.clone()), OwnedWriteHalf::new(s))
    }
}
