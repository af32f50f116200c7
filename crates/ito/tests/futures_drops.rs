//! Integration tests that the values futures hold are neither leaked nor dropped twice, through
//! promises and through every combinator.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ito::future::{first_completed_of, first_success_of, fold, sequence};
use ito::{Failure, Future, Promise};

mod support;
use support::{LONG, get, quiet_expected_panics};

// ---------------------------------------------------------------------------------------------
// No value is leaked or dropped twice
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Counts {
    created: AtomicUsize,
    dropped: AtomicUsize,
}

/// A value that counts its creations (including clones) and drops.
struct Tracked {
    v: u32,
    counts: Arc<Counts>,
}

impl Tracked {
    fn new(counts: &Arc<Counts>, v: u32) -> Self {
        counts.created.fetch_add(1, Ordering::SeqCst);
        Tracked {
            v,
            counts: counts.clone(),
        }
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        Tracked::new(&self.counts, self.v)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let before = self.counts.dropped.fetch_add(1, Ordering::SeqCst);
        assert!(
            before < self.counts.created.load(Ordering::SeqCst),
            "more drops than values"
        );
    }
}

impl PartialEq for Tracked {
    fn eq(&self, other: &Self) -> bool {
        self.v == other.v
    }
}

impl std::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tracked({})", self.v)
    }
}

/// Runs `scenario`, then checks that every value it made was dropped exactly once. Values held
/// by tasks or timers are released a moment after the futures complete, so this polls briefly.
fn no_leaks(name: &str, scenario: impl FnOnce(&Arc<Counts>)) {
    let counts = Arc::new(Counts::default());
    scenario(&counts);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let created = counts.created.load(Ordering::SeqCst);
        let dropped = counts.dropped.load(Ordering::SeqCst);
        assert!(
            dropped <= created,
            "{name}: {dropped} drops of {created} values"
        );
        if created == dropped {
            assert!(created > 0, "{name}: made no values");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {} of {created} values leaked",
            created - dropped
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn promises_do_not_leak_or_double_drop() {
    no_leaks("success and reads", |c| {
        let p = Promise::new();
        let f = p.future();
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(get(&f).unwrap().v, 1);
        assert_eq!(f.value().unwrap().unwrap().v, 1);
        assert_eq!(f.clone().wait().unwrap().v, 1);
    });
    no_leaks("values handed back", |c| {
        let p = Promise::new();
        p.success(Tracked::new(c, 1)).unwrap();
        let back = p.success(Tracked::new(c, 2)).unwrap_err();
        assert_eq!(back.0.v, 2);
        assert!(!p.try_success(Tracked::new(c, 3)));
        let back = p.complete(Ok(Tracked::new(c, 4))).unwrap_err();
        assert_eq!(back.0.unwrap().v, 4);
    });
    no_leaks("never read", |c| {
        let p = Promise::new();
        p.success(Tracked::new(c, 1)).unwrap();
        let _ = Future::successful(Tracked::new(c, 2));
        let _ = Future::<Tracked>::failed(Failure::Timeout);
    });
    no_leaks("race of completers", |c| {
        for _ in 0..50 {
            let p = Promise::new();
            let f = p.future();
            thread::scope(|s| {
                for i in 0..4 {
                    let p = &p;
                    s.spawn(move || p.try_success(Tracked::new(c, i)));
                }
            });
            assert!(get(&f).is_ok());
        }
    });
    no_leaks("completed on another thread", |c| {
        let p = Promise::new();
        let f = p.future();
        let c2 = c.clone();
        let h = thread::spawn(move || p.success(Tracked::new(&c2, 5)).unwrap());
        assert_eq!(get(&f).unwrap().v, 5);
        h.join().unwrap();
    });
    no_leaks("callbacks dropped with a broken promise or a never", |c| {
        let p = Promise::<u8>::new();
        let t = Tracked::new(c, 1);
        let f = p.future().map(move |x| t.v + u32::from(x));
        drop(p);
        assert_eq!(get(&f), Err(Failure::BrokenPromise));
        let never = Future::<u8>::never();
        let t = Tracked::new(c, 2);
        never.on_complete(move |_| drop(t));
        let t = Tracked::new(c, 3);
        let _pending = never.map(move |_| t);
    });
    no_leaks("spawned tasks", |c| {
        let c2 = c.clone();
        let f = ito::spawn_fn(move || Tracked::new(&c2, 9));
        assert_eq!(get(f).unwrap().v, 9);
        let c3 = c.clone();
        let g = ito::spawn(async move { Tracked::new(&c3, 10) });
        assert_eq!(ito::block_on(g).unwrap().v, 10);
    });
}

#[test]
fn combinators_do_not_leak_or_double_drop() {
    quiet_expected_panics();
    no_leaks("map, filter, flat_map, transform", |c| {
        let p = Promise::new();
        let f = p.future();
        let c2 = c.clone();
        let m = f.map(move |t: Tracked| Tracked::new(&c2, t.v + 1));
        let kept = f.filter(|t| t.v == 1);
        let dropped = f.filter(|t| t.v == 2);
        let fm = f.flat_map(Future::successful);
        let tr = f.transform(|r| r);
        let tw = f.transform_with(Future::from_result);
        let at = f.and_then(|_| {});
        let pa = f.map(|_| -> Tracked { panic!("expected: leak map") });
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(get(&m).unwrap().v, 2);
        assert_eq!(get(&kept).unwrap().v, 1);
        assert_eq!(get(&dropped), Err(Failure::NoSuchElement));
        assert_eq!(get(&fm).unwrap().v, 1);
        assert_eq!(get(&tr).unwrap().v, 1);
        assert_eq!(get(&tw).unwrap().v, 1);
        assert_eq!(get(&at).unwrap().v, 1);
        assert!(get(&pa).is_err());
        assert_eq!(get(&f.failure()), Err(Failure::NoSuchElement));
    });
    no_leaks("recover, recover_with, fallback_to, or_alt", |c| {
        let bad = Future::<Tracked>::failed(Failure::Timeout);
        let good = Future::successful(Tracked::new(c, 1));
        let c2 = c.clone();
        assert_eq!(
            get(&bad.recover(move |_| Tracked::new(&c2, 2))).unwrap().v,
            2
        );
        assert_eq!(get(&good.recover(|_| unreachable!())).unwrap().v, 1);
        let g2 = good.clone();
        assert_eq!(get(&bad.recover_with(move |_| g2)).unwrap().v, 1);
        assert_eq!(get(&bad.fallback_to(&good)).unwrap().v, 1);
        assert_eq!(get(&good.fallback_to(&bad)).unwrap().v, 1);
        assert_eq!(get(&bad.or_alt(&good)).unwrap().v, 1);
        let p = Promise::new();
        let alt = p.future().or_alt(&good);
        assert_eq!(get(&alt).unwrap().v, 1);
        p.success(Tracked::new(c, 3)).unwrap();
    });
    no_leaks("zip", |c| {
        let (a, b) = (Promise::new(), Promise::new());
        let z = a.future().zip(&b.future());
        a.success(Tracked::new(c, 1)).unwrap();
        b.success(Tracked::new(c, 2)).unwrap();
        let (x, y) = get(&z).unwrap();
        assert_eq!((x.v, y.v), (1, 2));

        // One side arrives, the other fails: the arrived value is still dropped.
        let (a, b) = (Promise::new(), Promise::<Tracked>::new());
        let z = a.future().zip_with(&b.future(), |x: Tracked, y| x.v + y.v);
        a.success(Tracked::new(c, 3)).unwrap();
        b.failure(Failure::Cancelled).unwrap();
        assert_eq!(get(&z), Err(Failure::Cancelled));

        // One side arrives, the other never will.
        let never = Future::<Tracked>::never();
        let z = Future::successful(Tracked::new(c, 4)).zip(&never);
        drop(never);
        assert_eq!(get(&z), Err(Failure::BrokenPromise));
    });
    no_leaks("flatten and with_timeout", |c| {
        let inner = Future::successful(Tracked::new(c, 1));
        let outer = Future::successful(inner);
        assert_eq!(get(&outer.flatten()).unwrap().v, 1);
        let p = Promise::new();
        let t = p.future().with_timeout(LONG);
        p.success(Tracked::new(c, 2)).unwrap();
        assert_eq!(get(&t).unwrap().v, 2);
        let q = Promise::new();
        let t = q.future().with_timeout(Duration::from_millis(1));
        assert_eq!(get(&t), Err(Failure::Timeout));
        q.success(Tracked::new(c, 3)).unwrap();
    });
    no_leaks("callbacks", |c| {
        let p = Promise::new();
        let f = p.future();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        f.on_success(move |t: Tracked| s.lock().unwrap().push(t));
        f.on_complete(drop);
        f.on_failure(|_| unreachable!());
        p.success(Tracked::new(c, 1)).unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
    });
    no_leaks("collections", |c| {
        let fs: Vec<_> = (0..20)
            .map(|i| Future::successful(Tracked::new(c, i)))
            .collect();
        assert_eq!(get(&sequence(fs.clone())).unwrap().len(), 20);
        assert_eq!(get(&first_completed_of(fs.clone())).unwrap().v, 0);
        assert_eq!(get(&first_success_of(fs.clone())).unwrap().v, 0);
        assert_eq!(get(&fold(fs.clone(), 0, |a, t| a + t.v)), Ok(190));
        let fs2 = fs.clone();
        let b = ito::future::traverse_bounded(0..20usize, 3, move |i| fs2[i].clone());
        assert_eq!(get(&b).unwrap().len(), 20);

        // A failure after some values arrived.
        let (ps, pf): (Vec<_>, Vec<_>) = (0..5)
            .map(|_| {
                let p = Promise::new();
                let f = p.future();
                (p, f)
            })
            .unzip();
        let all = sequence(pf);
        ps[0].success(Tracked::new(c, 0)).unwrap();
        ps[1].success(Tracked::new(c, 1)).unwrap();
        ps[2].failure(Failure::Timeout).unwrap();
        ps[3].success(Tracked::new(c, 3)).unwrap();
        assert_eq!(get(&all), Err(Failure::Timeout));
        drop(ps);
    });
    no_leaks("await", |c| {
        let f = Future::successful(Tracked::new(c, 1));
        assert_eq!(ito::block_on(async { (&f).await }).unwrap().v, 1);
        let g = f.clone();
        assert_eq!(ito::block_on(async move { g.await }).unwrap().v, 1);
        let p = Promise::new();
        let r = ito::block_on(ito::timeout(Duration::from_millis(1), p.future()));
        assert!(r.is_err());
        p.success(Tracked::new(c, 2)).unwrap();
    });
}
