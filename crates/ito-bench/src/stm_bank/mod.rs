//! `ito-bench stm-bank`: the STM issue's bank-transfer benchmark. `--accounts` accounts start
//! at 1000 each; each of `--threads` OS threads performs `--ops` transfers of a random amount
//! (1..=100) between two distinct random accounts, drawn by a fixed-seed xorshift generator
//! per thread (thread `i` always makes the same transfers). Transfers are unconditional
//! (balances may go negative), so every implementation does exactly the same work:
//!
//! - `ito`: one `ito::stm::TVar<i64>` per account; a transfer is
//!   `atomically(|tx| { from.modify(tx, ..)?; to.modify(tx, ..) })`.
//! - `stm-crate`: the same with the `stm` crate from crates.io (`stm::TVar`,
//!   `stm::atomically`).
//! - `mutex`: one `parking_lot::Mutex<i64>` per account; a transfer locks both, the lower
//!   index first.
//!
//! A run's clock covers the threads' transfers only: the accounts are built and the threads
//! started before it starts (they wait on a barrier). Each thread reads the clock itself when
//! it leaves the barrier and when it is done, and the run lasts from the first start to the
//! last end (a clock read by the main thread after the barrier would start late whenever the
//! main thread is not scheduled at once, which on a loaded machine made runs look faster). Afterwards the balances are summed: the total must still be `1000 * accounts`
//! (`total_ok`), else the run fails and the process exits with status 1.
//!
//! With `--audit`, one more thread sums all the balances in a single transaction (for
//! `mutex`: with every lock taken in index order) again and again while the transfers run,
//! and counts the snapshots whose sum is wrong (`audit_failures`, which must be 0). It takes
//! a core from the transfers, so its throughput is not comparable with a run without it.
//!
//! Runs are interleaved (for each repetition, for each thread count, for each impl) so that
//! the impls see the same noise. One JSON line per run; then a summary on stderr with each
//! impl's median and best throughput and the criteria on 2 threads: ito at least 3x
//! the `stm` crate, and at least 1/3 of the mutexes.

use std::cell::Cell;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::common::{CommonArgs, Defaults};
use crate::measure::{self, CpuTime, Watchdog, dedup};

/// The starting balance of every account.
const INITIAL: i64 = 1000;

/// Arguments of `stm-bank`.
#[derive(Args, Debug)]
#[command(
    about = "STM issue: random transfers between accounts on ito::stm, the stm crate and mutexes",
    long_about = "STM issue: random transfers between accounts on ito::stm, the stm crate and \
        per-account mutexes.\n\n\
        Every account starts at 1000; each of --threads OS threads makes --ops transfers of \
        1..=100 between two distinct random accounts (a fixed-seed xorshift per thread; \
        balances may go negative, so every impl does the same work). The clock covers the \
        transfers only. Runs are interleaved: for each repetition, thread count, impl. One \
        JSON line per run on stdout; a summary (tx/s, ratios, the issue's criteria) on \
        stderr. Exit status: 0 if every total was right, 1 if one was not, 2 for bad \
        arguments."
)]
pub(crate) struct StmBankArgs {
    /// Thread count(s), comma-separated [default: 2].
    #[arg(long, value_delimiter = ',', conflicts_with = "workers")]
    threads: Vec<usize>,
    /// Number of accounts (at least 2).
    #[arg(long, default_value_t = 1024)]
    accounts: usize,
    /// Transfers per thread.
    #[arg(long, default_value_t = 1_000_000)]
    ops: u64,
    /// The common options; their defaults are [`DEFAULTS`] (`--workers`: one thread count,
    /// instead of `--threads`).
    #[command(flatten)]
    pub(crate) common: CommonArgs<BankImpl>,
    /// Also run an auditor thread that sums every balance in one transaction, over and over,
    /// and counts wrong sums.
    #[arg(long)]
    audit: bool,
}

/// Which implementation runs the transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BankImpl {
    /// `ito::stm`.
    Ito,
    /// The `stm` crate from crates.io.
    StmCrate,
    /// A `parking_lot::Mutex` per account.
    Mutex,
}

impl BankImpl {
    /// The name used on the command line and in records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BankImpl::Ito => "ito",
            BankImpl::StmCrate => "stm-crate",
            BankImpl::Mutex => "mutex",
        }
    }
}

/// One run, printed as one JSON line.
#[derive(Clone, Debug, Serialize)]
struct BankRecord {
    /// Always `"stm-bank"`.
    experiment: &'static str,
    /// `ito`, `stm-crate` or `mutex`.
    #[serde(rename = "impl")]
    imp: &'static str,
    /// OS threads making transfers.
    threads: usize,
    /// Number of accounts.
    accounts: usize,
    /// Transfers per thread.
    ops: u64,
    /// Repetition index, from 0.
    rep: u32,
    /// Wall-clock seconds of all the transfers.
    seconds: Option<f64>,
    /// CPU time of the process (every thread) during the run: the transfers, and opening the
    /// accounts and starting the threads before them.
    #[serde(flatten)]
    cpu: Option<CpuTime>,
    /// `threads * ops / seconds`.
    tx_per_s: Option<f64>,
    /// The sum of the balances after the run.
    total: Option<i64>,
    /// Whether `total == 1000 * accounts`.
    total_ok: bool,
    /// STM impls: runs of the transaction closure per transfer (1 = no conflict ever).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts_per_tx: Option<f64>,
    /// With `--audit`: consistent snapshots the auditor summed during the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    audits: Option<u64>,
    /// With `--audit`: snapshots whose sum was wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    audit_failures: Option<u64>,
    /// The commit this binary was built from ([`crate::measure::commit`]).
    commit: String,
    /// CPUs available to the process.
    nproc: usize,
    /// Whether the run completed with the right total (and no failed audit).
    ok: bool,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl BankRecord {
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a BankRecord always serializes")
    }
}

/// The accounts of one implementation.
trait Bank: Sync {
    /// `n` accounts holding `initial` each.
    fn open(n: usize, initial: i64) -> Self;
    /// Moves `amount` from account `from` to account `to` (`from != to`), atomically;
    /// counts each run of a transaction's closure in `attempts`.
    fn transfer(&self, from: usize, to: usize, amount: i64, attempts: &Cell<u64>);
    /// The sum of all balances in one consistent snapshot.
    fn audit(&self) -> i64;
}

/// `ito::stm`.
struct ItoBank(Vec<ito::stm::TVar<i64>>);

impl Bank for ItoBank {
    fn open(n: usize, initial: i64) -> Self {
        ItoBank((0..n).map(|_| ito::stm::TVar::new(initial)).collect())
    }

    #[inline]
    fn transfer(&self, from: usize, to: usize, amount: i64, attempts: &Cell<u64>) {
        let (from, to) = (&self.0[from], &self.0[to]);
        ito::stm::atomically(|tx| {
            attempts.set(attempts.get() + 1);
            from.modify(tx, |b| b - amount)?;
            to.modify(tx, |b| b + amount)
        });
    }

    fn audit(&self) -> i64 {
        ito::stm::atomically(|tx| {
            let mut sum = 0;
            for a in &self.0 {
                sum += a.read(tx)?;
            }
            Ok(sum)
        })
    }
}

/// The `stm` crate.
struct StmCrateBank(Vec<stm::TVar<i64>>);

impl Bank for StmCrateBank {
    fn open(n: usize, initial: i64) -> Self {
        StmCrateBank((0..n).map(|_| stm::TVar::new(initial)).collect())
    }

    #[inline]
    fn transfer(&self, from: usize, to: usize, amount: i64, attempts: &Cell<u64>) {
        let (from, to) = (&self.0[from], &self.0[to]);
        stm::atomically(|tx| {
            attempts.set(attempts.get() + 1);
            from.modify(tx, |b| b - amount)?;
            to.modify(tx, |b| b + amount)
        });
    }

    fn audit(&self) -> i64 {
        stm::atomically(|tx| {
            let mut sum = 0;
            for a in &self.0 {
                sum += a.read(tx)?;
            }
            Ok(sum)
        })
    }
}

/// A `parking_lot::Mutex` per account, locked in index order.
struct MutexBank(Vec<parking_lot::Mutex<i64>>);

impl Bank for MutexBank {
    fn open(n: usize, initial: i64) -> Self {
        MutexBank((0..n).map(|_| parking_lot::Mutex::new(initial)).collect())
    }

    #[inline]
    fn transfer(&self, from: usize, to: usize, amount: i64, attempts: &Cell<u64>) {
        attempts.set(attempts.get() + 1);
        let (lo, hi) = if from < to { (from, to) } else { (to, from) };
        let mut a = self.0[lo].lock();
        let mut b = self.0[hi].lock();
        let (f, t) = if from < to {
            (&mut *a, &mut *b)
        } else {
            (&mut *b, &mut *a)
        };
        *f -= amount;
        *t += amount;
    }

    fn audit(&self) -> i64 {
        let guards: Vec<_> = self.0.iter().map(|m| m.lock()).collect();
        guards.iter().map(|g| **g).sum()
    }
}

/// xorshift64* (Vigna): a fixed-seed generator per thread.
struct XorShift(u64);

impl XorShift {
    fn new(thread: usize) -> Self {
        XorShift((thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-enough in `0..n` (n is small; the bias of `%` is negligible here).
    #[inline]
    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) % n as u64) as usize
    }
}

/// The transfers of thread `thread`; returns the transactions' attempts.
fn work<B: Bank>(bank: &B, accounts: usize, ops: u64, thread: usize) -> u64 {
    let mut rng = XorShift::new(thread);
    let attempts = Cell::new(0);
    for _ in 0..ops {
        let from = rng.below(accounts);
        let mut to = rng.below(accounts - 1);
        if to >= from {
            to += 1;
        }
        let amount = 1 + rng.below(100) as i64;
        bank.transfer(black_box(from), black_box(to), amount, &attempts);
    }
    attempts.get()
}

/// What one run measured.
struct Outcome {
    seconds: f64,
    total: i64,
    attempts: u64,
    audits: Option<(u64, u64)>,
}

/// One run of `B`: open the accounts, start the threads, time the transfers, sum.
fn run<B: Bank>(threads: usize, accounts: usize, ops: u64, audit: bool) -> Outcome {
    let bank = B::open(accounts, INITIAL);
    let expected = INITIAL * accounts as i64;
    let start_line = Barrier::new(threads + 1 + usize::from(audit));
    let done = AtomicBool::new(false);
    let (seconds, attempts, audits) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (bank, start_line) = (&bank, &start_line);
                s.spawn(move || {
                    start_line.wait();
                    let start = Instant::now();
                    let attempts = work(bank, accounts, ops, t);
                    (start, Instant::now(), attempts)
                })
            })
            .collect();
        let auditor = audit.then(|| {
            let (bank, done, start_line) = (&bank, &done, &start_line);
            s.spawn(move || {
                let (mut n, mut wrong) = (0u64, 0u64);
                start_line.wait();
                loop {
                    let stop = done.load(Ordering::Acquire);
                    n += 1;
                    if bank.audit() != expected {
                        wrong += 1;
                    }
                    if stop {
                        break (n, wrong);
                    }
                }
            })
        });
        start_line.wait();
        let spans: Vec<(Instant, Instant, u64)> = workers
            .into_iter()
            .map(|w| w.join().expect("a transfer thread panicked"))
            .collect();
        done.store(true, Ordering::Release);
        let first_start = spans
            .iter()
            .map(|s| s.0)
            .min()
            .expect("at least one thread");
        let last_end = spans
            .iter()
            .map(|s| s.1)
            .max()
            .expect("at least one thread");
        let seconds = last_end.duration_since(first_start).as_secs_f64();
        let attempts: u64 = spans.iter().map(|s| s.2).sum();
        let audits = auditor.map(|a| a.join().expect("the auditor panicked"));
        (seconds, attempts, audits)
    });
    Outcome {
        seconds,
        total: bank.audit(),
        attempts,
        audits,
    }
}

/// The defaults of the common options.
pub(crate) const DEFAULTS: Defaults<'static, BankImpl> = Defaults {
    imps: &[BankImpl::Ito, BankImpl::StmCrate, BankImpl::Mutex],
    workers: Some(2),
    repeat: 3,
    timeout_s: 300.0,
};

/// `ito-bench stm-bank`.
pub(crate) fn command(args: &StmBankArgs) -> ExitCode {
    let threads = match (args.common.workers, args.threads.is_empty()) {
        (Some(w), _) => vec![w],
        (None, true) => vec![2],
        (None, false) => dedup(&args.threads),
    };
    if threads.contains(&0) {
        return crate::usage_error("--threads must be at least 1");
    }
    if args.accounts < 2 {
        return crate::usage_error("--accounts must be at least 2 (a transfer needs two)");
    }
    if args.accounts as u64 > (i64::MAX / INITIAL) as u64 {
        return crate::usage_error("--accounts is too large");
    }
    if args.ops == 0 {
        return crate::usage_error("--ops must be at least 1");
    }
    let c = &args.common;
    let s = match c.resolve(DEFAULTS) {
        Ok(s) => s,
        Err(e) => return crate::usage_error(&e),
    };
    let sink = match c.sink("stm-bank.jsonl") {
        Ok(sink) => sink,
        Err(e) => return crate::usage_error(&e),
    };
    let (repeat, timeout) = (s.repeat, s.timeout);
    let imps = s.imps;
    let thread_counts = threads;
    let expected = INITIAL * args.accounts as i64;

    let mut records = Vec::new();
    let mut all_ok = true;
    for rep in 0..repeat {
        for &threads in &thread_counts {
            for &imp in &imps {
                let template = BankRecord {
                    experiment: "stm-bank",
                    imp: imp.name(),
                    threads,
                    accounts: args.accounts,
                    ops: args.ops,
                    rep,
                    seconds: None,
                    cpu: None,
                    tx_per_s: None,
                    total: None,
                    total_ok: false,
                    attempts_per_tx: None,
                    audits: None,
                    audit_failures: None,
                    commit: measure::commit(),
                    nproc: measure::nproc(),
                    ok: false,
                    error: None,
                };
                let watchdog = {
                    let (mut rec, sink) = (template.clone(), sink.clone());
                    Watchdog::start(timeout, move || {
                        rec.error = Some("timeout".to_owned());
                        sink.emit_line(&rec.to_json());
                        std::process::exit(1);
                    })
                };
                let (accounts, ops, audit) = (args.accounts, args.ops, args.audit);
                let cpu_before = CpuTime::of_self();
                let o = match imp {
                    BankImpl::Ito => run::<ItoBank>(threads, accounts, ops, audit),
                    BankImpl::StmCrate => run::<StmCrateBank>(threads, accounts, ops, audit),
                    BankImpl::Mutex => run::<MutexBank>(threads, accounts, ops, audit),
                };
                let cpu = CpuTime::of_self().since(cpu_before);
                watchdog.finish();
                let mut rec = template;
                rec.seconds = Some(o.seconds);
                rec.cpu = Some(cpu);
                rec.tx_per_s = Some((threads as u64 * ops) as f64 / o.seconds);
                rec.total = Some(o.total);
                rec.total_ok = o.total == expected;
                rec.attempts_per_tx = (imp != BankImpl::Mutex)
                    .then(|| o.attempts as f64 / (threads as u64 * ops) as f64);
                rec.audits = o.audits.map(|a| a.0);
                rec.audit_failures = o.audits.map(|a| a.1);
                rec.ok = rec.total_ok && rec.audit_failures.unwrap_or(0) == 0;
                if !rec.total_ok {
                    rec.error = Some(format!("wrong total, expected {expected}"));
                } else if !rec.ok {
                    rec.error = Some("an audit saw a wrong sum".to_owned());
                }
                all_ok &= rec.ok;
                sink.emit_line(&rec.to_json());
                records.push(rec);
            }
        }
    }
    eprint!("{}", summary(&thread_counts, &imps, &records, repeat));
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The human summary printed on stderr at the end.
fn summary(threads: &[usize], imps: &[BankImpl], records: &[BankRecord], repeat: u32) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "stm-bank summary (transfers per second over all threads; median and best of {repeat})"
    );
    let _ = writeln!(
        s,
        "{:>7} {:<9} {:>14} {:>14} {:>12}",
        "threads", "impl", "median tx/s", "best tx/s", "attempts/tx"
    );
    for &t in threads {
        // (impl, median, best)
        let mut stats: Vec<(&str, f64, f64)> = Vec::new();
        for imp in imps {
            let mut v: Vec<f64> = records
                .iter()
                .filter(|r| r.ok && r.threads == t && r.imp == imp.name())
                .filter_map(|r| r.tx_per_s)
                .collect();
            let Some(median) = measure::median(&mut v) else {
                continue;
            };
            let best = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut attempts: Vec<f64> = records
                .iter()
                .filter(|r| r.ok && r.threads == t && r.imp == imp.name())
                .filter_map(|r| r.attempts_per_tx)
                .collect();
            let attempts = match measure::median(&mut attempts) {
                Some(a) => format!("{a:.4}"),
                None => "-".to_owned(),
            };
            let _ = writeln!(
                s,
                "{t:>7} {:<9} {median:>14.0} {best:>14.0} {attempts:>12}",
                imp.name()
            );
            stats.push((imp.name(), median, best));
        }
        let get = |name: &str| stats.iter().find(|(i, _, _)| *i == name);
        let Some(&(_, ito_med, ito_best)) = get("ito") else {
            continue;
        };
        let mut notes = Vec::new();
        for (peer, min, shown) in [("stm-crate", 3.0, "3"), ("mutex", 1.0 / 3.0, "1/3")] {
            if let Some(&(_, med, best)) = get(peer) {
                let r = ito_med / med;
                let crit = if t == 2 {
                    let verdict = if r >= min { "met" } else { "NOT met" };
                    format!(" (>= {shown} on 2 threads: {verdict})")
                } else {
                    String::new()
                };
                notes.push(format!(
                    "ito/{peer} {r:.2} median, {:.2} best{crit}",
                    ito_best / best
                ));
            }
        }
        if !notes.is_empty() {
            let _ = writeln!(s, "  threads={t}: {}", notes.join("; "));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bank_keeps_the_total_under_concurrent_transfers() {
        fn check<B: Bank>() {
            let o = run::<B>(3, 8, 2000, true);
            assert_eq!(o.total, 8 * INITIAL);
            let (audits, wrong) = o.audits.unwrap();
            assert!(audits >= 1);
            assert_eq!(wrong, 0);
        }
        check::<ItoBank>();
        check::<StmCrateBank>();
        check::<MutexBank>();
    }

    #[test]
    fn transfers_are_the_same_for_every_impl() {
        // Single-threaded, the final balances depend only on the generator.
        let (ito, crate_, mutex) = (
            ItoBank::open(5, INITIAL),
            StmCrateBank::open(5, INITIAL),
            MutexBank::open(5, INITIAL),
        );
        work(&ito, 5, 1000, 0);
        work(&crate_, 5, 1000, 0);
        work(&mutex, 5, 1000, 0);
        let a: Vec<i64> = ito.0.iter().map(|v| v.read_atomic()).collect();
        let b: Vec<i64> = crate_.0.iter().map(|v| v.read_atomic()).collect();
        let c: Vec<i64> = mutex.0.iter().map(|m| *m.lock()).collect();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_ne!(a, vec![INITIAL; 5], "the transfers moved money");
        assert_eq!(ito.audit(), 5 * INITIAL);
    }

    #[test]
    fn xorshift_picks_distinct_accounts_in_range() {
        let mut r = XorShift::new(0);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let x = r.below(4);
            seen[x] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
