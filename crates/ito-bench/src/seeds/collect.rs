//! What every measurement of a run is annotated with: the commit, the CPU count, the CPU
//! model and the date; and the schema check.

use std::fs;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::plan::Doc;
use super::schema;
use crate::measure;

/// The machine and the moment of a run.
#[derive(Clone, Debug)]
pub(crate) struct Environment {
    /// The commit this binary was built from ([`crate::measure::commit`]).
    pub(crate) commit: String,
    /// CPUs available to the process.
    pub(crate) nproc: usize,
    /// `model name` of `/proc/cpuinfo`, or `unknown`.
    pub(crate) cpu: String,
    /// UTC start time, `YYYY-MM-DDTHH:MM:SSZ`.
    pub(crate) date: String,
    /// `smoke`, `quick` or `full`.
    pub(crate) size: String,
}

impl Environment {
    /// This machine, now.
    pub(crate) fn detect(size: &str) -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Environment {
            commit: measure::commit(),
            nproc: measure::nproc(),
            cpu: cpu_model(&fs::read_to_string("/proc/cpuinfo").unwrap_or_default()),
            date: utc_timestamp(secs),
            size: size.to_owned(),
        }
    }

    /// `YYYY-MM-DD` of [`date`](Self::date).
    pub(crate) fn day(&self) -> &str {
        self.date.get(..10).unwrap_or(&self.date)
    }

    /// `rec` with the run's fields added (`doc`, `cpu`, `date`, `seeds`; `commit` and
    /// `nproc` where the record lacks them), and `schema_error` if it does not match its
    /// experiment's schema.
    pub(crate) fn annotate(&self, mut rec: Value, doc: Doc) -> Value {
        if let Some(obj) = rec.as_object_mut() {
            obj.insert("doc".into(), Value::from(doc.id()));
            obj.entry("commit")
                .or_insert_with(|| Value::from(self.commit.clone()));
            obj.entry("nproc")
                .or_insert_with(|| Value::from(self.nproc));
            obj.insert("cpu".into(), Value::from(self.cpu.clone()));
            obj.insert("date".into(), Value::from(self.date.clone()));
            obj.insert("seeds".into(), Value::from(self.size.clone()));
            if let Some(load) = load_average() {
                obj.insert("loadavg".into(), Value::from(load));
            }
        }
        if let Err(p) = schema::check(&rec) {
            if let Some(obj) = rec.as_object_mut() {
                obj.insert("schema_error".into(), Value::from(p));
            }
        }
        rec
    }
}

/// The 1-minute load average of the machine (`/proc/loadavg`), now.
fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub(crate) fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_owned())
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub(crate) fn utc_timestamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(utc_timestamp(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn cpu_model_is_read() {
        let info = "processor\t: 0\nvendor_id\t: X\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\n";
        assert_eq!(cpu_model(info), "AMD EPYC 7B13");
        assert_eq!(cpu_model("processor : 0\n"), "unknown");
    }

    #[test]
    fn annotate_adds_the_run_and_flags_schema_errors() {
        let env = Environment {
            commit: "abc1234".into(),
            nproc: 2,
            cpu: "CPU".into(),
            date: "2025-01-02T03:04:05Z".into(),
            size: "quick".into(),
        };
        assert_eq!(env.day(), "2025-01-02");
        let rec = env.annotate(
            serde_json::json!({"experiment": "fib", "ok": true}),
            Doc::D000,
        );
        assert_eq!(rec["doc"], "000");
        assert_eq!(rec["commit"], "abc1234");
        assert_eq!(rec["cpu"], "CPU");
        assert!(
            rec["schema_error"]
                .as_str()
                .is_some_and(|e| e.contains("impl")),
            "{rec}"
        );
    }
}
