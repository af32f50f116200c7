//! Scratch smoke test (removed before commit).
use std::time::Instant;
fn sfib(n: u64) -> u64 { if n < 2 { n } else { sfib(n - 1) + sfib(n - 2) } }
fn fw(n: u64, c: u64) -> ito::Future<u64> {
    if n < c { return ito::spawn_fn(move || sfib(n)); }
    ito::spawn_fn(move || { let a = fw(n - 1, c); let b = fw(n - 2, c); a.wait().unwrap() + b.wait().unwrap() })
}
fn ff(n: u64, c: u64) -> ito::Future<u64> {
    if n < c { return ito::spawn_fn(move || sfib(n)); }
    ito::spawn_fn(move || { let a = ff(n - 1, c); let b = ff(n - 2, c); a.zip(&b).map(|(x, y)| x + y) }).flatten()
}
fn fa(n: u64, c: u64) -> ito::Future<u64> {
    if n < c { return ito::spawn(async move { sfib(n) }); }
    ito::spawn(async move { let a = fa(n - 1, c); let b = fa(n - 2, c); a.await.unwrap() + b.await.unwrap() })
}
fn main() {
    let n: u64 = std::env::args().nth(1).map_or(30, |s| s.parse().unwrap());
    let c: u64 = std::env::args().nth(2).map_or(10, |s| s.parse().unwrap());
    let w: usize = std::env::args().nth(3).map_or(2, |s| s.parse().unwrap());
    let rt = ito::Runtime::builder().workers(w).build().unwrap();
    let t = Instant::now(); let s = sfib(n); println!("seq {s} {:?}", t.elapsed());
    for (name, f) in [("wait", fw as fn(u64,u64)->ito::Future<u64>), ("flat", ff), ("async", fa)] {
        let m0 = rt.metrics();
        let t = Instant::now();
        let r = rt.spawn_fn(move || f(n, c)).wait().unwrap().wait();
        let m = rt.metrics();
        println!("{name} {:?} {:?} spawned={} helped={} comp={} peak_threads={} stolen={}", r, t.elapsed(), m.spawned - m0.spawned, m.helped - m0.helped, m.compensations, m.peak_threads, m.stolen - m0.stolen);
    }
}
