//! A trace buffer read while its owner appends: an export sees a prefix of what was appended,
//! in order, across a chunk boundary (chunks hold two events under loom).

use loom::sync::Arc;
use loom::thread;

use crate::trace::{Event, Kind, ThreadBuf};

fn ev(t: u64) -> Event {
    Event {
        t,
        kind: Kind::JoinSteal,
    }
}

/// The owner appends three events (the third opens a second chunk) while another thread
/// takes a snapshot: the snapshot is a prefix, and after the owner is done, all three.
#[test]
fn a_snapshot_during_appends_is_a_prefix() {
    loom::model(|| {
        let buf = Arc::new(ThreadBuf::for_current_thread());
        let b = buf.clone();
        let owner = thread::spawn(move || {
            for t in 1..=3 {
                b.push(ev(t));
            }
        });
        let seen: Vec<u64> = buf.snapshot().iter().map(|e| e.t).collect();
        assert!(seen.len() <= 3);
        assert_eq!(seen, (1..=seen.len() as u64).collect::<Vec<_>>());
        owner.join().unwrap();
        let all: Vec<u64> = buf.snapshot().iter().map(|e| e.t).collect();
        assert_eq!(all, [1, 2, 3]);
    });
}
