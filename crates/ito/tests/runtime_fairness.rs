//! Fairness on one worker: work queued below a stream of newer work still gets its turn,
//! whether the stream comes through the LIFO slot (tasks waking each other) or through the
//! deque (tasks spawning their successors).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use ito::{Promise, Runtime};

/// Two processes passing a message back and forth on one worker wake each other into its LIFO
/// slot for ever; a task queued on the same worker's deque before they started still gets its
/// turn (every few LIFO runs, the deque's newest task runs), and stops them.
#[test]
fn a_ping_pong_pair_does_not_starve_the_deque() {
    use ito::process::{self, Mailbox, Pid};
    use std::sync::atomic::AtomicBool;
    let rt = Runtime::builder().workers(1).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let bounces = Arc::new(AtomicUsize::new(0));
    let stopped = Promise::<usize>::new();
    let done = stopped.future();
    let bouncer =
        |stop: Arc<AtomicBool>, bounces: Arc<AtomicUsize>, peer: ito::Future<Pid<u64>>| {
            move |mut mb: Mailbox<u64>| async move {
                let peer = peer.await.expect("the peer is spawned");
                loop {
                    let v = mb.recv().await;
                    if stop.load(SeqCst) || peer.send(v + 1).is_err() {
                        break;
                    }
                    bounces.fetch_add(1, SeqCst);
                }
            }
        };
    let (s, b) = (stop.clone(), bounces.clone());
    let mut driver = rt.spawn(async move {
        // Queued first, so it sits below the pair in this worker's deque.
        let (s1, b1) = (s.clone(), b.clone());
        drop(ito::spawn_fn(move || {
            s1.store(true, SeqCst);
            let _ = stopped.success(b1.load(SeqCst));
        }));
        let (pa, pb) = (Promise::<Pid<u64>>::new(), Promise::<Pid<u64>>::new());
        let a = process::spawn(bouncer(s.clone(), b.clone(), pb.future()));
        let b = process::spawn(bouncer(s, b, pa.future()));
        let _ = pa.success(a.clone());
        let _ = pb.success(b);
        a.send(0).unwrap();
    });
    assert_eq!(driver.wait_timeout(Duration::from_secs(10)), Some(Ok(())));
    let seen = done.wait_timeout(Duration::from_secs(10));
    assert!(
        matches!(seen, Some(Ok(_))),
        "the queued task never ran: {} bounces",
        bounces.load(SeqCst)
    );
    assert!(stop.load(SeqCst));
}

/// Tasks that each spawn their successor keep a worker's deque topped up for ever, and the
/// deque runs newest first; a task queued below them before they started still runs, because
/// an idle worker steals the deque's oldest task. (On a runtime of one worker nobody steals,
/// and the older task waits until the stream stops: `docs/scheduler.md`, "Queues and the
/// worker loop".)
#[test]
fn a_stream_of_spawned_successors_does_not_hide_an_older_task_from_thieves() {
    use std::sync::atomic::AtomicBool;
    fn successor(stop: Arc<AtomicBool>, runs: Arc<AtomicUsize>) {
        drop(ito::spawn(async move {
            runs.fetch_add(1, SeqCst);
            if !stop.load(SeqCst) {
                successor(stop, runs);
            }
        }));
    }
    let rt = Runtime::builder().workers(2).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (s, r) = (stop.clone(), runs.clone());
    let mut older = rt
        .spawn_fn(move || {
            // Queued first, so it sits below the successors in this worker's deque.
            let s1 = s.clone();
            let older = ito::spawn(async move { s1.store(true, SeqCst) });
            for _ in 0..2 {
                successor(s.clone(), r.clone());
            }
            older
        })
        .wait()
        .unwrap();
    assert_eq!(
        older.wait_timeout(Duration::from_secs(10)),
        Some(Ok(())),
        "the older task never ran: {} successors ran",
        runs.load(SeqCst)
    );
    assert!(stop.load(SeqCst));
}
