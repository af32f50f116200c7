//! Tracing: the exported file parses as JSON, its counts match the runtime's `Metrics`, user
//! events keep their order, flows pair up, and a runtime with tracing off records nothing.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// A fresh path in the temporary directory for test `name`.
fn trace_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ito-trace-{name}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A runtime of `workers` workers traced to `path`.
fn traced(workers: usize, path: &PathBuf) -> ito::Runtime {
    ito::Runtime::builder()
        .workers(workers)
        .trace(path)
        .build()
        .unwrap()
}

/// The trace's events.
fn events(path: &PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the trace file exists");
    let doc: Value = serde_json::from_str(&text).expect("the trace is JSON");
    doc["traceEvents"]
        .as_array()
        .expect("a traceEvents array")
        .clone()
}

fn count(evs: &[Value], ph: &str, name: impl Fn(&str) -> bool) -> u64 {
    evs.iter()
        .filter(|e| e["ph"] == ph && name(e["name"].as_str().unwrap_or("")))
        .count() as u64
}

/// Waits until every worker sleeps, so that the counters stand still.
fn quiesce(rt: &ito::Runtime) -> ito::Metrics {
    loop {
        let m = rt.metrics();
        if m.sleeping == rt.workers() {
            std::thread::sleep(Duration::from_millis(5));
            if rt.metrics() == m {
                return m;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A tree of async tasks: each spawns two children and awaits them.
fn tree(depth: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
    Box::pin(async move {
        if depth == 0 {
            return 1;
        }
        let a = ito::spawn(tree(depth - 1));
        let b = ito::spawn(tree(depth - 1));
        a.await.unwrap() + b.await.unwrap()
    })
}

#[test]
fn counts_match_the_metrics() {
    let path = trace_path("counts");
    let rt = traced(2, &path);
    // Tasks spawned from outside, from workers, woken by other tasks, and a join.
    let futures: Vec<_> = (0..200u64).map(|i| rt.spawn_fn(move || i * 2)).collect();
    for (i, f) in futures.into_iter().enumerate() {
        assert_eq!(f.wait(), Ok(i as u64 * 2));
    }
    assert_eq!(rt.block_on(rt.spawn(tree(8))), Ok(256));
    let (a, b) = rt.join(|| 1, || 2);
    assert_eq!((a, b), (1, 2));
    let m = quiesce(&rt);
    rt.write_trace().unwrap();
    assert_eq!(
        rt.metrics(),
        m,
        "the counters moved while the trace was written"
    );
    let evs = events(&path);
    assert!(m.spawned >= 200 + 511);
    assert_eq!(count(&evs, "X", |n| n == "poll"), m.polled);
    assert_eq!(count(&evs, "i", |n| n == "spawn"), m.spawned);
    assert_eq!(count(&evs, "X", |n| n.starts_with("park: ")), m.parks);
    assert_eq!(count_slot_steals(&evs), m.stolen);
    assert_eq!(count(&evs, "i", |n| n == "join steal"), m.join_steals);
    assert_eq!(count(&evs, "X", |n| n == "join job"), m.join_steals);
    assert_eq!(
        count(&evs, "i", |n| n == "compensation start"),
        m.compensations
    );
    // Every flow that ends started: spawn and wake flows pair by id.
    let starts: std::collections::HashSet<u64> = evs
        .iter()
        .filter(|e| e["ph"] == "s")
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert_eq!(
        starts.len() as u64,
        count(&evs, "i", |n| n == "spawn" || n == "wake")
    );
    let ends: Vec<u64> = evs
        .iter()
        .filter(|e| e["ph"] == "f")
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert!(!ends.is_empty());
    assert!(ends.iter().all(|id| starts.contains(id)));
    // Every spawned task ran once: each spawn flow ends at a run.
    let spawn_flows_ended = evs
        .iter()
        .filter(|e| e["ph"] == "f" && e["name"] == "spawn")
        .count() as u64;
    assert_eq!(spawn_flows_ended, m.spawned);
    // Each runtime thread has a named track.
    let names: Vec<&str> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .filter(|n| n.starts_with("ito-worker-"))
            .count()
            == 2
    );
    drop(rt);
    std::fs::remove_file(&path).unwrap();
}

/// Steals from other threads' slots (not from the injector); every steal takes a task.
fn count_slot_steals(evs: &[Value]) -> u64 {
    evs.iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "steal")
        .inspect(|e| assert!(e["args"]["n"].as_u64().unwrap() >= 1))
        .filter(|e| e["args"]["from"].is_u64())
        .count() as u64
}

#[test]
fn user_events_and_spans_keep_their_order() {
    let path = trace_path("user");
    let rt = traced(1, &path);
    rt.block_on(async {
        ito::trace::event("first \"quoted\"");
        let span = ito::trace::span("outer");
        ito::trace::event("second");
        drop(span);
        ito::trace::event("third");
    });
    // On a worker too.
    rt.spawn_fn(|| ito::trace::event("on a worker"))
        .wait()
        .unwrap();
    drop(rt); // writes the file
    let evs = events(&path);
    let user: Vec<(&str, f64, u64)> = evs
        .iter()
        .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with("user: ")))
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = user.iter().map(|u| u.0).collect();
    assert_eq!(
        names,
        [
            "user: first \"quoted\"",
            "user: second",
            "user: third",
            "user: on a worker"
        ]
    );
    assert!(user.windows(2).all(|w| w[0].1 <= w[1].1));
    assert_eq!(
        user[0].2, user[2].2,
        "the block_on thread's events share a track"
    );
    assert_ne!(user[0].2, user[3].2, "the worker has its own track");
    let span = evs
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "outer")
        .expect("the span");
    let (start, dur) = (span["ts"].as_f64().unwrap(), span["dur"].as_f64().unwrap());
    assert!(start >= user[0].1 && start <= user[1].1);
    assert!(start + dur >= user[1].1 && start + dur <= user[2].1);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn blocked_waits_show_why() {
    let path = trace_path("blocked");
    let rt = traced(1, &path);
    let gate = ito::Promise::<u8>::new();
    let g = gate.future();
    let waiter = rt.spawn_fn(move || g.wait().unwrap());
    // A wait in ito suspends the waiter until the gate opens; the worker goes on.
    while rt.metrics().suspends == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(gate.try_success(7));
    assert_eq!(waiter.wait(), Ok(7));
    // A block outside ito holds its thread: the worker is compensated meanwhile.
    let (tx, rx) = std::sync::mpsc::channel::<u8>();
    let blocker = rt.spawn_fn(move || ito::block_in_place(|| rx.recv().unwrap()));
    while rt.metrics().compensations == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    tx.send(8).unwrap();
    assert_eq!(blocker.wait(), Ok(8));
    drop(rt);
    let evs = events(&path);
    assert_eq!(count(&evs, "i", |n| n == "task suspended"), 1);
    assert_eq!(count(&evs, "i", |n| n == "task resumed"), 1);
    assert_eq!(count(&evs, "X", |n| n == "blocked: block_in_place"), 1);
    assert!(count(&evs, "i", |n| n == "compensation start") >= 1);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn tracing_off_records_nothing() {
    let rt = ito::Runtime::builder().workers(1).build().unwrap();
    let err = rt.write_trace().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    rt.block_on(async {
        ito::trace::event("ignored");
        let _s = ito::trace::span("ignored");
        assert_eq!(
            ito::trace::write().unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    });
}

#[test]
fn an_unwritable_path_is_an_error() {
    let path = std::env::temp_dir()
        .join(format!("ito-no-such-dir-{}", std::process::id()))
        .join("t.json");
    let rt = traced(1, &path);
    assert_eq!(
        rt.write_trace().unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
    assert!(!path.exists());
}

/// Run by `ito_trace_traces_the_global_runtime_until_exit` in a child process with
/// `ITO_TRACE` set: the global runtime runs tasks and a user event, and the process exits.
#[test]
#[ignore = "run in a child process with ITO_TRACE set"]
fn global_runtime_child() {
    assert!(
        std::env::var_os("ITO_TRACE").is_some(),
        "run with ITO_TRACE"
    );
    let fs: Vec<_> = (0..10u32).map(|i| ito::spawn_fn(move || i)).collect();
    for (i, f) in fs.into_iter().enumerate() {
        assert_eq!(f.wait(), Ok(i as u32));
    }
    ito::spawn_fn(|| ito::trace::event("global"))
        .wait()
        .unwrap();
    // A sleep on the global runtime goes to the process's timer driver; one that may have
    // needed no timer is marked, and another follows.
    ito::spawn(async {
        while !sleep_timed(Duration::from_millis(1)).await {
            ito::trace::event("unsure sleep");
        }
    })
    .wait()
    .unwrap();
}

#[test]
fn ito_trace_traces_the_global_runtime_until_exit() {
    let path = trace_path("global");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "global_runtime_child",
            "--test-threads=1",
        ])
        .env("ITO_TRACE", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&path); // written at exit
    assert!(count(&evs, "i", |n| n == "spawn") >= 11);
    assert!(count(&evs, "X", |n| n == "poll") >= 11);
    assert_eq!(count(&evs, "i", |n| n == "user: global"), 1);
    let unsure = count(&evs, "i", |n| n == "user: unsure sleep");
    let fired = timers_fired(&evs);
    assert!((1..=1 + unsure).contains(&fired), "{fired} fired");
    assert!(evs.iter().any(|e| {
        e["args"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("ito-global-worker-"))
    }));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn processes_show_their_spawn_and_exit() {
    use ito::process::{self, Mailbox};
    let path = trace_path("process");
    let rt = traced(2, &path);
    let (tx, rx) = std::sync::mpsc::channel();
    rt.block_on(async move {
        let mut next = process::spawn(move |mut mb: Mailbox<u32>| async move {
            tx.send(mb.recv().await).unwrap();
        });
        for _ in 0..50 {
            let to = next;
            next = process::spawn(move |mut mb: Mailbox<u32>| async move {
                let _ = to.send(mb.recv().await + 1);
            });
        }
        next.send(0).unwrap();
    });
    assert_eq!(rx.recv().unwrap(), 50);
    let killed = rt.block_on(async {
        let p = process::spawn(|mut mb: Mailbox<()>| async move { mb.recv().await });
        p.kill();
        p.on_exit().await
    });
    assert_eq!(killed, Ok(process::Exit::Killed));
    drop(rt);
    let evs = events(&path);
    assert_eq!(count(&evs, "i", |n| n == "process spawn"), 52);
    let exits: Vec<bool> = evs
        .iter()
        .filter(|e| e["name"] == "process exit")
        .map(|e| e["args"]["normal"].as_bool().unwrap())
        .collect();
    assert_eq!(exits.len(), 52);
    assert_eq!(exits.iter().filter(|n| !**n).count(), 1);
    std::fs::remove_file(&path).unwrap();
}

/// The callbacks the trace's `timer fire` events say were fired, in total; every one on the
/// timer thread's track.
fn timers_fired(evs: &[Value]) -> u64 {
    let timer_tids: std::collections::HashSet<u64> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["args"]["name"] == "ito-timer")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    evs.iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "timer fire")
        .inspect(|e| assert!(timer_tids.contains(&e["tid"].as_u64().unwrap())))
        .map(|e| e["args"]["n"].as_u64().unwrap())
        .inspect(|n| assert!(*n >= 1))
        .sum()
}

/// Sleeps for `d`; returns whether the sleep surely went through the timer thread. A sleep
/// whose deadline has passed when it starts completes at once, with no timer: that happens
/// only if more than `d` went by since `before`, which is checked after the start.
async fn sleep_timed(d: Duration) -> bool {
    let before = std::time::Instant::now();
    let nap = ito::sleep_until(before + d);
    let sure = before.elapsed() < d;
    nap.await.unwrap();
    sure
}

#[test]
fn timer_fires_count_every_sleep() {
    let path = trace_path("timers");
    let rt = traced(2, &path);
    // 4 tasks sleep 5 times each (and again after a sleep that may have needed no timer):
    // 20 timers, fired in batches of one or more.
    let sleepers: Vec<_> = (0..4u64)
        .map(|i| {
            rt.spawn(async move {
                let mut unsure = 0;
                let mut j = 0;
                while j < 5 {
                    if sleep_timed(Duration::from_micros(200 * (i + j + 1))).await {
                        j += 1;
                    } else {
                        unsure += 1;
                    }
                }
                unsure
            })
        })
        .collect();
    let unsure: u64 = sleepers.into_iter().map(|s| s.wait().unwrap()).sum();
    drop(rt);
    let fired = timers_fired(&events(&path));
    assert!((20..=20 + unsure).contains(&fired), "{fired} fired");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn named_tasks_show_their_names_on_their_runs() {
    let path = trace_path("named");
    let rt = traced(2, &path);
    let gate = ito::Promise::<u8>::new();
    let g = gate.future();
    rt.block_on(async {
        // An async task that runs twice: before its wait and after.
        let conn = ito::named("conn \"a\"").spawn(async move { g.await.unwrap() + 1 });
        let crunch = rt.named("crunch").spawn_fn(|| (1..=10u32).sum::<u32>());
        let plain = ito::spawn_fn(|| 5u8);
        assert_eq!(crunch.await, Ok(55));
        assert_eq!(plain.await, Ok(5));
        assert!(gate.try_success(1));
        assert_eq!(conn.await, Ok(2));
    });
    let unnamed: Vec<_> = (0..20u32).map(|i| rt.spawn_fn(move || i)).collect();
    for u in unnamed {
        u.wait().unwrap();
    }
    drop(rt);
    let evs = events(&path);
    // Each spawn's name, by task id, in time order (an id may be reused once its task ended).
    let mut spawns: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "spawn")
        .collect();
    let mut runs: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with("poll"))
        .collect();
    spawns.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    runs.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    let mut name_of = std::collections::HashMap::new();
    let mut next = 0;
    let mut runs_named = std::collections::HashMap::<&str, u32>::new();
    for r in &runs {
        while next < spawns.len() && spawns[next]["ts"].as_f64() <= r["ts"].as_f64() {
            let s = spawns[next];
            name_of.insert(
                s["args"]["task"].as_str().unwrap(),
                s["args"]["name"].as_str(),
            );
            next += 1;
        }
        let task = r["args"]["task"].as_str().unwrap();
        let expected = name_of.get(task).copied().flatten();
        assert_eq!(r["args"]["name"].as_str(), expected, "{r}");
        if let Some(n) = expected {
            *runs_named.entry(n).or_default() += 1;
        }
    }
    assert!(runs_named["conn \"a\""] >= 2, "{runs_named:?}");
    assert_eq!(runs_named["crunch"], 1);
    assert_eq!(runs_named.len(), 2);
    assert!(runs.len() >= 24, "the unnamed tasks ran too");
    std::fs::remove_file(&path).unwrap();
}

/// fib by `ito::join`, with no cutoff.
fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = ito::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn stolen_join_jobs_are_slices() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let path = trace_path("join-jobs");
    let rt = traced(2, &path);
    let taken = AtomicBool::new(false);
    let (a, b) = rt.install(|| {
        ito::join(
            || {
                // Held here until the other worker steals the second side: at least one steal.
                while !taken.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                fib(18)
            },
            || {
                taken.store(true, Ordering::Release);
                fib(18)
            },
        )
    });
    assert_eq!((a, b), (2584, 2584));
    let m = quiesce(&rt);
    rt.write_trace().unwrap();
    let evs = events(&path);
    assert!(m.join_steals >= 1);
    assert_eq!(count(&evs, "i", |n| n == "join steal"), m.join_steals);
    assert_eq!(count(&evs, "X", |n| n == "join job"), m.join_steals);
    // Each job's slice starts at its steal, on the thief's track.
    let steals: std::collections::HashSet<(u64, String)> = evs
        .iter()
        .filter(|e| e["name"] == "join steal")
        .map(|e| (e["tid"].as_u64().unwrap(), e["ts"].to_string()))
        .collect();
    let jobs = evs.iter().filter(|e| e["name"] == "join job");
    for j in jobs {
        let at = j["ts"].as_f64().unwrap();
        assert!(
            steals
                .iter()
                .any(|(tid, ts)| *tid == j["tid"].as_u64().unwrap()
                    && ts.parse::<f64>().unwrap() <= at),
            "{j}"
        );
    }
    drop(rt);
    std::fs::remove_file(&path).unwrap();
}
