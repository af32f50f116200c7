//! A trace buffer read while its owner appends: an export sees a prefix of what was appended,
//! in order, across a chunk boundary (chunks hold two records under loom).

use loom::sync::Arc;
use loom::thread;

use crate::trace::{Raw, ThreadBuf};

fn rec(t: u64) -> Raw {
    Raw { a: t, b: !t }
}

/// The owner appends three records (the third opens a second chunk) while another thread
/// takes a snapshot: the snapshot is a prefix, and after the owner is done, all three.
#[test]
fn a_snapshot_during_appends_is_a_prefix() {
    loom::model(|| {
        let buf = Arc::new(ThreadBuf::for_current_thread());
        let b = buf.clone();
        let owner = thread::spawn(move || {
            for t in 1..=3 {
                b.push(rec(t));
            }
        });
        let seen = buf.snapshot();
        assert!(seen.len() <= 3);
        assert_eq!(seen, (1..=seen.len() as u64).map(rec).collect::<Vec<_>>());
        owner.join().unwrap();
        assert_eq!(buf.snapshot(), [rec(1), rec(2), rec(3)]);
    });
}
