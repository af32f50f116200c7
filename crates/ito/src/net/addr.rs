//! Addresses to bind or connect to, and resolving names off the workers.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What [`TcpListener::bind`](super::TcpListener::bind),
/// [`TcpStream::connect`](super::TcpStream::connect) and [`UdpSocket`](super::UdpSocket)'s
/// methods accept as an address: a [`SocketAddr`], an `(ip, port)` pair, or a string such as
/// `"127.0.0.1:8080"` or `"localhost:8080"`.
///
/// A string or `(host, port)` that is not a literal address is a name, resolved on the
/// blocking pool ([`spawn_blocking`](crate::spawn_blocking)): the system resolver blocks, and
/// a worker never does. Sealed: the set of implementations is ito's.
///
/// ```
/// use std::net::{Ipv4Addr, SocketAddr};
/// # ito::block_on(async {
/// let a = ito::net::TcpListener::bind("127.0.0.1:0").await?;
/// let b = ito::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
/// let c = ito::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
/// assert!(a.local_addr()?.port() != 0 && b.local_addr()? != c.local_addr()?);
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    use std::net::SocketAddr;

    /// An address as given: ready to use, or a name to look up.
    #[derive(Debug)]
    pub enum Addrs {
        Ready(Vec<SocketAddr>),
        Host(String),
        HostPort(String, u16),
    }

    /// The hidden half of [`ToSocketAddrs`](super::ToSocketAddrs).
    pub trait Sealed {
        fn to_addrs(&self) -> Addrs;
    }
}

use sealed::{Addrs, Sealed};

macro_rules! ready_addr {
    ($($t:ty),*) => {$(
        impl ToSocketAddrs for $t {}
        impl Sealed for $t {
            fn to_addrs(&self) -> Addrs {
                Addrs::Ready(vec![SocketAddr::from(*self)])
            }
        }
    )*};
}

ready_addr!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16),
    ([u8; 4], u16)
);

impl ToSocketAddrs for &[SocketAddr] {}
impl Sealed for &[SocketAddr] {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(self.to_vec())
    }
}

impl ToSocketAddrs for str {}
impl Sealed for str {
    fn to_addrs(&self) -> Addrs {
        match self.parse::<SocketAddr>() {
            Ok(a) => Addrs::Ready(vec![a]),
            Err(_) => Addrs::Host(self.to_owned()),
        }
    }
}

impl ToSocketAddrs for String {}
impl Sealed for String {
    fn to_addrs(&self) -> Addrs {
        self.as_str().to_addrs()
    }
}

impl ToSocketAddrs for (&str, u16) {}
impl Sealed for (&str, u16) {
    fn to_addrs(&self) -> Addrs {
        match self.0.parse::<IpAddr>() {
            Ok(ip) => Addrs::Ready(vec![SocketAddr::new(ip, self.1)]),
            Err(_) => Addrs::HostPort(self.0.to_owned(), self.1),
        }
    }
}

impl ToSocketAddrs for (String, u16) {}
impl Sealed for (String, u16) {
    fn to_addrs(&self) -> Addrs {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: Sealed + ?Sized> Sealed for &T {
    fn to_addrs(&self) -> Addrs {
        (**self).to_addrs()
    }
}

/// The addresses `addr` names, looking names up on the blocking pool. An empty answer is an
/// error.
pub(crate) async fn resolve(addr: &(impl ToSocketAddrs + ?Sized)) -> io::Result<Vec<SocketAddr>> {
    let addrs = match addr.to_addrs() {
        Addrs::Ready(v) => v,
        Addrs::Host(h) => lookup(move || std::net::ToSocketAddrs::to_socket_addrs(&h)).await?,
        Addrs::HostPort(h, p) => {
            lookup(move || std::net::ToSocketAddrs::to_socket_addrs(&(h.as_str(), p))).await?
        }
    };
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "ito: the address resolved to no socket address",
        ));
    }
    Ok(addrs)
}

async fn lookup<I: Iterator<Item = SocketAddr>>(
    f: impl FnOnce() -> io::Result<I> + Send + 'static,
) -> io::Result<Vec<SocketAddr>> {
    // A `Future`'s value is cloned to each waiter, and `io::Error` is not `Clone`: the error
    // travels as its kind and message.
    crate::spawn_blocking(move || {
        f().map(Iterator::collect::<Vec<_>>)
            .map_err(|e| (e.kind(), e.to_string()))
    })
    .await
    .map_err(io::Error::other)?
    .map_err(|(kind, msg)| io::Error::new(kind, msg))
}

/// Tries `op` on each address in turn; returns the first success, or the last error with the
/// address it was for.
pub(crate) async fn each_addr<T, F: std::future::Future<Output = io::Result<T>>>(
    what: &str,
    addrs: Vec<SocketAddr>,
    mut op: impl FnMut(SocketAddr) -> F,
) -> io::Result<T> {
    let mut last = None;
    for a in addrs {
        match op(a).await {
            Ok(v) => return Ok(v),
            Err(e) => {
                last = Some(io::Error::new(
                    e.kind(),
                    format!("ito: cannot {what} {a}: {e}"),
                ))
            }
        }
    }
    Err(last.expect("resolve returns at least one address"))
}
