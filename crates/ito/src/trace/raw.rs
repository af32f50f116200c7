//! The records an event takes in a buffer, and their decoding into [`Event`]s.
//!
//! Most events are one word, a short record: the tag, the clock's ticks since the thread's
//! previous record (up to [`DELTA_BITS`] bits), and a payload that is 8-aligned and below
//! 2^47 (a task id, which is an address, or zero), shifted right by 3. Any other event is a
//! long record of two words: the ticks shifted left by 8 with the tag in the low byte, and
//! the payload. A user event or span adds two words for its name's length and its start,
//! and a named spawn two for its name's address and length.
//! A spawn or wake-up records only the task: its parent or waker is the task the thread
//! runs, which the decoder knows from the thread's own records, because each start names the
//! task it sets and each end names the task it restores.

use super::buffer::ThreadBuf;
use super::clock::Scale;
use super::event::{Event, FROM_INJECTOR, Kind, Why};

/// Bits of a short record's tick delta: 16,384 ticks, some microseconds of a GHz counter.
const DELTA_BITS: u32 = 14;
/// The bit that marks a short record; tags are below it.
const SHORT: u64 = 1 << 5;
/// Where a short record's tick delta starts.
const DELTA_AT: u32 = 6;
/// Where a short record's payload (shifted right by 3) starts.
const PAYLOAD_AT: u32 = DELTA_AT + DELTA_BITS;

/// A long record's first word: `ticks` and `tag`. Also the buffer's note of its latest
/// record.
#[inline]
pub(crate) fn head(ticks: u64, tag: u64) -> u64 {
    ticks << 8 | tag
}

/// The ticks and tag of the thread's latest record (0 and [`tag::POLL_START`] before any).
#[inline]
pub(crate) fn latest(buf: &ThreadBuf) -> (u64, u64) {
    let note = buf.last();
    (note >> 8, note & 0xff)
}

/// Appends an event to `buf` (the calling thread's): one word when it fits, else two.
#[inline]
pub(crate) fn put(buf: &ThreadBuf, ticks: u64, tag: u64, payload: u64) {
    let delta = ticks.wrapping_sub(buf.last() >> 8);
    buf.set_last(head(ticks, tag));
    // A tick delta that wrapped (a counter a little behind on another core) is too large.
    if (delta >> DELTA_BITS) | (payload & 7) | (payload >> 47) == 0 {
        buf.push([(payload >> 3) << PAYLOAD_AT | delta << DELTA_AT | SHORT | tag]);
    } else {
        buf.push([head(ticks, tag), payload]);
    }
}

/// Appends an event with two more words (a user event or span, a named spawn) to `buf`.
pub(crate) fn put_wide(buf: &ThreadBuf, ticks: u64, tag: u64, payload: u64, more: [u64; 2]) {
    buf.set_last(head(ticks, tag));
    buf.push([head(ticks, tag), payload, more[0], more[1]]);
}

/// What a record says it is: the low byte of a long record, the low 5 bits of a short one.
pub(crate) mod tag {
    pub(crate) const POLL_START: u64 = 0;
    pub(crate) const HELP_START: u64 = 1;
    /// The payload is the task the thread runs after the end (the one it ran before).
    pub(crate) const POLL_END: u64 = 2;
    pub(crate) const SPAWN: u64 = 3;
    pub(crate) const WAKE: u64 = 4;
    /// The payload is `from << 32 | n`, both saturated to 32 bits.
    pub(crate) const STEAL: u64 = 5;
    pub(crate) const PARK: u64 = 6;
    pub(crate) const UNPARK: u64 = 7;
    /// The payload is the task the thread runs after the suspension (none: zero).
    pub(crate) const SUSPEND: u64 = 8;
    /// The payload is the task that resumes.
    pub(crate) const RESUME: u64 = 9;
    pub(crate) const COMP_START: u64 = 10;
    pub(crate) const COMP_RETIRE: u64 = 11;
    pub(crate) const BLOCKING_START: u64 = 12;
    pub(crate) const BLOCKING_END: u64 = 13;
    pub(crate) const JOIN_EXPOSE: u64 = 14;
    pub(crate) const JOIN_STEAL: u64 = 15;
    pub(crate) const PROCESS_SPAWN: u64 = 16;
    pub(crate) const PROCESS_EXIT: u64 = 17;
    pub(crate) const PROCESS_FAIL: u64 = 18;
    /// The payload is the name's address; two more words hold its length and 0.
    pub(crate) const USER: u64 = 19;
    /// As [`USER`], and the second more word is the start's ticks.
    pub(crate) const SPAN: u64 = 20;
    /// The payload is the number of callbacks fired.
    pub(crate) const TIMER_FIRE: u64 = 21;
    pub(crate) const JOIN_JOB_START: u64 = 22;
    pub(crate) const JOIN_JOB_END: u64 = 23;
    /// As [`SPAWN`]; two more words hold the name's address and length.
    pub(crate) const SPAWN_NAMED: u64 = 24;
}

/// The two more words that carry `name`: its address and length.
#[inline]
pub(crate) fn name_words(name: &'static str) -> [u64; 2] {
    [name.as_ptr() as usize as u64, name.len() as u64]
}

/// The name whose address and length are `ptr` and `len`.
///
/// # Safety
///
/// `ptr` and `len` are those of a `&'static str` ([`name_words`]).
unsafe fn name_at(ptr: u64, len: u64) -> &'static str {
    // SAFETY: the caller's promise.
    unsafe {
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(
            ptr as usize as *const u8,
            len as usize,
        ))
    }
}

/// The tag and payload of `kind`, and its two more words if it takes them. The runtime's hot
/// hooks (`trace/hooks.rs`) call [`put`] directly; this serves the others.
pub(crate) fn encode(kind: Kind) -> (u64, u64, Option<[u64; 2]>) {
    let n32 = |n: u64| n.min(u64::from(u32::MAX));
    match kind {
        Kind::PollStart { task } => (tag::POLL_START, task, None),
        Kind::HelpStart { task } => (tag::HELP_START, task, None),
        Kind::PollEnd => (tag::POLL_END, 0, None),
        Kind::Spawn {
            task, name: None, ..
        } => (tag::SPAWN, task, None),
        Kind::Spawn {
            task,
            name: Some(name),
            ..
        } => (tag::SPAWN_NAMED, task, Some(name_words(name))),
        Kind::Wake { task, .. } => (tag::WAKE, task, None),
        Kind::Steal { from, n } => (tag::STEAL, n32(from) << 32 | n32(n), None),
        Kind::Park { why } => (tag::PARK, why as u64, None),
        Kind::Unpark => (tag::UNPARK, 0, None),
        Kind::Suspend => (tag::SUSPEND, 0, None),
        Kind::Resume { task } => (tag::RESUME, task, None),
        Kind::CompensationStart { slot } => (tag::COMP_START, slot, None),
        Kind::CompensationRetire => (tag::COMP_RETIRE, 0, None),
        Kind::BlockingStart => (tag::BLOCKING_START, 0, None),
        Kind::BlockingEnd => (tag::BLOCKING_END, 0, None),
        Kind::JoinExpose { n } => (tag::JOIN_EXPOSE, n, None),
        Kind::JoinSteal => (tag::JOIN_STEAL, 0, None),
        Kind::JoinJobStart => (tag::JOIN_JOB_START, 0, None),
        Kind::JoinJobEnd => (tag::JOIN_JOB_END, 0, None),
        Kind::TimerFire { n } => (tag::TIMER_FIRE, n, None),
        Kind::ProcessSpawn { pid } => (tag::PROCESS_SPAWN, pid, None),
        Kind::ProcessExit { pid, normal } => (
            if normal {
                tag::PROCESS_EXIT
            } else {
                tag::PROCESS_FAIL
            },
            pid,
            None,
        ),
        Kind::User { name } => (
            tag::USER,
            name.as_ptr() as usize as u64,
            Some([name.len() as u64, 0]),
        ),
        Kind::Span { name, start } => (
            tag::SPAN,
            name.as_ptr() as usize as u64,
            Some([name.len() as u64, start]),
        ),
    }
}

/// The `Why` numbered `n` by `why as u64`.
fn why(n: u64) -> Why {
    const ALL: [Why; 7] = [
        Why::NoWork,
        Why::Retired,
        Why::Wait,
        Why::JoinLatch,
        Why::BlockOn,
        Why::StmRetry,
        Why::BlockInPlace,
    ];
    ALL.get(n as usize).copied().unwrap_or(Why::NoWork)
}

/// One thread's records (its buffer's words), oldest first, as events with times in
/// nanoseconds. Times are made non-decreasing along the thread (a thread moved to another
/// core may read a counter a few ticks behind). A snapshot holds whole records only.
///
/// # Safety
///
/// `words` were written by [`put`] and [`put_wide`], so the name of a user event, a span or a
/// named spawn is a `&'static str`'s address and length.
pub(crate) unsafe fn decode(words: &[u64], scale: Scale) -> Vec<Event> {
    let mut out = Vec::with_capacity(words.len() / 2);
    // The task the thread runs, as the runtime's `ThreadBuf::task` held it at each record.
    let mut running = 0u64;
    // The ticks of the previous record, as the encoder's note held them.
    let mut ticks = 0u64;
    let mut last = 0u64;
    let mut it = words.iter().copied();
    while let Some(w) = it.next() {
        let (tag, b) = if w & SHORT != 0 {
            ticks = ticks.wrapping_add(w >> DELTA_AT & ((1 << DELTA_BITS) - 1));
            (w & (SHORT - 1), (w >> PAYLOAD_AT) << 3)
        } else {
            let Some(b) = it.next() else { break };
            ticks = w >> 8;
            (w & 0xff, b)
        };
        let t = scale.nanos(ticks).max(last);
        last = t;
        let kind = match tag {
            tag::POLL_START => {
                running = b;
                Kind::PollStart { task: b }
            }
            tag::HELP_START => {
                running = b;
                Kind::HelpStart { task: b }
            }
            tag::POLL_END => {
                running = b;
                Kind::PollEnd
            }
            tag::SPAWN => Kind::Spawn {
                task: b,
                parent: running,
                name: None,
            },
            tag::SPAWN_NAMED => {
                let (Some(ptr), Some(len)) = (it.next(), it.next()) else {
                    break;
                };
                Kind::Spawn {
                    task: b,
                    parent: running,
                    // SAFETY: the caller's promise: written by `put_wide` with `name_words`.
                    name: Some(unsafe { name_at(ptr, len) }),
                }
            }
            tag::WAKE => Kind::Wake {
                task: b,
                by: running,
            },
            tag::STEAL => {
                let from = b >> 32;
                Kind::Steal {
                    from: if from == u64::from(u32::MAX) {
                        FROM_INJECTOR
                    } else {
                        from
                    },
                    n: b & u64::from(u32::MAX),
                }
            }
            tag::PARK => Kind::Park { why: why(b) },
            tag::UNPARK => Kind::Unpark,
            tag::SUSPEND => {
                running = b;
                Kind::Suspend
            }
            tag::RESUME => {
                running = b;
                Kind::Resume { task: b }
            }
            tag::COMP_START => Kind::CompensationStart { slot: b },
            tag::COMP_RETIRE => Kind::CompensationRetire,
            tag::BLOCKING_START => Kind::BlockingStart,
            tag::BLOCKING_END => Kind::BlockingEnd,
            tag::JOIN_EXPOSE => Kind::JoinExpose { n: b },
            tag::JOIN_STEAL => Kind::JoinSteal,
            tag::JOIN_JOB_START => Kind::JoinJobStart,
            tag::JOIN_JOB_END => Kind::JoinJobEnd,
            tag::TIMER_FIRE => Kind::TimerFire { n: b },
            tag::PROCESS_SPAWN => Kind::ProcessSpawn { pid: b },
            tag::PROCESS_EXIT | tag::PROCESS_FAIL => Kind::ProcessExit {
                pid: b,
                normal: tag == tag::PROCESS_EXIT,
            },
            tag::USER | tag::SPAN => {
                let (Some(len), Some(start)) = (it.next(), it.next()) else {
                    break;
                };
                // SAFETY: the caller's promise: `b` and `len` are the address and length of a
                // `&'static str`.
                let name = unsafe { name_at(b, len) };
                if tag == tag::USER {
                    Kind::User { name }
                } else {
                    Kind::Span {
                        name,
                        start: scale.nanos(start),
                    }
                }
            }
            _ => continue,
        };
        out.push(Event { t, kind });
    }
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Records `kinds` at ticks `at(i)` into a fresh buffer, as the recorder does, and returns
    /// its words.
    fn record(kinds: &[Kind], at: impl Fn(u64) -> u64) -> Vec<u64> {
        let buf = ThreadBuf::for_current_thread();
        for (i, k) in kinds.iter().enumerate() {
            let (tag, b, more) = encode(*k);
            match more {
                None => put(&buf, at(i as u64), tag, b),
                Some(more) => put_wide(&buf, at(i as u64), tag, b, more),
            }
        }
        buf.snapshot()
    }

    fn all_kinds() -> Vec<Kind> {
        vec![
            Kind::Spawn {
                task: 0x7f00_0000_0010,
                parent: 0,
                name: None,
            },
            Kind::PollStart {
                task: 0x7f00_0000_0010,
            },
            Kind::Spawn {
                task: 0x7f00_0000_0020,
                parent: 0x7f00_0000_0010,
                name: None,
            },
            Kind::HelpStart {
                task: 0x7f00_0000_0020,
            },
            Kind::Wake {
                task: 9,
                by: 0x7f00_0000_0020,
            },
            Kind::PollEnd,
            Kind::Wake {
                task: 0x7f00_0000_0030,
                by: 0x7f00_0000_0010,
            },
            Kind::PollEnd,
            Kind::Steal { from: 3, n: 5 },
            Kind::Steal {
                from: FROM_INJECTOR,
                n: 1,
            },
            Kind::Park { why: Why::StmRetry },
            Kind::Unpark,
            Kind::Suspend,
            Kind::Resume {
                task: 0x7f00_0000_0040,
            },
            Kind::CompensationStart { slot: 4 },
            Kind::CompensationRetire,
            Kind::BlockingStart,
            Kind::BlockingEnd,
            Kind::JoinExpose { n: 2 },
            Kind::JoinSteal,
            Kind::JoinJobStart,
            Kind::TimerFire { n: 3 },
            Kind::JoinJobEnd,
            Kind::Spawn {
                task: 0x7f00_0000_0050,
                parent: 0x7f00_0000_0040,
                name: Some("conn"),
            },
            Kind::ProcessSpawn { pid: 0x1000 },
            Kind::ProcessExit {
                pid: 0x1000,
                normal: false,
            },
            Kind::User { name: "mark" },
            Kind::Span {
                name: "phase",
                start: 3,
            },
        ]
    }

    fn round_trip(at: impl Fn(u64) -> u64 + Copy) -> (Vec<u64>, Vec<Event>) {
        let kinds = all_kinds();
        let buf = ThreadBuf::for_current_thread();
        for (i, k) in kinds.iter().enumerate() {
            let (tag, mut b, more) = encode(*k);
            if i == 5 {
                // The help's end restores the task that ran before it (the recorder writes
                // what an end restores; `encode` has no payload for an end).
                b = 0x7f00_0000_0010;
            }
            match more {
                None => put(&buf, at(i as u64), tag, b),
                Some(more) => put_wide(&buf, at(i as u64), tag, b, more),
            }
        }
        let words = buf.snapshot();
        // SAFETY: written by `put` and `put_wide`.
        let evs = unsafe { decode(&words, Scale(1.0)) };
        let got: Vec<Kind> = evs.iter().map(|e| e.kind).collect();
        assert_eq!(got, kinds);
        let times: Vec<u64> = evs.iter().map(|e| e.t).collect();
        assert_eq!(times, (0..kinds.len() as u64).map(at).collect::<Vec<_>>());
        (words, evs)
    }

    #[test]
    fn every_kind_round_trips_in_short_and_long_records() {
        // Close together: aligned task ids below 2^47 (and zero) take one word.
        let (close, _) = round_trip(|i| 1000 + i);
        // Far apart: every record is long.
        let (far, _) = round_trip(|i| (i + 1) << 20);
        let n = all_kinds().len();
        // Far apart, each event is two words, the user event, the span and the named spawn
        // four.
        assert_eq!(far.len(), (n - 3) * 2 + 3 * 4);
        // Close together, the runs, the spawns and the wake-up of an aligned task are one
        // word each: 7 of the first 8 events (the other wakes task 9).
        let short = close.iter().filter(|w| **w & SHORT != 0).count();
        assert!(short >= 7, "{short} short records");
        assert!(close.len() <= far.len() - 7);
    }

    #[test]
    fn a_cut_off_wide_event_is_left_out_and_times_never_go_back() {
        let mut words = record(
            &[Kind::JoinSteal, Kind::JoinSteal, Kind::User { name: "x" }],
            |i| [5, 2, 9][i as usize],
        );
        words.truncate(words.len() - 1);
        // SAFETY: written by `put` and `put_wide`.
        let evs = unsafe { decode(&words, Scale(1.0)) };
        assert_eq!(evs.len(), 2);
        assert_eq!([evs[0].t, evs[1].t], [5, 5]);
    }
}
