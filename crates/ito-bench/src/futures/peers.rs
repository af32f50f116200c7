//! Peer plumbing: futures-rs and tokio oneshots as futures of a result, and their `or_alt`.

use super::*;

/// The peers' failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fail;

/// A peer future's result.
pub(super) type PeerRes = Result<u64, Fail>;

/// A futures-rs oneshot receiver as a future of [`PeerRes`] (a dropped sender is a failure).
pub(super) type SharedLeaf = Shared<
    futures::future::Map<
        futures::channel::oneshot::Receiver<PeerRes>,
        fn(Result<PeerRes, futures::channel::oneshot::Canceled>) -> PeerRes,
    >,
>;

/// A multi-reader or_alt result of the `shared` peer.
pub(super) type SharedChain = Shared<BoxFuture<'static, PeerRes>>;

/// A tokio oneshot receiver as a future of [`PeerRes`].
pub(super) type TokioLeaf = futures::future::Map<
    tokio::sync::oneshot::Receiver<PeerRes>,
    fn(Result<PeerRes, tokio::sync::oneshot::error::RecvError>) -> PeerRes,
>;

pub(super) fn flatten_canceled(r: Result<PeerRes, futures::channel::oneshot::Canceled>) -> PeerRes {
    r.unwrap_or(Err(Fail))
}

pub(super) fn flatten_recv(r: Result<PeerRes, tokio::sync::oneshot::error::RecvError>) -> PeerRes {
    r.unwrap_or(Err(Fail))
}

/// A completed `shared` future.
pub(super) fn shared_completed(r: PeerRes) -> SharedLeaf {
    let (tx, rx) = futures::channel::oneshot::channel();
    let _ = tx.send(r);
    let f: fn(_) -> _ = flatten_canceled;
    rx.map(f).shared()
}

/// A completed tokio oneshot receiver.
pub(super) fn tokio_completed(r: PeerRes) -> TokioLeaf {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _ = tx.send(r);
    let f: fn(_) -> _ = flatten_recv;
    rx.map(f)
}

/// `or_alt` for futures-rs: the first success of `a` and `b`, as a new `Shared` future.
pub(super) fn shared_or_alt<A, B>(a: A, b: B) -> SharedChain
where
    A: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
    B: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
{
    tokio_or_alt(a, b).shared()
}

/// `or_alt` over tokio oneshots: the first success of `a` and `b`, single-reader.
pub(super) fn tokio_or_alt<A, B>(a: A, b: B) -> BoxFuture<'static, PeerRes>
where
    A: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
    B: std::future::Future<Output = PeerRes> + Unpin + Send + 'static,
{
    select_ok([Either::Left(a), Either::Right(b)])
        .map(|r| r.map(|(v, _rest)| v))
        .boxed()
}
