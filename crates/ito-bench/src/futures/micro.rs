//! Micro benchmarks (`or-alt`, `read-seq`): calibrated batches, and `read-seq` itself.

use super::*;

/// Runs `op` `batch` times: the mean seconds per operation, and whether every result was
/// right.
pub(super) fn timed_batch(batch: u64, op: &mut dyn FnMut() -> bool) -> (f64, bool) {
    let mut ok = true;
    let start = Instant::now();
    for _ in 0..batch {
        ok &= op();
    }
    (start.elapsed().as_secs_f64() / batch as f64, ok)
}

/// The batch size that makes a timed batch last at least [`SAMPLE_TARGET`] (also the warm-up).
pub(super) fn calibrate(op: &mut dyn FnMut() -> bool) -> u64 {
    let mut batch = 1;
    loop {
        let (per_op, _) = timed_batch(batch, op);
        if per_op * batch as f64 >= SAMPLE_TARGET.as_secs_f64() || batch >= MAX_BATCH {
            return batch;
        }
        batch *= 2;
    }
}

/// Calibrates each impl's operation, then runs the interleaved repetitions, emitting one
/// record per timed batch. `items` divides `seconds` into `ns_per_item`.
pub(super) fn micro(
    ctx: &mut Ctx,
    templates: Vec<FutRecord>,
    mut ops: Vec<Box<dyn FnMut() -> bool + '_>>,
    items: usize,
) {
    let batches: Vec<u64> = ops
        .iter_mut()
        .zip(&templates)
        .map(|(op, t)| ctx.guarded(t, || calibrate(&mut **op)))
        .collect();
    for rep in 0..ctx.repeat {
        for ((op, t), &batch) in ops.iter_mut().zip(&templates).zip(&batches) {
            let mut rec = t.clone();
            rec.rep = Some(rep);
            rec.batch = Some(batch);
            let ((seconds, ok), cpu) = ctx.timed(&rec, || timed_batch(batch, &mut **op));
            rec.seconds = Some(seconds);
            rec.cpu = Some(cpu.per(batch as f64));
            rec.ns_per_item = Some(seconds / items as f64 * 1e9);
            rec.ok = ok;
            if !ok {
                rec.error = Some(format!("a result was not {VALUE}"));
            }
            ctx.emit(rec);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// read-seq

pub(super) fn read_seq(ctx: &mut Ctx, imps: &[FutImpl], reads: &[usize]) {
    // One completed future per impl, read by every operation.
    let ito_future = {
        let p = ito::Promise::new();
        let f = p.future();
        p.try_success(VALUE);
        f
    };
    let shared_future = {
        let (tx, rx) = futures::channel::oneshot::channel::<u64>();
        let _ = tx.send(VALUE);
        let s = rx.shared();
        // The first poll moves the value from the channel into the Shared.
        assert_eq!(s.clone().now_or_never(), Some(Ok(VALUE)));
        s
    };
    for &n in reads {
        let mut templates = Vec::new();
        let mut ops: Vec<Box<dyn FnMut() -> bool + '_>> = Vec::new();
        for &imp in imps {
            let mut t = template("read-seq", imp, String::new(), n);
            t.reads = Some(n);
            templates.push(t);
            match imp {
                FutImpl::Ito => {
                    let f = &ito_future;
                    ops.push(Box::new(move || {
                        let mut sum = 0u64;
                        for _ in 0..n {
                            sum += black_box(f).wait().unwrap_or(0);
                        }
                        sum == VALUE * n as u64
                    }));
                }
                FutImpl::Shared => {
                    let s = &shared_future;
                    ops.push(Box::new(move || {
                        let mut sum = 0u64;
                        for _ in 0..n {
                            // `peek`: the cheapest read of a completed Shared (no clone).
                            sum += match black_box(s).peek() {
                                Some(Ok(v)) => *v,
                                _ => 0,
                            };
                        }
                        sum == VALUE * n as u64
                    }));
                }
                FutImpl::Tokio => unreachable!("checked: tokio does not fit read-seq"),
                FutImpl::Mutex | FutImpl::ItoInline => {
                    unreachable!("checked: mutex and ito-inline fit one benchmark each")
                }
            }
        }
        micro(ctx, templates, ops, n);
    }
}
