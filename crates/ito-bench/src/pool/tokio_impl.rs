//! tokio: `tokio::spawn`, `tokio::sync::{Semaphore, Notify, mpsc, Mutex}`.

use super::*;
use tokio::sync::{Mutex, Notify, Semaphore, mpsc};

/// A run's count-down (see [`Countdown`]): tokio has no latch; its equivalent is an atomic
/// count and a `Notify` the last task signals.
enum Done {
    Latch(AtomicUsize, Notify),
    /// Permits added one per task; the caller takes all `.1` at once.
    Semaphore(Semaphore, u32),
}

impl Done {
    fn new(kind: Countdown, n: usize) -> Arc<Done> {
        Arc::new(match kind {
            Countdown::Latch => Done::Latch(AtomicUsize::new(n), Notify::new()),
            Countdown::Semaphore => Done::Semaphore(
                Semaphore::new(0),
                u32::try_from(n).expect("tokio takes at most u32::MAX permits at once"),
            ),
        })
    }
    fn signal(&self) {
        match self {
            Done::Latch(left, notify) => {
                if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    notify.notify_one();
                }
            }
            Done::Semaphore(s, _) => s.add_permits(1),
        }
    }
    async fn wait(&self) {
        match self {
            Done::Latch(left, notify) => {
                if left.load(Ordering::Acquire) > 0 {
                    notify.notified().await;
                }
            }
            Done::Semaphore(s, n) => s.acquire_many(*n).await.expect("never closed").forget(),
        }
    }
}

pub(super) fn measure(config: Config) -> Outcome {
    match config.sleep() {
        None => measure_with(config, |done: Arc<Done>| async move { done.signal() }),
        Some(d) => {
            let mut outcome = measure_with(config, move |done: Arc<Done>| async move {
                tokio::time::sleep(d).await;
                done.signal();
            });
            outcome.sleep_overshoot_us = Some(sleep_overshoot_us(config.workers, d));
            outcome
        }
    }
}

/// How much longer than `d` a `tokio::time::sleep(d)` lasts (the median of
/// [`SLEEP_SAMPLES`] sleeps one after another, on a runtime of its own), in microseconds.
fn sleep_overshoot_us(workers: usize, d: Duration) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("starting the tokio runtime");
    let slept = rt.block_on(async move {
        let mut slept = Vec::new();
        for _ in 0..SLEEP_SAMPLES {
            let start = Instant::now();
            tokio::time::sleep(d).await;
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_time()
        .build()
        .expect("starting the tokio runtime");
    let n = config.tasks;
    let work = async move {
        match config.mode {
            Mode::Spawn => {
                timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        tokio::spawn(task(done.clone()));
                    }
                    done.wait().await;
                })
                .await
            }
            Mode::Pool => {
                let limit = Arc::new(Semaphore::new(config.pool_size));
                timed(config, || async {
                    let done = Done::new(config.countdown, n);
                    for _ in 0..n {
                        let (limit, body) = (limit.clone(), task(done.clone()));
                        tokio::spawn(async move {
                            let _permit = limit.acquire_owned().await.expect("never closed");
                            body.await;
                        });
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
                        let permit = limit.clone().acquire_owned().await.expect("never closed");
                        let body = task(done.clone());
                        tokio::spawn(async move {
                            body.await;
                            drop(permit);
                        });
                    }
                    done.wait().await;
                })
                .await
            }
            Mode::ChannelPool => {
                let (jobs, queue) = mpsc::channel::<Job>(config.pool_size);
                let queue = Arc::new(Mutex::new(queue));
                let workers: Vec<_> = (0..config.pool_size)
                    .map(|_| {
                        let queue = queue.clone();
                        tokio::spawn(async move {
                            loop {
                                let job = queue.lock().await.recv().await;
                                match job {
                                    Some(job) => job.await,
                                    None => break,
                                }
                            }
                        })
                    })
                    .collect();
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
