//! The `ito-bench` command line: bad arguments, and one run of each ito style.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args(args)
        .output()
        .expect("ito-bench runs")
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["fib", "--cutoff", "1"][..],
        &["fib", "--style", "bogus"],
        &["fib", "--impl", "tokio", "--style", "flat"],
        &["fib", "--workers", "0"],
        &["no-such-command"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn every_ito_style_prints_a_correct_json_line() {
    for style in ["wait", "flat", "async"] {
        let out = bench(&[
            "fib",
            "--n",
            "20",
            "--cutoff",
            "8",
            "--style",
            style,
            "--workers",
            "2",
        ]);
        assert_eq!(out.status.code(), Some(0), "{style}");
        let line = String::from_utf8(out.stdout).unwrap();
        let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
        assert_eq!(v["result"], 6765, "{style}");
        assert_eq!(v["ok"], true);
        assert_eq!(v["style"], style);
        for field in [
            "experiment",
            "impl",
            "n",
            "cutoff",
            "workers",
            "seconds",
            "tasks",
            "peak_threads",
            "rss_bytes",
            "commit",
            "nproc",
        ] {
            assert!(v.get(field).is_some(), "{style}: missing {field}");
        }
    }
}
