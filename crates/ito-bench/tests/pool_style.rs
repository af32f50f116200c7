//! `ito-bench pool --style`: document 003's experiment as plain blocking code (`sync`), and
//! its refusals.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args(args)
        .output()
        .expect("ito-bench runs")
}

/// The JSON lines of stdout, each parsed.
fn records(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Every mode and both callers in the sync style: one complete record each, marked `sync`,
/// every run complete (a lost signal would hang the run into the watchdog's failure).
#[test]
fn sync_style_runs_every_mode_and_caller() {
    let out = bench(&[
        "pool",
        "--style",
        "sync",
        "--mode",
        "spawn,pool,bounded,channel-pool",
        "--tasks",
        "100",
        "--runs",
        "2",
        "--sleep-ms",
        "1",
        "--impl",
        "ito",
        "--workers",
        "2",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = records(&out);
    assert_eq!(lines.len(), 4 * 2);
    for v in &lines {
        assert_eq!(v["experiment"], "pool");
        assert_eq!(v["impl"], "ito");
        assert_eq!(v["style"], "sync", "{v}");
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["tasks"], 100);
        assert_eq!(v["sleep_ms"], 1);
        assert!(v["peak_threads"].as_u64().unwrap() >= 3, "{v}");
        assert!(v["runs_per_s"].as_f64().unwrap() > 0.0, "{v}");
        for field in ["commit", "nproc", "rss_growth_bytes", "sleep_overshoot_us"] {
            assert!(v.get(field).is_some(), "missing {field}: {v}");
        }
    }
    for mode in ["spawn", "pool", "bounded", "channel-pool"] {
        for caller in ["task", "main"] {
            assert!(
                lines
                    .iter()
                    .any(|v| v["mode"] == mode && v["caller"] == caller),
                "{mode} {caller}"
            );
        }
    }
}

/// The document's semaphore count-down, in plain code, completes every run too.
#[test]
fn sync_style_counts_down_with_the_documents_semaphore() {
    let out = bench(&[
        "pool",
        "--style",
        "sync",
        "--countdown",
        "semaphore",
        "--mode",
        "bounded,channel-pool",
        "--tasks",
        "50",
        "--runs",
        "2",
        "--caller",
        "task",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let lines = records(&out);
    assert_eq!(lines.len(), 2, "sync's default --impl is ito alone");
    for v in &lines {
        assert_eq!(v["countdown"], "semaphore");
        assert_eq!(v["style"], "sync");
        assert_eq!(v["ok"], true, "{v}");
    }
}

/// The default style leaves the field out, so records read as those written before it.
#[test]
fn async_style_records_have_no_style_field() {
    let out = bench(&[
        "pool", "--mode", "spawn", "--tasks", "20", "--runs", "2", "--impl", "ito", "--caller",
        "task",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let lines = records(&out);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].get("style").is_none(), "{}", lines[0]);
    assert_eq!(lines[0]["ok"], true);
}

/// A bad `--style`, or tokio asked for in the sync style: exit status 2, one line on stderr,
/// nothing on stdout.
#[test]
fn bad_style_arguments_are_one_line_and_exit_2() {
    for args in [
        &["pool", "--style", "bogus"][..],
        &["pool", "--style", "sync", "--impl", "tokio"],
        &["pool", "--style", "sync", "--impl", "ito,tokio"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("style"), "{args:?}: {err:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
