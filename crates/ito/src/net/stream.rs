//! What every stream of this module shares: reads and writes through the driver, async and
//! synchronous, and the macro that gives a stream type its I/O traits.
//!
//! The traits, per stream type `T` (and `&T` where both directions may be shared):
//! `futures_io::AsyncRead`/`AsyncWrite`, `std::io::Read`/`Write`, and with the `tokio-io`
//! feature `tokio::io::AsyncRead`/`AsyncWrite`. An async read or write is cancel safe: a
//! `Pending` poll has consumed nothing. A synchronous one waits for readiness through
//! `block_on_cancellable`, never in a blocking system call.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::task::{Context, Poll};

use mio::event::Source;

use crate::io::{Direction, Evented};

/// A socket this module reads and writes: how to write without raising `SIGPIPE`.
pub(crate) trait StreamSocket: Source
where
    for<'a> &'a Self: Read + Write,
{
    /// Writes `buf`; a closed peer is an `EPIPE` error, never a signal.
    fn write_nosignal(&self, buf: &[u8]) -> io::Result<usize>;
    /// Shuts down one or both directions.
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

impl StreamSocket for mio::net::TcpStream {
    fn write_nosignal(&self, buf: &[u8]) -> io::Result<usize> {
        // std's TCP write passes `MSG_NOSIGNAL` (Linux) or sets `SO_NOSIGPIPE` (BSDs).
        let mut s = self;
        s.write(buf)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::TcpStream::shutdown(self, how)
    }
}

impl StreamSocket for mio::net::UnixStream {
    fn write_nosignal(&self, buf: &[u8]) -> io::Result<usize> {
        send_nosignal(self, buf)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::UnixStream::shutdown(self, how)
    }
}

/// `send(MSG_NOSIGNAL)`: std writes a Unix-domain stream with `write`, which raises `SIGPIPE`
/// on a closed peer in a process that has not ignored it.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_nosignal(s: &mio::net::UnixStream, buf: &[u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call, and the
    // descriptor is open for as long as `s` is borrowed.
    let n = unsafe {
        libc::send(
            s.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_nosignal(s: &mio::net::UnixStream, buf: &[u8]) -> io::Result<usize> {
    let mut s = s;
    s.write(buf)
}

/// Reads into `buf` once the socket is readable.
pub(crate) fn poll_read<S: StreamSocket>(
    io: &Evented<S>,
    cx: &mut Context<'_>,
    buf: &mut [u8],
) -> Poll<io::Result<usize>>
where
    for<'a> &'a S: Read + Write,
{
    io.poll_io(cx, Direction::Read, |s| {
        let mut s = s;
        s.read(buf)
    })
}

/// Writes from `buf` once the socket is writable.
pub(crate) fn poll_write<S: StreamSocket>(
    io: &Evented<S>,
    cx: &mut Context<'_>,
    buf: &[u8],
) -> Poll<io::Result<usize>>
where
    for<'a> &'a S: Read + Write,
{
    io.poll_io(cx, Direction::Write, |s| s.write_nosignal(buf))
}

/// Reads into `buf`, waiting for readiness the way ito's blocking calls wait.
pub(crate) fn read_blocking<S: StreamSocket>(io: &Evented<S>, buf: &mut [u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Read, |s| {
        let mut s = s;
        s.read(buf)
    })
}

/// Writes from `buf`, waiting for readiness the way ito's blocking calls wait.
pub(crate) fn write_blocking<S: StreamSocket>(io: &Evented<S>, buf: &[u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Write, |s| s.write_nosignal(buf))
}

/// Gives a stream type, whose `Evented` socket `$io` reaches from `$s: &Type`, its I/O
/// traits: reads if `read` is listed, writes if `write` is, for the type and for a shared
/// reference to it (`Borrow` reaches the type from either).
macro_rules! stream_traits {
    ($t:ty, |$s:ident| $io:expr, read) => {
        $crate::net::stream::stream_traits!(@read $t, $t, |$s| $io);
        $crate::net::stream::stream_traits!(@read &$t, $t, |$s| $io);
        #[cfg(feature = "tokio-io")]
        impl ::tokio::io::AsyncRead for $t {
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut ::tokio::io::ReadBuf<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $s: &$t = &*self;
                $crate::net::stream::poll_read($io, cx, buf.initialize_unfilled()).map_ok(|n| {
                    buf.advance(n);
                })
            }
        }
    };
    ($t:ty, |$s:ident| $io:expr, write) => {
        $crate::net::stream::stream_traits!(@write $t, $t, |$s| $io);
        $crate::net::stream::stream_traits!(@write &$t, $t, |$s| $io);
        #[cfg(feature = "tokio-io")]
        impl ::tokio::io::AsyncWrite for $t {
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::futures_io::AsyncWrite::poll_write(self, cx, buf)
            }
            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::futures_io::AsyncWrite::poll_flush(self, cx)
            }
            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::futures_io::AsyncWrite::poll_close(self, cx)
            }
        }
    };
    (@read $self:ty, $t:ty, |$s:ident| $io:expr) => {
        impl ::futures_io::AsyncRead for $self {
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut [u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::poll_read($io, cx, buf)
            }
        }
        impl ::std::io::Read for $self {
            fn read(&mut self, buf: &mut [u8]) -> ::std::io::Result<usize> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::read_blocking($io, buf)
            }
        }
    };
    (@write $self:ty, $t:ty, |$s:ident| $io:expr) => {
        impl ::futures_io::AsyncWrite for $self {
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::poll_write($io, cx, buf)
            }
            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                _: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::task::Poll::Ready(Ok(()))
            }
            fn poll_close(
                self: ::std::pin::Pin<&mut Self>,
                _: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                ::std::task::Poll::Ready($crate::net::stream::shutdown($io, ::std::net::Shutdown::Write))
            }
        }
        impl ::std::io::Write for $self {
            fn write(&mut self, buf: &[u8]) -> ::std::io::Result<usize> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::write_blocking($io, buf)
            }
            fn flush(&mut self) -> ::std::io::Result<()> {
                Ok(())
            }
        }
    };
}

pub(crate) use stream_traits;

/// Shuts down `how` on the stream `io`.
pub(crate) fn shutdown<S: StreamSocket>(io: &Evented<S>, how: Shutdown) -> io::Result<()>
where
    for<'a> &'a S: Read + Write,
{
    io.source().shutdown(how)
}

/// Waits until a connect in progress on `io` has finished; its error if it failed.
pub(crate) async fn finish_connect<S: Source>(
    io: &Evented<S>,
    take_error: impl Fn(&S) -> io::Result<Option<io::Error>>,
    connected: impl Fn(&S) -> io::Result<()>,
) -> io::Result<()> {
    loop {
        let ev = std::future::poll_fn(|cx| io.poll_ready(cx, Direction::Write)).await;
        if let Some(e) = take_error(io.source())? {
            return Err(e);
        }
        match connected(io.source()) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => io.clear_readiness(ev),
            Err(e) => return Err(e),
        }
    }
}
