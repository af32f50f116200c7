//! One CSV file per experiment: the union of its records' fields as columns, in the order
//! they first appear.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::measure::csv_field;

/// Writes `<experiment>.csv` to `out` for every experiment in `records`; returns the file
/// names.
pub(crate) fn write_all(records: &[Value], out: &Path) -> Result<Vec<String>, String> {
    let mut by_experiment: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for r in records {
        if let Some(e) = r.get("experiment").and_then(Value::as_str) {
            by_experiment.entry(e).or_default().push(r);
        }
    }
    let mut names = Vec::new();
    for (experiment, recs) in by_experiment {
        let name = format!("{experiment}.csv");
        let path = out.join(&name);
        fs::write(&path, to_csv(&recs))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        names.push(name);
    }
    Ok(names)
}

/// The records as CSV text, header included.
pub(crate) fn to_csv(records: &[&Value]) -> String {
    let mut columns: Vec<&str> = Vec::new();
    for r in records {
        if let Some(obj) = r.as_object() {
            for k in obj.keys() {
                if !columns.contains(&k.as_str()) {
                    columns.push(k);
                }
            }
        }
    }
    let mut text = columns
        .iter()
        .map(|c| csv_field(c))
        .collect::<Vec<_>>()
        .join(",");
    text.push('\n');
    for r in records {
        let row: Vec<String> = columns
            .iter()
            .map(|c| match r.get(*c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => csv_field(s),
                Some(v) => csv_field(&v.to_string()),
            })
            .collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_are_the_union_and_values_are_escaped() {
        let a = json!({"experiment": "chain", "impl": "ito", "seconds": 0.5});
        let b = json!({"experiment": "chain", "impl": "go", "skipped": "no go, sorry", "seconds": null});
        let text = to_csv(&[&a, &b]);
        assert_eq!(
            text,
            "experiment,impl,seconds,skipped\nchain,ito,0.5,\nchain,go,,\"no go, sorry\"\n"
        );
    }
}
