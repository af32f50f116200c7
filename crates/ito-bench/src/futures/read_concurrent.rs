//! `futures read-concurrent`: many readers wait for one future.

use super::*;

/// The writing end of each impl's future.
pub(super) enum Completer {
    Ito(ito::Promise<u64>),
    Shared(futures::channel::oneshot::Sender<u64>),
    Tokio(tokio::sync::oneshot::Sender<u64>),
}

impl Completer {
    pub(super) fn complete(self) {
        match self {
            Completer::Ito(p) => {
                p.try_success(VALUE);
            }
            Completer::Shared(tx) => {
                let _ = tx.send(VALUE);
            }
            Completer::Tokio(tx) => {
                let _ = tx.send(VALUE);
            }
        }
    }
}

/// A thread that waits until `started` reaches `readers`, sleeps `delay`, completes, and
/// returns the instant of the completion.
pub(super) fn completer_thread(
    completer: Completer,
    started: Arc<AtomicUsize>,
    readers: usize,
    delay: Duration,
) -> thread::JoinHandle<Instant> {
    thread::spawn(move || {
        while started.load(Ordering::Acquire) < readers {
            thread::yield_now();
        }
        if !delay.is_zero() {
            thread::sleep(delay);
        }
        let at = Instant::now();
        completer.complete();
        at
    })
}

pub(super) fn read_concurrent_once(
    pools: &Pools,
    imp: FutImpl,
    mode: Mode,
    readers: usize,
    delay: Duration,
) -> Timed {
    let latch = Latch::new(readers);
    let started = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut threads = Vec::new();
    let mut ito_tasks = Vec::new();
    let completer = match imp {
        FutImpl::Ito => {
            let p = ito::Promise::new();
            let f = p.future();
            let completer = completer_thread(Completer::Ito(p), started.clone(), readers, delay);
            for _ in 0..readers {
                let (f, latch, started) = (f.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => threads.push(thread::spawn(move || {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(f.wait() == Ok(VALUE));
                    })),
                    Mode::Pool => ito_tasks.push(pools.ito().spawn(async move {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(f.await == Ok(VALUE));
                    })),
                }
            }
            completer
        }
        FutImpl::Shared => {
            let (tx, rx) = futures::channel::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer =
                completer_thread(Completer::Shared(tx), started.clone(), readers, delay);
            for _ in 0..readers {
                let (s, latch, started) = (s.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => threads.push(thread::spawn(move || {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(futures::executor::block_on(s) == Ok(VALUE));
                    })),
                    Mode::Pool => pools.shared().spawn_ok(async move {
                        started.fetch_add(1, Ordering::AcqRel);
                        latch.count_down(s.await == Ok(VALUE));
                    }),
                }
            }
            completer
        }
        FutImpl::Tokio => {
            let (tx, rx) = tokio::sync::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer_thread(Completer::Tokio(tx), started.clone(), readers, delay);
            for _ in 0..readers {
                let (s, latch, started) = (s.clone(), latch.clone(), started.clone());
                match mode {
                    Mode::Threads => unreachable!("tokio runs in pool mode only"),
                    Mode::Pool => {
                        pools.tokio().spawn(async move {
                            started.fetch_add(1, Ordering::AcqRel);
                            latch.count_down(s.await == Ok(VALUE));
                        });
                    }
                }
            }
            completer
        }
        FutImpl::Mutex | FutImpl::ItoInline => {
            unreachable!("checked: mutex and ito-inline fit one benchmark each")
        }
    };
    let (done_at, ok) = latch.wait();
    let completed_at = completer.join().expect("the completer panicked");
    for t in threads {
        t.join().expect("a reader panicked");
    }
    drop(ito_tasks);
    Timed {
        seconds: done_at.duration_since(start).as_secs_f64(),
        after_complete: Some(
            done_at
                .saturating_duration_since(completed_at)
                .as_secs_f64(),
        ),
        ok,
    }
}

pub(super) fn read_concurrent(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    readers: &[usize],
    modes: &[Mode],
    delay: Duration,
) {
    let tokio_skipped = imps.contains(&FutImpl::Tokio) && modes.contains(&Mode::Threads);
    if tokio_skipped {
        eprintln!("note: tokio runs in pool mode only (a tokio oneshot has one reader)");
    }
    for &r in readers {
        for &mode in modes {
            let name = match mode {
                Mode::Threads => "threads",
                Mode::Pool => "pool",
            };
            let imps: Vec<FutImpl> = imps
                .iter()
                .copied()
                .filter(|&i| !(i == FutImpl::Tokio && mode == Mode::Threads))
                .collect();
            let template = |imp| {
                let mut rec = template("read-concurrent", imp, name.to_owned(), r);
                rec.readers = Some(r);
                rec.mode = Some(name);
                rec.delay_us = Some(delay.as_micros() as u64);
                rec.workers = (mode == Mode::Pool).then_some(pools.workers);
                rec
            };
            // Warm-up: one run per impl (threads, pool wake-ups, allocator).
            for &imp in &imps {
                ctx.guarded(&template(imp), || {
                    read_concurrent_once(pools, imp, mode, r, delay)
                });
            }
            for rep in 0..ctx.repeat {
                for &imp in &imps {
                    let mut rec = template(imp);
                    rec.rep = Some(rep);
                    let (timed, cpu) =
                        ctx.timed(&rec, || read_concurrent_once(pools, imp, mode, r, delay));
                    fill_timed(&mut rec, &timed, r);
                    rec.cpu = Some(cpu);
                    ctx.emit(rec);
                }
            }
        }
    }
}

pub(super) fn fill_timed(rec: &mut FutRecord, timed: &Timed, items: usize) {
    rec.seconds = Some(timed.seconds);
    rec.ns_per_item = Some(timed.seconds / items as f64 * 1e9);
    rec.after_complete_s = timed.after_complete;
    rec.ok = timed.ok;
    if !timed.ok {
        rec.error = Some(format!("a reader did not see {VALUE}"));
    }
}
