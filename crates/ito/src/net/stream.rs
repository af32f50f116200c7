//! What every stream of this module shares: reads and writes through the driver, async and
//! synchronous, and the macro that gives a stream type its I/O traits.
//!
//! The traits, per stream type `T` (and `&T` where both directions may be shared):
//! `futures_io::AsyncRead`/`AsyncWrite`, `std::io::Read`/`Write`, and with the `tokio-io`
//! feature `tokio::io::AsyncRead`/`AsyncWrite`, vectored reads and writes included (one
//! `readv` or `sendmsg` for every slice). An async read or write is cancel safe: a
//! `Pending` poll has consumed nothing. A synchronous one waits for readiness through
//! `block_on_cancellable`, never in a blocking system call.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
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
    /// Writes `bufs` in one call, in order; a closed peer is an `EPIPE` error, never a signal.
    fn write_vectored_nosignal(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;
    /// Shuts down one or both directions.
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

impl StreamSocket for mio::net::TcpStream {
    fn write_nosignal(&self, buf: &[u8]) -> io::Result<usize> {
        // std's TCP write passes `MSG_NOSIGNAL` (Linux) or sets `SO_NOSIGPIPE` (BSDs).
        let mut s = self;
        s.write(buf)
    }
    fn write_vectored_nosignal(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // std's vectored TCP write is `writev`, which takes no `MSG_NOSIGNAL`.
        sendmsg_nosignal(self, bufs)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::TcpStream::shutdown(self, how)
    }
}

impl StreamSocket for mio::net::UnixStream {
    fn write_nosignal(&self, buf: &[u8]) -> io::Result<usize> {
        // std writes a Unix-domain stream with `write`, which raises `SIGPIPE` on a closed peer
        // in a process that has not ignored it.
        sendmsg_nosignal(self, &[IoSlice::new(buf)])
    }
    fn write_vectored_nosignal(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sendmsg_nosignal(self, bufs)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::UnixStream::shutdown(self, how)
    }
}

/// `sendmsg(MSG_NOSIGNAL)` of `bufs`, in order: a closed peer is an `EPIPE` error, never a
/// signal. One call takes at most `IOV_MAX` slices, as std's `writev` does; the caller writes
/// the rest in its next call.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn sendmsg_nosignal(s: &impl std::os::fd::AsRawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    /// Linux's `IOV_MAX`.
    const IOV_MAX: usize = 1024;
    let bufs = &bufs[..bufs.len().min(IOV_MAX)];
    // SAFETY: an all-zero `msghdr` is a valid one: no address, no control data, no slices.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is ABI-compatible with `iovec` on Unix; the kernel only reads through it.
    msg.msg_iov = bufs.as_ptr().cast_mut().cast();
    msg.msg_iovlen = bufs.len() as _;
    // SAFETY: `msg` points at `bufs.len()` slices, each valid for reads of its length for the
    // whole call, and the descriptor is open for as long as `s` is borrowed.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn sendmsg_nosignal<S>(s: &S, bufs: &[IoSlice<'_>]) -> io::Result<usize>
where
    for<'a> &'a S: Write,
{
    let mut s = s;
    s.write_vectored(bufs)
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
    let len = buf.len();
    io.poll_transfer(cx, Direction::Read, len, |mut s| s.read(buf))
}

/// Reads into `bufs`, in order, with one call once the socket is readable.
pub(crate) fn poll_read_vectored<S: StreamSocket>(
    io: &Evented<S>,
    cx: &mut Context<'_>,
    bufs: &mut [IoSliceMut<'_>],
) -> Poll<io::Result<usize>>
where
    for<'a> &'a S: Read + Write,
{
    let len = bufs.iter().map(|b| b.len()).sum();
    io.poll_transfer(cx, Direction::Read, len, |mut s| s.read_vectored(bufs))
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
    io.poll_transfer(cx, Direction::Write, buf.len(), |s| s.write_nosignal(buf))
}

/// Writes from `bufs`, in order, with one call once the socket is writable.
pub(crate) fn poll_write_vectored<S: StreamSocket>(
    io: &Evented<S>,
    cx: &mut Context<'_>,
    bufs: &[IoSlice<'_>],
) -> Poll<io::Result<usize>>
where
    for<'a> &'a S: Read + Write,
{
    let len = bufs.iter().map(|b| b.len()).sum();
    io.poll_transfer(cx, Direction::Write, len, |s| {
        s.write_vectored_nosignal(bufs)
    })
}

/// Reads into `buf`, waiting for readiness the way ito's blocking calls wait.
pub(crate) fn read_blocking<S: StreamSocket>(io: &Evented<S>, buf: &mut [u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Read, |mut s| s.read(buf))
}

/// Reads into `bufs`, in order, with one call, waiting for readiness the way ito's blocking
/// calls wait.
pub(crate) fn read_vectored_blocking<S: StreamSocket>(
    io: &Evented<S>,
    bufs: &mut [IoSliceMut<'_>],
) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Read, |mut s| s.read_vectored(bufs))
}

/// Writes from `buf`, waiting for readiness the way ito's blocking calls wait.
pub(crate) fn write_blocking<S: StreamSocket>(io: &Evented<S>, buf: &[u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Write, |s| s.write_nosignal(buf))
}

/// Writes from `bufs`, in order, with one call, waiting for readiness the way ito's blocking
/// calls wait.
pub(crate) fn write_vectored_blocking<S: StreamSocket>(
    io: &Evented<S>,
    bufs: &[IoSlice<'_>],
) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.blocking_io(Direction::Write, |s| s.write_vectored_nosignal(bufs))
}

/// Reads into `buf` if the socket was last seen readable, without waiting (see
/// [`Evented::try_io`]).
pub(crate) fn try_read<S: StreamSocket>(io: &Evented<S>, buf: &mut [u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.try_io(Direction::Read, |mut s| s.read(buf))
}

/// Writes from `buf` if the socket was last seen writable, without waiting (see
/// [`Evented::try_io`]).
pub(crate) fn try_write<S: StreamSocket>(io: &Evented<S>, buf: &[u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read + Write,
{
    io.try_io(Direction::Write, |s| s.write_nosignal(buf))
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
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::futures_io::AsyncWrite::poll_write_vectored(self, cx, bufs)
            }
            fn is_write_vectored(&self) -> bool {
                true
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
            fn poll_read_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &mut [::std::io::IoSliceMut<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::poll_read_vectored($io, cx, bufs)
            }
        }
        impl ::std::io::Read for $self {
            fn read(&mut self, buf: &mut [u8]) -> ::std::io::Result<usize> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::read_blocking($io, buf)
            }
            fn read_vectored(
                &mut self,
                bufs: &mut [::std::io::IoSliceMut<'_>],
            ) -> ::std::io::Result<usize> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::read_vectored_blocking($io, bufs)
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
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::poll_write_vectored($io, cx, bufs)
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
            fn write_vectored(&mut self, bufs: &[::std::io::IoSlice<'_>]) -> ::std::io::Result<usize> {
                let $s: &$t = ::std::borrow::Borrow::borrow(&*self);
                $crate::net::stream::write_vectored_blocking($io, bufs)
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
        let ev = io.ready(Direction::Write).await;
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
