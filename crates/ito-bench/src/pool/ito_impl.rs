//! ito: `ito::spawn`, `ito::sync::{Pool, Semaphore, Latch}`, `ito::channel`.

use super::*;
use ito::sync::{Latch, Pool, Semaphore};

/// A run's count-down (see [`Countdown`]).
pub(super) enum Done {
    Latch(Latch),
    /// Permits added one per task; the caller takes all `.1` at once.
    Semaphore(Semaphore, usize),
}

impl Done {
    pub(super) fn new(kind: Countdown, n: usize) -> Arc<Done> {
        Arc::new(match kind {
            Countdown::Latch => Done::Latch(Latch::new(n)),
            Countdown::Semaphore => Done::Semaphore(Semaphore::new(0), n),
        })
    }
    pub(super) fn signal(&self) {
        match self {
            Done::Latch(l) => l.count_down(),
            Done::Semaphore(s, _) => s.add_permits(1),
        }
    }
    async fn wait(&self) {
        match self {
            Done::Latch(l) => l.wait().await,
            Done::Semaphore(s, n) => s.acquire_many(*n).await.expect("never closed").forget(),
        }
    }
    /// [`wait`](Self::wait) as plain blocking code.
    pub(super) fn wait_blocking(&self) {
        match self {
            Done::Latch(l) => l.wait_blocking().expect("the caller is never cancelled"),
            Done::Semaphore(s, n) => s.acquire_many_blocking(*n).expect("never closed").forget(),
        }
    }
}

pub(super) fn measure(config: Config) -> Outcome {
    // A task is what the document's is: a signal (`async { $sem->up }`), after a sleep
    // only when one is asked for.
    match config.sleep() {
        None => measure_with(config, |done: Arc<Done>| async move { done.signal() }),
        Some(d) => {
            let mut outcome = measure_with(config, move |done: Arc<Done>| async move {
                ito::sleep(d).await.expect("a sleep never fails");
                done.signal();
            });
            outcome.sleep_overshoot_us = Some(sleep_overshoot_us(config.workers, d));
            outcome
        }
    }
}

/// How much longer than `d` an `ito::sleep(d)` lasts (the median of [`SLEEP_SAMPLES`]
/// sleeps one after another, on a runtime of its own), in microseconds.
pub(super) fn sleep_overshoot_us(workers: usize, d: Duration) -> f64 {
    let rt = ito::Runtime::builder()
        .workers(workers)
        .build()
        .expect("starting the ito runtime");
    let slept = rt.block_on(async move {
        let mut slept = Vec::new();
        for _ in 0..SLEEP_SAMPLES {
            let start = Instant::now();
            ito::sleep(d).await.expect("a sleep never fails");
            slept.push(start.elapsed());
        }
        slept
    });
    overshoot_us(&slept, d)
}

fn measure_with<T, F>(config: Config, task: T) -> Outcome
where
    T: Fn(Arc<Done>) -> F + Copy + Send + Sync + 'static,
    F: StdFuture<Output = ()> + Send + 'static,
{
    let rt = ito::Runtime::builder()
        .workers(config.workers)
        .build()
        .expect("starting the ito runtime");
    let n = config.tasks;
    let work = async move {
        match config.mode {
            Mode::Spawn => {
                timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        drop(ito::spawn(task(done.clone())));
                    }
                    done.wait().await;
                })
                .await
            }
            Mode::Pool => {
                let pool = Pool::new(config.pool_size);
                timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        drop(pool.spawn(task(done.clone())));
                    }
                    done.wait().await;
                })
                .await
            }
            Mode::Bounded => {
                let limit = Arc::new(Semaphore::new(config.pool_size));
                timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        let permit = limit.acquire_owned().await.expect("never closed");
                        let body = task(done.clone());
                        drop(ito::spawn(async move {
                            body.await;
                            drop(permit);
                        }));
                    }
                    done.wait().await;
                })
                .await
            }
            Mode::ChannelPool => {
                let (jobs, queue) = ito::channel::bounded::<Job>(config.pool_size);
                let workers: Vec<_> = (0..config.pool_size)
                    .map(|_| {
                        let queue = queue.clone();
                        ito::spawn(async move {
                            while let Ok(job) = queue.recv().await {
                                job.await;
                            }
                        })
                    })
                    .collect();
                drop(queue);
                let outcome = timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        let job = task(done.clone());
                        if jobs.send(Box::pin(job)).await.is_err() {
                            unreachable!("the workers outlive the runs");
                        }
                    }
                    done.wait().await;
                })
                .await;
                drop(jobs);
                for w in workers {
                    w.await.expect("a channel-pool worker failed");
                }
                outcome
            }
        }
    };
    match config.caller {
        Caller::Main => rt.block_on(work),
        Caller::Task => rt.block_on(rt.spawn(work)).expect("the caller task failed"),
    }
}
