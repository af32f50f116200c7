//! [`UdpSocket`]: datagrams.

use std::io;
use std::net::SocketAddr;

use super::addr::{ToSocketAddrs, each_addr, resolve};
use crate::io::{Direction, Evented};

/// A UDP socket, registered with the current runtime's I/O driver.
///
/// Every async method is cancel safe: a datagram is sent or received whole within one poll,
/// so a dropped future has sent or consumed nothing.
///
/// ```
/// use ito::net::UdpSocket;
/// # ito::block_on(async {
/// let a = UdpSocket::bind("127.0.0.1:0").await?;
/// let b = UdpSocket::bind("127.0.0.1:0").await?;
/// a.send_to(b"hello", b.local_addr()?).await?;
/// let mut buf = [0; 16];
/// let (n, from) = b.recv_from(&mut buf).await?;
/// assert_eq!((&buf[..n], from), (&b"hello"[..], a.local_addr()?));
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    io: Evented<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds a socket to `addr` (names resolved on the blocking pool). An address in use is
    /// [`io::ErrorKind::AddrInUse`], and the error names it.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let s = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(s.local_addr()?.port() != 0);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let addrs = resolve(&addr).await?;
        each_addr("bind", addrs, |a| async move {
            Ok(UdpSocket {
                io: Evented::new(mio::net::UdpSocket::bind(a)?)?,
            })
        })
        .await
    }

    /// Takes over a std socket (it is switched to non-blocking mode).
    ///
    /// ```
    /// let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let s = ito::net::UdpSocket::from_std(std).unwrap();
    /// assert!(s.local_addr().unwrap().port() != 0);
    /// ```
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            io: Evented::new(mio::net::UdpSocket::from_std(socket))?,
        })
    }

    /// Sets the only peer this socket sends to and receives from (names resolved on the
    /// blocking pool), for [`UdpSocket::send`] and [`UdpSocket::recv`].
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.connect(b.local_addr()?).await?;
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = resolve(&addr).await?;
        each_addr("connect to", addrs, |a| async move {
            self.io.source().connect(a)
        })
        .await
    }

    /// Sends `buf` as one datagram to `target`; returns the bytes sent.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert_eq!(a.send_to(b"abc", b.local_addr()?).await?, 3);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let to = resolve(&target).await?[0];
        self.io.io(Direction::Write, |s| s.send_to(buf, to)).await
    }

    /// Receives one datagram into `buf`; returns its length and its sender. A datagram longer
    /// than `buf` is cut short.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.send_to(b"abc", b.local_addr()?).await?;
    /// let mut buf = [0; 8];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((n, from), (3, a.local_addr()?));
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.io(Direction::Read, |s| s.recv_from(buf)).await
    }

    /// Sends `buf` as one datagram to the connected peer ([`UdpSocket::connect`]).
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.connect(b.local_addr()?).await?;
    /// b.connect(a.local_addr()?).await?;
    /// a.send(b"x").await?;
    /// let mut buf = [0; 1];
    /// assert_eq!(b.recv(&mut buf).await?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.io(Direction::Write, |s| s.send(buf)).await
    }

    /// Receives one datagram from the connected peer into `buf`; returns its length.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// b.connect(a.local_addr()?).await?;
    /// a.send_to(b"yz", b.local_addr()?).await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.recv(&mut buf).await?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.io(Direction::Read, |s| s.recv(buf)).await
    }

    /// Waits until a datagram has arrived (or the socket is in error). Pair it with
    /// [`UdpSocket::try_recv`] or [`UdpSocket::try_recv_from`]. It may return when a receive
    /// would still block (another task took the datagram first); the `try_` call then returns
    /// `WouldBlock` and clears the readiness, so the next `readable` waits for a new datagram.
    /// It never fails; it returns `io::Result`, as tokio's does.
    ///
    /// Cancel safety: cancel safe (it consumes nothing).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// b.readable().await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.try_recv_from(&mut buf)?, (2, a.local_addr()?));
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.ready(Direction::Read).await;
        Ok(())
    }

    /// Waits until a datagram can be sent (or the socket is in error). Pair it with
    /// [`UdpSocket::try_send`] or [`UdpSocket::try_send_to`]; as with
    /// [`UdpSocket::readable`], the `try_` call may still return `WouldBlock`. It never fails;
    /// it returns `io::Result`, as tokio's does.
    ///
    /// Cancel safety: cancel safe (it sends nothing).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.writable().await?;
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.ready(Direction::Write).await;
        Ok(())
    }

    /// Sends `buf` as one datagram to the connected peer ([`UdpSocket::connect`]) without
    /// waiting; [`io::ErrorKind::WouldBlock`] if the socket's buffer is full, and the next
    /// [`UdpSocket::writable`] then waits for room.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.connect(b.local_addr()?).await?;
    /// a.writable().await?;
    /// assert_eq!(a.try_send(b"abc")?, 3);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| s.send(buf))
    }

    /// Receives one datagram from the connected peer into `buf` without waiting; returns its
    /// length (cut short to `buf`), or [`io::ErrorKind::WouldBlock`] if none has arrived, and
    /// the next [`UdpSocket::readable`] then waits for one.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// b.connect(a.local_addr()?).await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.try_recv(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    /// a.send_to(b"yz", b.local_addr()?).await?;
    /// b.readable().await?;
    /// assert_eq!(b.try_recv(&mut buf)?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |s| s.recv(buf))
    }

    /// Sends `buf` as one datagram to `target` without waiting, as [`UdpSocket::try_send`]
    /// does. `target` is an address, not a name: a name would need a lookup, which waits.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.writable().await?;
    /// assert_eq!(a.try_send_to(b"abc", b.local_addr()?)?, 3);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| s.send_to(buf, target))
    }

    /// Receives one datagram into `buf` without waiting, as [`UdpSocket::try_recv`] does;
    /// returns its length and its sender.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// a.send_to(b"yz", b.local_addr()?).await?;
    /// b.readable().await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.try_recv_from(&mut buf)?, (2, a.local_addr()?));
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.try_io(Direction::Read, |s| s.recv_from(buf))
    }

    /// The address this socket is bound to.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let s = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(s.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// The connected peer's address ([`UdpSocket::connect`]); an error if not connected.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let s = ito::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(s.peer_addr().is_err());
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }
}
