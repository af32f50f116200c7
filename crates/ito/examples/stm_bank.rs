//! Bank accounts as `TVar`s: concurrent transfers that wait (`check`, i.e. `retry`) until
//! the paying account has enough money, while an auditor keeps summing every account in one
//! transaction.
//!
//! The accounts form a ring: thread `i` pays account `i + 1` from account `i`, `rounds`
//! times, amounts cycling through 1..=10. All the money starts in account 0, so every other
//! thread's first transfer has to wait for money to come round. (Every thread pays out what
//! it receives, and the bank holds `10 × accounts`, so some transfer can always go ahead:
//! nothing deadlocks.)
//!
//! Invariants checked: the total never changes and no balance is ever negative, in every
//! snapshot the auditor takes, and every account ends where it started.
//!
//! ```text
//! cargo run --release -p ito --example stm_bank
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ito::stm::{StmResult, TVar, Tx, atomically, check};

const MAX_AMOUNT: i64 = 10;

/// What a run did.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) accounts: usize,
    pub(crate) transfers: u64,
    /// Transfers that found too little money and waited for some to arrive.
    pub(crate) waited: u64,
    /// Snapshots the auditor took.
    pub(crate) audits: u64,
    /// Snapshots with the wrong total or a negative balance.
    pub(crate) bad_audits: u64,
    pub(crate) start: Vec<i64>,
    pub(crate) end: Vec<i64>,
    pub(crate) elapsed: Duration,
}

/// Moves `amount` from `from` to `to`, waiting until `from` has that much.
fn transfer(tx: &mut Tx, from: &TVar<i64>, to: &TVar<i64>, amount: i64) -> StmResult<()> {
    let balance = from.read(tx)?;
    check(balance >= amount)?;
    from.write(tx, balance - amount)?;
    to.modify(tx, |b| b + amount)
}

/// `accounts` accounts in a ring, one thread per account making `rounds` transfers.
pub(crate) fn run(accounts: usize, rounds: u64) -> Report {
    assert!(accounts >= 2);
    let total = MAX_AMOUNT * accounts as i64;
    let start: Vec<i64> = (0..accounts)
        .map(|i| if i == 0 { total } else { 0 })
        .collect();
    let bank: Vec<TVar<i64>> = start.iter().map(|&b| TVar::new(b)).collect();
    let done = AtomicBool::new(false);
    let began = Instant::now();
    let (waited, (audits, bad_audits)) = std::thread::scope(|s| {
        let auditor = s.spawn(|| {
            let (mut audits, mut bad) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                let (sum, min) = atomically(|tx| {
                    let (mut sum, mut min) = (0, i64::MAX);
                    for a in &bank {
                        let b = a.read(tx)?;
                        sum += b;
                        min = min.min(b);
                    }
                    Ok((sum, min))
                });
                audits += 1;
                if sum != total || min < 0 {
                    bad += 1;
                }
            }
            (audits, bad)
        });
        let workers: Vec<_> = (0..accounts)
            .map(|i| {
                let (from, to) = (&bank[i], &bank[(i + 1) % accounts]);
                s.spawn(move || {
                    let mut waited = 0;
                    for r in 0..rounds {
                        let amount = 1 + (r as i64 % MAX_AMOUNT);
                        // Try once without waiting, to count the transfers that had to wait.
                        let went = atomically(|tx| {
                            tx.or_else(
                                |tx| transfer(tx, from, to, amount).map(|()| true),
                                |_| Ok(false),
                            )
                        });
                        if !went {
                            waited += 1;
                            atomically(|tx| transfer(tx, from, to, amount));
                        }
                    }
                    waited
                })
            })
            .collect();
        let waited = workers.into_iter().map(|w| w.join().unwrap()).sum();
        done.store(true, Ordering::Relaxed);
        (waited, auditor.join().unwrap())
    });
    Report {
        accounts,
        transfers: accounts as u64 * rounds,
        waited,
        audits,
        bad_audits,
        start,
        end: bank.iter().map(TVar::read_atomic).collect(),
        elapsed: began.elapsed(),
    }
}

fn main() {
    let r = run(8, 20_000);
    println!(
        "{} accounts in a ring, {} threads: {} transfers of 1..={MAX_AMOUNT} in {:.1?}",
        r.accounts, r.accounts, r.transfers, r.elapsed
    );
    println!(
        "  {} transfers found too little money and waited (check -> retry) until it arrived",
        r.waited
    );
    println!(
        "  auditor: {} snapshots of all accounts, {} with a wrong total or a negative balance",
        r.audits, r.bad_audits
    );
    println!("  balances at the start: {:?}", r.start);
    println!("  balances at the end:   {:?}", r.end);
    assert_eq!(r.bad_audits, 0);
    assert_eq!(r.start, r.end);
    println!("  ok: the total never changed and every account is back where it started");
}
