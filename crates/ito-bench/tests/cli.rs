//! The `ito-bench` command line: bad arguments, one run of each ito style of `fib`, and the
//! `join`, `stm-bank` and `futures` experiments on small sizes.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args(args)
        .output()
        .expect("ito-bench runs")
}

/// A bad command line: exit status 2, a one-line message on stderr, nothing on stdout.
fn assert_usage_error(args: &[&str]) {
    let out = bench(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
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
        assert_usage_error(args);
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
            "user_s",
            "sys_s",
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
        assert_usage_error(args);
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

/// The JSON lines of a successful run (exit status 0), and its stderr.
fn records(args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let out = bench(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let recs = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    (recs, err)
}

#[test]
fn stm_bank_bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["stm-bank", "--threads", "0"][..],
        &["stm-bank", "--threads", "x"],
        &["stm-bank", "--accounts", "1"],
        &["stm-bank", "--ops", "0"],
        &["stm-bank", "--impl", "bogus"],
        &["stm-bank", "--repeat", "0"],
        &["stm-bank", "--timeout-s", "0"],
    ] {
        assert_usage_error(args);
    }
}

#[test]
fn stm_bank_runs_every_impl_side_by_side() {
    let (recs, err) = records(&[
        "stm-bank",
        "--threads",
        "1,2",
        "--accounts",
        "16",
        "--ops",
        "2000",
        "--repeat",
        "2",
        "--audit",
    ]);
    // Two repetitions, two thread counts, three impls, interleaved.
    assert_eq!(recs.len(), 2 * 2 * 3);
    assert_eq!(recs[0]["impl"], "ito");
    assert_eq!(recs[1]["impl"], "stm-crate");
    assert_eq!(recs[2]["impl"], "mutex");
    for r in &recs {
        assert_eq!(r["experiment"], "stm-bank");
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["total"], 16 * 1000);
        assert_eq!(r["total_ok"], true);
        assert_eq!(r["accounts"], 16);
        assert_eq!(r["ops"], 2000);
        assert!(r["tx_per_s"].as_f64().unwrap() > 0.0);
        assert!(r["seconds"].as_f64().unwrap() > 0.0);
        assert!(r["audits"].as_u64().unwrap() >= 1, "{r}");
        assert_eq!(r["audit_failures"], 0);
        assert!(r["commit"].is_string());
        assert!(r["nproc"].as_u64().unwrap() >= 1);
        match r["impl"].as_str().unwrap() {
            "mutex" => assert!(r.get("attempts_per_tx").is_none()),
            _ => assert!(r["attempts_per_tx"].as_f64().unwrap() >= 1.0, "{r}"),
        }
    }
    assert!(err.contains("ito/stm-crate"), "{err}");
    assert!(err.contains("ito/mutex"), "{err}");
    assert!(err.contains("on 2 threads"), "{err}");
}

#[test]
fn futures_bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["futures"][..],
        &["futures", "bogus"],
        &["futures", "or-alt", "--chain", "0"],
        &["futures", "or-alt", "--succeed", "middle"],
        &["futures", "or-alt", "--workers", "0"],
        &["futures", "read-seq", "--impl", "tokio"],
        &["futures", "read-seq", "--repeat", "0"],
        &[
            "futures",
            "read-concurrent",
            "--mode",
            "threads",
            "--impl",
            "tokio",
        ],
        &["futures", "read-concurrent", "--delay", "5"],
        &["futures", "first-completed", "--busy", "bogus"],
        &["futures", "first-completed", "--futures", "0"],
        &["futures", "callbacks", "--delay", "1 fortnight"],
        &["futures", "callbacks", "--timeout-s", "-1"],
        &["futures", "callbacks", "--impl", "mutex"],
        &["futures", "philosophers", "--n", "1"],
        &["futures", "philosophers", "--rounds", "0"],
        &["futures", "philosophers", "--impl", "shared"],
        &["futures", "philosophers", "--impl", "tokio"],
    ] {
        assert_usage_error(args);
    }
}

/// The fields every futures record has.
fn check_futures_record(r: &serde_json::Value, bench: &str) {
    assert_eq!(r["experiment"], "futures");
    assert_eq!(r["bench"], bench);
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["ns_per_item"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["commit"].is_string());
    assert!(r["nproc"].as_u64().unwrap() >= 1);
}

#[test]
fn futures_or_alt_and_read_seq() {
    let (recs, err) = records(&[
        "futures",
        "or-alt",
        "--chain",
        "1,3",
        "--repeat",
        "1",
        "--workers",
        "2",
    ]);
    // Two chains, two variants, three impls.
    assert_eq!(recs.len(), 2 * 2 * 3);
    for r in &recs {
        check_futures_record(r, "or-alt");
        assert!(r["batch"].as_u64().unwrap() >= 1);
        assert!(["first", "last"].contains(&r["succeed"].as_str().unwrap()));
    }
    assert!(err.contains("ito/shared"), "{err}");
    let (recs, err) = records(&["futures", "read-seq", "--reads", "10", "--repeat", "2"]);
    assert_eq!(recs.len(), 2 * 2, "ito and shared only");
    for r in &recs {
        check_futures_record(r, "read-seq");
        assert_eq!(r["reads"], 10);
    }
    assert!(!err.contains("tokio"), "{err}");
}

#[test]
fn futures_read_concurrent_and_callbacks() {
    let (recs, err) = records(&[
        "futures",
        "read-concurrent",
        "--readers",
        "3",
        "--delay",
        "100us",
        "--repeat",
        "1",
        "--workers",
        "2",
    ]);
    // threads: ito and shared; pool: the three impls.
    assert_eq!(recs.len(), 2 + 3);
    for r in &recs {
        check_futures_record(r, "read-concurrent");
        assert_eq!(r["readers"], 3);
        assert_eq!(r["delay_us"], 100);
        assert!(r["after_complete_s"].as_f64().unwrap() >= 0.0);
        assert_eq!(r.get("workers").is_some(), r["mode"] == "pool", "{r}");
    }
    assert!(err.contains("pool mode only"), "{err}");
    let (recs, err) = records(&[
        "futures",
        "callbacks",
        "--count",
        "5",
        "--delay",
        "0,100us",
        "--repeat",
        "1",
        "--workers",
        "2",
    ]);
    // ito, shared, tokio (a pool task per callback each) and ito-inline (on_complete).
    assert_eq!(recs.len(), 2 * 4);
    let imps: Vec<&str> = recs[..4]
        .iter()
        .map(|r| r["impl"].as_str().unwrap())
        .collect();
    assert_eq!(imps, ["ito", "shared", "tokio", "ito-inline"]);
    for r in &recs {
        check_futures_record(r, "callbacks");
        assert_eq!(r["count"], 5);
        assert_eq!(r.get("after_complete_s").is_some(), r["delay_us"] == 100);
    }
    assert!(err.contains("wake-ups"), "{err}");
}

#[test]
fn futures_first_completed_reports_accuracy() {
    let (recs, err) = records(&[
        "futures",
        "first-completed",
        "--futures",
        "3",
        "--repeat",
        "2",
        "--workers",
        "2",
    ]);
    // One line per (futures, impl) covering the repetitions.
    assert_eq!(recs.len(), 3);
    for r in &recs {
        check_futures_record(r, "first-completed");
        assert_eq!(r["futures"], 3);
        assert_eq!(r["reps"], 2);
        assert_eq!(r["busy"], "deadline");
        let acc = r["accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc));
        assert!(r["zero_first"].as_u64().unwrap() <= 2);
        assert!(r["faithful"].as_u64().unwrap() <= 2);
        assert!((0.0..=1.0).contains(&r["faithfulness"].as_f64().unwrap()));
        assert!(r["seconds"].as_f64().unwrap() >= 500e-6, "{r}");
    }
    assert!(err.contains("acc ito"), "{err}");
    assert!(err.contains("0-first"), "{err}");
}

#[test]
fn futures_philosophers_rounds_are_all_or_nothing() {
    let (recs, err) = records(&[
        "futures",
        "philosophers",
        "--n",
        "3,6",
        "--rounds",
        "5",
        "--repeat",
        "2",
        "--workers",
        "2",
    ]);
    // Two sizes, two repetitions, ito and mutex, interleaved.
    assert_eq!(recs.len(), 2 * 2 * 2);
    assert_eq!(recs[0]["impl"], "ito");
    assert_eq!(recs[1]["impl"], "mutex");
    for r in &recs {
        check_futures_record(r, "philosophers");
        let n = r["philosophers"].as_u64().unwrap();
        assert!([3, 6].contains(&n), "{r}");
        assert_eq!(r["rounds"], 5);
        assert_eq!(r["rounds_ok"], 5);
        assert_eq!(r["workers"], 2);
        let winners = r["winners_per_round"].as_f64().unwrap();
        assert!(winners >= 1.0 && winners <= (n / 2) as f64, "{r}");
        if r["impl"] == "ito" {
            assert_eq!(r["unforced_losses"], 0, "{r}");
        }
    }
    assert!(err.contains("ito/mutex"), "{err}");
    assert!(err.contains("win ito"), "{err}");
    assert!(err.contains("ito 10/10"), "{err}");
}

#[test]
fn futures_run_past_its_timeout_is_recorded_and_exits_1() {
    let out = bench(&[
        "futures",
        "read-concurrent",
        "--readers",
        "1",
        "--mode",
        "threads",
        "--impl",
        "ito",
        "--delay",
        "5s",
        "--timeout-s",
        "0.05",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"], "timeout");
    assert_eq!(v["bench"], "read-concurrent");
}

#[test]
fn pool_bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["pool", "--tasks", "0"][..],
        &["pool", "--pool-size", "0"],
        &["pool", "--runs", "0"],
        &["pool", "--workers", "0"],
        &["pool", "--mode", "bogus"],
        &["pool", "--impl", "rayon"],
    ] {
        assert_usage_error(args);
    }
}

/// Every mode on both impls and (by default) both callers, each configuration in its own
/// child process: one complete JSON line each, with every field the experiment reports.
#[test]
fn pool_every_mode_and_impl_prints_a_line() {
    let out = bench(&[
        "pool",
        "--tasks",
        "50",
        "--runs",
        "3",
        "--sleep-ms",
        "0,1",
        "--pool-size",
        "4",
        "--workers",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 4 * 2 * 2 * 2);
    for v in &lines {
        assert_eq!(v["experiment"], "pool");
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["tasks"], 50);
        for field in [
            "impl",
            "mode",
            "runs",
            "sleep_ms",
            "pool_size",
            "runs_per_s",
            "peak_rss_bytes",
            "rss_growth_bytes",
            "peak_threads",
            "caller",
            "commit",
            "nproc",
        ] {
            assert!(v.get(field).is_some(), "missing {field}: {v}");
        }
        assert_eq!(v["pool_size"].is_null(), v["mode"] == "spawn");
    }
    for imp in ["ito", "tokio"] {
        for mode in ["spawn", "pool", "bounded", "channel-pool"] {
            for caller in ["task", "main"] {
                assert!(
                    lines
                        .iter()
                        .any(|v| v["impl"] == imp && v["mode"] == mode && v["caller"] == caller),
                    "{imp} {mode} {caller}"
                );
            }
        }
    }
}

#[test]
fn find_par_finds_every_match_or_stops_at_the_first() {
    let dir = std::env::temp_dir().join(format!("ito-bench-find-par-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tree = dir.join("tree");
    let made = bench(&[
        "find-tree",
        "--dirs",
        "300",
        "--files",
        "300",
        "--seed",
        "3",
        "--out",
        tree.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    // Two more files with the target's name, deeper down: three matches in all.
    let mut deep: Vec<std::path::PathBuf> = std::fs::read_dir(&tree)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .take(2)
        .collect();
    deep.sort();
    for d in &deep {
        std::fs::write(d.join("ito-find-depth1-target"), "").unwrap();
    }
    for variant in ["unbounded", "sem"] {
        let run = |extra: &[&str], name: &str| {
            let mut args = vec!["find-par", "--variant", variant, "-j", "2"];
            args.extend_from_slice(extra);
            args.extend([name, tree.to_str().unwrap()]);
            let out = bench(&args);
            assert!(out.status.success(), "{variant} {extra:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(run(&[], "ito-find-missing-name"), "", "{variant}");
        let all = run(&[], "ito-find-depth1-target");
        assert_eq!(all.lines().count(), 3, "{variant}: {all}");
        assert!(all.lines().all(|l| l.ends_with("/ito-find-depth1-target")));
        let first = run(&["--first"], "ito-find-depth1-target");
        assert_eq!(first.lines().count(), 1, "{variant}: {first}");
    }
    assert_usage_error(&["find-par", "--variant", "bogus", "x", "."]);
    assert_usage_error(&["find-par", "--variant", "sem", "-j", "0", "x", "."]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_experiment_prints_the_common_options_and_their_defaults() {
    for cmd in [
        &["fib"][..],
        &["join"],
        &["stm-bank"],
        &["pool"],
        &["chain"],
        &["ping-pong"],
        &["fan-in"],
        &["futures", "or-alt"],
        &["futures", "philosophers"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let out = bench(&args);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        for option in ["--impl", "--workers", "--repeat", "--timeout-s", "--record"] {
            assert!(help.contains(option), "{cmd:?} --help lacks {option}");
        }
        let defaults = help.lines().rfind(|l| !l.trim().is_empty()).unwrap();
        assert!(
            defaults.starts_with("Defaults: --impl "),
            "{cmd:?}: {defaults}"
        );
    }
}
