//! `ito-bench seeds --pictures only` at the smoke size: every timeline configuration (three
//! find programs, four fib styles, the chain) leaves a well-formed SVG with its summary, and
//! the report shows each in its document's section.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ito-pictures-test-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

/// Checks that `text` is well-formed XML as far as an SVG needs: every tag closes in order,
/// attribute values are quoted, and no stray `<` or `&` is left in text. Returns the root
/// element's name.
fn well_formed(text: &str) -> Result<String, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut root = None;
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open])?;
        rest = &rest[open..];
        if let Some(r) = rest.strip_prefix("<?") {
            rest = &r[r.find("?>").ok_or("an unclosed <?")? + 2..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->").ok_or("an unclosed comment")? + 3..];
            continue;
        }
        let close = rest.find('>').ok_or("an unclosed tag")?;
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().ok_or(format!("</{name}> closes nothing"))?;
            if top != name.trim() {
                return Err(format!("<{top}> closed by </{name}>"));
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag
            .split_whitespace()
            .next()
            .ok_or("an empty tag")?
            .to_owned();
        if tag.matches('"').count() % 2 != 0 {
            return Err(format!("unbalanced quotes in <{tag}>"));
        }
        if stack.is_empty() {
            if root.is_some() {
                return Err(format!("a second root element <{name}>"));
            }
            root = Some(name.clone());
        }
        if !self_closing {
            stack.push(name);
        }
    }
    check_text(rest)?;
    match (stack.pop(), root) {
        (Some(open), _) => Err(format!("<{open}> never closed")),
        (None, Some(root)) => Ok(root),
        (None, None) => Err("no element".to_owned()),
    }
}

/// Text between tags: every `&` starts an entity.
fn check_text(text: &str) -> Result<(), String> {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
        let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity)
            || entity.starts_with("&#");
        if !known {
            return Err(format!("a stray '&' in text: {entity:?}"));
        }
    }
    Ok(())
}

#[test]
fn the_xml_check_catches_what_a_browser_would_refuse() {
    assert_eq!(
        well_formed(
            "<?xml version=\"1.0\"?><svg a=\"1\"><g><rect/></g><text>a &amp; b</text></svg>"
        ),
        Ok("svg".to_owned())
    );
    assert!(well_formed("<svg><g></svg>").is_err());
    assert!(well_formed("<svg><text>a & b</text></svg>").is_err());
    assert!(well_formed("<svg a=\"1></svg>").is_err());
    assert!(well_formed("<svg></svg><svg></svg>").is_err());
    assert!(well_formed("<svg>").is_err());
}

#[test]
fn every_timeline_of_the_seeds_run_is_drawn_and_reported() {
    let out = temp_dir("seeds");
    let run = Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args([
            "seeds",
            "--smoke",
            "--pictures",
            "only",
            "--peers",
            "none",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("ito-bench runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    let names = [
        "000-fib-flat",
        "000-fib-wait",
        "000-fib-async",
        "000-fib-join",
        "001-chain",
        "002-find-seq",
        "002-find-par",
        "002-find-par-sem",
    ];
    for name in names {
        let svg = fs::read_to_string(out.join(format!("traces/{name}.svg")))
            .unwrap_or_else(|e| panic!("{name}.svg: {e}"));
        assert_eq!(well_formed(&svg), Ok("svg".to_owned()), "{name}.svg");
        for what in [
            "ito-worker-0",
            "ito-worker-1",
            "threads running tasks",
            "parked",
        ] {
            assert!(svg.contains(what), "{name}.svg has no {what:?}");
        }
        let summary: Value = serde_json::from_str(
            &fs::read_to_string(out.join(format!("traces/{name}.summary.json"))).unwrap(),
        )
        .unwrap();
        assert!(summary["span_ms"].as_f64().unwrap() > 0.0, "{name}");
        assert!(
            report.contains(&format!("](traces/{name}.svg)")),
            "the report does not show {name}"
        );
    }
    // find_seq spawns only its root task, find_par one more per directory (the smoke tree
    // has 200), find_par_sem no more than that.
    let spawns = |name: &str| -> u64 {
        let text = fs::read_to_string(out.join(format!("traces/{name}.summary.json"))).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["spawns"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(spawns("002-find-seq"), 1);
    assert_eq!(spawns("002-find-par"), 201);
    assert!(spawns("002-find-par-sem") <= 201);
    assert!(spawns("001-chain") > 1000);
    // The document's own words sit beside its pictures, and the traces stay out of git.
    assert!(report.contains("find_par_sem"));
    assert!(report.contains("水色"));
    let ignore = fs::read_to_string(out.join("traces/.gitignore")).unwrap();
    assert!(ignore.contains("*.json") && ignore.contains("!*.summary.json"));
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_subcommand_that_writes_no_trace_is_a_clear_error() {
    let out = temp_dir("none");
    let run = Command::new(env!("CARGO_BIN_EXE_ito-bench"))
        .args(["trace", "record", "--name", "x", "--dir"])
        .arg(&out)
        .args(["--", "find-tree", "--dirs", "1", "--files", "1", "--out"])
        .arg(out.join("tree"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("left no trace"), "{err}");
    assert!(!out.join("x.svg").exists());
    let _ = fs::remove_dir_all(&out);
}
