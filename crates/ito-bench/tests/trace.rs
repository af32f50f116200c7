//! `ito-bench trace draw`: a trace ito recorded draws as an SVG with a bar per thread; a
//! missing or malformed file is an error.

use std::path::PathBuf;
use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args(args)
        .output()
        .expect("ito-bench runs")
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ito-bench-trace-{name}-{}", std::process::id()))
}

/// fib with a task per call above a cutoff, waiting for its children (so workers block and
/// compensation threads run).
fn fib(n: u64) -> u64 {
    if n < 12 {
        return (1..=n).fold((0, 1), |(a, b), _| (b, a + b)).0;
    }
    let a = ito::spawn_fn(move || fib(n - 1));
    let b = fib(n - 2);
    a.wait().unwrap() + b
}

#[test]
fn a_recorded_trace_draws_with_a_bar_per_thread() {
    let file = tmp("fib.json");
    let svg = tmp("fib.svg");
    let rt = ito::Runtime::builder()
        .workers(2)
        .trace(&file)
        .build()
        .unwrap();
    assert_eq!(rt.spawn_fn(|| fib(20)).wait(), Ok(6765));
    drop(rt);
    let out = bench(&[
        "trace",
        "draw",
        file.to_str().unwrap(),
        "--out",
        svg.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    for name in [
        "ito-worker-0",
        "ito-worker-1",
        "threads running tasks",
        "searching",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
    // The running colour is there: tasks ran.
    assert!(text.contains("#2EA043"));
    std::fs::remove_file(&file).unwrap();
    std::fs::remove_file(&svg).unwrap();
}

#[test]
fn a_missing_or_malformed_trace_is_a_one_line_error() {
    let missing = tmp("missing.json");
    let bad = tmp("bad.json");
    std::fs::write(&bad, "{\"not\": \"a trace\"}").unwrap();
    for f in [&missing, &bad] {
        let out = bench(&["trace", "draw", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    std::fs::remove_file(&bad).unwrap();
}
