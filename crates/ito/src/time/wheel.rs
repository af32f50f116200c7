//! Hierarchical timing wheel: a pure data structure (no threads, no atomics,
//! no `unsafe`) that maps deadlines to values and hands back the values whose
//! deadlines have passed.
//!
//! # Layout
//!
//! Time is `u64` nanoseconds since an origin chosen by the caller. The wheel
//! counts *ticks* of `2^20` ns (about 1.05 ms). It has [`LEVELS`] = 8 levels
//! of 64 slots each; a slot of level `L` spans `64^L` ticks, so level 0 slots
//! are one tick wide, level 1 slots 64 ticks (~67 ms), level 2 ~4.3 s, level 3
//! ~4.6 min, level 4 ~4.9 h, level 5 ~13 days, level 6 ~2.3 years and level 7
//! ~146 years. Eight levels cover `20 + 6 * 8 = 68 >= 64` bits, so every `u64`
//! deadline has a place and nothing needs an overflow list.
//!
//! An entry is placed by comparing its deadline's tick with the current tick:
//! the level is the index of the highest 6-bit group in which the two differ,
//! and the slot is the deadline's value in that group. Entries due in the
//! current tick (or already due) sit in the current level 0 slot. Each level
//! keeps a `u64` bitmap of occupied slots, so the earliest non-empty slot is
//! the lowest set bit of the lowest non-empty level: every level 0 slot ends
//! before any level 1 slot starts, and so on upwards.
//!
//! # Cascading
//!
//! When [`Wheel::advance`] reaches the start of an occupied slot of a level
//! above 0, the wheel's clock moves to that slot's start and its entries are
//! re-inserted by their exact deadlines, which puts them in lower levels.
//! Every entry cascades at most `LEVELS - 1` times in its life.
//!
//! # Precision
//!
//! Entries keep their exact deadline and fire when `now >= deadline`, never
//! rounded to a tick: a level 0 slot is scanned entry by entry, and entries
//! in it that are not yet due stay in place. [`Wheel::next_wakeup`] returns
//! the exact earliest deadline whenever that entry lies in level 0, and
//! otherwise the start of the earliest occupied higher-level slot (a lower
//! bound): a driver that sleeps until it and advances then cascades and gets
//! an exact answer next.
//!
//! # Complexity
//!
//! `insert` and `cancel` are O(1): entries live in a slab (with a generation
//! per slot so stale keys are detected) and each slot list is an intrusive
//! doubly linked list by index. `advance` costs O(1) per occupied slot it
//! reaches plus O(1) per entry fired or cascaded, plus a scan of the one
//! level 0 slot it stops in; it never depends on elapsed time divided by
//! the granularity, so a jump from 0 to `10^15` ns is cheap. `next_wakeup`
//! is a few `trailing_zeros` plus, when the answer is in level 0, a scan of
//! one slot.

/// log2 of the width of a level 0 slot in nanoseconds.
const TICK_SHIFT: u32 = 20;
/// log2 of the number of slots per level.
const SLOT_BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << SLOT_BITS;
/// Mask selecting a slot index from a group of tick bits.
const SLOT_MASK: u64 = (SLOTS as u64) - 1;
/// Number of levels; `TICK_SHIFT + SLOT_BITS * LEVELS >= 64`.
const LEVELS: usize = 8;
/// End of a linked list / free list.
const NIL: usize = usize::MAX;

/// Identifies one entry of a [`Wheel`], as returned by [`Wheel::insert`].
///
/// A key stays safe to use after its entry fired or was cancelled: the slab
/// slot's generation changes when the entry leaves, so a stale key is
/// recognised and never touches a newer entry that reuses the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TimerKey {
    /// Index of the slab slot.
    index: usize,
    /// Generation of the slab slot when the entry was inserted.
    generation: u64,
}

/// One slab slot: either an entry linked into a wheel slot list, or vacant
/// and linked into the free list through `next`.
struct Node<T> {
    /// Bumped every time the slot is vacated.
    generation: u64,
    /// Exact deadline in nanoseconds.
    deadline: u64,
    /// Previous node in the wheel slot list, or `NIL`.
    prev: usize,
    /// Next node in the wheel slot list (or the free list), or `NIL`.
    next: usize,
    /// Level of the wheel slot list this node is in.
    level: u8,
    /// Slot (within `level`) of the list this node is in.
    slot: u8,
    /// The payload; `None` exactly when the slot is vacant.
    value: Option<T>,
}

/// One level of the wheel: list heads and a bitmap of non-empty slots.
struct Level {
    /// Bit `s` is set iff `heads[s] != NIL`.
    occupied: u64,
    /// Head of each slot's doubly linked list.
    heads: [usize; SLOTS],
}

/// A hierarchical timing wheel holding values of type `T` keyed by deadline.
///
/// See the [module documentation](self) for the layout and guarantees.
pub(crate) struct Wheel<T> {
    /// The wheel's clock in nanoseconds; never decreases.
    now: u64,
    /// Entry storage.
    nodes: Vec<Node<T>>,
    /// Head of the free list of vacant nodes, or `NIL`.
    free_head: usize,
    /// Number of live entries.
    len: usize,
    /// The levels, lowest (finest) first.
    levels: [Level; LEVELS],
}

/// Level and slot for `deadline` when the clock reads `now`.
fn position(now: u64, deadline: u64) -> (usize, usize) {
    let now_tick = now >> TICK_SHIFT;
    if deadline <= now {
        return (0, (now_tick & SLOT_MASK) as usize);
    }
    let tick = deadline >> TICK_SHIFT;
    let diff = tick ^ now_tick;
    if diff == 0 {
        return (0, (now_tick & SLOT_MASK) as usize);
    }
    let level = ((63 - diff.leading_zeros()) / SLOT_BITS) as usize;
    let slot = ((tick >> (SLOT_BITS * level as u32)) & SLOT_MASK) as usize;
    (level, slot)
}

/// Start time (ns) of slot `slot` of level `level` in the level block that
/// contains `now`.
fn slot_start(now: u64, level: usize, slot: usize) -> u64 {
    let now_tick = now >> TICK_SHIFT;
    let block_shift = SLOT_BITS * (level as u32 + 1);
    let block = if block_shift >= 64 {
        0
    } else {
        (now_tick >> block_shift) << block_shift
    };
    let tick = block | ((slot as u64) << (SLOT_BITS * level as u32));
    tick << TICK_SHIFT
}

impl<T> Wheel<T> {
    /// Creates an empty wheel whose clock reads 0 ns.
    pub(crate) const fn new() -> Self {
        Wheel {
            now: 0,
            nodes: Vec::new(),
            free_head: NIL,
            len: 0,
            levels: [const {
                Level {
                    occupied: 0,
                    heads: [NIL; SLOTS],
                }
            }; LEVELS],
        }
    }

    /// Adds `value` to fire at `deadline_ns` and returns its key. A deadline
    /// at or before the wheel's clock fires on the next [`advance`](Self::advance).
    /// O(1) (amortised, for the slab's growth).
    pub(crate) fn insert(&mut self, deadline_ns: u64, value: T) -> TimerKey {
        let index = if self.free_head != NIL {
            let index = self.free_head;
            let node = &mut self.nodes[index];
            self.free_head = node.next;
            node.deadline = deadline_ns;
            node.value = Some(value);
            index
        } else {
            self.nodes.push(Node {
                generation: 0,
                deadline: deadline_ns,
                prev: NIL,
                next: NIL,
                level: 0,
                slot: 0,
                value: Some(value),
            });
            self.nodes.len() - 1
        };
        self.len += 1;
        self.link(index);
        TimerKey {
            index,
            generation: self.nodes[index].generation,
        }
    }

    /// Removes the entry `key` names and returns its value, or `None` when
    /// the key is stale (the entry already fired or was cancelled). O(1).
    pub(crate) fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let node = self.nodes.get(key.index)?;
        if node.generation != key.generation || node.value.is_none() {
            return None;
        }
        self.unlink(key.index);
        self.release(key.index)
    }

    /// Number of entries in the wheel.
    #[cfg_attr(not(test), allow(dead_code))] // the driver needs only `next_wakeup`
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the wheel holds no entries.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A time at or before the earliest deadline in the wheel; exact (equal
    /// to the earliest deadline) whenever that entry lies in the lowest
    /// level. `None` when the wheel is empty. The result may be before the
    /// wheel's clock when an entry is already due.
    pub(crate) fn next_wakeup(&self) -> Option<u64> {
        let (level, slot) = self.earliest_slot()?;
        if level > 0 {
            return Some(slot_start(self.now, level, slot));
        }
        let mut min = u64::MAX;
        let mut cur = self.levels[0].heads[slot];
        while cur != NIL {
            let node = &self.nodes[cur];
            min = min.min(node.deadline);
            cur = node.next;
        }
        Some(min)
    }

    /// Moves the clock to `now_ns` (a smaller value than the clock is
    /// treated as the clock itself) and pushes every entry whose deadline is
    /// at or before the clock into `out`. Entries fire by their exact
    /// deadline, never rounded up to a tick. Entries reach `out` in order of
    /// their level 0 slot; within one slot the order is unspecified.
    pub(crate) fn advance(&mut self, now_ns: u64, out: &mut Vec<T>) {
        let target = now_ns.max(self.now);
        while let Some((level, slot)) = self.earliest_slot() {
            let start = slot_start(self.now, level, slot);
            if start > target {
                break;
            }
            self.now = self.now.max(start);
            let mut cur = self.levels[level].heads[slot];
            if level == 0 {
                while cur != NIL {
                    let next = self.nodes[cur].next;
                    if self.nodes[cur].deadline <= target {
                        self.unlink(cur);
                        if let Some(value) = self.release(cur) {
                            out.push(value);
                        }
                    }
                    cur = next;
                }
                if self.levels[0].heads[slot] != NIL {
                    // What is left is due later within this very slot, so
                    // nothing else in the wheel can be due by `target`.
                    break;
                }
            } else {
                // Cascade: the clock sits at this slot's start; re-place
                // every entry by its exact deadline, into lower levels.
                self.levels[level].heads[slot] = NIL;
                self.levels[level].occupied &= !(1u64 << slot);
                while cur != NIL {
                    let next = self.nodes[cur].next;
                    self.link(cur);
                    cur = next;
                }
            }
        }
        self.now = target;
    }

    /// Level and slot of the earliest occupied wheel slot.
    fn earliest_slot(&self) -> Option<(usize, usize)> {
        self.levels
            .iter()
            .position(|level| level.occupied != 0)
            .map(|level| {
                let slot = self.levels[level].occupied.trailing_zeros() as usize;
                (level, slot)
            })
    }

    /// Links node `index` at the head of the list its deadline belongs to.
    fn link(&mut self, index: usize) {
        let (level, slot) = position(self.now, self.nodes[index].deadline);
        let head = self.levels[level].heads[slot];
        if head != NIL {
            self.nodes[head].prev = index;
        }
        let node = &mut self.nodes[index];
        node.prev = NIL;
        node.next = head;
        node.level = level as u8;
        node.slot = slot as u8;
        let lvl = &mut self.levels[level];
        lvl.heads[slot] = index;
        lvl.occupied |= 1u64 << slot;
    }

    /// Removes node `index` from its wheel slot list.
    fn unlink(&mut self, index: usize) {
        let node = &self.nodes[index];
        let (prev, next) = (node.prev, node.next);
        let (level, slot) = (node.level as usize, node.slot as usize);
        if prev != NIL {
            self.nodes[prev].next = next;
        } else {
            let lvl = &mut self.levels[level];
            lvl.heads[slot] = next;
            if next == NIL {
                lvl.occupied &= !(1u64 << slot);
            }
        }
        if next != NIL {
            self.nodes[next].prev = prev;
        }
    }

    /// Vacates (already unlinked) node `index`, bumping its generation, and
    /// returns its value.
    fn release(&mut self, index: usize) -> Option<T> {
        let node = &mut self.nodes[index];
        let value = node.value.take();
        node.generation = node.generation.wrapping_add(1);
        node.prev = NIL;
        node.next = self.free_head;
        self.free_head = index;
        self.len -= 1;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const MS: u64 = 1_000_000;
    const SEC: u64 = 1_000 * MS;

    /// Tiny xorshift64* generator; deterministic, no dependencies.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A delay spread over all magnitudes (log-uniform-ish).
        fn delay(&mut self) -> u64 {
            let bits = self.below(65) as u32;
            if bits == 0 {
                0
            } else {
                self.next() >> (64 - bits)
            }
        }
    }

    fn advance(w: &mut Wheel<u64>, now: u64) -> Vec<u64> {
        let mut out = Vec::new();
        w.advance(now, &mut out);
        out.sort_unstable();
        out
    }

    fn deadlines() -> Vec<u64> {
        vec![
            0,
            1,
            999,
            (1 << 20) - 1,
            1 << 20,
            1_000_500,
            5 * MS + 3,
            67 * MS + 1,
            SEC,
            3 * SEC + 7,
            3_600 * SEC,
            86_400 * SEC + 11,
            30 * 86_400 * SEC,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ]
    }

    #[test]
    fn fires_at_exact_deadline_not_tick() {
        let mut w = Wheel::new();
        w.insert(1_000_500, 1u64);
        assert_eq!(w.next_wakeup(), Some(1_000_500));
        assert!(advance(&mut w, 1_000_499).is_empty());
        assert_eq!(w.next_wakeup(), Some(1_000_500));
        assert_eq!(advance(&mut w, 1_000_500), vec![1]);
        assert!(w.is_empty());
        assert_eq!(w.next_wakeup(), None);
    }

    #[test]
    fn step_by_step_each_fires_once_at_its_deadline() {
        let ds = deadlines();
        let mut w = Wheel::new();
        for (i, &d) in ds.iter().enumerate() {
            w.insert(d, i as u64);
        }
        assert_eq!(w.len(), ds.len());
        let mut fired = vec![false; ds.len()];
        let mut sorted: Vec<u64> = ds.clone();
        sorted.sort_unstable();
        sorted.dedup();
        for &d in &sorted {
            if d > 0 {
                let early = advance(&mut w, d - 1);
                assert!(early.is_empty(), "{early:?} fired at {}", d - 1);
            }
            let got = advance(&mut w, d);
            let want: Vec<u64> = (0..ds.len() as u64)
                .filter(|&i| ds[i as usize] == d)
                .collect();
            assert_eq!(got, want, "at {d}");
            for v in got {
                assert!(!fired[v as usize]);
                fired[v as usize] = true;
            }
        }
        assert!(fired.iter().all(|&f| f));
        assert!(w.is_empty());
    }

    #[test]
    fn big_jumps() {
        let ds = deadlines();
        let mut w = Wheel::new();
        for (i, &d) in ds.iter().enumerate() {
            w.insert(d, i as u64);
        }
        let mut total = 0;
        let mut prev: Option<u64> = None;
        for now in [0, 10u64.pow(15), u64::MAX / 2 - 1, u64::MAX / 2, u64::MAX] {
            let got = advance(&mut w, now);
            let want: Vec<u64> = (0..ds.len() as u64)
                .filter(|&i| {
                    let d = ds[i as usize];
                    d <= now && prev.is_none_or(|p| d > p)
                })
                .collect();
            assert_eq!(got, want, "at {now}");
            total += got.len();
            prev = Some(now);
        }
        assert_eq!(total, ds.len());
        assert!(w.is_empty());
    }

    #[test]
    fn past_deadlines_fire_on_next_advance() {
        let mut w = Wheel::new();
        assert!(advance(&mut w, 10 * SEC).is_empty());
        w.insert(5, 1u64);
        w.insert(10 * SEC, 2);
        w.insert(10 * SEC + 1, 3);
        assert_eq!(w.next_wakeup(), Some(5));
        // A clock value in the past is treated as the current clock.
        assert_eq!(advance(&mut w, 3), vec![1, 2]);
        assert_eq!(w.next_wakeup(), Some(10 * SEC + 1));
        assert_eq!(advance(&mut w, 10 * SEC + 1), vec![3]);
    }

    #[test]
    fn cancel_and_stale_keys() {
        let mut w = Wheel::new();
        let a = w.insert(5 * MS, 1u64);
        let b = w.insert(3_600 * SEC, 2);
        let c = w.insert(2 * MS, 3);
        assert_eq!(w.cancel(a), Some(1));
        assert_eq!(w.cancel(a), None);
        assert_eq!(w.len(), 2);
        assert_eq!(advance(&mut w, 10 * MS), vec![3]);
        assert_eq!(w.cancel(c), None);
        // Both freed slots are reused; the stale keys must not touch them.
        let d = w.insert(20 * MS, 4);
        let e = w.insert(30 * MS, 5);
        assert_ne!(d, a);
        assert_ne!(d, c);
        assert_eq!(w.cancel(a), None);
        assert_eq!(w.cancel(c), None);
        assert_eq!(w.len(), 3);
        assert_eq!(w.cancel(b), Some(2));
        assert_eq!(w.cancel(e), Some(5));
        assert_eq!(advance(&mut w, u64::MAX), vec![4]);
        assert_eq!(w.cancel(d), None);
        assert!(w.is_empty());
    }

    #[test]
    fn next_wakeup_bounds() {
        let mut w = Wheel::new();
        w.insert(3_600 * SEC + 12_345, 1u64);
        let nw = w.next_wakeup().unwrap_or(0);
        assert!(nw <= 3_600 * SEC + 12_345);
        w.insert(40 * MS + 7, 2);
        assert!(w.next_wakeup().unwrap_or(u64::MAX) <= 40 * MS + 7);
        w.insert(300_000, 3);
        assert_eq!(w.next_wakeup(), Some(300_000));
    }

    /// A driver that only ever sleeps until `next_wakeup` sees every entry
    /// fire exactly at its deadline, in a bounded number of wake-ups.
    #[test]
    fn driver_loop_is_exact() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut w = Wheel::new();
        let n = 500;
        let ds: Vec<u64> = (0..n).map(|_| rng.delay()).collect();
        for (i, &d) in ds.iter().enumerate() {
            w.insert(d, i);
        }
        let mut wakeups = 0;
        let mut fired = 0;
        while let Some(at) = w.next_wakeup() {
            wakeups += 1;
            assert!(wakeups <= n * LEVELS + 1);
            let mut out = Vec::new();
            w.advance(at, &mut out);
            for &i in &out {
                assert_eq!(ds[i], at, "fired late or early");
            }
            fired += out.len();
        }
        assert_eq!(fired, n);
    }

    #[test]
    fn model_against_btreemap() {
        for seed in 1..=8u64 {
            model_run(seed.wrapping_mul(0xD1B5_4A32_D192_ED03), 4_000);
        }
    }

    fn model_run(seed: u64, steps: usize) {
        let mut rng = Rng(seed | 1);
        let mut w: Wheel<u64> = Wheel::new();
        let mut model: BTreeMap<(u64, u64), TimerKey> = BTreeMap::new();
        let mut keys: Vec<(TimerKey, u64, u64)> = Vec::new(); // key, deadline, seq
        let mut now = 0u64;
        let mut seq = 0u64;
        for _ in 0..steps {
            match rng.below(10) {
                0..=4 => {
                    let d = match rng.below(8) {
                        0 => now.saturating_sub(rng.delay()),
                        1 => now.saturating_add(rng.below(1 << 21)),
                        _ => now.saturating_add(rng.delay()),
                    };
                    let key = w.insert(d, seq);
                    model.insert((d, seq), key);
                    keys.push((key, d, seq));
                    seq += 1;
                }
                5 | 6 => {
                    if keys.is_empty() {
                        continue;
                    }
                    let i = rng.below(keys.len() as u64) as usize;
                    let (key, d, s) = keys[i];
                    let want = model.remove(&(d, s)).map(|_| s);
                    assert_eq!(w.cancel(key), want);
                    if rng.below(4) == 0 {
                        keys.swap_remove(i);
                    }
                }
                _ => {
                    let to = match rng.below(6) {
                        0 => now.saturating_sub(rng.below(1 << 30)),
                        1 => now.saturating_add(rng.delay()),
                        2 => model.keys().next().map_or(now, |&(d, _)| d),
                        _ => now.saturating_add(rng.below(1 << 24)),
                    };
                    now = now.max(to);
                    let got = advance(&mut w, to);
                    let mut want = Vec::new();
                    while let Some(entry) = model.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        want.push(entry.key().1);
                        entry.remove();
                    }
                    want.sort_unstable();
                    assert_eq!(got, want, "seed {seed} advance to {to}");
                }
            }
            assert_eq!(w.len(), model.len());
            let earliest = model.keys().next().map(|&(d, _)| d);
            let nw = w.next_wakeup();
            assert_eq!(nw.is_some(), earliest.is_some());
            if let (Some(nw), Some(e)) = (nw, earliest) {
                assert!(nw <= e, "next_wakeup {nw} > earliest {e}");
                if position(now, e).0 == 0 {
                    assert_eq!(nw, e, "level 0 entry must give exact wakeup");
                }
            }
        }
    }
}

#[cfg(test)]
mod driver_invariant {
    use super::Wheel;

    /// The timer thread sleeps until `next_wakeup` after each `advance(now)`: if that could
    /// return a time at or before `now`, the thread would spin. Real clocks: small steps,
    /// deadlines a few µs to ms ahead (and some behind the wheel's clock), random cancels.
    #[test]
    fn after_advance_next_wakeup_is_in_the_future() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut w = Wheel::new();
        let mut keys = Vec::new();
        let mut now = 5_000_000_000u64;
        let mut out = Vec::new();
        for step in 0..200_000 {
            match rnd() % 4 {
                0 | 1 => {
                    let lag = rnd() % 3_000_000;
                    let d = (now + rnd() % 200_000).saturating_sub(lag / 4);
                    keys.push(w.insert(d, step));
                }
                2 if !keys.is_empty() => {
                    let k = keys.swap_remove((rnd() as usize) % keys.len());
                    let _ = w.cancel(k);
                }
                _ => now += rnd() % 300_000,
            }
            out.clear();
            w.advance(now, &mut out);
            if let Some(at) = w.next_wakeup() {
                assert!(at > now, "step {step}: next_wakeup {at} <= now {now}");
            }
        }
    }
}
