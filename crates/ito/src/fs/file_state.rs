//! The state behind a [`File`](super::File): at most one operation in flight on the blocking
//! pool, the buffer it owns, and what its result means for the next call.
//!
//! A call that finds an operation in flight first waits for it and files its result: a read's
//! bytes stay in the buffer for the next read, a failed write is kept in `write_err` for the
//! next write or flush, a seek's position is kept in `pos`. Then it starts its own operation.
//! Each `poll_*` method is what the matching trait method of `futures_io` (and tokio's,
//! behind `tokio-io`) does.

use std::fs::File as StdFile;
use std::future::Future as StdFuture;
use std::io::{self, IoSlice, Seek, SeekFrom};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::blocking::{lost, run};
use super::buf::{Buf, MAX_BUF};
use crate::sync::oneshot;

/// What a finished blocking job did.
#[derive(Debug)]
enum Op {
    Read(io::Result<usize>),
    Write(io::Result<()>),
    Seek(io::Result<u64>),
    /// `set_len`: it moves no position and has no result a later call wants.
    SetLen(io::Result<()>),
}

#[derive(Debug)]
enum State {
    Idle(Buf),
    Busy(oneshot::Receiver<(Op, Buf)>),
}

#[derive(Debug)]
pub(super) struct Inner {
    state: State,
    /// A write whose `poll_write` already returned, and that failed: the next write or flush
    /// reports it.
    write_err: Option<io::Error>,
    /// The position the last finished seek reported.
    pos: u64,
    /// The seek that `poll_seek` started and is still in flight, so that polling it again
    /// waits for that seek instead of starting another.
    seeking: Option<SeekFrom>,
}

impl Inner {
    pub(super) fn new() -> Inner {
        Inner {
            state: State::Idle(Buf::default()),
            write_err: None,
            pos: 0,
            seeking: None,
        }
    }

    /// Starts `job` with the idle buffer; the state becomes busy.
    fn start<F>(&mut self, std: &Arc<StdFile>, job: F)
    where
        F: FnOnce(&StdFile, &mut Buf) -> Op + Send + 'static,
    {
        let State::Idle(buf) = &mut self.state else {
            unreachable!("an operation starts only when none is in flight");
        };
        let mut buf = std::mem::take(buf);
        let std = Arc::clone(std);
        let rx = run(move || {
            let op = job(&std, &mut buf);
            // The file handle goes before the result does, so that a caller that saw the
            // result can take the file back out of its `Arc` (`File::into_std`).
            drop(std);
            (op, buf)
        });
        self.state = State::Busy(rx);
    }

    /// Waits for the operation in flight, if any, and returns what it did; the state is idle
    /// afterwards. `Ok(None)`: nothing was in flight.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Op>>> {
        let State::Busy(rx) = &mut self.state else {
            return Poll::Ready(Ok(None));
        };
        let res = ready!(Pin::new(rx).poll(cx));
        match res {
            Ok((op, buf)) => {
                self.state = State::Idle(buf);
                Poll::Ready(Ok(Some(op)))
            }
            Err(_) => {
                // Whatever the job was, it is over: a seek it stood for will not report.
                self.seeking = None;
                self.state = State::Idle(Buf::default());
                Poll::Ready(Err(lost()))
            }
        }
    }

    /// Files the result of an operation that the current call did not start.
    fn file_away(&mut self, op: Op) {
        match op {
            Op::Read(_) | Op::SetLen(_) => {}
            Op::Write(res) => {
                if let Err(e) = res {
                    self.write_err.get_or_insert(e);
                }
            }
            Op::Seek(res) => {
                self.seeking = None;
                if let Ok(pos) = res {
                    self.pos = pos;
                }
            }
        }
    }

    /// Waits until nothing is in flight, filing away what was.
    pub(super) fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(op) = ready!(self.poll_finish(cx))? {
            self.file_away(op);
        }
        Poll::Ready(Ok(()))
    }

    /// Fills `dst` from the read-ahead buffer, or else reads up to `dst.len()` bytes (at most
    /// [`MAX_BUF`]) on the blocking pool into the buffer first.
    pub(super) fn poll_read(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            if let State::Idle(buf) = &mut self.state {
                if !buf.is_empty() || dst.is_empty() {
                    return Poll::Ready(Ok(buf.copy_to(dst)));
                }
                let max = dst.len().min(MAX_BUF);
                self.start(std, move |mut f, buf| Op::Read(buf.read_from(&mut f, max)));
            }
            match ready!(self.poll_finish(cx))? {
                Some(Op::Read(Ok(_))) => {
                    let State::Idle(buf) = &mut self.state else {
                        unreachable!("poll_finish leaves the state idle");
                    };
                    // Zero bytes read is the end of the file.
                    return Poll::Ready(Ok(buf.copy_to(dst)));
                }
                Some(Op::Read(Err(e))) => return Poll::Ready(Err(e)),
                Some(op) => self.file_away(op),
                None => {}
            }
        }
    }

    /// Takes up to [`MAX_BUF`] bytes of `src` (or of `bufs`) and starts writing them on the
    /// blocking pool; returns as soon as the write has started. Waits first for the operation
    /// in flight, and reports a failed earlier write instead of taking anything.
    pub(super) fn poll_write(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        src: &[u8],
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // What a flush does is what a write must do first.
        ready!(self.poll_flush(cx))?;
        let State::Idle(buf) = &mut self.state else {
            unreachable!("poll_flush leaves the state idle");
        };
        if src.is_empty() && bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        // Bytes read ahead but not taken: the OS position is past the caller's by that much.
        let back = if buf.is_empty() {
            0
        } else {
            buf.discard_read()
        };
        let n = if bufs.is_empty() {
            buf.copy_from(src)
        } else {
            buf.copy_from_bufs(bufs)
        };
        self.start(std, move |mut f, buf| {
            let res = match back {
                0 => buf.write_to(&mut f),
                back => f
                    .seek(SeekFrom::Current(back))
                    .and_then(|_| buf.write_to(&mut f)),
            };
            Op::Write(res)
        });
        Poll::Ready(Ok(n))
    }

    /// Waits for the operation in flight and reports a failed write, the one in flight or an
    /// earlier one.
    pub(super) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if let Some(e) = self.write_err.take() {
                return Poll::Ready(Err(e));
            }
            match ready!(self.poll_finish(cx))? {
                Some(Op::Write(Err(e))) => return Poll::Ready(Err(e)),
                Some(op) => self.file_away(op),
                None => return Poll::Ready(Ok(())),
            }
        }
    }

    /// Starts a seek to `pos` from the idle state, accounting for read-ahead bytes the caller
    /// has not taken.
    fn start_seek_idle(&mut self, std: &Arc<StdFile>, mut pos: SeekFrom) {
        let State::Idle(buf) = &mut self.state else {
            unreachable!("a seek starts only when nothing is in flight");
        };
        let mut first = None;
        if !buf.is_empty() {
            let back = buf.discard_read();
            match &mut pos {
                SeekFrom::Current(off) => match off.checked_add(back) {
                    Some(o) => *off = o,
                    None => first = Some(SeekFrom::Current(back)),
                },
                // An absolute seek does not depend on where the OS position is.
                SeekFrom::Start(_) | SeekFrom::End(_) => {}
            }
        }
        self.seeking = Some(pos);
        self.start(std, move |mut f, _| {
            let res = match first {
                Some(first) => f.seek(first).and_then(|_| f.seek(pos)),
                None => f.seek(pos),
            };
            Op::Seek(res)
        });
    }

    /// `futures_io::AsyncSeek::poll_seek`: waits for the operation in flight, starts the seek,
    /// and waits for it. Polled again with the same `pos` while its seek is in flight, it
    /// keeps waiting for that seek.
    pub(super) fn poll_seek(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        if self.seeking != Some(pos) {
            ready!(self.poll_idle(cx))?;
            self.start_seek_idle(std, pos);
        }
        self.poll_seek_done(cx)
    }

    /// tokio's `AsyncSeek::start_seek`: refuses while an operation is in flight (tokio's
    /// contract: call `poll_complete` first).
    #[cfg_attr(not(feature = "tokio-io"), allow(dead_code))]
    pub(super) fn start_seek(&mut self, std: &Arc<StdFile>, pos: SeekFrom) -> io::Result<()> {
        if let State::Busy(_) = self.state {
            return Err(io::Error::other(
                "a file operation is in flight: call poll_complete before start_seek",
            ));
        }
        self.start_seek_idle(std, pos);
        Ok(())
    }

    /// Waits for the seek in flight and returns where it went; with no seek in flight, waits
    /// for whatever is and returns the last position a seek reported (tokio's `poll_complete`).
    pub(super) fn poll_seek_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        loop {
            match ready!(self.poll_finish(cx)) {
                Err(e) => {
                    self.seeking = None;
                    return Poll::Ready(Err(e));
                }
                Ok(Some(Op::Seek(res))) => {
                    self.seeking = None;
                    if let Ok(pos) = res {
                        self.pos = pos;
                    }
                    return Poll::Ready(res);
                }
                Ok(Some(op)) => self.file_away(op),
                Ok(None) => return Poll::Ready(Ok(self.pos)),
            }
        }
    }

    /// Starts `set_len` from the idle state, first moving the OS position back over read-ahead
    /// bytes (the caller's position must not move); the result comes back as the next op.
    fn start_set_len(&mut self, std: &Arc<StdFile>, size: u64) {
        let State::Idle(buf) = &mut self.state else {
            unreachable!("set_len starts only when nothing is in flight");
        };
        let back = if buf.is_empty() {
            0
        } else {
            buf.discard_read()
        };
        self.start(std, move |mut f, _| {
            let res = match back {
                0 => f.set_len(size),
                back => f
                    .seek(SeekFrom::Current(back))
                    .and_then(|_| f.set_len(size)),
            };
            Op::SetLen(res)
        });
    }

    /// Waits for what is in flight, then truncates or extends the file to `size`.
    pub(super) async fn set_len(&mut self, std: &Arc<StdFile>, size: u64) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_idle(cx)).await?;
        self.start_set_len(std, size);
        loop {
            match std::future::poll_fn(|cx| self.poll_finish(cx)).await? {
                Some(Op::SetLen(res)) => return res,
                Some(op) => self.file_away(op),
                None => unreachable!("set_len's job is in flight until it reports"),
            }
        }
    }

    /// Waits for what is in flight and gives back the read-ahead bytes by moving the OS
    /// position back over them, so that the file's position is the caller's.
    pub(super) async fn settle(&mut self, std: &Arc<StdFile>) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_idle(cx)).await?;
        let State::Idle(buf) = &mut self.state else {
            unreachable!("poll_idle leaves the state idle");
        };
        if buf.is_empty() {
            return Ok(());
        }
        let back = buf.discard_read();
        self.start_seek_idle(std, SeekFrom::Current(back));
        std::future::poll_fn(|cx| self.poll_seek_done(cx))
            .await
            .map(drop)
    }

    /// Takes a write error that no call has reported yet.
    pub(super) fn take_write_err(&mut self) -> Option<io::Error> {
        self.write_err.take()
    }
}
