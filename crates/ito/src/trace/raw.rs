//! [`Raw`]: the 16-byte form an event takes in a buffer, and its decoding into [`Event`]s.
//!
//! A record is two words: the clock's ticks shifted left by 8 with a tag in the low byte,
//! and one payload word. A spawn or wake-up records only the task: its parent or waker is the
//! task the thread runs, which the decoder knows from the thread's own runs, because each
//! start names the task it sets and each end names the task it restores. A user event or
//! span takes a second record for the rest of its name and its start.

use super::clock::Scale;
use super::event::{Event, FROM_INJECTOR, Kind, Why};

/// One stored record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    /// `ticks << 8 | tag` (or, in a second record, the name's length).
    pub(crate) a: u64,
    /// The payload.
    pub(crate) b: u64,
}

impl Raw {
    /// A first record's tag.
    #[inline]
    pub(crate) fn tag(self) -> u64 {
        self.a & 0xff
    }

    /// A first record's clock reading.
    #[inline]
    pub(crate) fn ticks(self) -> u64 {
        self.a >> 8
    }
}

/// What a record's low byte says.
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
    pub(crate) const SUSPEND: u64 = 8;
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
    /// The payload is the name's address; a second record holds its length.
    pub(crate) const USER: u64 = 19;
    /// As [`USER`], and the second record's payload is the start's ticks.
    pub(crate) const SPAN: u64 = 20;
}

/// The first record's word `a`: `ticks` and `tag`.
#[inline]
pub(crate) fn head(ticks: u64, tag: u64) -> u64 {
    ticks << 8 | tag
}

/// The tag and payload of `kind`, and its second record if it takes one (word `a` of the
/// first record is [`head`] of the time and the tag). The runtime's hot hooks
/// (`trace/hooks.rs`) write their records directly; this serves the others.
pub(crate) fn encode(kind: Kind) -> (u64, u64, Option<Raw>) {
    let n32 = |n: u64| n.min(u64::from(u32::MAX));
    match kind {
        Kind::PollStart { task } => (tag::POLL_START, task, None),
        Kind::HelpStart { task } => (tag::HELP_START, task, None),
        Kind::PollEnd => (tag::POLL_END, 0, None),
        Kind::Spawn { task, .. } => (tag::SPAWN, task, None),
        Kind::Wake { task, .. } => (tag::WAKE, task, None),
        Kind::Steal { from, n } => (tag::STEAL, n32(from) << 32 | n32(n), None),
        Kind::Park { why } => (tag::PARK, why as u64, None),
        Kind::Unpark => (tag::UNPARK, 0, None),
        Kind::Suspend => (tag::SUSPEND, 0, None),
        Kind::Resume => (tag::RESUME, 0, None),
        Kind::CompensationStart { slot } => (tag::COMP_START, slot, None),
        Kind::CompensationRetire => (tag::COMP_RETIRE, 0, None),
        Kind::BlockingStart => (tag::BLOCKING_START, 0, None),
        Kind::BlockingEnd => (tag::BLOCKING_END, 0, None),
        Kind::JoinExpose { n } => (tag::JOIN_EXPOSE, n, None),
        Kind::JoinSteal => (tag::JOIN_STEAL, 0, None),
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
            Some(Raw {
                a: name.len() as u64,
                b: 0,
            }),
        ),
        Kind::Span { name, start } => (
            tag::SPAN,
            name.as_ptr() as usize as u64,
            Some(Raw {
                a: name.len() as u64,
                b: start,
            }),
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

/// One thread's records, oldest first, as events with times in nanoseconds. Times are made
/// non-decreasing along the thread (a thread moved to another core may read a counter a few
/// ticks behind). A two-record event cut off by a snapshot is left out.
///
/// # Safety
///
/// `raws` were written by [`encode`] or the hooks, so the name of a user event or span is a
/// `&'static str`'s address and length.
pub(crate) unsafe fn decode(raws: &[Raw], scale: Scale) -> Vec<Event> {
    let mut out = Vec::with_capacity(raws.len());
    // The task the thread runs, as the runtime's `ThreadBuf::task` held it at each record.
    let mut running = 0u64;
    let mut last = 0u64;
    let mut it = raws.iter();
    while let Some(r) = it.next() {
        let t = scale.nanos(r.ticks()).max(last);
        last = t;
        let b = r.b;
        let kind = match r.tag() {
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
            },
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
            tag::SUSPEND => Kind::Suspend,
            tag::RESUME => Kind::Resume,
            tag::COMP_START => Kind::CompensationStart { slot: b },
            tag::COMP_RETIRE => Kind::CompensationRetire,
            tag::BLOCKING_START => Kind::BlockingStart,
            tag::BLOCKING_END => Kind::BlockingEnd,
            tag::JOIN_EXPOSE => Kind::JoinExpose { n: b },
            tag::JOIN_STEAL => Kind::JoinSteal,
            tag::PROCESS_SPAWN => Kind::ProcessSpawn { pid: b },
            tag::PROCESS_EXIT | tag::PROCESS_FAIL => Kind::ProcessExit {
                pid: b,
                normal: r.tag() == tag::PROCESS_EXIT,
            },
            tag::USER | tag::SPAN => {
                let Some(second) = it.next() else { break };
                // SAFETY: the caller's promise: `b` and `second.a` are the address and length
                // of a `&'static str`.
                let name: &'static str = unsafe {
                    std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                        b as usize as *const u8,
                        second.a as usize,
                    ))
                };
                if r.tag() == tag::USER {
                    Kind::User { name }
                } else {
                    Kind::Span {
                        name,
                        start: scale.nanos(second.b),
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

    /// Encodes `kinds` at times 1, 2, ... as the recorder does.
    fn records(kinds: &[Kind]) -> Vec<Raw> {
        let mut out = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            let (tag, b, second) = encode(*k);
            out.push(Raw {
                a: head(i as u64 + 1, tag),
                b,
            });
            out.extend(second);
        }
        out
    }

    #[test]
    fn every_kind_round_trips_and_spawns_name_the_running_task() {
        let kinds = [
            Kind::Spawn { task: 7, parent: 0 },
            Kind::PollStart { task: 7 },
            Kind::Spawn { task: 8, parent: 7 },
            Kind::HelpStart { task: 8 },
            Kind::Wake { task: 9, by: 8 },
            Kind::PollEnd,
            Kind::Wake { task: 10, by: 7 },
            Kind::PollEnd,
            Kind::Steal { from: 3, n: 5 },
            Kind::Steal {
                from: FROM_INJECTOR,
                n: 1,
            },
            Kind::Park { why: Why::StmRetry },
            Kind::Unpark,
            Kind::Suspend,
            Kind::Resume,
            Kind::CompensationStart { slot: 4 },
            Kind::CompensationRetire,
            Kind::BlockingStart,
            Kind::BlockingEnd,
            Kind::JoinExpose { n: 2 },
            Kind::JoinSteal,
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
        ];
        let mut raws = records(&kinds);
        // The ends restore what the starts replaced: 7 after the help, 0 after the poll.
        raws[5].b = 7;
        raws[7].b = 0;
        // SAFETY: written by `encode`.
        let evs = unsafe { decode(&raws, Scale(1.0)) };
        let got: Vec<Kind> = evs.iter().map(|e| e.kind).collect();
        assert_eq!(got, kinds);
        let times: Vec<u64> = evs.iter().map(|e| e.t).collect();
        assert_eq!(times, (1..=kinds.len() as u64).collect::<Vec<_>>());
    }

    #[test]
    fn a_record_is_two_words() {
        // The size `docs/trace.md` states for the memory a traced run takes.
        assert_eq!(size_of::<Raw>(), 16);
    }

    #[test]
    fn a_cut_off_span_is_left_out_and_times_never_go_back() {
        let mut raws = records(&[Kind::JoinSteal, Kind::JoinSteal, Kind::User { name: "x" }]);
        raws[1].a = head(0, tag::JOIN_STEAL);
        raws.pop();
        // SAFETY: written by `encode`.
        let evs = unsafe { decode(&raws, Scale(1.0)) };
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[1].t, 1);
    }
}
