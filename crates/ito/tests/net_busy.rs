//! A worker whose queue never empties still serves its sockets: it looks at the I/O driver
//! every `Builder::event_interval` tasks without blocking, since it never parks in it.

mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A task that spawns its successor until `stop` is set, counting its runs.
fn busy(runs: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    ito::spawn(async move {
        runs.fetch_add(1, Ordering::Relaxed);
        if !stop.load(Ordering::Relaxed) {
            busy(runs, stop);
        }
    });
}

/// Round trips from a plain thread to an echo server on a one-worker runtime that two
/// self-respawning tasks keep busy: each must come back, so readiness reaches the echo task
/// although the worker never sleeps.
fn round_trips_behind_a_busy_queue(builder: ito::Builder) {
    let rt = builder.workers(1).build().unwrap();
    let addr = support::net::echo_server(&rt);
    let runs = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    rt.block_on(async {
        for _ in 0..2 {
            busy(runs.clone(), stop.clone());
        }
    });
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(support::LONG)).unwrap();
    let mut back = [0u8; 8];
    for i in 0u64..50 {
        c.write_all(&i.to_le_bytes()).unwrap();
        c.read_exact(&mut back).expect("the echo came back");
        assert_eq!(u64::from_le_bytes(back), i);
    }
    let ran = runs.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    assert!(ran > 0, "the busy tasks ran meanwhile");
}

#[test]
fn a_busy_worker_serves_sockets_at_the_default_interval() {
    round_trips_behind_a_busy_queue(ito::Runtime::builder());
}

#[test]
fn a_busy_worker_serves_sockets_at_every_task() {
    round_trips_behind_a_busy_queue(ito::Runtime::builder().event_interval(1));
}

#[test]
fn a_zero_event_interval_means_every_task() {
    round_trips_behind_a_busy_queue(ito::Runtime::builder().event_interval(0));
}
