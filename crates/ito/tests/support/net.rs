//! Helpers for the `net*.rs` tests: runtimes, an echo server, a connected pair, and tests run
//! in a child process.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ito::net::{TcpListener, TcpStream};

/// A runtime of `workers` workers.
pub(crate) fn rt(workers: usize) -> ito::Runtime {
    ito::Runtime::builder().workers(workers).build().unwrap()
}

/// Serves echo on `l`: one async task per connection, until `accept` fails.
pub(crate) async fn serve_echo(l: TcpListener) {
    while let Ok((conn, _)) = l.accept().await {
        ito::spawn(async move {
            let (mut r, mut w) = (&conn, &conn);
            let _ = futures::io::copy(&mut r, &mut w).await;
        });
    }
}

/// An echo server on `rt` (see [`serve_echo`]); returns its address.
pub(crate) fn echo_server(rt: &ito::Runtime) -> SocketAddr {
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        ito::spawn(serve_echo(l));
        addr
    })
}

/// A connected pair: (client, server side).
pub(crate) async fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    (c, s)
}

/// Waits (for at most 10 s: a hang guard, not a timing assertion) until `cond` holds.
pub(crate) fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + super::LONG;
    while !cond() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs the test `name` again in a child process of the test binary, with `env` set, and
/// checks that it passed. The child runs the test's body, which may change process-wide state
/// (a signal's action, a descriptor limit).
pub(crate) fn run_child(name: &str, env: (&str, &str)) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child {name}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `body` in a child process (see [`run_child`]): in the parent, starts the child; in
/// the child (`ITO_NET_CHILD` set), runs `body`.
pub(crate) fn in_child(name: &str, body: impl FnOnce()) {
    if std::env::var_os("ITO_NET_CHILD").is_some() {
        body();
    } else {
        run_child(name, ("ITO_NET_CHILD", "1"));
    }
}
