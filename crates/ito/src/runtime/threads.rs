//! The runtime's threads: starting them on slots, compensating for workers blocked in a wait,
//! and retiring compensation threads that are no longer needed.
//!
//! Each thread (permanent worker or compensation thread) owns one slot for life. A worker that
//! blocks in a wait leaves the active count ([`WorkerCtx::enter_blocking`]); if that leaves the
//! runtime short of workers, an idle worker is woken or a compensation thread is brought in,
//! up to `Builder::max_compensation`. Past that bound a thread is started only when every
//! thread is blocked and work is queued: the alternative is a deadlock (`docs/scheduler.md`).
//! A compensation thread retires once the runtime has more active threads than workers again,
//! and exits after `Builder::thread_keep_alive` unused; its slot goes to the free list.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_deque::Worker;

use super::Shared;
use super::park::Parker;
use super::worker::{self, Slot, WorkerCtx};
use crate::task::TaskRef;
use crate::trace::{Kind, Why};

/// The runtime's threads and their slots.
pub(super) struct Threads {
    slots: Box<[OnceLock<Slot>]>,
    /// Slots in use (initialised), monotonic.
    num_slots: AtomicUsize,
    /// Compensation threads allowed beyond the workers in normal operation.
    max_comp: usize,
    /// Compensation slots whose threads are parked, ready to be reactivated.
    spares: Mutex<Vec<usize>>,
    /// Compensation slots whose threads exited, ready for new threads.
    free_slots: Mutex<Vec<FreeSlot>>,
    /// Set while an outside push starts a thread for a runtime whose threads are all blocked.
    emergency: AtomicBool,
    /// Set once the runtime has reported that every thread is blocked and no thread could be
    /// started for queued work.
    reported_stall: AtomicBool,
    stack_size: usize,
    /// How long a retired compensation thread stays parked before it exits.
    keep_alive: Duration,
    name: String,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

/// A compensation slot whose thread exited: its deque and parker, ready for the slot's next
/// thread, so slots are never used up.
struct FreeSlot {
    index: usize,
    local: Worker<TaskRef>,
    parker: Parker,
}

impl Threads {
    pub(super) fn new(
        capacity: usize,
        max_comp: usize,
        stack_size: usize,
        keep_alive: Duration,
        name: String,
    ) -> Threads {
        Threads {
            slots: (0..capacity).map(|_| OnceLock::new()).collect(),
            num_slots: AtomicUsize::new(0),
            max_comp,
            spares: Mutex::new(Vec::new()),
            free_slots: Mutex::new(Vec::new()),
            emergency: AtomicBool::new(false),
            reported_stall: AtomicBool::new(false),
            stack_size,
            keep_alive,
            name,
            handles: Mutex::new(Vec::new()),
        }
    }

    /// The slots in use.
    #[inline]
    pub(super) fn slots(&self) -> impl Iterator<Item = &Slot> {
        let n = self.num_slots.load(Ordering::Acquire);
        self.slots[..n].iter().filter_map(OnceLock::get)
    }

    /// Slot `i`, if it is in use.
    #[inline]
    pub(super) fn slot(&self, i: usize) -> Option<&Slot> {
        self.slots.get(i).and_then(OnceLock::get)
    }

    /// The number of slots in use.
    #[inline]
    pub(super) fn num_slots(&self) -> usize {
        self.num_slots.load(Ordering::Acquire)
    }

    /// The name prefix of the runtime's threads.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// How long a compensation thread may stay unused before it exits.
    pub(super) fn keep_alive(&self) -> Duration {
        self.keep_alive
    }

    /// Hands a compensation slot's deque and parker to the slot's next thread.
    fn free_slot(&self, index: usize, local: Worker<TaskRef>, parker: Parker) {
        self.free_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(FreeSlot {
                index,
                local,
                parker,
            });
    }

    /// Orders after the caller everything that compensation threads which exited after
    /// idling wrote to their slots (their counters: `owners.rs` folds them). Such a thread
    /// is not always joined: `start_thread` drops the handles of finished threads. Its last
    /// write to its slot precedes its `free_slot`, which takes this lock.
    pub(super) fn sync_with_exited(&self) {
        drop(self.free_slots.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Whether every thread started has finished, but the caller's own (shutdown).
    pub(super) fn all_finished_but(&self, me: std::thread::ThreadId) -> bool {
        self.handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .all(|h| h.is_finished() || h.thread().id() == me)
    }

    /// Joins every thread started, but the caller's own (shutdown).
    pub(super) fn join_all_but(&self, me: std::thread::ThreadId) {
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}

/// Starts a thread, on a free compensation slot if there is one, else on a new slot. The
/// caller has already counted it as active.
pub(super) fn start_thread(shared: &'static Shared, compensator: bool) -> io::Result<usize> {
    let threads = &shared.threads;
    let mut handles = threads.handles.lock().unwrap_or_else(|e| e.into_inner());
    // After shutdown, only threads that finish join jobs (which cannot be cancelled).
    if shared.is_shutdown() && !(compensator && shared.has_join_work()) {
        return Err(io::Error::other("ito: the runtime is shutting down"));
    }
    handles.retain(|h| !h.is_finished());
    let reused = if compensator {
        threads
            .free_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
    } else {
        None
    };
    let (index, local, parker) = match reused {
        Some(FreeSlot {
            index,
            local,
            parker,
        }) => {
            let slot = threads.slot(index).expect("free slots are initialised");
            slot.retired.store(false, Ordering::Release);
            (index, local, parker)
        }
        None => {
            let index = threads.num_slots.load(Ordering::Relaxed);
            if index >= threads.slots.len() {
                return Err(io::Error::other("ito: out of worker slots"));
            }
            let local = Worker::new_lifo();
            let parker = shared.sleep.new_parker(index);
            if threads.slots[index].set(Slot::new(&local)).is_err() {
                unreachable!("slots are initialised in order under the handles lock");
            }
            threads.num_slots.store(index + 1, Ordering::Release);
            (index, local, parker)
        }
    };
    let name = if compensator {
        format!("{}-comp-{index}", threads.name)
    } else {
        format!("{}-worker-{index}", threads.name)
    };
    let stack_size = threads.stack_size;
    shared.counters.thread_started();
    // If the OS refuses the thread, the deque and parker come back to the free list.
    let back = Arc::new(Mutex::new(None::<(Worker<TaskRef>, Parker)>));
    let given = back.clone();
    *given.lock().unwrap_or_else(|e| e.into_inner()) = Some((local, parker));
    let spawned = std::thread::Builder::new()
        .name(name)
        .stack_size(stack_size)
        .spawn(move || {
            let Some((local, parker)) = given.lock().unwrap_or_else(|e| e.into_inner()).take()
            else {
                return;
            };
            drop(given);
            let left = worker::main(shared, index, local, parker, compensator, stack_size);
            if let Some((local, parker)) = left {
                shared.threads.free_slot(index, local, parker);
            }
            shared.counters.thread_stopped();
        });
    match spawned {
        Ok(h) => {
            handles.push(h);
            Ok(index)
        }
        Err(e) => {
            shared.counters.thread_stopped();
            if let Some((local, parker)) = back.lock().unwrap_or_else(|e| e.into_inner()).take() {
                threads.free_slot(index, local, parker);
            }
            Err(e)
        }
    }
}

/// Brings one more thread into play for a worker that is blocking. `all_blocked`: no other
/// thread of the runtime is active and work is queued, so the bound may be exceeded.
fn compensate(shared: &'static Shared, all_blocked: bool) {
    let sleep = &shared.sleep;
    if !all_blocked && (sleep.has_sleepers() || sleep.has_searchers()) {
        // An idle worker can take the work: a searcher finds it, a sleeper is woken when work
        // appears.
        return;
    }
    let threads = &shared.threads;
    let spare = threads
        .spares
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop();
    if let Some(i) = spare {
        sleep.add_active();
        let slot = threads.slot(i).expect("spare slots are initialised");
        slot.retired.store(false, Ordering::Release);
        sleep.unpark(i);
        shared.counters.count_compensation();
        if let Some(r) = shared.trace {
            r.record(Kind::CompensationStart { slot: i as u64 });
        }
        return;
    }
    // Compensation threads alive (running, blocked or retired): slots in use by them.
    let free = threads
        .free_slots
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .len();
    let live = (threads.num_slots() - sleep.workers()).saturating_sub(free);
    if live < threads.max_comp || all_blocked {
        sleep.add_active();
        match start_thread(shared, true) {
            Ok(i) => {
                shared.counters.count_compensation();
                if let Some(r) = shared.trace {
                    r.record(Kind::CompensationStart { slot: i as u64 });
                }
            }
            Err(e) => {
                sleep.remove_active();
                if all_blocked {
                    report_stall(shared, &e);
                }
            }
        }
    }
}

/// Every thread of the runtime is blocked, work is queued, and no thread could be started for
/// it: the queued work waits until a blocked thread returns. This is reported once per
/// runtime on standard error, since it is how a program that blocks outside ito, or with
/// frames too large to run its awaited tasks inline, stops making progress.
#[cold]
fn report_stall(shared: &Shared, e: &io::Error) {
    if !shared.threads.reported_stall.swap(true, Ordering::Relaxed) {
        eprintln!(
            "ito: runtime '{}': every thread is blocked and no thread could be started for \
             queued work ({e}); it waits until a blocked thread returns",
            shared.threads.name
        );
    }
}

/// After a push from outside: if every thread is blocked (each saw no work when it blocked),
/// starts one. The flag keeps concurrent pushers from each starting a thread; a pusher that
/// finds it set relies on the holder re-checking after clearing it.
pub(super) fn start_if_all_blocked(shared: &'static Shared) {
    let threads = &shared.threads;
    while shared.sleep.active() == 0 && !threads.emergency.swap(true, Ordering::SeqCst) {
        compensate(shared, true);
        threads.emergency.store(false, Ordering::SeqCst);
        if !shared.has_queued_work() {
            break;
        }
    }
}

/// During shutdown: starts a thread that runs exposed join jobs and exits.
pub(crate) fn start_shutdown_helper(shared: &'static Shared) {
    shared.sleep.add_active();
    if start_thread(shared, true).is_err() {
        shared.sleep.remove_active();
    }
}

impl WorkerCtx {
    /// This thread is about to block: give its place to another thread if the runtime would
    /// otherwise run with fewer active threads than workers. A wait inside a wait (an ito wait
    /// in `block_in_place`'s closure) leaves the count alone: the thread is already out of it.
    pub(crate) fn enter_blocking(&self, why: Why) -> BlockingGuard<'_> {
        if let Some(r) = self.shared.trace {
            r.park(why);
        }
        // Joins in progress below this frame would be out of reach while we sleep, and the
        // wait may well be for one of them.
        crate::runtime::join::expose(self, usize::MAX);
        self.flush_lifo();
        let shared = self.shared;
        // Counting the thread out twice would take a running thread out of `active` (or wrap
        // it below zero), and an outside push would then see no need for a thread.
        let guard = BlockingGuard {
            ctx: self,
            outermost: !self.blocked.replace(true),
        };
        if shared.is_shutdown() {
            // Nobody else may be left to run the join jobs this wait could depend on.
            if shared.has_join_work() {
                start_shutdown_helper(shared);
            }
            if guard.outermost {
                shared.sleep.remove_active();
            }
            return guard;
        }
        // A nested wait leaves the count, and compensation, to the outermost one.
        let before = guard.outermost.then(|| shared.sleep.remove_active());
        // Pairs with the fence in `Shared::after_remote_push`: either we see its task here,
        // or it sees no active thread and compensates itself.
        fence(Ordering::SeqCst);
        let queued = shared.has_queued_work();
        if queued {
            shared.notify_work(true);
        }
        if let Some(before) = before.filter(|&b| b <= shared.sleep.workers()) {
            // Past the bound only if nobody else is active and work is waiting, or readiness
            // may be (the I/O driver has started, and only an active thread polls it):
            // otherwise the blocked threads might wait for a task, or an event, no thread is
            // left to run or see.
            compensate(shared, before == 1 && (queued || shared.sleep.io_started()));
        }
        guard
    }

    /// A compensation thread steps back: park in the spare list until reactivated. Returns
    /// `true` if it stayed unused for `Builder::thread_keep_alive` and should exit.
    pub(super) fn retire(&self) -> bool {
        let shared = self.shared;
        // The LIFO task goes where others can take it, and where `Sleep::retire` looks.
        self.flush_lifo();
        if !shared.sleep.retire(self.idler(), self) {
            return false;
        }
        if let Some(r) = shared.trace {
            r.record(Kind::CompensationRetire);
        }
        let threads = &shared.threads;
        self.slot().retired.store(true, Ordering::Release);
        threads
            .spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.index());
        let deadline = Instant::now().checked_add(threads.keep_alive);
        while self.slot().retired.load(Ordering::Acquire) && !shared.is_shutdown() {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                let mut spares = threads.spares.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(pos) = spares.iter().position(|&i| i == self.index()) {
                    spares.swap_remove(pos);
                    return true;
                }
                // Someone took us off the list to reactivate us: wait for it.
                drop(spares);
                self.idler().park(None);
                continue;
            }
            self.count_park(Why::Retired);
            self.idler().park(deadline.map(|d| d - now));
            if let Some(r) = shared.trace {
                r.unpark();
            }
        }
        false
    }
}

/// Counts the thread back in as active when its outermost wait ends.
pub(crate) struct BlockingGuard<'a> {
    ctx: &'a WorkerCtx,
    /// This wait counted the thread out (no enclosing one did).
    outermost: bool,
}

impl Drop for BlockingGuard<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.ctx.shared.trace {
            r.unpark();
        }
        if self.outermost {
            self.ctx.blocked.set(false);
            self.ctx.shared.sleep.add_active();
        }
    }
}
