//! [`UnixListener`] and [`UnixStream`]: Unix-domain stream sockets.

use std::io;
use std::net::Shutdown;
use std::os::unix::net::SocketAddr;
use std::path::Path;

use super::stream::{self, stream_traits};
use crate::io::{Direction, Evented};

/// A Unix-domain socket listening for connections.
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use ito::net::{UnixListener, UnixStream};
/// let dir = std::env::temp_dir().join(format!("ito-doc-unix-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("sock");
/// # let _ = std::fs::remove_file(&path);
/// ito::block_on(async {
///     let l = UnixListener::bind(&path)?;
///     let mut c = UnixStream::connect(&path).await?;
///     let (mut s, _) = l.accept().await?;
///     c.write_all(b"hi").await?;
///     let mut buf = [0; 2];
///     s.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"hi");
///     Ok::<(), std::io::Error>(())
/// })
/// .unwrap();
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct UnixListener {
    io: Evented<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to the path `path` and listens. The path must not exist.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("ito-doc-bind-{}", std::process::id()));
    /// # let _ = std::fs::remove_file(&path);
    /// let l = ito::net::UnixListener::bind(&path).unwrap();
    /// assert_eq!(l.local_addr().unwrap().as_pathname(), Some(path.as_path()));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let path = path.as_ref();
        let l = mio::net::UnixListener::bind(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("ito: cannot bind {}: {e}", path.display()),
            )
        })?;
        super::listen_deep(&l)?;
        Ok(UnixListener {
            io: Evented::new(l)?,
        })
    }

    /// Waits for a connection and accepts it, backing off on a timer while the process is out
    /// of descriptors (as [`TcpListener::accept`](super::TcpListener::accept) does).
    ///
    /// Cancel safety: cancel safe.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("ito-doc-accept-{}", std::process::id()));
    /// # let _ = std::fs::remove_file(&path);
    /// ito::block_on(async {
    ///     let l = ito::net::UnixListener::bind(&path)?;
    ///     let _c = ito::net::UnixStream::connect(&path).await?;
    ///     let (s, _) = l.accept().await?;
    ///     assert_eq!(s.local_addr()?.as_pathname(), Some(path.as_path()));
    ///     Ok::<(), std::io::Error>(())
    /// })
    /// .unwrap();
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (s, peer) = super::accept::accept(&self.io, |l| l.accept()).await?;
        Ok((
            UnixStream {
                io: Evented::new(s)?,
            },
            peer,
        ))
    }

    /// The address this listener is bound to.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("ito-doc-laddr-{}", std::process::id()));
    /// # let _ = std::fs::remove_file(&path);
    /// let l = ito::net::UnixListener::bind(&path).unwrap();
    /// assert_eq!(l.local_addr().unwrap().as_pathname(), Some(path.as_path()));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}

/// A Unix-domain stream connection. It implements the same I/O traits as
/// [`TcpStream`](super::TcpStream), with the same cancel safety; writing to a closed peer is
/// an error, never a `SIGPIPE`.
///
/// ```
/// use std::io::{Read, Write};
/// let (a, b) = ito::net::UnixStream::pair().unwrap();
/// (&a).write_all(b"sync").unwrap();
/// let mut buf = [0; 4];
/// (&b).read_exact(&mut buf).unwrap();
/// assert_eq!(&buf, b"sync");
/// ```
#[derive(Debug)]
pub struct UnixStream {
    io: Evented<mio::net::UnixStream>,
}

stream_traits!(UnixStream, |s| &s.io, read);
stream_traits!(UnixStream, |s| &s.io, write);

impl UnixStream {
    /// Connects to the socket at `path`.
    ///
    /// Cancel safety: cancel safe; a connection in progress is closed.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("ito-doc-conn-{}", std::process::id()));
    /// # let _ = std::fs::remove_file(&path);
    /// let l = ito::net::UnixListener::bind(&path).unwrap();
    /// let c = ito::block_on(ito::net::UnixStream::connect(&path)).unwrap();
    /// assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(path.as_path()));
    /// # drop(l);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let path = path.as_ref();
        let named = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("ito: cannot connect to {}: {e}", path.display()),
            )
        };
        let s = UnixStream {
            io: Evented::new(mio::net::UnixStream::connect(path).map_err(named)?)?,
        };
        stream::finish_connect(&s.io, |s| s.take_error(), |s| s.peer_addr().map(drop))
            .await
            .map_err(named)?;
        Ok(s)
    }

    /// Two connected streams.
    ///
    /// ```
    /// let (a, b) = ito::net::UnixStream::pair().unwrap();
    /// assert!(a.peer_addr().unwrap().is_unnamed() && b.local_addr().unwrap().is_unnamed());
    /// ```
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            UnixStream {
                io: Evented::new(a)?,
            },
            UnixStream {
                io: Evented::new(b)?,
            },
        ))
    }

    /// Waits until the stream is readable, as [`TcpStream::readable`](super::TcpStream::readable)
    /// does; pair it with [`UnixStream::try_read`].
    ///
    /// Cancel safety: cancel safe (it consumes nothing).
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// # ito::block_on(async {
    /// let (mut a, b) = ito::net::UnixStream::pair()?;
    /// a.write_all(b"hi").await?;
    /// b.readable().await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.try_read(&mut buf)?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.ready(Direction::Read).await;
        Ok(())
    }

    /// Reads what has arrived into `buf` without waiting, as
    /// [`TcpStream::try_read`](super::TcpStream::try_read) does: `WouldBlock` if nothing has,
    /// and the next [`UnixStream::readable`] then waits for more.
    ///
    /// ```
    /// use futures::AsyncWriteExt;
    /// # ito::block_on(async {
    /// let (mut a, b) = ito::net::UnixStream::pair()?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    /// a.write_all(b"x").await?;
    /// b.readable().await?;
    /// assert_eq!(b.try_read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        stream::try_read(&self.io, buf)
    }

    /// Waits until the stream is writable, as
    /// [`TcpStream::writable`](super::TcpStream::writable) does; pair it with
    /// [`UnixStream::try_write`].
    ///
    /// Cancel safety: cancel safe (it sends nothing).
    ///
    /// ```
    /// # ito::block_on(async {
    /// let (a, _b) = ito::net::UnixStream::pair()?;
    /// a.writable().await?;
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.ready(Direction::Write).await;
        Ok(())
    }

    /// Writes from `buf` without waiting, as
    /// [`TcpStream::try_write`](super::TcpStream::try_write) does: `WouldBlock` if the buffer
    /// is full, and the next [`UnixStream::writable`] then waits for the peer to read.
    ///
    /// ```
    /// use futures::AsyncReadExt;
    /// # ito::block_on(async {
    /// let (a, mut b) = ito::net::UnixStream::pair()?;
    /// a.writable().await?;
    /// assert_eq!(a.try_write(b"abc")?, 3);
    /// let mut buf = [0; 3];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"abc");
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        stream::try_write(&self.io, buf)
    }

    /// Shuts down the reading half, the writing half, or both.
    ///
    /// ```
    /// use std::io::Read;
    /// let (a, b) = ito::net::UnixStream::pair().unwrap();
    /// a.shutdown(std::net::Shutdown::Write).unwrap();
    /// assert_eq!((&b).read(&mut [0; 1]).unwrap(), 0);
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        stream::shutdown(&self.io, how)
    }

    /// The address of the peer.
    ///
    /// ```
    /// let (a, _b) = ito::net::UnixStream::pair().unwrap();
    /// assert!(a.peer_addr().unwrap().as_pathname().is_none());
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }

    /// The address of this end.
    ///
    /// ```
    /// let (a, _b) = ito::net::UnixStream::pair().unwrap();
    /// assert!(a.local_addr().unwrap().is_unnamed());
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}
