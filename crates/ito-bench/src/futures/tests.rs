//! Unit tests of the `futures` benchmarks.

use super::*;

#[test]
fn delays_parse() {
    assert_eq!(parse_delay("0"), Ok(Duration::ZERO));
    assert_eq!(parse_delay("1ms"), Ok(Duration::from_millis(1)));
    assert_eq!(parse_delay("250us"), Ok(Duration::from_micros(250)));
    assert_eq!(parse_delay("2s"), Ok(Duration::from_secs(2)));
    assert!(parse_delay("5").is_err());
    assert!(parse_delay("-1ms").is_err());
    assert!(parse_delay("xms").is_err());
}

#[test]
fn every_or_alt_chain_reads_the_successful_alternative() {
    for succeed in [Succeed::First, Succeed::Last] {
        for chain in [1, 2, 10] {
            assert!(or_alt_ito(chain, succeed), "ito {chain} {succeed:?}");
            assert!(or_alt_shared(chain, succeed), "shared {chain} {succeed:?}");
            assert!(or_alt_tokio(chain, succeed), "tokio {chain} {succeed:?}");
        }
    }
}

#[test]
fn first_completed_finds_the_first_on_every_impl() {
    let imps = [FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio];
    let pools = Pools::new(&imps, 2).unwrap();
    for imp in imps {
        for busy in [Busy::Deadline, Busy::Duration] {
            let race = first_completed_once(&pools, imp, 4, busy);
            assert!(race.winner < 4, "{imp:?}");
            assert!(race.earliest < 4, "{imp:?}");
            assert!(race.seconds >= 500e-6, "{imp:?}: {}", race.seconds);
        }
    }
}

#[test]
fn check_round_finds_what_is_not_all_or_nothing() {
    let (t, f) = (true, false);
    // 5 philosophers: 0 and 2 ate (forks 0, 1 and 2, 3), fork 4 is on the table.
    let holder = [Some(0), Some(0), Some(2), Some(2), None];
    assert_eq!(check_round(&[t, f, t, f, f], &holder, true), Ok(0));
    // 0 alone ate: 3 lost with no winning neighbour (forks 3 and 4 on the table).
    let alone = [Some(0), Some(0), None, None, None];
    assert_eq!(check_round(&[t, f, f, f, f], &alone, false), Ok(2));
    assert!(check_round(&[t, f, f, f, f], &alone, true).is_err());
    // A fork taken by a loser, a winner with one fork, a fork with a stranger, neighbours
    // who both ate, nobody who ate.
    let half = [Some(0), Some(0), Some(2), None, None];
    assert!(check_round(&[t, f, f, f, f], &half, false).is_err());
    assert!(check_round(&[t, f, t, f, f], &half, false).is_err());
    let stranger = [Some(0), Some(0), Some(4), None, None];
    assert!(check_round(&[t, f, f, f, t], &stranger, false).is_err());
    let both = [Some(0), Some(1), Some(1), None, None];
    assert!(check_round(&[t, t, f, f, f], &both, false).is_err());
    assert!(check_round(&[f; 5], &[None; 5], false).is_err());
}

#[test]
fn philosopher_rounds_are_all_or_nothing_on_both_impls() {
    let imps = [FutImpl::Ito, FutImpl::Mutex];
    let pools = Pools::new(&imps, 2).unwrap();
    for imp in imps {
        for n in [2, 3, 7] {
            let run = philosophers_once(&pools, imp, n, 20);
            assert_eq!(run.rounds_ok, 20, "{imp:?} {n}: {:?}", run.first_error);
            assert!(
                run.winners >= 20 && run.winners <= 20 * (n / 2),
                "{imp:?} {n}"
            );
            assert!(run.seconds > 0.0);
        }
    }
}

#[test]
fn a_mutex_philosopher_takes_both_forks_or_neither() {
    let fresh = || -> Vec<MutexFork> { (0..3).map(|_| parking_lot::Mutex::new(None)).collect() };
    let forks = fresh();
    assert!(take_both_mutex(&forks, 2)); // forks 2 and 0
    assert!(!take_both_mutex(&forks, 0)); // fork 0 is taken: fork 1 stays
    assert!(!take_both_mutex(&forks, 1)); // fork 2 is taken: fork 1 stays
    assert_eq!(
        forks.iter().map(|f| *f.lock()).collect::<Vec<_>>(),
        [Some(2), None, Some(2)]
    );
    // A fork locked for a moment by a neighbour: the try fails, and takes nothing.
    let forks = fresh();
    let held = forks[1].lock();
    assert!(!take_both_mutex(&forks, 0));
    drop(held);
    assert_eq!(
        forks.iter().map(|f| *f.lock()).collect::<Vec<_>>(),
        [None; 3]
    );
    assert!(take_both_mutex(&forks, 0));
}

#[test]
fn concurrent_readers_and_callbacks_all_see_the_value() {
    let imps = [FutImpl::Ito, FutImpl::Shared, FutImpl::Tokio];
    let pools = Pools::new(&imps, 2).unwrap();
    for imp in imps {
        let modes: &[Mode] = if imp == FutImpl::Tokio {
            &[Mode::Pool]
        } else {
            &[Mode::Threads, Mode::Pool]
        };
        for &mode in modes {
            let t = read_concurrent_once(&pools, imp, mode, 5, Duration::from_micros(100));
            assert!(t.ok, "{imp:?} {mode:?}");
            assert!(t.seconds >= 100e-6);
        }
        for delay in [Duration::ZERO, Duration::from_micros(100)] {
            let t = callbacks_once(&pools, imp, 7, delay);
            assert!(t.ok, "{imp:?} {delay:?}");
            assert_eq!(t.after_complete.is_some(), !delay.is_zero());
        }
    }
}
