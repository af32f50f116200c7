//! Task memory under churn: tasks, detached process tasks and process blocks are allocated
//! by short-lived threads and freed by others (workers, a collector thread, the runtime's
//! shutdown), with bodies of every alignment the slab serves and some it does not.

use std::sync::mpsc;

use ito::process::{self, Exit, Mailbox};
use ito::{Future, Runtime, Task};

mod support;
use support::YieldOnce;

/// Align-16 body state (the strictest alignment the task slab serves).
#[derive(Clone, Copy)]
#[repr(align(16))]
struct A16([u64; 2]);

/// Align-64 body state (too aligned for the slab: the global allocator).
#[derive(Clone, Copy)]
#[repr(align(64))]
struct A64([u64; 8]);

/// Address of `x`, for alignment checks inside a task's body (which lives in the task's
/// memory).
fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

/// Spawns tasks of several sizes and alignments on `rt`; every one checks that its state is
/// aligned and returns a value derived from `i`.
fn spawn_mix(rt: &Runtime, i: u64) -> Vec<Task<u64>> {
    let a16 = A16([i, i + 1]);
    let a64 = A64([i; 8]);
    let big = [i; 80]; // 640 bytes: larger than the largest class
    vec![
        rt.spawn_fn(move || i),
        rt.spawn(async move {
            let x = a16;
            YieldOnce(false).await;
            assert_eq!(addr(&x) % 16, 0, "align-16 state misaligned");
            x.0[0] + x.0[1]
        }),
        rt.spawn(async move {
            let x = a64;
            YieldOnce(false).await;
            assert_eq!(addr(&x) % 64, 0, "align-64 state misaligned");
            x.0.iter().sum()
        }),
        rt.spawn(async move {
            let x = big;
            YieldOnce(false).await;
            x.iter().sum()
        }),
        // A 24-byte class neighbour (8-aligned), carved from the same chunks.
        rt.spawn_fn(move || [i, 1, 2].iter().sum()),
    ]
}

fn expected(i: u64) -> u64 {
    i + (2 * i + 1) + 8 * i + 80 * i + (i + 3)
}

/// Many threads allocate tasks and exit while their tasks live on; other threads wait for
/// and drop the futures; the blocks come back through magazines and the depot. Every value
/// is checked, and every body checks its alignment.
#[test]
fn tasks_outlive_the_threads_that_allocated_them() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let rt = &rt;
    for _round in 0..4 {
        let (tx, rx) = mpsc::channel::<(u64, Vec<Task<u64>>)>();
        let collector = std::thread::spawn(move || {
            let mut n = 0;
            for (i, fs) in rx {
                let sum: u64 = fs.into_iter().map(|f| f.wait().unwrap()).sum();
                assert_eq!(sum, expected(i));
                n += 1;
            }
            n
        });
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let tx = tx.clone();
                s.spawn(move || {
                    for i in 0..300 {
                        let i = t * 1000 + i;
                        tx.send((i, spawn_mix(rt, i))).unwrap();
                    }
                });
            }
        });
        drop(tx);
        assert_eq!(collector.join().unwrap(), 4 * 300);
    }
}

/// Processes (detached tasks and slab blocks) spawned by threads that exit at once; handles
/// move to other threads; some processes are killed, some end on a message.
#[test]
fn processes_outlive_the_threads_that_spawned_them() {
    for _round in 0..4 {
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let tx = tx.clone();
                s.spawn(move || {
                    for i in 0..200 {
                        let p = process::spawn(move |mut mb: Mailbox<A16>| async move {
                            let m = mb.recv().await;
                            assert_eq!(addr(&m) % 16, 0);
                            if m.0[0] == m.0[1] {
                                Ok(())
                            } else {
                                Err(Exit::reason("mismatch"))
                            }
                        });
                        tx.send((t * 1000 + i, p.erase())).unwrap();
                    }
                });
            }
        });
        drop(tx);
        let mut ends = Vec::new();
        for (i, any) in rx {
            if i % 3 == 0 {
                any.kill();
                ends.push((None, any.on_exit()));
            } else {
                let p = any.downcast::<A16>().unwrap();
                p.send(A16([i, i])).unwrap();
                ends.push((Some(()), p.on_exit()));
            }
        }
        for (ok, end) in ends {
            let exit = end.wait().unwrap();
            match ok {
                Some(()) => assert_eq!(exit, Exit::Normal),
                None => assert_eq!(exit, Exit::Killed),
            }
        }
    }
}

/// Tasks still pending when their runtime is dropped are cancelled and freed when woken
/// (after the shutdown, on the waking thread), long after the threads that allocated them
/// have exited.
#[test]
fn runtime_drop_frees_tasks_of_exited_threads() {
    for _round in 0..3 {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let gate = ito::Promise::<()>::new();
        let pending: Vec<Task<u64>> = std::thread::scope(|s| {
            (0..3)
                .map(|t| {
                    let rt = &rt;
                    let g = gate.future();
                    s.spawn(move || {
                        (0..100u64)
                            .map(|i| {
                                let g = g.clone();
                                let x = A16([i, t]);
                                rt.spawn(async move {
                                    let _ = g.await;
                                    x.0[0]
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        drop(rt);
        // Their wake-up after the shutdown cancels them.
        drop(gate);
        for f in pending {
            assert_eq!(f.wait(), Err(ito::Failure::Cancelled));
        }
    }
}

/// Frees and allocations from a thread's last moments: thread-local destructors that run
/// after the task slab's own cache has been handed back (registered before it, so destroyed
/// after it) drop a task's future and a process handle, and spawn a task.
#[test]
fn thread_local_destructors_free_and_allocate_tasks() {
    /// Holds a future, a pid, and a sender for what it spawns at thread exit.
    struct Late {
        fut: Option<Future<u64>>,
        pid: Option<process::Pid<u64>>,
        out: Option<mpsc::Sender<Future<u64>>>,
    }
    impl Drop for Late {
        fn drop(&mut self) {
            drop(self.fut.take());
            drop(self.pid.take());
            if let Some(out) = self.out.take() {
                let x = A16([7, 8]);
                out.send(ito::spawn(async move { x.0[0] * x.0[1] }).shared())
                    .unwrap();
            }
        }
    }
    thread_local! {
        static LATE: std::cell::RefCell<Late> =
            const { std::cell::RefCell::new(Late { fut: None, pid: None, out: None }) };
    }
    let (tx, rx) = mpsc::channel();
    let (ptx, prx) = mpsc::channel();
    for i in 0..50u64 {
        let tx = tx.clone();
        let ptx = ptx.clone();
        std::thread::spawn(move || {
            // Registered first, so destroyed after anything registered later.
            LATE.with(|l| l.borrow_mut().out = Some(tx));
            let f = ito::spawn(async move { i });
            let p = process::spawn(|mut mb: Mailbox<u64>| async move {
                let _ = mb.recv().await;
            });
            ptx.send(p.clone()).unwrap();
            LATE.with(|l| {
                let mut l = l.borrow_mut();
                l.fut = Some(f.shared());
                l.pid = Some(p);
            });
        })
        .join()
        .unwrap();
    }
    drop((tx, ptx));
    for p in prx {
        p.send(1).unwrap();
        assert_eq!(p.on_exit().wait(), Ok(Exit::Normal));
    }
    let spawned: Vec<_> = rx.iter().collect();
    assert_eq!(spawned.len(), 50);
    for f in spawned {
        assert_eq!(f.wait(), Ok(56));
    }
}
