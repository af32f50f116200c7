//! The Santa Claus problem (Trono, 1994), solved with STM as in Simon Peyton Jones'
//! "Beautiful concurrency": Santa sleeps until all nine reindeer are back from holiday or
//! three of the ten elves need help; the reindeer come first when both are waiting.
//!
//! Built, like the paper's solution, from two abstractions made of `TVar`s:
//!
//! - A `Gate` with a capacity: Santa `operate`s it (opens it for `capacity` passes and waits
//!   until all of them are used); each member of a group `pass`es it once.
//! - A `Group` of a fixed size: helpers `join` it (and get its pair of gates); Santa waits
//!   until it is full (`await_full`), which hands him the gates and starts a fresh group.
//!
//! Santa chooses with `or_else`: the reindeer group if it is full, else the elf group if it is
//! full, else `retry` (sleep until either changes). Elves and reindeer are ito tasks
//! (`atomically_async`); each group member records its visit in a `TQueue`, which Santa reads
//! after closing the out-gate.
//!
//! Checked every round: the group had exactly 9 reindeer or exactly 3 elves, all different;
//! when Santa chose elves, the reindeer group was not full in the same snapshot (priority).
//!
//! ```text
//! cargo run --release -p ito --example stm_santa
//! ```

use std::time::{Duration, Instant};

use ito::stm::{StmResult, TQueue, TVar, Tx, atomically, atomically_async, check};

const REINDEER: usize = 9;
const ELVES: usize = 10;
const REINDEER_GROUP: usize = 9;
const ELF_GROUP: usize = 3;

/// A gate that lets `capacity` members through each time Santa operates it.
#[derive(Clone)]
struct Gate {
    capacity: usize,
    remaining: TVar<usize>,
}

impl Gate {
    fn new(capacity: usize) -> Gate {
        Gate {
            capacity,
            remaining: TVar::new(0),
        }
    }

    /// Waits until the gate is open, then uses one pass. `false` if the shop closed first.
    async fn pass(&self, closed: &TVar<bool>) -> bool {
        atomically_async(|tx| {
            if closed.read(tx)? {
                return Ok(false);
            }
            let n = self.remaining.read(tx)?;
            check(n > 0)?;
            self.remaining.write(tx, n - 1)?;
            Ok(true)
        })
        .await
    }

    /// Opens the gate for its whole group and waits until everyone is through (Santa).
    fn operate(&self) {
        atomically(|tx| self.remaining.write(tx, self.capacity));
        atomically(|tx| check(self.remaining.read(tx)? == 0));
    }
}

/// A group of `capacity` members: free places left, and the gates of this batch.
#[derive(Clone)]
struct Group {
    capacity: usize,
    state: TVar<(usize, Gate, Gate)>,
}

impl Group {
    fn new(capacity: usize) -> Group {
        Group {
            capacity,
            state: TVar::new((capacity, Gate::new(capacity), Gate::new(capacity))),
        }
    }

    /// Takes a place in the group (waiting while it is full) and returns its gates; `None`
    /// if the shop closed first.
    fn join(&self, tx: &mut Tx, closed: &TVar<bool>) -> StmResult<Option<(Gate, Gate)>> {
        if closed.read(tx)? {
            return Ok(None);
        }
        let (left, g1, g2) = self.state.read(tx)?;
        check(left > 0)?;
        self.state.write(tx, (left - 1, g1.clone(), g2.clone()))?;
        Ok(Some((g1, g2)))
    }

    /// Waits until the group is full, then starts a fresh one and returns the full one's
    /// gates (Santa).
    fn await_full(&self, tx: &mut Tx) -> StmResult<(Gate, Gate)> {
        let (left, g1, g2) = self.state.read(tx)?;
        check(left == 0)?;
        let fresh = (
            self.capacity,
            Gate::new(self.capacity),
            Gate::new(self.capacity),
        );
        self.state.write(tx, fresh)?;
        Ok((g1, g2))
    }

    fn is_full(&self, tx: &mut Tx) -> StmResult<bool> {
        Ok(self.state.read(tx)?.0 == 0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Reindeer(usize),
    Elf(usize),
}

/// A reindeer's or an elf's life: a random pause (a holiday, or making toys), join a group,
/// go through Santa's in-gate, do the thing (recorded in `visits`), go out through the
/// out-gate; again, until the shop closes.
async fn helper(who: Who, group: Group, visits: TQueue<Who>, closed: TVar<bool>) -> usize {
    let (seed, max_pause_us) = match who {
        Who::Reindeer(i) => (i as u64 + 1, 200),
        Who::Elf(i) => (i as u64 + 100, 100),
    };
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut trips = 0;
    loop {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pause = Duration::from_micros(rng % max_pause_us);
        ito::sleep(pause).await.expect("a timer failed");
        let Some((in_gate, out_gate)) = atomically_async(|tx| group.join(tx, &closed)).await else {
            return trips;
        };
        if !in_gate.pass(&closed).await {
            return trips;
        }
        atomically_async(|tx| visits.push(tx, who)).await; // deliver toys / meet in the study
        if !out_gate.pass(&closed).await {
            return trips;
        }
        trips += 1;
    }
}

/// What a run did.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) rounds: usize,
    pub(crate) deliveries: usize,
    pub(crate) meetings: usize,
    /// Rounds whose group was not 9 distinct reindeer or 3 distinct elves.
    pub(crate) bad_groups: usize,
    /// Times Santa chose elves while the reindeer group was full.
    pub(crate) priority_violations: usize,
    /// Times both groups were full and Santa (rightly) chose the reindeer.
    pub(crate) both_ready: usize,
    /// The first few rounds, as Santa would say them.
    pub(crate) log: Vec<String>,
    pub(crate) elapsed: Duration,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Task {
    DeliverToys,
    MeetInStudy,
}

/// Santa's `rounds` rounds with 9 reindeer and 10 elves; then the shop closes.
pub(crate) fn run(rounds: usize) -> Report {
    let began = Instant::now();
    let reindeer = Group::new(REINDEER_GROUP);
    let elves = Group::new(ELF_GROUP);
    let visits = TQueue::new();
    let closed = TVar::new(false);
    let helpers: Vec<_> = (0..REINDEER)
        .map(|i| (Who::Reindeer(i), &reindeer))
        .chain((0..ELVES).map(|i| (Who::Elf(i), &elves)))
        .map(|(who, group)| ito::spawn(helper(who, group.clone(), visits.clone(), closed.clone())))
        .collect();

    let mut r = Report {
        rounds,
        deliveries: 0,
        meetings: 0,
        bad_groups: 0,
        priority_violations: 0,
        both_ready: 0,
        log: Vec::new(),
        elapsed: Duration::ZERO,
    };
    for round in 0..rounds {
        let (task, (in_gate, out_gate), other_full) = atomically(|tx| {
            tx.or_else(
                |tx| {
                    let gates = reindeer.await_full(tx)?;
                    Ok((Task::DeliverToys, gates, elves.is_full(tx)?))
                },
                |tx| {
                    let gates = elves.await_full(tx)?;
                    // This branch runs only if the reindeer were not all back: the same
                    // snapshot must say so.
                    Ok((Task::MeetInStudy, gates, reindeer.is_full(tx)?))
                },
            )
        });
        in_gate.operate();
        out_gate.operate();
        let group = atomically(|tx| visits.drain(tx));

        let (size, ok_kind): (usize, fn(&Who) -> bool) = match task {
            Task::DeliverToys => {
                r.deliveries += 1;
                r.both_ready += usize::from(other_full);
                (REINDEER_GROUP, |w| matches!(w, Who::Reindeer(_)))
            }
            Task::MeetInStudy => {
                r.meetings += 1;
                r.priority_violations += usize::from(other_full);
                (ELF_GROUP, |w| matches!(w, Who::Elf(_)))
            }
        };
        let mut distinct = group.clone();
        distinct.sort_by_key(|w| format!("{w:?}"));
        distinct.dedup();
        if group.len() != size || distinct.len() != size || !group.iter().all(ok_kind) {
            r.bad_groups += 1;
        }
        if round < 8 {
            let ids: Vec<String> = group
                .iter()
                .map(|w| match w {
                    Who::Reindeer(i) | Who::Elf(i) => i.to_string(),
                })
                .collect();
            r.log.push(match task {
                Task::DeliverToys => {
                    format!(
                        "Ho! Ho! Ho! let's deliver toys   (reindeer {})",
                        ids.join(" ")
                    )
                }
                Task::MeetInStudy => {
                    format!(
                        "Ho! Ho! Ho! let's meet in my study (elves {})",
                        ids.join(" ")
                    )
                }
            });
        }
    }
    atomically(|tx| closed.write(tx, true));
    for h in helpers {
        h.wait().expect("a helper failed");
    }
    r.elapsed = began.elapsed();
    r
}

fn main() {
    let r = run(1000);
    for line in &r.log {
        println!("{line}");
    }
    println!("...");
    println!(
        "{} rounds in {:.1?}: {} toy deliveries (groups of {REINDEER_GROUP} reindeer), {} study \
         meetings (groups of {ELF_GROUP} elves)",
        r.rounds, r.elapsed, r.deliveries, r.meetings
    );
    println!(
        "  groups of the wrong size or kind: {}; elves chosen while the reindeer were all back: \
         {}",
        r.bad_groups, r.priority_violations
    );
    println!(
        "  rounds where both groups were waiting and the reindeer went first: {}",
        r.both_ready
    );
    assert_eq!((r.bad_groups, r.priority_violations), (0, 0));
}
