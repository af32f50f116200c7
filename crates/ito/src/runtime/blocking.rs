//! The blocking pool: threads for closures that block for long, kept apart from the workers.
//!
//! Threads are started on demand up to a bound, and exit after [`KEEP_ALIVE`] idle. Jobs
//! beyond the bound queue in FIFO order.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::Shared;
use crate::Failure;
use crate::future::Task;
use crate::future::promise::UniqueWriter;
use crate::trace::Kind;

/// How long an idle blocking thread lingers before exiting.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

pub(crate) struct BlockingPool {
    state: Mutex<PoolState>,
    cv: Condvar,
    max: usize,
}

struct PoolState {
    queue: VecDeque<Job>,
    idle: usize,
    threads: usize,
    shutdown: bool,
}

impl BlockingPool {
    pub(super) fn new(max: usize) -> Self {
        BlockingPool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                idle: 0,
                threads: 0,
                shutdown: false,
            }),
            cv: Condvar::new(),
            max,
        }
    }

    /// Runs `f` on a blocking thread of `shared`'s pool.
    pub(crate) fn spawn<F, T>(&self, shared: &'static Shared, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (p, fut) = UniqueWriter::new();
        let job: Job = Box::new(move || {
            let r = catch_unwind(AssertUnwindSafe(f)).map_err(Failure::from_panic);
            p.try_complete(r);
        });
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.shutdown {
            drop(st);
            drop(job); // breaks the promise
            return fut;
        }
        st.queue.push_back(job);
        // Idle threads already notified for earlier jobs are still counted idle until they
        // wake, so compare with the queue: every queued job needs its own thread.
        if st.idle >= st.queue.len() {
            self.cv.notify_one();
        } else if st.threads < self.max {
            st.threads += 1;
            drop(st);
            shared.counters.thread_started();
            // The thread owns the block until it exits (`owners.rs`); the caller is an owner.
            shared.acquire();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-blocking", shared.threads.name()))
                .spawn(move || {
                    shared.blocking.thread_main(shared);
                    shared.release();
                });
            if spawned.is_err() {
                shared.counters.thread_stopped();
                self.state.lock().unwrap_or_else(|e| e.into_inner()).threads -= 1;
                shared.release();
            }
        }
        fut
    }

    fn thread_main(&self, shared: &'static Shared) {
        // Jobs spawn, join and install on the runtime they were given to.
        let _enter = super::worker::enter(shared);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(job) = st.queue.pop_front() {
                drop(st);
                match shared.trace {
                    None => job(),
                    Some(r) => {
                        r.record(Kind::BlockingStart);
                        job();
                        r.record(Kind::BlockingEnd);
                    }
                }
                st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            if st.shutdown {
                break;
            }
            st.idle += 1;
            let (g, res) = self
                .cv
                .wait_timeout(st, KEEP_ALIVE)
                .unwrap_or_else(|e| e.into_inner());
            st = g;
            st.idle -= 1;
            if res.timed_out() && st.queue.is_empty() {
                break;
            }
        }
        st.threads -= 1;
        drop(st);
        shared.counters.thread_stopped();
    }

    pub(super) fn shutdown(&self) {
        let jobs = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.shutdown = true;
            self.cv.notify_all();
            std::mem::take(&mut st.queue)
        };
        // Outside the lock: dropping the jobs breaks their promises, which runs callbacks.
        drop(jobs);
    }
}
