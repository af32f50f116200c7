//! The four fork-join workloads of the `join` experiment, generic over [`Fork`] so that ito,
//! rayon and the sequential baseline run exactly the same (monomorphised) code.
//!
//! Cutoff semantics (the smallest legal cutoff, [`Workload::finest_cutoff`], forks at every
//! recursive call):
//!
//! - `fib`: a call `fib(m)` with `m < cutoff` runs the sequential [`sfib`]; every other call
//!   joins `fib(m-1)` and `fib(m-2)`. Finest: 2. A cutoff above `n` is plain `sfib(n)`.
//! - `tree`: a subtree of height `h < cutoff` (a leaf has height 1) is summed by a plain
//!   sequential recursion; every other node joins the sums of its two subtrees. Finest: 2
//!   (every inner node forks). A cutoff above `n` is a sequential sum. The tree (built
//!   before the clock starts) has `2^n - 1` boxed nodes laid out in depth-first order.
//! - `sort`: a slice of length `< cutoff` is merge-sorted sequentially (insertion sort for at
//!   most [`INSERTION_MAX`] elements); a longer one joins the sorts of its halves and then
//!   merges them in parallel. A merge producing `< cutoff` elements is sequential; a larger
//!   one takes the middle element of the longer run as pivot, binary-searches it in the
//!   other run, writes it to its final place and joins the two merges on either side.
//!   Finest: 2 (every slice and every merge of two or more elements forks).
//! - `nqueens`: a board with `< cutoff` rows left to fill is counted sequentially; on every
//!   other board the set of free columns of the next row is split into two halves (by
//!   count) that are joined, recursively, down to single columns, each of which places a
//!   queen and goes on to the next row. Finest: 1 (only complete boards are "sequential").

use std::hint::black_box;

use clap::ValueEnum;

use crate::fib::{fib_reference, sfib};

/// Fork-join, the one primitive the workloads use; implemented by a zero-sized type per
/// implementation so the workloads are monomorphised (no dynamic dispatch).
pub(crate) trait Fork {
    /// Runs `a` and `b`, potentially in parallel, and returns both results.
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send;
}

/// [`ito::join`].
pub(crate) struct ItoFork;

impl Fork for ItoFork {
    #[inline]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        ito::join(a, b)
    }
}

/// [`rayon::join`].
pub(crate) struct RayonFork;

impl Fork for RayonFork {
    #[inline]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        rayon::join(a, b)
    }
}

/// No fork: `a` then `b` on the calling thread.
pub(crate) struct SeqFork;

impl Fork for SeqFork {
    #[inline]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        (a(), b())
    }
}

/// Which computation to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Workload {
    /// fib(n), joining the two recursive calls.
    Fib,
    /// Sum of a balanced binary tree of 2^n - 1 heap nodes.
    Tree,
    /// Merge sort of n random u64 with a parallel merge.
    Sort,
    /// Number of solutions of the n-queens problem.
    Nqueens,
}

impl Workload {
    /// The name used on the command line and in records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Fib => "fib",
            Workload::Tree => "tree",
            Workload::Sort => "sort",
            Workload::Nqueens => "nqueens",
        }
    }

    /// The problem size used when `--n` is not given.
    pub(crate) fn default_n(self) -> u64 {
        match self {
            Workload::Fib => 42,
            Workload::Tree => 22,
            Workload::Sort => 10_000_000,
            Workload::Nqueens => 12,
        }
    }

    /// The smallest cutoff: fork at every recursive call.
    pub(crate) fn finest_cutoff(self) -> u64 {
        match self {
            Workload::Fib | Workload::Tree | Workload::Sort => 2,
            Workload::Nqueens => 1,
        }
    }

    /// The cutoffs swept when `--cutoff` is not given, finest first.
    pub(crate) fn default_cutoffs(self) -> Vec<u64> {
        match self {
            Workload::Fib => vec![2, 5, 10, 15, 20, 25],
            Workload::Tree => vec![2, 5, 8, 11, 14, 17],
            Workload::Sort => vec![2, 16, 256, 4096, 65_536, 1_048_576],
            Workload::Nqueens => vec![1, 3, 5, 7, 9, 11],
        }
    }

    /// The accepted range of `n`.
    pub(crate) fn n_range(self) -> (u64, u64) {
        match self {
            // The largest fib that fits in u64.
            Workload::Fib => (0, 93),
            // 2^25 - 1 nodes of 32 bytes (with the allocator's rounding) is 1 GiB.
            Workload::Tree => (1, 25),
            // 24 bytes per element (input, work array, scratch buffer).
            Workload::Sort => (1, 1 << 28),
            // The counts known to `nqueens_reference`.
            Workload::Nqueens => (1, 18),
        }
    }
}

// ---------------------------------------------------------------------------------------
// fib

/// fib(`n`) forking both recursive calls for `n >= c`; calls with `n < c` run [`sfib`].
pub(crate) fn fib<F: Fork>(n: u64, c: u64) -> u64 {
    if n < c {
        return sfib(n);
    }
    let (a, b) = F::join(|| fib::<F>(n - 1, c), || fib::<F>(n - 2, c));
    a + b
}

// ---------------------------------------------------------------------------------------
// tree

/// A node of the balanced binary tree; every node is a heap allocation of its own.
pub(crate) struct Node {
    value: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

/// A balanced tree of `height` levels (`2^height - 1` nodes) whose node values are their
/// heap indices (root 1, children of `i` at `2i` and `2i + 1`). Nodes are allocated parent
/// first, left subtree before right, so a depth-first sum reads memory in address order;
/// allocating children first (post-order) made the sequential sum of large subtrees about
/// twice as slow as that of small ones, a cache effect that would have skewed the sweep.
pub(crate) fn build_tree(height: u32) -> Box<Node> {
    fn build(index: u64, height: u32) -> Box<Node> {
        // Parent first: the nodes lie in memory in the order of the depth-first sums.
        let mut node = Box::new(Node {
            value: index,
            left: None,
            right: None,
        });
        if height > 1 {
            node.left = Some(build(2 * index, height - 1));
            node.right = Some(build(2 * index + 1, height - 1));
        }
        node
    }
    assert!(height >= 1, "a tree has at least one level");
    build(1, height)
}

/// The sum of the values of a tree of `height` levels built by [`build_tree`]:
/// `1 + 2 + ... + (2^height - 1)`.
pub(crate) fn tree_reference(height: u32) -> u64 {
    let nodes = (1u64 << height) - 1;
    nodes * (nodes + 1) / 2
}

/// Sequential sum of a subtree.
fn tree_seq_sum(node: &Node) -> u64 {
    let mut sum = node.value;
    if let Some(l) = &node.left {
        sum += tree_seq_sum(l);
    }
    if let Some(r) = &node.right {
        sum += tree_seq_sum(r);
    }
    sum
}

/// Sum of the subtree at `node`, of `height` levels; subtrees of height `< c` are summed
/// sequentially, other nodes join the sums of their two subtrees.
pub(crate) fn tree_sum<F: Fork>(node: &Node, height: u32, c: u32) -> u64 {
    if height < c {
        return tree_seq_sum(node);
    }
    match (&node.left, &node.right) {
        (Some(l), Some(r)) => {
            let (a, b) = F::join(
                || tree_sum::<F>(l, height - 1, c),
                || tree_sum::<F>(r, height - 1, c),
            );
            node.value + a + b
        }
        // A leaf (height 1, so only with c <= 1, which the command line rejects).
        _ => tree_seq_sum(node),
    }
}

// ---------------------------------------------------------------------------------------
// sort

/// Slices of at most this many elements are insertion-sorted by the sequential sort.
pub(crate) const INSERTION_MAX: usize = 16;

/// `n` pseudo-random u64 from a fixed-seed xorshift64*.
pub(crate) fn random_u64s(n: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        })
        .collect()
}

/// Wrapping sum and xor of the elements: equal for a slice and any permutation of it.
pub(crate) fn sum_xor(v: &[u64]) -> (u64, u64) {
    v.iter()
        .fold((0, 0), |(s, x), &e| (s.wrapping_add(e), x ^ e))
}

/// An order-dependent checksum: the wrapping sum of `v[i] * (i + 1)`.
pub(crate) fn checksum(v: &[u64]) -> u64 {
    v.iter()
        .zip(1u64..)
        .fold(0u64, |acc, (&e, i)| acc.wrapping_add(e.wrapping_mul(i)))
}

/// Sorts `v` with `buf` (of the same length) as scratch space: slices and merges of fewer
/// than `c` elements are sequential, larger ones fork. The result is in `v`.
pub(crate) fn merge_sort<F: Fork>(v: &mut [u64], buf: &mut [u64], c: usize) {
    assert_eq!(
        v.len(),
        buf.len(),
        "the scratch buffer has the length of the data"
    );
    par_sort::<F>(v, buf, false, c);
}

/// Sorts the elements of `v` into `buf` if `into_buf`, else into `v`; the other slice is
/// scratch space.
fn par_sort<F: Fork>(v: &mut [u64], buf: &mut [u64], into_buf: bool, c: usize) {
    if v.len() < c {
        seq_sort(v, buf, into_buf);
        return;
    }
    // len >= c >= 2: both halves are non-empty.
    let mid = v.len() / 2;
    {
        let (v1, v2) = v.split_at_mut(mid);
        let (b1, b2) = buf.split_at_mut(mid);
        F::join(
            || par_sort::<F>(v1, b1, !into_buf, c),
            || par_sort::<F>(v2, b2, !into_buf, c),
        );
    }
    if into_buf {
        let (a, b) = v.split_at(mid);
        par_merge::<F>(a, b, buf, c);
    } else {
        let (a, b) = buf.split_at(mid);
        par_merge::<F>(a, b, v, c);
    }
}

/// The sequential sort below the cutoff, with the same contract as [`par_sort`].
fn seq_sort(v: &mut [u64], buf: &mut [u64], into_buf: bool) {
    if v.len() <= INSERTION_MAX {
        insertion_sort(v);
        if into_buf {
            buf.copy_from_slice(v);
        }
        return;
    }
    let mid = v.len() / 2;
    {
        let (v1, v2) = v.split_at_mut(mid);
        let (b1, b2) = buf.split_at_mut(mid);
        seq_sort(v1, b1, !into_buf);
        seq_sort(v2, b2, !into_buf);
    }
    if into_buf {
        let (a, b) = v.split_at(mid);
        seq_merge(a, b, buf);
    } else {
        let (a, b) = buf.split_at(mid);
        seq_merge(a, b, v);
    }
}

fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Merges the sorted runs `a` and `b` into `out` (`a.len() + b.len()` long): sequentially
/// below `c` elements, else by splitting at the middle of the longer run.
fn par_merge<F: Fork>(a: &[u64], b: &[u64], out: &mut [u64], c: usize) {
    debug_assert_eq!(a.len() + b.len(), out.len());
    if out.len() < c {
        seq_merge(a, b, out);
        return;
    }
    // Equal keys are indistinguishable u64s, so stability does not matter.
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    // out.len() >= c >= 2, so the longer run is non-empty.
    let ma = a.len() / 2;
    let pivot = a[ma];
    let mb = b.partition_point(|&x| x < pivot);
    let (lo, rest) = out.split_at_mut(ma + mb);
    let (at, hi) = rest.split_first_mut().expect("the pivot's place");
    *at = pivot;
    F::join(
        || par_merge::<F>(&a[..ma], &b[..mb], lo, c),
        || par_merge::<F>(&a[ma + 1..], &b[mb..], hi, c),
    );
}

fn seq_merge(a: &[u64], b: &[u64], out: &mut [u64]) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
            *slot = a[i];
            i += 1;
        } else {
            *slot = b[j];
            j += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------
// nqueens

/// A partial placement: attacked columns and diagonals of the next row, and how many rows
/// are left to fill.
#[derive(Clone, Copy)]
struct Board {
    mask: u32,
    cols: u32,
    diag_l: u32,
    diag_r: u32,
    left: u32,
}

impl Board {
    fn new(n: u32) -> Self {
        Board {
            mask: (1u32 << n) - 1,
            cols: 0,
            diag_l: 0,
            diag_r: 0,
            left: n,
        }
    }

    /// Free columns of the next row.
    #[inline]
    fn free(self) -> u32 {
        self.mask & !(self.cols | self.diag_l | self.diag_r)
    }

    /// The board after placing a queen on column `bit` of the next row.
    #[inline]
    fn place(self, bit: u32) -> Board {
        Board {
            mask: self.mask,
            cols: self.cols | bit,
            diag_l: ((self.diag_l | bit) << 1) & self.mask,
            diag_r: (self.diag_r | bit) >> 1,
            left: self.left - 1,
        }
    }
}

/// Solutions of n-queens for `n <= 18` (OEIS A000170).
pub(crate) fn nqueens_reference(n: u32) -> Option<u64> {
    const KNOWN: [u64; 19] = [
        1,
        1,
        0,
        0,
        2,
        10,
        4,
        40,
        92,
        352,
        724,
        2680,
        14_200,
        73_712,
        365_596,
        2_279_184,
        14_772_512,
        95_815_104,
        666_090_624,
    ];
    KNOWN.get(n as usize).copied()
}

/// Solutions of `n`-queens; boards with fewer than `c` rows left are counted sequentially.
pub(crate) fn nqueens<F: Fork>(n: u32, c: u32) -> u64 {
    nq_board::<F>(Board::new(n), c)
}

fn nq_board<F: Fork>(b: Board, c: u32) -> u64 {
    if b.left < c {
        return nq_seq(b);
    }
    if b.left == 0 {
        return 1;
    }
    nq_split::<F>(b, b.free(), c)
}

/// Solutions with the next row's queen on one of the columns of `cand`.
fn nq_split<F: Fork>(b: Board, cand: u32, c: u32) -> u64 {
    let k = cand.count_ones();
    if k <= 1 {
        return if cand == 0 {
            0
        } else {
            nq_board::<F>(b.place(cand), c)
        };
    }
    let mut lo = 0;
    let mut rest = cand;
    for _ in 0..k / 2 {
        let bit = rest & rest.wrapping_neg();
        lo |= bit;
        rest ^= bit;
    }
    let (x, y) = F::join(|| nq_split::<F>(b, lo, c), || nq_split::<F>(b, rest, c));
    x + y
}

fn nq_seq(b: Board) -> u64 {
    if b.left == 0 {
        return 1;
    }
    let mut free = b.free();
    let mut count = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        count += nq_seq(b.place(bit));
    }
    count
}

// ---------------------------------------------------------------------------------------
// inputs

/// A workload with its input built (untimed), ready to be run any number of times.
pub(crate) enum Input {
    /// fib(n).
    Fib { n: u64 },
    /// The tree of `n` levels.
    Tree { root: Box<Node>, n: u32 },
    /// The random input, the array sorted in place, the scratch buffer (allocated here,
    /// once), and the sum, xor and sorted checksum of the input.
    Sort {
        data: Vec<u64>,
        work: Vec<u64>,
        buf: Vec<u64>,
        sum_xor: (u64, u64),
        expected: u64,
    },
    /// n-queens.
    Nqueens { n: u32 },
}

impl Input {
    /// Builds the input of `workload` of size `n` (in `Workload::n_range`).
    pub(crate) fn prepare(workload: Workload, n: u64) -> Input {
        match workload {
            Workload::Fib => Input::Fib { n },
            Workload::Tree => {
                let n = u32::try_from(n).expect("n is in range");
                Input::Tree {
                    root: build_tree(n),
                    n,
                }
            }
            Workload::Sort => {
                let len = usize::try_from(n).expect("n is in range");
                let data = random_u64s(len);
                let mut sorted = data.clone();
                sorted.sort_unstable();
                Input::Sort {
                    sum_xor: sum_xor(&data),
                    expected: checksum(&sorted),
                    work: sorted,
                    // A copy rather than `vec![0; len]`, whose pages the first run would fault in.
                    buf: data.clone(),
                    data,
                }
            }
            Workload::Nqueens => Input::Nqueens {
                n: u32::try_from(n).expect("n is in range"),
            },
        }
    }

    /// Restores the state before a run (the unsorted input); untimed.
    pub(crate) fn reset(&mut self) {
        if let Input::Sort { data, work, .. } = self {
            work.copy_from_slice(data);
        }
    }

    /// The timed computation with `cutoff` (at least the workload's finest); its raw value
    /// goes to [`Input::verify`].
    pub(crate) fn compute<F: Fork>(&mut self, cutoff: u64) -> u64 {
        let small = |c: u64| u32::try_from(c).unwrap_or(u32::MAX);
        match self {
            Input::Fib { n } => fib::<F>(*n, cutoff),
            Input::Tree { root, n } => tree_sum::<F>(root, *n, small(cutoff)),
            Input::Sort { work, buf, .. } => {
                let c = usize::try_from(cutoff).unwrap_or(usize::MAX);
                merge_sort::<F>(work, buf, c);
                black_box(work.first().copied().unwrap_or(0))
            }
            Input::Nqueens { n } => nqueens::<F>(*n, small(cutoff)),
        }
    }

    /// The `result` of a run whose computation returned `raw`, and why it is wrong if it is.
    pub(crate) fn verify(&self, raw: u64) -> (u64, Result<(), String>) {
        let expect = |want: u64| {
            if raw == want {
                Ok(())
            } else {
                Err(format!("wrong result, expected {want}"))
            }
        };
        match self {
            Input::Fib { n } => (raw, expect(fib_reference(*n))),
            Input::Tree { n, .. } => (raw, expect(tree_reference(*n))),
            Input::Nqueens { n } => (
                raw,
                nqueens_reference(*n)
                    .map_or_else(|| Err(format!("no known count for n = {n}")), expect),
            ),
            Input::Sort {
                work,
                sum_xor: sx,
                expected,
                ..
            } => {
                let sum = checksum(work);
                let verdict = if !work.is_sorted() {
                    Err("output not sorted".to_owned())
                } else if sum_xor(work) != *sx {
                    Err("output is not a permutation of the input".to_owned())
                } else if sum != *expected {
                    Err(format!("wrong checksum, expected {expected}"))
                } else {
                    Ok(())
                };
                (sum, verdict)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workload, every impl (ito on its global runtime), at a few cutoffs.
    #[test]
    fn workloads_are_right_at_every_grain() {
        let rt = ito::Runtime::builder().workers(2).build().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for (w, n) in [
            (Workload::Fib, 18),
            (Workload::Tree, 9),
            (Workload::Sort, 3000),
            (Workload::Sort, 1),
            (Workload::Nqueens, 8),
            (Workload::Nqueens, 3),
        ] {
            let mut input = Input::prepare(w, n);
            let finest = w.finest_cutoff();
            for c in [finest, finest + 1, 3, 7, 17, 100, 10_000] {
                let runs: [(&str, u64); 3] = [
                    ("ito", {
                        input.reset();
                        rt.install(|| input.compute::<ItoFork>(c))
                    }),
                    ("rayon", {
                        input.reset();
                        pool.install(|| input.compute::<RayonFork>(c))
                    }),
                    ("seq", {
                        input.reset();
                        input.compute::<SeqFork>(c)
                    }),
                ];
                for (name, raw) in runs {
                    // The sort's verdict reads the array, which every run leaves sorted.
                    let (_, verdict) = input.verify(raw);
                    assert_eq!(verdict, Ok(()), "{} n={n} c={c} {name}", w.name());
                }
            }
        }
    }

    #[test]
    fn references() {
        assert_eq!(tree_reference(1), 1);
        assert_eq!(tree_reference(3), 28);
        assert_eq!(tree_seq_sum(&build_tree(5)), tree_reference(5));
        for n in 1..=9 {
            assert_eq!(nq_seq(Board::new(n)), nqueens_reference(n).unwrap(), "{n}");
        }
        let v = random_u64s(1000);
        assert_ne!(v[0], v[1]);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(sum_xor(&s), sum_xor(&v));
        assert_ne!(checksum(&s), checksum(&v));
    }

    #[test]
    fn sort_detects_a_wrong_output() {
        let mut input = Input::prepare(Workload::Sort, 100);
        input.reset();
        input.compute::<SeqFork>(2);
        assert_eq!(input.verify(0).1, Ok(()));
        if let Input::Sort { work, .. } = &mut input {
            work[50] = work[49];
        }
        assert!(input.verify(0).1.is_err());
    }
}
