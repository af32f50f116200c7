//! Fork-join: results, panics, composition with waiting, async and other runtimes.

mod common;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = ito::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 { n } else { fib_seq(n - 1) + fib_seq(n - 2) }
}

#[test]
fn fib_on_runtimes_of_every_size() {
    for w in [1, 2, 4] {
        let rt = ito::Runtime::builder().workers(w).build().unwrap();
        assert_eq!(rt.install(|| fib(25)), fib_seq(25));
        let m = rt.metrics();
        eprintln!("workers {w}: {m:?}");
    }
}
