//! The STM examples (`crates/ito/examples/stm_*.rs`), run small: each example file is
//! included as a module and its `run` called, and its invariants checked here.

#[path = "../examples/stm_bank.rs"]
#[allow(dead_code)] // `main` and some report fields are only for the example binary
mod stm_bank;

#[path = "../examples/stm_philosophers.rs"]
#[allow(dead_code)]
mod stm_philosophers;

#[path = "../examples/stm_santa.rs"]
#[allow(dead_code)]
mod stm_santa;

#[path = "../examples/stm_barber.rs"]
#[allow(dead_code)]
mod stm_barber;

#[test]
fn bank_transfers_wait_for_funds_and_keep_the_total() {
    let r = stm_bank::run(6, 1000);
    assert_eq!(r.transfers, 6000);
    assert_eq!(r.bad_audits, 0, "{r:?}");
    assert!(r.audits > 0);
    // All the money starts in account 0: the others' first transfers had to wait.
    assert!(r.waited > 0, "{r:?}");
    assert_eq!(r.start, r.end);
}

#[test]
fn philosophers_take_both_forks_at_once_and_all_eat() {
    for (n, rounds) in [(2, 100), (5, 200), (17, 30)] {
        let r = stm_philosophers::run(n, rounds);
        assert_eq!(r.meals, vec![rounds; n], "{r:?}");
        assert_eq!((r.bad_meals, r.half_held), (0, 0), "{r:?}");
        assert!(r.max_eating >= 1 && r.max_eating <= n / 2, "{r:?}");
    }
}

#[test]
fn santa_groups_are_whole_and_reindeer_go_first() {
    let r = stm_santa::run(200);
    assert_eq!(r.deliveries + r.meetings, 200);
    assert_eq!(r.bad_groups, 0, "{r:?}");
    assert_eq!(r.priority_violations, 0, "{r:?}");
    assert!(r.both_ready <= r.deliveries);
}

#[test]
fn barber_serves_or_turns_away_every_customer() {
    let r = stm_barber::run(3, 1000);
    assert_eq!(r.arrived, 1000);
    assert_eq!(r.served + r.turned_away, r.arrived, "{r:?}");
    assert_eq!(r.haircuts, r.served, "{r:?}");
    assert_eq!(r.out_of_order, 0, "{r:?}");
    // A one-chair shop works too.
    let r = stm_barber::run(1, 100);
    assert_eq!(r.served + r.turned_away, 100);
    assert_eq!((r.haircuts, r.out_of_order), (r.served, 0));
}

#[test]
fn philosophers_race_for_promise_forks_with_multi_try_success() {
    for (n, rounds) in [(2, 50), (5, 100), (65, 10)] {
        let r = stm_philosophers::run_race(n, rounds);
        assert_eq!(r.bad_rounds, 0, "{r:?}");
        assert!(r.min_winners >= 1 && r.max_winners <= n / 2, "{r:?}");
    }
}
