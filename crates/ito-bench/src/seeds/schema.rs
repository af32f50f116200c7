//! The JSON schema of every experiment's line: the fields the report and the plots read, and
//! their types. A line that does not match is kept, but flagged (`schema_error`) and left
//! out of the analysis.

use serde_json::Value;

/// The type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A string.
    Str,
    /// A non-negative integer.
    UInt,
    /// Any number.
    Num,
    /// `true` or `false`.
    Bool,
}

/// When a field must hold a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    /// Always.
    Always,
    /// When the run succeeded (`ok` and not `skipped`); otherwise it may be missing or null.
    Measured,
}

use Kind::{Bool, Num, Str, UInt};
use When::{Always, Measured};

/// Fields every line has.
const COMMON: &[(&str, Kind, When)] = &[
    ("experiment", Str, Always),
    ("ok", Bool, Always),
    ("commit", Str, Always),
    ("nproc", UInt, Always),
];

/// The fields of each experiment (besides [`COMMON`]).
fn fields(experiment: &str, bench: Option<&str>) -> Option<&'static [(&'static str, Kind, When)]> {
    Some(match (experiment, bench) {
        ("fib", _) => &[
            ("impl", Str, Always),
            ("style", Str, Always),
            ("n", UInt, Always),
            ("cutoff", UInt, Always),
            ("workers", UInt, Always),
            ("result", UInt, Measured),
            ("seconds", Num, Measured),
            ("tasks", UInt, Measured),
            ("peak_threads", UInt, Measured),
            ("rss_bytes", UInt, Measured),
        ],
        ("join", _) => &[
            ("workload", Str, Always),
            ("impl", Str, Always),
            ("n", UInt, Always),
            ("cutoff", UInt, Always),
            ("workers", UInt, Always),
            ("rep", UInt, Always),
            ("seconds", Num, Measured),
            ("result", UInt, Measured),
        ],
        ("stm-bank", _) => &[
            ("impl", Str, Always),
            ("threads", UInt, Always),
            ("accounts", UInt, Always),
            ("ops", UInt, Always),
            ("rep", UInt, Always),
            ("seconds", Num, Measured),
            ("tx_per_s", Num, Measured),
            ("total_ok", Bool, Measured),
        ],
        ("futures", Some("or-alt")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("chain", UInt, Always),
            ("succeed", Str, Always),
            ("ns_per_item", Num, Measured),
        ],
        ("futures", Some("read-seq")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("reads", UInt, Always),
            ("ns_per_item", Num, Measured),
        ],
        ("futures", Some("read-concurrent")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("readers", UInt, Always),
            ("mode", Str, Always),
            ("seconds", Num, Measured),
            ("after_complete_s", Num, Measured),
        ],
        ("futures", Some("first-completed")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("futures", UInt, Always),
            ("seconds", Num, Measured),
            ("accuracy", Num, Measured),
        ],
        ("futures", Some("callbacks")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("count", UInt, Always),
            ("delay_us", UInt, Always),
            ("seconds", Num, Measured),
        ],
        ("futures", Some("philosophers")) => &[
            ("bench", Str, Always),
            ("impl", Str, Always),
            ("philosophers", UInt, Always),
            ("rounds", UInt, Always),
            ("ns_per_item", Num, Measured),
            ("rounds_ok", UInt, Measured),
        ],
        ("pool", _) => &[
            ("impl", Str, Always),
            ("mode", Str, Always),
            ("tasks", UInt, Always),
            ("runs", UInt, Always),
            ("sleep_ms", UInt, Always),
            ("workers", UInt, Always),
            ("seconds", Num, Measured),
            ("runs_per_s", Num, Measured),
            ("peak_rss_bytes", UInt, Measured),
        ],
        ("find", _) => &[
            ("tool", Str, Always),
            ("query", Str, Always),
            ("entries", UInt, Always),
            ("runs", UInt, Always),
            ("median_ms", Num, Measured),
            ("min_ms", Num, Measured),
            ("ratio_vs_find", Num, Measured),
        ],
        ("chain", _) => &[
            ("impl", Str, Always),
            ("n", UInt, Always),
            ("result", UInt, Measured),
            ("seconds", Num, Measured),
            ("rss_bytes", UInt, Measured),
        ],
        ("ping-pong", _) => &[
            ("impl", Str, Always),
            ("workers", UInt, Always),
            ("rounds", UInt, Always),
            ("seconds", Num, Measured),
            ("ns_per_round_trip", Num, Measured),
        ],
        ("fan-in", _) => &[
            ("impl", Str, Always),
            ("workers", UInt, Always),
            ("senders", UInt, Always),
            ("messages", UInt, Always),
            ("seconds", Num, Measured),
            ("msgs_per_s", Num, Measured),
        ],
        _ => return None,
    })
}

/// Checks `rec` against its experiment's schema; the error names the first mismatch.
pub(crate) fn check(rec: &Value) -> Result<(), String> {
    let obj = rec.as_object().ok_or("not a JSON object")?;
    for &(name, kind, when) in COMMON {
        check_field(obj, name, kind, when, true)?;
    }
    let experiment = obj["experiment"].as_str().unwrap_or_default();
    let bench = obj.get("bench").and_then(Value::as_str);
    let fields = fields(experiment, bench).ok_or_else(|| match bench {
        Some(b) => format!("unknown experiment '{experiment}' bench '{b}'"),
        None => format!("unknown experiment '{experiment}'"),
    })?;
    let measured =
        obj.get("ok") == Some(&Value::Bool(true)) && obj.get("skipped").is_none_or(Value::is_null);
    for &(name, kind, when) in fields {
        check_field(obj, name, kind, when, measured)?;
    }
    Ok(())
}

fn check_field(
    obj: &serde_json::Map<String, Value>,
    name: &str,
    kind: Kind,
    when: When,
    measured: bool,
) -> Result<(), String> {
    let required = when == When::Always || measured;
    match obj.get(name) {
        None | Some(Value::Null) if !required => Ok(()),
        None => Err(format!("missing field '{name}'")),
        Some(Value::Null) => Err(format!("field '{name}' is null")),
        Some(v) => {
            let fits = match kind {
                Str => v.is_string(),
                UInt => v.is_u64(),
                Num => v.is_number(),
                Bool => v.is_boolean(),
            };
            if fits {
                Ok(())
            } else {
                Err(format!("field '{name}' should be {kind:?}, is {v}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_good_line_passes_and_bad_ones_say_why() {
        let good = json!({"experiment": "chain", "impl": "ito", "n": 10, "result": 10,
            "seconds": 0.1, "rss_bytes": 5, "commit": "c", "nproc": 2, "ok": true});
        assert_eq!(check(&good), Ok(()));
        let mut failed = good.clone();
        failed["ok"] = json!(false);
        failed["seconds"] = Value::Null;
        assert_eq!(
            check(&failed),
            Ok(()),
            "a failed run may lack its measurement"
        );
        let mut bad = good.clone();
        bad["seconds"] = Value::Null;
        assert_eq!(check(&bad), Err("field 'seconds' is null".into()));
        let mut bad = good.clone();
        bad["n"] = json!("ten");
        assert!(check(&bad).unwrap_err().contains("'n'"));
        let mut skipped = good;
        skipped["skipped"] = json!("go is not installed");
        skipped.as_object_mut().unwrap().remove("seconds");
        assert_eq!(check(&skipped), Ok(()));
        assert!(
            check(&json!({"experiment": "nope", "ok": true, "commit": "c", "nproc": 1})).is_err()
        );
        assert!(check(&json!([1])).is_err());
    }
}
