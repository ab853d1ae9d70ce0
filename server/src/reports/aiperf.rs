//! AIPerf's exports and genai-perf's (AIPerf is its successor and keeps its
//! metric names): the aggregate JSON (`records.<tag>` in early AIPerf,
//! top-level `time_to_first_token` etc. in genai-perf and later AIPerf), each
//! metric `{unit, avg, min, max, p1…p99, std}`; the aggregate CSV (two tables,
//! names with their unit in parentheses); and AIPerf's per-request JSONL
//! (`metrics.<tag>.{value, unit}`, and `error` for a failed request).
//!
//! Their `inter_token_latency` is per request — what vLLM calls TPOT — and
//! `inter_chunk_latency` is per chunk, vLLM's ITL; named here as vLLM names them.

use super::error::{ReadError, ReadResult};
use super::json::LineReader;
use super::report::{Report, Reservoir};
use domain::runs::ReportFormat;
use serde_json::{Map, Value};

const FORMAT: ReportFormat = ReportFormat::Aiperf;
const REQUESTS: ReportFormat = ReportFormat::AiperfRequests;

/// A tag (or genai-perf name), Sleuth's metric, and whether it is a latency
/// (kept in ms, with its percentiles) or a rate or count (its mean).
const METRICS: [(&str, &str, bool); 20] = [
    ("ttft", "ttft_ms", true),
    ("time_to_first_token", "ttft_ms", true),
    ("ttst", "ttst_ms", true),
    ("time_to_second_token", "ttst_ms", true),
    ("inter_token_latency", "tpot_ms", true),
    ("inter_chunk_latency", "itl_ms", true),
    ("request_latency", "e2el_ms", true),
    ("request_throughput", "request_throughput", false),
    ("output_token_throughput", "output_throughput", false),
    ("output_token_throughput_per_user", "output_throughput_per_user", false),
    ("output_token_throughput_per_request", "output_throughput_per_user", false),
    ("request_count", "successful_requests", false),
    ("error_request_count", "failed_requests", false),
    ("input_sequence_length", "input_tokens", false),
    ("output_sequence_length", "output_tokens", false),
    ("benchmark_duration", "duration_s", false),
    ("total_output_tokens", "total_output_tokens", false),
    ("total_osl", "total_output_tokens", false),
    ("total_isl", "total_input_tokens", false),
    ("request_goodput", "request_goodput", false),
];

fn ours(tag: &str) -> Option<(&'static str, bool)> {
    METRICS.iter().find(|(t, _, _)| *t == tag).map(|(_, ours, latency)| (*ours, *latency))
}

/// Factor from a unit as AIPerf spells it to Sleuth's, and Sleuth's spelling.
fn unit(theirs: &str, latency: bool) -> (f64, String) {
    let theirs = theirs.trim();
    match theirs {
        "ms" => (1.0, "ms".into()),
        "sec" | "s" if latency => (1e3, "ms".into()),
        "sec" | "s" => (1.0, "s".into()),
        "ns" if latency => (1e-6, "ms".into()),
        "us" if latency => (1e-3, "ms".into()),
        "tokens/sec" => (1.0, "tok/s".into()),
        "tokens/sec/user" => (1.0, "tok/s/user".into()),
        "requests/sec" => (1.0, "req/s".into()),
        other => (1.0, other.chars().take(20).collect()),
    }
}

/// `p99` → 99.
fn percentile_of(stat: &str) -> Option<f64> {
    stat.strip_prefix('p')?.parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 100.0)
}

fn add_stats(report: &mut Report, tag: &str, stats: &Map<String, Value>) {
    let Some((metric, latency)) = ours(tag) else { return };
    let (factor, unit) = unit(stats.get("unit").and_then(Value::as_str).unwrap_or(""), latency);
    let metric = if metric == "duration_s" { "duration_s" } else { metric };
    if !latency {
        let value = stats.get("avg").or_else(|| stats.get("value")).and_then(Value::as_f64);
        if let Some(v) = value {
            report.add(metric, v * factor, &unit, None);
        }
        return;
    }
    for (stat, value) in stats {
        let Some(v) = value.as_f64() else { continue };
        let name = match stat.as_str() {
            "avg" => format!("{metric}_mean"),
            "std" => format!("{metric}_std"),
            "min" | "max" => format!("{metric}_{stat}"),
            p => match percentile_of(p) {
                Some(p) => domain::distributions::percentile_name(metric, p),
                None => continue,
            },
        };
        report.add(name, v * factor, &unit, None);
    }
}

pub fn from_value(value: &Value) -> Option<ReadResult<Report>> {
    let object = value.as_object()?;
    let records = match object.get("records").and_then(Value::as_object) {
        Some(records) => records,
        None if object
            .get("time_to_first_token")
            .or_else(|| object.get("request_throughput"))
            .is_some_and(Value::is_object) =>
        {
            object
        }
        None => return None,
    };
    let known = records.iter().filter(|(tag, v)| ours(tag).is_some() && v.is_object()).count();
    if known == 0 {
        return None;
    }
    let mut report = Report::new(FORMAT);
    for (tag, stats) in records {
        match stats.as_object() {
            Some(stats) if ours(tag).is_some() => add_stats(&mut report, tag, stats),
            _ => {
                report.metadata.insert(tag.clone(), stats.clone());
            }
        }
    }
    for (field, value) in object.iter().filter(|(f, _)| f.as_str() != "records" && !records.contains_key(*f)) {
        report.metadata.insert(field.clone(), value.clone());
    }
    Some(Ok(report))
}

pub fn is_csv(head: &str) -> bool {
    head.starts_with("Metric,avg,") || head.starts_with("Metric,Value")
}

/// `Time to First Token (ms)` → (`time_to_first_token`, `ms`).
fn csv_name(cell: &str) -> (String, String) {
    let (name, unit) = match cell.rsplit_once(" (") {
        Some((name, unit)) => (name, unit.trim_end_matches(')')),
        None => (cell, ""),
    };
    let tag = crate::metrics::slug(name);
    // The CSV spells out what the JSON abbreviates.
    let tag = match tag.as_str() {
        "total_input_sequence_length" => "total_isl".to_string(),
        "total_output_sequence_length" => "total_osl".to_string(),
        _ => tag,
    };
    (tag, unit.to_string())
}

pub fn read_csv(text: &str) -> ReadResult<Report> {
    let mut report = Report::new(FORMAT);
    let mut header: Vec<String> = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            header.clear();
            continue;
        }
        let cells = super::csv::split(line);
        if cells.first().is_some_and(|c| c == "Metric") {
            header = cells.iter().map(|c| c.trim().to_string()).collect();
            continue;
        }
        if header.is_empty() {
            return Err(ReadError::at(at + 1, ReadError::RowBeforeHeader));
        }
        if cells.len() != header.len() {
            report.notes.push(
                ReadError::at(at + 1, ReadError::Cells { found: cells.len(), expected: header.len() }).to_string(),
            );
            continue;
        }
        let (tag, unit) = csv_name(&cells[0]);
        let mut stats = Map::new();
        stats.insert("unit".into(), Value::from(unit));
        for (name, cell) in header.iter().zip(&cells).skip(1) {
            if let Some(v) = crate::metrics::number(cell) {
                let stat = if name == "Value" { "avg" } else { name.as_str() };
                stats.insert(stat.into(), Value::from(v));
            }
        }
        add_stats(&mut report, &tag, &stats);
    }
    if report.measurements.is_empty() {
        return Err(ReadError::Missing("no metric AIPerf names"));
    }
    Ok(report)
}

/// ITLs kept per file.
const ITL_SAMPLES: usize = 100_000;

pub fn line_reader(first: &Map<String, Value>) -> Option<Box<dyn LineReader>> {
    let ok = first.get("metrics").is_some_and(Value::is_object) && first.get("metadata").is_some_and(Value::is_object);
    ok.then(|| {
        Box::new(Requests { columns: Vec::new(), rows: 0, failed: 0, itls: Reservoir::new(ITL_SAMPLES) })
            as Box<dyn LineReader>
    })
}

struct Requests {
    /// (metric, unit, values): one value per successful request, NaN where a request lacks it.
    columns: Vec<(&'static str, String, Vec<f64>)>,
    rows: usize,
    failed: usize,
    itls: Reservoir,
}

impl LineReader for Requests {
    fn line(&mut self, object: Map<String, Value>) -> ReadResult<()> {
        let Some(metrics) = object.get("metrics").and_then(Value::as_object) else {
            return Err(ReadError::Missing("a record without metrics"));
        };
        if object.get("error").is_some_and(|e| !e.is_null()) {
            self.failed += 1;
            return Ok(());
        }
        for (tag, entry) in metrics {
            let Some((metric, true)) = ours(tag) else { continue };
            let (factor, unit) = unit(entry.get("unit").and_then(Value::as_str).unwrap_or(""), true);
            match entry.get("value") {
                Some(Value::Array(values)) => {
                    for v in values.iter().filter_map(Value::as_f64) {
                        self.itls.push(v * factor);
                    }
                }
                Some(value) => {
                    let Some(v) = value.as_f64() else { continue };
                    let column = match self.columns.iter().position(|(m, _, _)| *m == metric) {
                        Some(i) => &mut self.columns[i].2,
                        None => {
                            self.columns.push((metric, unit, vec![f64::NAN; self.rows]));
                            &mut self.columns.last_mut().expect("just pushed").2
                        }
                    };
                    column.resize(self.rows, f64::NAN);
                    column.push(v * factor);
                }
                None => {}
            }
        }
        self.rows += 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Report {
        let mut report = Report::new(REQUESTS);
        report.add("successful_requests", self.rows as f64, "requests", None);
        report.add("failed_requests", self.failed as f64, "requests", None);
        for (metric, unit, mut values) in self.columns {
            values.resize(self.rows, f64::NAN);
            let complete = values.iter().all(|v| v.is_finite());
            values.retain(|v| v.is_finite());
            report.samples(metric, &unit, None, values, complete);
        }
        if self.itls.seen > 0 {
            report.samples("itl_ms", "ms", None, self.itls.kept, false);
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(path: &str) -> Report {
        let bytes = std::fs::read(crate::fixtures::dir().join(path)).expect("fixture");
        super::super::read("x", &bytes[..]).expect("recognised").expect("read")
    }

    fn value(r: &Report, metric: &str) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric).map(|m| m.value)
    }

    #[test]
    fn the_aggregate_json_and_csv_agree() {
        let json = report("reports/genai-perf-aiperf/profile_export_aiperf.json");
        let csv = report("reports/genai-perf-aiperf/profile_export_aiperf.csv");
        assert_eq!(value(&json, "ttft_ms_p99"), Some(3833.3894000399996));
        assert_eq!(value(&json, "ttft_ms_mean"), Some(2343.219436988764));
        assert_eq!(value(&json, "failed_requests"), Some(11.0));
        assert_eq!(value(&json, "successful_requests"), Some(89.0));
        // The CSV rounds to two decimals.
        for metric in
            ["ttft_ms_p99", "ttft_ms_mean", "tpot_ms_p50", "e2el_ms_p90", "request_throughput", "output_throughput"]
        {
            let (a, b) = (value(&json, metric).unwrap_or(f64::NAN), value(&csv, metric).unwrap_or(f64::NAN));
            assert!((a - b).abs() < 0.01, "{metric}: json {a}, csv {b}");
        }
        assert_eq!(value(&csv, "duration_s"), Some(9.32));
        assert!(json.metadata.contains_key("input_config"));
    }

    #[test]
    fn per_request_records_are_samples_of_the_successful_ones() {
        let r = report("reports/genai-perf-aiperf/profile_export.jsonl");
        assert_eq!(value(&r, "successful_requests"), Some(89.0));
        assert_eq!(value(&r, "failed_requests"), Some(11.0));
        let ttft = r.samples.iter().find(|s| s.metric == "ttft_ms").expect("ttft");
        assert_eq!(ttft.values.len(), 89);
        assert!(ttft.per_request);
        // Its percentiles are the aggregate file's (same run, same numpy-style interpolation).
        let mut sorted = ttft.values.clone();
        sorted.sort_by(f64::total_cmp);
        let p99 = domain::distributions::percentile(&sorted, 99.0).unwrap();
        assert!((p99 - 3833.3894000399996).abs() < 1e-6, "{p99}");
        let itl = r.samples.iter().find(|s| s.metric == "itl_ms").expect("chunk latencies");
        assert!(!itl.per_request && itl.values.len() > 1_000);
    }
}
