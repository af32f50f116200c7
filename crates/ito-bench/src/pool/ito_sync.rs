//! ito in `--style sync`: the experiment as plain blocking code (`spawn_fn` closures,
//! `wait()` and the `_blocking` calls), the caller included.

use super::ito_impl::{Done, sleep_overshoot_us};
use super::*;
use ito::sync::{Pool, Semaphore};

/// A job of `channel-pool` in this style: one of the document's closures.
type SyncJob = Box<dyn FnOnce() + Send>;

/// A task of the document as plain code: the sleep, if one is asked for, then the signal.
fn task(done: &Done, sleep: Option<Duration>) {
    if let Some(d) = sleep {
        ito::sleep(d).wait().expect("a sleep never fails");
    }
    done.signal();
}

pub(super) fn measure(config: Config) -> Outcome {
    let mut outcome = {
        let rt = ito::Runtime::builder()
            .workers(config.workers)
            .build()
            .expect("starting the ito runtime");
        match config.caller {
            Caller::Task => rt
                .spawn_fn(move || caller(config))
                .wait()
                .expect("the caller task failed"),
            // `Runtime::block_on` is how the main thread enters the runtime, so that the
            // caller's spawns go to `rt`; its blocking calls then park this thread.
            Caller::Main => rt.block_on(async move { caller(config) }),
        }
    };
    if let Some(d) = config.sleep() {
        outcome.sleep_overshoot_us = Some(sleep_overshoot_us(config.workers, d));
    }
    outcome
}

/// The caller of every run: spawns the tasks in `config.mode`'s way and waits for their
/// signals, blocking where the async style awaits.
fn caller(config: Config) -> Outcome {
    let (n, sleep) = (config.tasks, config.sleep());
    match config.mode {
        Mode::Spawn => timed_blocking(config, || {
            let done = Done::new(config.countdown, n);
            for _ in 0..n {
                let done = done.clone();
                drop(ito::spawn_fn(move || task(&done, sleep)));
            }
            done.wait_blocking();
        }),
        Mode::Pool => {
            let pool = Pool::new(config.pool_size);
            timed_blocking(config, || {
                let done = Done::new(config.countdown, n);
                for _ in 0..n {
                    let done = done.clone();
                    drop(pool.spawn_fn(move || task(&done, sleep)));
                }
                done.wait_blocking();
            })
        }
        Mode::Bounded => {
            let limit = Arc::new(Semaphore::new(config.pool_size));
            timed_blocking(config, || {
                let done = Done::new(config.countdown, n);
                for _ in 0..n {
                    // The document's `$limit->down`; the task's `add_permits` is its
                    // `$limit->up`.
                    limit.acquire_blocking().expect("never closed").forget();
                    let (done, limit) = (done.clone(), limit.clone());
                    drop(ito::spawn_fn(move || {
                        task(&done, sleep);
                        limit.add_permits(1);
                    }));
                }
                done.wait_blocking();
            })
        }
        Mode::ChannelPool => {
            let (jobs, queue) = ito::channel::bounded::<SyncJob>(config.pool_size);
            let workers: Vec<_> = (0..config.pool_size)
                .map(|_| {
                    let queue = queue.clone();
                    ito::spawn_fn(move || {
                        while let Ok(job) = queue.recv_blocking() {
                            job();
                        }
                    })
                })
                .collect();
            drop(queue);
            let outcome = timed_blocking(config, || {
                let done = Done::new(config.countdown, n);
                for _ in 0..n {
                    let done = done.clone();
                    let job: SyncJob = Box::new(move || task(&done, sleep));
                    if jobs.send_blocking(job).is_err() {
                        unreachable!("the workers outlive the runs");
                    }
                }
                done.wait_blocking();
            });
            drop(jobs);
            for w in workers {
                w.wait().expect("a channel-pool worker failed");
            }
            outcome
        }
    }
}
