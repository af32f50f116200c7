//! `futures callbacks`: N callbacks on one future.

use super::*;

pub(super) fn callbacks_once(pools: &Pools, imp: FutImpl, n: usize, delay: Duration) -> Timed {
    let latch = Latch::new(n);
    // Completed before the clock starts (delay 0), or by a thread after `delay`.
    let completer = |c: Completer| {
        if delay.is_zero() {
            c.complete();
            None
        } else {
            Some(thread::spawn(move || {
                thread::sleep(delay);
                let at = Instant::now();
                c.complete();
                at
            }))
        }
    };
    let (start, completer) = match imp {
        // A callback is a task on the pool that awaits the future, as for the peers.
        FutImpl::Ito => {
            let p = ito::Promise::new();
            let f = p.future();
            let completer = completer(Completer::Ito(p));
            let start = Instant::now();
            for _ in 0..n {
                let (f, latch) = (f.clone(), latch.clone());
                drop(pools.ito().spawn(async move {
                    latch.count_down(f.await == Ok(VALUE));
                }));
            }
            (start, completer)
        }
        FutImpl::ItoInline => {
            let p = ito::Promise::new();
            let f = p.future();
            let completer = completer(Completer::Ito(p));
            let start = Instant::now();
            for _ in 0..n {
                let latch = latch.clone();
                f.on_complete(move |r| latch.count_down(r == Ok(VALUE)));
            }
            (start, completer)
        }
        FutImpl::Shared => {
            let (tx, rx) = futures::channel::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer(Completer::Shared(tx));
            let start = Instant::now();
            for _ in 0..n {
                let (s, latch) = (s.clone(), latch.clone());
                pools.shared().spawn_ok(async move {
                    latch.count_down(s.await == Ok(VALUE));
                });
            }
            (start, completer)
        }
        FutImpl::Tokio => {
            let (tx, rx) = tokio::sync::oneshot::channel::<u64>();
            let s = rx.shared();
            let completer = completer(Completer::Tokio(tx));
            let start = Instant::now();
            for _ in 0..n {
                let (s, latch) = (s.clone(), latch.clone());
                pools.tokio().spawn(async move {
                    latch.count_down(s.await == Ok(VALUE));
                });
            }
            (start, completer)
        }
        FutImpl::Mutex => unreachable!("checked: mutex is the peer of philosophers only"),
    };
    let (done_at, ok) = latch.wait();
    let completed_at = completer.map(|c| c.join().expect("the completer panicked"));
    Timed {
        seconds: done_at.duration_since(start).as_secs_f64(),
        after_complete: completed_at.map(|at| done_at.saturating_duration_since(at).as_secs_f64()),
        ok,
    }
}

pub(super) fn callbacks(
    ctx: &mut Ctx,
    pools: &Pools,
    imps: &[FutImpl],
    counts: &[usize],
    delays: &[Duration],
) {
    for &n in counts {
        for &delay in delays {
            let name = format!("{}us", delay.as_micros());
            let template = |imp| {
                let mut rec = template("callbacks", imp, name.clone(), n);
                rec.count = Some(n);
                rec.delay_us = Some(delay.as_micros() as u64);
                rec.workers = (imp != FutImpl::Ito).then_some(pools.workers);
                rec
            };
            for &imp in imps {
                ctx.guarded(&template(imp), || callbacks_once(pools, imp, n, delay));
            }
            for rep in 0..ctx.repeat {
                for &imp in imps {
                    let mut rec = template(imp);
                    rec.rep = Some(rep);
                    let (timed, cpu) = ctx.timed(&rec, || callbacks_once(pools, imp, n, delay));
                    fill_timed(&mut rec, &timed, n);
                    rec.cpu = Some(cpu);
                    ctx.emit(rec);
                }
            }
        }
    }
}
