//! Transactional data structures built on TVars: `TQueue` (unbounded and bounded) and `TMVar`.
//! FIFO order against a model, blocking at the bounds, exactly-once delivery with many
//! producers and consumers (threads and ito tasks), `or_else` across queues, and wake-ups.

mod support;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ito::stm::{TMVar, TQueue, atomically, atomically_async, check};

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Waits (polling) until `cond` holds, failing the test after `support::LONG`.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < support::LONG,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Random single-threaded operations on a queue and on a `VecDeque`, compared step by step.
fn check_against_model(capacity: Option<usize>, seed: u64) {
    let q = match capacity {
        Some(c) => TQueue::bounded(c),
        None => TQueue::new(),
    };
    let mut model = VecDeque::new();
    let mut rng = Rng(seed);
    let mut next = 0u32;
    for _ in 0..4000 {
        match rng.below(10) {
            0..=3 => {
                let pushed = atomically(|tx| q.try_push(tx, next));
                let room = capacity.is_none_or(|c| model.len() < c);
                assert_eq!(pushed, room, "try_push at len {}", model.len());
                if room {
                    model.push_back(next);
                }
                next += 1;
            }
            4..=6 => assert_eq!(atomically(|tx| q.try_pop(tx)), model.pop_front()),
            7 => assert_eq!(atomically(|tx| q.try_peek(tx)), model.front().copied()),
            8 => {
                let (len, empty) = atomically(|tx| Ok((q.len(tx)?, q.is_empty(tx)?)));
                assert_eq!((len, empty), (model.len(), model.is_empty()));
            }
            _ => {
                if rng.below(8) == 0 {
                    assert_eq!(atomically(|tx| q.drain(tx)), Vec::from(model.clone()));
                    model.clear();
                } else {
                    // Several operations in one transaction see their own effects.
                    let (a, b) = atomically(|tx| {
                        let a = q.try_pop(tx)?;
                        let b = q.try_pop(tx)?;
                        Ok((a, b))
                    });
                    assert_eq!((a, b), (model.pop_front(), model.pop_front()));
                }
            }
        }
    }
    // Whatever is left comes out in order.
    let rest: Vec<u32> = std::iter::from_fn(|| atomically(|tx| q.try_pop(tx))).collect();
    assert_eq!(rest, Vec::from(model));
}

#[test]
fn fifo_order_matches_a_model() {
    for seed in 1..=4 {
        check_against_model(None, seed * 0x9E37_79B9);
        check_against_model(Some(1), seed * 0x9E37_79B9);
        check_against_model(Some(5), seed * 0x9E37_79B9);
        check_against_model(Some(64), seed * 0x9E37_79B9);
    }
}

#[test]
fn fifo_order_across_transactions_and_batches() {
    let q = TQueue::new();
    // Pushes in one transaction keep their order, and so do pops.
    atomically(|tx| (0..10).try_for_each(|i| q.push(tx, i)));
    q.push_atomic(10);
    assert_eq!(atomically(|tx| q.peek(tx)), 0);
    let first: Vec<i32> = atomically(|tx| (0..4).map(|_| q.pop(tx)).collect());
    assert_eq!(first, [0, 1, 2, 3]);
    q.push_atomic(11); // lands behind the front list moved over above
    let rest: Vec<i32> = (0..8).map(|_| q.pop_atomic()).collect();
    assert_eq!(rest, [4, 5, 6, 7, 8, 9, 10, 11]);
    assert!(atomically(|tx| q.is_empty(tx)));
}

/// A transaction that pops and then retries leaves the queue as it was.
#[test]
fn an_abandoned_pop_leaves_the_queue_unchanged() {
    let q = TQueue::bounded(4);
    q.push_atomic(1);
    // Two pops from a one-element queue: the first one's work (moving the back list over,
    // taking a credit back) is rolled back with the branch.
    let got = atomically(|tx| {
        tx.or_else(
            |tx| {
                let a = q.pop(tx)?;
                let b = q.pop(tx)?;
                Ok(a + b)
            },
            |_| Ok(-1),
        )
    });
    assert_eq!(got, -1);
    assert_eq!(atomically(|tx| q.len(tx)), 1);
    // The capacity is intact: three more fit, a fifth does not.
    for i in 2..=4 {
        assert!(atomically(|tx| q.try_push(tx, i)));
    }
    assert!(!atomically(|tx| q.try_push(tx, 5)));
    assert_eq!(atomically(|tx| q.drain(tx)), [1, 2, 3, 4]);
}

/// A producer on a full bounded queue waits; each pop lets exactly one more push through.
#[test]
fn a_bounded_queue_blocks_producers_while_full() {
    const CAP: usize = 3;
    let q = TQueue::bounded(CAP);
    let pushed = Arc::new(AtomicUsize::new(0));
    let producer = {
        let (q, pushed) = (q.clone(), pushed.clone());
        std::thread::spawn(move || {
            for i in 0..10 {
                q.push_atomic(i);
                pushed.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    eventually("the queue to fill", || pushed.load(Ordering::SeqCst) == CAP);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        pushed.load(Ordering::SeqCst),
        CAP,
        "pushed past the capacity"
    );
    assert_eq!(atomically(|tx| q.len(tx)), CAP);
    for expect in 0..10 {
        assert_eq!(q.pop_atomic(), expect);
        let want = (CAP + expect + 1).min(10);
        eventually("one more push", || pushed.load(Ordering::SeqCst) == want);
        assert!(atomically(|tx| q.len(tx)) <= CAP);
    }
    producer.join().unwrap();
    assert!(atomically(|tx| q.is_empty(tx)));
}

#[test]
#[should_panic(expected = "at least 1")]
fn a_zero_capacity_is_refused() {
    let _ = TQueue::<u8>::bounded(0);
}

/// Checks what consumers received: every value exactly once, and each producer's values in
/// the order it pushed them, as seen by each consumer.
fn check_deliveries(producers: u64, per_producer: u64, received: &[Vec<u64>]) {
    let mut seen = vec![0u8; (producers * per_producer) as usize];
    for got in received {
        let mut last = vec![None; producers as usize];
        for &v in got {
            seen[v as usize] += 1;
            let p = (v / per_producer) as usize;
            assert!(last[p] < Some(v), "producer {p}'s values out of order");
            last[p] = Some(v);
        }
    }
    let missing = seen.iter().filter(|&&n| n == 0).count();
    let repeated = seen.iter().filter(|&&n| n > 1).count();
    assert_eq!((missing, repeated), (0, 0), "values lost / delivered twice");
}

/// Producers push `per_producer` tagged values each, then one `None` per consumer; consumers
/// pop until they get a `None`.
fn threads_exchange(q: TQueue<Option<u64>>, producers: u64, consumers: u64, per_producer: u64) {
    let received: Vec<Vec<u64>> = std::thread::scope(|s| {
        let cons: Vec<_> = (0..consumers)
            .map(|_| {
                let q = &q;
                s.spawn(move || {
                    let mut got = Vec::new();
                    while let Some(v) = q.pop_atomic() {
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        let prods: Vec<_> = (0..producers)
            .map(|p| {
                let q = &q;
                s.spawn(move || {
                    for i in 0..per_producer {
                        q.push_atomic(Some(p * per_producer + i));
                    }
                })
            })
            .collect();
        for h in prods {
            h.join().unwrap();
        }
        for _ in 0..consumers {
            q.push_atomic(None);
        }
        cons.into_iter().map(|h| h.join().unwrap()).collect()
    });
    check_deliveries(producers, per_producer, &received);
    assert!(atomically(|tx| q.is_empty(tx)));
}

#[test]
fn many_threads_every_value_arrives_once_unbounded() {
    threads_exchange(TQueue::new(), 4, 4, 3000);
}

#[test]
fn many_threads_every_value_arrives_once_bounded() {
    threads_exchange(TQueue::bounded(8), 4, 4, 3000);
    threads_exchange(TQueue::bounded(1), 3, 2, 1000);
}

/// The same with async tasks on a small runtime: a full or empty queue suspends the task.
fn tasks_exchange(q: TQueue<Option<u64>>, producers: u64, consumers: u64, per_producer: u64) {
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    let cons: Vec<_> = (0..consumers)
        .map(|_| {
            let q = q.clone();
            rt.spawn(async move {
                let mut got = Vec::new();
                while let Some(v) = atomically_async(|tx| q.pop(tx)).await {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    let prods: Vec<_> = (0..producers)
        .map(|p| {
            let q = q.clone();
            rt.spawn(async move {
                for i in 0..per_producer {
                    let v = Some(p * per_producer + i);
                    atomically_async(|tx| q.push(tx, v)).await;
                }
            })
        })
        .collect();
    for p in prods {
        assert_eq!(support::get(p), Ok(()));
    }
    let q2 = q.clone();
    let closer = rt.spawn(async move {
        for _ in 0..consumers {
            atomically_async(|tx| q2.push(tx, None)).await;
        }
    });
    assert_eq!(support::get(closer), Ok(()));
    let received: Vec<Vec<u64>> = cons.into_iter().map(|c| support::get(c).unwrap()).collect();
    check_deliveries(producers, per_producer, &received);
}

#[test]
fn many_tasks_every_value_arrives_once() {
    tasks_exchange(TQueue::new(), 6, 6, 1500);
    tasks_exchange(TQueue::bounded(4), 6, 6, 1500);
}

/// Consumers use synchronous `atomically` on workers of a one-worker runtime, producers are
/// OS threads: a consumer waiting on an empty queue must not starve the others.
#[test]
fn blocking_pops_on_workers_do_not_pin_them() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let q = TQueue::bounded(2);
    let cons: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            rt.spawn_fn(move || {
                let mut got = Vec::new();
                while let Some(v) = q.pop_atomic() {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    std::thread::scope(|s| {
        for p in 0..2u64 {
            let q = &q;
            s.spawn(move || (0..500).for_each(|i| q.push_atomic(Some(p * 500 + i))));
        }
    });
    (0..3).for_each(|_| q.push_atomic(None));
    let received: Vec<Vec<u64>> = cons.into_iter().map(|c| support::get(c).unwrap()).collect();
    check_deliveries(2, 500, &received);
}

/// `or_else` takes from the first queue that has something, in priority order, and a
/// transaction waiting on two empty queues wakes when either gets a value.
#[test]
fn or_else_across_two_queues() {
    let urgent = TQueue::new();
    let normal = TQueue::new();
    let pop_either = |tx: &mut ito::stm::Tx| {
        tx.or_else(
            |tx| Ok(("urgent", urgent.pop(tx)?)),
            |tx| Ok(("normal", normal.pop(tx)?)),
        )
    };
    normal.push_atomic(1);
    normal.push_atomic(2);
    urgent.push_atomic(10);
    assert_eq!(atomically(pop_either), ("urgent", 10));
    assert_eq!(atomically(pop_either), ("normal", 1));
    urgent.push_atomic(11);
    assert_eq!(atomically(pop_either), ("urgent", 11));
    assert_eq!(atomically(pop_either), ("normal", 2));

    // Both empty: sleeps on both, wakes for either.
    for round in 0..200 {
        let (u, n) = (urgent.clone(), normal.clone());
        let waiter = std::thread::spawn(move || {
            atomically(|tx| {
                tx.or_else(
                    |tx| Ok(("urgent", u.pop(tx)?)),
                    |tx| Ok(("normal", n.pop(tx)?)),
                )
            })
        });
        if round % 2 == 0 {
            urgent.push_atomic(round);
            assert_eq!(waiter.join().unwrap(), ("urgent", round));
        } else {
            normal.push_atomic(round);
            assert_eq!(waiter.join().unwrap(), ("normal", round));
        }
    }

    // Pushing to whichever bounded queue has room.
    let a = TQueue::bounded(1);
    let b = TQueue::bounded(1);
    let push_either = |v: u8| {
        atomically(|tx| {
            tx.or_else(
                |tx| a.push(tx, v).map(|()| 'a'),
                |tx| b.push(tx, v).map(|()| 'b'),
            )
        })
    };
    assert_eq!(push_either(1), 'a');
    assert_eq!(push_either(2), 'b');
    assert_eq!(b.pop_atomic(), 2);
    assert_eq!(push_either(3), 'b');
    assert_eq!((a.pop_atomic(), b.pop_atomic()), (1, 3));
}

/// Moving an element between queues is atomic: an observer never sees it in both or neither.
#[test]
fn moving_between_queues_is_atomic() {
    let a = TQueue::new();
    let b = TQueue::new();
    atomically(|tx| (0..50).try_for_each(|i| a.push(tx, i)));
    let broken = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (from, to) in [(&a, &b), (&b, &a)] {
            s.spawn(move || {
                for _ in 0..3000 {
                    atomically(|tx| {
                        let v = from.pop(tx)?;
                        to.push(tx, v)
                    });
                }
            });
        }
        s.spawn(|| {
            for _ in 0..2000 {
                let total = atomically(|tx| Ok(a.len(tx)? + b.len(tx)?));
                if total != 50 {
                    broken.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    });
    assert_eq!(broken.load(Ordering::Relaxed), 0);
    let mut all = atomically(|tx| {
        let mut v = a.drain(tx)?;
        v.extend(b.drain(tx)?);
        Ok(v)
    });
    all.sort_unstable();
    assert_eq!(all, (0..50).collect::<Vec<_>>());
}

#[test]
fn waiting_for_a_peek_and_for_an_empty_queue() {
    let q = TQueue::new();
    let q2 = q.clone();
    let peeker = std::thread::spawn(move || atomically(|tx| q2.peek(tx)));
    std::thread::sleep(Duration::from_millis(10));
    q.push_atomic("first");
    assert_eq!(peeker.join().unwrap(), "first");
    let q2 = q.clone();
    let drained = std::thread::spawn(move || atomically(|tx| check(q2.is_empty(tx)?)));
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(q.pop_atomic(), "first");
    drained.join().unwrap();
}

/// `TMVar<()>` as a lock around a non-atomic read-modify-write.
#[test]
fn tmvar_as_a_lock() {
    let lock = TMVar::new(());
    let counter = AtomicU64::new(0);
    let holders = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..2000 {
                    lock.take_atomic();
                    assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    // Racy without the lock: a separate load and store.
                    let v = counter.load(Ordering::Relaxed);
                    std::hint::spin_loop();
                    counter.store(v + 1, Ordering::Relaxed);
                    holders.fetch_sub(1, Ordering::SeqCst);
                    lock.put_atomic(());
                }
            });
        }
    });
    assert_eq!(counter.load(Ordering::Relaxed), 8000);
    assert!(!atomically(|tx| lock.is_empty(tx)));
}

/// Taking two locks in one transaction: all or nothing, never one of them.
#[test]
fn tmvar_taking_two_at_once() {
    let (x, y) = (TMVar::new(()), TMVar::new(()));
    atomically(|tx| x.take(tx));
    // y is free but x is not: the pair take must not take y alone.
    let got = atomically(|tx| {
        tx.or_else(
            |tx| {
                y.take(tx)?;
                x.take(tx)?;
                Ok(true)
            },
            |_| Ok(false),
        )
    });
    assert!(!got);
    assert!(!atomically(|tx| y.is_empty(tx)));
    let (x2, y2) = (x.clone(), y.clone());
    let t = std::thread::spawn(move || {
        atomically(|tx| {
            y2.take(tx)?;
            x2.take(tx)
        })
    });
    std::thread::sleep(Duration::from_millis(10));
    assert!(!atomically(|tx| y.is_empty(tx)), "took one of the two");
    x.put_atomic(());
    t.join().unwrap();
    assert!(atomically(|tx| Ok(x.is_empty(tx)? && y.is_empty(tx)?)));
}

#[test]
fn tmvar_operations() {
    let v = TMVar::new_empty();
    assert_eq!(atomically(|tx| v.try_take(tx)), None);
    assert_eq!(atomically(|tx| v.try_read(tx)), None);
    assert!(atomically(|tx| v.try_put(tx, 1)));
    assert!(!atomically(|tx| v.try_put(tx, 2)));
    assert_eq!(atomically(|tx| v.read(tx)), 1);
    assert_eq!(atomically(|tx| v.swap(tx, 3)), 1);
    assert_eq!(atomically(|tx| v.try_read(tx)), Some(3));
    assert_eq!(v.take_atomic(), 3);
    assert!(atomically(|tx| v.is_empty(tx)));
    // A read waits for a put and leaves the value.
    let v2 = v.clone();
    let reader = std::thread::spawn(move || atomically(|tx| v2.read(tx)));
    std::thread::sleep(Duration::from_millis(10));
    v.put_atomic(9);
    assert_eq!(reader.join().unwrap(), 9);
    assert_eq!(v.take_atomic(), 9);
}

/// A one-slot channel: order and values preserved, the producer waits for each take.
#[test]
fn tmvar_as_a_one_slot_channel() {
    const N: u64 = 5000;
    let slot = TMVar::new_empty();
    let s = slot.clone();
    let producer = std::thread::spawn(move || (0..N).for_each(|i| s.put_atomic(i)));
    for i in 0..N {
        assert_eq!(slot.take_atomic(), i);
    }
    producer.join().unwrap();
}

/// Ping-pong through two TMVars, thousands of rounds: each take waits for the other side's
/// put. A lost wake-up hangs (and the harness's timeout catches it).
#[test]
fn a_take_waits_for_a_put_without_lost_wake_ups() {
    const ROUNDS: u64 = 10_000;
    let ping = TMVar::new_empty();
    let pong = TMVar::new_empty();
    let (pi, po) = (ping.clone(), pong.clone());
    let echo = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            let v = pi.take_atomic();
            po.put_atomic(v + 1);
        }
    });
    for i in 0..ROUNDS {
        ping.put_atomic(i * 2);
        assert_eq!(pong.take_atomic(), i * 2 + 1);
    }
    echo.join().unwrap();
}

/// The same ping-pong between two async tasks, and between a task and a thread.
#[test]
fn async_take_waits_for_a_put() {
    const ROUNDS: u64 = 3000;
    let rt = ito::Runtime::builder().workers(2).build().unwrap();
    let ping = TMVar::new_empty();
    let pong = TMVar::new_empty();
    let (pi, po) = (ping.clone(), pong.clone());
    let echo = rt.spawn(async move {
        for _ in 0..ROUNDS {
            let v = atomically_async(|tx| pi.take(tx)).await;
            atomically_async(|tx| po.put(tx, v + 1)).await;
        }
    });
    let (pi, po) = (ping.clone(), pong.clone());
    let driver = rt.spawn(async move {
        let mut sum = 0;
        for i in 0..ROUNDS {
            atomically_async(|tx| pi.put(tx, i)).await;
            sum += atomically_async(|tx| po.take(tx)).await;
        }
        sum
    });
    assert_eq!(support::get(driver), Ok(ROUNDS * (ROUNDS + 1) / 2));
    assert_eq!(support::get(echo), Ok(()));
    // A thread taking from a task.
    let p = ping.clone();
    let feeder = rt.spawn(async move {
        for i in 0..ROUNDS {
            atomically_async(|tx| p.put(tx, i)).await;
        }
    });
    let sum: u64 = (0..ROUNDS).map(|_| ping.take_atomic()).sum();
    assert_eq!(sum, ROUNDS * (ROUNDS - 1) / 2);
    assert_eq!(support::get(feeder), Ok(()));
}

/// A retry that depends on both a TMVar and a TQueue: wakes for a change in either.
#[test]
fn waiting_on_a_tmvar_or_a_queue() {
    let stop = TMVar::new_empty();
    let jobs = TQueue::new();
    let (s, j) = (stop.clone(), jobs.clone());
    let worker = std::thread::spawn(move || {
        let mut done = 0;
        loop {
            let job = atomically(|tx| {
                tx.or_else(|tx| j.pop(tx).map(Some), |tx| s.read(tx).map(|()| None))
            });
            match job {
                Some(n) => done += n,
                None => return done,
            }
        }
    });
    for i in 1..=100 {
        jobs.push_atomic(i);
    }
    // Jobs take priority over the stop signal, so all of them run.
    stop.put_atomic(());
    assert_eq!(worker.join().unwrap(), 5050);
    assert!(atomically(|tx| jobs.is_empty(tx)));
}

/// Runs `first` in a transaction on another thread and, in the middle of its first attempt,
/// commits `second` on this one. Returns how many times `first`'s closure ran: 1 if the two
/// did not conflict, 2 if `first` had to run again.
fn attempts_when_interleaved(
    first: impl Fn(&mut ito::stm::Tx) -> ito::stm::StmResult<()> + Sync,
    second: impl FnOnce(),
) -> usize {
    use std::sync::mpsc::channel;
    let (started_tx, started_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let runs = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (first, runs) = (&first, &runs);
        s.spawn(move || {
            atomically(|tx| {
                first(tx)?;
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    started_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                }
                Ok(())
            })
        });
        started_rx.recv().unwrap();
        second();
        go_tx.send(()).unwrap();
    });
    runs.load(Ordering::SeqCst)
}

/// The conflict behaviour documented on `TQueue`: a push and a pop on a queue whose front is
/// not empty write different `TVar`s and both commit at their first attempt; two pushes (or
/// two pops) write the same one, and the later one runs again.
#[test]
fn push_and_pop_do_not_conflict_unless_the_queue_is_nearly_empty() {
    for q in [TQueue::new(), TQueue::bounded(10)] {
        atomically(|tx| (0..5).try_for_each(|i| q.push(tx, i)));
        assert_eq!(atomically(|tx| q.peek(tx)), 0); // moves 0..5 to the front list
        let pop = |tx: &mut ito::stm::Tx| q.pop(tx).map(drop);
        let push = |tx: &mut ito::stm::Tx| q.push(tx, 100);
        assert_eq!(attempts_when_interleaved(pop, || q.push_atomic(5)), 1);
        assert_eq!(
            attempts_when_interleaved(push, || {
                q.pop_atomic();
            }),
            1
        );
        // Same end: the first one runs again.
        assert_eq!(attempts_when_interleaved(push, || q.push_atomic(6)), 2);
        assert_eq!(
            attempts_when_interleaved(pop, || {
                q.pop_atomic();
            }),
            2
        );
        // An empty front: the pop takes the back list, so it conflicts with a push.
        atomically(|tx| q.drain(tx).map(drop));
        q.push_atomic(7);
        assert_eq!(attempts_when_interleaved(pop, || q.push_atomic(8)), 2);
        assert_eq!(atomically(|tx| q.drain(tx)), [8]); // the rerun popped 7
    }
}
