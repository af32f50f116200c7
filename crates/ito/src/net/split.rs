//! The owned halves of a [`TcpStream`], for a reader and a writer in different tasks.

use std::fmt;
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
    /// Cleared by [`OwnedReadHalf::reunite`], which keeps the stream whole.
    shutdown_on_drop: bool,
}

/// The halves given to [`OwnedReadHalf::reunite`] came from two different streams; both are
/// handed back.
///
/// ```
/// # ito::block_on(async {
/// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
/// let (r1, _w1) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
/// let (_r2, w2) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
/// let ito::net::ReuniteError(_r1, _w2) = r1.reunite(w2).unwrap_err();
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite the halves of two different streams")
    }
}

impl std::error::Error for ReuniteError {}

stream_traits!(OwnedReadHalf, |h| &h.inner.io, read);
stream_traits!(OwnedWriteHalf, |h| &h.inner.io, write);

impl OwnedReadHalf {
    pub(super) fn new(inner: Arc<TcpStream>) -> OwnedReadHalf {
        OwnedReadHalf { inner }
    }

    /// Puts the stream back together from its two halves, as tokio's `reunite` does; halves of
    /// two different streams are handed back in the error. The writing direction stays open.
    ///
    /// ```
    /// use futures::{AsyncReadExt, AsyncWriteExt};
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (mut s, _) = l.accept().await?;
    /// let (r, w) = c.into_split();
    /// let mut c = r.reunite(w).unwrap();
    /// c.write_all(b"still open").await?;
    /// let mut b = [0; 10];
    /// s.read_exact(&mut b).await?;
    /// assert_eq!(&b, b"still open");
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, mut w: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.inner, &w.inner) {
            return Err(ReuniteError(self, w));
        }
        w.shutdown_on_drop = false;
        drop(w);
        Ok(Arc::into_inner(self.inner).expect("the two halves are the stream's only owners"))
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

    /// [`TcpStream::readable`] on the stream: waits until it is readable. Cancel safe.
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (r, _w) = l.accept().await?.0.into_split();
    /// c.write_all(b"ok").await?;
    /// r.readable().await?;
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.inner.readable().await
    }

    /// [`TcpStream::try_read`] on the stream: reads without waiting, or `WouldBlock`.
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let mut c = ito::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (r, _w) = l.accept().await?.0.into_split();
    /// let mut buf = [0; 4];
    /// assert_eq!(r.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    /// c.write_all(b"ok").await?;
    /// r.readable().await?;
    /// assert_eq!(r.try_read(&mut buf)?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.try_read(buf)
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
        OwnedWriteHalf {
            inner,
            shutdown_on_drop: true,
        }
    }

    /// [`OwnedReadHalf::reunite`] from this side.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (r, w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// let c = w.reunite(r).unwrap();
    /// assert_eq!(c.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, r: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        r.reunite(self)
    }

    /// [`TcpStream::writable`] on the stream: waits until it is writable. Cancel safe.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (_r, w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// w.writable().await?;
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.inner.writable().await
    }

    /// [`TcpStream::try_write`] on the stream: writes without waiting, or `WouldBlock`.
    ///
    /// ```
    /// # ito::block_on(async {
    /// let l = ito::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let (_r, w) = ito::net::TcpStream::connect(l.local_addr()?).await?.into_split();
    /// w.writable().await?;
    /// assert_eq!(w.try_write(b"ok")?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.try_write(buf)
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
        if self.shutdown_on_drop {
            // The peer may be gone already; there is nothing to report to.
            let _ = self.inner.shutdown(Shutdown::Write);
        }
    }
}
