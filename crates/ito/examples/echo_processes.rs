//! An echo server in Erlang's style: one process per connection, under a supervisor.
//!
//! The supervisor (one-for-one) runs one child, the acceptor. The acceptor traps exits and
//! links to a process it spawns for each connection, so it hears of every connection's end;
//! if the acceptor itself dies, its connections die with it (the link) and the supervisor
//! starts a new acceptor on the same listener. A connection process waits on its mailbox and
//! its socket at once (`futures::select!`): it echoes what the socket sends, and writes what
//! its mailbox tells it to (the acceptor's greeting).
//!
//! The run: three clients echo; one asks its process to crash (only that connection ends);
//! the acceptor is killed and restarted, and a new client is served; then the supervisor
//! stops everything.
//!
//! ```sh
//! cargo run --example echo_processes
//! ```

use std::sync::Arc;
use std::time::Duration;

use futures::{AsyncReadExt, AsyncWriteExt, FutureExt};
use ito::net::{TcpListener, TcpStream};
use ito::process::{self, ChildSpec, Exit, ExitSignal, Mailbox, Strategy, Supervisor};

/// What a connection process receives: bytes to write to its peer.
struct Say(Vec<u8>);

/// The greeting the acceptor sends each connection through its process's mailbox.
const WELCOME: &[u8] = b"welcome\n";

/// One connection: echo until the peer closes or asks for a crash (a panic, which ends this
/// process and no other), and write what the mailbox says.
/// An I/O error ends it with that error (`?`), which its links get as it is.
async fn serve(mut mb: Mailbox<Say>, mut conn: TcpStream) -> std::io::Result<()> {
    let mut buf = [0; 4096];
    loop {
        futures::select! {
            msg = mb.recv().fuse() => {
                let Say(bytes) = msg;
                conn.write_all(&bytes).await?;
            }
            n = conn.read(&mut buf).fuse() => {
                let n = n?;
                if n == 0 {
                    return Ok(());
                }
                if buf[..n].starts_with(b"crash") {
                    panic!("the client asked for a crash");
                }
                conn.write_all(&buf[..n]).await?;
            }
        }
    }
}

/// What the acceptor receives: the end of a connection process it linked to.
struct Ended(ExitSignal);

/// The acceptor: accepts connections and spawns a linked process for each.
async fn accept(mut mb: Mailbox<Ended>, listener: Arc<TcpListener>) -> std::io::Result<()> {
    mb.trap_exits(Ended);
    loop {
        futures::select! {
            conn = listener.accept().fuse() => {
                let (conn, peer) = conn?;
                let pid = mb.spawn_link(move |mb| serve(mb, conn));
                // It may have ended already (its peer gone): then there is no one to greet.
                let _ = pid.send(Say(WELCOME.to_vec()));
                println!("acceptor: {peer} served by process {:?}", pid.id());
            }
            ended = mb.recv().fuse() => {
                let Ended(sig) = ended;
                println!("acceptor: process {:?} ended: {:?}", sig.from, sig.reason);
            }
        }
    }
}

/// A client: the greeting, then `rounds` round trips of `msg`.
async fn client(addr: std::net::SocketAddr, msg: &[u8], rounds: usize) -> std::io::Result<()> {
    let mut c = TcpStream::connect(addr).await?;
    let mut hello = [0; WELCOME.len()];
    c.read_exact(&mut hello).await?;
    assert_eq!(hello, WELCOME);
    let mut back = vec![0; msg.len()];
    for _ in 0..rounds {
        c.write_all(msg).await?;
        c.read_exact(&mut back).await?;
        assert_eq!(back, msg);
    }
    Ok(())
}

fn main() {
    // The crash below is expected: keep its panic message short.
    std::panic::set_hook(Box::new(|info| eprintln!("(expected) {info}")));
    ito::block_on(async {
        let listener = Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
        let addr = listener.local_addr().unwrap();
        println!("listening on {addr}");
        let l = listener.clone();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(3, Duration::from_secs(5))
            .child(ChildSpec::new("acceptor", move || {
                let l = l.clone();
                process::spawn(move |mb| accept(mb, l))
            }))
            .spawn();

        let clients: Vec<_> = (0..3u8)
            .map(|i| ito::spawn(async move { client(addr, &[b'a' + i; 32], 100).await.is_ok() }))
            .collect();
        for c in clients {
            assert!(c.await.unwrap());
        }
        println!("three clients served");

        // A client whose process crashes: its connection ends, nothing else does.
        let mut doomed = TcpStream::connect(addr).await.unwrap();
        doomed.write_all(b"crash").await.unwrap();
        let mut rest = Vec::new();
        let _ = doomed.read_to_end(&mut rest).await;
        assert!(client(addr, b"still up", 10).await.is_ok());
        println!("a crashed connection left the others alone");

        // Kill the acceptor: the supervisor starts a new one on the same listener.
        let children = sup.which_children(Duration::from_secs(5)).await.unwrap();
        let old = children[0].pid.clone().unwrap();
        old.kill();
        assert_eq!(old.on_exit().await, Ok(Exit::Killed));
        assert!(client(addr, b"after restart", 10).await.is_ok());
        println!("the acceptor was restarted and serves again");

        sup.stop();
        assert_eq!(sup.on_exit().await, Ok(Exit::Normal));
        println!("stopped");
    });
}
