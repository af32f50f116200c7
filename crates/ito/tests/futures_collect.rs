//! Integration tests for the collection functions of `ito::future`: `sequence`, `traverse`,
//! `traverse_bounded`, `first_completed_of`, `first_success_of` and `fold`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use ito::future::{
    first_completed_of, first_success_of, fold, sequence, traverse, traverse_bounded,
};
use ito::{Failure, Future, Promise};

mod support;
use support::{get, quiet_expected_panics};

fn promises<T>(n: usize) -> (Vec<Promise<T>>, Vec<Future<T>>) {
    let ps: Vec<Promise<T>> = (0..n).map(|_| Promise::new()).collect();
    let fs = ps.iter().map(Promise::future).collect();
    (ps, fs)
}

// ---------------------------------------------------------------------------------------------
// sequence
// ---------------------------------------------------------------------------------------------

#[test]
fn sequence_keeps_input_order_whatever_the_completion_order() {
    let (ps, fs) = promises::<usize>(8);
    let all = sequence(fs);
    for (i, p) in ps.iter().enumerate().rev() {
        assert!(!all.is_completed(), "completed before input {i}");
        p.success(i * 10).unwrap();
    }
    assert_eq!(get(&all), Ok((0..8).map(|i| i * 10).collect::<Vec<_>>()));

    // Completed from several threads in a scrambled order.
    let (ps, fs) = promises::<usize>(16);
    let all = sequence(fs);
    thread::scope(|s| {
        for (i, p) in ps.into_iter().enumerate() {
            s.spawn(move || {
                thread::sleep(Duration::from_micros(((i * 7) % 5) as u64 * 200));
                p.success(i).unwrap();
            });
        }
    });
    assert_eq!(get(&all), Ok((0..16).collect::<Vec<_>>()));
}

#[test]
fn sequence_of_tasks_and_constants() {
    let fs: Vec<_> = (0..50u64)
        .map(|i| {
            if i % 2 == 0 {
                ito::spawn_fn(move || i * i).shared()
            } else {
                Future::successful(i * i)
            }
        })
        .collect();
    assert_eq!(
        get(&sequence(fs)),
        Ok((0..50u64).map(|i| i * i).collect::<Vec<_>>())
    );
}

#[test]
fn sequence_of_nothing_is_empty() {
    let all = sequence(Vec::<Future<u8>>::new());
    assert_eq!(get(&all), Ok(vec![]));
    assert_eq!(
        get(&sequence(std::iter::empty::<Future<String>>())),
        Ok(vec![])
    );
}

#[test]
fn sequence_fails_with_the_first_failure_in_time() {
    let (ps, fs) = promises::<u8>(4);
    let all = sequence(fs);
    ps[0].success(1).unwrap();
    ps[3].failure(Failure::msg("third")).unwrap();
    // Fails at once, without waiting for the pending inputs.
    assert_eq!(get(&all), Err(Failure::msg("third")));
    ps[1].failure(Failure::msg("first")).unwrap();
    ps[2].success(2).unwrap();
    assert_eq!(get(&all), Err(Failure::msg("third")));

    // A failure among never-completing inputs still completes it.
    let fs = vec![
        Future::<u8>::never(),
        Future::failed(Failure::Timeout),
        Future::never(),
    ];
    assert_eq!(get(&sequence(fs)), Err(Failure::Timeout));

    // Already failed inputs: the first one registered.
    let fs = vec![
        Future::successful(0u8),
        Future::failed(Failure::msg("a")),
        Future::failed(Failure::msg("b")),
    ];
    assert_eq!(get(&sequence(fs)), Err(Failure::msg("a")));
}

#[test]
fn sequence_waits_for_every_input() {
    let (ps, fs) = promises::<u8>(3);
    let all = sequence(fs);
    ps[0].success(0).unwrap();
    ps[2].success(2).unwrap();
    assert_eq!(all.wait_timeout(Duration::from_millis(5)), None);
    ps[1].success(1).unwrap();
    assert_eq!(get(&all), Ok(vec![0, 1, 2]));
}

// ---------------------------------------------------------------------------------------------
// traverse
// ---------------------------------------------------------------------------------------------

#[test]
fn traverse_maps_in_order() {
    let f = traverse(1..=5, |x| ito::spawn_fn(move || x * 2).shared());
    assert_eq!(get(&f), Ok(vec![2, 4, 6, 8, 10]));

    let calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    let (ps, fs) = promises::<String>(4);
    let mut fs = fs.into_iter();
    let f = traverse(["a", "b", "c", "d"], move |s| {
        c.lock().unwrap().push(s);
        fs.next().unwrap().map(move |v| format!("{s}{v}"))
    });
    // Everything is started at once, in input order.
    assert_eq!(*calls.lock().unwrap(), vec!["a", "b", "c", "d"]);
    for (i, p) in ps.iter().enumerate().rev() {
        p.success(i.to_string()).unwrap();
    }
    assert_eq!(
        get(&f),
        Ok(vec![
            "a0".to_string(),
            "b1".into(),
            "c2".into(),
            "d3".into()
        ])
    );
}

#[test]
fn traverse_of_nothing_and_failures() {
    let f = traverse(Vec::<u8>::new(), |_| -> Future<u8> { unreachable!() });
    assert_eq!(get(&f), Ok(vec![]));

    let f = traverse(0..10, |x| {
        if x == 6 {
            Future::failed(Failure::msg("six"))
        } else {
            Future::successful(x)
        }
    });
    assert_eq!(get(&f), Err(Failure::msg("six")));
}

// ---------------------------------------------------------------------------------------------
// traverse_bounded
// ---------------------------------------------------------------------------------------------

/// Runs `traverse_bounded` over `n` inputs whose futures are tasks that sleep ~1 ms, and
/// returns the results and the highest number of closures running at once.
fn bounded_high_water(n: usize, limit: usize) -> (Result<Vec<usize>, Failure>, usize) {
    let running = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let (r, m) = (running.clone(), max.clone());
    let f = traverse_bounded(0..n, limit, move |i| {
        let (r, m) = (r.clone(), m.clone());
        // Counted from the moment the future is made, not only while the task runs.
        let now = r.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        ito::spawn_fn(move || {
            thread::sleep(Duration::from_millis(1));
            r.fetch_sub(1, Ordering::SeqCst);
            i * 3
        })
        .shared()
    });
    let res = get(&f);
    (res, max.load(Ordering::SeqCst))
}

#[test]
fn traverse_bounded_never_exceeds_the_limit() {
    for limit in [1, 2, 3, 5] {
        let (res, max) = bounded_high_water(24, limit);
        assert_eq!(
            res,
            Ok((0..24).map(|i| i * 3).collect::<Vec<_>>()),
            "limit {limit}"
        );
        assert!(max <= limit, "limit {limit}: {max} in flight");
        assert!(max >= 1);
    }
}

#[test]
fn traverse_bounded_starts_the_next_input_only_when_one_completes() {
    let (ps, fs) = promises::<usize>(6);
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let mut fs = fs.into_iter();
    let f = traverse_bounded(0..6, 2, move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        fs.next().unwrap()
    });
    assert_eq!(started.load(Ordering::SeqCst), 2);
    ps[1].success(1).unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 3);
    ps[2].success(2).unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 4);
    assert!(!f.is_completed());
    // Completed out of order from another thread.
    let ps2 = ps.to_vec();
    thread::spawn(move || {
        for i in [3, 0, 5, 4] {
            ps2[i].success(i).unwrap();
        }
    })
    .join()
    .unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 6);
    assert_eq!(get(&f), Ok(vec![0, 1, 2, 3, 4, 5]));
}

#[test]
fn traverse_bounded_of_nothing_is_empty() {
    let f = traverse_bounded(Vec::<u8>::new(), 3, |_| -> Future<u8> { unreachable!() });
    assert_eq!(get(&f), Ok(vec![]));
}

#[test]
fn traverse_bounded_stops_at_the_first_failure() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let f = traverse_bounded(0..100, 1, move |x| {
        c.fetch_add(1, Ordering::SeqCst);
        if x == 3 {
            Future::failed(Failure::msg("three"))
        } else {
            Future::successful(x)
        }
    });
    assert_eq!(get(&f), Err(Failure::msg("three")));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "inputs started after the failure"
    );

    // A failure of an input that completes later, while others are in flight.
    let (ps, fs) = promises::<u8>(10);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mut fs = fs.into_iter();
    let f = traverse_bounded(0..10, 3, move |_| {
        c.fetch_add(1, Ordering::SeqCst);
        fs.next().unwrap()
    });
    ps[1].failure(Failure::Timeout).unwrap();
    assert_eq!(get(&f), Err(Failure::Timeout));
    ps[0].success(0).unwrap();
    ps[2].success(2).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(get(&f), Err(Failure::Timeout));
}

#[test]
fn traverse_bounded_panicking_closure_fails() {
    quiet_expected_panics();
    let f = traverse_bounded(0..5, 2, |x| {
        if x == 2 {
            panic!("expected: traverse_bounded");
        }
        Future::successful(x)
    });
    assert_eq!(
        get(&f),
        Err(Failure::Panic("expected: traverse_bounded".into()))
    );
}

// ---------------------------------------------------------------------------------------------
// Many already-completed futures
// ---------------------------------------------------------------------------------------------

const MANY: usize = 100_000;

#[test]
fn traverse_bounded_of_many_completed_futures_does_not_overflow() {
    for limit in [1, 4, 1000] {
        let f = traverse_bounded(0..MANY, limit, Future::successful);
        let v = get(&f).unwrap();
        assert_eq!(v.len(), MANY);
        assert!(v.iter().enumerate().all(|(i, &x)| i == x), "limit {limit}");
    }
}

#[test]
fn collections_of_many_completed_futures_do_not_overflow() {
    let fs: Vec<_> = (0..MANY).map(Future::successful).collect();
    let v = get(&sequence(fs.clone())).unwrap();
    assert_eq!(v, (0..MANY).collect::<Vec<_>>());
    let v = get(&traverse(0..MANY, Future::successful)).unwrap();
    assert_eq!(v.len(), MANY);
    assert_eq!(
        get(&fold(fs.clone(), 0u64, |a, x| a + x as u64)),
        Ok((MANY as u64 - 1) * MANY as u64 / 2)
    );
    assert_eq!(get(&first_completed_of(fs.clone())), Ok(0));
    assert_eq!(get(&first_success_of(fs)), Ok(0));
}

#[test]
fn collections_of_many_pending_futures_completed_later() {
    let (ps, fs) = promises::<usize>(20_000);
    let all = sequence(fs.clone());
    let first = first_success_of(fs.clone());
    let mut it = fs.into_iter();
    let bounded = traverse_bounded(0..20_000, 8, move |_| it.next().unwrap());
    let h = thread::spawn(move || {
        for (i, p) in ps.iter().enumerate() {
            p.success(i).unwrap();
        }
    });
    assert_eq!(get(&all).map(|v| v.len()), Ok(20_000));
    assert_eq!(get(&bounded), Ok((0..20_000).collect::<Vec<_>>()));
    assert_eq!(get(&first), Ok(0));
    h.join().unwrap();
}

// ---------------------------------------------------------------------------------------------
// first_completed_of, first_success_of
// ---------------------------------------------------------------------------------------------

#[test]
fn first_completed_of_nothing_is_no_such_element() {
    assert_eq!(
        get(&first_completed_of(Vec::<Future<u8>>::new())),
        Err(Failure::NoSuchElement)
    );
}

#[test]
fn first_completed_of_takes_the_first_in_time() {
    let (ps, fs) = promises::<u8>(3);
    let f = first_completed_of(fs);
    assert_eq!(f.wait_timeout(Duration::from_millis(5)), None);
    ps[2].success(2).unwrap();
    ps[0].success(0).unwrap();
    assert_eq!(get(&f), Ok(2));

    // A failure counts as a completion.
    let (ps, fs) = promises::<u8>(3);
    let f = first_completed_of(fs);
    ps[1].failure(Failure::Cancelled).unwrap();
    ps[0].success(0).unwrap();
    assert_eq!(get(&f), Err(Failure::Cancelled));

    let fs = vec![Future::<u8>::never(), Future::successful(2)];
    assert_eq!(get(&first_completed_of(fs)), Ok(2));

    // Completed from another thread.
    let (ps, fs) = promises::<u8>(4);
    let f = first_completed_of(fs);
    let h = thread::spawn(move || {
        thread::sleep(Duration::from_millis(1));
        ps[3].success(3).unwrap();
        ps
    });
    assert_eq!(get(&f), Ok(3));
    drop(h.join().unwrap());
    assert_eq!(get(&f), Ok(3));
}

#[test]
fn first_success_of_nothing_is_no_such_element() {
    assert_eq!(
        get(&first_success_of(Vec::<Future<u8>>::new())),
        Err(Failure::NoSuchElement)
    );
}

#[test]
fn first_success_of_skips_failures() {
    let fs = vec![
        Future::failed(Failure::Timeout),
        ito::spawn_fn(|| 3).shared(),
    ];
    assert_eq!(get(&first_success_of(fs)), Ok(3));

    let (ps, fs) = promises::<u8>(3);
    let f = first_success_of(fs);
    ps[0].failure(Failure::msg("a")).unwrap();
    ps[2].failure(Failure::msg("c")).unwrap();
    assert_eq!(f.wait_timeout(Duration::from_millis(5)), None);
    ps[1].success(1).unwrap();
    assert_eq!(get(&f), Ok(1));

    // The first success in time, not in input order.
    let (ps, fs) = promises::<u8>(3);
    let f = first_success_of(fs);
    ps[2].success(2).unwrap();
    ps[1].success(1).unwrap();
    assert_eq!(get(&f), Ok(2));

    // A success among never-completing inputs.
    let fs = vec![
        Future::never(),
        Future::failed(Failure::Timeout),
        Future::successful(7),
    ];
    assert_eq!(get(&first_success_of(fs)), Ok(7));
}

#[test]
fn first_success_of_all_failed_gives_the_last_failure() {
    let (ps, fs) = promises::<u8>(3);
    let f = first_success_of(fs);
    ps[1].failure(Failure::msg("b")).unwrap();
    ps[2].failure(Failure::msg("c")).unwrap();
    assert!(!f.is_completed());
    ps[0].failure(Failure::msg("a last")).unwrap();
    assert_eq!(get(&f), Err(Failure::msg("a last")));

    let fs = vec![
        Future::<u8>::failed(Failure::msg("x")),
        Future::failed(Failure::msg("y")),
    ];
    assert_eq!(get(&first_success_of(fs)), Err(Failure::msg("y")));
}

// ---------------------------------------------------------------------------------------------
// fold
// ---------------------------------------------------------------------------------------------

#[test]
fn fold_in_input_order() {
    let fs: Vec<_> = (1..=4).map(|i| ito::spawn_fn(move || i).shared()).collect();
    assert_eq!(get(&fold(fs, 0, |acc, x| acc + x)), Ok(10));

    // A non-commutative op shows the order.
    let (ps, fs) = promises::<char>(4);
    let f = fold(fs, String::new(), |mut acc, c| {
        acc.push(c);
        acc
    });
    for (p, c) in ps.iter().zip(['a', 'b', 'c', 'd']).rev() {
        p.success(c).unwrap();
    }
    assert_eq!(get(&f), Ok("abcd".to_string()));
}

#[test]
fn fold_of_nothing_is_zero_and_failures_propagate() {
    assert_eq!(
        get(&fold(Vec::<Future<u8>>::new(), 42u32, |a, _| a + 1)),
        Ok(42)
    );

    let fs = vec![
        Future::successful(1),
        Future::failed(Failure::msg("bad")),
        Future::successful(3),
    ];
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let f = fold(fs, 0, move |a, x| {
        c.fetch_add(1, Ordering::SeqCst);
        a + x
    });
    assert_eq!(get(&f), Err(Failure::msg("bad")));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn fold_panicking_op_fails() {
    quiet_expected_panics();
    let fs = vec![Future::successful(1), Future::successful(2)];
    let f = fold(fs, 0, |_, _| -> i32 { panic!("expected: fold") });
    assert_eq!(get(&f), Err(Failure::Panic("expected: fold".into())));
}

/// `f` completing an earlier input's promise runs that input's callback inside `f`: the
/// traversal must not hold its own lock around user code.
#[test]
fn traverse_bounded_closure_may_complete_earlier_inputs() {
    let promises: Vec<Promise<u32>> = (0..10).map(|_| Promise::new()).collect();
    let last = promises[9].clone();
    let futures: Vec<Future<u32>> = promises.iter().map(|p| p.future()).collect();
    let promises = Arc::new(Mutex::new(promises));
    let out = traverse_bounded(0..10usize, 3, move |i| {
        if i > 0 {
            let _ = promises.lock().unwrap()[i - 1].try_success(i as u32 - 1);
        }
        futures[i].clone()
    });
    assert!(!out.is_completed());
    last.success(9).unwrap();
    assert_eq!(get(&out), Ok((0..10).collect::<Vec<u32>>()));
}
