//! The count of a runtime block's owners (`runtime/owners.rs`): the `Runtime`'s fold races
//! owners that let go outside the runtime's threads; exactly one of them frees the block,
//! and it sees everything every owner wrote before letting go.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use crate::runtime::owners::BlockRefs;

/// The block, as far as the model is concerned: the count, and memory each owner writes
/// before it lets go and the freer reads (loom reports a data race if a release does not
/// order the write before the free).
struct Block {
    refs: BlockRefs,
    written: [UnsafeCell<u32>; 2],
}

// SAFETY: each `written` cell is written by one owner before its release and read only by
// the freer, after the count reached zero (the property under test).
unsafe impl Sync for Block {}

impl Block {
    fn new() -> Arc<Block> {
        Arc::new(Block {
            refs: BlockRefs::new(),
            written: [UnsafeCell::new(0), UnsafeCell::new(0)],
        })
    }

    /// The freer's reads of what the owners wrote.
    fn free(&self) -> u32 {
        // SAFETY: the count is zero: every owner's write happened before (the model checks).
        self.written.iter().map(|c| c.with(|p| unsafe { *p })).sum()
    }
}

/// Runs `owners` threads that each write and let go, while the `Runtime` folds `net`;
/// asserts that exactly one of them frees, and that it sees both writes.
fn model(owners: usize, net: u64) {
    loom::model(move || {
        let block = Block::new();
        for _ in 0..owners {
            block.refs.acquire();
        }
        let threads: Vec<_> = (0..owners)
            .map(|i| {
                let b = block.clone();
                thread::spawn(move || {
                    // SAFETY: this owner's own cell, before its release.
                    b.written[i].with_mut(|p| unsafe { *p = 1 });
                    b.refs.release().then(|| b.free())
                })
            })
            .collect();
        let mut freed: Vec<u32> = block
            .refs
            .fold(net)
            .then(|| block.free())
            .into_iter()
            .collect();
        for t in threads {
            freed.extend(t.join().unwrap());
        }
        assert_eq!(freed.len(), 1, "exactly one owner frees");
        assert_eq!(
            freed[0] as usize, owners,
            "the freer sees every owner's writes"
        );
        assert_eq!(block.refs.get(), 0);
    });
}

/// Two owners outside the runtime's threads (a task born outside, a blocking thread) let go
/// while the `Runtime` folds slot counters that balance out.
#[test]
fn the_last_of_the_runtime_and_two_owners_frees_once() {
    model(2, 0);
}

/// Tasks born on workers and freed outside: the count dips below its start before the fold
/// but cannot reach zero, and the fold adds the births back.
#[test]
fn deaths_outside_before_the_fold_do_not_free() {
    loom::model(|| {
        let block = Block::new();
        let b = block.clone();
        // Two tasks were born on a worker (slot counters: +2) and die on another thread.
        let outside = thread::spawn(move || {
            // SAFETY: this owner's own cell, before its release.
            b.written[0].with_mut(|p| unsafe { *p = 1 });
            let first = b.refs.release();
            // SAFETY: as above, for the second task.
            b.written[1].with_mut(|p| unsafe { *p = 1 });
            let second = b.refs.release();
            assert!(!first, "the first death cannot be the last owner");
            second.then(|| b.free())
        });
        let mine = block.refs.fold(2).then(|| block.free());
        let theirs = outside.join().unwrap();
        let freed: Vec<u32> = mine.into_iter().chain(theirs).collect();
        assert_eq!(freed, [2], "exactly one frees, after both deaths");
    });
}
