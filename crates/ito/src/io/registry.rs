//! The driver's table of registered sources: a slab of [`ScheduledIo`]s, each found by a
//! token that carries its slot's generation.
//!
//! The OS reports readiness by token. A source may be dropped while an event for it is still
//! on its way (in the kernel's queue, or in the batch a driver turn is dispatching), and its
//! slot reused by a new source. The token's generation tells them apart: an event whose
//! generation is not the slot's current one is dropped. Dispatch and removal take the same
//! lock, so a source's state is never touched once its registration has been removed, and the
//! `Arc` keeps it alive for whoever still holds it.

use std::io;
use std::sync::Arc;
use std::task::Waker;

use super::ready::Ready;
use super::scheduled::ScheduledIo;
use crate::loom::Mutex;

/// Bits of a token that index the slab; the generation sits above them.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
/// Generations wrap below the token's top bit, so no token is ever [`WAKE_TOKEN`].
const GENERATION_MASK: usize = usize::MAX >> (INDEX_BITS + 1);

/// The token of the driver's own waker: never a registration's.
pub(crate) const WAKE_TOKEN: usize = usize::MAX;

struct Entry {
    generation: usize,
    io: Option<Arc<ScheduledIo>>,
}

#[derive(Default)]
struct Slab {
    entries: Vec<Entry>,
    /// Indices of vacant entries.
    free: Vec<usize>,
}

/// The registered sources of one driver.
#[derive(Default)]
pub(crate) struct Registry {
    slab: Mutex<Slab>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

fn token(index: usize, generation: usize) -> usize {
    (generation << INDEX_BITS) | index
}

impl Slab {
    /// The live entry `token` names, if it still does.
    fn get(&self, token: usize) -> Option<&Arc<ScheduledIo>> {
        let e = self.entries.get(token & INDEX_MASK)?;
        (e.generation == token >> INDEX_BITS)
            .then_some(e.io.as_ref())
            .flatten()
    }
}

impl Registry {
    /// Adds a source's state; returns its token.
    pub(crate) fn insert(&self, io: Arc<ScheduledIo>) -> io::Result<usize> {
        let mut slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        let index = match slab.free.pop() {
            Some(i) => i,
            None => {
                let i = slab.entries.len();
                if i > INDEX_MASK {
                    return Err(io::Error::other(
                        "ito: too many registered I/O sources (16 million)",
                    ));
                }
                slab.entries.push(Entry {
                    generation: 0,
                    io: None,
                });
                i
            }
        };
        let e = &mut slab.entries[index];
        e.io = Some(io);
        Ok(token(index, e.generation))
    }

    /// Removes the source `token` names (no-op if it is gone). Events still on their way for
    /// it are dropped from now on.
    pub(crate) fn remove(&self, token: usize) {
        let mut slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        let index = token & INDEX_MASK;
        let Some(e) = slab.entries.get_mut(index) else {
            return;
        };
        if e.generation != token >> INDEX_BITS || e.io.is_none() {
            return;
        }
        let io = e.io.take();
        e.generation = (e.generation + 1) & GENERATION_MASK;
        slab.free.push(index);
        drop(slab);
        drop(io);
    }

    /// Records the events of one driver turn, `(token, readiness)`, and moves the wakers they
    /// satisfy to `wake`. Events for removed sources are dropped.
    pub(crate) fn dispatch(
        &self,
        tick: u16,
        events: impl IntoIterator<Item = (usize, Ready)>,
        wake: &mut Vec<Waker>,
    ) {
        let slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        for (token, ready) in events {
            if let Some(io) = slab.get(token) {
                io.set_readiness(tick, ready, wake);
            }
        }
    }

    /// Registered sources now (tests).
    #[cfg(all(test, loom))]
    pub(crate) fn len(&self) -> usize {
        let slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        slab.entries.len() - slab.free.len()
    }
}
