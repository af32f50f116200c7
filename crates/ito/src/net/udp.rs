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
