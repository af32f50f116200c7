//! The `ito-bench` command line: bad arguments, one run of each ito style of `fib`, and the
//! `join` experiment on small sizes.

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

#[test]
fn join_bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["join", "--workload", "bogus"][..],
        &["join"],
        &["join", "--workload", "fib", "--impl", "tokio"],
        &["join", "--workload", "fib", "--cutoff", "1"],
        &["join", "--workload", "nqueens", "--cutoff", "0"],
        &["join", "--workload", "fib", "--n", "94"],
        &["join", "--workload", "nqueens", "--n", "19"],
        &["join", "--workload", "fib,tree,sort", "--n", "1,2"],
        &["join", "--workload", "fib", "--workers", "0"],
        &["join", "--workload", "fib", "--repeat", "0"],
        &["join", "--workload", "fib", "--timeout-s", "0"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn join_runs_every_workload_and_impl() {
    let out = bench(&[
        "join",
        "--workload",
        "fib,tree,sort,nqueens",
        "--impl",
        "ito,rayon,seq",
        "--n",
        "20,10,10000,8",
        "--workers",
        "2",
        "--repeat",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let recs: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // Six default cutoffs per workload, three impls.
    assert_eq!(recs.len(), 4 * 6 * 3, "{stdout}");
    for (workload, n, result, finest) in [
        ("fib", 20, Some(6765), 2),
        ("tree", 10, Some(1023 * 1024 / 2), 2),
        ("sort", 10000, None, 2),
        ("nqueens", 8, Some(92), 1),
    ] {
        for imp in ["ito", "rayon", "seq"] {
            let runs: Vec<_> = recs
                .iter()
                .filter(|r| r["workload"] == workload && r["impl"] == imp)
                .collect();
            assert_eq!(runs.len(), 6, "{workload} {imp}");
            assert_eq!(
                runs[0]["cutoff"], finest,
                "{workload}: the finest cutoff first"
            );
            for r in runs {
                assert_eq!(r["ok"], true, "{r}");
                assert_eq!(r["experiment"], "join");
                assert_eq!(r["n"], n);
                assert_eq!(r["workers"], if imp == "seq" { 1 } else { 2 });
                assert!(r["seconds"].as_f64().unwrap() >= 0.0);
                assert!(r["rss_bytes"].as_u64().unwrap() > 0);
                assert!(r["commit"].is_string());
                assert!(r["nproc"].as_u64().unwrap() >= 1);
                match result {
                    Some(v) => assert_eq!(r["result"], v, "{r}"),
                    None => assert!(r["result"].is_u64(), "{r}"),
                }
            }
        }
    }
    // The sorted array's checksum does not depend on the impl or the cutoff.
    let sums: Vec<_> = recs
        .iter()
        .filter(|r| r["workload"] == "sort")
        .map(|r| r["result"].clone())
        .collect();
    assert!(sums.windows(2).all(|w| w[0] == w[1]));
    for w in ["fib", "tree", "sort", "nqueens"] {
        assert!(err.contains(&format!("  {w} n=")), "summary of {w}: {err}");
    }
    assert!(err.contains("ito best/rayon best"), "{err}");
}

#[test]
fn join_with_one_cutoff_and_one_size() {
    let out = bench(&[
        "join",
        "--workload",
        "nqueens,sort",
        "--impl",
        "ito",
        "--n",
        "6",
        "--cutoff",
        "3,2,3",
        "--workers",
        "1",
        "--repeat",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let recs: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Two workloads, two distinct cutoffs, two repetitions, one impl.
    assert_eq!(recs.len(), 8, "{stdout}");
    assert!(recs.iter().all(|r| r["ok"] == true && r["n"] == 6));
    assert_eq!(recs[0]["result"], 4, "6-queens has 4 solutions");
    assert_eq!(
        recs.iter()
            .map(|r| r["cutoff"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [3, 3, 2, 2, 3, 3, 2, 2]
    );
}

#[test]
fn join_run_past_its_timeout_is_recorded_and_exits_1() {
    let out = bench(&[
        "join",
        "--workload",
        "fib",
        "--n",
        "40",
        "--cutoff",
        "41",
        "--impl",
        "seq",
        "--timeout-s",
        "0.05",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"], "timeout");
    assert_eq!(v["workload"], "fib");
}
