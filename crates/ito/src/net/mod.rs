//! Networking: TCP, UDP and Unix-domain sockets on the runtime's I/O driver.
//!
//! The sockets register with the current runtime's driver (started by the first one). An
//! idle worker waits for readiness in the OS poller instead of sleeping; a task waiting on a
//! socket is woken on the worker that saw it ready (`docs/io.md`). Streams implement
//! `futures_io::AsyncRead`/`AsyncWrite` (use `futures-util`'s `read_exact`, `write_all`,
//! `copy`, `BufReader`), tokio's traits under the `tokio-io` feature, and `std::io::Read`/
//! `Write` for synchronous code (a [`spawn_fn`](crate::spawn_fn) task, a synchronous process
//! body, a plain thread), which waits without pinning a worker in a system call. Vectored
//! reads and writes make one system call for all their slices. As in tokio, `readable()` and
//! `writable()` wait for readiness, and `try_read`/`try_write` (`try_send`/`try_recv` on UDP)
//! move data without waiting.
//!
//! Each async method says whether it is cancel safe: whether a future dropped before it
//! completes may have consumed or sent data the caller never sees.
//!
//! | file | concept |
//! |---|---|
//! | `addr.rs` | [`ToSocketAddrs`]: addresses, names resolved on the blocking pool |
//! | `accept.rs` | accepting, with a back-off on `EMFILE` |
//! | `stream.rs` | reads and writes of every stream, async and synchronous; the trait impls |
//! | `tcp_listener.rs`, `tcp_stream.rs`, `split.rs` | [`TcpListener`], [`TcpStream`], its owned halves |
//! | `udp.rs` | [`UdpSocket`] |
//! | `unix.rs` | [`UnixListener`], [`UnixStream`] |
//!
//! ```
//! use futures::{AsyncReadExt, AsyncWriteExt};
//! # ito::block_on(async {
//! let listener = ito::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! ito::spawn(async move {
//!     while let Ok((mut conn, _)) = listener.accept().await {
//!         ito::spawn(async move {
//!             let (mut r, mut w) = (&conn, &conn);
//!             let _ = futures::io::copy(&mut r, &mut w).await;
//!         });
//!     }
//! });
//! let mut c = ito::net::TcpStream::connect(addr).await?;
//! c.write_all(b"echo").await?;
//! let mut buf = [0; 4];
//! c.read_exact(&mut buf).await?;
//! assert_eq!(&buf, b"echo");
//! # Ok::<(), std::io::Error>(())
//! # }).unwrap();
//! ```

mod accept;
mod addr;
mod split;
pub(crate) mod stream;
mod tcp_listener;
mod tcp_stream;
mod udp;
mod unix;

pub use addr::ToSocketAddrs;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
pub use tcp_listener::TcpListener;
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
pub use unix::{UnixListener, UnixStream};

/// Calls `listen` again on a listening socket with the largest backlog: Linux then updates the
/// backlog, capped at `net.core.somaxconn`. `TcpListener::bind` and `UnixListener::bind` call it;
/// a listener taken over from std keeps the backlog its owner chose.
fn listen_deep(l: &impl std::os::fd::AsRawFd) -> std::io::Result<()> {
    // SAFETY: `listen` on a descriptor this listener owns; it reads no memory of ours.
    if unsafe { libc::listen(l.as_raw_fd(), libc::c_int::MAX) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
