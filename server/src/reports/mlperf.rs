//! MLPerf loadgen's `mlperf_log_summary.txt`: `name : value` lines under
//! banners. Latencies are in ns (converted to ms); percentiles are spelled
//! `99.00 percentile first token latency (ns)` (or `90.0th percentile latency`
//! in the single-stream scenarios). `Result is : VALID` becomes `mlperf_valid`
//! (1 or 0) and an INVALID run says which constraint failed in a note; the
//! scenario is the key so a Server and an Offline summary in one run stay apart.

use super::error::{ReadError, ReadResult};
use super::report::Report;
use domain::runs::ReportFormat;
use serde_json::Value;

const FORMAT: ReportFormat = ReportFormat::MlperfLoadgen;

pub fn recognise(head: &str) -> bool {
    head.lines().take(4).any(|l| l.trim() == "MLPerf Results Summary")
}

/// The per-request metric a latency line is about: `latency` (end to end),
/// `first token latency` (TTFT), `time to/per output token` (TPOT).
fn latency_metric(label: &str) -> Option<&'static str> {
    let lower = label.to_ascii_lowercase();
    if lower.contains("first token") {
        Some("ttft_ms")
    } else if lower.contains("output token") {
        Some("tpot_ms")
    } else if lower.contains("latency") {
        Some("e2el_ms")
    } else {
        None
    }
}

/// `99.00 percentile …`, `90.0th percentile …`, `99th Percentile …` → 99.
fn percentile(label: &str) -> Option<f64> {
    let first = label.split_whitespace().next()?;
    let digits = first.trim_end_matches("th");
    let p: f64 = digits.parse().ok()?;
    (label.to_ascii_lowercase().contains("percentile") && p > 0.0 && p < 100.0).then_some(p)
}

pub fn read(text: &str) -> ReadResult<Report> {
    let mut report = Report::new(FORMAT);
    let mut scenario: Option<String> = None;
    let mut result: Option<bool> = None;
    let mut unmet = Vec::new();
    let mut section = "summary";
    let mut lines_read = 0;
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        let trimmed = line.trim();
        match trimmed {
            "Additional Stats" => section = "stats",
            "Test Parameters Used" => section = "parameters",
            _ => {}
        }
        // Values never hold a colon; labels may (`ttft_latency (ns): 2000000000`).
        let Some((label, value)) = trimmed.rsplit_once(':') else { continue };
        let (label, value) = (label.trim(), value.trim());
        if label.is_empty() || label.starts_with('*') {
            continue;
        }
        lines_read += 1;
        if section == "parameters" {
            if let Ok(n) = value.parse::<f64>() {
                report.metadata.insert(format!("mlperf {label}"), Value::from(n));
            }
            continue;
        }
        match label {
            "Scenario" => scenario = Some(value.chars().take(40).collect()),
            "SUT name" | "Mode" => {
                report
                    .metadata
                    .insert(format!("mlperf {label}"), Value::from(value.chars().take(200).collect::<String>()));
            }
            "Result is" => result = Some(value.eq_ignore_ascii_case("VALID")),
            _ if label.ends_with("satisfied") && !value.eq_ignore_ascii_case("Yes") => unmet.push(label.to_string()),
            _ => {}
        }
        let Ok(number) = value.parse::<f64>() else { continue };
        let key = scenario.as_ref().map(|s| format!("scenario={s}"));
        let key = key.as_deref();
        let lower = label.to_ascii_lowercase();
        // Server summaries print `Completed tokens per second` twice (once per
        // section): the first one counts.
        if !seen.insert(lower.clone()) {
            continue;
        }
        if lower.ends_with("samples per second") && !lower.starts_with("scheduled") {
            report.add("request_throughput", number, "req/s", key);
        } else if lower.starts_with("scheduled samples per second") {
            report.add("scheduled_request_rate", number, "req/s", key);
        } else if lower.ends_with("tokens per second") {
            report.add("output_throughput", number, "tok/s", key);
        } else if lower.contains("(ns)") {
            let Some(metric) = latency_metric(&lower) else { continue };
            let ms = number / 1e6;
            let name = if lower.starts_with("min ") {
                format!("{metric}_min")
            } else if lower.starts_with("max ") {
                format!("{metric}_max")
            } else if lower.starts_with("mean ") {
                format!("{metric}_mean")
            } else if let Some(p) = percentile(label) {
                domain::distributions::percentile_name(metric, p)
            } else {
                continue;
            };
            report.add(name, ms, "ms", key);
        }
    }
    if lines_read == 0 {
        return Err(ReadError::Missing("an MLPerf summary without a single `name : value` line"));
    }
    let key = scenario.as_ref().map(|s| format!("scenario={s}"));
    match result {
        Some(valid) => {
            report.add("mlperf_valid", if valid { 1.0 } else { 0.0 }, "bool", key.as_deref());
            if !valid {
                let why = if unmet.is_empty() { String::new() } else { format!(": not {}", unmet.join(", not ")) };
                report.notes.push(format!("MLPerf says INVALID{why}"));
            }
        }
        None => report.notes.push("no `Result is` line: the summary may be cut short".into()),
    }
    if report.measurements.is_empty() {
        return Err(ReadError::Missing("an MLPerf summary without numbers"));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = include_str!("testdata/mlperf_log_summary_server.txt");
    const OFFLINE: &str = include_str!("testdata/mlperf_log_summary_offline.txt");

    fn value(r: &Report, metric: &str) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric).map(|m| m.value)
    }

    #[test]
    fn a_server_summary_in_ms_keyed_by_scenario() {
        assert!(recognise(SERVER));
        let r = read(SERVER).expect("read");
        // ns → ms, read off the file by hand.
        assert_eq!(value(&r, "ttft_ms_p99"), Some(1605.083772));
        assert_eq!(value(&r, "ttft_ms_p99_9"), Some(2711.469733));
        assert_eq!(value(&r, "tpot_ms_p50"), Some(140.955406));
        assert_eq!(value(&r, "tpot_ms_mean"), Some(132.734431));
        assert_eq!(value(&r, "e2el_ms_max"), Some(154507.407914));
        assert_eq!(value(&r, "request_throughput"), Some(105.45));
        assert_eq!(value(&r, "scheduled_request_rate"), Some(108.52));
        assert_eq!(value(&r, "output_throughput"), Some(31671.85));
        assert_eq!(value(&r, "mlperf_valid"), Some(1.0));
        assert!(r.measurements.iter().all(|m| m.key.as_deref() == Some("scenario=Server")));
        assert_eq!(r.metadata.get("mlperf ttft_latency (ns)"), Some(&Value::from(2e9)));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn an_offline_summary_and_an_invalid_one() {
        let r = read(OFFLINE).expect("read");
        assert_eq!(value(&r, "request_throughput"), Some(114.536));
        assert_eq!(value(&r, "output_throughput"), Some(34454.4));
        assert_eq!(value(&r, "e2el_ms_p90"), Some(4076507.798127));
        assert_eq!(value(&r, "ttft_ms_p99"), None, "Offline has no TTFT");
        let invalid = SERVER
            .replace("Result is : VALID", "Result is : INVALID")
            .replace("Performance constraints satisfied : Yes", "Performance constraints satisfied : NO");
        let r = read(&invalid).expect("read");
        assert_eq!(value(&r, "mlperf_valid"), Some(0.0));
        assert_eq!(r.notes, ["MLPerf says INVALID: not Performance constraints satisfied"]);
        let cut = &SERVER[..SERVER.find("Additional Stats").expect("stats")];
        let r = read(cut).expect("a cut summary still has its head");
        assert_eq!(value(&r, "request_throughput"), Some(105.45));
        let empty = "================================================\nMLPerf Results Summary\n";
        assert!(read(empty).is_err());
    }
}
