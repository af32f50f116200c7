//! A trace buffer read while its owner appends: an export sees whole records, a prefix of
//! what was appended, in order, across a chunk boundary that leaves a chunk's last slot
//! unused (chunks hold four words under loom).

use loom::sync::Arc;
use loom::thread;

use crate::trace::ThreadBuf;

/// The owner appends a one-word record, a two-word one, and another two-word one that does
/// not fit the first chunk's last slot, while another thread takes a snapshot: the snapshot
/// is a prefix in whole records, and after the owner is done, all of it.
#[test]
fn a_snapshot_during_appends_is_a_prefix_of_whole_records() {
    loom::model(|| {
        let buf = Arc::new(ThreadBuf::for_current_thread());
        let b = buf.clone();
        let owner = thread::spawn(move || {
            b.push([1]);
            b.push([2, 3]);
            b.push([4, 5]);
        });
        let seen = buf.snapshot();
        let prefixes: [&[u64]; 4] = [&[], &[1], &[1, 2, 3], &[1, 2, 3, 4, 5]];
        assert!(prefixes.contains(&seen.as_slice()), "{seen:?}");
        owner.join().unwrap();
        assert_eq!(buf.snapshot(), [1, 2, 3, 4, 5]);
    });
}
