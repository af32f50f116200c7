//! The owned halves of a [`TcpStream`], for a reader and a writer in different tasks.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;

use super::TcpStream;
use super::stream::stream_traits;

/// The reading half of a [`TcpStream`], from [`TcpStream::into_split`]. Implements the read
/// traits of [`TcpStream`], with the same cancel safety.
///
/// ```
/// # ito::block_on(async {
/// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
/// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
/// let (r, _w) = c.into_split();
/// assert_eq!(r.peer_addr()?, l.local_addr()?);
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: Arc<TcpStream>,
}

/// The writing half of a [`TcpStream`], from [`TcpStream::into_split`]. Implements the write
/// traits of [`TcpStream`], with the same cancel safety. Dropping it shuts down the writing
/// direction: the peer reads end of file.
///
/// ```
/// use futures::AsyncWriteExt;
/// # ito::block_on(async {
/// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
/// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
/// let (_r, mut w) = c.into_split();
/// w.write_all(b"x").await?;
/// assert_eq!(w.local_addr()?.ip(), l.local_addr()?.ip());
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: Arc<TcpStream>,
}

stream_traits!(OwnedReadHalf, |h| &h.inner.io, read);
stream_traits!(OwnedWriteHalf, |h| &h.inner.io, write);

impl OwnedReadHalf {
    pub(super) fn new(inner: Arc<TcpStream>) -> OwnedReadHalf {
        OwnedReadHalf { inner }
    }

    /// [`TcpStream::peek`] on the stream.
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// c.write_all(b"z").await?;
    /// let (r, _w) = s.into_split();
    /// let mut b = [0; 1];
    /// assert_eq!(r.peek(&mut b).await?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.peek(buf).await
    }

    /// The address of the peer.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (r, _w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// assert_eq!(r.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// The address of this end.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (r, _w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// assert!(r.local_addr()?.port() != 0);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl OwnedWriteHalf {
    pub(super) fn new(inner: Arc<TcpStream>) -> OwnedWriteHalf {
        OwnedWriteHalf { inner }
    }

    /// The address of the peer.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (_r, w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// assert_eq!(w.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// The address of this end.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (_r, w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// assert!(w.local_addr()?.port() != 0);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        // The peer may be gone already; there is nothing to report to.
        let _ = self.inner.shutdown(Shutdown::Write);
    }
}
