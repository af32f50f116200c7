//! [`TcpListener`]: a TCP socket that accepts connections.

use std::io;
use std::net::SocketAddr;

use super::TcpStream;
use super::addr::{ToSocketAddrs, each_addr, resolve};
use crate::io::Evented;

/// A TCP socket listening for connections, registered with the current runtime's I/O driver.
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use ito::net::{TcpListener, TcpStream};
/// # ito::block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let server = ito::spawn(async move {
///     let (mut conn, _peer) = listener.accept().await.unwrap();
///     let mut buf = [0; 5];
///     conn.read_exact(&mut buf).await.unwrap();
///     conn.write_all(&buf).await.unwrap();
/// });
/// let mut client = TcpStream::connect(addr).await?;
/// client.write_all(b"hello").await?;
/// let mut back = [0; 5];
/// client.read_exact(&mut back).await?;
/// assert_eq!(&back, b"hello");
/// server.await.unwrap();
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct TcpListener {
    io: Evented<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` and listens. A name is resolved on the blocking pool; each address it
    /// resolves to is tried in turn. Binding an address in use fails with
    /// [`io::ErrorKind::AddrInUse`], and the error names the address.
    ///
    /// The queue of connections not yet accepted is as long as the system allows
    /// (`net.core.somaxconn`, 4096 by default on Linux), as Go's listeners have it, not the 128
    /// of std's and tokio's `bind`: a burst of connects beyond the queue is not refused but
    /// held back by TCP retransmission, seconds at a time.
    ///
    /// Cancel safety: cancel safe (dropped before it returns, it binds nothing that lasts).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let a = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let used = a.local_addr()?;
    /// let err = ito::net::TcpListener::bind(used).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let addrs = resolve(&addr).await?;
        each_addr("bind", addrs, |a| async move {
            let l = mio::net::TcpListener::bind(a)?;
            super::listen_deep(&l)?;
            TcpListener::from_mio(l)
        })
        .await
    }

    /// Takes over a listener made with std (it is switched to non-blocking mode).
    ///
    /// ```
    /// let std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let l = ito::net::TcpListener::from_std(std).unwrap();
    /// assert!(l.local_addr().unwrap().port() != 0);
    /// ```
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        TcpListener::from_mio(mio::net::TcpListener::from_std(listener))
    }

    fn from_mio(l: mio::net::TcpListener) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: Evented::new(l)?,
        })
    }

    /// Waits for a connection and accepts it. While the process is out of descriptors
    /// (`EMFILE`), it backs off on a timer (1 ms doubling to 1 s) and tries again, rather than
    /// failing or spinning.
    ///
    /// Cancel safety: cancel safe. A connection is accepted and returned in the same poll, so
    /// none is lost when the future is dropped.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let client = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (conn, peer) = l.accept().await?;
    /// assert_eq!(peer, client.local_addr()?);
    /// assert_eq!(conn.peer_addr()?, client.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, peer) = super::accept::accept(&self.io, |l| l.accept()).await?;
        Ok((TcpStream::from_mio(s)?, peer))
    }

    /// The address this listener is bound to.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// assert!(l.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}
